//! The link's rounds: provider events from a message source into a
//! [`Store`], as `mesh-controller serve` runs them over JetStream and the
//! simulator over its own bus.
//!
//! # Expected flow
//! [`follow_messages`] follows a [`Messages`] source until stopped. Each
//! round takes what is waiting (at most [`LinkSettings::batch`] messages, in
//! stream order), reads every message's emitter from its subject, applies
//! the events in one transaction and acknowledges them after the commit.
//!
//! # Guarantees
//! - At least once: a message is acknowledged (double ack for the last of a
//!   round, which the server answers after the earlier acks) only after the
//!   store committed it.
//! - While the store is away, a round is NAKed as a whole with a growing
//!   delay, so the source delivers it again: a `recovered` is delivered again, never
//!   dropped.
//! - Order: the consumer allows `batch` unacknowledged messages, a round is
//!   applied in stream order in one transaction and acknowledged or NAKed as
//!   a whole. The store also orders events by their place in the stream,
//!   `(stream epoch, stream sequence)`, never by a provider's clock, so a
//!   redelivery never undoes a newer event.
//! - A message whose subject or body is malformed is logged and terminated
//!   (`+TERM`): it never blocks the stream.
//! - Stopping waits for a pull in flight (at most [`LinkSettings::wait`],
//!   none while the bus is away) and for the round in progress (at most a
//!   second: a round waiting on a store or bus that does not answer is
//!   dropped, and its unacknowledged events are delivered again).
//! - A stop is a [`Stop`] (the program shell requests it on SIGINT or
//!   SIGTERM).
//! - It records itself in the store (its host, pid and start): when it
//!   last *caught up* (a pull came back short, not because delivery waits
//!   on acknowledgements, and nothing is NAKed for the store) and when it
//!   last committed a round, at once when it catches up
//!   again and else at most every half pull wait, so `status` can tell a
//!   controller that follows nothing from providers that say nothing.
//! - Between rounds it removes history past [`LinkSettings::keep_history`],
//!   at most [`PRUNE_BATCH`] rows at a time (see [`PruneSchedule`]).

mod decode;
mod gauges;
mod observe;
#[cfg(test)]
mod outage_tests;
mod progress;
mod prune;
mod pulls;
mod record;
mod source;

use std::time::Duration;

use futures::future::join_all;

pub use decode::{decode, Malformed};
pub use gauges::{ProblemLabels, StatusGauges};
pub use observe::{BusConnection, BusWatch, LinkState};
pub use prune::{PruneSchedule, PRUNE_AGAIN, PRUNE_BATCH, PRUNE_EVERY};
pub use source::{ConsumerPending, Delivery, DeliveryError, DeliveryErrorKind, Messages};

use mesh_protocol::Timestamp;
use mesh_runtime::{Backoff, Stop};

use crate::model::text::cut_text;
use crate::model::{Instance, Received};
use crate::store::{Store, StoreError};
use progress::{LinkProgress, PullEnd};
use pulls::Pulled;
use record::this_process;

/// How the link runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LinkSettings {
    /// Messages taken and applied per round (one transaction), and the
    /// consumer's `max_ack_pending`. 1 takes one message at a time.
    pub batch: usize,
    /// How long one pull waits for a message when none is waiting.
    pub wait: Duration,
    /// First NAK delay while the store is away (doubling).
    pub nak_first: Duration,
    /// Longest NAK delay.
    pub nak_max: Duration,
    /// The consumer's ack wait: a message delivered but neither acknowledged
    /// nor NAKed is delivered again after it.
    pub ack_wait: Duration,
    /// How long the stream keeps an event the controller has not taken
    /// (it drops each event as soon as the controller acknowledged it).
    pub stream_max_age: Duration,
    /// How many servers of a NATS cluster keep the stream and the durable
    /// consumer (1 on a single server). An existing stream with fewer is
    /// raised in place; one with more is left as it is.
    pub replicas: usize,
    /// How long history is kept (`serve --keep-history`): older rows are
    /// removed between rounds, a small batch at a time.
    pub keep_history: Duration,
}

impl Default for LinkSettings {
    fn default() -> Self {
        LinkSettings {
            batch: DEFAULT_BATCH,
            wait: Duration::from_secs(2),
            nak_first: Duration::from_millis(500),
            nak_max: Duration::from_secs(30),
            ack_wait: Duration::from_secs(30),
            stream_max_age: DEFAULT_STREAM_MAX_AGE,
            replicas: DEFAULT_REPLICAS,
            keep_history: DEFAULT_KEEP_HISTORY,
        }
    }
}

/// The default [`LinkSettings::batch`].
pub const DEFAULT_BATCH: usize = 64;

/// The default [`LinkSettings::keep_history`]: 90 days.
pub const DEFAULT_KEEP_HISTORY: Duration = Duration::from_secs(90 * 24 * 3600);

