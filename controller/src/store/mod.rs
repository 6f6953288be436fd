//! The controller's store: what providers said, kept across restarts.
//!
//! [`Store`] is the small seam between the link (and `status`) and the
//! database; [`PgStore`] is the PostgreSQL implementation, its schema applied
//! by numbered migrations in `controller/migrations/` ([`migrate`]).
//!
//! # Rules every implementation keeps
//! - One failing word per (provider module, provider machine, consumer): the
//!   newest. A `recovered` deletes only that key's failing word, and only when
//!   it is newer than it.
//! - A word is newer when its `(said_at, stream sequence)` is greater: an older
//!   word never overwrites a newer one, a redelivered word changes nothing, and
//!   of two words said in the same second the later in the stream wins.
//! - The newest `recovered` of each key is kept too, so a `failing` older than
//!   it (delivered late) cannot bring the standing back.
//! - The newest `repair` per (provider, fault); the fault is open unless that
//!   word is `repaired`. The newest `retirement` per (provider, consumer,
//!   action) is kept for the record (it is not a failure and `status` does not
//!   list it).
//!
//! # Status pages
//! So that `status --json` need not read 100,000 rows one by one, each
//! provider's failing words are also kept rendered in 64 pages ([`pages`],
//! migration V2). A trigger marks a word's page stale in the transaction
//! that changes the word, whoever changes it; `serve` writes stale pages
//! ([`PgStore::build_pages`]), never over a change it did not read; a
//! reader takes the clean pages and the rows of the stale ones in one
//! snapshot ([`PgStore::paged_snapshot`]). The rows stay the truth: with no
//! page written, `status` lists the same, only slower.

pub mod pages;
mod postgres;
pub mod reduce;

use async_trait::async_trait;
use mesh_sdk::{Event, Timestamp};

use crate::declaration::ModuleId;

pub use postgres::{
    migrate, DatabaseOptions, DatabaseOptionsError, PagesBuilt, PgStore, UPSERT_FAILING,
};

/// One word as the link hands it to the store.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Word {
    /// Its JetStream stream sequence (breaks ties between words said in the same second).
    pub seq: u64,
    /// Who said it, read from the subject (never from the body).
    pub emitter: ModuleId,
    /// What was said.
    pub event: Event,
}

/// A stored failing word.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct FailingRow {
    /// The provider module that said it.
    pub provider_module: String,
    /// The machine the provider ran on.
    pub provider_machine: String,
    /// The consumer.
    pub consumer: String,
    /// The consumer's machine, as the provider last knew it.
    pub consumer_machine: Option<String>,
    /// The provision, as the provider last knew it.
    pub provision: Option<String>,
    /// The failure's class.
    pub class: String,
    /// The failure's first words.
    pub error: String,
    /// First failure since the last success.
    pub since: Timestamp,
    /// Failed attempts since `since`.
    pub attempts: i64,
    /// When it was said.
    pub said_at: Timestamp,
}

/// A stored repair word.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct RepairRow {
    /// The provider module that said it.
    pub provider_module: String,
    /// The machine the provider ran on.
    pub provider_machine: String,
    /// The fault.
    pub fault: String,
    /// `repaired`, `failed` or `braked`.
    pub outcome: String,
    /// In words.
    pub detail: String,
    /// When the next attempt is due, if one is.
    pub next_attempt_at: Option<Timestamp>,
    /// When it was said.
    pub said_at: Timestamp,
}

/// Everything `status` needs from the store.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Snapshot {
    /// Every failing word, in no particular order.
    pub failing: Vec<FailingRow>,
    /// Every repair word whose fault is open (not `repaired`).
    pub open_repairs: Vec<RepairRow>,
}

/// What `status --json` reads: clean status pages, and the failing words
/// of the pages that are not (see [`pages`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PagedSnapshot {
    /// The clean pages (checked: each reads whole).
    pub pages: Vec<pages::PageRow>,
    /// The failing words not in a clean page.
    pub stale: Vec<FailingRow>,
    /// The open repair faults.
    pub open_repairs: Vec<RepairRow>,
}

/// The store failed.
///
/// [`StoreError::is_transient`] tells the link whether to hold the words and
/// try again (the store is away or busy) or to give up on a word that the
/// store refuses as such.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The store could not be reached, or the connection broke.
    #[error("store {target} unavailable: {source}")]
    Unavailable {
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
    #[error("store {target} failed: {source}")]
    Failed {
        /// The database, without its password.
        target: String,
        /// Why.
        #[source]
        source: tokio_postgres::Error,
    },
    /// The store refused the words themselves (a data or constraint error):
    /// trying again would fail again.
    #[error("store {target} refused the words: {source}")]
    Refused {
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
    /// Whether trying again later may succeed (everything but [`StoreError::Refused`]).
    pub fn is_transient(&self) -> bool {
        !matches!(self, StoreError::Refused { .. })
    }
}

/// Where the link puts words and `status` reads them.
///
/// # Guarantees expected of an implementation
/// - [`Store::apply`] applies all the words, in the order given, in one
///   transaction, following the rules of this module: all or none.
/// - Applying the same words again changes nothing (redelivery is normal).
/// - After a transient error the next call reconnects as needed.
///
/// # Errors
/// [`StoreError`]; the link holds the words (NAK) on a transient one.
#[async_trait]
pub trait Store: Send {
    /// Applies `words` in order in one transaction.
    async fn apply(&mut self, words: &[Word]) -> Result<(), StoreError>;

    /// Reads what `status` shows.
    async fn snapshot(&mut self) -> Result<Snapshot, StoreError>;
}
