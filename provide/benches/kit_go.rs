//! What the process boundary costs a hook on the Go kit: a loop pass
//! (`ensure` then `check` for each consumer, at most 16 at once, the loop's
//! default `--concurrency`) over examples/hooks/rabbitmq, a hook doing real
//! RabbitMQ work through its management API (ensure: the user, the vhost,
//! its default exchanges and the permissions read; check: the aliveness
//! test as the consumer, a queue declared, a message published and
//! consumed), on a private RabbitMQ node, measured two ways in the same run:
//!
//! - direct: the same functions called in one Go process, no mesh-provide
//!   (`rabbitmq-hook direct`): the hook's own work;
//! - serve: mesh-provide's `HookProvisioner` (what the loop calls) over the
//!   hook in serve mode: a JSON line round trip a call, through the kit's
//!   Serve.
//!
//! Each at 50, 200 and 1,000 consumers (the first pass at a size, which
//! makes the vhosts, is not counted); the target: a serve pass within 1.2 ×
//! the direct one.
//!
//! ```text
//! cargo bench -p mesh-provide --bench kit_go
//! MESH_BENCH_CONSUMERS=50,200 MESH_BENCH_RUNS=3 cargo bench -p mesh-provide --bench kit_go
//! ```
//!
//! `scripts/test` runs it as a smoke (`MESH_BENCH_CONSUMERS=5
//! MESH_BENCH_RUNS=1 cargo test -p mesh-provide --bench kit_go`, a debug
//! build): every call must succeed; its figures mean nothing.
//!
//! Needs Go and rabbitmq-server (`bash -c '. scripts/lib.sh; ensure_kit_go'`);
//! it builds the hook itself (`go build` into target/go/rabbitmq-hook).

#[path = "boundary/mod.rs"]
mod boundary;

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Instant;

use boundary::{compare, consumers, env_list, provisioner, repo, Direct, CONCURRENCY};
use mesh_provide::hook::Mode;
use mesh_test_support::RabbitServer;

fn go() -> PathBuf {
    std::env::var_os("PATH")
        .and_then(|path| {
            std::env::split_paths(&path)
                .map(|dir| dir.join("go"))
                .find(|p| p.is_file())
        })
        .or_else(|| Some(PathBuf::from("/usr/local/go/bin/go")).filter(|p| p.is_file()))
        .expect("no Go: bash -c '. scripts/lib.sh; ensure_kit_go'")
}

/// Builds the example into target/go/rabbitmq-hook.
fn build_hook() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo().join("target"));
    let path = target.join("go/rabbitmq-hook");
    let out = Command::new(go())
        .args(["build", "-o"])
        .arg(&path)
        .arg(".")
        .current_dir(repo().join("examples/hooks/rabbitmq"))
        .env("GOTOOLCHAIN", "local")
        .output()
        .expect("go runs");
    assert!(
        out.status.success(),
        "go build of examples/hooks/rabbitmq failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    path
}

#[tokio::main]
async fn main() {
    let sizes = env_list("MESH_BENCH_CONSUMERS", &[50, 200, 1000]);
    let runs = env_list("MESH_BENCH_RUNS", &[5])[0].max(1);
    let hook = build_hook();
    let started = Instant::now();
    let rabbit = RabbitServer::start();
    let start_took = started.elapsed();
    for (key, value) in rabbit.hook_env() {
        // The hooks mesh-provide starts inherit its environment.
        std::env::set_var(key, value);
    }
    println!(
        "kit_go: examples/hooks/rabbitmq on a private RabbitMQ (started in {:.1} s), a pass = ensure + check a consumer, \
         {CONCURRENCY} at once, {runs} rounds (median)",
        start_took.as_secs_f64()
    );
    let mut driver = Command::new(&hook);
    driver
        .env("MESH_PROVIDER", boundary::PROVIDER)
        .arg("direct")
        .stderr(Stdio::inherit());
    let mut direct = Direct::start(driver);
    let serve = provisioner(&hook, Mode::Serve).await;
    for &n in &sizes {
        let all = Arc::new(consumers(n, "rabbitmq"));
        let compared = compare(&mut direct, &serve, &all, runs).await;
        println!(
            "\n{n} consumers ({} calls a pass; the first pass, making what was missing, took {:.1} s)",
            2 * n,
            compared.making.as_secs_f64()
        );
        compared.print(n, "the hook's own work");
    }
}
