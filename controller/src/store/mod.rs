//! The controller's store: the events providers published, kept across
//! restarts, on PostgreSQL (tokio-postgres), its schema applied by the
//! numbered migrations in `controller/migrations/` ([`migrate()`]).
//!
//! - [`options`]: where the store is, shown without the password.
//! - [`connection`]: [`PgStore`], its one connection and error classes.
//! - [`apply`]: a round of events written in one transaction ([`Store`]);
//!   [`columns`]: its statements and their typed columns, prepared by
//!   [`statements`]; [`locks`]: the key locks it takes first, so several
//!   controllers can share the store.
//! - [`read`]: what `status` lists, counts first, then standings in order,
//!   each column's text decoded into its type (a value that does not decode
//!   is [`StoreError::Undecodable`]).
//! - [`record`]: what `serve` says of itself (when each process last
//!   caught up with the event stream and last committed a round), which
//!   `status` reads to tell whether the controller follows the bus.
//!
//! # Rules every implementation keeps
//! - One `failing` event per (provider module, provider machine, consumer):
//!   the newest. A `recovered` deletes only that key's `failing`, and only
//!   when it is newer than it.
//! - An event is newer when it stands later in the event stream: its
//!   `(stream epoch, stream sequence)` is greater ([`Received::epoch`]). The
//!   provider's clock plays no part: an older event never overwrites a newer
//!   one, a redelivered event changes nothing, a `recovered` from a clock
//!   that stepped back lands, and an event stamped in the future pins nothing.
//! - The newest `recovered` of each key is kept too, so a `failing` older than
//!   it (delivered late) cannot bring the standing back.
//! - The newest `repair` per (provider, fault); the fault is open unless that
//!   event is `repaired`. The newest `retirement` per (provider, consumer,
//!   action) is kept; `status` names a consumer the declaration requires
//!   whose newest of them is `retired` or `deleted` (and not followed by a
//!   word saying it is served again).

pub mod apply;
pub mod columns;
pub mod connection;
pub mod epoch;
pub mod locks;
pub mod migrate;
pub mod options;
pub mod read;
pub mod record;
pub mod statements;

use std::time::SystemTime;

use async_trait::async_trait;

use crate::model::{Instance, Received};

pub use columns::UPSERT_FAILING;
pub use connection::PgStore;
pub use migrate::migrate;
pub use options::{DatabaseOptions, DatabaseOptionsError};
pub use read::{Counts, Order, StatusFilter, StatusRead};

/// The store failed.
///
/// [`StoreError::is_transient`] tells the link whether to hold the events
/// and try again (the store is away or busy) or to give up on an event that
/// the store refuses as such.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
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
    /// No TLS session with the store as the URL's settings require: its
    /// certificate was refused (unknown authority, name mismatch, expired)
    /// or it does not speak TLS. A person must act, as for
    /// [`StoreError::Denied`].
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
    /// that is none of the words the column's type has (a class, an
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
    /// The migrations could not be applied.
    #[error("migrating store {target} failed: {source}")]
    Migrate {
        /// The database, without its password.
        target: String,
        /// Why.
        #[source]
        source: refinery::Error,
    },
}

impl StoreError {
    /// Whether trying again later may succeed (everything but
    /// [`StoreError::Refused`] and [`StoreError::Undecodable`]).
    pub fn is_transient(&self) -> bool {
        !matches!(
            self,
            StoreError::Refused { .. } | StoreError::Undecodable { .. }
        )
    }

    /// Whether only a person can end it (the store refuses this login, or
    /// fails the URL's TLS settings): `serve` ends at start instead of
    /// waiting forever.
    pub fn is_lasting(&self) -> bool {
        matches!(self, StoreError::Denied { .. } | StoreError::Tls { .. })
    }
}

/// The server's own words for a database error (`db error` alone says
/// nothing), else the error and its sources.
pub fn reason(error: &tokio_postgres::Error) -> String {
    match error.as_db_error() {
        Some(db) => format!("{} ({})", db.message(), db.code().code()),
        None => mesh_runtime::redact::error_text(error),
    }
}

/// Where the link puts the events it received.
///
/// # Guarantees expected of an implementation
/// - [`Store::apply`] applies all the events, in the order given, in one
///   transaction, following the rules of this module: all or none.
/// - Applying the same events again changes nothing (redelivery is normal).
/// - After a transient error the next call reconnects as needed.
///
/// # Errors
/// [`StoreError`]; the link holds the events (NAK) on a transient one.
#[async_trait]
pub trait Store: Send {
    /// Applies `events` in order in one transaction.
    async fn apply(&mut self, events: &[Received]) -> Result<(), StoreError>;

    /// The epoch of the stream `stream` made at `created`: registered the
    /// first time it is met, numbered in that order (see [`Received::epoch`]).
    async fn stream_epoch(&mut self, stream: &str, created: SystemTime) -> Result<u64, StoreError>;

    /// Says when the store's record begins, before the stream's epoch is
    /// registered: for a store that meets its first stream now (made anew),
    /// now when the durable consumer `acknowledged_before` words (a store
    /// that was there took them: they are not in this one until they are
    /// said again), else never (it gets every word the stream holds). A
    /// store that has met a stream keeps what it says. A store that keeps
    /// no such record (a test's) does nothing.
    async fn record_begins(&mut self, acknowledged_before: bool) -> Result<(), StoreError> {
        let _ = acknowledged_before;
        Ok(())
    }

    /// Records that the `serve` process `instance` runs: whether it is
    /// caught up now (a short pull, not because delivery waits on
    /// acknowledgements, every word it took stored), and whether it committed a round since
    /// its last record; `first` on its first record. A store that keeps no
    /// such record (a test's) does nothing.
    async fn record(
        &mut self,
        instance: &Instance,
        caught_up: bool,
        applied: bool,
        first: bool,
    ) -> Result<(), StoreError> {
        let _ = (instance, caught_up, applied, first);
        Ok(())
    }
}
