//! The simulator's figures (docs/benchmarks.md): `cargo bench -p mesh-sim`.
//!
//! - seeds per second and simulated hours per wall-clock second at 10, 100
//!   and 1,000 providers (5 consumers each, 10 simulated minutes a seed,
//!   every invariant checked every simulated second);
//! - the latencies status shows, in simulated time, over the CI tier's
//!   first 100 seeds: "status names the consumer" minus "it began failing"
//!   (floor: `failing_after` + one pass), "status no longer names it" minus
//!   "it works again", "status names the provider unheard" minus "it
//!   stopped" (floor: 3 × `alive_every`). Only cases with no fault of the
//!   path meanwhile are measured.

use std::time::Instant;

use mesh_sim::check::percentile;
use mesh_sim::plan::Shape;
use mesh_sim::world::Timings;
use mesh_sim::{hours, run_seed};

fn row(name: &str, mut values: Vec<f64>, floor: f64) {
    values.sort_by(f64::total_cmp);
    println!(
        "| {name} | {} | {:.0} s | {:.0} s | {:.0} s | {floor:.0} s |",
        values.len(),
        percentile(&values, 0.5),
        percentile(&values, 0.99),
        values.last().copied().unwrap_or(f64::NAN),
    );
}

fn main() {
    println!("| providers | seeds | seeds/s | simulated h per wall s |");
    println!("| --- | --- | --- | --- |");
    for (providers, seeds) in [(10usize, 10u64), (100, 3), (1000, 1)] {
        let shape = Shape {
            providers,
            consumers: 5,
            seconds: 600,
            ..Shape::default()
        };
        let started = Instant::now();
        let mut simulated = 0;
        for seed in 0..seeds {
            let (_, outcome) = run_seed(seed, &shape);
            simulated += outcome.seconds;
            if let Some(v) = outcome.violation {
                println!("seed {seed} at {providers} providers: {v}");
            }
        }
        let wall = started.elapsed().as_secs_f64();
        println!(
            "| {providers} | {seeds} | {:.3} | {:.4} |",
            seeds as f64 / wall,
            hours(simulated) / wall
        );
    }

    let t = Timings::default();
    let pass = t.settings.pass_every.as_secs_f64();
    let detection_floor = t.settings.standing.failing_after.as_secs_f64() + pass;
    let unheard_floor = 3.0 * t.settings.alive_every.as_secs_f64();
    let (mut detection, mut recovery, mut unheard) = (Vec::new(), Vec::new(), Vec::new());
    for seed in 0..100 {
        let (_, outcome) = run_seed(seed, &Shape::default());
        detection.extend(outcome.latencies.detection);
        recovery.extend(outcome.latencies.recovery);
        unheard.extend(outcome.latencies.unheard);
    }
    println!();
    println!(
        "latencies in simulated time, seeds 0-99 (failing_after {:.0} s, pass {pass:.0} s, alive_every {:.0} s, delivery bound {:.0} s)",
        t.settings.standing.failing_after.as_secs_f64(),
        t.settings.alive_every.as_secs_f64(),
        t.delivery().as_secs_f64()
    );
    println!("| measure | cases | p50 | p99 | max | floor |");
    println!("| --- | --- | --- | --- | --- | --- |");
    row("consumer failing → named", detection, detection_floor);
    row("consumer works → no longer named", recovery, pass);
    row("provider stopped → named unheard", unheard, unheard_floor);
}
