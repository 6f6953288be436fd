//! Whether a program's loop is turning (`/healthz`), decided without I/O.
//!
//! Healthy means the loop turns: a pass, an attempt or a pull finished,
//! or a turn of waiting for something that is away. A bus or a backend
//! that is away is not unhealthy (it is `/readyz`'s business): only a loop
//! that stopped turning is, which a restart may mend.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::time::Instant;

/// When a program's loop last moved: a pass or one attempt finished (a
/// provider), a pull finished (`mesh-controller serve`). Shared between the
/// loop, which ticks it, and the health endpoint, which reads it. Measured
/// on tokio's clock, so tests run it on the paused clock.
#[derive(Debug)]
pub struct Progress {
    base: Instant,
    last_ms: AtomicU64,
}

impl Default for Progress {
    fn default() -> Self {
        Progress::new()
    }
}

impl Progress {
    /// Progress counted from now (a loop that just started has moved).
    pub fn new() -> Progress {
        Progress {
            base: Instant::now(),
            last_ms: AtomicU64::new(0),
        }
    }

    /// The loop moved now. Cheap when called often: the shared value is
    /// written at most once a millisecond.
    pub fn tick(&self) {
        let ms = u64::try_from(self.base.elapsed().as_millis()).unwrap_or(u64::MAX);
        if ms > self.last_ms.load(Ordering::Relaxed) {
            self.last_ms.fetch_max(ms, Ordering::Relaxed);
        }
    }

    /// How long since the loop last moved.
    pub fn since(&self) -> Duration {
        let last = Duration::from_millis(self.last_ms.load(Ordering::Relaxed));
        self.base.elapsed().saturating_sub(last)
    }

    /// Passing when the loop moved within `bound`, else failing, saying
    /// how long it has not.
    pub fn check(&self, bound: Duration) -> super::Checked {
        let since = self.since();
        let ms =
            |d: Duration| humantime::format_duration(Duration::from_millis(d.as_millis() as u64));
        if since <= bound {
            super::Checked::Passing(format!(
                "ok: the loop turned {} ago (bound {})",
                ms(since),
                ms(bound)
            ))
        } else {
            super::Checked::Failing(format!(
                "stuck: the loop has not turned for {} (bound {}); a restart may help",
                ms(since),
                ms(bound)
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn healthy_while_it_moves_within_the_bound() {
        let bound = Duration::from_secs(10);
        let progress = Progress::new();
        assert!(
            progress.check(bound).is_passing(),
            "a fresh loop is healthy"
        );
        tokio::time::advance(Duration::from_secs(10)).await;
        assert!(progress.check(bound).is_passing(), "at the bound");
        tokio::time::advance(Duration::from_millis(1)).await;
        assert_eq!(
            progress.check(bound),
            super::super::Checked::Failing(
                "stuck: the loop has not turned for 10s 1ms (bound 10s); a restart may help"
                    .to_owned()
            )
        );
        progress.tick();
        assert_eq!(
            progress.check(bound),
            super::super::Checked::Passing("ok: the loop turned 0s ago (bound 10s)".to_owned()),
            "turned again"
        );
        assert_eq!(progress.since(), Duration::ZERO);
    }
}
