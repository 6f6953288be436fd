//! The in-memory bus: one work-queue stream with JetStream's publish
//! deduplication, and the controller's durable pull consumer with its ack
//! wait, `max_ack_pending`, NAK delays and redelivery. Providers publish
//! through [`SimSink`] (an [`EventSink`] behind the real `Outbox`); the link
//! pulls through [`SimConsumer`] (its [`Messages`]).
//!
//! Faults: the bus away (every publish and pull fails), one provider cut
//! off (its publishes fail), publish acks lost (the event is stored, the
//! provider is told it was not and sends it again), the controller's acks
//! lost (the message is delivered again after the ack wait).

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use async_trait::async_trait;
use bytes::Bytes;
use mesh_runtime::outbox::{EventSink, Outbox, SinkError};
use mesh_status::link::ConsumerPending;
use mesh_status::link::{Delivery, DeliveryError, DeliveryErrorKind, Messages};
use tokio::sync::Notify;
use tokio::time::Instant;

use crate::rng::Rng;

/// JetStream's default duplicate window.
pub const DUPLICATE_WINDOW: Duration = Duration::from_secs(120);

/// Where a message stands with the durable consumer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Held {
    /// Not delivered yet.
    Fresh,
    /// Delivered, awaiting its ack until the deadline.
    Delivered(Instant),
    /// NAKed: delivered again from then on.
    Naked(Instant),
}

/// A message in the stream.
#[derive(Clone, Debug)]
struct Kept {
    subject: String,
    body: Bytes,
    held: Held,
    at: Instant,
}

/// One message the stream ever stored (the ground truth of I4).
#[derive(Clone, Debug)]
pub struct Stored {
    /// Its stream sequence.
    pub seq: u64,
    /// Its subject.
    pub subject: String,
    /// Its body.
    pub body: Bytes,
    /// When it was stored.
    pub at: Instant,
}

#[derive(Debug)]
struct State {
    up: bool,
    next_seq: u64,
    stream: BTreeMap<u64, Kept>,
    /// `(publisher, msg id)` → when it was stored.
    dedup: BTreeMap<(usize, String), Instant>,
    /// The keys of `dedup`, oldest first (they leave the window in that order).
    dedup_order: VecDeque<(Instant, (usize, String))>,
    /// Messages stored and not yet taken by [`Bus::take_history`], in stream order.
    history: Vec<Stored>,
    /// Providers cut off from the bus until then.
    cut_until: BTreeMap<usize, Instant>,
    /// Providers whose publish acks are lost: until, per mille.
    publish_loss: BTreeMap<usize, (Instant, u64)>,
    /// Controller acks lost: until, per mille.
    ack_loss: Option<(Instant, u64)>,
    rng: Rng,
    max_ack_pending: usize,
    ack_wait: Duration,
    /// The server's clock: this wall time at this instant.
    clock: (Instant, SystemTime),
}

/// The bus; clones share it.
#[derive(Clone, Debug)]
pub struct Bus {
    state: Arc<Mutex<State>>,
    arrived: Arc<Notify>,
}

impl Bus {
    /// An empty bus whose consumer allows `max_ack_pending` unacknowledged
    /// messages and redelivers after `ack_wait`; fault decisions from `rng`.
    /// The server's clock reads `wall` at `at`.
    pub fn new(
        max_ack_pending: usize,
        ack_wait: Duration,
        rng: Rng,
        (at, wall): (Instant, SystemTime),
    ) -> Bus {
        Bus {
            state: Arc::new(Mutex::new(State {
                up: true,
                next_seq: 0,
                stream: BTreeMap::new(),
                dedup: BTreeMap::new(),
                dedup_order: VecDeque::new(),
                history: Vec::new(),
                cut_until: BTreeMap::new(),
                publish_loss: BTreeMap::new(),
                ack_loss: None,
                rng,
                max_ack_pending,
                ack_wait,
                clock: (at, wall),
            })),
            arrived: Arc::new(Notify::new()),
        }
    }

    fn with<R>(&self, f: impl FnOnce(&mut State) -> R) -> R {
        f(&mut self.state.lock().expect("bus lock"))
    }

    /// Sets whether the bus is there.
    pub fn set_up(&self, up: bool) {
        self.with(|s| s.up = up);
    }

    /// Whether the bus is there.
    pub fn is_up(&self) -> bool {
        self.with(|s| s.up)
    }

    /// Cuts provider `p` off until `until`.
    pub fn cut(&self, p: usize, until: Instant) {
        self.with(|s| s.cut_until.insert(p, until));
    }

