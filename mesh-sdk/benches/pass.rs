//! Benchmark of one provisioner pass (prints figures; not a timed test).
//!
//! `cargo bench -p mesh-sdk --bench pass` prints, for N = 1,000 / 10,000 /
//! 100,000 consumers:
//! - a pass with a provisioner of fixed latency L per consumer at
//!   concurrency C: wall ÷ (⌈N/C⌉·L), the floor set by the latency (target ≤ 1.1);
//! - loop overhead per consumer per pass with L = 0 (target ≤ 2 µs), with the
//!   secret files read from disk as in production, and with the secrets
//!   served from memory (the loop's own cost, which the target is about);
//! - memory the loop keeps per consumer at 100,000 failing consumers: in all,
//!   its contributions entry, and its standing (target ≤ 1 KiB).

use std::alloc::System;
use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mesh_sdk::internals::{SecretError, SecretSource, Source};
use mesh_sdk::testing::{Outbox, Runner, Settings};
use mesh_sdk::{async_trait, Consumer, Held, Name, Provisioner, Secret, Served};
use mesh_test_support::write_contributions;
use stats_alloc::{StatsAlloc, INSTRUMENTED_SYSTEM};

/// Counts heap allocations (stats_alloc: an instrumented system allocator,
/// the standard way to measure heap use without writing unsafe code).
#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

/// Heap bytes live now. stats_alloc counts a reallocation's growth in
/// `bytes_allocated` (and a shrink in `bytes_deallocated`) besides its
/// `bytes_reallocated`: adding that too counted every growth twice (a
/// `Vec` grown by doubling, the file's text read in parts), which a drop
/// never took back.
fn live_bytes() -> isize {
    let stats = GLOBAL.stats();
    stats.bytes_allocated as isize - stats.bytes_deallocated as isize
}

/// A provisioner whose check takes `latency` (make-if-missing finds it made).
struct Fixed {
    latency: Duration,
    held: Vec<Held>,
    fail: bool,
}

#[derive(Debug, thiserror::Error)]
#[error(
    "password authentication failed for user \"{0}\" (connection to 127.0.0.1:5432, database {0})"
)]
struct Refused(String);

#[async_trait]
impl Provisioner for Fixed {
    type Error = Refused;
    async fn ensure(&self, _: &Consumer, _: &Secret) -> Result<Served, Refused> {
        Ok(Served::AsIs)
    }
    async fn check(&self, consumer: &Consumer, _: &Secret) -> Result<Served, Refused> {
        if !self.latency.is_zero() {
            tokio::time::sleep(self.latency).await;
        }
        match self.fail {
            true => Err(Refused(consumer.name.to_string())),
            false => Ok(Served::AsIs),
        }
    }
    async fn held(&self, _: &mesh_sdk::ModuleId) -> Result<Vec<Held>, Refused> {
        Ok(self.held.clone())
    }
    async fn retire(&self, _: &mesh_sdk::ModuleId, _: &Name) -> Result<(), Refused> {
        Ok(())
    }
    async fn re_enable(&self, _: &mesh_sdk::ModuleId, _: &Name) -> Result<(), Refused> {
        Ok(())
    }
    async fn delete(&self, _: &mesh_sdk::ModuleId, _: &Name) -> Result<(), Refused> {
        Ok(())
    }
}

/// Writes a contributions file and one secret file per consumer.
fn world(dir: &Path, n: usize) -> Vec<Held> {
    let name = |i: usize| format!("consumer-{i:06}");
    write_contributions(
        dir,
        ("postgres", "db-1"),
        "postgres-database",
        (0..n).map(|i| (name(i), format!("minted-secret-{i:06}-xxxxxxxxxxxxxxxx"))),
    );
    (0..n)
        .map(|i| Held::active(Name::parse(&name(i)).unwrap()))
        .collect()
}

fn runner(dir: &Path, provisioner: Fixed, concurrency: usize) -> (Runner<Fixed>, Arc<Outbox>) {
    let outbox = Arc::new(Outbox::new());
    let settings = Settings {
        concurrency,
        ..Settings::default()
    };
    (
        Runner::new(
            provisioner,
            dir.join("c.json"),
            settings,
            Arc::clone(&outbox),
        ),
        outbox,
    )
}

/// Secrets served from memory: the loop's cost without file I/O (a map
/// with the fast hasher the loop's own maps use).
struct MemorySecrets(HashMap<Name, Secret, foldhash::fast::RandomState>);

impl SecretSource for MemorySecrets {
    fn read(&self, consumer: &Consumer) -> Result<Secret, SecretError> {
        self.0
            .get(&consumer.name)
            .cloned()
            .ok_or_else(|| SecretError::Empty {
                path: consumer.secret_file.clone(),
            })
    }
}

/// The secrets `world` writes, in memory.
fn memory_secrets(n: usize) -> MemorySecrets {
    MemorySecrets(
        (0..n)
            .map(|i| {
                let name = Name::parse(&format!("consumer-{i:06}")).unwrap();
                let secret = Secret::new(format!("minted-secret-{i:06}-xxxxxxxxxxxxxxxx"));
                (name, secret)
            })
            .collect(),
    )
}

