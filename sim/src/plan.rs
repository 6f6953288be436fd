//! What happens in one simulation, drawn from its seed: the world's size and
//! a schedule of steps and faults ([`Plan`]). Shrinking drops actions from
//! the schedule; everything else the simulation does follows from it.

use std::fmt;

use crate::rng::Rng;

/// How a consumer's backend breaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Break {
    /// Its check is refused with a message that echoes its secret (the loop must redact it).
    Check,
    /// Making it fails: the backend cannot be reached for it.
    Ensure,
}

/// One thing that happens at a second of simulated time. In every variant
/// `p` is a provider's index, `c` a consumer's index, `secs` how long the
/// fault lasts and `per_mille` how many acks of a thousand it loses.
#[allow(missing_docs)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PlanAction {
    /// Consumer `c` of provider `p` starts failing.
    Break { p: usize, c: usize, how: Break },
    /// Consumer `c` of provider `p` works again.
    Heal { p: usize, c: usize },
    /// The contributions file of `p` no longer lists `c` (withdrawn or retired).
    Unlist { p: usize, c: usize },
    /// The contributions file of `p` lists `c` again.
    Relist { p: usize, c: usize },
    /// A person approves retiring (or deleting) `c` at `p`: between its
    /// passes, or `mid_pass`, while its next pass's attempts run.
    Approve {
        p: usize,
        c: usize,
        delete: bool,
        mid_pass: bool,
    },
    /// Provider `p` stops (killed: its memory and outbox are lost).
    Kill { p: usize },
    /// Provider `p` starts again, its wall clock off by `offset` seconds.
    Start { p: usize, offset: i64 },
    /// The bus is away for `secs` seconds.
    BusDown { secs: u64 },
    /// The store is away for `secs` seconds.
    StoreDown { secs: u64 },
    /// The controller (`serve`) is down for `secs` seconds, then starts again.
    ControllerDown { secs: u64 },
    /// For `secs` seconds, `per_mille` of the controller's acks are lost.
    AckLoss { secs: u64, per_mille: u64 },
    /// For `secs` seconds, `per_mille` of provider `p`'s publish acks are
    /// lost (the event is stored, the provider sends it again).
    PublishAckLoss { p: usize, secs: u64, per_mille: u64 },
    /// For `secs` seconds, provider `p` cannot reach the bus (its events wait).
    PublishDelay { p: usize, secs: u64 },
}

/// One action at second `at`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PlanStep {
    /// Seconds from the start.
    pub at: u64,
    /// What happens.
    pub action: PlanAction,
}

impl fmt::Display for PlanStep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "t={:>5}s {:?}", self.at, self.action)
    }
}

/// The world's size and what happens in it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    /// The seed it was drawn from.
    pub seed: u64,
    /// Providers.
    pub providers: usize,
    /// Consumers each provider is given.
    pub consumers: usize,
    /// Simulated seconds.
    pub seconds: u64,
    /// The schedule, by time.
    pub steps: Vec<PlanStep>,
    /// Whether provider clocks may be off (a start's offset).
    pub clock_steps: bool,
    /// The invariants are checked every `check_every` simulated seconds
    /// (1 but at scale) and at the end.
    pub check_every: u64,
}

/// What a plan is drawn with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shape {
    /// Providers.
    pub providers: usize,
    /// Consumers per provider.
    pub consumers: usize,
    /// Simulated seconds.
    pub seconds: u64,
    /// Faults (bus, store, controller, acks) per simulated hour.
    pub faults_per_hour: u64,
    /// Consumer changes (break, heal, unlist, relist, approve) per provider per hour.
    pub changes_per_hour: u64,
    /// Provider restarts per provider per hour.
    pub restarts_per_hour: u64,
    /// Whether a restarted provider's clock may be stepped back or ahead.
    pub clock_steps: bool,
    /// How often the invariants are checked, in simulated seconds: 1 but
    /// at scale, where one status report reads 100,000 standings.
    pub check_every: u64,
}

impl Default for Shape {
    fn default() -> Self {
        Shape {
            providers: 3,
            consumers: 5,
            seconds: 1200,
            faults_per_hour: 24,
            changes_per_hour: 30,
            restarts_per_hour: 3,
            clock_steps: true,
            check_every: 1,
        }
    }
}

