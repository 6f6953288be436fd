//! The Go hook kit (`kits/go`, package `mesh/hook`) and its example,
//! `examples/hooks/rabbitmq`, over the built binaries: the example, built
//! with `go build`, passes every rule of `mesh-provide conform` in serve
//! mode (and in exec mode) on a private RabbitMQ, leaves nothing of the
//! suite's behind, never touches a user and vhost a person made, and the
//! administrator's password is in no output; after a rotation of that
//! password the hook, in serve mode, works on without a restart and
//! announces the new one before it replies; the kit and the example pass
//! `go vet`, `gofmt -l` and the kit's own `go test ./...`.
//!
//! They need Go and Debian's `rabbitmq-server`
//! (`bash -c '. scripts/lib.sh; ensure_kit_go'`): without them they say
//! SKIPPED, unless `MESH_REQUIRE_KITS` is set (CI), where they fail.

mod hooks_support;

use std::collections::BTreeSet;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use mesh_test_support::mesh::binary;
use mesh_test_support::{RabbitServer, RABBITMQ_ADMIN};
use serde_json::{json, Value};

/// How long one conform run may take before the test says it hangs.
const CONFORM_DEADLINE: Duration = Duration::from_secs(300);

/// How long a `go` command may take (a first build compiles the standard
/// library's packages into the cache).
const GO_DEADLINE: Duration = Duration::from_secs(300);

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The `go` tool: on PATH, else where Go's own archive or Debian's
/// `golang-go` puts it.
fn go() -> Option<PathBuf> {
    let on_path = std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|dir| dir.join("go"))
            .find(|p| p.is_file())
    });
    on_path.or_else(|| {
        ["/usr/local/go/bin/go", "/usr/lib/go/bin/go", "/usr/bin/go"]
            .iter()
            .map(PathBuf::from)
            .find(|p| p.is_file())
    })
}

/// Why these tests cannot run here (no Go, no rabbitmq-server), or `None`.
///
/// # Panics
/// When they cannot and `MESH_REQUIRE_KITS` is set (as CI sets it).
fn missing() -> Option<String> {
    let mut why = Vec::new();
    if go().is_none() {
        why.push("no Go (`go` not on PATH nor in /usr/local/go/bin; Debian `golang-go`)");
    }
    if !Path::new("/usr/lib/rabbitmq/bin/rabbitmq-server").exists() {
        why.push("no RabbitMQ (Debian `rabbitmq-server`)");
    }
    if why.is_empty() {
        return None;
    }
    let why = format!(
        "{} (bash -c '. scripts/lib.sh; ensure_kit_go' installs them)",
        why.join(", ")
    );
    assert!(
        std::env::var_os("MESH_REQUIRE_KITS").is_none(),
        "{why}, and MESH_REQUIRE_KITS is set"
    );
    Some(why)
}

fn ready(test: &str) -> bool {
    match missing() {
        None => true,
        Some(why) => {
            eprintln!("SKIPPED {test}: {why}");
            false
        }
    }
}

/// Runs `program args` in `dir` with `env`; kills it and panics with
/// `what_hangs` when it has not ended within `deadline`.
fn run(
    program: &Path,
    args: &[&str],
    dir: &Path,
    env: &[(&str, String)],
    deadline: Duration,
    what_hangs: &str,
) -> Output {
    let out = tempfile::tempdir().expect("a temp dir for the output");
    let (out_path, err_path) = (out.path().join("out"), out.path().join("err"));
    let mut child = Command::new(program)
        .args(args)
        .current_dir(dir)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(File::create(&out_path).unwrap())
        .stderr(File::create(&err_path).unwrap())
        .spawn()
        .unwrap_or_else(|e| panic!("{} runs: {e}", program.display()));
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("waiting for a child") {
            break status;
        }
        if started.elapsed() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "{} {args:?} still ran after {deadline:?}: {what_hangs}\n{}\n{}",
                program.display(),
                std::fs::read_to_string(&out_path).unwrap_or_default(),
                std::fs::read_to_string(&err_path).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    Output {
        status,
        stdout: std::fs::read(&out_path).unwrap_or_default(),
        stderr: std::fs::read(&err_path).unwrap_or_default(),
    }
}

