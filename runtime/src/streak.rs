//! When a run of failures is news, as a pure state machine shared by the
//! provider's loop (per consumer: `failing` once it has failed for
//! `--failing-after`) and `mesh-grants` (per grant: `unreachable` once
//! `--unreachable-after` checks in a row failed).
//!
//! A [`Tracker`] counts consecutive failures in a [`Streak`], reports it once
//! its [`Threshold`] is reached and again every `repeat_every` while it
//! lasts; the first success after a streak was reported, and the first success
//! since start (a restarted program has forgotten what it reported), are news
//! too ([`Recovery`]). No I/O; `now` is passed in, measured on tokio's
//! clock.

use std::time::Duration;

use tokio::time::Instant;

/// When a run of consecutive failures becomes news.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Threshold {
    /// Once it has lasted this long with no success in between (the
    /// provisioner loop's `failing_after`).
    Elapsed(Duration),
    /// Once this many checks in a row failed (a grant's `unreachable_after`).
    Consecutive(u64),
}

/// When a [`Tracker`] reports a streak: its threshold, then every `repeat_every`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StreakRules {
    /// When a streak is first reported.
    pub threshold: Threshold,
    /// How often it is reported again while it lasts.
    pub repeat_every: Duration,
}

/// A run of consecutive failures (or of any other trouble a [`Tracker`]
/// follows), with the newest one's message. Its `detail` is read through it
/// (`streak.class` for a `Failure`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Streak<D> {
    /// First failure since the last success.
    pub since: Instant,
    /// Failures since `since`, the newest included.
    pub attempts: u64,
    /// The newest failure's message.
    pub detail: D,
    /// When the streak was last reported, if it was.
    pub said_at: Option<Instant>,
}

impl<D> Streak<D> {
    /// Whether the streak is to be reported at `now`: its threshold reached and
    /// never reported, or reported `repeat_every` ago or earlier.
    pub fn due(&self, now: Instant, rules: &StreakRules) -> bool {
        match self.said_at {
            None => match rules.threshold {
                Threshold::Elapsed(after) => now.saturating_duration_since(self.since) >= after,
                Threshold::Consecutive(n) => self.attempts >= n.max(1),
            },
            Some(said) => now.saturating_duration_since(said) >= rules.repeat_every,
        }
    }
}

/// Why a success is news.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Recovery {
    /// The first success after a streak was reported.
    Success,
    /// The first success since start (a restarted program has forgotten
    /// what it reported).
    FirstSuccessAfterStart,
}

/// The pure standing machinery shared by the provisioner loop (per
/// consumer) and `mesh-grants` (per grant): consecutive failures counted in
/// a [`Streak`], reported once its [`Threshold`] is reached and again every
/// `repeat_every`; the first success after a streak was reported, and the first
/// success since start, are news ([`Recovery`]). No I/O; `now` is passed in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tracker<D> {
    streak: Option<Streak<D>>,
    /// A streak (or anything the owner marks) was reported since the last success.
    reported: bool,
    /// A success was seen since start.
    succeeded: bool,
}

impl<D> Default for Tracker<D> {
    fn default() -> Self {
        Tracker {
            streak: None,
            reported: false,
            succeeded: false,
        }
    }
}

impl<D> Tracker<D> {
    /// A fresh tracker, as at start.
    pub fn new() -> Tracker<D> {
        Tracker::default()
    }

    /// A tracker that has nothing to report and has seen a success already (as after
    /// a retirement).
    pub fn after_success() -> Tracker<D> {
        Tracker {
            succeeded: true,
            ..Tracker::default()
        }
    }

    /// The streak in progress, if any.
    pub fn streak(&self) -> Option<&Streak<D>> {
        self.streak.as_ref()
    }

    /// Whether something was reported since the last success.
    pub fn is_reported(&self) -> bool {
        self.reported
    }

    /// Marks that something other than a streak was reported (so the next
    /// success is news, [`Recovery::Success`]).
    pub fn mark_reported(&mut self) {
        self.reported = true;
    }

    /// Ends the streak in progress without a success (what follows is no
    /// longer a consecutive failure).
    pub fn interrupt(&mut self) {
        self.streak = None;
    }

    /// A success: the streak ends; returns the recovery when it is news.
    pub fn succeed(&mut self) -> Option<Recovery> {
        self.streak = None;
        let recovery = if self.reported {
            Some(Recovery::Success)
        } else if !self.succeeded {
            Some(Recovery::FirstSuccessAfterStart)
        } else {
            None
        };
        self.reported = false;
        self.succeeded = true;
        recovery
    }

    /// A failure at `now`: a streak begins with `begin()` or goes on, its
    /// detail updated by `update`; returns the streak when it is to be reported
    /// (then marked reported).
    pub fn fail(
        &mut self,
        now: Instant,
        rules: &StreakRules,
        begin: impl FnOnce() -> D,
        update: impl FnOnce(&mut D),
    ) -> Option<&Streak<D>> {
        let streak = self.streak.get_or_insert_with(|| Streak {
            since: now,
            attempts: 0,
            detail: begin(),
            said_at: None,
        });
        streak.attempts += 1;
        update(&mut streak.detail);
        if !streak.due(now, rules) {
            return None;
        }
        streak.said_at = Some(now);
        self.reported = true;
        Some(streak)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn consecutive_threshold_counts_checks_not_time() {
        let rules = StreakRules {
            threshold: Threshold::Consecutive(3),
            repeat_every: Duration::from_secs(900),
        };
        let start = Instant::now();
        let mut t: Tracker<&str> = Tracker::new();
        let mut said = Vec::new();
        for (i, ok) in [true, false, false, true, false, false, false, false]
            .into_iter()
            .enumerate()
        {
            let now = start + Duration::from_secs(30 * i as u64);
            if ok {
                said.push((i, format!("{:?}", t.succeed())));
            } else if let Some(s) = t.fail(now, &rules, || "x", |_| {}) {
                said.push((i, format!("failing {}", s.attempts)));
            }
        }
        assert_eq!(
            said,
            vec![
                (0, "Some(FirstSuccessAfterStart)".to_owned()),
                (3, "None".to_owned()),
                (6, "failing 3".to_owned()),
            ]
        );
        assert_eq!(t.streak().unwrap().attempts, 4);
        assert_eq!(t.succeed(), Some(Recovery::Success));
    }

    #[test]
    fn interrupt_ends_the_streak_and_mark_said_makes_the_next_success_news() {
        let rules = StreakRules {
            threshold: Threshold::Consecutive(2),
            repeat_every: Duration::from_secs(900),
        };
        let now = Instant::now();
        let mut t: Tracker<()> = Tracker::new();
        assert_eq!(t.succeed(), Some(Recovery::FirstSuccessAfterStart));
        assert!(t.fail(now, &rules, || (), |_| {}).is_none());
        t.interrupt();
        assert!(t.fail(now, &rules, || (), |_| {}).is_none(), "counted anew");
        t.mark_reported();
        assert_eq!(t.succeed(), Some(Recovery::Success));
        assert_eq!(t.succeed(), None);
    }
}
