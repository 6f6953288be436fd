//! The stream [`STREAM`] and the durable consumer [`DURABLE`]: made or
//! updated at start, and an old stream moved to the bounded settings.
//!
//! The stream is bounded: work-queue retention (a word is removed once the
//! controller's durable consumer acknowledged it) and a maximum age. An
//! existing stream with another retention (made by an earlier controller,
//! which kept every word) cannot be changed in place, so it is moved:
//! 1. sealed: from then on it takes no word, so a provider's publish is not
//!    acknowledged and the provider holds the word and sends it again;
//! 2. every word the durable consumer has not acknowledged (after its ack
//!    floor; all of them when there is no consumer) is read by sequence and
//!    applied to the store, in stream order, in rounds;
//! 3. only then is the old stream deleted and the bounded one made, and the
//!    providers' held words land in it.
//!
//! A word is therefore never lost: either the store has it, or a provider
//! still holds it. A move cut short (store away, controller killed) starts
//! again at the next attempt from the sealed stream.

use async_nats::jetstream::consumer::{pull, AckPolicy, DeliverPolicy, PullConsumer};
use async_nats::jetstream::context::GetStreamErrorKind;
use async_nats::jetstream::stream::{self, RetentionPolicy};
use async_nats::jetstream::ErrorCode;
use async_nats::jetstream::{self, Context};

use super::decode::decode;
use super::LinkSettings;
use crate::bus::{DURABLE, EVENT_SUBJECTS, STREAM};
use crate::model::text::first_words;
use crate::model::Word;
use crate::store::{Store, StoreError};

/// Any error of the bus client.
type BusFailure = Box<dyn std::error::Error + Send + Sync>;

