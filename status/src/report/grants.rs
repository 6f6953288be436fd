//! The grants in scope (`mesh-grants`), sorted by the state their newest
//! event gives (pure).

use mesh_protocol::event::GrantState;
use mesh_protocol::{Name, Timestamp};
use serde::Serialize;

use crate::model::GrantRow;

/// The grants in scope by their newest event (`mesh-grants`). Its JSON is
/// the `grants` member of `status --json`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Grants {
    /// How many were last published `reachable`.
    pub reachable: u64,
    /// Those last published `unreachable`: they break all-well.
    pub unreachable: Vec<UnreachableGrant>,
    /// Those last published `unchecked`: counted, never called broken.
    pub unchecked: Vec<UncheckedGrant>,
}

impl Grants {
    /// Every grant in scope.
    pub fn total(&self) -> u64 {
        self.reachable + count(self.unreachable.len()) + count(self.unchecked.len())
    }
}

pub(crate) fn count(n: usize) -> u64 {
    u64::try_from(n).unwrap_or(u64::MAX)
}

/// A grant its consumer cannot reach from its own network position: the
/// `unreachable` event's fields plus `machine` and `consumer`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct UnreachableGrant {
    /// The consumer's machine.
    pub machine: Name,
    /// The consumer.
    pub consumer: Name,
    /// The provision.
    pub provision: String,
    /// The provider, `module@machine`.
    pub from: String,
    /// The address dialled.
    pub address: String,
    /// The port dialled.
    pub port: Option<i32>,
    /// Failed checks in a row.
    pub failures: i64,
    /// The first of them.
    pub failing_since: Option<Timestamp>,
    /// The last success since the agent started; null: never.
    pub last_reachable_at: Option<Timestamp>,
    /// Why the newest check failed.
    pub error: String,
    /// When it was published.
    pub said_at: Timestamp,
}

/// A grant that could not be checked: the `unchecked` event's fields plus
/// `machine` and `consumer`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct UncheckedGrant {
    /// The consumer's machine.
    pub machine: Name,
    /// The consumer.
    pub consumer: Name,
    /// The provision.
    pub provision: String,
    /// The provider, `module@machine`.
    pub from: String,
    /// Why it was not checked.
    pub reason: String,
    /// When it was published.
    pub said_at: Timestamp,
}

/// The grants' newest events sorted by the state they give (pure).
pub fn grants(rows: Vec<GrantRow>) -> Grants {
    let mut grants = Grants::default();
    for r in rows {
        match r.state {
            GrantState::Reachable => grants.reachable += 1,
            GrantState::Unreachable => grants.unreachable.push(UnreachableGrant {
                machine: r.machine,
                consumer: r.consumer,
                provision: r.provision,
                from: r.from,
                address: r.address.unwrap_or_default(),
                port: r.port,
                failures: r.failures.unwrap_or_default(),
                failing_since: r.failing_since,
                last_reachable_at: r.last_reachable_at,
                error: r.error.unwrap_or_default(),
                said_at: r.said_at,
            }),
            GrantState::Unchecked => grants.unchecked.push(UncheckedGrant {
                machine: r.machine,
                consumer: r.consumer,
                provision: r.provision,
                from: r.from,
                reason: r.reason.unwrap_or_default(),
                said_at: r.said_at,
            }),
        }
    }
    grants
}
