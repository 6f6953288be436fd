//! The login backoff: how long the provider waits before it tries a
//! refused administrator password again, on mesh-runtime's doubling
//! [`Backoff`]. Pure arithmetic, no I/O.
//!
//! With brute-force protection on, Keycloak counts every refused login of a
//! user, and locks the user out at its failure factor (30 by default) until
//! the count is reset by a good login or by an administrator. A provider
//! whose password Keycloak keeps refusing must not be the one that locks
//! the administrator out (of the console too, for the people who use it):
//! after the `n`-th refusal in a row, the password is not tried again for
//! `first · 2ⁿ⁻¹`, at most `max`. Consumers' admin calls and the repair's
//! probe both answer with the last refusal meanwhile; a repair that set the
//! password clears the backoff (flags `--admin-login-hold` and
//! `--admin-login-hold-max`).
//!
//! With the defaults (5 minutes doubling to 2 hours) an unrepaired fault
//! costs 5 refused logins in its first 75 minutes, then one every 2 hours:
//! 9 in its first 10 hours, 16 in a day.

use std::time::Duration;

use mesh_sdk::Backoff;

/// The login backoff's schedule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LoginBackoff {
    /// Wait after the first refusal.
    pub first: Duration,
    /// Longest wait.
    pub max: Duration,
}

impl Default for LoginBackoff {
    fn default() -> Self {
        LoginBackoff {
            first: Duration::from_secs(5 * 60),
            max: Duration::from_secs(2 * 60 * 60),
        }
    }
}

impl LoginBackoff {
    /// How long the password is not tried again after `refusals` refusals
    /// in a row (none after none).
    pub fn after(&self, refusals: u32) -> Duration {
        Backoff::new(self.first, self.max).after(refusals)
    }

    /// How many logins are refused in `span` when every try is refused and
    /// tried again as soon as the backoff allows (the first at the start).
    pub fn refusals_within(&self, span: Duration) -> u32 {
        let (mut at, mut refusals) = (Duration::ZERO, 0u32);
        while at <= span {
            refusals += 1;
            let hold = self.after(refusals);
            if hold.is_zero() {
                return u32::MAX;
            }
            at += hold;
        }
        refusals
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIN: Duration = Duration::from_secs(60);

    #[test]
    fn the_wait_doubles_from_first_to_max() {
        let hold = LoginBackoff::default();
        let minutes: Vec<u64> = (0..=8).map(|n| hold.after(n).as_secs() / 60).collect();
        assert_eq!(minutes, [0, 5, 10, 20, 40, 80, 120, 120, 120]);
        assert_eq!(hold.after(u32::MAX), 120 * MIN, "no overflow");
    }

    #[test]
    fn a_max_below_first_holds_first() {
        let hold = LoginBackoff {
            first: 10 * MIN,
            max: MIN,
        };
        assert_eq!(hold.after(1), 10 * MIN);
        assert_eq!(hold.after(5), 10 * MIN);
    }

    #[test]
    fn the_defaults_stay_well_under_keycloaks_failure_factor() {
        let hold = LoginBackoff::default();
        assert_eq!(hold.refusals_within(60 * MIN), 4, "0, 5, 15, 35 minutes");
        assert_eq!(hold.refusals_within(75 * MIN), 5);
        assert_eq!(hold.refusals_within(10 * 60 * MIN), 9);
        assert_eq!(hold.refusals_within(24 * 60 * MIN), 16);
        assert!(
            hold.refusals_within(24 * 60 * MIN) < 30,
            "Keycloak's default"
        );
    }

    #[test]
    fn without_a_wait_every_try_counts() {
        let none = LoginBackoff {
            first: Duration::ZERO,
            max: Duration::ZERO,
        };
        assert_eq!(none.after(3), Duration::ZERO);
        assert_eq!(none.refusals_within(MIN), u32::MAX);
    }
}
