//! Wall-clock times for event bodies, from one place tests can fix.
//!
//! A program's logic measures time with `tokio::time::Instant` (so tests
//! run it on tokio's paused clock); a [`WallClock`] maps those instants to
//! the UTC times event bodies carry (`said_at`, `since`, …).

use std::time::SystemTime;

use mesh_protocol::Timestamp;
use tokio::time::Instant;

/// Maps tokio instants to wall-clock times: anchored once, then moved by
/// the monotonic clock only (a step of the system clock does not move it).
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

    /// A clock that reads `wall` at the instant `at` (tests fix time this way).
    pub fn fixed(wall: impl Into<SystemTime>, at: Instant) -> WallClock {
        WallClock {
            base_wall: wall.into(),
            base_instant: at,
        }
    }

    /// The wall time of instant `at`.
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
