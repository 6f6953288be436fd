//! The NATS side: connection with the provider's inbox prefix and an event
//! callback that logs refusals, and a JetStream sink that awaits acks.

use std::path::PathBuf;
use std::time::Duration;

use async_nats::jetstream::{self, message::PublishMessage};
use async_nats::{Event as NatsEvent, ServerError};
use async_trait::async_trait;
use bytes::Bytes;
use mesh_protocol::subject::inbox_prefix;
use mesh_protocol::ModuleId;

use super::servers::ServerListError;
use super::transport::{connect_options, NatsArgs};
use super::{EventSink, SinkError};

/// How a provider reaches the bus.
#[derive(Clone, Debug)]
pub struct BusOptions {
    /// Servers, credentials and TLS.
    pub nats: NatsArgs,
    /// How long to wait for a JetStream ack.
    pub ack_timeout: Duration,
}

/// The bus could not be set up; ends the provider's start (and a controller
/// command). No variant holds a secret: files are named, never quoted, and
/// URLs are shown without their passwords.
#[derive(Debug, thiserror::Error)]
pub enum BusError {
    /// `--nats` holds an empty or invalid entry, or credentials that cannot
    /// be used.
    #[error(transparent)]
    Servers(#[from] ServerListError),
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
    /// More than one way of proving who the client is was given.
    #[error(
        "--nats-user/--nats-password-file, --nats-creds and --nats-nkey-file are \
         alternatives: give one"
    )]
    ManyCredentials,
    /// A URL holds a user and password, and a flag gives credentials too.
    #[error(
        "--nats entry {position} holds a user and password, and {flags} gives credentials \
         too: give one"
    )]
    CredentialsTwice {
        /// The first entry holding a user and password, from 1.
        position: usize,
        /// The flags giving the other credentials.
        flags: &'static str,
    },
    /// The `.creds` file could not be read or parsed.
    #[error("nats credentials file {path} cannot be used: {source}")]
    CredsFile {
        /// The file.
        path: PathBuf,
        /// Why (async-nats's words, which never quote the file).
        #[source]
        source: std::io::Error,
    },
    /// The nkey seed file could not be read or holds no valid user seed.
    #[error("nats nkey file {path} cannot be used: {reason}")]
    NkeyFile {
        /// The file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// A client certificate was given without its key, or the other way round.
    #[error("--nats-cert-file and --nats-key-file go together")]
    HalfClientCertificate,
    /// A TLS file (CA, certificate, key) cannot be opened.
    #[error("{flag} {path} cannot be read: {source}")]
    TlsFile {
        /// The flag naming it.
        flag: &'static str,
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The connection could not be made.
    #[error("cannot connect to nats at {url}: {source}{hint}")]
    Connect {
        /// The servers, shown without passwords.
        url: String,
        /// Why.
        #[source]
        source: async_nats::ConnectError,
        /// What the operator likely has to fix (TLS refusals), or "".
        hint: &'static str,
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

impl BusError {
    /// [`BusError::Connect`] to the servers of `nats`, with a hint when the
    /// TLS handshake was refused (read from rustls's typed error).
    pub fn connect(nats: &NatsArgs, source: async_nats::ConnectError) -> BusError {
        let hint = tls_hint(&source);
        BusError::Connect {
            url: nats.shown_servers(),
            source,
            hint,
        }
    }
}

/// What a TLS refusal in `error`'s chain means for the operator, or "".
fn tls_hint(error: &(dyn std::error::Error + 'static)) -> &'static str {
    use async_nats::rustls::{AlertDescription, CertificateError, Error as TlsError};
    let mut next = Some(error);
    while let Some(error) = next {
        let tls = error.downcast_ref::<TlsError>().or_else(|| {
            error
                .downcast_ref::<std::io::Error>()
                .and_then(|io| io.get_ref())
                .and_then(|inner| inner.downcast_ref::<TlsError>())
        });
        match tls {
            Some(TlsError::AlertReceived(
                AlertDescription::BadCertificate
                | AlertDescription::CertificateRequired
                | AlertDescription::UnknownCA
                | AlertDescription::AccessDenied,
            )) => {
                return " (the server refused this client's TLS certificate or its \
                        absence: give --nats-cert-file and --nats-key-file, signed by a CA \
                        the server trusts)"
            }
            Some(TlsError::InvalidCertificate(CertificateError::UnknownIssuer)) => {
                return " (the server's TLS certificate is not signed by a trusted CA: \
                        give --nats-ca-file)"
            }
            Some(TlsError::InvalidCertificate(_)) => {
                return " (the server's TLS certificate is not valid for this name or \
                        time: check the URL's host and the certificate)"
            }
            _ => next = error.source(),
        }
    }
    ""
}

/// Connects as `provider`: its own inbox prefix (`_INBOX.<machine>.<module>`)
/// and [`connect_options`], reconnecting forever to any server of the list.
/// Returns at once even when the servers are down: events are held until
/// one answers.
///
/// # Errors
/// [`BusError`] when the flags are wrong, a file cannot be read or the
/// servers are invalid.
pub async fn connect(
    options: &BusOptions,
    provider: &ModuleId,
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
    let servers = options.nats.servers()?;
    connect_options(&options.nats, name, inbox_prefix)
        .await?
        .retry_on_initial_connect()
        .connect(servers)
        .await
        .map_err(|source| BusError::connect(&options.nats, source))
}

/// Logs what the client tells about the connection; a permission refusal
/// as an error (a refused announcement is never silent).
pub(super) fn log_event(event: &NatsEvent) {
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
