//! The stream [`STREAM`] and the durable consumer [`DURABLE`]: made or
//! updated at start.
//!
//! The stream is bounded: work-queue retention (an event is removed once the
//! controller's durable consumer acknowledged it) and a maximum age. A
//! stream of that name that `serve` cannot update in place (another
//! retention or storage, or sealed: made by another program, no release of
//! `serve` made one) is left as it is and ends `serve` with
//! [`SetupError::Unfit`]: whoever made it decides what becomes of its
//! events, with an administrator's credentials. `serve`'s own bus user may
//! not delete, purge or read a stream by sequence.

use async_nats::jetstream::consumer::{pull, AckPolicy, DeliverPolicy, PullConsumer};
use async_nats::jetstream::context::{ConsumerInfoErrorKind, GetStreamErrorKind};
use async_nats::jetstream::stream::{self, RetentionPolicy, StorageType};
use async_nats::jetstream::{self, ErrorCode};

use crate::bus::{DURABLE, EVENT_SUBJECTS, STREAM};
use mesh_status::LinkSettings;
use mesh_status::{Store, StoreError};

/// Any error of the bus client.
type BusFailure = Box<dyn std::error::Error + Send + Sync>;

/// The stream or consumer could not be set up yet; `serve` tries again,
/// except after [`SetupError::Unfit`] ([`SetupError::is_lasting`]).
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
    /// The stream exists with settings `serve` cannot change in place (see
    /// the module docs): waiting will not change it, so `serve` ends.
    #[error(
        "stream {STREAM} exists with {found}, which serve cannot change in place (it makes the \
         stream with {wanted}): it was not made by mesh-controller serve; keep or move its messages \
         as its maker decides, then remove it with an administrator's credentials (nats stream \
         rm {STREAM}) and start serve again"
    )]
    Unfit {
        /// What the stream has, e.g. `limits retention`.
        found: String,
        /// What `serve` makes.
        wanted: &'static str,
    },
    /// The stream's epoch could not be registered in the store.
    #[error("cannot register stream {STREAM} in the store: {0}")]
    Epoch(#[source] StoreError),
}

impl SetupError {
    /// Whether only a person can end it: `serve` ends instead of trying again.
    pub fn is_lasting(&self) -> bool {
        matches!(self, SetupError::Unfit { .. })
    }
}

/// The stream's configuration: every provider event, file storage, each
/// event kept until the controller took it, at most `stream_max_age`, on
/// `replicas` servers.
pub(super) fn stream_config(settings: &LinkSettings) -> stream::Config {
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
        // No filter: the stream holds only events (provider and grant events).
        num_replicas: settings.replicas.max(1),
        ..Default::default()
    }
}

/// Creates or updates the stream and the durable consumer, and registers
/// the stream's epoch in `store`.
///
/// Replicas: an existing stream with fewer than [`LinkSettings::replicas`]
/// is raised in place (logged); it stays the same stream (its `created`
/// time, so its epoch, is kept). One with more keeps them: a controller
/// started with a smaller `--stream-replicas` never lowers what another
/// raised. The consumer gets as many replicas as the stream.
///
/// # Errors
/// [`SetupError`] when the bus or the store refuses or does not answer
/// (`serve` tries again), or [`SetupError::Unfit`] for a stream `serve`
/// cannot update (`serve` ends).
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
            check_fit(&info.config)?;
            if info.config.num_replicas < config.num_replicas {
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
    // The answer to the create or update holds the stream's `created` time:
    // on a cluster, a read right after a change of replicas may time out or
    // answer "not found" while the new peers elect a leader.
    let created = js
        .create_or_update_stream(config)
        .await
        .map_err(|e| SetupError::Stream(e.into()))?
        .created;
    let stream = js
        .get_stream_no_info(STREAM)
        .await
        .map_err(|e| SetupError::Read(e.into()))?;
    // A durable consumer that acknowledged events before took them from the
    // stream for a store that was there: a store that meets its first
    // stream now (made anew) lacks them until they are said again.
    let acknowledged_before = match stream.consumer_info(DURABLE).await {
        Ok(info) => info.ack_floor.stream_sequence > 0,
        Err(error) if error.kind() == ConsumerInfoErrorKind::NotFound => false,
        Err(error) => return Err(SetupError::Read(error.into())),
    };
    let begun = store
        .record_begins(acknowledged_before)
        .await
        .map_err(SetupError::Epoch)?;
    if let Some(at) = begun {
        // Once per store: it has met no stream before, and meets one now.
        tracing::info!(
            record_begins = %mesh_protocol::Timestamp::from_system(at),
            "the store is new: it holds none of the events the durable consumer acknowledged \
             before; status says so, and calls no provider unheard, until each provider has \
             said again what it keeps failing"
        );
    }
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
/// event's place is `(epoch, stream sequence)`).
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

/// Whether an existing stream's `config` can be updated in place to
/// [`stream_config`]'s: JetStream changes neither retention nor storage of
/// a stream, and a sealed stream takes no event.
///
/// # Errors
/// [`SetupError::Unfit`] naming the first setting that cannot be changed.
fn check_fit(config: &stream::Config) -> Result<(), SetupError> {
    let unfit = |found: String, wanted: &'static str| Err(SetupError::Unfit { found, wanted });
    if config.retention != RetentionPolicy::WorkQueue {
        let found = match config.retention {
            RetentionPolicy::Limits => "limits",
            RetentionPolicy::Interest => "interest",
            RetentionPolicy::WorkQueue => "work-queue",
        };
        return unfit(format!("{found} retention"), "work-queue retention");
    }
    if config.storage != StorageType::File {
        return unfit("memory storage".to_owned(), "file storage");
    }
    if config.sealed {
        return unfit("the seal set".to_owned(), "no seal");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_stream_serve_can_update_in_place_fits() {
        let made = stream_config(&LinkSettings::default());
        assert!(check_fit(&made).is_ok());
        let with = |change: fn(&mut stream::Config)| {
            let mut config = made.clone();
            change(&mut config);
            check_fit(&config).map_err(|e| e.to_string())
        };
        // Settings serve updates in place.
        assert!(with(|c| c.max_age = std::time::Duration::from_secs(60)).is_ok());
        assert!(with(|c| c.num_replicas = 3).is_ok());
        assert!(with(|c| c.subjects.truncate(1)).is_ok());
        // Settings it cannot.
        for (change, expected) in [
            (
                (|c| c.retention = RetentionPolicy::Limits) as fn(&mut stream::Config),
                "exists with limits retention",
            ),
            (
                |c| c.retention = RetentionPolicy::Interest,
                "interest retention",
            ),
            (|c| c.storage = StorageType::Memory, "memory storage"),
            (|c| c.sealed = true, "the seal set"),
        ] {
            let error = with(change).unwrap_err();
            assert!(
                error.contains(expected) && error.contains("administrator's credentials"),
                "{error}"
            );
        }
    }
}
