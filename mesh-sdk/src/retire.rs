//! Retirement: what happens to a consumer the mesh stopped asking for, as a
//! pure state machine. No I/O; `now` is passed in.
//!
//! A consumer the provider still holds but the mesh no longer lists is
//! retired (disabled, reversible) after `after_passes` passes AND `after`
//! time, or at once on a person's approval. A retired consumer listed again
//! is re-enabled. Deletion happens only on a person's approval of a retired
//! consumer. A pass in which the contributions file or the held list could
//! not be read counts for nothing; a restart starts every count over.
//!
//! The countdown is said: on the first counted pass a consumer is missing
//! ([`Action::Countdown`], once per countdown), and when it ends without a
//! retirement ([`Action::Cancel`]: listed again, or no longer held).

use std::time::Duration;

use mesh_protocol::Name;
use tokio::time::Instant;

use crate::name_map::{NameMap, NameSet};
use crate::provisioner::Held;

/// Timings of retirement.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RetireRules {
    /// Passes a consumer must be missing for.
    pub after_passes: u32,
    /// Time it must be missing for.
    pub after: Duration,
}

impl RetireRules {
    /// When a countdown that began with the pass at `first` retires its
    /// consumer, passes running every `pass_every`: the pass that has
    /// counted `after_passes` passes and is at least `after` past `first`
    /// (an estimate: a slow pass, or one that counts for nothing, puts it
    /// later).
    pub fn retire_at(&self, first: Instant, pass_every: Duration) -> Instant {
        let passes = pass_every.saturating_mul(self.after_passes.saturating_sub(1));
        let mut at = first + passes;
        if at < first + self.after {
            // The first pass at or after `after`.
            let every = pass_every.max(Duration::from_millis(1));
            let n = self.after.as_nanos().div_ceil(every.as_nanos());
            at = first + every.saturating_mul(u32::try_from(n).unwrap_or(u32::MAX));
        }
        at
    }
}

impl Default for RetireRules {
    fn default() -> Self {
        RetireRules {
            after_passes: 5,
            after: Duration::from_secs(10 * 60),
        }
    }
}

/// What the loop must do to a held provision.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Action {
    /// Retire it: withdrawn long enough.
    Retire(Name),
    /// Enable it again: listed again.
    ReEnable(Name),
    /// Its countdown began with this pass (at `since`): say so, once.
    Countdown {
        /// The consumer.
        name: Name,
        /// The pass the countdown began with.
        since: Instant,
    },
    /// Its countdown ended without retiring it, for this reason.
    Cancel(Name, Cancelled),
}

/// Why a countdown ended without a retirement.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Cancelled {
    /// The contributions file lists it again.
    Listed,
    /// The backend no longer holds it (or holds it disabled: retired by
    /// hand): nothing is left to retire.
    NotHeld,
}

impl Cancelled {
    /// For a person, as the `retirement` event's detail.
    pub(crate) fn detail(self) -> &'static str {
        match self {
            Cancelled::Listed => "listed again before it was retired: nothing was disabled",
            Cancelled::NotHeld => "no longer held active at the backend: nothing is left to retire",
        }
    }
}

/// What a person's approval leads to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Approval {
    /// Retire the withdrawn consumer now.
    RetireNow(Name),
    /// Delete the retired consumer's data.
    Delete(Name),
    /// Refused, with a reason a person understands.
    Refused(String),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Missing {
    first: Instant,
    passes: u32,
}

/// Retirement state of every held, withdrawn consumer.
#[derive(Clone, Debug, Default)]
pub(crate) struct RetirementState {
    missing: NameMap<Missing>,
}

impl RetirementState {
    /// Nothing missing yet, as at provider start.
    pub(crate) fn new() -> RetirementState {
        RetirementState::default()
    }

    /// How many withdrawn consumers are held and not retired yet.
    pub(crate) fn retiring(&self) -> usize {
        self.missing.len()
    }

    /// How many counted passes `name` has been missing for, if it is pending.
    #[cfg(test)]
    pub(crate) fn missing_passes(&self, name: &Name) -> Option<u32> {
        self.missing.get(name).map(|m| m.passes)
    }

