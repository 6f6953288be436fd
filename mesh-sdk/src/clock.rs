//! Wall-clock times for event bodies, from one place tests can fix.
//!
//! Loop logic measures time with `tokio::time::Instant` (so tests run on the
//! paused clock); a [`WallClock`] maps those instants to UTC times.

use std::time::SystemTime;

use mesh_protocol::Timestamp;
use tokio::time::Instant;

/// Maps loop instants to wall-clock times.
#[derive(Clone, Copy, Debug)]
pub struct WallClock {
    base_wall: SystemTime,
    base_instant: Instant,
}

impl WallClock {
    /// The system clock, anchored now.
    pub fn system() -> WallClock {
        WallClock {
            base_wall: SystemTime::now(),
            base_instant: Instant::now(),
        }
    }

    #[cfg(any(test, feature = "testing"))]
    /// A clock that reads `wall` at the loop instant `at` (tests fix time this way).
    pub fn fixed(wall: impl Into<SystemTime>, at: Instant) -> WallClock {
        WallClock {
            base_wall: wall.into(),
            base_instant: at,
        }
    }

    /// The wall time of loop instant `at`.
    pub fn at(&self, at: Instant) -> Timestamp {
        let wall = if at >= self.base_instant {
            self.base_wall + (at - self.base_instant)
        } else {
            self.base_wall
                .checked_sub(self.base_instant - at)
                .unwrap_or(SystemTime::UNIX_EPOCH)
        };
        Timestamp::from_system(wall)
    }

    #[cfg(any(test, feature = "testing"))]
    /// The wall time now.
    pub fn now(&self) -> Timestamp {
        self.at(Instant::now())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn maps_instants_to_wall_time() {
        let base = Timestamp::parse("2026-10-05T00:00:00Z")
            .unwrap()
            .system_time();
        let clock = WallClock::fixed(base, Instant::now());
        tokio::time::advance(std::time::Duration::from_secs(240)).await;
        assert_eq!(clock.now().to_string(), "2026-10-05T00:04:00Z");
    }
}
