//! `mesh-provide conform` over the built binary and small bash hooks over a
//! backend of files (tests/broken_hooks/files.sh, with jq and flock): the
//! correct one passes every rule in both modes and leaves nothing behind;
//! each broken one (one fault planted) fails exactly its rule, with exit 1;
//! a hook without `by-hand` has the oracle's rules skipped; an earlier
//! run's leftovers are removed first; `--list` is the rules, and
//! docs/hooks.md lists exactly those, and its example run says only those.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// A hook of this crate's tests.
fn hook(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join(path)
}

/// (exit code, stdout, stderr) of `mesh-provide conform ARGS` with `FILES_ROOT=root`.
fn conform(root: &Path, args: &[&str]) -> (i32, String, String) {
    let start = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_mesh-provide"))
        .arg("conform")
        .args(args)
        .env("FILES_ROOT", root)
        .env("FOLDERS_ROOT", root)
        .output()
        .expect("mesh-provide runs");
    assert!(
        start.elapsed() < Duration::from_secs(240),
        "conform {args:?} took {:?}: a hook stuck past its timeouts",
        start.elapsed()
    );
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The files hook `name` (under broken_hooks/) in `mode` over a fresh
/// backend, with `more` arguments.
fn files(
    name: &str,
    mode: &str,
    consumers: &str,
    more: &[&str],
) -> (i32, String, String, tempfile::TempDir) {
    let root = tempfile::tempdir().unwrap();
    let path = hook(&format!("broken_hooks/{name}.sh"));
    let args = [
        "--hook",
        path.to_str().unwrap(),
        "--hook-mode",
        mode,
        "--consumers",
        consumers,
    ];
    let (code, out, err) = conform(root.path(), &[&args[..], more].concat());
    (code, out, err, root)
}

/// What the files backend under `root` still holds: (index lines, provisions, made by hand).
fn backend(root: &Path) -> (String, usize, usize) {
    let count = |dir: &str| std::fs::read_dir(root.join(dir)).map_or(0, |d| d.count());
    (
        std::fs::read_to_string(root.join("index")).unwrap_or_default(),
        count("ours"),
        count("theirs"),
    )
}

/// Asserts a clean pass of every rule; the report's lines.
fn passes_every_rule(code: i32, out: &str, err: &str, root: &Path) {
    assert_eq!(code, 0, "{out}\n{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], "start: nothing an earlier run left", "{out}");
    assert_eq!(lines.len(), 20, "{out}");
    assert!(lines[1..19].iter().all(|l| l.starts_with("ok   ")), "{out}");
    assert_eq!(lines[19], "18 passed, 0 failed");
    assert_eq!(
        backend(root),
        (String::new(), 0, 0),
        "nothing left in the backend"
    );
    assert!(
        !out.contains("conform-s-") && !err.contains("conform-s-"),
        "no secret in any output"
    );
}

#[test]
fn the_correct_files_hook_passes_every_rule_and_leaves_nothing_behind() {
    let (code, out, err, root) = files("correct", "exec", "8", &[]);
    passes_every_rule(code, &out, &err, root.path());
    assert!(out.contains("\nok   8 consumers in parallel\n"), "{out}");
    assert!(
        out.contains("\nok   a change by hand is mended by ensure and reported as mended (mended: the password differed: set to the minted one)\n"),
        "{out}"
    );
    assert!(
        out.contains("\nok   names with _, - and digits side by side are each their own (a_b, acb, a-b, a0b, the last 63 bytes)\n"),
        "{out}"
    );
    assert!(
        out.contains("\nok   another instance's provision is neither listed, made, retired, re-enabled nor deleted (as conform@conform-other: ensure refused (refused), retire did nothing, re-enable did nothing, delete did nothing)\n"),
        "{out}"
    );
}

#[test]
fn the_correct_files_hook_in_serve_mode_recovers_from_a_kill_mid_call() {
    let (code, out, err, root) = files("correct", "serve", "4", &[]);
    passes_every_rule(code, &out, &err, root.path());
    let cut = out
        .lines()
        .find(|l| l.contains("a call cut off mid-way"))
        .unwrap();
    assert!(
        cut.contains(", mid-way: held listed what it began ("),
        "{cut}"
    );
    assert!(
        err.contains("cause=\"killed\""),
        "the serve process was killed: {err}"
    );
}

/// Asserts `name`'s hook fails only `rule`, its line containing `why`, exit 1.
fn fails_only(name: &str, mode: &str, consumers: &str, rule: &str, why: &str) {
    fails_only_with(name, mode, consumers, &[], rule, why);
}

/// [`fails_only`] with `more` arguments.
fn fails_only_with(name: &str, mode: &str, consumers: &str, more: &[&str], rule: &str, why: &str) {
    let (code, out, err, _root) = files(name, mode, consumers, more);
    assert_eq!(code, 1, "{name}: {out}\n{err}");
    let failed: Vec<&str> = out.lines().filter(|l| l.starts_with("FAIL ")).collect();
    assert_eq!(failed.len(), 1, "{name} fails one rule: {out}");
    assert!(
        failed[0].starts_with(&format!("FAIL {rule}: ")),
        "{name}: {out}"
    );
    assert!(failed[0].contains(why), "{name}: {}", failed[0]);
    assert!(out.ends_with("17 passed, 1 failed\n"), "{out}");
    assert!(
        err.contains(&format!(
            "1 of 18 rules failed for hook {}: {rule}",
            hook(&format!("broken_hooks/{name}.sh")).display()
        )),
        "{err}"
    );
}

#[test]
fn deletes_at_once_that_lose_each_other_fail_the_leftovers_rule() {
    fails_only(
        "leftovers",
        "exec",
        "8",
        "nothing of the suite's is left behind",
        " it said it deleted: conform-",
    );
}

#[test]
fn a_held_that_lists_a_provision_made_by_hand_fails_the_not_made_rule() {
    fails_only(
        "lists-theirs",
        "exec",
        "4",
        "a provision it did not make is neither listed, retired nor deleted",
        "-theirs, which it did not make",
    );
}

#[test]
fn a_retire_reading_underscore_as_any_character_fails_the_neighbours_rule() {
    fails_only(
        "wildcard",
        "exec",
        "4",
        "retiring and deleting a_b leaves its neighbours working and listed",
        "after retiring a_b, conform-",
    );
}

#[test]
fn a_grant_reading_underscore_as_any_character_fails_the_reach_rule() {
    fails_only(
        "wide-grant",
        "exec",
        "4",
        "no neighbour reaches another's provision",
        "-a_b reaches conform-",
    );
}

#[test]
fn an_ensure_that_mends_without_saying_so_fails_the_mended_rule() {
    fails_only(
        "silent",
        "exec",
        "4",
        "a change by hand is mended by ensure and reported as mended",
        "ensure after the change by hand did not say it mended anything",
    );
}

#[test]
fn a_half_made_user_a_kill_leaves_fails_the_cut_rule_in_both_modes() {
    // Never recovers: the suite waits out the bound it is given (20 s
    // by default) in each mode.
    for mode in ["exec", "serve"] {
        fails_only_with(
            "half-made",
            mode,
            "4",
            &["--recover-within", "3s"],
            "a call cut off mid-way leaves nothing that breaks the next ensure",
            "it did not work again within 3s: ensure failed (refused): user conform-",
        );
    }
}

#[test]
fn a_mark_naming_no_instance_fails_the_instances_rule_in_both_modes() {
    for mode in ["exec", "serve"] {
        fails_only(
            "one-mark",
            mode,
            "4",
            "another instance's provision is neither listed, made, retired, re-enabled nor deleted",
            "-inst, which conform@conform made: conform@conform-other would retire it",
        );
    }
}

/// The reply of the files hook (exec mode) to `request` over `root`.
fn ask_files(root: &Path, verb: &str, request: &serde_json::Value) -> serde_json::Value {
    use std::io::Write;
    let mut child = Command::new(hook("broken_hooks/correct.sh"))
        .arg(verb)
        .env("FILES_ROOT", root)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let line = serde_json::to_vec(request).unwrap();
    child.stdin.take().unwrap().write_all(&line).unwrap();
    let out = child.wait_with_output().unwrap();
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn a_provision_marked_before_instances_is_listed_by_none_until_an_ensure_adopts_it() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("ours/forge");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("credentials"), "s3cret").unwrap();
    std::fs::write(root.path().join("index"), "forge\n").unwrap();
    let held = |provider: &str| {
        ask_files(
            root.path(),
            "held",
            &serde_json::json!({"v": 1, "id": 1, "verb": "held", "provider": provider}),
        )["held"]
            .clone()
    };
    assert_eq!(
        held("files@a"),
        serde_json::json!([]),
        "an old mark is no instance's"
    );
    // Retire and delete as an instance that did not adopt it do nothing.
    for verb in ["retire", "delete"] {
        let reply = ask_files(
            root.path(),
            verb,
            &serde_json::json!({"v": 1, "id": 2, "verb": verb, "consumer": "forge", "provider": "files@a"}),
        );
        assert_eq!(reply["ok"], true, "{reply}");
    }
    assert!(dir.join("credentials").exists() && !dir.join("disabled").exists());
    let ensure = |provider: &str| {
        ask_files(
            root.path(),
            "ensure",
            &serde_json::json!({"v": 1, "id": 3, "verb": "ensure", "provider": provider,
                "consumer": {"name": "forge", "machine": "app-1", "provision": "files", "options": {}},
                "secret": "s3cret"}),
        )
    };
    assert_eq!(
        ensure("files@a"),
        serde_json::json!({"ok": true}),
        "adopted"
    );
    assert_eq!(
        held("files@a"),
        serde_json::json!([{"consumer": "forge", "retired": false}])
    );
    assert_eq!(held("files@b"), serde_json::json!([]));
    let refused = ensure("files@b");
    assert_eq!(refused["ok"], false, "{refused}");
    assert_eq!(refused["class"], "refused", "{refused}");
    assert_eq!(refused["error"], "forge was made by files@a", "{refused}");
}

#[test]
fn an_earlier_runs_leftovers_are_removed_first_and_a_persons_are_not() {
    let root = tempfile::tempdir().unwrap();
    for name in ["conform-0badf00d-p3", "conform-0badf00d-a_b", "app"] {
        let dir = root.path().join("ours").join(name);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("credentials"), "theirs").unwrap();
        std::fs::write(dir.join("by"), "conform@conform").unwrap();
    }
    std::fs::write(
        root.path().join("index"),
        "conform-0badf00d-p3 conform@conform\nconform-0badf00d-a_b conform@conform\napp\n",
    )
    .unwrap();
    let path = hook("broken_hooks/correct.sh");
    let (code, out, err) = conform(
        root.path(),
        &["--hook", path.to_str().unwrap(), "--consumers", "2"],
    );
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(
        out.starts_with("start: retired and deleted 2 an earlier run left: conform-0badf00d-p3, conform-0badf00d-a_b\n"),
        "{out}"
    );
    assert_eq!(
        backend(root.path()),
        ("app\n".into(), 1, 0),
        "the person's is kept"
    );
}