    /// Whether provider `p` can publish now.
    pub fn reaches(&self, p: usize) -> bool {
        let now = Instant::now();
        self.with(|s| s.up && s.cut_until.get(&p).is_none_or(|u| *u <= now))
    }

    /// Loses `per_mille` of provider `p`'s publish acks until `until`.
    pub fn lose_publish_acks(&self, p: usize, until: Instant, per_mille: u64) {
        self.with(|s| s.publish_loss.insert(p, (until, per_mille)));
    }

    /// Loses `per_mille` of the controller's acks until `until`.
    pub fn lose_acks(&self, until: Instant, per_mille: u64) {
        self.with(|s| s.ack_loss = Some((until, per_mille)));
    }

    /// Every message stored since the last call, in stream order (the
    /// checker's one reading of the ground truth; what it took is dropped,
    /// so a simulated day does not keep millions of events).
    pub fn take_history(&self) -> Vec<Stored> {
        self.with(|s| std::mem::take(&mut s.history))
    }

    /// Messages in the stream (not acknowledged yet).
    pub fn unacknowledged(&self) -> usize {
        self.with(|s| s.stream.len())
    }

    /// A sink for provider `p`.
    pub fn sink(&self, p: usize) -> SimSink {
        SimSink {
            bus: self.clone(),
            publisher: p,
        }
    }

    /// The controller's consumer.
    pub fn consumer(&self) -> SimConsumer {
        SimConsumer { bus: self.clone() }
    }

    fn deliverable(s: &State, now: Instant) -> impl Iterator<Item = (&u64, &Kept)> {
        s.stream.iter().filter(move |(_, k)| match k.held {
            Held::Fresh => true,
            Held::Delivered(deadline) => deadline <= now,
            Held::Naked(at) => at <= now,
        })
    }

    /// Takes at most `batch` deliverable messages, in stream order.
    fn take(&self, batch: usize) -> Vec<SimMessage> {
        let now = Instant::now();
        self.with(|s| {
            let outstanding = s
                .stream
                .values()
                .filter(|k| matches!(k.held, Held::Delivered(d) if d > now))
                .count();
            let room = s.max_ack_pending.saturating_sub(outstanding).min(batch);
            let seqs: Vec<u64> = Bus::deliverable(s, now)
                .take(room)
                .map(|(seq, _)| *seq)
                .collect();
            let deadline = now + s.ack_wait;
            seqs.into_iter()
                .filter_map(|seq| {
                    let kept = s.stream.get_mut(&seq)?;
                    kept.held = Held::Delivered(deadline);
                    let (at, wall) = s.clock;
                    Some(SimMessage {
                        bus: self.clone(),
                        seq,
                        stored_at: wall + (kept.at - at),
                        subject: kept.subject.clone(),
                        body: kept.body.clone(),
                    })
                })
                .collect()
        })
    }

    /// Whether an ack (of the controller or to a publisher) is lost now.
    fn lost(s: &mut State, loss: Option<(Instant, u64)>) -> bool {
        match loss {
            Some((until, per_mille)) if Instant::now() < until => s.rng.chance(per_mille),
            _ => false,
        }
    }

    fn ack_lost(&self) -> bool {
        self.with(|s| {
            let loss = s.ack_loss;
            Bus::lost(s, loss)
        })
    }

    /// Settles message `seq` (acked or terminated): the work queue drops it.
    fn remove(&self, seq: u64) {
        self.with(|s| s.stream.remove(&seq));
    }
}

/// Provider `publisher`'s way onto the bus.
#[derive(Clone, Debug)]
pub struct SimSink {
    bus: Bus,
    publisher: usize,
}

#[async_trait]
impl EventSink for SimSink {
    async fn publish(&self, subject: &str, msg_id: &str, body: Bytes) -> Result<(), SinkError> {
        let refused = |reason: &str| SinkError {
            subject: subject.to_owned(),
            reason: reason.to_owned(),
        };
        if !self.bus.reaches(self.publisher) {
            return Err(refused("no responders: the bus is away"));
        }
        let now = Instant::now();
        let stored = self.bus.with(|s| {
            while let Some((at, _)) = s.dedup_order.front() {
                if *at + DUPLICATE_WINDOW > now {
                    break;
                }
                if let Some((_, key)) = s.dedup_order.pop_front() {
                    s.dedup.remove(&key);
                }
            }
            let key = (self.publisher, msg_id.to_owned());
            if let std::collections::btree_map::Entry::Vacant(entry) = s.dedup.entry(key.clone()) {
                entry.insert(now);
                s.dedup_order.push_back((now, key));
                s.next_seq += 1;
                let seq = s.next_seq;
                s.stream.insert(
                    seq,
                    Kept {
                        subject: subject.to_owned(),
                        body: body.clone(),
                        held: Held::Fresh,
                        at: now,
                    },
                );
                s.history.push(Stored {
                    seq,
                    subject: subject.to_owned(),
                    body,
                    at: now,
                });
            }
            let loss = s.publish_loss.get(&self.publisher).copied();
            !Bus::lost(s, loss)
        });
        self.bus.arrived.notify_waiters();
        match stored {
            true => Ok(()),
            false => Err(refused("timed out waiting for the publish ack")),
        }
    }
}

