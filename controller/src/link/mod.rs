//! The link (`serve`): provider events from JetStream into the PostgreSQL
//! store, by the engine's rounds (`mesh_status::link`, where its
//! guarantees are written).
//!
//! # Expected flow
//! [`serve`] migrates the store, connects to the bus, creates or
//! updates the stream [`STREAM`] and the durable pull consumer [`DURABLE`],
//! then [`follow`]s it until stopped: the engine's
//! [`follow_messages`] over the consumer ([`JetStreamMessages`]).

mod source;
mod stream;

use std::time::Duration;

use mesh_runtime::{Backoff, Stop};
use mesh_status::link::{
    follow_messages, pause, BusConnection, BusWatch, Followed, LinkSettings, LinkState,
};
use mesh_status::Store;

use source::JetStreamMessages;
pub use stream::{consumer_config, ensure_consumer, Following, SetupError};

use crate::bus::{connect, BusError, NatsOptions, Reconnect, DURABLE, STREAM};
use mesh_pg_store::{migrate, DatabaseOptions, PgError, PgStore};

/// The link could not run; ends `serve` (exit 2).
#[derive(Debug, thiserror::Error)]
pub enum LinkError {
    /// The bus could not be set up (credentials, URL).
    #[error(transparent)]
    Bus(#[from] BusError),
    /// The migrations failed for a reason other than the store being away.
    #[error(transparent)]
    Migrate(PgError),
    /// The store refuses the controller's login or has no such database:
    /// waiting will not change it.
    #[error("{0}; check --database and its password")]
    Store(PgError),
    /// The event stream exists with settings `serve` cannot change in place:
    /// waiting will not change it.
    #[error(transparent)]
    Stream(SetupError),
}

/// Migrates the store, then follows the events until `stop` is requested,
/// keeping `state` (metrics, progress, readiness) up to date. The store
/// and the bus being away at start is waited out (logged), not an error.
///
/// # Errors
/// [`LinkError`] when the bus credentials are unusable, a migration fails,
/// the store refuses the login or has no such database, or the event
/// stream exists with settings `serve` cannot change.
pub async fn serve(
    database: &DatabaseOptions,
    nats: &NatsOptions,
    settings: LinkSettings,
    state: &LinkState,
    stop: &Stop,
) -> Result<(), LinkError> {
    let mut backoff = Backoff::new(settings.nak_first, settings.nak_max);
    loop {
        // Each turn of waiting counts as the loop turning (`/healthz`).
        state.progress.tick();
        // A migration cut short rolls back with its session.
        let Some(migrated) = stop.run_until_stopped(migrate(database)).await else {
            return Ok(());
        };
        match migrated {
            Ok(applied) => {
                tracing::info!(store = %database, tls = %database.tls_shown(), applied, "store migrated");
                state.store_migrated();
                break;
            }
            Err(error @ PgError::Migrate { .. }) if !error.is_migration_retryable() => {
                return Err(LinkError::Migrate(error))
            }
            Err(error) if error.is_lasting() => return Err(LinkError::Store(error)),
            Err(error) => {
                let delay = backoff.next_delay();
                if error.is_migration_retryable() {
                    tracing::warn!(error = %error, retry_in = ?delay, "migrating the store did not pass (a reader beside it, or the store went away); trying again");
                } else {
                    tracing::warn!(error = %error, retry_in = ?delay, "store away at start; waiting for it");
                }
                if pause(delay, stop).await {
                    return Ok(());
                }
            }
        }
    }
    let client = connect(nats, Reconnect::Forever).await?;
    state.joined(Box::new(NatsWatch(client.clone())));
    let mut store = PgStore::new(database.clone());
    loop {
        backoff.reset();
        let following = loop {
            state.progress.tick();
            let Some(ensured) = stop
                .run_until_stopped(ensure_consumer(&client, &settings, &mut store))
                .await
            else {
                stopped(&client, state).await;
                return Ok(());
            };
            match ensured {
                Ok(following) => break following,
                Err(error) if error.is_lasting() => return Err(LinkError::Stream(error)),
                Err(error) => {
                    let delay = backoff.next_delay();
                    tracing::warn!(error = %error, retry_in = ?delay, "cannot set up the event stream yet");
                    if pause(delay, stop).await {
                        stopped(&client, state).await;
                        return Ok(());
                    }
                }
            }
        };
        tracing::info!(stream = STREAM, epoch = following.epoch, consumer = DURABLE, batch = settings.batch, store = %database, "following provider events");
        match follow(&following, &mut store, &settings, state, stop).await {
            Followed::Stopped => break,
            Followed::ConsumerLost => {
                tracing::warn!("setting the stream and consumer up again");
            }
        }
    }
    stopped(&client, state).await;
    Ok(())
}

/// The end of a stop: what was sent flushed while the bus is there (bounded).
async fn stopped(client: &async_nats::Client, state: &LinkState) {
    if state.bus_connected() {
        let _ = tokio::time::timeout(Duration::from_secs(1), client.flush()).await;
    }
    tracing::info!("stopped");
}

/// Follows the consumer of `following` into `store` until `stop` is requested (see the module
/// docs of `mesh_status::link` for the guarantees). Errors of the store are logged and waited out;
/// a consumer found gone, or pulls failing many times in a row, end it with
/// [`Followed::ConsumerLost`].
pub async fn follow<S: Store>(
    following: &Following,
    store: &mut S,
    settings: &LinkSettings,
    state: &LinkState,
    stop: &Stop,
) -> Followed {
    let mut consumer = JetStreamMessages(&following.consumer);
    follow_messages(&mut consumer, following.epoch, store, settings, state, stop).await
}

/// The NATS client's connection, as the link's state looks at it.
struct NatsWatch(async_nats::Client);

impl BusWatch for NatsWatch {
    fn connection(&self) -> BusConnection {
        match self.0.connection_state() {
            async_nats::connection::State::Connected => BusConnection::Connected,
            state => BusConnection::Away(state.to_string()),
        }
    }
}
