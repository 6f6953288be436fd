//! The controller and the console stay apart: `cargo tree` of each
//! binary's crate (normal dependencies, as built for release) holds
//! neither the other's crate nor what only the other uses: the console's
//! form and query parsing is not in the controller, the controller's bus
//! password hashing is not in the console. Both read the store through
//! `mesh-pg-store`.
//!
//! Both trees hold an HTTP server (mesh-runtime's `/metrics` endpoint,
//! which `serve` uses) and async-nats (mesh-runtime's bus arguments and
//! outbox, which the console never calls): a `bus` feature of mesh-runtime
//! would take the latter out of the console's tree.
//!
//! Why a check of our own: a dependency added to the wrong crate compiles
//! and passes every other test; only the tree says it.

use std::collections::BTreeSet;
use std::process::Command;

/// The package names in `package`'s normal dependency tree.
fn tree(package: &str) -> BTreeSet<String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let out = Command::new(cargo)
        .args([
            "tree",
            "--offline",
            "-e",
            "normal",
            "--prefix",
            "none",
            "-p",
            package,
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo tree runs");
    assert!(out.status.success(), "cargo tree -p {package}: {out:?}");
    let names: BTreeSet<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|line| line.split_whitespace().next())
        .map(str::to_owned)
        .collect();
    assert!(names.len() > 20, "cargo tree -p {package} read: {names:?}");
    names
}

#[test]
fn the_controller_and_the_console_share_the_store_crate_and_nothing_of_each_other() {
    let controller = tree("mesh-controller");
    let console = tree("mesh-console");
    for shared in ["mesh-pg-store", "mesh-status", "mesh-protocol"] {
        assert!(controller.contains(shared), "controller lacks {shared}");
        assert!(console.contains(shared), "console lacks {shared}");
    }
    // What the console's forms and queries parse with (axum's `form` and
    // `query`): the controller serves only /metrics.
    for only_console in ["mesh-console", "serde_urlencoded", "serde_path_to_error"] {
        assert!(
            !controller.contains(only_console),
            "mesh-controller's tree holds {only_console}"
        );
    }
    // The bus users' password hashes (`permissions --format nats`).
    for only_controller in ["mesh-controller", "bcrypt", "blowfish"] {
        assert!(
            !console.contains(only_controller),
            "mesh-console's tree holds {only_controller}"
        );
    }
}
