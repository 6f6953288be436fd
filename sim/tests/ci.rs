//! The CI tier: a few hundred seeds of the default shape, every invariant
//! checked after every simulated second. `SEED=<n>` replays one seed.

use mesh_sim::plan::Shape;
use mesh_sim::{replay_from_env, run_seed, sweep};

/// Seeds per test (the seeds are split over a few tests so they run in parallel).
const PER_TEST: u64 = 50;

fn tier(part: u64) {
    let seeds = part * PER_TEST..(part + 1) * PER_TEST;
    let (failures, _) = sweep(seeds, &Shape::default());
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn seeds_0_to_49() {
    tier(0);
}

#[test]
fn seeds_50_to_99() {
    tier(1);
}

#[test]
fn seeds_100_to_149() {
    tier(2);
}

#[test]
fn seeds_150_to_199() {
    tier(3);
}

/// `SEED=<n> cargo test -p mesh-sim --test ci replay -- --nocapture`
/// replays seed n exactly and prints what it found.
#[test]
fn replay() {
    replay_from_env(&Shape::default());
}

/// A seed replays exactly: the same plan, the same outcome, to the latency.
#[test]
fn a_seed_replays_exactly() {
    let shape = Shape::default();
    let (plan_a, a) = run_seed(5, &shape);
    let (plan_b, b) = run_seed(5, &shape);
    assert_eq!(plan_a, plan_b);
    assert_eq!(format!("{a:?}"), format!("{b:?}"));
    assert!(a.reports > 0 && !a.latencies.detection.is_empty(), "{a:?}");
}

/// The tier does what it claims: among its first seeds, approvals reach
/// providers while a pass's attempts run, and some are acted on.
#[test]
fn approvals_race_passes() {
    let shape = Shape::default();
    let (mut answered, mut acted) = (0, 0);
    for seed in 0..20 {
        let (_, outcome) = run_seed(seed, &shape);
        answered += outcome.mid_pass_approvals.0;
        acted += outcome.mid_pass_approvals.1;
    }
    println!("seeds 0-19: {answered} approvals answered mid-pass, {acted} acted on");
    assert!(
        acted > 0 && answered > acted,
        "{answered} answered, {acted} acted on"
    );
}
