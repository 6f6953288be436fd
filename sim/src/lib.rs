//! # mesh-sim
//!
//! A deterministic simulation of the signal path under random faults
//! (docs/simulation.md): from one seed, in one process, on tokio's paused
//! clock, N providers on the real mesh-sdk loop publish through the real
//! `Outbox` onto an in-memory bus ([`bus`]); the controller's real link
//! rounds (`mesh_status::link::follow_messages`) apply them through the
//! real reduction into an in-memory store behind the same `Store` trait
//! ([`store`]); the real report and rendering say what status would
//! ([`status`]). The
//! seed's schedule ([`plan`]) breaks and heals consumers, withdraws and lists
//! them, approves retirements (between passes and while a pass's attempts
//! run), restarts providers with their clocks stepped, and takes the bus,
//! the store and the controller away. After every simulated second (every
//! minute at scale) [`check`] holds the invariants I1–I6 against the
//! world's ground truth ([`world`]), and I5 against every event, log line,
//! row and status text.
//!
//! A violation is shrunk ([`shrink`]: actions dropped while it still
//! holds) and reported with its seed; `SEED=<n> cargo test -p mesh-sim`
//! replays it.

// Nothing public by accident: what this crate offers is chosen.
#![warn(unreachable_pub)]

pub mod backend;
pub mod bus;
pub mod check;
pub mod cost;
pub mod plan;
pub mod rng;
pub mod status;
pub mod store;
pub mod timings;
pub mod world;

use std::time::Duration;

use check::{Checker, Latencies, Violation};
use cost::{Costs, Timer};
use plan::{Plan, Shape};
use world::{Timings, World};

/// What one simulation gave.
#[derive(Debug)]
pub struct SimulationOutcome {
    /// The first invariant broken, if any.
    pub violation: Option<Violation>,
    /// Seconds simulated.
    pub seconds: u64,
    /// Times the invariants were checked (every second, or every
    /// `check_every` at scale).
    pub checks: u64,
    /// Status reports checked.
    pub reports: u64,
    /// Latencies measured.
    pub latencies: Latencies,
    /// Approvals answered while a pass's attempts ran, and how many were acted on.
    pub mid_pass_approvals: (u64, u64),
}

/// Runs `plan` to its end or its first violation.
pub fn run_plan(plan: &Plan) -> SimulationOutcome {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("a tokio runtime");
    // Every line logged on this thread (the simulation's only one), every level.
    let (logs, _capture) = mesh_sdk::testing::LogCapture::start();
    runtime.block_on(async {
        let mut checker = Checker::new(plan.providers, plan.consumers);
        let mut world = World::new(plan.clone(), Timings::default());
        let mut violation = None;
        let mut simulated = 0;
        let mut hour_began = (Costs::default(), cost::thread_cpu());
        for second in 0..=plan.seconds {
            world.step(second).await;
            simulated = second;
            if second % plan.check_every.max(1) != 0 && second != plan.seconds {
                continue;
            }
            // A long run (checked every minute or less often) says where it
            // is every simulated hour, and what the hour cost.
            if plan.check_every > 1 && second > 0 && second % 3600 == 0 {
                let now = (costs_of(&world, &checker), cost::thread_cpu());
                eprintln!(
                    "seed {}: {} simulated hours, {} checks, {} reports, no invariant broken; hour {}: {} consumers failing, {} named; {} of CPU; wall {}",
                    plan.seed,
                    second / 3600,
                    checker.checks,
                    checker.reports,
                    second / 3600,
                    world.failing(),
                    checker.named,
                    cpu_since(hour_began.1, now.1),
                    now.0.since(&hour_began.0)
                );
                hour_began = now;
            }
            let timer = Timer::start("check: log capture");
            let lines = logs.take();
            timer.stop(&mut checker.costs);
            if let Err(v) = checker.check(&world, &lines, second) {
                violation = Some(v);
                break;
            }
        }
        if plan.check_every > 1 {
            eprintln!(
                "seed {}: {} simulated seconds took {}",
                plan.seed,
                simulated,
                costs_of(&world, &checker)
            );
        }
        let mid_pass_approvals = world.mid_pass_approvals;
        world.end().await;
        SimulationOutcome {
            mid_pass_approvals,
            violation,
            seconds: simulated,
            checks: checker.checks,
            reports: checker.reports,
            latencies: std::mem::take(&mut checker.latencies),
        }
    })
}

/// The wall time of the world's seconds and of the checks so far, by phase.
fn costs_of(world: &World, checker: &Checker) -> Costs {
    let mut costs = world.costs.clone();
    costs.add_all(&checker.costs);
    costs
}

