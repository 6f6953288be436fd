//! The controller's side of the bus: the names it uses (stream, durable
//! consumer, user, inbox prefix) and its connection.

use std::path::PathBuf;
use std::time::Duration;

use async_nats::{ConnectOptions, Event as NatsEvent, ServerError};

/// The JetStream stream holding every provider event.
pub const STREAM: &str = "MESH_EVENTS";

/// The stream's subject filter: every provider's events, a wildcard for the
/// emitter (machine, module) and the kind.
pub const STREAM_SUBJECTS: &str = "mesh.event.*.*.provisioner.*";

/// The controller's durable pull consumer on [`STREAM`].
pub const DURABLE: &str = "controller";

/// The controller's NATS user.
pub const CONTROLLER_USER: &str = "controller";

/// The controller's inbox prefix. A provider's prefix is
/// `_INBOX_<machine>_<module>` and always holds a `_` after `_INBOX_`, which
/// this one does not, so no provider prefix equals it.
pub const CONTROLLER_INBOX: &str = "_INBOX_controller";

/// How to reach the bus.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NatsOptions {
    /// Server URL.
    pub url: String,
    /// User name, when the server wants one.
    pub user: Option<String>,
    /// File holding the user's password.
    pub password_file: Option<PathBuf>,
}

/// The bus could not be set up; ends the command (exit 2).
#[derive(Debug, thiserror::Error)]
pub enum BusError {
    /// The password file could not be read.
    #[error("nats password file {path} cannot be read: {source}")]
    PasswordFile {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A user without a password file, or the other way round.
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
}

/// How the connection behaves while the server is away.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reconnect {
    /// Keep trying forever, also for the first connection (`serve`).
    Forever,
    /// Fail when the first connection fails (one-shot commands).
    FailFast,
}

/// Connects as the controller: inbox prefix [`CONTROLLER_INBOX`] (the only
/// subject it may subscribe to), and an event callback that logs refusals
/// (a refused publish or subscribe is never silent).
///
/// # Errors
/// [`BusError`] when the credentials cannot be read, or (with
/// [`Reconnect::FailFast`]) when the server cannot be reached.
pub async fn connect(
    options: &NatsOptions,
    reconnect: Reconnect,
) -> Result<async_nats::Client, BusError> {
    let mut connect = ConnectOptions::new()
        .name("mesh-controller")
        .custom_inbox_prefix(CONTROLLER_INBOX)
        .connection_timeout(Duration::from_secs(5))
        .reconnect_delay_callback(|attempts| {
            Duration::from_millis(100u64.saturating_mul(1 << attempts.min(5) as u64))
                .min(Duration::from_secs(2))
        })
        .event_callback(|event| async move { log_event(&event) });
    if reconnect == Reconnect::Forever {
        connect = connect.retry_on_initial_connect();
    } else {
        connect = connect.max_reconnects(Some(1));
    }
    match (&options.user, &options.password_file) {
        (Some(user), Some(path)) => {
            let password =
                std::fs::read_to_string(path).map_err(|source| BusError::PasswordFile {
                    path: path.clone(),
                    source,
                })?;
            connect = connect.user_and_password(user.clone(), password.trim().to_owned());
        }
        (None, None) => {}
        _ => return Err(BusError::HalfCredentials),
    }
    connect
        .connect(&options.url)
        .await
        .map_err(|source| BusError::Connect {
            url: options.url.clone(),
            source,
        })
}

/// Logs what the client tells about the connection; permission refusals as
/// errors.
pub fn log_event(event: &NatsEvent) {
    match event {
        NatsEvent::ServerError(ServerError::Other(text))
            if text.to_lowercase().contains("permissions violation") =>
        {
            tracing::error!(error = %text, "the bus refused a publish or subscribe of the controller: check the derived permissions");
        }
        NatsEvent::ServerError(error) => tracing::error!(error = %error, "bus server error"),
        NatsEvent::ClientError(error) => tracing::error!(error = %error, "bus client error"),
        NatsEvent::Disconnected => tracing::warn!("disconnected from the bus"),
        NatsEvent::Connected => tracing::info!("connected to the bus"),
        other => tracing::info!(event = %other, "bus event"),
    }
}
