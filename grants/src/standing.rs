//! The standing of one grant, on mesh-runtime's streak machinery
//! ([`Tracker`]) with a threshold of consecutive failed checks (pure).
//!
//! - `unreachable` once `unreachable_after` checks in a row failed, and
//!   again every `repeat_every` while it lasts; it carries the count, when
//!   the failures began and when it last worked (or never);
//! - `unchecked` when the grant cannot be checked (no port, consumer not
//!   running), when that begins and again every `repeat_every`; it ends a
//!   run of failures (what follows is not a consecutive failure) and never
//!   counts as one;
//! - `reachable` on the first success after `unreachable` or `unchecked`
//!   was said, and on the first success after start.

use std::time::Duration;

use mesh_runtime::streak::{Recovery, StreakRules, Threshold, Tracker};
use tokio::time::Instant;

/// Timings of a grant's standing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GrantRules {
    /// Failed checks in a row before `unreachable` is said.
    pub unreachable_after: u64,
    /// How often `unreachable` or `unchecked` is said again while it lasts.
    pub repeat_every: Duration,
}

impl Default for GrantRules {
    fn default() -> Self {
        GrantRules {
            unreachable_after: 3,
            repeat_every: Duration::from_secs(15 * 60),
        }
    }
}

impl GrantRules {
    fn news(&self) -> StreakRules {
        StreakRules {
            threshold: Threshold::Consecutive(self.unreachable_after),
            repeat_every: self.repeat_every,
        }
    }
}

/// What one check found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GrantCheck {
    /// A connection was made from the consumer's position.
    Reached,
    /// No connection: the error's message.
    Failed(String),
    /// Not checked: why (`no port`, `consumer not running`).
    Unchecked(String),
}

/// What a grant's standing publishes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GrantPublish {
    /// `unreachable`.
    Unreachable {
        /// Failed checks in a row.
        failures: u64,
        /// The first of them.
        failing_since: Instant,
        /// The last success since start, if any.
        last_reachable_at: Option<Instant>,
        /// The newest failure's message.
        error: String,
    },
    /// `reachable`, first success after start or after `unreachable` was published.
    Reachable(Recovery),
    /// `unchecked`, and why.
    Unchecked(String),
}

/// The standing of one grant since the agent started.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GrantStanding {
    tracker: Tracker<String>,
    /// The reason of the unchecked spell in progress and when it was last said.
    unchecked: Option<(String, Instant)>,
    last_reachable_at: Option<Instant>,
}

impl GrantStanding {
    /// A fresh standing, as at start.
    pub fn new() -> GrantStanding {
        GrantStanding::default()
    }

    /// Failed checks in a row so far (0 after a success or an unchecked spell).
    pub fn failures(&self) -> u64 {
        self.tracker.streak().map_or(0, |s| s.attempts)
    }

    /// Whether `unreachable` was said for the failures in progress.
    pub fn is_unreachable(&self) -> bool {
        self.tracker.streak().is_some_and(|s| s.said_at.is_some())
    }

    /// Whether the grant is in an unchecked spell.
    pub fn is_unchecked(&self) -> bool {
        self.unchecked.is_some()
    }

