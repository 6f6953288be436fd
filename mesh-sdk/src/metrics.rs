//! A provider's metrics, in Prometheus' text format at `/metrics`
//! (`--metrics-listen`). Names follow Prometheus' conventions: the `mesh_`
//! prefix, base units, `_total` for counters; no label names a consumer.
//!
//! | metric | type | what |
//! | --- | --- | --- |
//! | `mesh_passes_total` | counter | passes run |
//! | `mesh_pass_duration_seconds` | histogram | how long a pass took |
//! | `mesh_pass_ended_timestamp_seconds` | gauge | when the last pass ended (Unix seconds; 0: none yet): a loop that stopped passing shows as an age growing past `--pass-every` |
//! | `mesh_consumers{state}` | gauge | listed consumers by state after the last pass: `ok`, `failing_unpublished` (failing, not for `failing_after` yet), `failing` (a `failing` event published), `retiring` (withdrawn, still held, not retired yet) |
//! | `mesh_events_published_total{kind}` | counter | events put on the outbox to publish, by kind |
//! | `mesh_events_pending{kind}` | gauge | events pending: not yet acknowledged by the bus, by kind |
//! | `mesh_repairs_total{outcome}` | counter | repair events, by outcome |
//! | `mesh_provider_fault{class}` | gauge | 1 for the class of the provider fault (its administrator refused or unreachable) after the last pass, 0 for the others |
//! | `mesh_contributions_file_refused` | gauge | 1 while the contributions file cannot be read, parsed or taken (its last good list is served; none before one was good), else 0 |
//! | `mesh_contributions_entries_refused` | gauge | entries of the contributions file refused at the last read (a bad name or field, or two entries for one consumer): each such consumer is served from its last good entry, or held back, never withdrawn |
//! | `mesh_provisions_mended_total` | counter | provisions the loop found changed by hand at the backend and brought back (a password changed, a login disabled): what a provider's `ensure` or `check` said it mended (`Served::Mended`) in an attempt whose secret had not changed since the consumer's last success, and listed consumers found disabled that the loop had not retired |
//! | `mesh_words_said_total{kind}` | counter | deprecated alias of `mesh_events_published_total` (removed in 0.3.0) |
//! | `mesh_words_held{kind}` | gauge | deprecated alias of `mesh_events_pending` (removed in 0.3.0) |

use std::time::Duration;

use mesh_protocol::event::{Event, EventKind, RepairOutcome};
use mesh_protocol::{Class, Timestamp};
use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::{Registry, Unit};

use mesh_runtime::endpoints::gauge_value;
use mesh_runtime::Outbox;

type Label = [(&'static str, &'static str); 1];

/// How many consumers are in each state after a pass.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct ConsumerStates {
    pub(crate) ok: u64,
    pub(crate) failing_unpublished: u64,
    pub(crate) failing: u64,
    pub(crate) retiring: u64,
}

/// The loop's metrics and the registry they are encoded from.
pub struct LoopMetrics {
    registry: Registry,
    passes: Counter,
    pass_duration: Histogram,
    pass_ended: Gauge,
    consumers: Family<Label, Gauge>,
    published: Family<Label, Counter>,
    pending: Family<Label, Gauge>,
    repairs: Family<Label, Counter>,
    mended: Counter,
    fault: Family<Label, Gauge>,
    file_refused: Gauge,
    entries_refused: Gauge,
}

impl std::fmt::Debug for LoopMetrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoopMetrics").finish_non_exhaustive()
    }
}

impl Default for LoopMetrics {
    fn default() -> Self {
        LoopMetrics::new()
    }
}

fn outcome(o: RepairOutcome) -> &'static str {
    match o {
        RepairOutcome::Repaired => "repaired",
        RepairOutcome::Failed => "failed",
        RepairOutcome::Braked => "braked",
    }
}

impl LoopMetrics {
    /// Every metric registered, at zero.
    pub fn new() -> LoopMetrics {
        LoopMetrics::with_provider(|_| {})
    }

