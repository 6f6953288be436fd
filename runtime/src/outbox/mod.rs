//! Events that must arrive: published through JetStream, awaiting the
//! stream's ack; an event not acknowledged stays pending (the newest per
//! [`Key`]) and is sent again with the same message id (docs/contracts/bus.md#delivery).
//!
//! [`Outbox`] keeps what must still be sent; [`publish_loop`] drains it into
//! an [`EventSink`] ([`JetStreamSink`] in production, a recording fake in
//! tests).
//!
//! ```no_run
//! use std::sync::Arc;
//! use std::time::Duration;
//!
//! use mesh_runtime::outbox::{publish_loop, JetStreamSink, Outbox};
//!
//! # async fn run(client: async_nats::Client, event: mesh_protocol::Event, subject: String) {
//! let outbox = Arc::new(Outbox::new());
//! let sink = Arc::new(JetStreamSink::new(client, Duration::from_secs(5)));
//! let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
//! let publisher = tokio::spawn(publish_loop(Arc::clone(&outbox), sink, Duration::from_secs(2), async {
//!     let _ = stopped.await;
//! }));
//! outbox.put(subject, &event);
//! // ... later: one last try, then the events still pending are counted.
//! let _ = stop.send(());
//! let pending = publisher.await.unwrap_or_default();
//! # let _ = pending;
//! # }
//! ```

mod jetstream;
mod publisher;

use std::collections::BTreeMap;
use std::sync::Mutex;

use async_trait::async_trait;
use bytes::Bytes;
use mesh_protocol::subject::parse_event_subject;
use mesh_protocol::{Event, EventKind, Name};
use tokio::sync::Notify;

pub use jetstream::JetStreamSink;
pub use publisher::publish_loop;

/// Where events go.
///
/// # Guarantees expected of an implementation
/// `Ok` means the event was stored by the receiver (for JetStream: the
/// publish ack arrived). Anything else is an `Err`, and the event is sent
/// again later with the same `msg_id` (receivers deduplicate by it).
#[async_trait]
pub trait EventSink: Send + Sync + 'static {
    /// Sends one event and waits until it is stored.
    async fn publish(&self, subject: &str, msg_id: &str, body: Bytes) -> Result<(), SinkError>;

    /// Whether the receiver can be reached now (for JetStream: the client
    /// is connected). At a stop, pending events get one last try only when
    /// it can: a try while it is away would only wait out its timeout.
    fn is_connected(&self) -> bool {
        true
    }
}

/// An event that was not stored; it stays pending and is sent again.
#[derive(Debug, thiserror::Error)]
#[error("event on {subject} not acknowledged: {reason}")]
pub struct SinkError {
    /// The event's subject.
    pub subject: String,
    /// Why.
    pub reason: String,
}

/// Which pending event a newer one replaces: only the newest per key is sent.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Key {
    /// `failing` and `recovered` of one consumer (the newer replaces the older).
    Standing(Name),
    /// One retirement action of one consumer.
    Retirement(Name, &'static str),
    /// Repairs of one fault.
    Repair(Name),
    /// The provider's `alive`, or the grant agent's `read` of its file
    /// (only the newest matters).
    Alive,
    /// The events of one grant: the subject's emitter (machine, consumer;
    /// none when the subject is not an event subject), the provision and
    /// the provider.
    Grant(Option<(Name, Name)>, String, String),
}

impl Key {
    /// The key an event for `subject` is kept pending under.
    pub fn of(subject: &str, event: &Event) -> Key {
        let grant = |provision: &str, from: &str| {
            let emitter =
                parse_event_subject(subject).map(|(machine, consumer, _)| (machine, consumer));
            Key::Grant(emitter, provision.to_owned(), from.to_owned())
        };
        match event {
            Event::Unreachable(b) => grant(&b.provision, &b.from),
            Event::Reachable(b) => grant(&b.provision, &b.from),
            Event::Unchecked(b) => grant(&b.provision, &b.from),
            Event::Failing(b) => Key::Standing(b.consumer.clone()),
            Event::Recovered(b) => Key::Standing(b.consumer.clone()),
            Event::Retirement(b) => Key::Retirement(b.consumer.clone(), b.action.as_str()),
            Event::Repair(b) => Key::Repair(b.fault.clone()),
            Event::Alive(_) | Event::GrantsRead(_) => Key::Alive,
        }
    }
}

/// An event waiting for its ack.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pending {
    /// Order in which events were put; a newer event has a higher number.
    pub seq: u64,
    /// The subject.
    pub subject: String,
    /// Deduplication id (`Nats-Msg-Id`), the same on every try.
    pub msg_id: String,
    /// The body.
    pub body: Bytes,
    /// The kind, for logs.
    pub kind: EventKind,
}

#[derive(Debug, Default)]
struct Inner {
    next_seq: u64,
    pending: BTreeMap<Key, Pending>,
}

/// Events not yet acknowledged (*pending*), the newest per [`Key`].
#[derive(Debug)]
pub struct Outbox {
    run_id: String,
    inner: Mutex<Inner>,
    notify: Notify,
}

impl Default for Outbox {
    fn default() -> Self {
        Outbox::new()
    }
}

impl Outbox {
    /// An empty outbox. Message ids carry a per-process run id so a restarted
    /// provider's events are never mistaken for duplicates of an earlier run's.
    pub fn new() -> Outbox {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default();
        Outbox {
            run_id: format!("{nanos:x}-{}", std::process::id()),
            inner: Mutex::new(Inner::default()),
            notify: Notify::new(),
        }
    }

