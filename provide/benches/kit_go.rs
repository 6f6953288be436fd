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

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mesh_provide::hook::{Hook, HookSettings, Mode};
use mesh_provide::provisioner::HookProvisioner;
use mesh_sdk::{Consumer, Name, Provisioner, Secret};
use mesh_test_support::RabbitServer;
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

/// The `go` tool: on PATH, else /usr/local/go/bin/go.
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

/// The bench's consumers and secrets, as `rabbitmq-hook direct` makes them.
fn consumers(n: usize) -> Vec<(Consumer, Secret)> {
    (0..n)
        .map(|i| {
            let consumer = Consumer {
                name: Name::parse(&format!("consumer-{i:04}")).unwrap(),
                machine: Name::parse("app-1").unwrap(),
                provision: "rabbitmq".to_owned(),
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

/// One Go process running `rabbitmq-hook direct`.
struct Direct {
    child: std::process::Child,
    lines: BufReader<std::process::ChildStdout>,
}

impl Direct {
    fn start(hook: &Path) -> Direct {
        let mut child = Command::new(hook)
            .arg("direct")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("rabbitmq-hook direct runs");
        let lines = BufReader::new(child.stdout.take().unwrap());
        Direct { child, lines }
    }

    /// One pass over `n` consumers, timed inside the Go process.
    fn pass(&mut self, n: usize) -> Duration {
        let stdin = self.child.stdin.as_mut().unwrap();
        writeln!(stdin, "{n} {CONCURRENCY}").unwrap();
        let mut line = String::new();
        self.lines.read_line(&mut line).unwrap();
        let reply: Value = serde_json::from_str(&line).expect("rabbitmq-hook direct answers JSON");
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
        timeout: Duration::from_secs(60),
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
    let mut direct = Direct::start(&hook);
    let serve = provisioner(&hook).await;
    for &n in &sizes {
        let all = Arc::new(consumers(n));
        // The first pass at a size makes the users and vhosts: not counted
        // (one more of each, uncounted, so both run warm).
        let made = Instant::now();
        direct.pass(n);
        let making = made.elapsed();
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
        let serve_call = (ms(served) - ms(own)) / (2 * n) as f64;
        println!(
            "\n{n} consumers ({} calls a pass; the first pass, making what was missing, took {:.1} s)",
            2 * n,
            making.as_secs_f64()
        );
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
    }
}