/// The default [`LinkSettings::replicas`]: one server keeps the stream.
pub const DEFAULT_REPLICAS: usize = 1;

/// The most replicas JetStream allows a stream.
pub const MAX_REPLICAS: usize = 5;

/// The default [`LinkSettings::stream_max_age`]: 7 days.
pub const DEFAULT_STREAM_MAX_AGE: Duration = Duration::from_secs(7 * 24 * 3600);

/// Sleeps `delay`; returns true when `stop` was requested meanwhile.
pub async fn pause(delay: Duration, stop: &Stop) -> bool {
    stop.run_until_stopped(tokio::time::sleep(delay))
        .await
        .is_none()
}

/// What one round did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Round {
    /// Events committed and acknowledged.
    applied: usize,
    /// Malformed messages terminated (and events the store refused as such).
    terminated: usize,
    /// Messages NAKed because the store was away.
    naked: usize,
    /// The NAK delay, when messages were NAKed.
    retry_in: Option<Duration>,
}

/// How long a round in progress at a stop may still take before it is
/// dropped (its events unacknowledged: delivered again).
const STOP_GRACE: Duration = Duration::from_secs(1);

/// Why [`follow_messages`] returned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Followed {
    /// `stop` resolved.
    Stopped,
    /// The consumer is gone (deleted, or the server lost its store), or
    /// pulls keep failing: set the stream and consumer up again, then follow again.
    ConsumerLost,
}

/// Follows `consumer` (the stream of epoch `epoch`) into `store` until
/// `stop` is requested (see the module docs for the guarantees): the
/// link's rounds, as `serve` runs them over JetStream, for any source.
/// Errors of the store are logged and waited out; a consumer found gone,
/// or pulls failing many times in a row, end it with
/// [`Followed::ConsumerLost`].
pub async fn follow_messages<M: Messages, S: Store>(
    consumer: &mut M,
    epoch: u64,
    store: &mut S,
    settings: &LinkSettings,
    state: &LinkState,
    stop: &Stop,
) -> Followed {
    let mut link = Link {
        epoch,
        store,
        settings,
        state,
        lag_read: None,
        backoff: Backoff::new(settings.nak_first, settings.nak_max),
        progress: LinkProgress::new(settings.wait),
        instance: this_process(settings.wait),
        prune: PruneSchedule::default(),
    };
    loop {
        let pull_started = tokio::time::Instant::now();
        // A pull while the bus is away comes back empty without an error
        // (the client's own expiry): that is no catching up.
        let connected_before = state.bus_connected();
        let (messages, stopping) = {
            let pull = link.pull(&mut *consumer);
            tokio::pin!(pull);
            tokio::select! {
                biased;
                messages = &mut pull => (messages, false),
                () = stop.requested() => {
                    // A pull in flight ends within its wait while the bus
                    // is there (so none is abandoned); while it is away,
                    // nothing can come and it is not waited for.
                    let grace = match state.bus_connected() {
                        true => settings.wait,
                        false => Duration::ZERO,
                    };
                    (tokio::time::timeout(grace, &mut pull).await.unwrap_or_default(), true)
                }
            }
        };
        if !stopping
            && stop
                .run_until_stopped(link.pulled(&mut *consumer))
                .await
                .is_none()
        {
            break;
        }
        // A pull that came back short found nothing more waiting.
        let short = messages.len() < settings.batch.max(1);
        if !messages.is_empty() {
            tracing::trace!(pulled_in = ?pull_started.elapsed(), messages = messages.len(), "pulled");
            // A round waiting on a store or a bus that does not answer is
            // not waited for past the grace: its messages are not
            // acknowledged, so they are delivered again (at least once).
            let Some(round) = stop.run_with_grace(link.round(messages), STOP_GRACE).await else {
                tracing::warn!("stopping in the middle of a round: its events are delivered again");
                break;
            };
            tracing::debug!(
                applied = round.applied,
                terminated = round.terminated,
                naked = round.naked,
                "round done"
            );
            if let Some(delay) = round.retry_in {
                if stopping || pause(delay, stop).await {
                    break;
                }
                continue;
            }
        }
        if stopping || stop.is_requested() {
            break;
        }
        let pull = PullEnd {
            short,
            connected_before,
            connected_after: state.bus_connected(),
        };
        // Delivery is asked last, only when the rest says caught up.
        let caught_up = link.progress.behind(pull).is_none()
            && stop
                .run_until_stopped(link.delivery_free(&mut *consumer))
                .await
                .unwrap_or(false);
        // The turn's time, read once: the record's schedule and the
        // caught-up gauge's (its wall time from the state's clock).
        let now = tokio::time::Instant::now();
        if caught_up {
            link.state.caught_up(now);
        }
        if stop
            .run_until_stopped(link.record(caught_up, now))
            .await
            .is_none()
        {
            break;
        }
        if stop.run_until_stopped(link.prune()).await.is_none() {
            break;
        }
        if link.progress.must_set_up_again() {
            return Followed::ConsumerLost;
        }
    }
    Followed::Stopped
}

