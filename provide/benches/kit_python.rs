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
//! ```
//!
//! As a smoke (`MESH_BENCH_CONSUMERS=5 MESH_BENCH_RUNS=1 cargo test -p
//! mesh-provide --bench kit_python`, a debug build) every call must
//! succeed; its figures mean nothing.
//!
//! Needs redis-server, redis-cli and python3
//! (`bash -c '. scripts/lib.sh; ensure_hook_tools'`).

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

/// The bench's consumers and secrets, as kit_python_direct.py makes them.
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

/// One Python process running kit_python_direct.py.
struct Direct {
    child: std::process::Child,
    lines: BufReader<std::process::ChildStdout>,
}

impl Direct {
    fn start(env: &[(&'static str, String)]) -> Direct {
        let mut child = Command::new("python3")
            .arg(repo().join("provide/benches/kit_python_direct.py"))
            .envs(env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("python3 runs");
        let lines = BufReader::new(child.stdout.take().unwrap());
        Direct { child, lines }
    }

    /// One pass over `n` consumers, timed inside Python.
    fn pass(&mut self, n: usize) -> Duration {
        let stdin = self.child.stdin.as_mut().unwrap();
        writeln!(stdin, "{n} {CONCURRENCY}").unwrap();
        let mut line = String::new();
        self.lines.read_line(&mut line).unwrap();
        let reply: Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("kit_python_direct answers JSON ({e}): {line:?}"));
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

/// A started `HookProvisioner` over `hook` in serve mode.
async fn provisioner(hook: &Path) -> Arc<HookProvisioner> {
    let settings = HookSettings {
        path: hook.to_owned(),
        mode: Mode::Serve,
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
    let hook = repo().join("examples/hooks/redis-acl.py");
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
    let mut direct = Direct::start(&env);
    let serve = provisioner(&hook).await;
    for &n in &sizes {
        let calls = (2 * n) as f64;
        let all = Arc::new(consumers(n));

        // One pass of each not counted (the first makes the users), then
        // the two in turn, so that a load on the machine that comes and
        // goes falls on both alike.
        direct.pass(n);
        pass(&serve, &all).await;
        let (mut owns, mut serveds, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..runs {
            let own = direct.pass(n);
            let served = pass(&serve, &all).await;
            // Each round's own ratio: its two passes ran side by side.
            ratios.push(ms(served) / ms(own));
            owns.push(own);
            serveds.push(served);
        }
        let (own, served) = (median(owns), median(serveds));
        ratios.sort_by(f64::total_cmp);
        let ratio = ratios[ratios.len() / 2];
        let spread = (ratios[0], ratios[ratios.len() - 1]);
        let serve_call = (ms(served) - ms(own)) / calls;
        println!("\n{n} consumers ({} calls a pass)", 2 * n);
        println!(
            "  direct  {:9.1} ms a pass  {:6.3} ms a consumer  (the hook's own work, 16 Python threads)",
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
    }
}