/// What Go runs with: this toolchain only (never one downloaded).
fn go_env() -> Vec<(&'static str, String)> {
    vec![("GOTOOLCHAIN", "local".to_owned())]
}

/// Runs `go args` in `dir` (relative to the repo); asserts it succeeded;
/// its stdout.
fn go_in(dir: &str, args: &[&str]) -> String {
    let go = go().expect("go");
    let out = run(
        &go,
        args,
        &repo().join(dir),
        &go_env(),
        GO_DEADLINE,
        "go hangs (a module download? the kit needs none)",
    );
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "go {args:?} in {dir} failed:\n{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    text
}

/// Builds the example into target/go/rabbitmq-hook (not committed).
fn build_hook() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo().join("target"));
    let path = target.join("go/rabbitmq-hook");
    go_in(
        "examples/hooks/rabbitmq",
        &["build", "-o", path.to_str().unwrap(), "."],
    );
    path
}

/// Runs `mesh-provide ARGS` with `env`; (exit code, stdout, stderr).
fn mesh_provide(args: &[&str], env: &[(&'static str, String)]) -> (i32, String, String) {
    let out = run(
        &binary("mesh-provide"),
        args,
        &repo(),
        env,
        CONFORM_DEADLINE,
        "the hook likely hangs on a call (a reply never written, or a wait not bounded by deadline_ms)",
    );
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The names in a list the API gives (`/api/users`, `/api/vhosts`), sorted.
fn names(rabbit: &RabbitServer, path: &str) -> Vec<String> {
    let (status, body) = rabbit.api("GET", path, None);
    assert_eq!(status, 200, "GET {path}: {body}");
    let list: Vec<Value> = serde_json::from_str(&body).expect("a JSON list");
    let mut names: Vec<String> = list
        .iter()
        .map(|item| item["name"].as_str().unwrap_or_default().to_owned())
        .collect();
    names.sort();
    names
}

/// The person's user, vhost and permissions, as the API gives them.
fn person_state(rabbit: &RabbitServer) -> (String, String, String) {
    let get = |path: &str| {
        let (status, body) = rabbit.api("GET", path, None);
        assert_eq!(status, 200, "GET {path}: {body}");
        body
    };
    let vhost: Value = serde_json::from_str(&get("/api/vhosts/alice")).unwrap();
    (
        get("/api/users/alice"),
        vhost["name"].to_string(),
        get("/api/permissions/alice/alice"),
    )
}

#[test]
fn the_rabbitmq_hook_on_the_go_kit_passes_every_conform_rule_and_leaves_a_persons_user_alone() {
    if !ready(
        "the_rabbitmq_hook_on_the_go_kit_passes_every_conform_rule_and_leaves_a_persons_user_alone",
    ) {
        return;
    }
    let hook = build_hook();
    let rabbit = RabbitServer::start();
    // A user, a vhost and permissions a person made, beside the suite's.
    for (method, path, body) in [
        (
            "PUT",
            "/api/users/alice",
            r#"{"password":"alice-by-hand-7c1f","tags":"management"}"#,
        ),
        ("PUT", "/api/vhosts/alice", "{}"),
        (
            "PUT",
            "/api/permissions/alice/alice",
            r#"{"configure":".*","write":".*","read":".*"}"#,
        ),
    ] {
        let (status, answer) = rabbit.api(method, path, Some(body));
        assert!(
            (200..300).contains(&status),
            "{method} {path}: {status} {answer}"
        );
    }
    let before = person_state(&rabbit);
    let env = rabbit.hook_env();
    let (code, list, _) = mesh_provide(&["conform", "--list"], &env);
    assert_eq!(code, 0, "conform --list");
    let rules = list.lines().filter(|l| !l.trim().is_empty()).count();
    assert!(rules >= 10, "conform lists {rules} rules: {list}");

    for mode in ["serve", "exec"] {
        let hook_arg = hook.to_str().unwrap();
        let (code, out, err) = mesh_provide(
            &[
                "conform",
                "--hook",
                hook_arg,
                "--hook-mode",
                mode,
                "--consumers",
                // Exec mode starts a process a call: 8 in parallel prove the same as 20.
                if mode == "exec" { "8" } else { "20" },
            ],
            &env,
        );
        assert_eq!(
            code, 0,
            "the Go hook fails conform in {mode} mode:\n{out}\n{err}"
        );
        let passed = hooks_support::conform_passed(&out);
        let skipped = usize::from(out.lines().any(|l| l.starts_with("skip ")));
        assert_eq!(
            passed + skipped,
            rules,
            "every one of the {rules} rules passed, none skipped but a cut too quick to make ({mode}):\n{out}"
        );
        for output in [&out, &err] {
            assert!(
                !output.contains(rabbit.admin_password()),
                "the administrator's password is in conform's output ({mode})"
            );
        }
        assert_eq!(
            names(&rabbit, "/api/users"),
            ["alice", RABBITMQ_ADMIN],
            "nothing of the suite's is left ({mode}): only the person's user and the administrator"
        );
        assert_eq!(
            names(&rabbit, "/api/vhosts"),
            ["/", "alice"],
            "nothing of the suite's is left ({mode}): only the default vhost and the person's"
        );
        assert_eq!(
            person_state(&rabbit),
            before,
            "the person's user (its password hash, its tags), vhost and permissions are untouched ({mode})"
        );
    }
    let (status, _) = rabbit.api_as(
        "alice",
        "alice-by-hand-7c1f",
        "GET",
        "/api/aliveness-test/alice",
        None,
    );
    assert_eq!(status, 200, "the person's user still works on its vhost");
    two_instances_on_one_rabbitmq(&rabbit, &hook);
    // Last (it changes the administrator's password on this node).
    a_rotated_admin_password_is_announced_before_use(&rabbit, &hook);
}

/// Two instances of the hook on one RabbitMQ: what `rabbitmq@mq-1` makes,
/// `rabbitmq@mq-2`'s held lists none of, its ensure is refused naming
/// mq-1, and its retire, re-enable and delete leave working; a user tagged
/// `mesh-provide` alone (before marks named their instance) is listed by
/// none until an ensure adopts it.
fn two_instances_on_one_rabbitmq(rabbit: &RabbitServer, hook: &Path) {
    use hooks_support::{ask_exec, ensure_of, held_names};
    let env: Vec<(String, String)> = rabbit
        .hook_env()
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect();
    let (a, b) = ("rabbitmq@mq-1", "rabbitmq@mq-2");
    let works = |name: &str| {
        let (status, _) = rabbit.api_as(
            name,
            &format!("{name}-pw"),
            "GET",
            &format!("/api/aliveness-test/{name}"),
            None,
        );
        status == 200
    };
    for (provider, name) in [(a, "forge"), (a, "wiki"), (b, "docs")] {
        let reply = ask_exec(hook, &env, provider, ensure_of(name, &format!("{name}-pw")));
        assert_eq!(reply["ok"], true, "{reply}");
    }
    assert_eq!(held_names(hook, &env, a), ["forge", "wiki"]);
    assert_eq!(held_names(hook, &env, b), ["docs"]);
    let refused = ask_exec(hook, &env, b, ensure_of("forge", "taken-pw"));
    assert_eq!(refused["class"], "refused", "{refused}");
    assert!(
        refused["error"]
            .as_str()
            .unwrap()
            .contains("made by rabbitmq@mq-1"),
        "{refused}"
    );
    for verb in ["retire", "re-enable", "delete"] {
        let _ = ask_exec(hook, &env, b, json!({"verb": verb, "consumer": "forge"}));
        assert!(works("forge"), "forge works after {verb} as {b}");
    }
    let held = ask_exec(hook, &env, a, json!({"verb": "held"}));
    assert!(
        held["held"]
            .as_array()
            .unwrap()
            .contains(&json!({"consumer": "forge", "retired": false})),
        "{held}"
    );

    // A user marked before instances: listed by none, left by retire, adopted by ensure.
    for (method, path, body) in [
        (
            "PUT",
            "/api/users/old",
            r#"{"password":"old-pw","tags":"management,mesh-provide"}"#,
        ),
        ("PUT", "/api/vhosts/old", "{}"),
        (
            "PUT",
            "/api/permissions/old/old",
            r#"{"configure":".*","write":".*","read":".*"}"#,
        ),
    ] {
        let (status, answer) = rabbit.api(method, path, Some(body));
        assert!(
            (200..300).contains(&status),
            "{method} {path}: {status} {answer}"
        );
    }
    assert_eq!(
        held_names(hook, &env, a),
        ["forge", "wiki"],
        "an old mark is no instance's"
    );
    let _ = ask_exec(hook, &env, a, json!({"verb": "retire", "consumer": "old"}));
    assert!(
        works("old"),
        "an old mark is not retired by an instance that did not adopt it"
    );
    let reply = ask_exec(hook, &env, a, ensure_of("old", "old-pw"));
    assert_eq!(
        (&reply["ok"], reply.get("mended")),
        (&json!(true), None),
        "adopted, nothing mended: {reply}"
    );
    assert_eq!(held_names(hook, &env, a), ["forge", "old", "wiki"]);
    assert_eq!(held_names(hook, &env, b), ["docs"]);
    assert!(works("old"));

    for (provider, name) in [(a, "forge"), (a, "wiki"), (a, "old"), (b, "docs")] {
        let reply = ask_exec(
            hook,
            &env,
            provider,
            json!({"verb": "delete", "consumer": name}),
        );
        assert_eq!(reply["ok"], true, "{reply}");
    }
    assert_eq!(names(rabbit, "/api/users"), ["alice", RABBITMQ_ADMIN]);
}

/// The hook in serve mode reads its administrator's password file on
/// every call: after a rotation (at RabbitMQ and in the file) the next call
/// works, and the new password is announced on a secrets line before that
/// call's reply; neither password is ever on its stderr.
fn a_rotated_admin_password_is_announced_before_use(rabbit: &RabbitServer, hook: &Path) {
    use std::io::{BufRead, BufReader, Write};
    let stderr = tempfile::NamedTempFile::new().unwrap();
    let mut child = Command::new(hook)
        .arg("serve")
        .envs(rabbit.hook_env())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(stderr.reopen().unwrap())
        .spawn()
        .expect("the hook runs");
    let mut stdin = child.stdin.take().unwrap();
    let (lines, replies) = std::sync::mpsc::channel::<String>();
    let stdout = BufReader::new(child.stdout.take().unwrap());
    std::thread::spawn(move || {
        for line in stdout.lines().map_while(Result::ok) {
            let _ = lines.send(line);
        }
    });
    // Every line the hook writes up to the reply to `id`.
    let mut until = |id: u64, request: &str| -> Vec<Value> {
        writeln!(stdin, "{request}").unwrap();
        let mut seen = Vec::new();
        loop {
            let line = replies
                .recv_timeout(Duration::from_secs(30))
                .unwrap_or_else(|_| {
                    panic!(
                        "no reply to request {id} within 30 s: the hook hangs or died ({seen:?})"
                    )
                });
            let value: Value = serde_json::from_str(&line).expect("a JSON line");
            let done = value["id"] == id;
            seen.push(value);
            if done {
                return seen;
            }
        }
    };
    let old = rabbit.admin_password().to_owned();
    let hello = until(1, r#"{"v":1,"id":1,"verb":"hello","deadline_ms":10000}"#);
    assert_eq!(
        hello.last().unwrap()["secrets"],
        serde_json::json!([old]),
        "hello says the administrator's password: {hello:?}"
    );
    let new = "rotated-admin-password-5e2b9d";
    let (status, body) = rabbit.api(
        "PUT",
        &format!("/api/users/{RABBITMQ_ADMIN}"),
        Some(&format!(r#"{{"password":"{new}","tags":"administrator"}}"#)),
    );
    assert!(
        (200..300).contains(&status),
        "rotating the admin: {status} {body}"
    );
    assert_eq!(
        hello.last().unwrap()["fault"],
        Value::Null,
        "the administrator works: hello says no provider fault: {hello:?}"
    );
    // Rotated at RabbitMQ, not yet in the file: hello says the provider
    // fault (hook.Hook.AdminFault), its class and why, without the password.
    let refused = until(3, r#"{"v":1,"id":3,"verb":"hello","deadline_ms":10000}"#);
    let fault = &refused.last().unwrap()["fault"];
    assert_eq!(fault["class"], "credentials-rejected", "{refused:?}");
    assert!(
        fault["error"]
            .as_str()
            .unwrap_or_default()
            .contains(&format!(
                "the hook's administrator {RABBITMQ_ADMIN} was refused"
            )),
        "{refused:?}"
    );
    assert!(!fault.to_string().contains(&old), "{fault}");
    std::fs::write(rabbit.admin_password_file(), format!("{new}\n")).unwrap();
    let held = until(
        2,
        r#"{"v":1,"id":2,"verb":"held","deadline_ms":10000,"provider":"rabbitmq@mq-1"}"#,
    );
    assert_eq!(
        held.first().unwrap(),
        &serde_json::json!({"secrets": [new]}),
        "the new password is announced, alone, before the reply of the call that used it: {held:?}"
    );
    assert!(
        held.last().unwrap()["held"].is_array(),
        "held works with the new password, no restart: {held:?}"
    );
    let cleared = until(4, r#"{"v":1,"id":4,"verb":"hello","deadline_ms":10000}"#);
    assert_eq!(
        cleared.last().unwrap()["fault"],
        Value::Null,
        "the new password in its file: the fault cleared, no restart: {cleared:?}"
    );
    drop(stdin);
    let status = child.wait().unwrap();
    assert!(
        status.success(),
        "the hook ends when its stdin closes: {status}"
    );
    let log = std::fs::read_to_string(stderr.path()).unwrap();
    assert!(
        !log.contains(&old) && !log.contains(new),
        "an administrator's password on the hook's stderr"
    );
}

#[test]
fn the_go_kit_and_its_example_pass_go_vet_gofmt_and_the_kits_unit_tests() {
    if !ready("the_go_kit_and_its_example_pass_go_vet_gofmt_and_the_kits_unit_tests") {
        return;
    }
    let gofmt = go().unwrap().with_file_name("gofmt");
    for dir in ["kits/go", "examples/hooks/rabbitmq"] {
        go_in(dir, &["vet", "./..."]);
        let out = run(
            &gofmt,
            &["-l", "."],
            &repo().join(dir),
            &[],
            GO_DEADLINE,
            "gofmt hangs",
        );
        assert!(out.status.success(), "gofmt -l in {dir}");
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            "",
            "gofmt -l in {dir}: these files are not formatted"
        );
    }
    let tests = go_in("kits/go", &["test", "-count=1", "./..."]);
    assert!(
        tests.contains("ok  \tmesh/hook"),
        "go test ./... in kits/go: {tests}"
    );
}

/// The Go release the kit and its example claim (`go 1.N` in go.mod).
const GO_FLOOR: u32 = 19;

/// The standard library's package-level names (functions, types,
/// constants, variables) and packages that came after Go 1.`floor`, from
/// Go's own record of its API (`$GOROOT/api/go1.N.txt`): `(package, name)`,
/// and the packages that did not exist up to the floor.
fn newer_than(api: &Path, floor: u32) -> (BTreeSet<(String, String)>, BTreeSet<String>) {
    let mut names = BTreeSet::new();
    let mut old_names = BTreeSet::new();
    let mut old_packages = BTreeSet::new();
    let mut new_packages = BTreeSet::new();
    for entry in std::fs::read_dir(api).unwrap().flatten() {
        let file = entry.file_name().to_string_lossy().into_owned();
        let release = match file
            .strip_prefix("go1")
            .and_then(|r| r.strip_suffix(".txt"))
        {
            Some("") => 0,
            Some(r) => match r.strip_prefix('.').and_then(|n| n.parse::<u32>().ok()) {
                Some(n) => n,
                None => continue,
            },
            None => continue,
        };
        let text = std::fs::read_to_string(entry.path()).unwrap();
        for line in text.lines() {
            let Some(rest) = line.strip_prefix("pkg ") else {
                continue;
            };
            let Some((package, item)) = rest.split_once(", ") else {
                continue;
            };
            // `pkg syscall (linux-386), const ...`: the package alone.
            let package = package.split(' ').next().unwrap_or(package).to_owned();
            let mut words = item.split_whitespace();
            let (Some(kind), Some(name)) = (words.next(), words.next()) else {
                continue;
            };
            let name: String = name
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            // `type T struct, F ...`: a field of T, not T.
            let a_name = matches!(kind, "func" | "type" | "const" | "var");
            if release <= floor {
                old_packages.insert(package.clone());
                if a_name {
                    old_names.insert((package, name));
                }
                continue;
            }
            new_packages.insert(package.clone());
            if a_name {
                names.insert((package, name));
            }
        }
    }
    let names = names.difference(&old_names).cloned().collect();
    let new_packages = new_packages.difference(&old_packages).cloned().collect();
    (names, new_packages)
}

/// What of the standard library `source` (a Go file) names that is newer
/// than the floor: imports of new packages, and package-level names added
/// later (a method or field added later is not seen: a limit of reading
/// without types).
fn too_new(
    source: &str,
    (names, packages): &(BTreeSet<(String, String)>, BTreeSet<String>),
) -> Vec<String> {
    let mut found = Vec::new();
    // The imports: `import "x"`, or a block; an alias before the path.
    let mut imports: Vec<(String, String)> = Vec::new();
    let mut in_block = false;
    for line in source.lines().map(str::trim) {
        let spec = if in_block {
            if line.starts_with(')') {
                in_block = false;
                continue;
            }
            line
        } else if line == "import (" {
            in_block = true;
            continue;
        } else if let Some(spec) = line.strip_prefix("import ") {
            spec
        } else {
            continue;
        };
        let mut parts = spec.split_whitespace();
        let (alias, path) = match (parts.next(), parts.next()) {
            (Some(a), Some(p)) if p.starts_with('"') => (Some(a), p),
            (Some(p), _) if p.starts_with('"') => (None, p),
            _ => continue,
        };
        let path = path.trim_matches('"').to_owned();
        let local = alias
            .map(str::to_owned)
            .unwrap_or_else(|| path.rsplit('/').next().unwrap_or(&path).to_owned());
        if packages.contains(&path) {
            found.push(format!("package {path}"));
        }
        imports.push((local, path));
    }
    for (local, path) in &imports {
        let prefix = format!("{local}.");
        for (at, _) in source.match_indices(&prefix) {
            let before = source[..at].chars().next_back();
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '.') {
                continue;
            }
            let name: String = source[at + prefix.len()..]
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if names.contains(&(path.clone(), name.clone())) {
                found.push(format!("{path}.{name}"));
            }
        }
    }
    found.sort();
    found.dedup();
    found
}

/// The kit and its example build with the Go their go.mod names: since Go
/// 1.21 the compiler refuses language features newer than the go.mod line,
/// but not a newer standard library; this holds the library to it too, by
/// Go's own record of when each name came (`$GOROOT/api`).
#[test]
fn the_go_kit_and_its_example_use_nothing_newer_than_their_go_floor() {
    let Some(go) = go() else {
        assert!(
            std::env::var_os("MESH_REQUIRE_KITS").is_none(),
            "no Go, and MESH_REQUIRE_KITS is set"
        );
        eprintln!("SKIPPED the Go floor: no Go");
        return;
    };
    let root = Command::new(&go)
        .args(["env", "GOROOT"])
        .output()
        .expect("go env GOROOT");
    let api = PathBuf::from(String::from_utf8_lossy(&root.stdout).trim()).join("api");
    let newer = newer_than(&api, GO_FLOOR);
    assert!(
        newer.0.contains(&("errors".to_owned(), "Join".to_owned())) && newer.1.contains("slices"),
        "Go's API record was not read: {} names, packages {:?}",
        newer.0.len(),
        newer.1
    );
    // It can fail: a planted call and import are found.
    let planted = "package x\n\nimport (\n\t\"errors\"\n\t\"slices\"\n\t\"strings\"\n)\n\n\
                   var _ = errors.Join\nvar _ = strings.CutPrefix\nvar _ = strings.TrimSpace\n";
    assert_eq!(
        too_new(planted, &newer),
        ["errors.Join", "package slices", "strings.CutPrefix"]
    );
    for dir in ["kits/go", "examples/hooks/rabbitmq"] {
        let module = std::fs::read_to_string(repo().join(dir).join("go.mod")).unwrap();
        assert!(
            module.lines().any(|l| l == format!("go 1.{GO_FLOOR}")),
            "{dir}/go.mod names go 1.{GO_FLOOR}"
        );
        for entry in std::fs::read_dir(repo().join(dir)).unwrap().flatten() {
            let path = entry.path();
            if path.extension().is_some_and(|e| e == "go") {
                let source = std::fs::read_to_string(&path).unwrap();
                let found = too_new(&source, &newer);
                assert!(
                    found.is_empty(),
                    "{} uses what came after Go 1.{GO_FLOOR}: {found:?}",
                    path.display()
                );
            }
        }
    }
}
