//! Standing: what the loop has to publish about one consumer, as a pure state
//! machine. No I/O; `now` is passed in.
//!
//! Rules (docs/contracts/loop.md#standing-what-is-said-per-consumer):
//! - failed for `failing_after` with no success in between: publish `failing`,
//!   and again every `repeat_every` while it lasts;
//! - the first success after `failing` was published: publish `recovered` (`success`);
//! - the first success of each consumer after the provider starts: publish
//!   `recovered` (`first-success-after-start`), because a restarted provider
//!   has forgotten what it published;
//! - retired: publish `recovered` (`retired`);
//! - re-enabled (listed again after it was retired): nothing more than the
//!   `retirement` event; its first success publishes no `recovered`.

use std::time::Duration;

use mesh_protocol::event::RecoveredReason;
use mesh_protocol::Class;
use mesh_runtime::streak::{Recovery, Streak, StreakRules, Threshold, Tracker};
use tokio::time::Instant;

/// Timings of the standing rules.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StandingRules {
    /// How long a consumer fails without one success before `failing` is published.
    pub failing_after: Duration,
    /// How often `failing` is published again while the failure lasts.
    pub repeat_every: Duration,
}

impl Default for StandingRules {
    fn default() -> Self {
        StandingRules {
            failing_after: Duration::from_secs(5 * 60),
            repeat_every: Duration::from_secs(15 * 60),
        }
    }
}

/// The result of one attempt (read the secret, make if missing, check).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AttemptOutcome<'a> {
    /// All three steps succeeded.
    Success,
    /// One step failed.
    Failure {
        /// The failure's class.
        class: Class,
        /// The failure's message, already redacted and cut.
        error: &'a str,
    },
}

/// What a standing publishes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Publish {
    /// The consumer keeps failing.
    Failing {
        /// Time of the first failure since the last success (or since start).
        since: Instant,
        /// Failed attempts since `since`, this one included.
        attempts: u64,
        /// Class of the newest failure.
        class: Class,
        /// Message of the newest failure (redacted, cut).
        error: String,
    },
    /// The consumer recovered (or was retired).
    Recovered(RecoveredReason),
}

/// What a failure of the provisioner loop carries: its class and message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cause {
    /// Class of the newest failure.
    pub class: Class,
    /// Message of the newest failure.
    pub error: String,
}

/// The failure in progress of one consumer (its class and message are the
/// streak's detail: `failure.detail.class`, `failure.detail.error`).
// Public through `mesh_sdk::internals` (feature `internals`) only.
#[cfg_attr(not(feature = "internals"), allow(unreachable_pub))]
pub type Failure = Streak<Cause>;

/// The standing of one consumer since the provider started: a [`Tracker`]
/// whose threshold is elapsed time (`failing_after`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Standing {
    tracker: Tracker<Cause>,
}

impl StandingRules {
    fn news(&self) -> StreakRules {
        StreakRules {
            threshold: Threshold::Elapsed(self.failing_after),
            repeat_every: self.repeat_every,
        }
    }
}

impl Standing {
    /// A fresh standing, as at provider start.
    pub fn new() -> Standing {
        Standing::default()
    }

    /// The standing of a consumer the loop just re-enabled: its
    /// `retirement` event (`re-enabled`) said it, so its first success
    /// publishes nothing (no `first-success-after-start`: nothing started);
    /// a failure is news after `failing_after`, as for any consumer.
    pub fn re_enabled() -> Standing {
        Standing {
            tracker: Tracker::after_success(),
        }
    }

    /// The failure in progress, if any.
    pub fn failure(&self) -> Option<&Failure> {
        self.tracker.streak()
    }

    /// Whether `failing` was published and not yet followed by `recovered`.
    #[cfg(test)]
    pub fn is_failing_published(&self) -> bool {
        self.tracker.is_reported()
    }

    /// Feeds one attempt's outcome at `now`; returns what to publish, if anything.
    pub fn observe(
        &mut self,
        outcome: AttemptOutcome<'_>,
        now: Instant,
        rules: &StandingRules,
    ) -> Option<Publish> {
        match outcome {
            AttemptOutcome::Success => {
                let recovery = self.tracker.succeed();
                // The planted mutation `mesh_mutant="no-restart-recovered"`
                // (scripts/mutants): a restart's first success is not said.
                #[cfg(mesh_mutant = "no-restart-recovered")]
                let recovery = recovery.filter(|r| *r != Recovery::FirstSuccessAfterStart);
                recovery.map(|recovery| {
                    Publish::Recovered(match recovery {
                        Recovery::Success => RecoveredReason::Success,
                        Recovery::FirstSuccessAfterStart => RecoveredReason::FirstSuccessAfterStart,
                    })
                })
            }
            AttemptOutcome::Failure { class, error } => {
                let failure = self.tracker.fail(
                    now,
                    &rules.news(),
                    || Cause {
                        class,
                        error: String::new(),
                    },
                    |cause| {
                        cause.class = class;
                        if cause.error != error {
                            error.clone_into(&mut cause.error);
                        }
                    },
                )?;
                Some(Publish::Failing {
                    since: failure.since,
                    attempts: failure.attempts,
                    class: failure.detail.class,
                    error: failure.detail.error.clone(),
                })
            }
        }
    }

