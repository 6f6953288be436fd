//! What `serve` shows at `--metrics-listen`: its metrics, whether the
//! link's loop turns (`/healthz`: a restart may mend it if not; the bus or
//! the store away does not make it fail) and whether it can do its work
//! now (`/readyz`: connected to the bus and the store answering; false
//! within 5 s of either going away).
//!
//! | metric | type | what |
//! | --- | --- | --- |
//! | `mesh_events_applied_total{kind}` | counter | events committed to the store, by kind |
//! | `mesh_batches_total` | counter | rounds committed (one transaction each) |
//! | `mesh_store_errors_total` | counter | rounds the store failed (held and delivered again, or refused) |
//! | `mesh_status_*`, `mesh_standings_failing`, `mesh_providers_unheard` | gauge | what `status` would say (needs `--declaration`; see [`StatusGauges`]) |
//! | `mesh_stream_lag_messages` | gauge | events in the stream the controller has not acknowledged yet |
//! | `mesh_caught_up_timestamp_seconds` | gauge | when this `serve` last caught up with the stream (Unix seconds; 0: not yet) |
//! | `mesh_words_applied_total{kind}` | counter | deprecated alias of `mesh_events_applied_total` (removed in 0.3.0) |

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::OnceLock;
use std::time::Duration;

use mesh_protocol::{EventKind, Timestamp};
use mesh_runtime::endpoints::{gauge_value, Checked};
use mesh_runtime::{Progress, WallClock};
use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use super::StatusGauges;
use crate::model::Received;

type Label = [(&'static str, &'static str); 1];

/// The link's state as the endpoints read it; the link writes it.
pub struct LinkState {
    registry: Registry,
    applied: Family<Label, Counter>,
    batches: Counter,
    store_errors: Counter,
    /// What `status` would say (set from the report by whoever makes it).
    pub status: StatusGauges,
    /// Events in the stream not acknowledged yet.
    pub stream_lag: Gauge,
    /// When the link last caught up with the stream (Unix seconds).
    caught_up_at: Gauge,
    /// The wall time of the link's instants, when fixed (else the
    /// machine's clock, read when it is needed).
    clock: Option<WallClock>,
    /// When the link last finished a pull.
    pub progress: Progress,
    store_ok: AtomicBool,
    /// The store is migrated to this release: reading it may begin (a read
    /// beside a migration may deadlock with it).
    migrated: AtomicBool,
    /// Pulls failed since one last worked, across setups of the consumer:
    /// one outage is said once when it begins and once when it ends.
    pulls_failing: AtomicU32,
    bus: OnceLock<Box<dyn BusWatch>>,
}

/// The link's bus connection as the endpoints and the rounds look at it:
/// `mesh-controller` implements it over its NATS client, a test or the
/// simulator over a bus of its own (or not at all: a link that never
/// [`LinkState::joined`] a bus counts as connected).
pub trait BusWatch: Send + Sync {
    /// Whether it is connected, and else its state.
    fn connection(&self) -> BusConnection;
}

/// A bus connection's state, as the link looks at it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BusConnection {
    /// Connected.
    Connected,
    /// Not connected: the client's state as a person reads it (`disconnected`).
    Away(String),
}

impl std::fmt::Debug for LinkState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LinkState").finish_non_exhaustive()
    }
}

impl Default for LinkState {
    fn default() -> Self {
        LinkState::new()
    }
}

impl LinkState {
    /// Every metric registered, at zero; not ready. Its wall times (the
    /// time it caught up) are the machine's clock when each is taken, so a
    /// step of that clock moves them as it moves Prometheus's `time()`.
    pub fn new() -> LinkState {
        LinkState::build(None)
    }

    /// Like [`LinkState::new`], its wall times from `clock`: the wall time
    /// of the link's `tokio::time::Instant`s (the simulator and tests fix
    /// time this way, with tokio's paused clock).
    pub fn with_clock(clock: WallClock) -> LinkState {
        LinkState::build(Some(clock))
    }

    fn build(clock: Option<WallClock>) -> LinkState {
        let mut registry = Registry::with_prefix("mesh");
        let applied = Family::<Label, Counter>::default();
        registry.register(
            "events_applied",
            "Events committed to the store, by kind",
            applied.clone(),
        );
        for kind in EventKind::ALL {
            let _ = applied.get_or_create(&[("kind", kind.as_str())]);
        }
        let batches = Counter::default();
        registry.register("batches", "Rounds of events committed", batches.clone());
        let store_errors = Counter::default();
        registry.register(
            "store_errors",
            "Rounds the store failed (held and delivered again, or refused)",
            store_errors.clone(),
        );
        let status = StatusGauges::register(&mut registry);
        let stream_lag = Gauge::default();
        registry.register(
            "stream_lag_messages",
            "Events in the stream the controller has not acknowledged yet",
            stream_lag.clone(),
        );
        let caught_up_at = Gauge::default();
        registry.register(
            "caught_up_timestamp_seconds",
            "When this serve last caught up with the event stream, every event it took stored \
             (Unix seconds; 0: not yet)",
            caught_up_at.clone(),
        );
        // The name before 0.2.0, kept one release: the same family, so the
        // same values.
        registry.register(
            "words_applied",
            "Deprecated (removed in 0.3.0): use mesh_events_applied_total",
            applied.clone(),
        );
        LinkState {
            registry,
            caught_up_at,
            clock,
            applied,
            batches,
            store_errors,
            status,
            stream_lag,
            progress: Progress::new(),
            store_ok: AtomicBool::new(false),
            migrated: AtomicBool::new(false),
            pulls_failing: AtomicU32::new(0),
            bus: OnceLock::new(),
        }
    }