    /// Every metric registered, at zero, and the provider's own ones that
    /// `register` adds to the registry.
    pub(crate) fn with_provider(register: impl FnOnce(&mut Registry)) -> LoopMetrics {
        let mut registry = Registry::with_prefix("mesh");
        register(&mut registry);
        let passes = Counter::default();
        registry.register(
            "passes",
            "Passes of the provisioner loop run",
            passes.clone(),
        );
        // 10 ms to about 80 s.
        let pass_duration = Histogram::new(exponential_buckets(0.01, 2.0, 14));
        registry.register_with_unit(
            "pass_duration",
            "How long a pass of the provisioner loop took",
            Unit::Seconds,
            pass_duration.clone(),
        );
        let pass_ended = Gauge::default();
        registry.register(
            "pass_ended_timestamp_seconds",
            "When the last pass of the provisioner loop ended (Unix seconds; 0: none yet)",
            pass_ended.clone(),
        );
        let consumers = Family::<Label, Gauge>::default();
        registry.register(
            "consumers",
            "Listed consumers by state after the last pass (ok, failing_unpublished, failing, retiring)",
            consumers.clone(),
        );
        let published = Family::<Label, Counter>::default();
        registry.register(
            "events_published",
            "Events put on the outbox to publish, by kind",
            published.clone(),
        );
        let pending = Family::<Label, Gauge>::default();
        registry.register(
            "events_pending",
            "Events pending, not yet acknowledged by the bus, by kind",
            pending.clone(),
        );
        let repairs = Family::<Label, Counter>::default();
        registry.register("repairs", "Repair events, by outcome", repairs.clone());
        let mended = Counter::default();
        registry.register(
            "provisions_mended",
            "Provisions found changed by hand at the backend and brought back",
            mended.clone(),
        );
        let fault = Family::<Label, Gauge>::default();
        registry.register(
            "provider_fault",
            "1 for the class of the provider fault (its administrator refused or unreachable), 0 for the others",
            fault.clone(),
        );
        let file_refused = Gauge::default();
        registry.register(
            "contributions_file_refused",
            "1 while the contributions file cannot be read, parsed or taken (its last good list is served)",
            file_refused.clone(),
        );
        let entries_refused = Gauge::default();
        registry.register(
            "contributions_entries_refused",
            "Entries of the contributions file refused at the last read (served from their last good entry, or held back)",
            entries_refused.clone(),
        );
        // The names before 0.2.0, kept one release: the same families, so
        // the same values.
        registry.register(
            "words_said",
            "Deprecated (removed in 0.3.0): use mesh_events_published_total",
            published.clone(),
        );
        registry.register(
            "words_held",
            "Deprecated (removed in 0.3.0): use mesh_events_pending",
            pending.clone(),
        );
        let metrics = LoopMetrics {
            registry,
            passes,
            pass_duration,
            pass_ended,
            consumers,
            published,
            pending,
            repairs,
            mended,
            fault,
            file_refused,
            entries_refused,
        };
        // Every series exists from the start, so a rate or an alert never
        // meets a missing series.
        for kind in EventKind::PROVISIONER {
            let _ = metrics.published.get_or_create(&[("kind", kind.as_str())]);
            let _ = metrics.pending.get_or_create(&[("kind", kind.as_str())]);
        }
        for o in [
            RepairOutcome::Repaired,
            RepairOutcome::Failed,
            RepairOutcome::Braked,
        ] {
            let _ = metrics.repairs.get_or_create(&[("outcome", outcome(o))]);
        }
        metrics.set_consumers(ConsumerStates::default());
        metrics.fault(None);
        metrics
    }

    /// The provider fault after a pass: its class, or none.
    pub(crate) fn fault(&self, class: Option<Class>) {
        for c in Class::ALL {
            self.fault
                .get_or_create(&[("class", c.as_str())])
                .set(i64::from(class == Some(c)));
        }
    }

    /// What the last read of the contributions file refused.
    pub(crate) fn contributions(&self, refused: mesh_listfile::Refused) {
        self.file_refused.set(i64::from(refused.file));
        self.entries_refused.set(gauge_value(
            u64::try_from(refused.entries).unwrap_or(u64::MAX),
        ));
    }

    /// A pass ended at `at`, after `took`.
    pub(crate) fn pass(&self, took: Duration, states: ConsumerStates, at: Timestamp) {
        self.passes.inc();
        self.pass_duration.observe(took.as_secs_f64());
        let secs = at
            .system_time()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        self.pass_ended.set(gauge_value(secs));
        self.set_consumers(states);
    }

