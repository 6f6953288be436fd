//! Which provider instance `mesh-provide` runs a hook for, at start: from
//! `--provider`, else the contributions file's `provider` block; neither
//! is a start that says what to give (exit 1), never a hook started
//! without its instance.

use std::process::Command;

fn mesh_provide(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_mesh-provide"))
        .args(args)
        .env_remove("MESH_PROVIDER")
        .env_remove("MESH_CONTRIBUTIONS")
        .output()
        .expect("mesh-provide runs")
}

#[test]
fn without_provider_and_without_a_readable_file_it_says_what_to_give_and_exits_1() {
    let dir = tempfile::tempdir().unwrap();
    let started = dir.path().join("started");
    let hook = dir.path().join("hook.sh");
    std::fs::write(&hook, format!("#!/bin/sh\ntouch {}\n", started.display())).unwrap();
    std::process::Command::new("chmod")
        .args(["0755", &hook.display().to_string()])
        .status()
        .unwrap();
    let broken = dir.path().join("contributions.json");
    for text in [
        None,
        Some("{ not json"),
        Some(r#"{"provider": {"module": "Redis"}}"#),
    ] {
        match text {
            Some(text) => std::fs::write(&broken, text).unwrap(),
            None => drop(std::fs::remove_file(&broken)),
        }
        let out = mesh_provide(&[
            "--hook",
            &hook.display().to_string(),
            "--contributions",
            &broken.display().to_string(),
        ]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{text:?}: {stderr}");
        assert!(
            stderr.contains("cannot tell which provider instance this is, so give --provider MODULE@MACHINE (MESH_PROVIDER): contributions file"),
            "{text:?}: {stderr}"
        );
        assert!(!started.exists(), "the hook was not started");
    }
}

#[test]
fn a_provider_that_is_no_module_at_machine_is_refused_by_the_command_line() {
    let out = mesh_provide(&[
        "--hook",
        "/bin/true",
        "--contributions",
        "/nonexistent.json",
        "--provider",
        "Redis",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--provider"), "{stderr}");
}
