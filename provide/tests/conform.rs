//! `mesh-provide conform` over the built binary and a folder hook in `sh`
//! (tests/hooks/folders.sh, with jq): every rule passes, and a hook whose
//! check proves nothing fails one, naming it, with exit 1.

use std::path::Path;
use std::process::Command;

/// Runs `mesh-provide conform` on the folder hook over `root`; (exit code, stdout, stderr).
fn conform(root: &Path, lax: bool, extra: &[&str]) -> (i32, String, String) {
    let hook = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/hooks/folders.sh");
    let mut command = Command::new(env!("CARGO_BIN_EXE_mesh-provide"));
    command
        .args(["conform", "--hook"])
        .arg(&hook)
        .args(extra)
        .env("FOLDERS_ROOT", root);
    if lax {
        command.env("FOLDERS_LAX", "1");
    }
    let out = command.output().expect("mesh-provide runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_folder_hook_passes_every_rule_and_leaves_nothing_behind() {
    let root = tempfile::tempdir().unwrap();
    let (code, out, err) = conform(root.path(), false, &["--consumers", "8"]);
    assert_eq!(code, 0, "{out}\n{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 11, "{out}");
    assert!(lines[..10].iter().all(|l| l.starts_with("ok   ")), "{out}");
    assert_eq!(lines[9], "ok   8 consumers in parallel");
    assert_eq!(lines[10], "10 passed, 0 failed");
    assert_eq!(
        std::fs::read_dir(root.path()).unwrap().count(),
        0,
        "cleaned up"
    );
}

#[test]
fn a_check_that_proves_nothing_fails_its_rule_and_exits_1() {
    let root = tempfile::tempdir().unwrap();
    let (code, out, err) = conform(root.path(), true, &["--consumers", "2"]);
    assert_eq!(code, 1, "{out}\n{err}");
    assert!(
        out.contains("\nFAIL check with another secret fails credentials-rejected: check passed with a secret"),
        "{out}"
    );
    assert!(out.ends_with("9 passed, 1 failed\n"), "{out}");
    assert!(
        err.contains("mesh-provide conform: 1 of 10 rules failed for hook "),
        "{err}"
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
