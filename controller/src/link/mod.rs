//! The link (`serve`): provider events from JetStream into the store.
//!
//! # Expected flow
//! [`serve_until`] migrates the store, connects to the bus, creates or
//! updates the stream [`STREAM`] and the durable pull consumer [`DURABLE`],
//! then [`follow`]s it until stopped. Each round takes what is waiting (at
//! most [`LinkSettings::batch`] messages, in stream order), reads every
//! message's emitter from its subject, applies the words in one transaction
//! and acknowledges them after the commit.
//!
//! # Guarantees
//! - At least once: a message is acknowledged (double ack for the last of a
//!   round, which the server answers after the earlier acks) only after the
//!   store committed it.
//! - While the store is away, a round is NAKed as a whole with a growing
//!   delay, so JetStream delivers it again: a `recovered` is held, never
//!   dropped.
//! - Order: the consumer allows `batch` unacknowledged messages, a round is
//!   applied in stream order in one transaction and acknowledged or NAKed as
//!   a whole. The store also orders words by their place in the stream,
//!   `(stream epoch, stream sequence)`, never by a provider's clock, so a
//!   redelivery never undoes a newer word.
//! - A message whose subject or body is malformed is logged and terminated
//!   (`+TERM`): it never blocks the stream.
//! - Stopping waits for the round in progress (and a pull in flight, at most
//!   [`LinkSettings::wait`]): no pull request is abandoned.

mod decode;
mod observe;
mod stream;

use std::future::Future;
use std::time::Duration;

use async_nats::jetstream::consumer::PullConsumer;
use async_nats::jetstream::{AckKind, Message};
use futures::future::join_all;
use futures::{FutureExt, StreamExt};

pub use decode::{decode, Malformed};
pub use observe::LinkState;

use mesh_sdk::internal::Backoff;
pub use stream::{consumer_config, ensure_consumer, stream_config, Following, SetupError};

use crate::bus::{connect, BusError, NatsOptions, Reconnect, DURABLE, STREAM};
use crate::model::text::first_words;
use crate::model::Received as Word;
use crate::store::{migrate, DatabaseOptions, PgStore, Store, StoreError};

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
    /// How long the stream keeps a word the controller has not taken
    /// (it drops each word as soon as the controller acknowledged it).
    pub stream_max_age: Duration,
    /// How many servers of a NATS cluster keep the stream and the durable
    /// consumer (1 on a single server). An existing stream with fewer is
    /// raised in place; one with more is left as it is.
    pub replicas: usize,
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
        }
    }
}

/// The default [`LinkSettings::batch`].
pub const DEFAULT_BATCH: usize = 64;

/// The default [`LinkSettings::replicas`]: one server keeps the stream.
pub const DEFAULT_REPLICAS: usize = 1;

/// The most replicas JetStream allows a stream.
pub const MAX_REPLICAS: usize = 5;

/// The default [`LinkSettings::stream_max_age`]: 7 days.
pub const DEFAULT_STREAM_MAX_AGE: Duration = Duration::from_secs(7 * 24 * 3600);

