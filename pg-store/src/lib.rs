//! # mesh-pg-store
//!
//! The controller's store: the events providers published, kept across
//! restarts, on PostgreSQL (tokio-postgres), its schema applied by the
//! numbered migrations in `pg-store/migrations/` ([`migrate()`]).
//! `mesh-controller` writes it (`serve`) and reads it (`status`, `node
//! show`, `history`, `why`); `mesh-console` reads it, as the store's
//! reader role. Neither needs the other to do so.
//!
//! - `options`: where the store is, shown without the password
//!   ([`DatabaseOptions`]).
//! - `connection`: [`PgStore`], its one connection and error classes.
//! - `apply`: a round of events written in one transaction (the engine's
//!   `Store`); `columns`: its statements and their typed columns (each list
//!   of columns written once, `column_list`), prepared by `statements`;
//!   `locks`: the key locks it takes first, so several controllers can
//!   share the store.
//! - `read`: what `status` lists, counts first, then standings in order,
//!   each column's text decoded into its type (a value that does not
//!   decode is [`PgError::Undecodable`]).
//! - `record`: what `serve` says of itself (when each process last caught
//!   up with the event stream and last committed a round), which `status`
//!   reads to tell whether the controller follows the bus.
//! - `reader`: the read-only role ([`grant_reader`]).
//! - `notes`: a person's rows: a note on a failing interval ([`Note`]),
//!   an action from the console ([`PgStore::add_action`]).
//!
//! The rules every implementation of the engine's `Store` keeps are
//! written with the trait (`mesh_status::store`); this one keeps them in
//! its statements.

// Nothing public by accident: what this crate offers is chosen.
#![warn(unreachable_pub)]

mod apply;
mod column_list;
mod columns;
mod connection;
mod consumers;
mod epoch;
mod history;
mod history_read;
mod history_row;
mod locks;
mod migrate;
mod notes;
mod options;
mod read;
mod reader;
mod record;
mod rows;
mod selected;
mod statements;

use mesh_status::store::{StoreError, StoreErrorKind};

/// The round's upsert of failing standings as SQL text (feature `bench`:
/// the controller's ingest benchmark runs it through pgbench).
#[cfg(feature = "bench")]
pub use columns::UPSERT_FAILING;
pub use connection::PgStore;
pub use migrate::migrate;
pub use notes::{note_text, Note, NoteTextError, MAX_NOTE_CHARS};
pub use options::{DatabaseOptions, DatabaseOptionsError};
pub use read::StatusRead;
pub use reader::{grant_reader, ReaderError, ReaderMade, ReaderRights, RoleName, RoleNameError};