#[test]
fn a_hook_without_by_hand_has_those_rules_skipped_and_a_lax_check_fails_its_rules() {
    let root = tempfile::tempdir().unwrap();
    let path = hook("hooks/folders.sh");
    let args = ["--hook", path.to_str().unwrap(), "--consumers", "2"];
    let (code, out, err) = conform(root.path(), &args);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.ends_with("15 passed, 0 failed, 3 skipped\n"), "{out}");
    assert!(
        out.contains(&format!("\nskip a change by hand is mended by ensure and reported as mended: hook {} answers by-hand unsupported\n", path.display())),
        "{out}"
    );
    let out = Command::new(env!("CARGO_BIN_EXE_mesh-provide"))
        .arg("conform")
        .args(args)
        .env("FOLDERS_ROOT", root.path())
        .env("FOLDERS_LAX", "1")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("\nFAIL check with another secret fails credentials-rejected: check passed with a secret"),
        "{text}"
    );
    assert!(
        text.contains(
            "\nFAIL names with _, - and digits side by side are each their own: check of conform-"
        ),
        "a check proving nothing lets one neighbour in with another's secret too: {text}"
    );
    assert!(text.ends_with("13 passed, 2 failed, 3 skipped\n"), "{text}");
}

#[test]
fn the_list_is_every_rule_and_docs_hooks_md_lists_exactly_those() {
    let out = Command::new(env!("CARGO_BIN_EXE_mesh-provide"))
        .args(["conform", "--list"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let list = String::from_utf8(out.stdout).unwrap();
    assert_eq!(list.lines().count(), 18, "{list}");
    assert!(
        list.starts_with("1. ensure twice is idempotent\n"),
        "{list}"
    );
    assert!(
        list.ends_with("18. nothing of the suite's is left behind\n"),
        "{list}"
    );
    let docs =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/hooks.md"))
            .unwrap();
    let section = docs
        .split("\n## ")
        .find(|s| s.starts_with("Conformance"))
        .expect("docs/hooks.md has a section Conformance");
    let documented: Vec<&str> = section
        .lines()
        .filter(|l| {
            l.split_once(". ")
                .is_some_and(|(n, _)| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        })
        .collect();
    let listed: Vec<&str> = list.lines().collect();
    let missing: Vec<&&str> = listed.iter().filter(|l| !documented.contains(l)).collect();
    let extra: Vec<&&str> = documented.iter().filter(|l| !listed.contains(l)).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "docs/hooks.md's conformance section lists the rules as `--list` prints them: missing there {missing:?}, there but not in the code {extra:?}"
    );
    assert_eq!(documented, listed, "in the code's order");

    // The section's example run says only rules of the list, and its count
    // is theirs.
    let rules: Vec<&str> = listed
        .iter()
        .map(|l| l.split_once(". ").unwrap().1.trim_end_matches(" (by-hand)"))
        .collect();
    let example = section
        .split("```")
        .find(|block| block.trim_start().starts_with("$ mesh-provide conform"))
        .expect("docs/hooks.md's conformance section shows a run");
    let verdicts: Vec<&str> = example
        .lines()
        .filter_map(|l| {
            ["ok   ", "FAIL ", "skip "]
                .iter()
                .find_map(|v| l.strip_prefix(v))
        })
        .collect();
    assert!(verdicts.len() >= 3, "{example}");
    for said in &verdicts {
        assert!(
            rules.iter().any(|r| said.starts_with(r)),
            "docs/hooks.md's example run says {said:?}, which is no rule of `--list`"
        );
    }
    let total = format!("{} passed, 0 failed", listed.len());
    assert!(
        example.lines().any(|l| l == total),
        "docs/hooks.md's example run ends with {total:?}: {example}"
    );
}

#[test]
fn a_hook_that_cannot_start_exits_1_and_a_bad_command_line_2() {
    let out = Command::new(env!("CARGO_BIN_EXE_mesh-provide"))
        .args(["conform", "--hook", "/nonexistent/hook"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("hook /nonexistent/hook hello cannot be started: "),
        "{err}"
    );
    let out = Command::new(env!("CARGO_BIN_EXE_mesh-provide"))
        .args(["conform"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}
