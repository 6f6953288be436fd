//! The brake on a failing repair ([`Brake`]: 10 minutes, doubling, capped
//! at 6 hours, reset by success), on mesh-runtime's [`Backoff`]. Pure;
//! `now` is passed in.

use std::time::Duration;

use mesh_runtime::Backoff;
use tokio::time::Instant;

/// Timings of the brake.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BrakeRules {
    /// Wait after the first failure.
    pub first: Duration,
    /// Longest wait.
    pub cap: Duration,
}

impl Default for BrakeRules {
    fn default() -> Self {
        BrakeRules {
            first: Duration::from_secs(10 * 60),
            cap: Duration::from_secs(6 * 60 * 60),
        }
    }
}

/// Defers attempts after failures, for the delays of a [`Backoff`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Brake {
    backoff: Backoff,
    not_before: Option<Instant>,
}

impl Default for Brake {
    fn default() -> Self {
        Brake::new(BrakeRules::default())
    }
}

impl Brake {
    /// A released brake with these timings.
    pub(crate) fn new(rules: BrakeRules) -> Brake {
        Brake {
            backoff: Backoff::new(rules.first, rules.cap),
            not_before: None,
        }
    }

    /// Whether an attempt may be made at `now`.
    pub(crate) fn allows(&self, now: Instant) -> bool {
        self.not_before.is_none_or(|t| now >= t)
    }

    /// When the next attempt may be made, if the brake defers one.
    pub(crate) fn next_attempt(&self) -> Option<Instant> {
        self.not_before
    }

    /// Failures since the last success.
    pub(crate) fn failures(&self) -> u32 {
        self.backoff.failures()
    }

    /// An attempt failed at `now`: returns when the next one may be made.
    pub(crate) fn failed(&mut self, now: Instant) -> Instant {
        let next = now + self.backoff.next_delay();
        self.not_before = Some(next);
        next
    }

    /// An attempt succeeded: released.
    pub(crate) fn succeeded(&mut self) {
        self.backoff.reset();
        self.not_before = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles_from_ten_minutes_to_a_cap_of_six_hours() {
        let mut brake = Brake::default();
        let mut now = Instant::now();
        assert!(brake.allows(now));
        let mut waits = Vec::new();
        for _ in 0..40 {
            let next = brake.failed(now);
            waits.push((next - now).as_secs() / 60);
            assert!(!brake.allows(now));
            assert!(!brake.allows(next - Duration::from_secs(1)));
            assert!(brake.allows(next));
            now = next;
        }
        assert_eq!(&waits[..8], &[10, 20, 40, 80, 160, 320, 360, 360]);
        assert!(waits[8..].iter().all(|w| *w == 360), "capped, no overflow");
        assert_eq!(brake.failures(), 40);
    }

    #[test]
    fn success_resets() {
        let mut brake = Brake::default();
        let now = Instant::now();
        brake.failed(now);
        brake.failed(now);
        brake.succeeded();
        assert!(brake.allows(now));
        assert_eq!(brake.next_attempt(), None);
        assert_eq!(brake.failed(now) - now, Duration::from_secs(600));
    }
}
