//! [`PgStore`]: one lazily made connection to the store, made again after it
//! broke, every call bounded in time, and database errors sorted into
//! [`PgError`]s.

use std::time::Duration;

use tokio_postgres::Client;

use super::options::DatabaseOptions;
use super::statements::{Replan, Statements};
use super::{reason, PgError};

/// How long a connection attempt (socket, authentication, preparing) may take.
pub(super) const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// How long one transaction or read may take before the store counts as away.
pub(super) const STATEMENT_TIMEOUT: Duration = Duration::from_secs(30);

/// A live connection, and the write statements once prepared.
pub(super) struct Connected {
    pub(super) client: Client,
    pub(super) statements: Option<Statements>,
    /// When `statements` are prepared again.
    pub(super) replan: Replan,
}

impl Connected {
    /// A connection with nothing prepared on it yet.
    pub(super) fn new(client: Client) -> Connected {
        Connected {
            client,
            statements: None,
            replan: Replan::default(),
        }
    }
}

/// The store on PostgreSQL. Connects lazily, and again after the
/// connection broke; every call is bounded in time.
pub struct PgStore {
    pub(super) options: DatabaseOptions,
    pub(super) connected: Option<Connected>,
}

impl std::fmt::Debug for PgStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgStore")
            .field("target", &self.options.shown)
            .field("connected", &self.connected.is_some())
            .finish()
    }
}

impl PgStore {
    /// A store at `options`; nothing is connected yet.
    pub fn new(options: DatabaseOptions) -> PgStore {
        PgStore {
            options,
            connected: None,
        }
    }

    /// Where the store is (no password).
    pub fn target(&self) -> &str {
        &self.options.shown
    }

    /// The live connection, made now when there is none (or it broke).
    pub(super) async fn connected(&mut self) -> Result<&mut Connected, PgError> {
        if self
            .connected
            .as_ref()
            .is_some_and(|c| c.client.is_closed())
        {
            self.connected = None;
        }
        if self.connected.is_none() {
            let client = connect_client(&self.options).await?;
            self.connected = Some(Connected::new(client));
        }
        Ok(self.connected.as_mut().expect("connected just above"))
    }

    /// Whether the store answers a trivial query within `within` (the
    /// connection made first when there is none): `/readyz`'s active
    /// check. A failure drops the connection (the next call reconnects).
    ///
    /// # Errors
    /// [`PgError`] when the store is away, refuses, or does not answer in time.
    pub async fn answers(&mut self, within: Duration) -> Result<(), PgError> {
        let target = self.options.shown.clone();
        let work = async {
            let client = &self.connected().await?.client;
            client
                .simple_query("SELECT 1")
                .await
                .map(drop)
                .map_err(|source| classify(target.clone(), source))
        };
        let result = match tokio::time::timeout(within, work).await {
            Ok(result) => result,
            Err(_) => Err(PgError::Timeout {
                target,
                after: within,
            }),
        };
        if result.is_err() {
            self.connected = None;
        }
        result
    }

    /// The outcome of bounded work on the connection: on any failure but a
    /// refusal of the events, the connection is dropped (the next call
    /// reconnects).
    pub(super) fn settle<T>(
        &mut self,
        outcome: Result<Result<T, tokio_postgres::Error>, tokio::time::error::Elapsed>,
        bound: Duration,
    ) -> Result<T, PgError> {
        let target = self.options.shown.clone();
        let result = match outcome {
            Ok(Ok(value)) => return Ok(value),
            Ok(Err(source)) => classify(target, source),
            Err(_) => PgError::Timeout {
                target,
                after: bound,
            },
        };
        if result.is_transient() {
            self.connected = None;
        }
        Err(result)
    }
}

/// Connects to the store, bounded by [`CONNECT_TIMEOUT`].
pub(super) async fn connect_client(options: &DatabaseOptions) -> Result<Client, PgError> {
    let target = options.shown.clone();
    let connecting = options.config.connect(options.tls.connector());
    let (client, connection) = match tokio::time::timeout(CONNECT_TIMEOUT, connecting).await {
        Ok(Ok(pair)) => pair,
        Ok(Err(source)) if password_missing(&source, options) => {
            return Err(PgError::PasswordMissing {
                target,
                user: options.config.get_user().unwrap_or("?").to_owned(),
            })
        }
        Ok(Err(source)) => return Err(classify(target, source)),
        Err(_) => {
            return Err(PgError::Timeout {
                target,
                after: CONNECT_TIMEOUT,
            })
        }
    };
    tokio::spawn(async move {
        if let Err(error) = connection.await {
            // The server's message and SQLSTATE, or the whole chain of an io
            // error: tokio-postgres's own text is `db error` alone.
            tracing::warn!(store = %target, error = %reason(&error), "store connection ended");
        }
    });
    Ok(client)
}

/// Whether the server asked for a password the options do not have
/// (tokio-postgres says so only in its text: `invalid configuration`, its
/// cause `password missing`).
fn password_missing(source: &tokio_postgres::Error, options: &DatabaseOptions) -> bool {
    use std::error::Error as _;
    options.config.get_password().is_none()
        && source.code().is_none()
        && source
            .source()
            .is_some_and(|cause| cause.to_string() == "password missing")
}

/// Sorts a database error: the events' own fault (data, constraint), a
/// broken or refused connection, or anything else (which may pass).
pub(super) fn classify(target: String, source: tokio_postgres::Error) -> PgError {
    if mesh_pg_tls::is_tls_refusal(&source) {
        // The certificate refused, or no TLS where the URL requires it.
        return PgError::Tls { target, source };
    }
    let Some(code) = source.code() else {
        // No SQLSTATE: the connection is closed, or an io or protocol error.
        return PgError::Unavailable { target, source };
    };
    match code.code().get(..2).unwrap_or("") {
        // Data exception, integrity constraint violation: these events, as such.
        "22" | "23" => PgError::Refused { target, source },
        // Invalid authorization (wrong password, unknown user), unknown database.
        "28" | "3D" => PgError::Denied { target, source },
        // Connection exception, operator intervention (shutting down),
        // insufficient resources.
        "08" | "57" | "53" => PgError::Unavailable { target, source },
        // Anything else (locks, serialization, a missing table, ...) may pass.
        _ => PgError::Failed { target, source },
    }
}