/// What the client says while the bus is away.
fn away() -> DeliveryError {
    DeliveryError::new(DeliveryErrorKind::Unreachable, "the bus is away")
}

/// The controller's durable pull consumer.
#[derive(Clone, Debug)]
pub struct SimConsumer {
    bus: Bus,
}

#[async_trait]
impl Messages for SimConsumer {
    type Message = SimMessage;

    async fn pull(
        &mut self,
        batch: usize,
        wait: Duration,
    ) -> (Vec<SimMessage>, Option<DeliveryError>) {
        if !self.bus.is_up() {
            return (Vec::new(), Some(away()));
        }
        let waiting = self.bus.take(batch);
        if !waiting.is_empty() {
            return (waiting, None);
        }
        // None waiting: the first to arrive within `wait` (or to become
        // deliverable again), as a pull request of one that expires.
        let deadline = Instant::now() + wait;
        loop {
            let arrived = self.bus.arrived.notified();
            let step = Duration::from_millis(500).min(deadline - Instant::now());
            let _ = tokio::time::timeout(step, arrived).await;
            if !self.bus.is_up() {
                return (Vec::new(), Some(away()));
            }
            let next = self.bus.take(1);
            if !next.is_empty() || Instant::now() >= deadline {
                return (next, None);
            }
        }
    }

    async fn pending(&mut self) -> Result<ConsumerPending, DeliveryError> {
        if !self.bus.is_up() {
            return Err(away());
        }
        Ok(self.bus.with(|s| {
            let undelivered = s.stream.values().filter(|k| k.held == Held::Fresh).count();
            let count = |n: usize| u64::try_from(n).unwrap_or(u64::MAX);
            ConsumerPending {
                undelivered: count(undelivered),
                unacknowledged: count(s.stream.len() - undelivered),
            }
        }))
    }
}

/// A message delivered to the controller.
#[derive(Debug)]
pub struct SimMessage {
    bus: Bus,
    seq: u64,
    stored_at: SystemTime,
    subject: String,
    body: Bytes,
}

#[async_trait]
impl Delivery for SimMessage {
    fn subject(&self) -> &str {
        &self.subject
    }

    fn payload(&self) -> &[u8] {
        &self.body
    }

    fn stream_sequence(&self) -> u64 {
        self.seq
    }

    fn stored_at(&self) -> Option<SystemTime> {
        Some(self.stored_at)
    }

    async fn ack(&self) -> Result<(), DeliveryError> {
        if !self.bus.is_up() {
            return Err(away());
        }
        // A plain ack is not answered: a lost one is not noticed.
        if !self.bus.ack_lost() {
            self.bus.remove(self.seq);
        }
        Ok(())
    }

    async fn double_ack(&self) -> Result<(), DeliveryError> {
        if !self.bus.is_up() || self.bus.ack_lost() {
            return Err(DeliveryError::new(
                DeliveryErrorKind::TimedOut,
                "timed out waiting for the ack's confirmation",
            ));
        }
        self.bus.remove(self.seq);
        Ok(())
    }

    async fn nak(&self, delay: Duration) -> Result<(), DeliveryError> {
        if !self.bus.is_up() {
            return Err(away());
        }
        let at = Instant::now() + delay;
        self.bus.with(|s| {
            if let Some(kept) = s.stream.get_mut(&self.seq) {
                kept.held = Held::Naked(at);
            }
        });
        Ok(())
    }

    async fn term(&self) -> Result<(), DeliveryError> {
        if !self.bus.is_up() {
            return Err(away());
        }
        self.bus.remove(self.seq);
        Ok(())
    }
}

/// One attempt at every pending event of `outbox`, oldest first, as the
/// runtime's publisher makes it (`mesh_runtime::outbox::publish_loop`):
/// acknowledged events are done, the others stay pending. Returns how many
/// are left.
pub async fn drain(outbox: &Outbox, sink: &dyn EventSink) -> usize {
    for (key, pending) in outbox.snapshot() {
        if sink
            .publish(&pending.subject, &pending.msg_id, pending.body.clone())
            .await
            .is_ok()
        {
            outbox.done(&key, pending.seq);
        }
    }
    outbox.len()
}