impl Shape {
    /// The soak tier's wider shape: 8 providers × 8 consumers, an hour.
    pub fn wide() -> Shape {
        Shape {
            providers: 8,
            consumers: 8,
            seconds: 3600,
            ..Shape::default()
        }
    }
}

fn count(rng: &mut Rng, per_hour: u64, seconds: u64) -> u64 {
    let mean = per_hour * seconds / 3600;
    rng.between(mean / 2, mean + mean / 2)
}

/// Points each heal of `steps` (in time order) at a consumer broken then,
/// one of the provider's broken ones drawn from `rng` when the one drawn
/// for it is not: a heal then always heals something, so a long run's
/// broken consumers stay about as many as at its start instead of piling
/// up (a break hits any consumer, a heal of a working one did nothing).
/// A heal with none broken is kept as drawn (it does nothing).
fn heal_the_broken(steps: &mut [PlanStep], consumers: usize, rng: &mut Rng) {
    let mut broken: std::collections::BTreeMap<usize, Vec<bool>> = Default::default();
    for step in steps {
        match &mut step.action {
            PlanAction::Break { p, c, .. } => {
                broken.entry(*p).or_insert_with(|| vec![false; consumers])[*c] = true;
            }
            PlanAction::Heal { p, c } => {
                let Some(now) = broken.get_mut(p) else {
                    continue;
                };
                if !now[*c] {
                    let candidates: Vec<usize> = (0..consumers).filter(|&b| now[b]).collect();
                    let pick = usize::try_from(rng.below(candidates.len() as u64)).unwrap_or(0);
                    match candidates.get(pick) {
                        Some(&b) => *c = b,
                        None => continue,
                    }
                }
                now[*c] = false;
            }
            _ => {}
        }
    }
}

impl Plan {
    /// The plan of `seed` for `shape`.
    pub fn draw(seed: u64, shape: &Shape) -> Plan {
        let mut rng = Rng::derive(seed, 1);
        let mut steps = Vec::new();
        let n = shape.providers;
        let m = shape.consumers;
        let secs = shape.seconds;
        // Leave the last minutes quiet: what status says then is checked
        // against a world at rest.
        let end = secs.saturating_sub(secs / 6).max(1);
        let at = |rng: &mut Rng| rng.between(5, end);
        for p in 0..n {
            // Some consumers can never be made: a withdrawn one is then not
            // held at the backend (nothing to retire).
            for c in 0..m {
                if rng.chance(100) {
                    steps.push(PlanStep {
                        at: 0,
                        action: PlanAction::Break {
                            p,
                            c,
                            how: Break::Ensure,
                        },
                    });
                }
            }
            for _ in 0..count(&mut rng, shape.changes_per_hour, secs) {
                let c = usize::try_from(rng.below(m as u64)).unwrap_or(0);
                let action = match rng.below(10) {
                    0..=2 => PlanAction::Break {
                        p,
                        c,
                        how: if rng.chance(500) {
                            Break::Check
                        } else {
                            Break::Ensure
                        },
                    },
                    3..=5 => PlanAction::Heal { p, c },
                    6 => PlanAction::Unlist { p, c },
                    7 | 8 => PlanAction::Relist { p, c },
                    _ => PlanAction::Approve {
                        p,
                        c,
                        delete: rng.chance(300),
                        mid_pass: rng.chance(500),
                    },
                };
                let when = at(&mut rng);
                steps.push(PlanStep { at: when, action });
                // A person often approves what was just withdrawn: its
                // retirement before the loop retires it itself (a minute),
                // or its deletion once it is retired.
                if matches!(action, PlanAction::Unlist { .. }) && rng.chance(500) {
                    let delete = rng.chance(500);
                    let after = match delete {
                        true => rng.between(70, 400),
                        false => rng.between(3, 50),
                    };
                    steps.push(PlanStep {
                        at: when + after,
                        action: PlanAction::Approve {
                            p,
                            c,
                            delete,
                            mid_pass: rng.chance(500),
                        },
                    });
                }
            }
            for _ in 0..count(&mut rng, shape.restarts_per_hour, secs) {
                let down = at(&mut rng);
                let up = down + rng.between(1, 200);
                let offset = match shape.clock_steps && rng.chance(400) {
                    true => i64::try_from(rng.between(1, 7200)).unwrap_or(0) - 3600,
                    false => 0,
                };
                steps.push(PlanStep {
                    at: down,
                    action: PlanAction::Kill { p },
                });
                steps.push(PlanStep {
                    at: up,
                    action: PlanAction::Start { p, offset },
                });
            }
        }
        for _ in 0..count(&mut rng, shape.faults_per_hour, secs) {
            let p = usize::try_from(rng.below(n as u64)).unwrap_or(0);
            let secs = rng.between(1, 120);
            let action = match rng.below(6) {
                0 => PlanAction::BusDown { secs },
                1 => PlanAction::StoreDown { secs },
                2 => PlanAction::ControllerDown { secs },
                3 => PlanAction::AckLoss {
                    secs,
                    per_mille: rng.between(100, 900),
                },
                4 => PlanAction::PublishAckLoss {
                    p,
                    secs,
                    per_mille: rng.between(100, 900),
                },
                _ => PlanAction::PublishDelay { p, secs },
            };
            steps.push(PlanStep {
                at: at(&mut rng),
                action,
            });
        }
        steps.sort_by_key(|s| s.at);
        heal_the_broken(&mut steps, m, &mut Rng::derive(seed, 3));
        Plan {
            seed,
            providers: n,
            consumers: m,
            seconds: secs,
            steps,
            clock_steps: shape.clock_steps,
            check_every: shape.check_every.max(1),
        }
    }