/// The stream or consumer could not be set up yet; `serve` tries again.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    /// The stream could not be read.
    #[error("cannot read stream {STREAM}: {0}")]
    Read(#[source] BusFailure),
    /// The stream could not be made or updated.
    #[error("cannot create or update stream {STREAM}: {0}")]
    Stream(#[source] BusFailure),
    /// The durable consumer could not be made or updated.
    #[error("cannot create or update consumer {DURABLE} on {STREAM}: {0}")]
    Consumer(#[source] BusFailure),
    /// Moving an old stream failed on the bus side.
    #[error("cannot move stream {STREAM} to work-queue retention: {0}")]
    Move(#[source] BusFailure),
    /// Moving an old stream failed on the store side (its words are kept).
    #[error("cannot move stream {STREAM} to work-queue retention: {0}")]
    MoveStore(#[source] StoreError),
    /// The stream's epoch could not be registered in the store.
    #[error("cannot register stream {STREAM} in the store: {0}")]
    Epoch(#[source] StoreError),
}

/// The stream's configuration: every provider event, file storage, each
/// word kept until the controller took it, at most `stream_max_age`, on
/// `replicas` servers.
pub fn stream_config(settings: &LinkSettings) -> stream::Config {
    stream::Config {
        name: STREAM.to_owned(),
        description: Some("mesh provider events (created by mesh-controller)".to_owned()),
        subjects: EVENT_SUBJECTS.map(str::to_owned).to_vec(),
        storage: stream::StorageType::File,
        retention: RetentionPolicy::WorkQueue,
        max_age: settings.stream_max_age,
        num_replicas: settings.replicas.max(1),
        ..Default::default()
    }
}

/// The durable consumer's configuration, on as many servers as the stream
/// (`replicas`).
pub fn consumer_config(settings: &LinkSettings) -> pull::Config {
    pull::Config {
        durable_name: Some(DURABLE.to_owned()),
        description: Some("mesh-controller: provider events into the store".to_owned()),
        deliver_policy: DeliverPolicy::All,
        ack_policy: AckPolicy::Explicit,
        ack_wait: settings.ack_wait,
        max_deliver: -1,
        max_ack_pending: i64::try_from(settings.batch.max(1)).unwrap_or(i64::MAX),
        // No filter: the stream holds only events (provider and grant words).
        num_replicas: settings.replicas.max(1),
        ..Default::default()
    }
}

/// Creates or updates the stream and the durable consumer, moving an old
/// stream with another retention first (see the module docs); its words
/// go into `store`.
///
/// Replicas: an existing stream with fewer than [`LinkSettings::replicas`]
/// is raised in place (logged); it stays the same stream (its `created`
/// time, so its epoch, is kept). One with more keeps them: a controller
/// started with a smaller `--stream-replicas` never lowers what another
/// raised. The consumer gets as many replicas as the stream.
///
/// # Errors
/// [`SetupError`] when the bus or the store refuses or does not answer;
/// `serve` tries again.
pub async fn ensure_consumer<S: Store>(
    client: &async_nats::Client,
    settings: &LinkSettings,
    store: &mut S,
) -> Result<Following, SetupError> {
    let js = jetstream::new(client.clone());
    let mut config = stream_config(settings);
    let mut settings = *settings;
    match js.get_stream(STREAM).await {
        Ok(mut old) => {
            let info = old
                .info()
                .await
                .map_err(|e| SetupError::Read(e.into()))?
                .clone();
            if info.config.retention != RetentionPolicy::WorkQueue {
                tracing::warn!(
                    stream = STREAM,
                    retention = ?info.config.retention,
                    "moving the event stream to work-queue retention; providers hold their words meanwhile"
                );
                let moved = move_words(&js, &old, info, &settings, store).await?;
                config.first_sequence = Some(moved.next_sequence);
                tracing::info!(
                    stream = STREAM,
                    applied = moved.applied,
                    "event stream moved; it now keeps a word only until the controller took it"
                );
            } else if info.config.num_replicas < config.num_replicas {
                tracing::info!(
                    stream = STREAM,
                    from = info.config.num_replicas,
                    to = config.num_replicas,
                    "raising the event stream's replicas in place"
                );
            } else if info.config.num_replicas > config.num_replicas {
                tracing::info!(
                    stream = STREAM,
                    replicas = info.config.num_replicas,
                    asked = config.num_replicas,
                    "the event stream has more replicas than asked; keeping them"
                );
                config.num_replicas = info.config.num_replicas;
                settings.replicas = info.config.num_replicas;
            }
        }
        Err(error) if is_not_found(&error) => {}
        Err(error) => return Err(SetupError::Read(error.into())),
    }
    js.create_or_update_stream(config)
        .await
        .map_err(|e| SetupError::Stream(e.into()))?;
    let mut stream = js
        .get_stream(STREAM)
        .await
        .map_err(|e| SetupError::Read(e.into()))?;
    let created = stream
        .info()
        .await
        .map_err(|e| SetupError::Read(e.into()))?
        .created;
    let epoch = store
        .stream_epoch(STREAM, created.into())
        .await
        .map_err(SetupError::Epoch)?;
    let consumer = stream
        .create_consumer(consumer_config(&settings))
        .await
        .map_err(|e| SetupError::Consumer(e.into()))?;
    Ok(Following { consumer, epoch })
}

/// The durable consumer the link follows, and the epoch of its stream (a
/// word's place is `(epoch, stream sequence)`).
#[derive(Debug)]
pub struct Following {
    /// The durable consumer.
    pub consumer: PullConsumer,
    /// The stream's epoch in the store.
    pub epoch: u64,
}

fn is_not_found(error: &async_nats::jetstream::context::GetStreamError) -> bool {
    matches!(error.kind(), GetStreamErrorKind::JetStream(e) if e.error_code() == ErrorCode::STREAM_NOT_FOUND)
}

/// What a move did.
struct Moved {
    /// Words applied to the store.
    applied: usize,
    /// The old stream's last sequence + 1 (the new stream starts there
    /// where the server supports it, so sequences keep rising).
    next_sequence: u64,
}

/// Seals the old stream, applies every word its consumer had not
/// acknowledged, and deletes it.
async fn move_words<S: Store>(
    js: &Context,
    old: &jetstream::stream::Stream,
    info: stream::Info,
    settings: &LinkSettings,
    store: &mut S,
) -> Result<Moved, SetupError> {
    let move_error = |e: BusFailure| SetupError::Move(e);
    // The old stream's epoch is registered before the new stream exists,
    // so the new one's is greater.
    let epoch = store
        .stream_epoch(STREAM, info.created.into())
        .await
        .map_err(SetupError::Epoch)?;
    if !info.config.sealed {
        let mut sealed = info.config.clone();
        sealed.sealed = true;
        js.update_stream(sealed)
            .await
            .map_err(|e| move_error(e.into()))?;
    }
    // Sealed: the state no longer changes.
    let state = js
        .get_stream(STREAM)
        .await
        .map_err(|e| move_error(e.into()))?
        .cached_info()
        .state
        .clone();
    let from = match old.consumer_info(DURABLE).await {
        Ok(consumer) => consumer.ack_floor.stream_sequence + 1,
        Err(_) => state.first_sequence,
    }
    .max(state.first_sequence);
    let mut applied = 0;
    let mut round: Vec<Word> = Vec::with_capacity(settings.batch.max(1));
    for seq in from..=state.last_sequence {
        let message = match old.get_raw_message(seq).await {
            Ok(message) => message,
            Err(error) => {
                // Removed by a limit, or by hand: nothing to move.
                tracing::debug!(seq, error = %error, "no word at this sequence");
                continue;
            }
        };
        match decode(message.subject.as_str(), &message.payload, epoch, seq) {
            Ok(word) => round.push(word),
            Err(reason) => {
                tracing::error!(subject = %first_words(message.subject.as_str()), seq, reason = %reason, "malformed event left behind");
                continue;
            }
        }
        if round.len() >= settings.batch.max(1) {
            store.apply(&round).await.map_err(SetupError::MoveStore)?;
            applied += round.len();
            round.clear();
        }
    }
    store.apply(&round).await.map_err(SetupError::MoveStore)?;
    applied += round.len();
    js.delete_stream(STREAM)
        .await
        .map_err(|e| move_error(e.into()))?;
    Ok(Moved {
        applied,
        next_sequence: state.last_sequence + 1,
    })
}