    /// A round was committed.
    pub(crate) fn applied(&self, events: &[Received]) {
        self.batches.inc();
        for received in events {
            self.applied
                .get_or_create(&[("kind", received.event.kind().as_str())])
                .inc();
        }
        self.store_ok.store(true, Ordering::Relaxed);
    }

    /// The wall time of the link's instant `at`: from the fixed clock, or
    /// the machine's clock now (`at` is now, for the link).
    fn wall(&self, at: tokio::time::Instant) -> Timestamp {
        match &self.clock {
            Some(clock) => clock.at(at),
            None => Timestamp::now(),
        }
    }

    /// The link caught up with the stream at its instant `at` (a pull came
    /// back short, nothing held for the store).
    pub(crate) fn caught_up(&self, at: tokio::time::Instant) {
        let secs = self
            .wall(at)
            .system_time()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        self.caught_up_at.set(gauge_value(secs));
    }

    /// The store failed a round; `away` when it may pass (held), not when it refused the events.
    pub(crate) fn store_failed(&self, away: bool) {
        self.store_errors.inc();
        if away {
            self.store_ok.store(false, Ordering::Relaxed);
        }
    }

    /// The store answered (migrated, or read, or the readiness check).
    pub fn store_answered(&self) {
        self.store_ok.store(true, Ordering::Relaxed);
    }

    /// The store is migrated (it answered too).
    pub fn store_migrated(&self) {
        self.migrated.store(true, Ordering::Relaxed);
        self.store_answered();
    }

    /// Whether the store is migrated: only then do `serve`'s own reads of
    /// it begin (a read of two tables beside a migration altering both
    /// deadlocks with it, and PostgreSQL may end the migration).
    pub fn is_migrated(&self) -> bool {
        self.migrated.load(Ordering::Relaxed)
    }

    /// The store did not answer the readiness check: `/readyz` fails until
    /// it answers again (no round failed, so no store error is counted).
    pub fn store_unanswered(&self) {
        self.store_ok.store(false, Ordering::Relaxed);
    }

    /// A pull failed; returns how many have since one last worked.
    pub(crate) fn pull_failed(&self) -> u32 {
        self.pulls_failing.fetch_add(1, Ordering::Relaxed) + 1
    }

    /// A pull worked; returns how many had failed before it, if any.
    pub(crate) fn pull_worked(&self) -> Option<u32> {
        Some(self.pulls_failing.swap(0, Ordering::Relaxed)).filter(|&n| n > 0)
    }

    /// The bus connection, once joined (the first one is kept).
    pub fn joined(&self, bus: Box<dyn BusWatch>) {
        let _ = self.bus.set(bus);
    }

    /// The stream holds `n` events not acknowledged.
    pub(crate) fn lag(&self, n: u64) {
        self.stream_lag.set(gauge_value(n));
    }

    /// The text of `/metrics`.
    pub fn encode(&self) -> String {
        let mut text = String::new();
        encode(&mut text, &self.registry).expect("writing to a String cannot fail");
        text
    }

    /// `/healthz`: the link's loop turned within `bound` (a pull finished,
    /// or a turn of waiting for the store or the bus at setup), whether the
    /// bus and the store are there or not: only a loop that stopped turning
    /// is unhealthy, which a restart may mend.
    pub fn health(&self, bound: Duration) -> Checked {
        self.progress.check(bound)
    }

    /// Whether the bus is connected, or not joined yet (nothing says it is away).
    pub fn bus_connected(&self) -> bool {
        self.bus
            .get()
            .is_none_or(|bus| bus.connection() == BusConnection::Connected)
    }

    /// `/readyz`: the link can do its work now: connected to the bus, and
    /// the store answered last time it was asked (a round, the summary, or
    /// `serve`'s readiness check every second, bounded by 2 s); else which
    /// is missing.
    pub fn ready(&self) -> Checked {
        match self.bus.get().map(|bus| bus.connection()) {
            None => Checked::Failing("not connected to the bus yet".to_owned()),
            Some(BusConnection::Away(state)) => {
                Checked::Failing(format!("not connected to the bus ({state})"))
            }
            Some(BusConnection::Connected) if !self.store_ok.load(Ordering::Relaxed) => {
                Checked::Failing("the store is away (its last answer was an error)".to_owned())
            }
            Some(BusConnection::Connected) => {
                Checked::Passing("ready: connected to the bus and the store".to_owned())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use mesh_protocol::event::{Recovered, RecoveredReason};
    use mesh_protocol::{Event, ModuleId, Name, Timestamp};
    use mesh_runtime::testing::labelled_samples;

    use super::*;

    #[test]
    fn the_name_before_0_2_0_says_the_same_values_and_that_it_is_deprecated() {
        let state = LinkState::new();
        let received = Received {
            epoch: 1,
            seq: 1,
            stored_at: None,
            emitter: ModuleId::parse("postgres@db-1").unwrap(),
            event: Event::Recovered(Recovered {
                v: 1,
                consumer: Name::parse("forge").unwrap(),
                consumer_machine: None,
                provision: None,
                reason: RecoveredReason::Success,
                said_at: Timestamp::parse("2026-10-05T00:00:05Z").unwrap(),
            }),
        };
        state.applied(&[received.clone(), received]);
        let text = state.encode();

        let applied = labelled_samples(&text, "mesh_events_applied_total");
        assert_eq!(applied.len(), EventKind::ALL.len(), "{text}");
        assert!(
            applied.contains(&("kind=\"recovered\"".to_owned(), "2".to_owned())),
            "{text}"
        );
        assert_eq!(labelled_samples(&text, "mesh_words_applied_total"), applied);
        let help = "# HELP mesh_words_applied Deprecated (removed in 0.3.0): use \
                    mesh_events_applied_total";
        assert!(text.lines().any(|l| l.starts_with(help)), "{text}");
    }
}
