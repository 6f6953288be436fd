//! History's retention: between rounds, the link asks the store to remove
//! history recorded more than `keep_history` ago, one small batch at a
//! time ([`PRUNE_BATCH`] rows a statement), so removing a backlog never
//! holds a round back: a full batch is followed by the next one after
//! [`PRUNE_AGAIN`] (a delete between every two rounds halved ingest), a
//! short one by a pause of [`PRUNE_EVERY`].

use std::time::Duration;

use tokio::time::Instant;

use super::Link;
use crate::store::Store;

/// The most history rows one prune removes.
pub const PRUNE_BATCH: u32 = 1_000;

/// How long the link waits after a full batch before the next one: a
/// backlog goes at up to [`PRUNE_BATCH`] rows a second (86 million a day)
/// without a delete between every two rounds of ingest.
pub const PRUNE_AGAIN: Duration = Duration::from_secs(1);

/// How long the link waits after a prune that found less than a batch
/// (or failed) before it prunes again.
pub const PRUNE_EVERY: Duration = Duration::from_secs(60);

/// When the next prune is due (pure: the time is given).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PruneSchedule {
    next: Option<Instant>,
}

impl PruneSchedule {
    /// Whether a prune is due at `now` (at once for a new link).
    pub fn due(&self, now: Instant) -> bool {
        self.next.is_none_or(|at| now >= at)
    }

    /// A prune ended at `now` having removed `removed` rows (`None`: the
    /// store failed it): a full batch leaves more to remove after
    /// [`PRUNE_AGAIN`].
    pub fn done(&mut self, now: Instant, removed: Option<u64>) {
        self.next = Some(match removed {
            Some(n) if n >= u64::from(PRUNE_BATCH) => now + PRUNE_AGAIN,
            _ => now + PRUNE_EVERY,
        });
    }
}

impl<S: Store> Link<'_, S> {
    /// Removes one batch of history older than the retention, when due.
    pub(super) async fn prune(&mut self) {
        let now = Instant::now();
        if !self.prune.due(now) {
            return;
        }
        let outcome = self
            .store
            .prune_history(self.settings.keep_history, PRUNE_BATCH)
            .await;
        let removed = match outcome {
            Ok(removed) => {
                if removed > 0 {
                    tracing::debug!(removed, "history past its retention removed");
                }
                Some(removed)
            }
            Err(error) => {
                tracing::debug!(error = %error, "cannot remove history past its retention");
                None
            }
        };
        self.prune.done(Instant::now(), removed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_full_batch_is_followed_after_a_second_a_short_one_after_a_pause() {
        let mut schedule = PruneSchedule::default();
        let start = Instant::now();
        assert!(schedule.due(start), "a new link prunes at once");
        // (removed, how long until the next prune is due)
        let cases = [
            (Some(1_000), PRUNE_AGAIN),
            (Some(5_000), PRUNE_AGAIN),
            (Some(999), PRUNE_EVERY),
            (Some(0), PRUNE_EVERY),
            (None, PRUNE_EVERY),
        ];
        for (removed, wait) in cases {
            let now = Instant::now();
            schedule.done(now, removed);
            assert!(!schedule.due(now), "{removed:?} right after");
            tokio::time::advance(wait - Duration::from_millis(1)).await;
            assert!(!schedule.due(Instant::now()), "{removed:?} just before");
            tokio::time::advance(Duration::from_millis(1)).await;
            assert!(schedule.due(Instant::now()), "{removed:?} after {wait:?}");
        }
    }
}
