//! The console watched (`--metrics-listen`): its own series on `/metrics`,
//! `/healthz` (the process serves) and `/readyz` (the store answered last
//! time it was asked: a page's read, or the check every second), through
//! mesh-runtime's endpoints, as every mesh binary serves them.
//!
//! Series (besides `mesh_build_info`): `mesh_console_pages_total{outcome}`
//! (`served`, `not_found`, `unreadable`: the store could not be read),
//! `mesh_console_event_streams` (event streams open now),
//! `mesh_console_store_up` (1 while the store answers) and
//! `mesh_console_connections_closed_total{reason}` (connections the
//! console closed before they sent a request: `timed_out`, `made_room`).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use mesh_runtime::endpoints::Checked;
use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

/// How a page request ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PageOutcome {
    /// Rendered and sent.
    Served,
    /// The declaration names no such page.
    NotFound,
    /// The store could not be read (503).
    Unreadable,
    /// The consumer table was asked something it does not take (400).
    Refused,
}

impl PageOutcome {
    fn as_str(self) -> &'static str {
        match self {
            PageOutcome::Served => "served",
            PageOutcome::NotFound => "not_found",
            PageOutcome::Unreadable => "unreadable",
            PageOutcome::Refused => "refused",
        }
    }
}

/// Why the console closed a connection before it sent a whole request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Closed {
    /// Its first request's headers (or its TLS handshake) did not come
    /// within the header-read timeout.
    TimedOut,
    /// Not proven, it was the oldest when room was needed: for a newer
    /// connection past `--max-unproven-connections`, or when the process
    /// ran out of open files.
    MadeRoom,
}

impl Closed {
    fn as_str(self) -> &'static str {
        match self {
            Closed::TimedOut => "timed_out",
            Closed::MadeRoom => "made_room",
        }
    }
}

/// The console's series and checks.
pub(crate) struct Watch {
    registry: Registry,
    pages: Family<[(&'static str, &'static str); 1], Counter>,
    streams: Gauge,
    store_up: Gauge,
    closed: Family<[(&'static str, &'static str); 1], Counter>,
    store_ok: AtomicBool,
    store_error: Mutex<Option<String>>,
}

impl std::fmt::Debug for Watch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Watch").finish_non_exhaustive()
    }
}

/// Counts an event stream open while it lives.
#[derive(Debug)]
pub(crate) struct StreamOpen(Arc<Watch>);

impl Drop for StreamOpen {
    fn drop(&mut self) {
        self.0.streams.dec();
    }
}

impl Watch {
    /// Its series registered, every page outcome at 0; the store not known
    /// to answer until it is first asked.
    pub(crate) fn new() -> Arc<Watch> {
        let mut registry = Registry::with_prefix("mesh_console");
        let pages = Family::<[(&'static str, &'static str); 1], Counter>::default();
        registry.register(
            "pages",
            "Page requests by how they ended (served, not_found, unreadable: the store could not be read, refused: the consumer table asked what it does not take)",
            pages.clone(),
        );
        for outcome in [
            PageOutcome::Served,
            PageOutcome::NotFound,
            PageOutcome::Unreadable,
            PageOutcome::Refused,
        ] {
            let _ = pages.get_or_create(&[("outcome", outcome.as_str())]);
        }
        let streams = Gauge::default();
        registry.register("event_streams", "Event streams open now", streams.clone());
        let store_up = Gauge::default();
        registry.register(
            "store_up",
            "1 while the store answered the console's last read or check, else 0",
            store_up.clone(),
        );
        let closed = Family::<[(&'static str, &'static str); 1], Counter>::default();
        registry.register(
            "connections_closed",
            "Connections the console closed before they sent a whole request, by why \
             (timed_out: no request headers or TLS handshake within --header-read-timeout; \
             made_room: not proven, the oldest when a newer one needed room)",
            closed.clone(),
        );
        for reason in [Closed::TimedOut, Closed::MadeRoom] {
            let _ = closed.get_or_create(&[("reason", reason.as_str())]);
        }
        Arc::new(Watch {
            registry,
            pages,
            streams,
            store_up,
            closed,
            store_ok: AtomicBool::new(false),
            store_error: Mutex::new(Some("not asked yet".to_owned())),
        })
    }

