//! The NATS side: connection with the provider's inbox prefix and an event
//! callback that logs refusals, and a JetStream sink that awaits acks.

use std::path::{Path, PathBuf};
use std::time::Duration;

use async_nats::jetstream::{self, message::PublishMessage};
use async_nats::{ConnectOptions, Event as NatsEvent, ServerError};
use async_trait::async_trait;
use bytes::Bytes;

use super::{EventSink, SinkError};
use crate::contributions::ProviderId;
use crate::event::inbox_prefix;
use crate::redact::shown_url;

/// How to reach the bus.
#[derive(Clone, Debug)]
pub struct BusOptions {
    /// Server URL.
    pub url: String,
    /// User name, when the server wants one.
    pub user: Option<String>,
    /// File holding the user's password.
    pub password_file: Option<PathBuf>,
    /// How long to wait for a JetStream ack.
    pub ack_timeout: Duration,
}

/// The bus could not be set up; ends the provider's start.
#[derive(Debug, thiserror::Error)]
pub enum BusError {
    /// The NATS password file could not be read.
    #[error("nats password file {path} cannot be read: {source}")]
    PasswordFile {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A user was given without a password file, or the other way round.
    #[error("--nats-user and --nats-password-file go together")]
    HalfCredentials,
    /// The connection could not be made.
    #[error("cannot connect to nats at {url}: {source}")]
    Connect {
        /// The URL.
        url: String,
        /// Why.
        #[source]
        source: async_nats::ConnectError,
    },
    /// Subscribing to the approve subject failed.
    #[error("cannot subscribe to {subject}: {source}")]
    Subscribe {
        /// The subject.
        subject: String,
        /// Why.
        #[source]
        source: async_nats::SubscribeError,
    },
}

/// The connection options every mesh client shares: the given name and
/// inbox prefix, the user's password read from its file, a short capped
/// reconnect backoff (100 ms doubling to 2 s), and an event callback that
/// logs permission refusals and disconnects (`log_event`).
///
/// # Errors
/// [`BusError`] when the password file cannot be read, or only one of user
/// and password file is given.
pub fn connect_options(
    user: Option<&str>,
    password_file: Option<&Path>,
    name: &str,
    inbox_prefix: &str,
) -> Result<ConnectOptions, BusError> {
    let connect = ConnectOptions::new()
        .name(name)
        .custom_inbox_prefix(inbox_prefix)
        .connection_timeout(Duration::from_secs(5))
        .reconnect_delay_callback(|attempts| {
            Duration::from_millis(100u64.saturating_mul(1 << attempts.min(5) as u64))
                .min(Duration::from_secs(2))
        })
        .event_callback(|event| async move { log_event(&event) });
    match (user, password_file) {
        (Some(user), Some(path)) => {
            let password =
                std::fs::read_to_string(path).map_err(|source| BusError::PasswordFile {
                    path: path.to_owned(),
                    source,
                })?;
            Ok(connect.user_and_password(user.to_owned(), password.trim().to_owned()))
        }
        (None, None) => Ok(connect),
        _ => Err(BusError::HalfCredentials),
    }
}

/// Connects as `provider`: its own inbox prefix (`_INBOX.<machine>.<module>`)
/// and [`connect_options`], reconnecting forever. Returns at once even when
/// the server is down: events are held until it answers.
///
/// # Errors
/// [`BusError`] when the credentials cannot be read or the URL is invalid.
pub async fn connect(
    options: &BusOptions,
    provider: &ProviderId,
) -> Result<async_nats::Client, BusError> {
    connect_as(
        options,
        &format!("mesh provider {provider}"),
        &inbox_prefix(&provider.machine, &provider.module),
    )
    .await
}

/// Connects as `name` with its own `inbox_prefix` (the grant agent's is
/// `_INBOX.<machine>._grants`) and [`connect_options`], reconnecting
/// forever, like [`connect`].
///
/// # Errors
/// [`BusError`] when the credentials cannot be read or the URL is invalid.
pub async fn connect_as(
    options: &BusOptions,
    name: &str,
    inbox_prefix: &str,
) -> Result<async_nats::Client, BusError> {
    connect_options(
        options.user.as_deref(),
        options.password_file.as_deref(),
        name,
        inbox_prefix,
    )?
    .retry_on_initial_connect()
    .connect(&options.url)
    .await
    .map_err(|source| BusError::Connect {
        url: shown_url(&options.url),
        source,
    })
}

/// Logs what the client tells about the connection; a permission refusal
/// as an error (a refused announcement is never silent).
fn log_event(event: &NatsEvent) {
    match event {
        NatsEvent::ServerError(ServerError::Other(text))
            if text.to_lowercase().contains("permissions violation") =>
        {
            tracing::error!(error = %text, "the bus refused a publish or subscribe: check the derived permissions");
        }
        NatsEvent::ServerError(error) => tracing::error!(error = %error, "bus server error"),
        NatsEvent::ClientError(error) => tracing::error!(error = %error, "bus client error"),
        NatsEvent::Disconnected => {
            tracing::warn!("disconnected from the bus; events are held until it is back")
        }
        NatsEvent::Connected => tracing::info!("connected to the bus"),
        other => tracing::info!(event = %other, "bus event"),
    }
}

/// Publishes through JetStream and waits for the stream's ack.
#[derive(Clone, Debug)]
pub struct JetStreamSink {
    context: jetstream::Context,
}

impl JetStreamSink {
    /// A sink over `client`, waiting at most `ack_timeout` for each ack.
    pub fn new(client: async_nats::Client, ack_timeout: Duration) -> JetStreamSink {
        let mut context = jetstream::new(client);
        context.set_timeout(ack_timeout);
        JetStreamSink { context }
    }
}

#[async_trait]
impl EventSink for JetStreamSink {
    async fn publish(&self, subject: &str, msg_id: &str, body: Bytes) -> Result<(), SinkError> {
        let fail = |reason: String| SinkError {
            subject: subject.to_owned(),
            reason,
        };
        let ack = self
            .context
            .send_publish(
                subject.to_owned(),
                PublishMessage::build().payload(body).message_id(msg_id),
            )
            .await
            .map_err(|e| fail(e.to_string()))?;
        ack.await.map(|_| ()).map_err(|e| fail(e.to_string()))
    }
}
