//! The one doubling delay of the workspace: a first delay, doubling after
//! each failure in a row up to a longest one, back to the first after a
//! success. The brake on a failing repair, the identity provider's login
//! backoff, `serve`'s NAK delay while the store is away and the NATS
//! client's reconnect delay are all made of it. Pure: it only counts, the
//! caller sleeps.

use std::time::Duration;

/// Delays that double after each failure in a row, from a first delay up
/// to a longest one; [`reset`](Backoff::reset) by a success.
///
/// ```
/// use std::time::Duration;
/// use mesh_runtime::Backoff;
///
/// let mut backoff = Backoff::new(Duration::from_millis(100), Duration::from_secs(2));
/// let delays: Vec<u128> = (0..7).map(|_| backoff.next_delay().as_millis()).collect();
/// assert_eq!(delays, [100, 200, 400, 800, 1600, 2000, 2000]);
/// backoff.reset();
/// assert_eq!(backoff.next_delay(), Duration::from_millis(100));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Backoff {
    first: Duration,
    max: Duration,
    failures: u32,
}

impl Backoff {
    /// A backoff starting at `first`, capped at `max` (at least `first`).
    pub const fn new(first: Duration, max: Duration) -> Backoff {
        Backoff {
            first,
            max: if max.as_nanos() < first.as_nanos() {
                first
            } else {
                max
            },
            failures: 0,
        }
    }

    /// The delay after `failures` failures in a row, without counting one:
    /// none after none, then `first`, doubling, at most `max`.
    pub fn after(&self, failures: u32) -> Duration {
        let Some(doublings) = failures.checked_sub(1) else {
            return Duration::ZERO;
        };
        let factor = 1u32.checked_shl(doublings).unwrap_or(u32::MAX);
        self.first.saturating_mul(factor).min(self.max)
    }

    /// The delay after the next failure in a row: `first`, then doubling, at most `max`.
    pub fn next_delay(&mut self) -> Duration {
        self.failures = self.failures.saturating_add(1);
        self.after(self.failures)
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

#[cfg(test)]
mod tests {
    use super::*;

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
    fn after_counts_nothing_and_a_max_below_first_holds_first() {
        let b = Backoff::new(Duration::from_secs(10), Duration::from_secs(1));
        assert_eq!(b.after(0), Duration::ZERO);
        assert_eq!(b.after(1), Duration::from_secs(10));
        assert_eq!(b.after(5), Duration::from_secs(10));
        assert_eq!(b.after(u32::MAX), Duration::from_secs(10), "no overflow");
        assert_eq!(b.failures(), 0);
    }
}
