//! What the process boundary costs: a loop pass (`ensure` then `check` for
//! each consumer, at most 16 at once, the loop's default `--concurrency`)
//! over examples/hooks/redis-acl.mjs, a hook doing real Redis work (ACL
//! GETUSER compared, then a login as the consumer: AUTH on a new
//! connection), on a private Redis, measured three ways in the same run:
//!
//! - direct: the hook's handlers called in one node process, no
//!   mesh-provide (benches/hook_direct.mjs): the hook's own work;
//! - serve: mesh-provide's `HookProvisioner` (what the loop calls) over the
//!   hook in serve mode: a JSON line round trip a call;
//! - exec: the same over the hook in exec mode: a node process a call
//!   (one pass, at the smallest size only: it costs the same a call at
//!   any size, and node's start with its Redis client takes long).
//!
//! and the exec boundary alone: a hook that answers `{}` at once (`sh`),
//! a pass of it and single calls one after another (spawn, pipes, wait,
//! parse). Each at 50, 200 and 1,000 consumers; the targets: a serve pass
//! within 1.2 × the direct one, and exec's overhead a call within 3 ms.
//!
//! ```text
//! cargo bench -p mesh-provide --bench hook_boundary
//! MESH_BENCH_CONSUMERS=50,200 MESH_BENCH_RUNS=3 cargo bench -p mesh-provide --bench hook_boundary
//! ```
//!
//! `scripts/test` runs it as a smoke (`MESH_BENCH_CONSUMERS=5
//! MESH_BENCH_RUNS=1 cargo test -p mesh-provide --bench hook_boundary`, a
//! debug build): every call must succeed; its figures mean nothing.
//!
//! Needs redis-server, redis-cli, node and the hook's npm dependencies, the
//! TypeScript kit built among them (`bash -c '. scripts/lib.sh;
//! ensure_hook_tools; ensure_node_hooks'`).

#[path = "boundary/mod.rs"]
mod boundary;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Instant;

use boundary::{
    consumers, env_list, median, ms, pass, provisioner, repo, verdict, Direct, CONCURRENCY,
    SERVE_TARGET,
};
use mesh_provide::hook::Mode;
use mesh_sdk::Provisioner;
use mesh_test_support::RedisServer;

/// The exec target: its overhead a call, in milliseconds.
const EXEC_TARGET_MS: f64 = 3.0;

/// Single calls timed for the exec boundary's latency.
const SINGLE_CALLS: usize = 200;

/// A hook that answers every call with `{}` at once.
fn noop_hook(dir: &Path) -> PathBuf {
    let path = dir.join("noop-hook");
    std::fs::write(
        &path,
        "#!/bin/sh\nread -r request\ncase \"$1\" in hello) echo '{\"name\":\"noop\"}' ;; *) echo '{}' ;; esac\n",
    )
    .unwrap();
    let mut permissions = std::fs::metadata(&path).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut permissions, 0o755);
    std::fs::set_permissions(&path, permissions).unwrap();
    path
}