    /// One pass: `listed` from the contributions file, `held` from the
    /// backend. `None` for either means it could not be read this pass: the
    /// pass then counts for nothing and no action is taken.
    pub(crate) fn pass(
        &mut self,
        listed: Option<&NameSet>,
        held: Option<&[Held]>,
        now: Instant,
        rules: &RetireRules,
    ) -> Vec<Action> {
        let (Some(listed), Some(held)) = (listed, held) else {
            return Vec::new();
        };
        let mut actions = Vec::new();
        let mut still_missing =
            NameMap::with_capacity_and_hasher(self.missing.len(), Default::default());
        for h in held {
            match (listed.contains(&h.name), h.retired) {
                (true, true) => actions.push(Action::ReEnable(h.name.clone())),
                (true, false) | (false, true) => {}
                (false, false) => {
                    let mut m = match self.missing.get(&h.name) {
                        Some(m) => *m,
                        None => {
                            actions.push(Action::Countdown {
                                name: h.name.clone(),
                                since: now,
                            });
                            Missing {
                                first: now,
                                passes: 0,
                            }
                        }
                    };
                    m.passes += 1;
                    if m.passes >= rules.after_passes
                        && now.saturating_duration_since(m.first) >= rules.after
                    {
                        actions.push(Action::Retire(h.name.clone()));
                    }
                    still_missing.insert(h.name.clone(), m);
                }
            }
        }
        // A countdown that ended without a retirement (one retired keeps
        // its count until the provider says it did, [`RetirementState::retired`]).
        let mut ended: Vec<&Name> = self
            .missing
            .keys()
            .filter(|name| !still_missing.contains_key(*name))
            .collect();
        ended.sort_unstable();
        for name in ended {
            let why = match listed.contains(name) {
                true => Cancelled::Listed,
                false => Cancelled::NotHeld,
            };
            actions.push(Action::Cancel(name.clone(), why));
        }
        self.missing = still_missing;
        actions
    }

    /// The provider retired `name` (on schedule or on approval): forget its count.
    pub(crate) fn retired(&mut self, name: &Name) {
        self.missing.remove(name);
    }

