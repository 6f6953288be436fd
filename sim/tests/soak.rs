//! The soak tier and the scale run, ignored in the normal `cargo test`:
//! `cargo test --release -p mesh-sim --test soak -- --ignored --nocapture`.

use std::time::Instant;

use mesh_sim::plan::Shape;
use mesh_sim::{hours, replay_from_env, run_seed, sweep};

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

/// Thousands of seeds past the CI tier's (`SOAK_SEEDS`, default 3,000),
/// of the CI shape and of a wider one (8 providers × 8 consumers, an hour).
#[test]
#[ignore = "the soak tier: cargo test --release -p mesh-sim --test soak -- --ignored"]
fn soak() {
    let n = env("SOAK_SEEDS", 3000);
    let started = Instant::now();
    let (mut failures, seconds) = sweep(1000..1000 + n, &Shape::default());
    let (more, wide_seconds) = sweep(100_000..100_000 + n / 10, &Shape::wide());
    failures.extend(more);
    println!(
        "soak: {} + {} seeds, {:.1} simulated hours in {:.0} s",
        n,
        n / 10,
        hours(seconds + wide_seconds),
        started.elapsed().as_secs_f64()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// `SEED=<n> cargo test --release -p mesh-sim --test soak replay_wide --
/// --ignored --nocapture` replays seed n of the wider shape.
#[test]
#[ignore = "replays SEED of the soak tier's wider shape"]
fn replay_wide() {
    replay_from_env(&Shape::wide());
}

/// 1,000 providers × 100 consumers (`SCALE_PROVIDERS`, `SCALE_CONSUMERS`)
/// for `SCALE_HOURS` simulated hours (default 24: a day), every invariant
/// checked every `SCALE_CHECK_EVERY` simulated seconds (default 60). It
/// prints what each simulated hour cost in wall time, and on what.
#[test]
#[ignore = "the scale run: cargo test --release -p mesh-sim --test soak scale -- --ignored"]
fn scale() {
    let shape = Shape {
        providers: env("SCALE_PROVIDERS", 1000) as usize,
        consumers: env("SCALE_CONSUMERS", 100) as usize,
        seconds: env("SCALE_HOURS", 24) * 3600,
        faults_per_hour: 12,
        changes_per_hour: 4,
        restarts_per_hour: 1,
        clock_steps: true,
        check_every: env("SCALE_CHECK_EVERY", 60),
    };
    let started = Instant::now();
    // Not shrunk: at this size one run takes most of an hour.
    let (plan, outcome) = run_seed(env("SCALE_SEED", 7), &shape);
    println!(
        "scale: {} providers x {} consumers, seed {}, {} actions, {:.1} simulated hours in {:.0} s, {} checks, {} status reports",
        plan.providers,
        plan.consumers,
        plan.seed,
        plan.steps.len(),
        hours(outcome.seconds),
        started.elapsed().as_secs_f64(),
        outcome.checks,
        outcome.reports
    );
    println!(
        "latencies, to within a check ({} s):\n{}",
        plan.check_every,
        outcome.latencies.summary(plan.check_every)
    );
    if let Some(violation) = outcome.violation {
        panic!(
            "seed {} at scale breaks {violation}\n  replay: SCALE_SEED={} cargo test --release -p mesh-sim --test soak scale -- --ignored --nocapture",
            plan.seed, plan.seed
        );
    }
}
