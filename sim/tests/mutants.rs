//! The mutation check (scripts/mutants): built with one planted mutation
//! (`--cfg mesh_mutant="NAME"`), the CI tier's seeds must find it. Prints the
//! first seed that breaks an invariant and its shrunk trace.

use mesh_sim::plan::Shape;
use mesh_sim::{explain, run_seed, shrink};

/// The CI tier's seeds.
const SEEDS: u64 = 200;

#[test]
#[ignore = "run by scripts/mutants with --cfg mesh_mutant=\"NAME\""]
fn hunt() {
    let shape = Shape::default();
    for seed in 0..SEEDS {
        let (plan, outcome) = run_seed(seed, &shape);
        if let Some(violation) = outcome.violation {
            let (shrunk, found) = shrink(&plan, &violation);
            println!("{}", explain(&plan, &violation, &shrunk, &found));
            println!(
                "MUTANT-RESULT seed={seed} invariant={} shrunk={} of={} tried={}",
                found.invariant,
                shrunk.steps.len(),
                plan.steps.len(),
                seed + 1
            );
            return;
        }
    }
    panic!("no seed of the CI tier ({SEEDS}) breaks an invariant: the mutation is not caught");
}