    /// A person's approval for `name`, given whether it is listed and what the
    /// backend holds for it (`None`: nothing).
    pub(crate) fn approve(
        &self,
        name: &Name,
        delete: bool,
        listed: bool,
        held: Option<&Held>,
    ) -> Approval {
        let Some(held) = held else {
            return Approval::Refused(format!(
                "{name} is unknown: this provider holds no provision for it"
            ));
        };
        if listed {
            return Approval::Refused(format!(
                "{name} is still listed in the contributions file: only a withdrawn consumer can be retired or deleted"
            ));
        }
        match (delete, held.retired) {
            (false, false) => Approval::RetireNow(name.clone()),
            (false, true) => Approval::Refused(format!(
                "{name} is already retired; approve with delete to delete its data"
            )),
            (true, true) => Approval::Delete(name.clone()),
            (true, false) => Approval::Refused(format!(
                "{name} is not retired yet: its data is deleted only after it is retired (approve without delete to retire it now)"
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(s: &str) -> Name {
        Name::parse(s).unwrap()
    }

    fn rules() -> RetireRules {
        RetireRules::default()
    }

    /// Runs passes every `every` with `gone` held and withdrawn; returns the
    /// time (from start) of the pass that retired it.
    fn retire_time(every: Duration, rules: &RetireRules) -> Duration {
        let gone = n("gone");
        let held = [Held::active(gone.clone()), Held::active(n("kept"))];
        let kept = n("kept");
        let listed: NameSet = [kept.clone()].into_iter().collect();
        let mut r = RetirementState::new();
        let start = Instant::now();
        for i in 0..10_000u32 {
            let now = start + every * i;
            let actions = r.pass(Some(&listed), Some(&held), now, rules);
            if i == 0 {
                assert_eq!(
                    actions,
                    vec![Action::Countdown {
                        name: gone.clone(),
                        since: now
                    }]
                );
                continue;
            }
            if !actions.is_empty() {
                assert_eq!(actions, vec![Action::Retire(gone.clone())]);
                assert_eq!(rules.retire_at(start, every), now, "the estimate said");
                return now - start;
            }
        }
        panic!("never retired");
    }

    #[test]
    fn five_passes_before_ten_minutes_waits_for_ten_minutes() {
        let t = retire_time(Duration::from_secs(5), &rules());
        assert_eq!(t, Duration::from_secs(600));
    }

    #[test]
    fn ten_minutes_before_five_passes_waits_for_the_fifth_pass() {
        let t = retire_time(Duration::from_secs(300), &rules());
        // Passes at 0, 5, 10, 15, 20 minutes: the fifth is at 20 minutes.
        assert_eq!(t, Duration::from_secs(1200));
    }

    #[test]
    fn relisted_while_pending_resets_the_count_and_cancels_the_countdown() {
        let a = n("a");
        let held = [Held::active(a.clone())];
        let none = NameSet::default();
        let with_a: NameSet = [a.clone()].into_iter().collect();
        let mut r = RetirementState::new();
        let start = Instant::now();
        let step = Duration::from_secs(300);
        let countdown = |i: u32| Action::Countdown {
            name: a.clone(),
            since: start + step * i,
        };
        for i in 0..4 {
            let expected = if i == 0 { vec![countdown(0)] } else { vec![] };
            assert_eq!(
                r.pass(Some(&none), Some(&held), start + step * i, &rules()),
                expected
            );
        }
        assert_eq!(r.missing_passes(&a), Some(4));
        assert_eq!(
            r.pass(Some(&with_a), Some(&held), start + step * 4, &rules()),
            vec![Action::Cancel(a.clone(), Cancelled::Listed)]
        );
        assert_eq!(r.missing_passes(&a), None);
        // Withdrawn again: the count starts over, and so does the countdown.
        for i in 5..9 {
            let expected = if i == 5 { vec![countdown(5)] } else { vec![] };
            assert_eq!(
                r.pass(Some(&none), Some(&held), start + step * i, &rules()),
                expected
            );
        }
        assert_eq!(
            r.pass(Some(&none), Some(&held), start + step * 9, &rules()),
            vec![Action::Retire(a.clone())]
        );
    }

    #[test]
    fn relisted_when_retired_is_re_enabled() {
        let a = n("a");
        let with_a: NameSet = [a.clone()].into_iter().collect();
        let none = NameSet::default();
        let mut r = RetirementState::new();
        let now = Instant::now();
        assert_eq!(
            r.pass(
                Some(&with_a),
                Some(&[Held::retired(a.clone())]),
                now,
                &rules()
            ),
            vec![Action::ReEnable(a.clone())]
        );
        // Retired and still withdrawn: nothing to do, no count.
        assert!(r
            .pass(
                Some(&none),
                Some(&[Held::retired(a.clone())]),
                now,
                &rules()
            )
            .is_empty());
        assert_eq!(r.missing_passes(&a), None);
    }

    #[test]
    fn unreadable_passes_count_for_nothing() {
        let a = n("a");
        let held = [Held::active(a.clone())];
        let none = NameSet::default();
        let mut r = RetirementState::new();
        let start = Instant::now();
        // An hour of passes in which either input could not be read.
        for i in 0..720u32 {
            let now = start + Duration::from_secs(5) * i;
            let (l, h) = if i % 2 == 0 {
                (None, Some(&held[..]))
            } else {
                (Some(&none), None)
            };
            assert!(r.pass(l, h, now, &rules()).is_empty());
        }
        assert_eq!(r.missing_passes(&a), None);
    }

    #[test]
    fn no_longer_held_is_forgotten_and_its_countdown_cancelled() {
        let a = n("a");
        let none = NameSet::default();
        let mut r = RetirementState::new();
        let now = Instant::now();
        r.pass(Some(&none), Some(&[Held::active(a.clone())]), now, &rules());
        assert_eq!(r.missing_passes(&a), Some(1));
        assert_eq!(
            r.pass(Some(&none), Some(&[]), now, &rules()),
            vec![Action::Cancel(a.clone(), Cancelled::NotHeld)]
        );
        assert_eq!(r.missing_passes(&a), None);
        // Held again (and still withdrawn), then found disabled by hand.
        r.pass(Some(&none), Some(&[Held::active(a.clone())]), now, &rules());
        assert_eq!(
            r.pass(
                Some(&none),
                Some(&[Held::retired(a.clone())]),
                now,
                &rules()
            ),
            vec![Action::Cancel(a.clone(), Cancelled::NotHeld)]
        );
    }

    /// Each countdown is said once, when it begins; passes that count for
    /// nothing neither say it again nor cancel it; retiring ends it
    /// without a cancellation.
    #[test]
    fn a_countdown_is_said_once_and_retiring_ends_it_silently() {
        let a = n("a");
        let mut held = [Held::active(a.clone())];
        let none = NameSet::default();
        let mut r = RetirementState::new();
        let start = Instant::now();
        let every = Duration::from_secs(60);
        let mut said = Vec::new();
        for i in 0..20u32 {
            let now = start + every * i;
            // Every third pass cannot read the held list.
            let h = (i % 3 != 2).then_some(&held[..]);
            let actions = r.pass(Some(&none), h, now, &rules());
            for action in actions {
                if let Action::Retire(name) = &action {
                    r.retired(name);
                    held = [Held::retired(name.clone())];
                }
                said.push((i, action));
            }
        }
        assert_eq!(
            said,
            vec![
                (
                    0,
                    Action::Countdown {
                        name: a.clone(),
                        since: start
                    }
                ),
                (10, Action::Retire(a.clone())),
                // Retired: the backend holds it disabled; no cancellation,
                // no new countdown.
            ]
        );
    }

    #[test]
    fn retire_at_is_the_pass_that_meets_both_thresholds() {
        let start = Instant::now();
        let s = Duration::from_secs;
        // (pass every, after passes, after, retired that long after the first pass)
        let cases = [
            (s(5), 5, s(600), s(600)),
            (s(300), 5, s(600), s(1200)),
            (s(7), 5, s(600), s(602)),
            (s(5), 1, s(0), s(0)),
            (s(5), 0, s(10), s(10)),
            (Duration::ZERO, 5, s(600), s(600)),
        ];
        for (every, after_passes, after, expected) in cases {
            let rules = RetireRules {
                after_passes,
                after,
            };
            assert_eq!(
                rules.retire_at(start, every) - start,
                expected,
                "{every:?} {after_passes} {after:?}"
            );
        }
        // The machine agrees with the estimate where passes are regular.
        for every in [s(5), s(7), s(300)] {
            assert_eq!(
                retire_time(every, &rules()),
                rules().retire_at(start, every) - start
            );
        }
    }

    #[test]
    fn listed_consumers_never_retire() {
        let a = n("a");
        let with_a: NameSet = [a.clone()].into_iter().collect();
        let mut r = RetirementState::new();
        let start = Instant::now();
        for i in 0..1000u32 {
            let now = start + Duration::from_secs(60) * i;
            assert!(r
                .pass(
                    Some(&with_a),
                    Some(&[Held::active(a.clone())]),
                    now,
                    &rules()
                )
                .is_empty());
        }
    }

    #[test]
    fn approvals_and_every_refusal() {
        let r = RetirementState::new();
        let a = n("a");
        let active = Held::active(a.clone());
        let retired = Held::retired(a.clone());
        assert_eq!(
            r.approve(&a, false, false, Some(&active)),
            Approval::RetireNow(a.clone())
        );
        assert_eq!(
            r.approve(&a, true, false, Some(&retired)),
            Approval::Delete(a.clone())
        );
        let refused = |ap: Approval, expected: &str| match ap {
            Approval::Refused(reason) => assert!(reason.contains(expected), "{reason}"),
            other => panic!("expected a refusal, got {other:?}"),
        };
        refused(r.approve(&a, false, false, None), "unknown");
        refused(r.approve(&a, true, false, None), "unknown");
        refused(r.approve(&a, false, true, Some(&active)), "still listed");
        refused(r.approve(&a, true, true, Some(&active)), "still listed");
        refused(r.approve(&a, true, true, Some(&retired)), "still listed");
        refused(r.approve(&a, true, false, Some(&active)), "not retired yet");
        refused(
            r.approve(&a, false, false, Some(&retired)),
            "already retired",
        );
    }
}