    /// The plan without the steps `drop` (indices into `steps`).
    pub fn without(&self, drop: &[usize]) -> Plan {
        let steps = self
            .steps
            .iter()
            .enumerate()
            .filter(|(i, _)| !drop.contains(i))
            .map(|(_, s)| *s)
            .collect();
        Plan {
            steps,
            ..self.clone()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seed_draws_one_plan() {
        let shape = Shape::default();
        assert_eq!(Plan::draw(3, &shape), Plan::draw(3, &shape));
        assert_ne!(Plan::draw(3, &shape), Plan::draw(4, &shape));
        let plan = Plan::draw(3, &shape);
        assert!(plan.steps.windows(2).all(|w| w[0].at <= w[1].at));
        assert_eq!(plan.without(&[0]).steps.len() + 1, plan.steps.len());
    }

    /// The broken consumers of each simulated hour's end, as the plan breaks
    /// and heals them; asserts that every heal heals one broken then (when
    /// its provider has one).
    fn broken_by_hour(plan: &Plan) -> Vec<usize> {
        let mut broken = vec![vec![false; plan.consumers]; plan.providers];
        let mut hours = Vec::new();
        for step in &plan.steps {
            while step.at >= 3600 * (hours.len() as u64 + 1) {
                hours.push(broken.iter().flatten().filter(|b| **b).count());
            }
            match step.action {
                PlanAction::Break { p, c, .. } => broken[p][c] = true,
                PlanAction::Heal { p, c } => {
                    let any = broken[p].iter().any(|b| *b);
                    assert!(broken[p][c] || !any, "{step} heals a working consumer");
                    broken[p][c] = false;
                }
                _ => {}
            }
        }
        hours
    }

    #[test]
    fn a_heal_heals_a_broken_consumer_so_a_day_keeps_about_as_many_broken() {
        let day = Shape {
            providers: 1000,
            consumers: 100,
            seconds: 24 * 3600,
            faults_per_hour: 12,
            changes_per_hour: 4,
            restarts_per_hour: 1,
            clock_steps: true,
            check_every: 60,
        };
        let hours = broken_by_hour(&Plan::draw(7, &day));
        let (first, last) = (hours[0], hours[19]);
        assert!(
            last * 10 >= first * 8 && last * 10 <= first * 12,
            "broken at the end of each hour: {hours:?}"
        );
        for seed in 0..20 {
            broken_by_hour(&Plan::draw(seed, &Shape::default()));
        }
    }
}
