//! What the hook tests share: small hooks written into a temp dir, a
//! consumer, and a started provisioner over a hook.
#![allow(dead_code)] // each test binary uses a part

use std::path::{Path, PathBuf};
use std::time::Duration;

use mesh_provide::hook::{Hook, HookSettings, Mode};
use mesh_provide::provisioner::HookProvisioner;
use mesh_sdk::{Consumer, Name, Secret};

/// Writes an executable `/bin/sh` script `name` holding `body` into `dir`
/// ([`mesh_test_support::write_script`]: not held open by this process,
/// so a hook another test thread forks meanwhile cannot keep it busy).
pub fn script(dir: &Path, name: &str, body: &str) -> PathBuf {
    let path = dir.join(name);
    mesh_test_support::write_script(&path, &format!("#!/bin/sh\n{body}"));
    path
}

/// Settings for `path` in `mode`, each call bounded by `timeout`.
pub fn settings(path: &Path, mode: Mode, timeout: Duration) -> HookSettings {
    HookSettings {
        provider: provider(),
        path: path.to_owned(),
        mode,
        timeout,
        concurrency: 16,
        hello_every: Duration::from_secs(3600),
    }
}

/// A provisioner over the hook at `path`.
pub async fn provisioner(path: &Path, mode: Mode, timeout: Duration) -> HookProvisioner {
    let (hook, hello) = Hook::start(settings(path, mode, timeout))
        .await
        .unwrap_or_else(|e| panic!("the hook starts: {e}"));
    HookProvisioner::new(hook, &hello)
}

/// The provider instance these tests' hooks run for: `hook@test-1`.
pub fn provider() -> mesh_sdk::ModuleId {
    "hook@test-1".parse().unwrap()
}

/// A consumer named `name` on `app-1`, listed by [`provider`].
pub fn consumer(name: &str) -> Consumer {
    Consumer {
        provider: provider(),
        name: Name::parse(name).unwrap(),
        machine: Name::parse("app-1").unwrap(),
        provision: "test".into(),
        secret_file: PathBuf::new(),
        options: serde_json::json!({}),
    }
}

/// The secret of these tests.
pub fn secret() -> Secret {
    Secret::new("minted-s3cret-value")
}

/// The `id` of a request line, as a serve hook in `sh` finds it.
pub const ID: &str = r#"id=$(printf '%s' "$line" | sed -n 's/.*"id":\([0-9]*\).*/\1/p')"#;