    /// Keeps `event` pending for `subject`, replacing an older pending event of the same key.
    pub fn put(&self, subject: String, event: &Event) {
        let key = Key::of(&subject, event);
        let body = Bytes::from(event.to_json());
        let mut inner = self.inner.lock().expect("outbox lock");
        inner.next_seq += 1;
        let seq = inner.next_seq;
        let msg_id = format!("{}:{}", self.run_id, seq);
        inner.pending.insert(
            key,
            Pending {
                seq,
                subject,
                msg_id,
                body,
                kind: event.kind(),
            },
        );
        drop(inner);
        self.notify.notify_one();
    }

    /// Every pending event, oldest first.
    pub fn snapshot(&self) -> Vec<(Key, Pending)> {
        let inner = self.inner.lock().expect("outbox lock");
        let mut all: Vec<(Key, Pending)> = inner
            .pending
            .iter()
            .map(|(k, p)| (k.clone(), p.clone()))
            .collect();
        all.sort_by_key(|(_, p)| p.seq);
        all
    }

    /// The event `seq` under `key` was acknowledged: drop it unless a newer event replaced it.
    pub fn done(&self, key: &Key, seq: u64) {
        let mut inner = self.inner.lock().expect("outbox lock");
        if inner.pending.get(key).is_some_and(|p| p.seq == seq) {
            inner.pending.remove(key);
        }
    }

    /// How many events are pending.
    pub fn len(&self) -> usize {
        self.inner.lock().expect("outbox lock").pending.len()
    }

    /// Whether nothing is pending.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Resolves when an event was put since the last call.
    pub async fn changed(&self) {
        self.notify.notified().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mesh_protocol::event::{Recovered, RecoveredReason, VERSION};
    use mesh_protocol::Timestamp;

    fn recovered(consumer: &str, reason: RecoveredReason) -> Event {
        Event::Recovered(Recovered {
            v: VERSION,
            consumer: Name::parse(consumer).unwrap(),
            consumer_machine: None,
            provision: None,
            reason,
            said_at: Timestamp::parse("2026-10-05T00:00:00Z").unwrap(),
        })
    }

    #[test]
    fn the_newest_event_per_key_is_pending() {
        let outbox = Outbox::new();
        outbox.put(
            "s.a".into(),
            &recovered("a", RecoveredReason::FirstSuccessAfterStart),
        );
        outbox.put("s.b".into(), &recovered("b", RecoveredReason::Success));
        outbox.put("s.a".into(), &recovered("a", RecoveredReason::Success));
        let pending = outbox.snapshot();
        assert_eq!(pending.len(), 2);
        assert_eq!(pending[0].0, Key::Standing(Name::parse("b").unwrap()));
        assert!(String::from_utf8_lossy(&pending[1].1.body).contains("\"reason\":\"success\""));
    }

    #[test]
    fn one_grant_event_is_pending_per_consumer_provision_and_provider() {
        use mesh_protocol::event::{GrantReachable, GrantUnchecked, ReachableReason, VERSION};
        use mesh_protocol::subject::event_subject;
        use mesh_protocol::Timestamp;

        let name = |s: &str| Name::parse(s).unwrap();
        let said_at = Timestamp::parse("2026-10-05T00:00:00Z").unwrap();
        let event = |kind: EventKind, from: &str| match kind {
            EventKind::Unchecked => Event::Unchecked(GrantUnchecked {
                v: VERSION,
                provision: "postgres-database".into(),
                from: from.into(),
                reason: "no port".into(),
                said_at,
            }),
            _ => Event::Reachable(GrantReachable {
                v: VERSION,
                provision: "postgres-database".into(),
                from: from.into(),
                address: "10.0.0.1".into(),
                port: 5432,
                reason: ReachableReason::Success,
                said_at,
            }),
        };
        let outbox = Outbox::new();
        let machine = name("app-1");
        for (consumer, kind, from) in [
            ("forge", EventKind::Unchecked, "postgres@db-1"),
            ("forge", EventKind::Reachable, "postgres@db-1"),
            ("wiki", EventKind::Unchecked, "postgres@db-1"),
            ("forge", EventKind::Unchecked, "postgres@db-2"),
        ] {
            let subject = event_subject(&machine, &name(consumer), kind);
            outbox.put(subject, &event(kind, from));
        }
        let pending: Vec<(String, EventKind)> = outbox
            .snapshot()
            .into_iter()
            .map(|(_, p)| (p.subject, p.kind))
            .collect();
        assert_eq!(
            pending,
            [
                (
                    "mesh.event.app-1.forge.grant.reachable".to_owned(),
                    EventKind::Reachable
                ),
                (
                    "mesh.event.app-1.wiki.grant.unchecked".to_owned(),
                    EventKind::Unchecked
                ),
                (
                    "mesh.event.app-1.forge.grant.unchecked".to_owned(),
                    EventKind::Unchecked
                ),
            ]
        );
    }

    #[test]
    fn done_drops_only_the_acknowledged_event() {
        let outbox = Outbox::new();
        outbox.put("s".into(), &recovered("a", RecoveredReason::Success));
        let (key, first) = outbox.snapshot().remove(0);
        outbox.put("s".into(), &recovered("a", RecoveredReason::Retired));
        outbox.done(&key, first.seq);
        assert_eq!(
            outbox.len(),
            1,
            "a newer event survives the older one's ack"
        );
        let (key, second) = outbox.snapshot().remove(0);
        assert_ne!(first.msg_id, second.msg_id);
        outbox.done(&key, second.seq);
        assert!(outbox.is_empty());
    }
}