    /// The consumer was withdrawn and the backend does not hold it: publish
    /// `recovered` (`withdrawn`) when `failing` was published for it since start
    /// (else nothing); the caller forgets the standing.
    pub fn withdraw(&self) -> Option<Publish> {
        self.tracker
            .is_reported()
            .then_some(Publish::Recovered(RecoveredReason::Withdrawn))
    }

    /// The consumer was retired: publish `recovered` (`retired`) and forget it.
    pub fn retire(&mut self) -> Publish {
        self.tracker = Tracker::after_success();
        Publish::Recovered(RecoveredReason::Retired)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PASS: Duration = Duration::from_secs(5);

    fn rules() -> StandingRules {
        StandingRules::default()
    }

    fn fail(class: Class) -> AttemptOutcome<'static> {
        AttemptOutcome::Failure {
            class,
            error: "password authentication failed",
        }
    }

    /// Drives `standing` with `outcomes` one pass apart from `start`; returns
    /// (seconds since start, event) for every event published.
    fn drive(
        standing: &mut Standing,
        start: Instant,
        outcomes: &[AttemptOutcome<'_>],
    ) -> Vec<(u64, Publish)> {
        outcomes
            .iter()
            .enumerate()
            .filter_map(|(i, o)| {
                let now = start + PASS * i as u32;
                standing
                    .observe(*o, now, &rules())
                    .map(|w| ((now - start).as_secs(), w))
            })
            .collect()
    }

    #[test]
    fn first_success_after_start_says_recovered_once() {
        let start = Instant::now();
        let mut s = Standing::new();
        let published = drive(&mut s, start, &[AttemptOutcome::Success; 10]);
        assert_eq!(
            published,
            vec![(
                0,
                Publish::Recovered(RecoveredReason::FirstSuccessAfterStart)
            )]
        );
    }

    #[test]
    fn a_re_enabled_consumer_says_nothing_on_success_and_failing_after_five_minutes() {
        let start = Instant::now();
        let mut s = Standing::re_enabled();
        assert_eq!(drive(&mut s, start, &[AttemptOutcome::Success; 10]), vec![]);
        let mut outcomes = vec![AttemptOutcome::Success];
        outcomes.extend([fail(Class::Unreachable); 61]);
        outcomes.push(AttemptOutcome::Success);
        let published = drive(&mut Standing::re_enabled(), start, &outcomes);
        let at: Vec<u64> = published.iter().map(|(t, _)| *t).collect();
        assert_eq!(at, vec![305, 310], "failing after 5 min, then recovered");
        assert_eq!(published[1].1, Publish::Recovered(RecoveredReason::Success));
    }

    #[test]
    fn failing_said_after_five_minutes_without_success() {
        let start = Instant::now();
        let mut s = Standing::new();
        // 60 failures: t = 0 .. 295 s; the 61st at 300 s publishes failing.
        let outcomes = vec![fail(Class::CredentialsRejected); 61];
        let published = drive(&mut s, start, &outcomes);
        assert_eq!(
            published,
            vec![(
                300,
                Publish::Failing {
                    since: start,
                    attempts: 61,
                    class: Class::CredentialsRejected,
                    error: "password authentication failed".into()
                }
            )]
        );
    }

    #[test]
    fn not_said_just_before_five_minutes() {
        let start = Instant::now();
        let mut s = Standing::new();
        let outcomes = vec![fail(Class::Refused); 60];
        assert!(drive(&mut s, start, &outcomes).is_empty());
        let almost = start + Duration::from_secs(299) + Duration::from_millis(999);
        assert_eq!(s.observe(fail(Class::Refused), almost, &rules()), None);
    }

    #[test]
    fn a_success_inside_the_window_resets_it() {
        let start = Instant::now();
        let mut s = Standing::new();
        let mut outcomes = vec![AttemptOutcome::Success];
        outcomes.extend(vec![fail(Class::Unreachable); 50]); // 5 s .. 250 s
        outcomes.push(AttemptOutcome::Success); // 255 s
        outcomes.extend(vec![fail(Class::Unreachable); 61]); // 260 s .. 560 s
        let published = drive(&mut s, start, &outcomes);
        assert_eq!(published.len(), 2, "{published:?}");
        assert_eq!(
            published[0],
            (
                0,
                Publish::Recovered(RecoveredReason::FirstSuccessAfterStart)
            )
        );
        match &published[1] {
            (
                560,
                Publish::Failing {
                    since, attempts, ..
                },
            ) => {
                assert_eq!(*since, start + Duration::from_secs(260));
                assert_eq!(*attempts, 61);
            }
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn repeats_every_fifteen_minutes_exactly() {
        let start = Instant::now();
        let mut s = Standing::new();
        // 1 hour of failures, a pass every 5 s.
        let outcomes = vec![fail(Class::Unreachable); 12 * 60 + 1];
        let published = drive(&mut s, start, &outcomes);
        let times: Vec<u64> = published.iter().map(|(t, _)| *t).collect();
        assert_eq!(times, vec![300, 1200, 2100, 3000]);
        let attempts: Vec<u64> = published
            .iter()
            .map(|(_, w)| match w {
                Publish::Failing {
                    attempts, since, ..
                } => {
                    assert_eq!(*since, start);
                    *attempts
                }
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(attempts, vec![61, 241, 421, 601]);
    }

    #[test]
    fn recovered_success_after_failing_then_quiet() {
        let start = Instant::now();
        let mut s = Standing::new();
        let mut outcomes = vec![fail(Class::Refused); 61];
        outcomes.extend([AttemptOutcome::Success, AttemptOutcome::Success]);
        let published = drive(&mut s, start, &outcomes);
        assert_eq!(published.len(), 2);
        assert_eq!(
            published[1],
            (305, Publish::Recovered(RecoveredReason::Success))
        );
        assert!(!s.is_failing_published());
        assert!(s.failure().is_none());
    }

    #[test]
    fn success_after_recovery_and_short_failure_is_quiet() {
        let start = Instant::now();
        let mut s = Standing::new();
        let mut outcomes = vec![AttemptOutcome::Success];
        outcomes.extend(vec![fail(Class::Refused); 10]);
        outcomes.push(AttemptOutcome::Success);
        let published = drive(&mut s, start, &outcomes);
        assert_eq!(
            published,
            vec![(
                0,
                Publish::Recovered(RecoveredReason::FirstSuccessAfterStart)
            )]
        );
    }

    #[test]
    fn newest_class_and_message_are_carried() {
        let start = Instant::now();
        let mut s = Standing::new();
        let mut outcomes = vec![
            AttemptOutcome::Failure {
                class: Class::SecretUnreadable,
                error: "secret file missing",
            };
            30
        ];
        outcomes.extend(vec![
            AttemptOutcome::Failure {
                class: Class::Unreachable,
                error: "connection refused",
            };
            31
        ]);
        let published = drive(&mut s, start, &outcomes);
        assert_eq!(
            published,
            vec![(
                300,
                Publish::Failing {
                    since: start,
                    attempts: 61,
                    class: Class::Unreachable,
                    error: "connection refused".into()
                }
            )]
        );
    }

    #[test]
    fn a_second_failure_after_recovery_starts_a_new_window() {
        let start = Instant::now();
        let mut s = Standing::new();
        let mut outcomes = vec![fail(Class::Refused); 61];
        outcomes.push(AttemptOutcome::Success); // 305
        outcomes.extend(vec![fail(Class::Refused); 61]); // 310 .. 610
        let published = drive(&mut s, start, &outcomes);
        let times: Vec<u64> = published.iter().map(|(t, _)| *t).collect();
        assert_eq!(times, vec![300, 305, 610]);
    }

    #[test]
    fn irregular_passes_use_elapsed_time_not_counts() {
        let start = Instant::now();
        let mut s = Standing::new();
        let r = rules();
        assert_eq!(s.observe(fail(Class::Refused), start, &r), None);
        // One slow pass later, the window is over.
        let later = start + Duration::from_secs(400);
        assert!(matches!(
            s.observe(fail(Class::Refused), later, &r),
            Some(Publish::Failing { attempts: 2, .. })
        ));
        // Repeat is measured from when it was published.
        assert_eq!(
            s.observe(fail(Class::Refused), later + Duration::from_secs(899), &r),
            None
        );
        assert!(s
            .observe(fail(Class::Refused), later + Duration::from_secs(900), &r)
            .is_some());
    }

    #[test]
    fn retire_says_recovered_retired_and_forgets() {
        let start = Instant::now();
        let mut s = Standing::new();
        drive(&mut s, start, &vec![fail(Class::Refused); 61]);
        assert!(s.is_failing_published());
        assert_eq!(s.retire(), Publish::Recovered(RecoveredReason::Retired));
        assert!(!s.is_failing_published());
        assert!(s.failure().is_none());
        // Re-listed and succeeding later: nothing more to publish.
        assert_eq!(s.observe(AttemptOutcome::Success, start, &rules()), None);
    }

    #[test]
    fn custom_timings() {
        let r = StandingRules {
            failing_after: Duration::from_secs(5),
            repeat_every: Duration::from_secs(10),
        };
        let start = Instant::now();
        let mut s = Standing::new();
        let said: Vec<u64> = (0..=25)
            .filter_map(|sec| {
                let now = start + Duration::from_secs(sec);
                s.observe(fail(Class::Refused), now, &r).map(|_| sec)
            })
            .collect();
        assert_eq!(said, vec![5, 15, 25]);
    }
}