/// The link could not run; ends `serve` (exit 2).
#[derive(Debug, thiserror::Error)]
pub enum LinkError {
    /// The bus could not be set up (credentials, URL).
    #[error(transparent)]
    Bus(#[from] BusError),
    /// The migrations failed for a reason other than the store being away.
    #[error(transparent)]
    Migrate(StoreError),
    /// The store refuses the controller's login or has no such database:
    /// waiting will not change it.
    #[error("{0}; check --database and its password")]
    Store(StoreError),
    /// The event stream exists with settings `serve` cannot change in place:
    /// waiting will not change it.
    #[error(transparent)]
    Stream(SetupError),
    /// The stop signals could not be installed.
    #[error("cannot install the stop signal handlers: {0}")]
    Signal(#[source] std::io::Error),
}

/// Migrates the store, then follows the events until `stop` resolves. The
/// store and the bus being away at start is waited out (logged), not an error.
///
/// # Errors
/// [`LinkError`] when the bus credentials are unusable, a migration fails,
/// or the event stream exists with settings `serve` cannot change.
pub async fn serve_until(
    database: &DatabaseOptions,
    nats: &NatsOptions,
    settings: LinkSettings,
    stop: impl Future<Output = ()>,
) -> Result<(), LinkError> {
    serve_observed(database, nats, settings, &LinkState::new(), stop).await
}

/// Like [`serve_until`], keeping `state` (metrics, progress, readiness) up to date.
///
/// # Errors
/// As [`serve_until`].
pub async fn serve_observed(
    database: &DatabaseOptions,
    nats: &NatsOptions,
    settings: LinkSettings,
    state: &LinkState,
    stop: impl Future<Output = ()>,
) -> Result<(), LinkError> {
    tokio::pin!(stop);
    let mut backoff = Backoff::new(settings.nak_first, settings.nak_max);
    loop {
        match migrate(database).await {
            Ok(applied) => {
                tracing::info!(store = %database, tls = %database.tls_shown(), applied, "store migrated");
                state.store_answered();
                break;
            }
            Err(error @ StoreError::Migrate { .. }) => return Err(LinkError::Migrate(error)),
            Err(error) if error.is_lasting() => return Err(LinkError::Store(error)),
            Err(error) => {
                let delay = backoff.next_delay();
                tracing::warn!(error = %error, retry_in = ?delay, "store away at start; waiting for it");
                if pause(delay, &mut stop).await {
                    return Ok(());
                }
            }
        }
    }
    let client = connect(nats, Reconnect::Forever).await?;
    state.joined(&client);
    let mut store = PgStore::new(database.clone());
    loop {
        backoff.reset();
        let following = loop {
            match ensure_consumer(&client, &settings, &mut store).await {
                Ok(following) => break following,
                Err(error) if error.is_lasting() => return Err(LinkError::Stream(error)),
                Err(error) => {
                    let delay = backoff.next_delay();
                    tracing::warn!(error = %error, retry_in = ?delay, "cannot set up the event stream yet");
                    if pause(delay, &mut stop).await {
                        return Ok(());
                    }
                }
            }
        };
        tracing::info!(stream = STREAM, epoch = following.epoch, consumer = DURABLE, batch = settings.batch, store = %database, "following provider events");
        match follow(&following, &mut store, &settings, state, &mut stop).await {
            Followed::Stopped => break,
            Followed::ConsumerLost => {
                tracing::warn!("setting the stream and consumer up again");
            }
        }
    }
    let _ = client.flush().await;
    tracing::info!("stopped");
    Ok(())
}

/// Like [`serve_observed`], until SIGINT or SIGTERM.
///
/// # Errors
/// As [`serve_until`], and when the signal handlers cannot be installed.
pub async fn serve(
    database: &DatabaseOptions,
    nats: &NatsOptions,
    settings: LinkSettings,
    state: &LinkState,
) -> Result<(), LinkError> {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = signal(SignalKind::terminate()).map_err(LinkError::Signal)?;
    let mut int = signal(SignalKind::interrupt()).map_err(LinkError::Signal)?;
    let stop = async move {
        tokio::select! {
            _ = term.recv() => tracing::info!("SIGTERM: stopping after the current round"),
            _ = int.recv() => tracing::info!("SIGINT: stopping after the current round"),
        }
    };
    serve_observed(database, nats, settings, state, stop).await
}

/// Sleeps `delay`; returns true when `stop` resolved meanwhile.
async fn pause<F: Future<Output = ()>>(delay: Duration, stop: &mut std::pin::Pin<&mut F>) -> bool {
    tokio::select! {
        () = stop.as_mut() => true,
        () = tokio::time::sleep(delay) => false,
    }
}

/// What one round did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Round {
    /// Words committed and acknowledged.
    applied: usize,
    /// Malformed messages terminated (and words the store refused as such).
    terminated: usize,
    /// Messages NAKed because the store was away.
    held: usize,
    /// The NAK delay, when messages were held.
    retry_in: Option<Duration>,
}

/// Pulls failing in a row after which the consumer is set up again.
const PULL_FAILURES_BEFORE_SETUP: u32 = 10;

/// Pulls in a row without a message after which the consumer is looked up
/// (a deleted consumer's pulls just find nothing).
const IDLE_PULLS_BEFORE_CHECK: u32 = 15;

/// Why [`follow`] returned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Followed {
    /// `stop` resolved.
    Stopped,
    /// The consumer is gone (deleted, or the server lost its store), or
    /// pulls keep failing: set the stream and consumer up again, then follow again.
    ConsumerLost,
}

