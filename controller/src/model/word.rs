//! What providers said, as the link hands it to the store and the store
//! gives it back.

use mesh_protocol::{Event, ModuleId, Timestamp};
use serde::Serialize;

/// One word as the link hands it to the store. Words of one key are
/// ordered by `(epoch, seq)`, where they stand in the event stream, never by
/// the provider's clock (`said_at`).
#[derive(Clone, Debug, PartialEq)]
pub struct Word {
    /// The epoch of the stream it came through (see the store's
    /// `stream_epoch`): a stream made anew starts its sequence again at 1,
    /// and gets the next epoch.
    pub epoch: u64,
    /// Its JetStream stream sequence.
    pub seq: u64,
    /// Who said it, read from the subject (never from the body).
    pub emitter: ModuleId,
    /// What was said.
    pub event: Event,
}

/// A stored failing word: a standing. Its JSON is the word's fields in the
/// order `status --json` lists them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
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
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
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

/// A provider's newest `alive` word, as stored.
#[derive(Clone, Debug, PartialEq)]
pub struct AliveRow {
    /// The provider module that said it.
    pub provider_module: String,
    /// The machine the provider ran on.
    pub provider_machine: String,
    /// When that provider process started.
    pub started_at: Timestamp,
    /// How often it says `alive`, in seconds.
    pub alive_every_seconds: i64,
    /// Its settled time, if reached (see the `alive` body).
    pub settled_at: Option<Timestamp>,
    /// When it was said.
    pub said_at: Timestamp,
}

/// A grant's newest word, as stored (`mesh-grants`): its kind decides which
/// of the optional fields are set.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GrantRow {
    /// The consumer's machine (the agent that said it).
    pub machine: String,
    /// The consumer.
    pub consumer: String,
    /// The provision granted.
    pub provision: String,
    /// The provider, `module@machine`.
    pub from: String,
    /// `unreachable`, `reachable` or `unchecked`.
    pub kind: String,
    /// The address (not for `unchecked`).
    pub address: Option<String>,
    /// The port (not for `unchecked`).
    pub port: Option<i32>,
    /// Failed checks in a row (`unreachable`).
    pub failures: Option<i64>,
    /// The first of them (`unreachable`).
    pub failing_since: Option<Timestamp>,
    /// The last success since the agent started (`unreachable`; null: never).
    pub last_reachable_at: Option<Timestamp>,
    /// Why the newest check failed (`unreachable`).
    pub error: Option<String>,
    /// Why (`reachable`, `unchecked`).
    pub reason: Option<String>,
    /// When it was said.
    pub said_at: Timestamp,
}
