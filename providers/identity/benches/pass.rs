//! Benchmark of one provisioner pass against its floor (prints figures;
//! not a timed test).
//!
//! `cargo bench -p mesh-provider-identity --bench pass` uses the test
//! Keycloak ([`KeycloakServer::shared`]; without a distribution it prints
//! `SKIPPED: ...` and exits 0), makes a realm and N = 200 consumers, runs
//! one warm-up pass (which makes the 200 clients), then compares, in the
//! same run against the same server:
//! - a loop pass over the 200 consumers, all existing and healthy, at the
//!   loop's default concurrency C = 16 (per consumer `ensure` then the
//!   client-credentials check; then `held()`, which lists the realm's
//!   clients at most once a minute, `--list-every`, and otherwise answers
//!   from what the provider knows: the steady state, where one pass in 12
//!   lists at the default 5 s between passes);
//! - the same pass by a provider that lists every pass (`--list-every 0`);
//! - the first pass of a restarted provider over the same consumers (a new
//!   provisioner, which knows nothing of the realm yet), also at C = 16;
//! - 200 plain client-credentials grants with the same HTTP client
//!   settings (a second `Keycloak` of the same configuration), at most
//!   C = 16 at once: the floor of a check.
//!
//! Rounds alternate (floor, pass, listing pass, restarted pass, floor,
//! ...) after a few rounds of warm-up (Keycloak's JIT); each ratio is the
//! median of the rounds' own ratios (pass ÷ the floor of the same round,
//! target ≤ 1.2). The HTTP calls of each kind are counted by the provider
//! itself (per pass).

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mesh_provider_identity::keycloak::{CallCounts, Keycloak};
use mesh_provider_identity::{IdentityConfig, IdentityProvisioner};
use mesh_sdk::testing::{Outbox, Runner, Settings};
use mesh_sdk::Secret;
use mesh_test_support::{write_contributions, KeycloakServer, KEYCLOAK_ADMIN};
use tokio::task::JoinSet;

const N: usize = 200;
const CONCURRENCY: usize = 16;
const ROUNDS: usize = 9;
const WARM_ROUNDS: usize = 4;

fn consumer(i: usize) -> (String, String) {
    (
        format!("consumer-{i:04}"),
        format!("minted-secret-{i:04}-7f3a9c1e5d2b4a6c"),
    )
}

/// Writes the contributions file and the secret files.
fn world(dir: &Path) {
    write_contributions(
        dir,
        ("identity", "kc-1"),
        "oidc-client",
        (0..N).map(consumer),
    );
}

fn config(kc: &KeycloakServer, realm: &str) -> IdentityConfig {
    IdentityConfig::new(
        &kc.url(),
        realm,
        KEYCLOAK_ADMIN,
        Secret::new(kc.admin_password()),
    )
    .unwrap()
}

/// A runner over a new provisioner (a provider just started).
fn runner(config: IdentityConfig, dir: &Path, outbox: &Arc<Outbox>) -> Runner<IdentityProvisioner> {
    let settings = Settings {
        concurrency: CONCURRENCY,
        ..Settings::default()
    };
    Runner::new(
        IdentityProvisioner::new(config).unwrap(),
        dir.join("c.json"),
        settings,
        Arc::clone(outbox),
    )
}

/// N plain client-credentials grants, at most CONCURRENCY at once.
async fn plain_grants(keycloak: &Arc<Keycloak>) -> Duration {
    let start = Instant::now();
    let mut running = JoinSet::new();
    let mut next = 0;
    loop {
        while running.len() < CONCURRENCY && next < N {
            let keycloak = Arc::clone(keycloak);
            let (name, secret) = consumer(next);
            running.spawn(async move {
                keycloak
                    .client_credentials(&name, &Secret::new(secret))
                    .await
                    .unwrap();
            });
            next += 1;
        }
        match running.join_next().await {
            Some(done) => done.unwrap(),
            None => return start.elapsed(),
        }
    }
}

/// Runs one pass of `runner`; its time and the calls its provisioner made.
async fn timed_pass(runner: &mut Runner<IdentityProvisioner>) -> (Duration, CallCounts) {
    let keycloak = Arc::clone(runner.provisioner().keycloak());
    let before = keycloak.calls();
    let start = Instant::now();
    let report = runner.pass().await;
    let took = start.elapsed();
    assert_eq!((report.attempted, report.failed), (N, 0), "{report:?}");
    (took, keycloak.calls().since(&before))
}

fn drain(outbox: &Outbox) {
    for (key, pending) in outbox.snapshot() {
        outbox.done(&key, pending.seq);
    }
}

fn median(values: &[Duration]) -> Duration {
    let mut sorted = values.to_vec();
    sorted.sort();
    sorted[sorted.len() / 2]
}

