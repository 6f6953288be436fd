//! What the boundary benches share (`#[path]`-included by each): the
//! consumers of a pass, a process of the hook's own language timing the
//! same work directly, a pass through mesh-provide's `HookProvisioner`,
//! and the interleaved rounds that compare the two, in wall time and in
//! the CPU each process spent (which a load on the machine sways less).
#![allow(dead_code)] // each bench uses a part

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mesh_provide::hook::{Hook, HookSettings, Mode};
use mesh_provide::provisioner::HookProvisioner;
use mesh_sdk::{Consumer, Name, Provisioner, Secret};
use serde_json::Value;
use tokio::sync::Semaphore;

/// Consumers at once, as the loop's default `--concurrency`.
pub const CONCURRENCY: usize = 16;

/// The serve target: a pass within this × the hook's own work.
pub const SERVE_TARGET: f64 = 1.2;

/// The repository's root.
pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// A comma-separated list of numbers in `key`, else `default`.
pub fn env_list(key: &str, default: &[usize]) -> Vec<usize> {
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

/// The median of `times`.
pub fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

/// Milliseconds.
pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// `met` or `MISSED`.
pub fn verdict(ok: bool) -> &'static str {
    if ok {
        "met"
    } else {
        "MISSED"
    }
}

/// The provider instance every bench runs its hook for.
pub const PROVIDER: &str = "bench@bench-1";

