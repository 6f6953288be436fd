//! What a client says about its connection to the bus while it is away, as
//! a pure state machine the event callback feeds (docs/contracts/metrics.md#logs).
//!
//! async-nats reports every failed round of connection attempts (every
//! 2 s at the longest reconnect delay) as a client error. Said each time,
//! that is a line every 2 s for as long as the bus is away, and says
//! nothing a person does not know after the first. So: the disconnect, or
//! the first failed attempt, is a warning; while the outage lasts, one
//! error every [`REPEAT_EVERY`] says since when and how many attempts
//! failed; the first connection after that says it is back and how long
//! it was away.

use std::time::Duration;

use tokio::time::Instant;

use crate::streak::{Recovery, StreakRules, Threshold, Tracker};

/// How often a lasting outage is said again.
pub(crate) const REPEAT_EVERY: Duration = Duration::from_secs(300);

/// The reconnect delay once the server refused the client's credentials
/// (an authorization violation), until it connects.
pub(crate) const REFUSED_RECONNECT: Duration = Duration::from_secs(30);

/// How an outage began.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Began {
    /// The connection was lost.
    Disconnected,
    /// A connection attempt failed (the bus was away from the start).
    Unreachable,
}

/// What to say about the connection.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Say {
    /// An outage began (a warning).
    Began(Began),
    /// The outage lasts (an error): it began `for_` ago, `attempts`
    /// connection attempts failed since.
    Lasts {
        /// How long the bus has been away.
        for_: Duration,
        /// Failed rounds of attempts since.
        attempts: u64,
    },
    /// Connected again after an outage that was said (info).
    Back {
        /// How long the bus was away.
        after: Duration,
        /// Failed rounds of attempts in that time.
        attempts: u64,
    },
    /// Connected for the first time (info).
    Connected,
    /// Nothing new (a failed attempt inside an outage already said).
    Nothing,
}

/// The connection's outage, if one is in progress.
#[derive(Debug)]
pub(crate) struct Outage {
    tracker: Tracker<Began>,
    rules: StreakRules,
}

impl Default for Outage {
    fn default() -> Self {
        Outage::new(REPEAT_EVERY)
    }
}

impl Outage {
    /// No outage yet; a lasting one is said again every `repeat_every`.
    pub(crate) fn new(repeat_every: Duration) -> Outage {
        Outage {
            tracker: Tracker::new(),
            rules: StreakRules {
                threshold: Threshold::Consecutive(1),
                repeat_every,
            },
        }
    }

    /// The connection was lost at `now`.
    pub(crate) fn disconnected(&mut self, now: Instant) -> Say {
        // A disconnect ends whatever was going on: a new outage begins.
        self.tracker.interrupt();
        self.failed(now, Began::Disconnected)
    }

    /// A round of connection attempts failed at `now`.
    pub(crate) fn attempt_failed(&mut self, now: Instant) -> Say {
        self.failed(now, Began::Unreachable)
    }

    fn failed(&mut self, now: Instant, began: Began) -> Say {
        let rules = self.rules;
        let Some(streak) = self.tracker.fail(now, &rules, || began, |_| {}) else {
            return Say::Nothing;
        };
        // The disconnect itself is no attempt.
        let attempts = streak.attempts - u64::from(streak.detail == Began::Disconnected);
        if streak.since == now {
            Say::Began(streak.detail)
        } else {
            Say::Lasts {
                for_: now.saturating_duration_since(streak.since),
                attempts,
            }
        }
    }

    /// Connected at `now`.
    pub(crate) fn connected(&mut self, now: Instant) -> Say {
        let outage = self
            .tracker
            .streak()
            .map(|s| (now.saturating_duration_since(s.since), s.attempts, s.detail));
        match (self.tracker.succeed(), outage) {
            (Some(Recovery::Success), Some((after, attempts, began))) => Say::Back {
                after,
                attempts: attempts - u64::from(began == Began::Disconnected),
            },
            (Some(Recovery::FirstSuccessAfterStart), None) => Say::Connected,
            // The first connection after failed attempts at start.
            (Some(Recovery::FirstSuccessAfterStart), Some((after, attempts, _))) => {
                Say::Back { after, attempts }
            }
            _ => Say::Connected,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Clone, Copy, Debug)]
    enum Step {
        Down,
        Fail,
        Up,
    }

    /// Steps 2 s apart; what is said at each.
    fn said(steps: &[Step]) -> Vec<Say> {
        let start = Instant::now();
        let mut outage = Outage::new(Duration::from_secs(10));
        steps
            .iter()
            .enumerate()
            .map(|(i, step)| {
                let now = start + Duration::from_secs(2 * i as u64);
                match step {
                    Step::Down => outage.disconnected(now),
                    Step::Fail => outage.attempt_failed(now),
                    Step::Up => outage.connected(now),
                }
            })
            .collect()
    }

    #[test]
    fn an_outage_is_said_when_it_begins_every_so_often_and_when_it_ends() {
        use Step::*;
        let s = |secs| Duration::from_secs(secs);
        let cases: &[(&[Step], &[Say])] = &[
            (&[Up], &[Say::Connected]),
            (
                &[Up, Down, Fail, Fail, Fail, Fail, Fail, Fail, Up],
                &[
                    Say::Connected,
                    Say::Began(Began::Disconnected),
                    Say::Nothing,
                    Say::Nothing,
                    Say::Nothing,
                    Say::Nothing,
                    // 10 s after the disconnect: 5 attempts failed.
                    Say::Lasts {
                        for_: s(10),
                        attempts: 5,
                    },
                    Say::Nothing,
                    Say::Back {
                        after: s(14),
                        attempts: 6,
                    },
                ],
            ),
            // Away from the start: the first failed attempt is said.
            (
                &[Fail, Fail, Up],
                &[
                    Say::Began(Began::Unreachable),
                    Say::Nothing,
                    Say::Back {
                        after: s(4),
                        attempts: 2,
                    },
                ],
            ),
            // A second outage is said again from its start.
            (
                &[Up, Down, Up, Down, Fail, Up],
                &[
                    Say::Connected,
                    Say::Began(Began::Disconnected),
                    Say::Back {
                        after: s(2),
                        attempts: 0,
                    },
                    Say::Began(Began::Disconnected),
                    Say::Nothing,
                    Say::Back {
                        after: s(4),
                        attempts: 1,
                    },
                ],
            ),
        ];
        for (steps, expected) in cases {
            assert_eq!(said(steps), *expected, "{steps:?}");
        }
    }
}
