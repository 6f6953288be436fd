//! The `mesh-identity` binary: its flags, and the exit codes of a provider
//! that cannot run.

use std::process::Command;

fn binary() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_mesh-identity"));
    for (name, _) in std::env::vars() {
        if name.starts_with("MESH_") {
            command.env_remove(name);
        }
    }
    command
}

#[test]
fn help_names_the_flags_and_their_environment() {
    let out = binary().arg("--help").output().unwrap();
    assert!(out.status.success());
    let help = String::from_utf8(out.stdout).unwrap();
    for flag in [
        "--keycloak-url",
        "MESH_KEYCLOAK_URL",
        "--realm",
        "--admin-user",
        "--admin-password-file",
        "--container",
        "--container-cli",
        "MESH_CONTAINER_CLI",
        "--contributions",
        "--repair-check-every",
    ] {
        assert!(help.contains(flag), "{flag} missing from:\n{help}");
    }
}

#[test]
fn a_provider_that_cannot_run_says_why_and_exits_1() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no-such-password-file");
    let out = binary()
        .args([
            "--contributions",
            "c.json",
            "--keycloak-url",
            "http://127.0.0.1:9",
        ])
        .args(["--realm", "mesh", "--admin-password-file"])
        .arg(&missing)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr.starts_with(&format!(
            "mesh-identity: the admin password file {} cannot be read",
            missing.display()
        )),
        "{stderr}"
    );

    let password = dir.path().join("pw");
    std::fs::write(&password, "hunter2-admin\n").unwrap();
    let out = binary()
        .args(["--contributions", "c.json", "--realm", "mesh"])
        .args(["--keycloak-url", "http://admin:hunter2-admin@127.0.0.1:9"])
        .arg("--admin-password-file")
        .arg(&password)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr.contains("must not hold a user or a password"),
        "{stderr}"
    );
    assert!(!stderr.contains("hunter2"), "{stderr}");
}

#[test]
fn a_bad_command_line_exits_2() {
    let out = binary()
        .args(["--contributions", "c.json", "--keycloak-url", "http://k"])
        .args(["--realm", "mesh", "--admin-password-file", "pw"])
        .args(["--container-cli", "nerdctl"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr.contains("expected docker, podman or an absolute path"),
        "{stderr}"
    );
}