    /// Feeds one check at `now`; returns what to publish, if anything.
    pub fn observe(
        &mut self,
        check: GrantCheck,
        now: Instant,
        rules: &GrantRules,
    ) -> Option<GrantPublish> {
        match check {
            GrantCheck::Reached => {
                self.unchecked = None;
                self.last_reachable_at = Some(now);
                self.tracker.succeed().map(GrantPublish::Reachable)
            }
            GrantCheck::Failed(error) => {
                self.unchecked = None;
                let last_reachable_at = self.last_reachable_at;
                let streak = self.tracker.fail(now, &rules.news(), String::new, |kept| {
                    if *kept != error {
                        kept.clone_from(&error);
                    }
                })?;
                Some(GrantPublish::Unreachable {
                    failures: streak.attempts,
                    failing_since: streak.since,
                    last_reachable_at,
                    error: streak.detail.clone(),
                })
            }
            GrantCheck::Unchecked(reason) => {
                self.tracker.interrupt();
                let due = match &self.unchecked {
                    Some((said, at)) => {
                        *said != reason || now.saturating_duration_since(*at) >= rules.repeat_every
                    }
                    None => true,
                };
                if !due {
                    return None;
                }
                self.tracker.mark_reported();
                self.unchecked = Some((reason.clone(), now));
                Some(GrantPublish::Unchecked(reason))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const EVERY: Duration = Duration::from_secs(30);

    fn failed() -> GrantCheck {
        GrantCheck::Failed("connect timed out after 3s".into())
    }

    /// Feeds `checks` one `EVERY` apart; returns (check number, event) published.
    fn drive(s: &mut GrantStanding, start: Instant, checks: &[GrantCheck]) -> Vec<(usize, String)> {
        checks
            .iter()
            .enumerate()
            .filter_map(|(i, c)| {
                let now = start + EVERY * i as u32;
                s.observe(c.clone(), now, &GrantRules::default())
                    .map(|w| (i, short(&w, start)))
            })
            .collect()
    }

    fn short(due: &GrantPublish, start: Instant) -> String {
        match due {
            GrantPublish::Unreachable {
                failures,
                failing_since,
                last_reachable_at,
                ..
            } => format!(
                "unreachable {failures} since {}s last {:?}",
                (*failing_since - start).as_secs(),
                last_reachable_at.map(|t| (t - start).as_secs())
            ),
            GrantPublish::Reachable(g) => format!("reachable {g:?}"),
            GrantPublish::Unchecked(r) => format!("unchecked {r}"),
        }
    }

    #[test]
    fn standing_table() {
        use GrantCheck::Reached as R;
        let u = || GrantCheck::Unchecked("consumer not running".into());
        let f = failed;
        type Case = (Vec<GrantCheck>, Vec<(usize, &'static str)>);
        let cases: Vec<Case> = vec![
            // First success after start, then quiet.
            (vec![R, R, R], vec![(0, "reachable FirstSuccessAfterStart")]),
            // Never worked: unreachable at the third failure, last null.
            (
                vec![f(), f(), f(), f()],
                vec![(2, "unreachable 3 since 0s last None")],
            ),
            // A restarting provider: one failed check says nothing.
            (
                vec![R, f(), R, f(), f(), R],
                vec![(0, "reachable FirstSuccessAfterStart")],
            ),
            // Unreachable after working: the count and when it last worked.
            (
                vec![R, f(), f(), f(), f(), R],
                vec![
                    (0, "reachable FirstSuccessAfterStart"),
                    (3, "unreachable 3 since 30s last Some(0)"),
                    (5, "reachable Success"),
                ],
            ),
            // Not running: unchecked, never unreachable; it breaks a run.
            (
                vec![f(), f(), u(), u(), f(), f(), R],
                vec![
                    (2, "unchecked consumer not running"),
                    (6, "reachable Success"),
                ],
            ),
            // A first success after an unchecked spell at start.
            (
                vec![u(), R],
                vec![
                    (0, "unchecked consumer not running"),
                    (1, "reachable Success"),
                ],
            ),
            // No port: said once (until the repeat), never reachable.
            (
                vec![GrantCheck::Unchecked("no port".into()); 5],
                vec![(0, "unchecked no port")],
            ),
        ];
        for (checks, expected) in cases {
            let start = Instant::now();
            let mut s = GrantStanding::new();
            let said = drive(&mut s, start, &checks);
            let said: Vec<(usize, &str)> = said.iter().map(|(i, w)| (*i, w.as_str())).collect();
            assert_eq!(said, expected, "{checks:?}");
        }
    }

    #[test]
    fn count_rises_and_falls() {
        let start = Instant::now();
        let mut s = GrantStanding::new();
        let r = GrantRules::default();
        s.observe(GrantCheck::Reached, start, &r);
        s.observe(failed(), start + EVERY, &r);
        assert_eq!(s.failures(), 1);
        s.observe(failed(), start + EVERY * 2, &r);
        assert_eq!(s.failures(), 2);
        assert!(!s.is_unreachable());
        s.observe(GrantCheck::Reached, start + EVERY * 3, &r);
        assert_eq!(s.failures(), 0);
    }

    #[test]
    fn repeats_every_fifteen_minutes_while_it_lasts() {
        let start = Instant::now();
        let mut s = GrantStanding::new();
        // One hour of failed checks every 30 s.
        let said = drive(&mut s, start, &vec![failed(); 121]);
        let at: Vec<u64> = said.iter().map(|(i, _)| *i as u64 * 30).collect();
        assert_eq!(at, vec![60, 960, 1860, 2760]);
        let mut u = GrantStanding::new();
        let said = drive(
            &mut u,
            start,
            &vec![GrantCheck::Unchecked("no port".into()); 61],
        );
        let at: Vec<u64> = said.iter().map(|(i, _)| *i as u64 * 30).collect();
        assert_eq!(at, vec![0, 900, 1800]);
    }
}
