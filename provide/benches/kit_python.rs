//! What the serve-mode boundary costs a hook written on the Python kit
//! (kits/python/mesh_hook.py): a loop pass (`ensure` then `check` for each
//! consumer, at most 16 at once, the loop's default `--concurrency`) over
//! examples/hooks/redis-acl.py (ACL GETUSER compared on a pooled
//! administrator connection, then a login as the consumer: AUTH on a new
//! connection) on a private Redis, measured two ways in the same run:
//!
//! - direct: the hook's verbs called in one Python process, 16 threads, no
//!   mesh-provide (benches/kit_python_direct.py): the hook's own work;
//! - serve: mesh-provide's `HookProvisioner` (what the loop calls) over the
//!   hook in serve mode: a JSON line round trip a call, the kit's reading
//!   thread and worker threads.
//!
//! Each at 50, 200 and 1,000 consumers; the target: a serve pass within
//! 1.2 × the direct one.
//!
//! ```text
//! cargo bench -p mesh-provide --bench kit_python
//! MESH_BENCH_CONSUMERS=50,200 MESH_BENCH_RUNS=3 cargo bench -p mesh-provide --bench kit_python
//! MESH_BENCH_HOOK=/elsewhere/redis-acl.py cargo bench -p mesh-provide --bench kit_python
//! ```
//!
//! `MESH_BENCH_HOOK` takes another copy of the hook (with the
//! `mesh_hook.py` it finds beside it) for both passes, the served one and
//! the direct one (kit_python_direct.py imports its verbs), so that two
//! kits or two versions of the hook can be compared by runs in turn.
//!
//! As a smoke (`MESH_BENCH_CONSUMERS=5 MESH_BENCH_RUNS=1 cargo test -p
//! mesh-provide --bench kit_python`, a debug build) every call must
//! succeed; its figures mean nothing.
//!
//! Needs redis-server, redis-cli and python3
//! (`bash -c '. scripts/lib.sh; ensure_hook_tools'`).

#[path = "boundary/mod.rs"]
mod boundary;

use std::process::{Command, Stdio};
use std::sync::Arc;

use boundary::{compare, consumers, env_list, provisioner, repo, Direct, CONCURRENCY};
use mesh_provide::hook::Mode;
use mesh_test_support::RedisServer;

#[tokio::main]
async fn main() {
    let sizes = env_list("MESH_BENCH_CONSUMERS", &[50, 200, 1000]);
    let runs = env_list("MESH_BENCH_RUNS", &[9])[0].max(1);
    // MESH_BENCH_HOOK: another copy of the hook and its kit (module doc).
    let hook = std::env::var_os("MESH_BENCH_HOOK")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| repo().join("examples/hooks/redis-acl.py"));
    let redis = RedisServer::start();
    let env = redis.hook_env();
    for (key, value) in &env {
        // The hooks mesh-provide starts inherit its environment.
        std::env::set_var(key, value);
    }
    println!(
        "kit_python: redis-acl.py (the Python kit) on a private Redis, a pass = ensure + check a consumer, \
         {CONCURRENCY} at once, {runs} rounds (median)"
    );
    let mut driver = Command::new("python3");
    driver
        .env("MESH_PROVIDER", boundary::PROVIDER)
        .arg(repo().join("provide/benches/kit_python_direct.py"))
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stderr(Stdio::null());
    let mut direct = Direct::start(driver);
    let serve = provisioner(&hook, Mode::Serve).await;
    for &n in &sizes {
        let all = Arc::new(consumers(n, "redis-acl"));
        let compared = compare(&mut direct, &serve, &all, runs).await;
        println!("\n{n} consumers ({} calls a pass)", 2 * n);
        compared.print(n, "the hook's own work, 16 Python threads");
    }
}