    fn set_consumers(&self, s: ConsumerStates) {
        for (state, n) in [
            ("ok", s.ok),
            ("failing_unpublished", s.failing_unpublished),
            ("failing", s.failing),
            ("retiring", s.retiring),
        ] {
            self.consumers
                .get_or_create(&[("state", state)])
                .set(gauge_value(n));
        }
    }

    /// A provision changed by hand was brought back.
    pub(crate) fn mended(&self) {
        self.mended.inc();
    }

    /// An event was put on the outbox.
    pub(crate) fn published(&self, event: &Event) {
        self.published
            .get_or_create(&[("kind", event.kind().as_str())])
            .inc();
        if let Event::Repair(body) = event {
            self.repairs
                .get_or_create(&[("outcome", outcome(body.outcome))])
                .inc();
        }
    }

    /// The text of `/metrics`, with the events pending on `outbox` counted now.
    pub fn encode(&self, outbox: &Outbox) -> String {
        let mut counts = [0u64; EventKind::PROVISIONER.len()];
        for (_, event) in outbox.snapshot() {
            if let Some(i) = EventKind::PROVISIONER.iter().position(|k| *k == event.kind) {
                counts[i] += 1;
            }
        }
        for (kind, n) in EventKind::PROVISIONER.iter().zip(counts) {
            self.pending
                .get_or_create(&[("kind", kind.as_str())])
                .set(gauge_value(n));
        }
        let mut text = String::new();
        encode(&mut text, &self.registry).expect("writing to a String cannot fail");
        text
    }
}

#[cfg(test)]
mod tests {
    use mesh_runtime::testing::labelled_samples;

    use super::*;

    #[test]
    fn the_last_pass_end_is_zero_until_a_pass_ends_then_its_unix_seconds() {
        let metrics = LoopMetrics::new();
        let outbox = Outbox::new();
        let line = |text: &str| {
            text.lines()
                .find(|l| l.starts_with("mesh_pass_ended_timestamp_seconds "))
                .map(str::to_owned)
        };
        let text = metrics.encode(&outbox);
        assert_eq!(
            line(&text).as_deref(),
            Some("mesh_pass_ended_timestamp_seconds 0")
        );
        let at = Timestamp::parse("2026-10-05T00:00:05Z").unwrap();
        metrics.pass(Duration::from_millis(20), ConsumerStates::default(), at);
        let text = metrics.encode(&outbox);
        assert_eq!(
            line(&text).as_deref(),
            Some("mesh_pass_ended_timestamp_seconds 1791158405")
        );
    }

    #[test]
    fn the_names_before_0_2_0_say_the_same_values_and_that_they_are_deprecated() {
        let metrics = LoopMetrics::new();
        let outbox = Outbox::new();
        let event = Event::Recovered(mesh_protocol::event::Recovered {
            v: 1,
            consumer: mesh_protocol::Name::parse("forge").unwrap(),
            consumer_machine: None,
            provision: None,
            reason: mesh_protocol::event::RecoveredReason::Success,
            said_at: Timestamp::parse("2026-10-05T00:00:05Z").unwrap(),
        });
        metrics.published(&event);
        metrics.published(&event);
        outbox.put("subject".to_owned(), &event);
        let text = metrics.encode(&outbox);

        let published = labelled_samples(&text, "mesh_events_published_total");
        assert_eq!(published.len(), EventKind::PROVISIONER.len(), "{text}");
        assert!(
            published.contains(&("kind=\"recovered\"".to_owned(), "2".to_owned())),
            "{text}"
        );
        assert_eq!(labelled_samples(&text, "mesh_words_said_total"), published);
        let pending = labelled_samples(&text, "mesh_events_pending");
        assert_eq!(pending.len(), EventKind::PROVISIONER.len(), "{text}");
        assert!(
            pending.contains(&("kind=\"recovered\"".to_owned(), "1".to_owned())),
            "{text}"
        );
        assert_eq!(labelled_samples(&text, "mesh_words_held"), pending);

        for (old, new) in [
            ("mesh_words_said", "mesh_events_published_total"),
            ("mesh_words_held", "mesh_events_pending"),
        ] {
            let help = format!("# HELP {old} Deprecated (removed in 0.3.0): use {new}");
            assert!(
                text.lines().any(|l| l.starts_with(&help)),
                "{help} in {text}"
            );
        }
    }
}