/// Wall time per consumer of a pass with L = 0 at the default concurrency.
async fn overhead(
    dir: &Path,
    held: &[Held],
    n: usize,
    secrets: Option<Arc<dyn SecretSource>>,
) -> Duration {
    let (r, outbox) = runner(
        dir,
        Fixed {
            latency: Duration::ZERO,
            held: held.to_vec(),
            fail: false,
        },
        16,
    );
    let mut r = match secrets {
        Some(secrets) => r.with_secrets(secrets),
        None => r,
    };
    r.pass().await;
    drain(&outbox);
    let passes = 5;
    let start = Instant::now();
    for _ in 0..passes {
        r.pass().await;
    }
    start.elapsed() / (passes * n as u32)
}

fn drain(outbox: &Outbox) {
    for (key, pending) in outbox.snapshot() {
        outbox.done(&key, pending.seq);
    }
}

#[tokio::main]
async fn main() {
    // `cargo bench -p mesh-sdk --bench pass -- profile`: only the L = 0 passes
    // over 100,000 consumers, secrets in memory, long enough to profile.
    if std::env::args().any(|a| a == "profile") {
        let dir = tempfile::tempdir().unwrap();
        let held = world(dir.path(), 100_000);
        let (r, _outbox) = runner(
            dir.path(),
            Fixed {
                latency: Duration::ZERO,
                held,
                fail: false,
            },
            16,
        );
        let mut r = r.with_secrets(Arc::new(memory_secrets(100_000)));
        for _ in 0..60 {
            r.pass().await;
        }
        return;
    }
    let latency = Duration::from_millis(20);
    println!(
        "mesh-sdk pass benchmark (release build, {} cores)",
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );
    println!();
    println!("pass with fixed latency L = {latency:?} per consumer (floor = ceil(N/C) * L; target ratio <= 1.1)");
    println!(
        "{:>8} {:>5} {:>10} {:>10} {:>7}",
        "N", "C", "wall", "floor", "ratio"
    );
    let mut overheads = Vec::new();
    for (n, c) in [(1_000usize, 16usize), (10_000, 64), (100_000, 256)] {
        let dir = tempfile::tempdir().unwrap();
        let held = world(dir.path(), n);
        let (mut r, outbox) = runner(
            dir.path(),
            Fixed {
                latency,
                held: held.clone(),
                fail: false,
            },
            c,
        );
        r.pass().await; // first pass: standings made, first successes said
        drain(&outbox);
        let start = Instant::now();
        let report = r.pass().await;
        let wall = start.elapsed();
        assert_eq!(report.failed, 0);
        let floor = latency * n.div_ceil(c) as u32;
        println!(
            "{:>8} {:>5} {:>9.3}s {:>9.3}s {:>7.3}",
            n,
            c,
            wall.as_secs_f64(),
            floor.as_secs_f64(),
            wall.as_secs_f64() / floor.as_secs_f64()
        );

        // L = 0: the loop's own cost, with the secret files read from disk
        // as in production, and with the secrets served from memory.
        let with_files = overhead(dir.path(), &held, n, None).await;
        let memory = Arc::new(memory_secrets(n));
        let in_memory = overhead(dir.path(), &held, n, Some(memory)).await;
        overheads.push((n, with_files, in_memory));
    }
    println!();
    println!("loop overhead per consumer per pass, L = 0, C = 16 (target <= 2 us)");
    println!(
        "{:>8} {:>20} {:>20} {:>7}",
        "N", "secrets from files", "secrets in memory", "ratio"
    );
    for (n, files, memory) in &overheads {
        let (files, memory) = (files.as_secs_f64() * 1e6, memory.as_secs_f64() * 1e6);
        println!(
            "{n:>8} {files:>18.2}us {memory:>18.2}us {:>7.2}",
            memory / 2.0
        );
    }
    println!("(ratio: the loop's own cost, secrets in memory, to 2 us; reading a small file costs ~10 us of system calls on this VM)");
    println!();

    let n = 100_000;
    let dir = tempfile::tempdir().unwrap();
    let held = world(dir.path(), n);
    let before = live_bytes();
    let (mut r, outbox) = runner(
        dir.path(),
        Fixed {
            latency: Duration::ZERO,
            held: Vec::new(),
            fail: true,
        },
        16,
    );
    r.pass().await;
    r.pass().await;
    drain(&outbox);
    let after = live_bytes();
    assert_eq!(r.standings(), n);
    let total = (after - before) as f64 / n as f64;
    // The contributions list alone (parsed entries and the text kept to
    // skip parsing an unchanged file), measured the same way.
    let before = live_bytes();
    let mut source = Source::new(dir.path().join("c.json"));
    assert!(source.load().is_some());
    let list = (live_bytes() - before) as f64 / n as f64;
    let standing = total - list;
    println!();
    println!("memory kept per consumer at {n} failing consumers (live heap bytes; target <= 1024 B per standing)");
    println!("{total:>8.0} B in all: {list:.0} B its contributions entry, {standing:.0} B its standing (ratio to 1 KiB: {:.2})", standing / 1024.0);
    drop(source);
    drop(held);
}
