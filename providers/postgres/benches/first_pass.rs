//! Benchmark of a first pass over new consumers against the same work done
//! by a shell (prints figures; not a timed test).
//!
//! `cargo bench -p mesh-provider-postgres --bench first_pass` starts one
//! private PostgreSQL (SCRAM, the test-support cluster) and compares, in the
//! same run against the same server, for N = 200 new names each round:
//! - the first pass of a provider over N new consumers with
//!   `--admin-sessions 4` (per consumer: lookup, CREATE ROLE with its
//!   SCRAM verifier and mark, CREATE DATABASE, closing it to others, then
//!   the check: a login as the consumer with `SELECT 1`), at the loop's
//!   default concurrency 16;
//! - a shell loop making the same N names with the same parallelism,
//!   `xargs -P 4` of `psql -c 'CREATE ROLE <name> LOGIN'` then
//!   `createdb -O <name> <name>` (the administrator's password in a
//!   0600 `PGPASSFILE`, never on a command line).
//!
//! Rounds alternate (shell, provider, ...) on fresh names; the medians are
//! compared: ratio = provider ÷ shell (target ≤ 1.2). One provider pass with
//! a single administrator session (the provider before `--admin-sessions`)
//! is shown for reference.

mod common;

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mesh_provider_postgres::{PostgresConfig, PostgresProvisioner};
use mesh_sdk::testing::{self, Outbox, Runner, Settings};
use mesh_test_support::PgCluster;

const N: usize = 200;
const SESSIONS: usize = 4;
const ROUNDS: usize = 3;

fn names(prefix: &str) -> Vec<String> {
    (0..N).map(|i| format!("{prefix}-{i:03}")).collect()
}

/// The provider's first pass over `names`, all new, on `sessions` admin sessions.
async fn provider_pass(pg: &PgCluster, dir: &Path, names: &[String], sessions: usize) -> Duration {
    std::fs::create_dir_all(dir.join("secrets")).unwrap();
    for name in names {
        std::fs::write(
            dir.join("secrets").join(name),
            format!("minted-{name}-5e1f"),
        )
        .unwrap();
    }
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let file = dir.join("contributions.json");
    testing::write_contributions(&file, ("postgres", "db-1"), "postgres-database", &refs);
    let password =
        mesh_sdk::Secret::from_file(&pg.superuser_password_file(), "admin password").unwrap();
    let config = PostgresConfig::new(&pg.admin_url(), Some(password))
        .unwrap()
        .with_consumer_address(None, None)
        .unwrap()
        .with_admin_sessions(sessions);
    let outbox = Arc::new(Outbox::new());
    let mut runner = Runner::new(
        PostgresProvisioner::new(config),
        file,
        Settings::default(),
        outbox,
    );
    let start = Instant::now();
    let report = runner.pass().await;
    let took = start.elapsed();
    assert_eq!(
        (report.attempted, report.failed),
        (N, 0),
        "every consumer made"
    );
    took
}

/// The shell loop over `names`: CREATE ROLE and createdb, `SESSIONS` at once.
fn shell_loop(pg: &PgCluster, passfile: &Path, names: &[String]) -> Duration {
    let script =
        r#"psql -X -q -v ON_ERROR_STOP=1 -c "CREATE ROLE \"$1\" LOGIN" && createdb -O "$1" "$1""#;
    let start = Instant::now();
    let mut xargs = Command::new("xargs")
        .args([
            "-P",
            &SESSIONS.to_string(),
            "-n",
            "1",
            "sh",
            "-c",
            script,
            "sh",
        ])
        .env("PGHOST", pg.host())
        .env("PGPORT", pg.port().to_string())
        .env("PGUSER", pg.superuser())
        .env("PGDATABASE", "postgres")
        .env("PGPASSFILE", passfile)
        .stdin(Stdio::piped())
        .spawn()
        .expect("xargs runs");
    let mut stdin = xargs.stdin.take().unwrap();
    for name in names {
        writeln!(stdin, "{name}").unwrap();
    }
    drop(stdin);
    let status = xargs.wait().unwrap();
    let took = start.elapsed();
    assert!(status.success(), "the shell loop failed");
    took
}

#[tokio::main]
async fn main() {
    let pg = PgCluster::start();
    let dir = tempfile::tempdir().unwrap();
    let passfile = dir.path().join("pgpass");
    let mut file = std::fs::OpenOptions::new();
    std::os::unix::fs::OpenOptionsExt::mode(file.write(true).create_new(true), 0o600);
    let line = format!("*:*:*:{}:{}\n", pg.superuser(), pg.superuser_password());
    file.open(&passfile)
        .unwrap()
        .write_all(line.as_bytes())
        .unwrap();
    println!(
        "mesh-provider-postgres first-pass benchmark (release build, {} cores, private PostgreSQL cluster, SCRAM)",
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );
    // Warm both sides once.
    shell_loop(&pg, &passfile, &names("warm-s"));
    provider_pass(&pg, &dir.path().join("warm"), &names("warm-p"), SESSIONS).await;

    let (mut shells, mut providers) = (Vec::new(), Vec::new());
    for round in 0..ROUNDS {
        shells.push(shell_loop(&pg, &passfile, &names(&format!("s{round}"))));
        let at = dir.path().join(format!("p{round}"));
        providers.push(provider_pass(&pg, &at, &names(&format!("p{round}")), SESSIONS).await);
    }
    let single = provider_pass(&pg, &dir.path().join("one"), &names("one"), 1).await;
    let (shell, provider) = (common::median(&shells), common::median(&providers));
    println!();
    println!("N = {N} new names per round, parallelism {SESSIONS} on both sides; {ROUNDS} alternating rounds, median:");
    println!(
        "  shell: xargs -P {SESSIONS} psql CREATE ROLE + createdb: {:>7.3}s  ({:.1} ms per name)",
        shell.as_secs_f64(),
        shell.as_secs_f64() * 1e3 / N as f64
    );
    println!(
        "  provider first pass, --admin-sessions {SESSIONS}:       {:>7.3}s  ({:.1} ms per consumer, login check included)",
        provider.as_secs_f64(),
        provider.as_secs_f64() * 1e3 / N as f64
    );
    println!(
        "  ratio provider / shell: {:.3} (target <= 1.2)",
        provider.as_secs_f64() / shell.as_secs_f64()
    );
    println!(
        "  for reference, --admin-sessions 1:              {:>7.3}s",
        single.as_secs_f64()
    );
    println!(
        "  rounds (s): shell [{}]  provider [{}]",
        common::rounds(&shells),
        common::rounds(&providers)
    );
}