/// The bench's consumers of `provision` and their secrets, as every direct
/// driver makes them (`consumer-0000`, `bench-secret-0000-7f3a9c1e5d`, …).
pub fn consumers(n: usize, provision: &str) -> Vec<(Consumer, Secret)> {
    (0..n)
        .map(|i| {
            let consumer = Consumer {
                provider: PROVIDER.parse().unwrap(),
                name: Name::parse(&format!("consumer-{i:04}")).unwrap(),
                machine: Name::parse("app-1").unwrap(),
                provision: provision.to_owned(),
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

/// A process doing the hook's own work directly: it reads `N C` a line,
/// runs a pass over N consumers C at once, and answers
/// `{"ms": …, "failed": 0}`, timed inside it.
pub struct Direct {
    child: std::process::Child,
    lines: BufReader<std::process::ChildStdout>,
}

impl Direct {
    /// Its process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Starts `command` (its stdio is taken over).
    pub fn start(mut command: Command) -> Direct {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("the direct driver runs");
        let lines = BufReader::new(child.stdout.take().unwrap());
        Direct { child, lines }
    }

    /// One pass over `n` consumers.
    pub fn pass(&mut self, n: usize) -> Duration {
        let stdin = self.child.stdin.as_mut().unwrap();
        writeln!(stdin, "{n} {CONCURRENCY}").unwrap();
        let mut line = String::new();
        self.lines.read_line(&mut line).unwrap();
        let reply: Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("the direct driver answers JSON ({e}): {line:?}"));
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
pub async fn provisioner(hook: &Path, mode: Mode) -> Arc<HookProvisioner> {
    let settings = HookSettings {
        provider: PROVIDER.parse().unwrap(),
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
pub async fn pass(
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

/// A serve pass against the direct one at one size.
pub struct Compared {
    /// The direct pass (median).
    pub own: Duration,
    /// The serve pass (median).
    pub served: Duration,
    /// The median of the rounds' own ratios, and their least and most.
    pub ratio: (f64, f64, f64),
    /// The first, uncounted direct pass (it makes what was missing).
    pub making: Duration,
    /// CPU a pass (median), when /proc can tell: the direct process's, the
    /// hook's and this process's (mesh-provide's side) in the serve pass.
    pub cpu: Option<Cpu>,
}

/// CPU time (user and system) spent in a pass, by process.
#[derive(Clone, Copy, Debug)]
pub struct Cpu {
    /// The direct process, in the direct pass.
    pub direct: Duration,
    /// The hook, in the serve pass.
    pub hook: Duration,
    /// This process (mesh-provide's `HookProvisioner` and the pass's
    /// tasks), in the serve pass.
    pub provide: Duration,
}

/// The CPU time process `pid` has spent so far, all its threads, from
/// /proc/PID/stat (utime + stime, in the kernel's 10 ms clock ticks);
/// None where /proc cannot tell.
pub fn cpu_time(pid: u32) -> Option<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The fields after the command, which is in parentheses and may hold
    // spaces: state is the first, utime the 12th, stime the 13th.
    let (_, fields) = stat.rsplit_once(')')?;
    let fields: Vec<&str> = fields.split_whitespace().collect();
    let ticks = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    Some(Duration::from_millis(ticks * 10))
}

fn cpu_of(pid: Option<u32>) -> Option<Duration> {
    pid.and_then(cpu_time)
}

/// `runs` rounds at `n` consumers, after one uncounted pass of each (the
/// first makes what is missing); in each round the two passes run in turn,
/// so a load that comes and goes falls on both alike.
pub async fn compare(
    direct: &mut Direct,
    serve: &Arc<HookProvisioner>,
    all: &Arc<Vec<(Consumer, Secret)>>,
    runs: usize,
) -> Compared {
    let n = all.len();
    let made = Instant::now();
    direct.pass(n);
    let making = made.elapsed();
    pass(serve, all).await;
    let (mut owns, mut serveds, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    let (me, driver, hook) = (
        Some(std::process::id()),
        Some(direct.pid()),
        serve.hook().pid().await,
    );
    let mut cpus = Some((Vec::new(), Vec::new(), Vec::new()));
    for _ in 0..runs {
        let driver_before = cpu_of(driver);
        let own = direct.pass(n);
        let driver_spent = cpu_of(driver).zip(driver_before).map(|(b, a)| b - a);
        let (hook_before, me_before) = (cpu_of(hook), cpu_of(me));
        let served = pass(serve, all).await;
        let hook_spent = cpu_of(hook).zip(hook_before).map(|(b, a)| b - a);
        let me_spent = cpu_of(me).zip(me_before).map(|(b, a)| b - a);
        cpus = match (cpus, driver_spent, hook_spent, me_spent) {
            (Some((mut d, mut h, mut p)), Some(ds), Some(hs), Some(ps)) => {
                d.push(ds);
                h.push(hs);
                p.push(ps);
                Some((d, h, p))
            }
            _ => None, // a process /proc cannot read (or the hook restarted)
        };
        ratios.push(ms(served) / ms(own));
        owns.push(own);
        serveds.push(served);
    }
    ratios.sort_by(f64::total_cmp);
    Compared {
        own: median(owns),
        served: median(serveds),
        ratio: (
            ratios[ratios.len() / 2],
            ratios[0],
            ratios[ratios.len() - 1],
        ),
        making,
        cpu: cpus.map(|(d, h, p)| Cpu {
            direct: median(d),
            hook: median(h),
            provide: median(p),
        }),
    }
}

impl Compared {
    /// Prints the two lines of the comparison at `n` consumers; `work`
    /// says what the direct pass is.
    pub fn print(&self, n: usize, work: &str) {
        let (ratio, least, most) = self.ratio;
        let serve_call = (ms(self.served) - ms(self.own)) / (2 * n) as f64;
        println!(
            "  direct  {:9.1} ms a pass  {:6.3} ms a consumer  ({work})",
            ms(self.own),
            ms(self.own) / n as f64
        );
        println!(
            "  serve   {:9.1} ms a pass  {ratio:5.2} x direct, the median of the rounds' ratios ({least:.2} to {most:.2}; target <= {SERVE_TARGET}: {:.2} of it, {})  {serve_call:+.3} ms a call",
            ms(self.served),
            ratio / SERVE_TARGET,
            verdict(ratio <= SERVE_TARGET)
        );
        if let Some(cpu) = self.cpu {
            println!(
                "  CPU a pass (median, 10 ms ticks): direct process {:.0} ms; serve: the hook {:.0} ms ({:.2} x), mesh-provide {:.0} ms",
                ms(cpu.direct),
                ms(cpu.hook),
                ms(cpu.hook) / ms(cpu.direct).max(1.0),
                ms(cpu.provide)
            );
        }
    }
}
