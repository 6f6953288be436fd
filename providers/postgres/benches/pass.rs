//! Benchmark of one provisioner pass against its physical floor (prints
//! figures; not a timed test).
//!
//! `cargo bench -p mesh-provider-postgres --bench pass` starts one private
//! PostgreSQL 15 (SCRAM, the test-support cluster), makes N = 500 consumers,
//! then compares, in the same run against the same server:
//! - a loop pass over the 500 consumers, all existing and healthy, at the
//!   loop's default concurrency C = 16 (per consumer: `ensure`, which does
//!   not look up a consumer its last check proved, then the check: a login
//!   as the consumer with `SELECT 1`);
//! - the first pass of a restarted provider over the same consumers (a new
//!   provisioner: per consumer the make-if-missing lookup as the
//!   administrator, then the check), also at C = 16;
//! - 500 plain SCRAM logins with tokio-postgres (connect, `SELECT 1`,
//!   close), each its own task, at most C = 16 at once: the floor of a login
//!   check.
//!
//! Rounds alternate (floor, pass, restarted pass, floor, ...) and the
//! medians are compared: ratio = pass ÷ floor (target ≤ 1.2).

mod common;

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mesh_provider_postgres::{PostgresConfig, PostgresProvisioner};
use mesh_sdk::testing::Outbox;
use mesh_sdk::testing::{Runner, Settings};
use mesh_test_support::{write_contributions, PgCluster};
use tokio::task::JoinSet;

const N: usize = 500;
const CONCURRENCY: usize = 16;
const ROUNDS: usize = 5;

fn consumer(i: usize) -> (String, String) {
    (
        format!("consumer-{i:04}"),
        format!("minted-secret-{i:04}-7f3a9c1e5d"),
    )
}

/// Writes the contributions file and the secret files.
fn world(dir: &Path) {
    write_contributions(
        dir,
        ("postgres", "db-1"),
        "postgres-database",
        (0..N).map(consumer),
    );
}

/// 500 plain logins (connect, SELECT 1, close), at most CONCURRENCY at once.
async fn plain_logins(pg: &PgCluster) -> Duration {
    let base = {
        let mut config = tokio_postgres::Config::new();
        config
            .host(pg.host())
            .port(pg.port())
            .connect_timeout(Duration::from_secs(10));
        Arc::new(config)
    };
    let start = Instant::now();
    let mut running = JoinSet::new();
    let mut next = 0;
    loop {
        while running.len() < CONCURRENCY && next < N {
            let base = Arc::clone(&base);
            let (name, secret) = consumer(next);
            running.spawn(async move {
                let mut config = (*base).clone();
                config.user(&name).password(&secret).dbname(&name);
                let (client, connection) = config.connect(tokio_postgres::NoTls).await.unwrap();
                tokio::spawn(connection);
                client.simple_query("SELECT 1").await.unwrap();
            });
            next += 1;
        }
        match running.join_next().await {
            Some(done) => done.unwrap(),
            None => return start.elapsed(),
        }
    }
}

/// A runner over a new provisioner (a provider just started).
fn runner(pg: &PgCluster, dir: &Path, outbox: &Arc<Outbox>) -> Runner<PostgresProvisioner> {
    let password =
        mesh_sdk::Secret::from_file(&pg.superuser_password_file(), "admin password").unwrap();
    let config = PostgresConfig::new(&pg.admin_url(), Some(password))
        .unwrap()
        .with_consumer_address(None, None)
        .unwrap();
    let settings = Settings {
        concurrency: CONCURRENCY,
        ..Settings::default()
    };
    Runner::new(
        PostgresProvisioner::new(config),
        dir.join("c.json"),
        settings,
        Arc::clone(outbox),
    )
}

#[tokio::main]
async fn main() {
    let pg = PgCluster::start();
    let dir = tempfile::tempdir().unwrap();
    world(dir.path());
    let outbox = Arc::new(Outbox::new());
    let mut runner = runner(&pg, dir.path(), &outbox);
    println!(
        "mesh-provider-postgres pass benchmark (release build, {} cores, PostgreSQL 15 private cluster, SCRAM)",
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );
    let start = Instant::now();
    let report = runner.pass().await;
    assert_eq!(report.failed, 0, "the first pass must make every consumer");
    println!(
        "setup: first pass made {N} roles and databases in {:.1}s",
        start.elapsed().as_secs_f64()
    );
    for (key, pending) in outbox.snapshot() {
        outbox.done(&key, pending.seq);
    }
    // Warm both sides once.
    plain_logins(&pg).await;
    runner.pass().await;

    let (mut floors, mut passes, mut restarts) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        floors.push(plain_logins(&pg).await);
        let start = Instant::now();
        let report = runner.pass().await;
        passes.push(start.elapsed());
        assert_eq!(
            (report.attempted, report.failed, report.published),
            (N, 0, 0)
        );
        let mut restarted = self::runner(&pg, dir.path(), &outbox);
        let start = Instant::now();
        let report = restarted.pass().await;
        restarts.push(start.elapsed());
        assert_eq!((report.attempted, report.failed), (N, 0));
        for (key, pending) in outbox.snapshot() {
            outbox.done(&key, pending.seq);
        }
    }
    let (floor, pass, restart) = (
        common::median(&floors),
        common::median(&passes),
        common::median(&restarts),
    );
    println!();
    println!("N = {N} consumers, all existing and healthy; concurrency C = {CONCURRENCY} on both sides (the loop's default)");
    println!("{ROUNDS} alternating rounds each, median:");
    println!(
        "  plain SCRAM logins (connect + SELECT 1 + close): {:>8.3}s  ({:.2} ms per login)",
        floor.as_secs_f64(),
        floor.as_secs_f64() * 1e3 / N as f64
    );
    println!(
        "  loop pass (ensure + login check per consumer):   {:>8.3}s  ({:.2} ms per consumer)",
        pass.as_secs_f64(),
        pass.as_secs_f64() * 1e3 / N as f64
    );
    println!(
        "  ratio pass / floor: {:.3} (target <= 1.2)",
        pass.as_secs_f64() / floor.as_secs_f64()
    );
    println!(
        "  first pass after a restart (lookup + check):     {:>8.3}s  (ratio to floor {:.3})",
        restart.as_secs_f64(),
        restart.as_secs_f64() / floor.as_secs_f64()
    );
    println!(
        "  rounds (s): floor [{}]  pass [{}]  restarted [{}]",
        common::rounds(&floors),
        common::rounds(&passes),
        common::rounds(&restarts)
    );
}