#[tokio::main]
async fn main() {
    let sizes = env_list("MESH_BENCH_CONSUMERS", &[50, 200, 1000]);
    let runs = env_list("MESH_BENCH_RUNS", &[9])[0].max(1);
    let hook = repo().join("examples/hooks/redis-acl.mjs");
    if let Some(why) = mesh_test_support::mesh::node_hooks_missing() {
        panic!("{why}");
    }
    let redis = RedisServer::start();
    let env = redis.hook_env();
    for (key, value) in &env {
        // The hooks mesh-provide starts inherit its environment.
        std::env::set_var(key, value);
    }
    let scratch = tempfile::tempdir().unwrap();
    let noop = noop_hook(scratch.path());

    println!(
        "hook_boundary: redis-acl.mjs on a private Redis, a pass = ensure + check a consumer, \
         {CONCURRENCY} at once, {runs} rounds (median)"
    );
    let mut driver = Command::new("node");
    driver
        .env("MESH_PROVIDER", boundary::PROVIDER)
        .arg(repo().join("provide/benches/hook_direct.mjs"))
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stderr(Stdio::null());
    let mut direct = Direct::start(driver);
    let serve = provisioner(&hook, Mode::Serve).await;
    let exec = provisioner(&hook, Mode::Exec).await;
    let noop_exec = provisioner(&noop, Mode::Exec).await;
    for &n in &sizes {
        let calls = (2 * n) as f64;
        let all = Arc::new(consumers(n, "redis-acl"));

        // One pass of each not counted (the first makes the users), then
        // the three in turn, so that a load on the machine that comes and
        // goes falls on all of them alike.
        direct.pass(n);
        pass(&serve, &all).await;
        pass(&noop_exec, &all).await;
        let (mut owns, mut serveds, mut bares, mut ratios) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for _ in 0..runs {
            let own = direct.pass(n);
            let served = pass(&serve, &all).await;
            // Each round's own ratio: its two passes ran side by side.
            ratios.push(ms(served) / ms(own));
            owns.push(own);
            serveds.push(served);
            bares.push(pass(&noop_exec, &all).await);
        }
        let (own, served, bare) = (median(owns), median(serveds), median(bares));
        ratios.sort_by(f64::total_cmp);
        let ratio = ratios[ratios.len() / 2];
        let spread = (ratios[0], ratios[ratios.len() - 1]);
        let serve_call = (ms(served) - ms(own)) / calls;
        println!("\n{n} consumers ({} calls a pass)", 2 * n);
        println!(
            "  direct  {:9.1} ms a pass  {:6.3} ms a consumer  (the hook's own work)",
            ms(own),
            ms(own) / n as f64
        );
        println!(
            "  serve   {:9.1} ms a pass  {ratio:5.2} x direct, the median of the rounds' ratios ({:.2} to {:.2}; target <= {SERVE_TARGET}: {:.2} of it, {})  {serve_call:+.3} ms a call",
            ms(served),
            spread.0,
            spread.1,
            ratio / SERVE_TARGET,
            verdict(ratio <= SERVE_TARGET)
        );
        if n == sizes[0] {
            // A node process a call costs the same at any size, and takes
            // long: one pass, at the smallest size only (the users exist).
            let execed = pass(&exec, &all).await;
            let exec_call = (ms(execed) - ms(own)) / calls;
            println!(
                "  exec    {:9.1} ms a pass  {:5.1} x direct  overhead {exec_call:.1} ms a call (target <= {EXEC_TARGET_MS}: {:.1} of it, {}; one pass)",
                ms(execed),
                ms(execed) / ms(own),
                exec_call / EXEC_TARGET_MS,
                verdict(exec_call <= EXEC_TARGET_MS)
            );
        }
        println!(
            "  exec, a hook answering {{}} at once: {:9.1} ms a pass, {:.2} ms a call (target <= {EXEC_TARGET_MS}: {:.2} of it, {})",
            ms(bare),
            ms(bare) / calls,
            ms(bare) / calls / EXEC_TARGET_MS,
            verdict(ms(bare) / calls <= EXEC_TARGET_MS)
        );
    }

    // The exec boundary's latency: one call at a time.
    let (consumer, secret) = &consumers(1, "redis-acl")[0];
    let mut times = Vec::with_capacity(SINGLE_CALLS);
    for _ in 0..SINGLE_CALLS {
        let started = Instant::now();
        noop_exec.ensure(consumer, secret).await.unwrap();
        times.push(started.elapsed());
    }
    let single = ms(median(times));
    println!(
        "\nexec, one call alone, a hook answering {{}} at once: {single:.2} ms (median of {SINGLE_CALLS}; target <= {EXEC_TARGET_MS}: {:.2} of it, {})",
        single / EXEC_TARGET_MS,
        verdict(single <= EXEC_TARGET_MS)
    );
}
