//! The brake on a failing repair: 10 minutes, doubling, capped at 6 hours,
//! reset by success. Pure; `now` is passed in.

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

/// Holds back attempts after failures.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Brake {
    failures: u32,
    not_before: Option<Instant>,
}

impl Brake {
    /// A released brake.
    pub fn new() -> Brake {
        Brake::default()
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
        self.failures
    }

    /// An attempt failed at `now`: returns when the next one may be made.
    pub fn failed(&mut self, now: Instant, rules: &BrakeRules) -> Instant {
        let factor = 1u32.checked_shl(self.failures).unwrap_or(u32::MAX);
        let delay = rules.first.saturating_mul(factor).min(rules.cap);
        self.failures = self.failures.saturating_add(1);
        let next = now + delay;
        self.not_before = Some(next);
        next
    }

    /// An attempt succeeded: released.
    pub fn succeeded(&mut self) {
        *self = Brake::default();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles_from_ten_minutes_to_a_cap_of_six_hours() {
        let rules = BrakeRules::default();
        let mut brake = Brake::new();
        let mut now = Instant::now();
        assert!(brake.allows(now));
        let mut waits = Vec::new();
        for _ in 0..40 {
            let next = brake.failed(now, &rules);
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
        let rules = BrakeRules::default();
        let mut brake = Brake::new();
        let now = Instant::now();
        brake.failed(now, &rules);
        brake.failed(now, &rules);
        brake.succeeded();
        assert!(brake.allows(now));
        assert_eq!(brake.next_attempt(), None);
        assert_eq!(brake.failed(now, &rules) - now, Duration::from_secs(600));
    }
}
