//! What the simulator found in the code, each kept as the shrunk plan that
//! showed it (a plan, not a seed: the plans a seed draws may change).

use mesh_sim::plan::{Plan, PlanAction, PlanStep};
use mesh_sim::run_plan;

fn plan(seed: u64, seconds: u64, steps: &[(u64, PlanAction)]) -> Plan {
    Plan {
        seed,
        providers: 3,
        consumers: 5,
        seconds,
        steps: steps
            .iter()
            .map(|&(at, action)| PlanStep { at, action })
            .collect(),
        clock_steps: true,
        check_every: 1,
    }
}

fn holds(plan: &Plan) {
    let outcome = run_plan(plan);
    assert!(
        outcome.violation.is_none(),
        "{:?}\n{:#?}",
        outcome.violation,
        plan.steps
    );
}

/// Seed 19: a provider restarted with its clock 2796 s behind was called
/// unheard while it ran (freshness was judged by its own `said_at`).
#[test]
fn seed_19_a_provider_whose_clock_is_behind_is_heard() {
    holds(&plan(
        19,
        600,
        &[(
            464,
            PlanAction::Start {
                p: 1,
                offset: -2796,
            },
        )],
    ));
}

/// The same rule the other way: a provider whose clock was an hour ahead
/// stayed heard for an hour after it died.
#[test]
fn a_dead_provider_whose_clock_was_ahead_is_unheard() {
    holds(&plan(
        19,
        900,
        &[
            (100, PlanAction::Start { p: 0, offset: 3600 }),
            (300, PlanAction::Kill { p: 0 }),
        ],
    ));
}

/// Seed 22: a consumer failing (never made), its provider killed, the
/// consumer withdrawn while it was down, the provider started again with
/// its clock 2687 s behind: the standing of the earlier run stayed listed
/// for good (the settled rule compared the old run's `said_at` with the new
/// run's start, two clocks).
#[test]
fn seed_22_a_standing_from_before_a_restart_with_the_clock_stepped_back_is_dropped() {
    holds(&plan(
        22,
        600,
        &[
            (
                0,
                PlanAction::Break {
                    p: 0,
                    c: 1,
                    how: mesh_sim::plan::Break::Ensure,
                },
            ),
            (142, PlanAction::Kill { p: 0 }),
            (145, PlanAction::Unlist { p: 0, c: 1 }),
            (
                242,
                PlanAction::Start {
                    p: 0,
                    offset: -2687,
                },
            ),
        ],
    ));
}

/// Soak seed 1650 (a checker error, not the code's): a provider dead since
/// t=569 started again while the store was away; the controller, which had
/// caught up last before the store went, still names it unheard after the
/// store is back and serve is down. Its silence began before the
/// controller's (the store's outage stopped the catch-ups): no I6 breach.
#[test]
fn soak_1650_a_silence_from_before_a_store_outage_is_blamed_rightly() {
    holds(&plan(
        1650,
        900,
        &[
            (569, PlanAction::Kill { p: 0 }),
            (715, PlanAction::StoreDown { secs: 86 }),
            (747, PlanAction::Start { p: 0, offset: 0 }),
            (789, PlanAction::ControllerDown { secs: 27 }),
        ],
    ));
}

/// Soak seed 100057 (a checker error): the bus away twice, the second
/// outage beginning the second the first ended; the controller had not
/// caught up in between, so the provider's silence (dead since t=182)
/// began before the controller's.
#[test]
fn soak_100057_two_outages_back_to_back_are_one_silence_of_the_controller() {
    holds(&Plan {
        providers: 8,
        consumers: 8,
        ..plan(
            100_057,
            600,
            &[
                (182, PlanAction::Kill { p: 3 }),
                (349, PlanAction::BusDown { secs: 74 }),
                (382, PlanAction::Start { p: 3, offset: 2120 }),
                (423, PlanAction::BusDown { secs: 24 }),
            ],
        )
    });
}

/// Soak seed 100214 (8 providers × 8 consumers): the controller's acks
/// lost (89 % for 102 s) filled the consumer's `max_ack_pending` with
/// messages already stored; pulls came back empty while new `alive`s waited
/// behind them, and the link recorded "caught up". When the bus then went
/// away, status named a running provider unheard for a silence that was the
/// controller's (I6). Caught up now also needs the consumer to have
/// delivered everything (`ConsumerPending::undelivered` 0).
#[test]
fn soak_100214_lost_acks_that_block_delivery_are_no_catching_up() {
    use mesh_sim::plan::Break::{Check, Ensure};
    let broken = |p, c, how| PlanAction::Break { p, c, how };
    holds(&Plan {
        providers: 8,
        consumers: 8,
        ..plan(
            100_214,
            400,
            &[
                (0, broken(3, 3, Ensure)),
                (0, broken(4, 4, Ensure)),
                (0, broken(4, 5, Ensure)),
                (0, broken(5, 3, Ensure)),
                (0, broken(6, 2, Ensure)),
                (0, broken(6, 5, Ensure)),
                (0, broken(6, 7, Ensure)),
                (0, broken(7, 1, Ensure)),
                (13, broken(3, 7, Check)),
                (
                    193,
                    PlanAction::AckLoss {
                        secs: 102,
                        per_mille: 890,
                    },
                ),
                (283, PlanAction::BusDown { secs: 14 }),
            ],
        )
    });
}

/// Soak seed 100299 (8 × 8): provider 0 killed, then 89.5 % of the
/// controller's acks lost for 105 s. The controller followed only now and
/// then; status did not call provider 0 unheard (right: its silence was not
/// 3 alives long while the controller followed) but said "all 8 were heard
/// from within the last 20s" with it dead for 86 s (I1's sentence check).
#[test]
fn soak_100299_a_provider_the_controller_may_have_missed_is_not_said_heard() {
    holds(&Plan {
        providers: 8,
        consumers: 8,
        ..plan(
            100_299,
            400,
            &[
                (74, PlanAction::Kill { p: 0 }),
                (
                    76,
                    PlanAction::AckLoss {
                        secs: 105,
                        per_mille: 895,
                    },
                ),
            ],
        )
    });
}