/// Follows the consumer of `following` into `store` until `stop` resolves (see the module
/// docs for the guarantees). Errors of the store are logged and waited out;
/// a consumer found gone, or pulls failing many times in a row, end it with
/// [`Followed::ConsumerLost`].
pub async fn follow<S: Store>(
    following: &Following,
    store: &mut S,
    settings: &LinkSettings,
    state: &LinkState,
    stop: impl Future<Output = ()>,
) -> Followed {
    tokio::pin!(stop);
    let consumer = &following.consumer;
    let mut link = Link {
        epoch: following.epoch,
        store,
        settings,
        state,
        lag_read: None,
        backoff: Backoff::new(settings.nak_first, settings.nak_max),
        pull_failures: 0,
        idle_pulls: 0,
        consumer_lost: false,
    };
    loop {
        let pull_started = tokio::time::Instant::now();
        let (messages, stopping) = {
            let pull = link.pull(consumer);
            tokio::pin!(pull);
            tokio::select! {
                biased;
                () = &mut stop => ((&mut pull).await, true),
                messages = &mut pull => (messages, false),
            }
        };
        link.pulled(consumer).await;
        if !messages.is_empty() {
            tracing::trace!(pulled_in = ?pull_started.elapsed(), messages = messages.len(), "pulled");
            let round = link.round(messages).await;
            tracing::debug!(
                applied = round.applied,
                terminated = round.terminated,
                held = round.held,
                "round done"
            );
            if let Some(delay) = round.retry_in {
                if stopping || pause(delay, &mut stop).await {
                    break;
                }
                continue;
            }
        }
        if stopping || (&mut stop).now_or_never().is_some() {
            break;
        }
        if link.consumer_lost || link.pull_failures >= PULL_FAILURES_BEFORE_SETUP {
            return Followed::ConsumerLost;
        }
    }
    Followed::Stopped
}

struct Link<'a, S> {
    /// The followed stream's epoch (every word's, with its sequence).
    epoch: u64,
    store: &'a mut S,
    settings: &'a LinkSettings,
    state: &'a LinkState,
    /// When the stream's lag was last read.
    lag_read: Option<tokio::time::Instant>,
    backoff: Backoff,
    /// Pulls in a row that failed without a message.
    pull_failures: u32,
    /// Pulls in a row without a message.
    idle_pulls: u32,
    /// The consumer is gone: it must be set up again.
    consumer_lost: bool,
}

/// How often the stream's lag is read for the metrics.
const LAG_EVERY: Duration = Duration::from_secs(5);

impl<S> Link<'_, S> {
    /// A pull finished: the link moves; now and then the stream's lag is read.
    async fn pulled(&mut self, consumer: &PullConsumer) {
        self.state.progress.tick();
        let now = tokio::time::Instant::now();
        if self.lag_read.is_some_and(|at| now < at + LAG_EVERY) {
            return;
        }
        self.lag_read = Some(now);
        if let Ok(info) = consumer.get_info().await {
            self.state
                .lag(info.num_pending + u64::try_from(info.num_ack_pending).unwrap_or(0));
        }
    }

    /// Asks the server for the consumer; marks it lost when it is not there.
    async fn check_consumer(&mut self, consumer: &PullConsumer) {
        match consumer.get_info().await {
            Ok(_) => {}
            Err(error) => {
                tracing::warn!(error = %error, consumer = DURABLE, "the consumer is not there");
                self.consumer_lost = true;
            }
        }
    }
}