struct Link<'a, S> {
    /// The followed stream's epoch (every event's, with its sequence).
    epoch: u64,
    store: &'a mut S,
    settings: &'a LinkSettings,
    state: &'a LinkState,
    /// When the stream's lag was last read.
    lag_read: Option<tokio::time::Instant>,
    backoff: Backoff,
    /// What it keeps of its pulls, rounds and records, and decides from.
    progress: LinkProgress,
    /// This process, as the store records it.
    instance: Instance,
    /// When history's retention next removes a batch.
    prune: PruneSchedule,
}

/// How often the stream's lag is read for the metrics.
const LAG_EVERY: Duration = Duration::from_secs(5);

impl<S> Link<'_, S> {
    /// A pull finished: the link moves; now and then the stream's lag is read.
    async fn pulled<M: Messages>(&mut self, consumer: &mut M) {
        self.state.progress.tick();
        let now = tokio::time::Instant::now();
        if self.lag_read.is_some_and(|at| now < at + LAG_EVERY) {
            return;
        }
        self.lag_read = Some(now);
        if let Ok(pending) = consumer.pending().await {
            self.state.lag(pending.lag());
        }
    }

    /// Whether a short pull means caught up: not while delivery waits on
    /// acknowledgements ([`ConsumerPending::blocked`]: `max_ack_pending`
    /// full of messages whose acks were lost, new events behind them).
    /// Asked only after a pull that would otherwise mean caught up; not
    /// knowing is not caught up.
    async fn delivery_free<M: Messages>(&mut self, consumer: &mut M) -> bool {
        match consumer.pending().await {
            Ok(pending) => {
                self.state.lag(pending.lag());
                let blocked = pending.blocked(self.settings.batch.max(1));
                if blocked {
                    tracing::debug!(
                        undelivered = pending.undelivered,
                        unacknowledged = pending.unacknowledged,
                        "a short pull, but events wait behind unacknowledged ones: not caught up"
                    );
                }
                !blocked
            }
            Err(_) => false,
        }
    }

    /// Asks the server for the consumer; marks it lost when it is not there.
    async fn check_consumer<M: Messages>(&mut self, consumer: &mut M) {
        match consumer.pending().await {
            Ok(_) => {}
            Err(error) => {
                tracing::warn!(error = %error, kind = ?error.kind(), "the consumer is not there");
                self.progress.consumer_lost();
            }
        }
    }
}

