//! What the process boundary costs: a loop pass (`ensure` then `check` for
//! each consumer, at most 16 at once, the loop's default `--concurrency`)
//! over examples/hooks/redis-acl.mjs, a hook doing real Redis work (ACL
//! GETUSER compared, then a login as the consumer: AUTH on a new
//! connection), on a private Redis, measured three ways in the same run:
//!
//! - direct: the hook's verbs called in one node process, no mesh-provide
//!   (benches/hook_direct.mjs): the hook's own work;
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
//! Needs redis-server, redis-cli, node and the hook's npm dependency
//! (`bash -c '. scripts/lib.sh; ensure_hook_tools; ensure_node_hooks'`).

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mesh_provide::hook::{Hook, HookSettings, Mode};
use mesh_provide::provisioner::HookProvisioner;
use mesh_sdk::{Consumer, Name, Provisioner, Secret};
use mesh_test_support::RedisServer;
use serde_json::Value;
use tokio::sync::Semaphore;

/// Consumers at once, as the loop's default `--concurrency`.
const CONCURRENCY: usize = 16;

/// The serve target: a pass within this × the hook's own work.
const SERVE_TARGET: f64 = 1.2;

/// The exec target: its overhead a call, in milliseconds.
const EXEC_TARGET_MS: f64 = 3.0;

/// Single calls timed for the exec boundary's latency.
const SINGLE_CALLS: usize = 200;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn env_list(key: &str, default: &[usize]) -> Vec<usize> {
    match std::env::var(key) {
        Ok(text) => text
            .split(',')
            .map(|n| {
                n.trim()
                    .replace('_', "")
                    .parse()
                    .unwrap_or_else(|_| panic!("{key}: {n:?} is not a number"))
            })
            .collect(),
        Err(_) => default.to_vec(),
    }
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// The bench's consumers and secrets, as hook_direct.mjs makes them.
fn consumers(n: usize) -> Vec<(Consumer, Secret)> {
    (0..n)
        .map(|i| {
            let consumer = Consumer {
                name: Name::parse(&format!("consumer-{i:04}")).unwrap(),
                machine: Name::parse("app-1").unwrap(),
                provision: "redis-acl".to_owned(),
                secret_file: PathBuf::from("unused"),
                options: Value::Object(Default::default()),
            };
            (
                consumer,
                Secret::new(format!("bench-secret-{i:04}-7f3a9c1e5d")),
            )
        })
        .collect()
}

/// One node process running hook_direct.mjs.
struct Direct {
    child: std::process::Child,
    lines: BufReader<std::process::ChildStdout>,
}

impl Direct {
    fn start(env: &[(&'static str, String)]) -> Direct {
        let mut child = Command::new("node")
            .arg(repo().join("provide/benches/hook_direct.mjs"))
            .envs(env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("node runs");
        let lines = BufReader::new(child.stdout.take().unwrap());
        Direct { child, lines }
    }

    /// One pass over `n` consumers, timed inside node.
    fn pass(&mut self, n: usize) -> Duration {
        let stdin = self.child.stdin.as_mut().unwrap();
        writeln!(stdin, "{n} {CONCURRENCY}").unwrap();
        let mut line = String::new();
        self.lines.read_line(&mut line).unwrap();
        let reply: Value = serde_json::from_str(&line).expect("hook_direct answers JSON");
        assert_eq!(reply["failed"], 0, "direct: some consumers failed");
        Duration::from_secs_f64(reply["ms"].as_f64().unwrap() / 1e3)
    }
}

impl Drop for Direct {
    fn drop(&mut self) {
        drop(self.child.stdin.take());
        let _ = self.child.wait();
    }
}

/// A started `HookProvisioner` over `hook` in `mode`.
async fn provisioner(hook: &Path, mode: Mode) -> Arc<HookProvisioner> {
    let settings = HookSettings {
        path: hook.to_owned(),
        mode,
        timeout: Duration::from_secs(30),
        concurrency: CONCURRENCY,
        hello_every: Duration::from_secs(3600),
    };
    let (hook, hello) = Hook::start(settings).await.expect("the hook starts");
    Arc::new(HookProvisioner::new(hook, &hello))
}

/// One pass through mesh-provide: ensure then check each consumer, at most
/// [`CONCURRENCY`] at once.
async fn pass(
    provisioner: &Arc<HookProvisioner>,
    consumers: &Arc<Vec<(Consumer, Secret)>>,
) -> Duration {
    let gate = Arc::new(Semaphore::new(CONCURRENCY));
    let started = Instant::now();
    let mut tasks = Vec::with_capacity(consumers.len());
    for i in 0..consumers.len() {
        let (provisioner, consumers, gate) = (provisioner.clone(), consumers.clone(), gate.clone());
        tasks.push(tokio::spawn(async move {
            let _permit = gate.acquire().await.unwrap();
            let (consumer, secret) = &consumers[i];
            provisioner.ensure(consumer, secret).await?;
            provisioner.check(consumer, secret).await
        }));
    }
    for task in tasks {
        if let Err(error) = task.await.unwrap() {
            panic!("a call failed: {error}");
        }
    }
    started.elapsed()
}

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

fn verdict(ok: bool) -> &'static str {
    if ok {
        "met"
    } else {
        "MISSED"
    }
}

#[tokio::main]
async fn main() {
    let sizes = env_list("MESH_BENCH_CONSUMERS", &[50, 200, 1000]);
    let runs = env_list("MESH_BENCH_RUNS", &[9])[0].max(1);
    let hook = repo().join("examples/hooks/redis-acl.mjs");
    assert!(
        repo()
            .join("examples/hooks/node_modules/@redis/client")
            .exists(),
        "the node hook's dependency is missing: bash -c '. scripts/lib.sh; ensure_node_hooks'"
    );
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
    let mut direct = Direct::start(&env);
    let serve = provisioner(&hook, Mode::Serve).await;
    let exec = provisioner(&hook, Mode::Exec).await;
    let noop_exec = provisioner(&noop, Mode::Exec).await;
    for &n in &sizes {
        let calls = (2 * n) as f64;
        let all = Arc::new(consumers(n));

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
    let (consumer, secret) = &consumers(1)[0];
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