impl<S: Store> Link<'_, S> {
    /// The messages waiting (at most `batch`), or, when none is, the first
    /// to arrive within `wait`. Every pull request is read to its end. A
    /// pull that fails without a message is logged and waited out (its
    /// failures in a row are counted in `pull_failures`).
    async fn pull(&mut self, consumer: &PullConsumer) -> Vec<Message> {
        let batch = self.settings.batch.max(1);
        let waiting = consumer
            .fetch()
            .max_messages(batch)
            .expires(self.settings.wait)
            .messages()
            .await
            .map_err(|e| e.to_string());
        let (mut messages, mut failure) = match waiting {
            Ok(stream) => collect(stream).await,
            Err(error) => (Vec::new(), Some(error)),
        };
        if messages.is_empty() && failure.is_none() {
            let next = consumer
                .batch()
                .max_messages(1)
                .expires(self.settings.wait)
                .messages()
                .await
                .map_err(|e| e.to_string());
            (messages, failure) = match next {
                Ok(stream) => collect(stream).await,
                Err(error) => (Vec::new(), Some(error)),
            };
        }
        match failure {
            Some(error) if messages.is_empty() => {
                self.pull_failures += 1;
                if self.pull_failures == 1 {
                    tracing::warn!(error = %error, "cannot pull events; trying again");
                }
                self.check_consumer(consumer).await;
                tokio::time::sleep(self.settings.wait.min(Duration::from_secs(1))).await;
            }
            _ => {
                if self.pull_failures > 0 && !self.consumer_lost {
                    tracing::info!(failures = self.pull_failures, "pulling events works again");
                    self.pull_failures = 0;
                }
            }
        }
        if messages.is_empty() {
            self.idle_pulls += 1;
            // A pull of a deleted consumer just finds nothing: look now and then.
            if self.idle_pulls % IDLE_PULLS_BEFORE_CHECK == 0 {
                self.check_consumer(consumer).await;
            }
        } else {
            self.idle_pulls = 0;
        }
        messages
    }

    /// Decodes, applies and acknowledges (or NAKs) one round.
    async fn round(&mut self, messages: Vec<Message>) -> Round {
        let mut round = Round::default();
        let mut words: Vec<(Message, Word)> = Vec::with_capacity(messages.len());
        for message in messages {
            let seq = message.info().map(|i| i.stream_sequence).unwrap_or(0);
            match decode(message.subject.as_str(), &message.payload, self.epoch, seq) {
                Ok(word) => words.push((message, word)),
                Err(reason) => {
                    tracing::error!(subject = %first_words(message.subject.as_str()), seq, reason = %reason, "malformed event terminated");
                    terminate(&message).await;
                    round.terminated += 1;
                }
            }
        }
        if words.is_empty() {
            return round;
        }
        let batch: Vec<Word> = words.iter().map(|(_, w)| w.clone()).collect();
        let started = tokio::time::Instant::now();
        match self.store.apply(&batch).await {
            Ok(()) => {
                let applied_in = started.elapsed();
                self.stored(&batch);
                acknowledge(words.iter().map(|(m, _)| m)).await;
                tracing::trace!(?applied_in, acked_in = ?(started.elapsed() - applied_in), "round timing");
                round.applied += words.len();
            }
            Err(error) if error.is_transient() => {
                let delay = self.held(&error, words.len());
                nak(words.iter().map(|(m, _)| m), delay).await;
                round.held += words.len();
                round.retry_in = Some(delay);
            }
            Err(error) => {
                tracing::warn!(error = %error, words = words.len(), "the store refused a round; applying its words one by one");
                self.state.store_failed(false);
                let mut rest = words.into_iter();
                for (message, word) in rest.by_ref() {
                    match self.store.apply(std::slice::from_ref(&word)).await {
                        Ok(()) => {
                            self.stored(std::slice::from_ref(&word));
                            acknowledge(std::iter::once(&message)).await;
                            round.applied += 1;
                        }
                        Err(error) if error.is_transient() => {
                            let delay = self.held(&error, 1);
                            round.retry_in = Some(delay);
                            let left: Vec<Message> = std::iter::once(message)
                                .chain(rest.by_ref().map(|(m, _)| m))
                                .collect();
                            round.held += left.len();
                            nak(left.iter(), delay).await;
                            break;
                        }
                        Err(error) => {
                            tracing::error!(
                                error = %error,
                                subject = %message.subject,
                                seq = word.seq,
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

    fn stored(&mut self, words: &[Word]) {
        self.state.applied(words);
        if self.backoff.failures() > 0 {
            tracing::info!(
                after_failures = self.backoff.failures(),
                "the store takes events again"
            );
            self.backoff.reset();
        }
        for word in words {
            tracing::debug!(
                emitter = %word.emitter,
                kind = word.event.kind().as_str(),
                seq = word.seq,
                said_at = %word.event.said_at(),
                "event stored"
            );
        }
    }

    /// Logs a failed round; returns its NAK delay.
    fn held(&mut self, error: &StoreError, count: usize) -> Duration {
        self.state.store_failed(true);
        let delay = self.backoff.next_delay();
        if self.backoff.failures() == 1 {
            tracing::warn!(error = %error, held = count, retry_in = ?delay, "store away: events are held (NAKed) and delivered again");
        } else {
            tracing::debug!(error = %error, held = count, retry_in = ?delay, "store still away");
        }
        delay
    }
}

/// Reads a pull to its end: its messages, and the error that ended it, if
/// any (the normal ends, no message or the pull expired, are not errors).
async fn collect<E: std::fmt::Display>(
    mut stream: impl futures::Stream<Item = Result<Message, E>> + Unpin,
) -> (Vec<Message>, Option<String>) {
    let mut messages = Vec::new();
    while let Some(item) = stream.next().await {
        match item {
            Ok(message) => messages.push(message),
            Err(error) => return (messages, Some(error.to_string())),
        }
    }
    (messages, None)
}

/// Acknowledges messages: plain acks, then a double ack of the last one,
/// which the server answers after it processed the earlier acks.
async fn acknowledge<'m>(messages: impl Iterator<Item = &'m Message>) {
    let messages: Vec<&Message> = messages.collect();
    let Some((last, earlier)) = messages.split_last() else {
        return;
    };
    for message in earlier {
        if let Err(error) = message.ack().await {
            tracing::warn!(error = %error, subject = %message.subject, "ack not sent; the event will be delivered again");
        }
    }
    if let Err(error) = last.double_ack().await {
        tracing::warn!(error = %error, "ack not confirmed; these events may be delivered again (applying them again changes nothing)");
    }
}

/// NAKs messages with `delay`, in stream order.
async fn nak<'m>(messages: impl Iterator<Item = &'m Message>, delay: Duration) {
    let naks = messages.map(|m| m.ack_with(AckKind::Nak(Some(delay))));
    for result in join_all(naks).await {
        if let Err(error) = result {
            tracing::warn!(error = %error, "NAK not sent; the event is delivered again after the ack wait");
        }
    }
}

async fn terminate(message: &Message) {
    if let Err(error) = message.double_ack_with(AckKind::Term).await {
        tracing::warn!(error = %error, subject = %message.subject, "terminating a malformed event was not confirmed; it may come again");
    }
}