/// The PostgreSQL store failed: what the command line says, and, as the
/// engine's [`StoreError`] (its [`StoreErrorKind`] from the variant), what
/// the link does.
///
/// [`PgError::is_transient`] tells whether to hold the events and try
/// again (the store is away or busy) or to give up on an event that the
/// store refuses as such.
#[derive(Debug, thiserror::Error)]
pub enum PgError {
    /// The store could not be reached, or the connection broke.
    #[error("store {target} unavailable: {}", reason(.source))]
    Unavailable {
        /// The database, without its password.
        target: String,
        /// Why.
        #[source]
        source: tokio_postgres::Error,
    },
    /// The store refused the connection for a reason waiting will not
    /// change (wrong password, unknown user or database): a person must act.
    #[error("store {target} refused the connection: {}", reason(.source))]
    Denied {
        /// The database, without its password.
        target: String,
        /// Why.
        #[source]
        source: tokio_postgres::Error,
    },
    /// The store asks for a password and none was given (no
    /// `--database-password-file`, no password in the URL): a person must
    /// act, as for [`PgError::Denied`].
    #[error(
        "store {target} asks for the password of user {user} and none was given: put it in a \
         file readable only by this user and name it with --database-password-file (variable \
         MESH_DATABASE_PASSWORD_FILE, or the systemd credential database-password)"
    )]
    PasswordMissing {
        /// The database, without its password.
        target: String,
        /// The store user the URL names.
        user: String,
    },
    /// No TLS session with the store as the URL's settings require: its
    /// certificate was refused (unknown authority, name mismatch, expired)
    /// or it does not speak TLS. A person must act, as for
    /// [`PgError::Denied`].
    #[error("store {target} fails the TLS settings of the database URL: {}", reason(.source))]
    Tls {
        /// The database, without its password.
        target: String,
        /// Why.
        #[source]
        source: tokio_postgres::Error,
    },
    /// The store did not answer in time.
    #[error("store {target} did not answer within {after:?}")]
    Timeout {
        /// The database, without its password.
        target: String,
        /// The bound.
        after: std::time::Duration,
    },
    /// The store failed a statement for a reason that may pass (locks, a
    /// missing table being migrated, shutting down, ...).
    #[error("store {target} failed: {}", reason(.source))]
    Failed {
        /// The database, without its password.
        target: String,
        /// Why.
        #[source]
        source: tokio_postgres::Error,
    },
    /// The store refused the events themselves (a data or constraint
    /// error): trying again would fail again.
    #[error("store {target} refused the events: {}", reason(.source))]
    Refused {
        /// The database, without its password.
        target: String,
        /// Why.
        #[source]
        source: tokio_postgres::Error,
    },
    /// A stored value this controller cannot read back: text in a column
    /// that is none of the values the column's type has (a class, an
    /// outcome, a grant state, a name), written by another program or
    /// another version. Reading again gives the same.
    #[error("store {target} holds a value this controller cannot read: column {column}: {reason}")]
    Undecodable {
        /// The database, without its password.
        target: String,
        /// The table and column, e.g. `failing.class`.
        column: &'static str,
        /// Why its value does not decode (it quotes the value).
        reason: String,
    },
    /// The store lacks a table this release reads: it is not migrated to
    /// this release yet (`serve` migrates as it starts; so does `migrate`).
    #[error(
        "store {target} is not migrated to this release of mesh-controller ({}): run \
         `mesh-controller migrate`, or start `mesh-controller serve`, which migrates first",
        reason(.source)
    )]
    NotMigrated {
        /// The database, without its password.
        target: String,
        /// Why.
        #[source]
        source: tokio_postgres::Error,
    },
    /// The migrations could not be applied (the server's own message is
    /// said, not only "db error").
    #[error("migrating store {target} failed: {}", migrate::reason(.source))]
    Migrate {
        /// The database, without its password.
        target: String,
        /// Why.
        #[source]
        source: refinery::Error,
    },
}

impl PgError {
    /// Whether trying again later may succeed (everything but
    /// [`PgError::Refused`] and [`PgError::Undecodable`]).
    pub fn is_transient(&self) -> bool {
        !matches!(self, PgError::Refused { .. } | PgError::Undecodable { .. })
    }

    /// Whether only a person can end it (the store refuses this login, or
    /// fails the URL's TLS settings): `serve` ends at start instead of
    /// waiting forever.
    pub fn is_lasting(&self) -> bool {
        matches!(
            self,
            PgError::Denied { .. } | PgError::Tls { .. } | PgError::PasswordMissing { .. }
        )
    }

    /// Whether a migration that failed may pass when tried again: it lost a
    /// deadlock or a lock to a reader (a `status` reading while `serve`
    /// migrates), or the store went away in the middle. A migration the
    /// server refuses for what it says is no such thing.
    pub fn is_migration_retryable(&self) -> bool {
        matches!(self, PgError::Migrate { source, .. } if migrate::retryable(source))
    }
}

/// The server's own message for a database error (`db error` alone says
/// nothing), else the error and its sources.
pub fn reason(error: &tokio_postgres::Error) -> String {
    match error.as_db_error() {
        Some(db) => format!("{} ({})", db.message(), db.code().code()),
        None => mesh_runtime::redact::error_text(error),
    }
}

impl From<PgError> for StoreError {
    /// The engine's backend-neutral error: the kind says what the link does.
    fn from(error: PgError) -> StoreError {
        let kind = match &error {
            PgError::Refused { .. } => StoreErrorKind::Refused,
            PgError::Undecodable { .. } => StoreErrorKind::Undecodable,
            PgError::Denied { .. } | PgError::Tls { .. } | PgError::PasswordMissing { .. } => {
                StoreErrorKind::Lasting
            }
            _ => StoreErrorKind::Away,
        };
        StoreError::new(kind, error)
    }
}
