//! `mesh-controller plan NEW` through the binary: what a new declaration
//! would withdraw and add for each provider, its exit codes (0 nothing
//! withdrawn, 1 something is, 2 a declaration unusable) and its JSON.

use std::path::Path;
use std::process::{Command, Output};

const CURRENT: &str = r#"{"modules": [
  {"module": "postgres", "machine": "db-1", "provides": ["postgres-database"]},
  {"module": "forge", "machine": "app-1", "requires": [{"provision": "postgres-database", "from": "postgres@db-1"}]},
  {"module": "wiki", "machine": "app-2", "requires": [{"provision": "postgres-database", "from": "postgres@db-1"}]}
]}"#;

/// A typo: forge requires from `postgres@db-l`, so its entry is refused
/// and its database would be withdrawn; chat is new.
const NEW: &str = r#"{"modules": [
  {"module": "postgres", "machine": "db-1", "provides": ["postgres-database"]},
  {"module": "forge", "machine": "app-1", "requires": [{"provision": "postgres-database", "from": "postgres@db-l"}]},
  {"module": "wiki", "machine": "app-2", "requires": [{"provision": "postgres-database", "from": "postgres@db-1"}]},
  {"module": "chat", "machine": "app-1", "requires": [{"provision": "postgres-database", "from": "postgres@db-1"}]}
]}"#;

fn plan(dir: &Path, new: &str, extra: &[&str]) -> Output {
    std::fs::write(dir.join("current.json"), CURRENT).unwrap();
    std::fs::write(dir.join("new.json"), new).unwrap();
    Command::new(env!("CARGO_BIN_EXE_mesh-controller"))
        .arg("--declaration")
        .arg(dir.join("current.json"))
        .arg("plan")
        .arg(dir.join("new.json"))
        .args(extra)
        .env_remove("MESH_DECLARATION")
        .output()
        .unwrap()
}

#[test]
fn a_typo_that_drops_a_required_consumer_is_named_with_when_it_would_be_retired_and_exits_1() {
    let dir = tempfile::tempdir().unwrap();
    let out = plan(dir.path(), NEW, &[]);
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(out.status.code(), Some(1), "{stdout}{stderr}");
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines[0], "plan: 1 consumer withdrawn, 1 added");
    assert_eq!(lines[1], "postgres@db-1:");
    assert_eq!(lines[2], "  + chat@app-1 (postgres-database)");
    assert_eq!(
        lines[3],
        "  - forge@app-1 (postgres-database): withdrawn; postgres@db-1 retires it (disabled, nothing deleted) 10m after its contributions file no longer lists it (5 passes and 10m), unless listed again; at once with `mesh-controller approve postgres@db-1 forge`; its data is deleted only with `mesh-controller approve postgres@db-1 forge --delete`"
    );
    assert_eq!(lines.len(), 4, "{stdout}");
    // Why: the refused entry, on stderr, and the exit's reason.
    assert!(
        stderr.contains("the new declaration's entry is refused"),
        "{stderr}"
    );
    assert!(stderr.contains("postgres@db-l"), "{stderr}");
    assert!(stderr.contains("withdraws 1 consumer(s)"), "{stderr}");

    // The providers' own timing changes when.
    let out = plan(
        dir.path(),
        NEW,
        &["--retire-after-passes", "120", "--pass-every", "10s"],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("retires it (disabled, nothing deleted) 20m after"),
        "{stdout}"
    );
}

#[test]
fn json_carries_the_same_and_no_withdrawal_exits_0() {
    let dir = tempfile::tempdir().unwrap();
    let out = plan(dir.path(), NEW, &["--json"]);
    assert_eq!(out.status.code(), Some(1));
    let said: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(said["withdrawn"], 1);
    assert_eq!(said["added"], 1);
    assert_eq!(said["retired_after_seconds"], 600);
    let postgres = &said["providers"][0];
    assert_eq!(postgres["provider"], "postgres@db-1");
    assert_eq!(
        postgres["withdrawn"],
        serde_json::json!([{"consumer": "forge", "machine": "app-1", "provision": "postgres-database"}])
    );
    assert_eq!(said["refused"].as_array().unwrap().len(), 1);

    let out = plan(dir.path(), CURRENT, &[]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "plan: 0 consumers withdrawn, 0 added\npostgres@db-1: no change\n"
    );
}

#[test]
fn a_new_declaration_that_cannot_be_read_exits_2_saying_which() {
    let dir = tempfile::tempdir().unwrap();
    let out = plan(dir.path(), "{ not json", &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("new.json is malformed"), "{stderr}");
    assert!(out.stdout.is_empty());
}