impl<S: Store> Link<'_, S> {
    /// The messages waiting (at most `batch`), or, when none is, the first
    /// to arrive within `wait`. Every pull request is read to its end. A
    /// pull that fails without a message is logged and waited out (its
    /// failures in a row are counted in `pull_failures`).
    async fn pull<M: Messages>(&mut self, consumer: &mut M) -> Vec<M::Message> {
        let batch = self.settings.batch.max(1);
        let connected_before = self.state.bus_connected();
        let (messages, failure) = consumer.pull(batch, self.settings.wait).await;
        let connected_after = self.state.bus_connected();
        match pulls::pulled(
            messages.len(),
            failure.is_some(),
            connected_before,
            connected_after,
        ) {
            Pulled::Failed => {
                self.progress.pull_failed();
                // Said once an outage, also when the consumer is set up
                // again in between.
                if self.state.pull_failed() == 1 {
                    match &failure {
                        Some(error) => tracing::warn!(
                            error = %error,
                            kind = ?error.kind(),
                            "cannot pull events; trying again"
                        ),
                        None => tracing::warn!("cannot pull events; trying again"),
                    }
                }
                self.check_consumer(consumer).await;
                tokio::time::sleep(self.settings.wait.min(Duration::from_secs(1))).await;
            }
            // An empty pull while the bus is away: the failures go on,
            // uncounted (the client reconnects by itself).
            Pulled::Unknown => {}
            Pulled::Worked => {
                if self.progress.pull_worked() {
                    if let Some(failures) = self.state.pull_worked() {
                        tracing::info!(failures, "pulling events works again");
                    }
                }
            }
        }
        // A pull of a deleted consumer just finds nothing: look now and then.
        if self.progress.pulled(messages.len()) {
            self.check_consumer(consumer).await;
        }
        messages
    }

    /// Decodes, applies and acknowledges (or NAKs) one round.
    async fn round<D: Delivery>(&mut self, messages: Vec<D>) -> Round {
        let mut round = Round::default();
        let mut decoded: Vec<(D, Received)> = Vec::with_capacity(messages.len());
        for message in messages {
            let seq = message.stream_sequence();
            match decode(message.subject(), message.payload(), self.epoch, seq) {
                Ok(mut received) => {
                    received.stored_at = message.stored_at().map(Timestamp::from_system);
                    decoded.push((message, received));
                }
                Err(reason) => {
                    tracing::error!(subject = %cut_text(message.subject()), seq, reason = %reason, "malformed event terminated");
                    terminate(&message).await;
                    round.terminated += 1;
                }
            }
        }
        if decoded.is_empty() {
            return round;
        }
        let batch: Vec<Received> = decoded.iter().map(|(_, w)| w.clone()).collect();
        let started = tokio::time::Instant::now();
        match self.store.apply(&batch).await {
            Ok(()) => {
                let applied_in = started.elapsed();
                self.stored(&batch);
                acknowledge(decoded.iter().map(|(m, _)| m)).await;
                tracing::trace!(?applied_in, acked_in = ?(started.elapsed() - applied_in), "round timing");
                round.applied += decoded.len();
            }
            Err(error) if error.is_transient() => {
                let delay = self.naked(&error, decoded.len());
                nak(decoded.iter().map(|(m, _)| m), delay).await;
                round.naked += decoded.len();
                round.retry_in = Some(delay);
            }
            Err(error) => {
                tracing::warn!(error = %error, events = decoded.len(), "the store refused a round; applying its events one by one");
                self.state.store_failed(false);
                let mut rest = decoded.into_iter();
                for (message, received) in rest.by_ref() {
                    match self.store.apply(std::slice::from_ref(&received)).await {
                        Ok(()) => {
                            self.stored(std::slice::from_ref(&received));
                            acknowledge(std::iter::once(&message)).await;
                            round.applied += 1;
                        }
                        Err(error) if error.is_transient() => {
                            let delay = self.naked(&error, 1);
                            round.retry_in = Some(delay);
                            let left: Vec<D> = std::iter::once(message)
                                .chain(rest.by_ref().map(|(m, _)| m))
                                .collect();
                            round.naked += left.len();
                            nak(left.iter(), delay).await;
                            break;
                        }
                        Err(error) => {
                            tracing::error!(
                                error = %error,
                                subject = %message.subject(),
                                seq = received.seq,
                                "the store refuses this event as such; terminated"
                            );
                            terminate(&message).await;
                            round.terminated += 1;
                        }
                    }
                }
            }
        }
        round
    }

    fn stored(&mut self, events: &[Received]) {
        self.state.applied(events);
        self.progress.stored();
        if self.backoff.failures() > 0 {
            tracing::info!(
                after_failures = self.backoff.failures(),
                "the store takes events again"
            );
            self.backoff.reset();
        }
        for received in events {
            tracing::debug!(
                emitter = %received.emitter,
                kind = received.event.kind().as_str(),
                seq = received.seq,
                said_at = %received.event.said_at(),
                "event stored"
            );
        }
    }

    /// Logs a failed round; returns its NAK delay.
    fn naked(&mut self, error: &StoreError, count: usize) -> Duration {
        self.state.store_failed(true);
        self.progress.naked();
        let delay = self.backoff.next_delay();
        if self.backoff.failures() == 1 {
            tracing::warn!(error = %error, naked = count, retry_in = ?delay, "store away: events are NAKed and delivered again");
        } else {
            tracing::debug!(error = %error, naked = count, retry_in = ?delay, "store still away");
        }
        delay
    }
}

/// Acknowledges messages: plain acks, then a double ack of the last one,
/// which the server answers after it processed the earlier acks.
async fn acknowledge<'m, D: Delivery + 'm>(messages: impl Iterator<Item = &'m D>) {
    let messages: Vec<&D> = messages.collect();
    let Some((last, earlier)) = messages.split_last() else {
        return;
    };
    for message in earlier {
        if let Err(error) = message.ack().await {
            tracing::warn!(error = %error, subject = %message.subject(), "ack not sent; the event will be delivered again");
        }
    }
    if let Err(error) = last.double_ack().await {
        tracing::warn!(error = %error, "ack not confirmed; these events may be delivered again (applying them again changes nothing)");
    }
}

/// NAKs messages with `delay`, in stream order.
async fn nak<'m, D: Delivery + 'm>(messages: impl Iterator<Item = &'m D>, delay: Duration) {
    let naks = messages.map(|m| m.nak(delay));
    for result in join_all(naks).await {
        if let Err(error) = result {
            tracing::warn!(error = %error, "NAK not sent; the event is delivered again after the ack wait");
        }
    }
}

async fn terminate<D: Delivery>(message: &D) {
    if let Err(error) = message.term().await {
        tracing::warn!(error = %error, subject = %message.subject(), "terminating a malformed event was not confirmed; it may come again");
    }
}
