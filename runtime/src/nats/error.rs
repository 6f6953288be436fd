//! Why the bus could not be set up ([`BusError`]), with what the operator
//! likely has to fix when a TLS handshake was refused.

use std::path::PathBuf;

use super::servers::ServerListError;

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
        /// Why (async-nats's message, which never quote the file).
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
        /// What the operator likely has to fix (TLS refusals, refused
        /// credentials), or "".
        hint: String,
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
    /// [`BusError::Connect`] to `servers` (as they may be shown), with a
    /// hint when the TLS handshake was refused (read from rustls's typed
    /// error), or when the server refused the credentials: `credentials`,
    /// which user and file to check (`NatsArgs::credentials_to_check`).
    pub fn connect(
        servers: String,
        credentials: &str,
        source: async_nats::ConnectError,
    ) -> BusError {
        use async_nats::ConnectErrorKind;
        let hint = match source.kind() {
            ConnectErrorKind::AuthorizationViolation | ConnectErrorKind::Authentication => {
                format!(" (the bus refused this client's credentials: check {credentials})")
            }
            _ => tls_hint(&source).to_owned(),
        };
        BusError::Connect {
            url: servers,
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