fn rounds(values: &[Duration]) -> String {
    values
        .iter()
        .map(|d| format!("{:.3}", d.as_secs_f64()))
        .collect::<Vec<_>>()
        .join(" ")
}

#[tokio::main]
async fn main() {
    let Some(kc) = KeycloakServer::shared() else {
        println!("SKIPPED: no Keycloak distribution (see test-support's keycloak module)");
        return;
    };
    let realm = kc.new_realm("bench").await;
    let dir = tempfile::tempdir().unwrap();
    world(dir.path());
    let outbox = Arc::new(Outbox::new());
    let mut runner = runner(config(kc, &realm), dir.path(), &outbox);
    println!(
        "mesh-provider-identity pass benchmark (release build, {} cores, Keycloak at {}, booted in {:.1}s)",
        std::thread::available_parallelism().map_or(1, |n| n.get()),
        kc.dist().home.display(),
        kc.boot_time().as_secs_f64()
    );
    let start = Instant::now();
    let (_, made) = timed_pass(&mut runner).await;
    println!(
        "setup: warm-up pass made {N} clients in {:.1}s ({made})",
        start.elapsed().as_secs_f64()
    );
    drain(&outbox);
    let floor_keycloak = Arc::new(Keycloak::new(&config(kc, &realm)).unwrap());
    let mut listing = self::runner(
        config(kc, &realm).with_list_every(Duration::ZERO),
        dir.path(),
        &outbox,
    );
    // Warm both sides (connections, Keycloak's caches and JIT).
    for _ in 0..WARM_ROUNDS {
        plain_grants(&floor_keycloak).await;
        timed_pass(&mut runner).await;
        timed_pass(&mut listing).await;
        drain(&outbox);
    }

    let run_start = Instant::now();
    let (mut floors, mut passes, mut listed, mut restarts) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let (mut pass_calls, mut listed_calls, mut restart_calls) =
        (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        floors.push(plain_grants(&floor_keycloak).await);
        let (took, calls) = timed_pass(&mut runner).await;
        passes.push(took);
        pass_calls.push(calls);
        let (took, calls) = timed_pass(&mut listing).await;
        listed.push(took);
        listed_calls.push(calls);
        let mut restarted = self::runner(config(kc, &realm), dir.path(), &outbox);
        let (took, calls) = timed_pass(&mut restarted).await;
        restarts.push(took);
        restart_calls.push(calls);
        drain(&outbox);
    }
    let run = run_start.elapsed();
    let ratio = |series: &[Duration]| {
        let mut ratios: Vec<f64> = series
            .iter()
            .zip(&floors)
            .map(|(took, floor)| took.as_secs_f64() / floor.as_secs_f64())
            .collect();
        ratios.sort_by(f64::total_cmp);
        ratios[ratios.len() / 2]
    };
    let floor = median(&floors);
    println!();
    println!("N = {N} consumers, all existing and healthy; concurrency C = {CONCURRENCY} on both sides (the loop's default)");
    println!("{WARM_ROUNDS} warm-up rounds, then {ROUNDS} alternating rounds; times are medians, ratios the median of each round's own ratio:");
    println!(
        "  plain client-credentials grants:                {:>8.3}s  ({:.2} ms per grant)",
        floor.as_secs_f64(),
        floor.as_secs_f64() * 1e3 / N as f64
    );
    println!(
        "  loop pass (the realm listed at most once a minute): {:>5.3}s  ratio {:.3} (target <= 1.2)",
        median(&passes).as_secs_f64(),
        ratio(&passes)
    );
    println!(
        "  loop pass listing the realm (--list-every 0):   {:>8.3}s  ratio {:.3}",
        median(&listed).as_secs_f64(),
        ratio(&listed)
    );
    println!(
        "  first pass after a restart:                     {:>8.3}s  ratio {:.3}",
        median(&restarts).as_secs_f64(),
        ratio(&restarts)
    );
    println!(
        "  rounds (s): floor [{}]  pass [{}]  listing pass [{}]  restarted [{}]",
        rounds(&floors),
        rounds(&passes),
        rounds(&listed),
        rounds(&restarts)
    );
    println!();
    println!("HTTP calls per pass (counted by the provider):");
    for (i, calls) in pass_calls.iter().enumerate() {
        println!("  pass {}: {} calls: {calls}", i + 1, calls.total());
    }
    for (i, calls) in listed_calls.iter().enumerate() {
        println!("  listing pass {}: {} calls: {calls}", i + 1, calls.total());
    }
    for (i, calls) in restart_calls.iter().enumerate() {
        println!(
            "  restarted pass {}: {} calls: {calls}",
            i + 1,
            calls.total()
        );
    }
    let logins: u64 = pass_calls.iter().map(|c| c.admin_logins).sum();
    println!(
        "  the long-lived provider's administrator logins over the {:.0}s of rounds: {logins} (a token lives 60 s, renewed at 45 s)",
        run.as_secs_f64()
    );
}
