//! The store the link writes and `status` reads, as the engine sees it:
//! the [`Store`] trait the link's rounds apply events through, its
//! backend-neutral [`StoreError`], and what a status read is asked for
//! ([`StatusFilter`], [`Order`]) and answers first ([`FailingGroup`]).
//! `mesh-controller` implements it on PostgreSQL (`PgStore`), the
//! simulator in memory.
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
//!   event saying it is served again).

use std::time::{Duration, SystemTime};

use async_trait::async_trait;
use mesh_protocol::{Class, ModuleId, Name, Timestamp};

use crate::model::{Instance, Received};

/// What kind of failure a [`StoreError`] is: what the link does about it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StoreErrorKind {
    /// The store is away, busy or slow, or failed for a reason that may
    /// pass: the link holds the events (NAK) and tries again.
    Away,
    /// The store refuses this login or fails its TLS settings: only a
    /// person can end it (trying again is still allowed).
    Lasting,
    /// The store refused the events themselves (a data or constraint
    /// error): trying them again would fail again.
    Refused,
    /// The store holds a value this engine cannot read back: reading
    /// again gives the same.
    Undecodable,
}

/// The store failed: its [`StoreErrorKind`] and the backend's own error
/// (shown as the error's text, and as its [`std::error::Error::source`]).
#[derive(Debug)]
pub struct StoreError {
    kind: StoreErrorKind,
    error: Box<dyn std::error::Error + Send + Sync + 'static>,
}

impl StoreError {
    /// A failure of `kind`, said by the backend's `error`.
    pub fn new(
        kind: StoreErrorKind,
        error: impl Into<Box<dyn std::error::Error + Send + Sync + 'static>>,
    ) -> StoreError {
        StoreError {
            kind,
            error: error.into(),
        }
    }

    /// Its kind.
    pub fn kind(&self) -> StoreErrorKind {
        self.kind
    }

    /// The backend's error, to look at as its own type.
    pub fn backend(&self) -> &(dyn std::error::Error + Send + Sync + 'static) {
        self.error.as_ref()
    }

    /// Whether trying again later may succeed (everything but
    /// [`StoreErrorKind::Refused`] and [`StoreErrorKind::Undecodable`]).
    pub fn is_transient(&self) -> bool {
        !matches!(
            self.kind,
            StoreErrorKind::Refused | StoreErrorKind::Undecodable
        )
    }

    /// Whether only a person can end it ([`StoreErrorKind::Lasting`]).
    pub fn is_lasting(&self) -> bool {
        self.kind == StoreErrorKind::Lasting
    }
}

impl std::fmt::Display for StoreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.error.fmt(f)
    }
}

impl std::error::Error for StoreError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.error.source()
    }
}

/// Which standings and repair faults a read is about.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StatusFilter {
    /// Only the standings and repairs of these providers (those the
    /// declaration assigns where they ran).
    pub providers: Vec<ModuleId>,
    /// Whether `providers` were chosen from the declared ones (a console's
    /// provider or consumer page, `why`), not all of them: the store then
    /// finds their standings by their key's index instead of counting
    /// every standing. Either way it selects the same standings.
    pub providers_chosen: bool,
    /// `node show MACHINE`: only standings whose provider or consumer is on
    /// it, and repairs of providers on it.
    pub machine: Option<String>,
    /// A standing published at or before this time counts as silent.
    pub silent_before: Timestamp,
    /// The consumers the declaration requires from a provider, in scope:
    /// (provider, consumer). Those whose provider last said it retired or
    /// deleted them are read (the store's `retired` rows).
    pub required: Vec<(ModuleId, String)>,
    /// The order the standings come in.
    pub order: Order,
    /// Only this consumer's standings (a console's consumer page).
    pub consumer: Option<String>,
    /// At most this many standings of each provider and class, in cause
    /// order, and each group's count (a console's mesh and machine pages);
    /// `None`: every standing.
    pub per_group: Option<u32>,
}

impl StatusFilter {
    /// Keeps of the providers, and of the consumers required from them,
    /// those of the providers `keep` chooses, and says they were chosen
    /// ([`StatusFilter::providers_chosen`]).
    pub fn choose_providers(&mut self, keep: impl Fn(&ModuleId) -> bool) {
        self.providers.retain(|p| keep(p));
        self.required.retain(|(p, _)| keep(p));
        self.providers_chosen = true;
    }
}

/// The order of the listing.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Order {
    /// By provider module, provider machine, consumer (`status --json`).
    #[default]
    Key,
    /// By provider module, provider machine, class, error, consumer: the
    /// standings failing for one cause come together (the human listing
    /// groups them).
    Cause,
}

/// Which history `mesh-controller history` reads (the transitions of
/// [`crate::model::history`]): at most one of consumer, provider and
/// machine narrows it; none reads all.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HistoryFilter {
    /// Only this consumer's (`CONSUMER`), on this machine when given
    /// (`CONSUMER@MACHINE`).
    pub consumer: Option<(Name, Option<Name>)>,
    /// Only this provider's (`--provider P@M`): its consumers', its
    /// silences, its repairs.
    pub provider: Option<ModuleId>,
    /// Only those whose provider or consumer is on this machine (`--machine M`).
    pub machine: Option<Name>,
    /// From this time on (`--since`); an interval still lasting that
    /// began before is read too.
    pub since: Timestamp,
}

/// One provider's standings of one class: how many it says it keeps
/// failing, and how many of them it stopped repeating (silent).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct FailingGroup {
    /// The provider, written as `provider_module` and `provider_machine`.
    #[serde(flatten, serialize_with = "crate::model::row::provider_members")]
    pub provider: ModuleId,
    /// The class of their failures.
    pub class: Class,
    /// How many standings.
    pub standings: u64,
    /// Of which silent (published `silent_after` ago or earlier).
    pub silent: u64,
}

/// What one record of a `serve` process says ([`Store::record`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ControllerRecordUpdate<'a> {
    /// The process.
    pub instance: &'a Instance,
    /// It is caught up now: a pull came back short, not because delivery
    /// waits on acknowledgements, every event it took stored.
    pub caught_up: bool,
    /// It committed a round since its last record.
    pub applied: bool,
    /// This is its first record.
    pub first: bool,
}

/// Where the link puts the events it received.
///
/// Every method is required: a store that keeps no controller record or
/// history (a test's) says so in its own body.
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
    /// now when the durable consumer `acknowledged_before` events (a store
    /// that was there took them: they are not in this one until they are
    /// published again), else never (it gets every event the stream holds). A
    /// store that has met a stream keeps what it says. Returns when the
    /// record began when this call began it (the store is new), else
    /// `None`. By default the store keeps no such record (a test's): it
    /// returns `None`, and its record reads as whole.
    async fn record_begins(
        &mut self,
        acknowledged_before: bool,
    ) -> Result<Option<SystemTime>, StoreError> {
        let _ = acknowledged_before;
        Ok(None)
    }

    /// Removes at most `limit` history rows recorded more than `keep`
    /// ago, oldest first; returns how many it removed. By default the
    /// store keeps no history to remove (a test's): it returns 0.
    async fn prune_history(&mut self, keep: Duration, limit: u32) -> Result<u64, StoreError> {
        let _ = (keep, limit);
        Ok(0)
    }

    /// Records that the `serve` process [`ControllerRecordUpdate::instance`]
    /// runs, as `update` says. By default the store keeps no such record
    /// (a test's): it returns `Ok(())`.
    async fn record(&mut self, update: ControllerRecordUpdate<'_>) -> Result<(), StoreError> {
        let _ = update;
        Ok(())
    }
}
