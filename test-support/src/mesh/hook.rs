//! The hook provider of a [`Mesh`]: `mesh-provide` as `redis@cache-1`
//! (provision `redis-acl`) over one of the example hooks in
//! `examples/hooks`, on the contributions file `hook.json`.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{json, Value};

use super::{binary, Mesh, Process};

/// The hook provider's module.
pub const HOOK_MODULE: &str = "redis";

/// The hook provider's machine.
pub const HOOK_MACHINE: &str = "cache-1";

/// The provision the hook provider makes.
pub const HOOK_PROVISION: &str = "redis-acl";

/// `mesh-provide`'s `--pass-every`.
pub const HOOK_PASS_EVERY: &str = "250ms";

/// The example hook `name` of the repository (`examples/hooks/<name>`).
pub fn example_hook(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../examples/hooks")
        .join(name)
}

/// Why the node hook cannot run here (its npm dependencies, `@redis/client`
/// and the TypeScript kit built, are not installed: `bash -c '.
/// scripts/lib.sh; ensure_node_hooks'`, which `scripts/test` runs), or
/// `None` when it can.
///
/// # Panics
/// When it cannot and `MESH_REQUIRE_NODE_HOOKS` is set (as CI sets it):
/// there the node hook's tests must run.
pub fn node_hooks_missing() -> Option<String> {
    let missing: Vec<String> = [
        "node_modules/@redis/client/package.json",
        "node_modules/mesh-hook-kit/dist/index.js",
    ]
    .iter()
    .map(|path| example_hook(path))
    .filter(|path| !path.exists())
    .map(|path| path.display().to_string())
    .collect();
    if missing.is_empty() {
        return None;
    }
    let why = format!(
        "the node hook's dependencies are not installed ({} missing: run \
         `bash -c '. scripts/lib.sh; ensure_node_hooks'`, as scripts/test does)",
        missing.join(", ")
    );
    assert!(
        std::env::var_os("MESH_REQUIRE_NODE_HOOKS").is_none(),
        "{why}, and MESH_REQUIRE_NODE_HOOKS is set"
    );
    Some(why)
}

impl Mesh {
    /// Writes the hook provider's contributions file `hook.json` listing
    /// `consumers` (of those the declaration gives it).
    pub fn list_hook(&self, consumers: &[&str]) {
        let entries: Vec<Value> = self
            .hook_consumers
            .iter()
            .filter(|(c, _)| consumers.contains(c))
            .map(|(c, m)| json!({"consumer": c, "machine": m, "provision": HOOK_PROVISION, "secret_file": format!("secrets/{c}")}))
            .collect();
        let file = json!({"provider": {"module": HOOK_MODULE, "machine": HOOK_MACHINE}, "consumers": entries});
        crate::write_whole(&self.path("hook.json"), file.to_string());
    }

    /// Starts `mesh-provide` as `redis@cache-1` on `hook.json` (log
    /// `hook.log`) with the hook at `hook` in `mode` (`exec` or `serve`),
    /// `env` added to its environment (the hook's own settings), a pass
    /// every [`HOOK_PASS_EVERY`], short timings, and a consumer retired
    /// after 3 passes and `retire_after`.
    pub fn start_hook(
        &mut self,
        hook: &Path,
        mode: &str,
        retire_after: &str,
        env: &[(String, String)],
    ) {
        let mut command = Command::new(binary("mesh-provide"));
        command
            .arg("--hook")
            .arg(hook)
            .args(["--hook-mode", mode, "--hook-timeout", "10s"])
            .arg("--contributions")
            .arg(self.path("hook.json"))
            .args(self.bus_flags(&format!("{HOOK_MODULE}@{HOOK_MACHINE}")))
            .args(self.provider_timings(HOOK_PASS_EVERY))
            .args(["--retire-after-passes", "3", "--retire-after", retire_after])
            .env("RUST_LOG", self.log_level)
            .envs(env.iter().map(|(k, v)| (k, v)));
        self.hook = Some(Process::spawn("hook", command, self.path("hook.log")));
    }

    /// Stops `mesh-provide` (SIGTERM), if it runs.
    pub fn stop_hook(&mut self) {
        if let Some(mut p) = self.hook.take() {
            p.stop();
        }
    }

    /// `mesh-provide`'s log so far.
    pub fn hook_log(&self) -> String {
        self.hook
            .as_ref()
            .map(Process::log_text)
            .unwrap_or_default()
    }
}

/// Runs `mesh-provide conform --hook HOOK --hook-mode MODE` with `args` and
/// `env` added; returns (exit code, stdout, stderr).
pub fn conform(
    hook: &Path,
    mode: &str,
    args: &[&str],
    env: &[(String, String)],
) -> (i32, String, String) {
    let out = Command::new(binary("mesh-provide"))
        .arg("conform")
        .arg("--hook")
        .arg(hook)
        .args(["--hook-mode", mode])
        .args(args.iter().map(OsString::from))
        .envs(env.iter().map(|(k, v)| (k, v)))
        .output()
        .expect("mesh-provide conform runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}