    /// A page request ended so.
    pub(crate) fn page(&self, outcome: PageOutcome) {
        self.pages
            .get_or_create(&[("outcome", outcome.as_str())])
            .inc();
    }

    /// The console closed a connection before it sent a whole request.
    pub(crate) fn closed(&self, why: Closed) {
        self.closed.get_or_create(&[("reason", why.as_str())]).inc();
    }

    /// An event stream opens: counted until the returned value drops.
    pub(crate) fn stream_opened(self: &Arc<Watch>) -> StreamOpen {
        self.streams.inc();
        StreamOpen(Arc::clone(self))
    }

    /// The store answered.
    pub(crate) fn store_answered(&self) {
        self.store_ok.store(true, Ordering::Relaxed);
        self.store_up.set(1);
        *self.store_error.lock().expect("not poisoned") = None;
    }

    /// The store did not answer, for `why` (a store error's text: no
    /// password in it).
    pub(crate) fn store_failed(&self, why: &str) {
        self.store_ok.store(false, Ordering::Relaxed);
        self.store_up.set(0);
        *self.store_error.lock().expect("not poisoned") = Some(why.to_owned());
    }

    /// `/metrics`' text (OpenMetrics).
    pub(crate) fn encode(&self) -> String {
        let mut text = String::new();
        // Writing into a String cannot fail.
        let _ = encode(&mut text, &self.registry);
        text
    }

    /// `/healthz`: it answers, so its runtime turns.
    pub(crate) fn health(&self) -> Checked {
        Checked::Passing("the console serves".to_owned())
    }

    /// `/readyz`: the store answered last time it was asked.
    pub(crate) fn ready(&self) -> Checked {
        if self.store_ok.load(Ordering::Relaxed) {
            return Checked::Passing("ready: the store answers".to_owned());
        }
        let why = self
            .store_error
            .lock()
            .expect("not poisoned")
            .clone()
            .unwrap_or_default();
        Checked::Failing(format!("the store does not answer: {why}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_streams_closed_connections_and_the_store_are_counted_and_readiness_follows_the_store()
    {
        let watch = Watch::new();
        assert!(!watch.ready().is_passing(), "not asked yet");
        assert!(watch.ready().text().contains("not asked yet"));
        watch.page(PageOutcome::Served);
        watch.page(PageOutcome::Served);
        watch.page(PageOutcome::Unreadable);
        let one = watch.stream_opened();
        let two = watch.stream_opened();
        drop(one);
        watch.store_answered();
        assert!(watch.ready().is_passing());
        watch.closed(Closed::MadeRoom);
        watch.closed(Closed::MadeRoom);
        watch.closed(Closed::TimedOut);
        let text = watch.encode();
        for line in [
            "mesh_console_pages_total{outcome=\"served\"} 2",
            "mesh_console_pages_total{outcome=\"not_found\"} 0",
            "mesh_console_pages_total{outcome=\"unreadable\"} 1",
            "mesh_console_event_streams 1",
            "mesh_console_store_up 1",
            "mesh_console_connections_closed_total{reason=\"timed_out\"} 1",
            "mesh_console_connections_closed_total{reason=\"made_room\"} 2",
        ] {
            assert!(text.lines().any(|l| l == line), "{line} in:\n{text}");
        }
        drop(two);
        watch.store_failed("store x unavailable: connection refused");
        assert_eq!(
            watch.ready().text(),
            "the store does not answer: store x unavailable: connection refused"
        );
        let text = watch.encode();
        assert!(text.contains("mesh_console_event_streams 0"), "{text}");
        assert!(text.contains("mesh_console_store_up 0"), "{text}");
        assert!(watch.health().is_passing());
    }
}
