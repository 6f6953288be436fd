//! Fakes for tests of what publishes events (feature `testing`; enable it
//! in `[dev-dependencies]`): a sink that records what it acknowledges and
//! can be made to refuse everything ([`RecordingSink`]), a fixture event
//! ([`recovered`]), and the samples of a metric in the text a program's
//! `/metrics` serves ([`labelled_samples`]). mesh-sdk's `testing` module
//! re-exports the sink and the event.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use bytes::Bytes;
use mesh_protocol::event::{Event, Recovered, RecoveredReason, VERSION};
use mesh_protocol::{Name, Timestamp};

use crate::outbox::{EventSink, SinkError};

/// An [`EventSink`] that records what it acknowledges; it can be made to
/// refuse everything, like a bus that went away.
#[derive(Debug, Clone, Default)]
pub struct RecordingSink {
    /// Acknowledged events: (subject, body), in order.
    pub events: Arc<Mutex<Vec<(String, serde_json::Value)>>>,
    /// Message ids acknowledged, in order.
    pub msg_ids: Arc<Mutex<Vec<String>>>,
    /// While `true`, every publish fails.
    pub down: Arc<std::sync::atomic::AtomicBool>,
}

impl RecordingSink {
    /// The recorded events.
    pub fn events(&self) -> Vec<(String, serde_json::Value)> {
        self.events.lock().expect("sink lock").clone()
    }

    /// Makes the sink refuse (`true`) or accept (`false`).
    pub fn set_down(&self, down: bool) {
        self.down.store(down, std::sync::atomic::Ordering::SeqCst);
    }
}

#[async_trait]
impl EventSink for RecordingSink {
    async fn publish(&self, subject: &str, msg_id: &str, body: Bytes) -> Result<(), SinkError> {
        if self.down.load(std::sync::atomic::Ordering::SeqCst) {
            return Err(SinkError {
                subject: subject.into(),
                reason: "the bus is down".into(),
            });
        }
        let value = serde_json::from_slice(&body).map_err(|e| SinkError {
            subject: subject.into(),
            reason: e.to_string(),
        })?;
        self.events
            .lock()
            .expect("sink lock")
            .push((subject.into(), value));
        self.msg_ids.lock().expect("sink lock").push(msg_id.into());
        Ok(())
    }
}

/// A `recovered` event for `consumer`, published at `2026-10-05T00:00:00Z`
/// (a fixture for tests of what carries events).
pub fn recovered(consumer: &str, reason: RecoveredReason) -> Event {
    Event::Recovered(Recovered {
        v: VERSION,
        consumer: Name::parse(consumer).expect("a valid consumer name"),
        consumer_machine: None,
        provision: None,
        reason,
        said_at: Timestamp::parse("2026-10-05T00:00:00Z").expect("a valid time"),
    })
}

/// The samples of `metric` in `text` (metrics as prometheus-client encodes
/// them), each its labels, as written between the braces, and its value: a
/// sample without labels is not among them.
pub fn labelled_samples(text: &str, metric: &str) -> Vec<(String, String)> {
    text.lines()
        .filter_map(|l| l.strip_prefix(metric))
        .filter_map(|rest| rest.strip_prefix('{'))
        .filter_map(|rest| rest.split_once("} "))
        .map(|(labels, value)| (labels.to_owned(), value.to_owned()))
        .collect()
}
