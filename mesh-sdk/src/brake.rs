//! Doubling delays ([`Backoff`]) and the brake on a failing repair built on
//! them ([`Brake`]: 10 minutes, doubling, capped at 6 hours, reset by
//! success). Pure; `now` is passed in.

use std::time::Duration;

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

/// Delays that double after each failure in a row, from a first delay up
/// to a longest one; [`reset`](Backoff::reset) by a success. Pure: it only
/// counts, the caller sleeps.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Backoff {
    first: Duration,
    max: Duration,
    failures: u32,
}

impl Backoff {
    /// A backoff starting at `first`, capped at `max` (at least `first`).
    pub fn new(first: Duration, max: Duration) -> Backoff {
        Backoff {
            first,
            max: max.max(first),
            failures: 0,
        }
    }

    /// The delay after the next failure in a row: `first`, then doubling, at most `max`.
    pub fn next_delay(&mut self) -> Duration {
        let factor = 1u32.checked_shl(self.failures).unwrap_or(u32::MAX);
        self.failures = self.failures.saturating_add(1);
        self.first.saturating_mul(factor).min(self.max)
    }

    /// Failures in a row so far.
    pub fn failures(&self) -> u32 {
        self.failures
    }

    /// A success: the next delay is `first` again.
    pub fn reset(&mut self) {
        self.failures = 0;
    }
}

/// Holds back attempts after failures, for the delays of a [`Backoff`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Brake {
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
    pub fn new(rules: BrakeRules) -> Brake {
        Brake {
            backoff: Backoff::new(rules.first, rules.cap),
            not_before: None,
        }
    }

    /// Whether an attempt may be made at `now`.
    pub fn allows(&self, now: Instant) -> bool {
        self.not_before.is_none_or(|t| now >= t)
    }

    /// When the next attempt may be made, if the brake holds one back.
    pub fn next_attempt(&self) -> Option<Instant> {
        self.not_before
    }

    /// Failures since the last success.
    pub fn failures(&self) -> u32 {
        self.backoff.failures()
    }

    /// An attempt failed at `now`: returns when the next one may be made.
    pub fn failed(&mut self, now: Instant) -> Instant {
        let next = now + self.backoff.next_delay();
        self.not_before = Some(next);
        next
    }

    /// An attempt succeeded: released.
    pub fn succeeded(&mut self) {
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
    fn backoff_doubles_to_its_max_and_resets() {
        let mut b = Backoff::new(Duration::from_millis(250), Duration::from_secs(2));
        let delays: Vec<u128> = (0..6).map(|_| b.next_delay().as_millis()).collect();
        assert_eq!(delays, vec![250, 500, 1000, 2000, 2000, 2000]);
        assert_eq!(b.failures(), 6);
        b.reset();
        assert_eq!(b.next_delay(), Duration::from_millis(250));
        let mut long = Backoff::new(Duration::from_secs(1), Duration::from_secs(30));
        for _ in 0..100 {
            assert!(long.next_delay() <= Duration::from_secs(30), "no overflow");
        }
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
