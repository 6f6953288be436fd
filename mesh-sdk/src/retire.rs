//! Retirement: what happens to a consumer the mesh stopped asking for, as a
//! pure state machine. No I/O; `now` is passed in.
//!
//! A consumer the provider still holds but the mesh no longer lists is
//! retired (disabled, reversible) after `after_passes` passes AND `after`
//! time, or at once on a person's approval. A retired consumer listed again
//! is re-enabled. Deletion happens only on a person's approval of a retired
//! consumer. A pass in which the contributions file or the held list could
//! not be read counts for nothing; a restart starts every count over.

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
pub enum Action {
    /// Retire it: withdrawn long enough.
    Retire(Name),
    /// Enable it again: listed again.
    ReEnable(Name),
}

/// What a person's approval leads to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Approval {
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
pub struct Retirement {
    missing: NameMap<Missing>,
}

impl Retirement {
    /// Nothing missing yet, as at provider start.
    pub fn new() -> Retirement {
        Retirement::default()
    }

    /// How many withdrawn consumers are held and not retired yet.
    pub fn retiring(&self) -> usize {
        self.missing.len()
    }

    /// How many counted passes `name` has been missing for, if it is pending.
    #[cfg(test)]
    pub fn missing_passes(&self, name: &Name) -> Option<u32> {
        self.missing.get(name).map(|m| m.passes)
    }

    /// One pass: `listed` from the contributions file, `held` from the
    /// backend. `None` for either means it could not be read this pass: the
    /// pass then counts for nothing and no action is taken.
    pub fn pass(
        &mut self,
        listed: Option<&NameSet<'_>>,
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
                    let mut m = self.missing.get(&h.name).copied().unwrap_or(Missing {
                        first: now,
                        passes: 0,
                    });
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
        self.missing = still_missing;
        actions
    }

    /// The provider retired `name` (on schedule or on approval): forget its count.
    pub fn retired(&mut self, name: &Name) {
        self.missing.remove(name);
    }

    /// A person's approval for `name`, given whether it is listed and what the
    /// backend holds for it (`None`: nothing).
    pub fn approve(
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
        let listed: NameSet<'_> = [&kept].into_iter().collect();
        let mut r = Retirement::new();
        let start = Instant::now();
        for i in 0..10_000u32 {
            let now = start + every * i;
            let actions = r.pass(Some(&listed), Some(&held), now, rules);
            if !actions.is_empty() {
                assert_eq!(actions, vec![Action::Retire(gone.clone())]);
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
    fn relisted_while_pending_resets_the_count_silently() {
        let a = n("a");
        let held = [Held::active(a.clone())];
        let none: NameSet<'_> = NameSet::default();
        let with_a: NameSet<'_> = [&a].into_iter().collect();
        let mut r = Retirement::new();
        let start = Instant::now();
        let step = Duration::from_secs(300);
        for i in 0..4 {
            assert!(r
                .pass(Some(&none), Some(&held), start + step * i, &rules())
                .is_empty());
        }
        assert_eq!(r.missing_passes(&a), Some(4));
        assert!(r
            .pass(Some(&with_a), Some(&held), start + step * 4, &rules())
            .is_empty());
        assert_eq!(r.missing_passes(&a), None);
        // Withdrawn again: the count starts over.
        for i in 5..9 {
            assert!(r
                .pass(Some(&none), Some(&held), start + step * i, &rules())
                .is_empty());
        }
        assert_eq!(
            r.pass(Some(&none), Some(&held), start + step * 9, &rules()),
            vec![Action::Retire(a.clone())]
        );
    }

    #[test]
    fn relisted_when_retired_is_re_enabled() {
        let a = n("a");
        let with_a: NameSet<'_> = [&a].into_iter().collect();
        let none: NameSet<'_> = NameSet::default();
        let mut r = Retirement::new();
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
        let none: NameSet<'_> = NameSet::default();
        let mut r = Retirement::new();
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
    fn no_longer_held_is_forgotten() {
        let a = n("a");
        let none: NameSet<'_> = NameSet::default();
        let mut r = Retirement::new();
        let now = Instant::now();
        r.pass(Some(&none), Some(&[Held::active(a.clone())]), now, &rules());
        assert_eq!(r.missing_passes(&a), Some(1));
        r.pass(Some(&none), Some(&[]), now, &rules());
        assert_eq!(r.missing_passes(&a), None);
    }

    #[test]
    fn listed_consumers_never_retire() {
        let a = n("a");
        let with_a: NameSet<'_> = [&a].into_iter().collect();
        let mut r = Retirement::new();
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
        let r = Retirement::new();
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
        let refused = |ap: Approval, words: &str| match ap {
            Approval::Refused(reason) => assert!(reason.contains(words), "{reason}"),
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