/// `12.3 s` of CPU between two readings, or `?` where none can be read.
fn cpu_since(from: Option<Duration>, to: Option<Duration>) -> String {
    match (from, to) {
        (Some(from), Some(to)) => format!("{:.1} s", (to.saturating_sub(from)).as_secs_f64()),
        _ => "?".to_owned(),
    }
}

/// Runs the plan `seed` draws for `shape`.
pub fn run_seed(seed: u64, shape: &Shape) -> (Plan, SimulationOutcome) {
    let plan = Plan::draw(seed, shape);
    let outcome = run_plan(&plan);
    (plan, outcome)
}

/// The shortest plan found that still breaks `invariant`: the simulation cut
/// at the violation, then actions dropped (halves, quarters, ... one by
/// one) while it still breaks. Deterministic.
pub fn shrink(plan: &Plan, violation: &Violation) -> (Plan, Violation) {
    let breaks = |p: &Plan| {
        run_plan(p)
            .violation
            .filter(|v| v.invariant == violation.invariant)
    };
    let mut best = Plan {
        seconds: violation.at,
        steps: plan
            .steps
            .iter()
            .filter(|s| s.at <= violation.at)
            .copied()
            .collect(),
        ..plan.clone()
    };
    let mut found = violation.clone();
    let mut chunk = best.steps.len().div_ceil(2).max(1);
    loop {
        let mut i = 0;
        while i < best.steps.len() {
            let drop: Vec<usize> = (i..(i + chunk).min(best.steps.len())).collect();
            let candidate = best.without(&drop);
            match breaks(&candidate) {
                Some(v) => {
                    best = Plan {
                        seconds: v.at,
                        ..candidate
                    };
                    found = v;
                }
                None => i += chunk,
            }
        }
        if chunk == 1 {
            break;
        }
        chunk = chunk.div_ceil(2);
    }
    (best, found)
}

/// The report of a violation: the seed, the invariant, the shrunk trace,
/// and how to replay it.
pub fn explain(plan: &Plan, violation: &Violation, shrunk: &Plan, found: &Violation) -> String {
    let mut out = format!(
        "seed {} breaks {}\n  first seen: {violation}\n  shrunk from {} to {} actions, broken at t={}s: {}\n  trace:\n",
        plan.seed,
        violation.invariant,
        plan.steps.len(),
        shrunk.steps.len(),
        found.at,
        found.detail
    );
    for step in &shrunk.steps {
        out.push_str(&format!("    {step}\n"));
    }
    out.push_str(&format!("  replay: {}\n", replay_command(plan)));
    out
}

/// Runs seeds `seeds` of `shape`; returns the report of every seed that
/// breaks an invariant (shrunk), and the seconds simulated.
pub fn sweep(seeds: impl Iterator<Item = u64>, shape: &Shape) -> (Vec<String>, u64) {
    let mut failures = Vec::new();
    let mut seconds = 0;
    for seed in seeds {
        let (plan, outcome) = run_seed(seed, shape);
        seconds += outcome.seconds;
        if let Some(violation) = outcome.violation {
            let (shrunk, found) = shrink(&plan, &violation);
            failures.push(explain(&plan, &violation, &shrunk, &found));
        }
    }
    (failures, seconds)
}

/// The command that replays `plan`'s seed: the CI tier's shape or the
/// soak tier's wider one.
pub fn replay_command(plan: &Plan) -> String {
    let seed = plan.seed;
    let wide = Shape::wide();
    match (plan.providers, plan.consumers, plan.seconds) {
        (p, c, _) if p == wide.providers && c == wide.consumers => format!(
            "SEED={seed} cargo test --release -p mesh-sim --test soak replay_wide -- --ignored --nocapture"
        ),
        _ => format!("SEED={seed} cargo test -p mesh-sim --test ci replay -- --nocapture"),
    }
}

/// Replays the seed in `SEED` for `shape`: panics with what it broke (the
/// trace shrunk), or prints that nothing broke. Nothing without `SEED`.
pub fn replay_from_env(shape: &Shape) {
    let Some(seed) = seed_from_env() else {
        return;
    };
    let (plan, outcome) = run_seed(seed, shape);
    match outcome.violation {
        Some(violation) => {
            let (shrunk, found) = shrink(&plan, &violation);
            panic!("{}", explain(&plan, &violation, &shrunk, &found));
        }
        None => println!(
            "seed {seed}: {} actions, {} s simulated, {} reports checked, no invariant broken",
            plan.steps.len(),
            outcome.seconds,
            outcome.reports
        ),
    }
}

/// The seed asked for in `SEED`, if any.
pub fn seed_from_env() -> Option<u64> {
    std::env::var("SEED")
        .ok()
        .and_then(|s| s.trim().parse().ok())
}

/// A simulated duration in hours.
pub fn hours(seconds: u64) -> f64 {
    Duration::from_secs(seconds).as_secs_f64() / 3600.0
}
