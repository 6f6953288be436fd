//! The link's own record in the store: which `serve` process this is, and
//! when it last caught up and committed, so `status` can tell a controller
//! that follows nothing from providers that say nothing.

use std::sync::OnceLock;
use std::time::Duration;

use mesh_protocol::Timestamp;

use super::Link;
use crate::model::Instance;
use crate::store::Store;

/// This process as it names itself in the store: its host, its pid, when
/// it first followed (kept for the life of the process), and its pull wait.
pub(super) fn this_process(pull_wait: Duration) -> Instance {
    static HERE: OnceLock<(String, Timestamp)> = OnceLock::new();
    let (host, started_at) = HERE.get_or_init(|| {
        let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
            .ok()
            .or_else(|| std::env::var("HOSTNAME").ok())
            .map(|h| h.trim().to_owned())
            .filter(|h| !h.is_empty())
            .unwrap_or_else(|| "unknown-host".to_owned());
        (host, Timestamp::now())
    });
    Instance {
        host: host.clone(),
        pid: i64::from(std::process::id()),
        started_at: *started_at,
        pull_wait,
    }
}

impl<S: Store> Link<'_, S> {
    /// Records this process in the store ([`Store::record`]) when a record
    /// is due at `now` ([`super::progress::LinkProgress::record_due`]). A
    /// store that fails it is tried again at the next pull (the rounds say
    /// why).
    pub(super) async fn record(&mut self, caught_up: bool, now: tokio::time::Instant) {
        let Some(update) = self.progress.record_due(&self.instance, caught_up, now) else {
            return;
        };
        match self.store.record(update).await {
            Ok(()) => self.progress.recorded(now, caught_up),
            Err(error) => {
                tracing::debug!(error = %error, "cannot record this controller in the store");
            }
        }
    }
}
