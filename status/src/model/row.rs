//! The rows the store keeps and gives back, typed: what was text in a
//! column is decoded at the store's edge into the protocol's enums and
//! names ([`Class`](mesh_protocol::Class), [`RepairOutcome`], [`GrantState`], [`ModuleId`],
//! [`Name`] for a consumer, its machine and a repair's fault).
//!
//! Every writer of those columns writes a protocol value (an event's
//! subject and body are parsed before the event is stored), so a value
//! that does not decode is a store edited by hand or broken: the store's
//! read fails naming the column and the value, as it always has for a
//! provider's (`mesh-pg-store`'s `PgError::Undecodable`), rather than
//! leaving the row out or carrying the text on untyped. A `Name`
//! serializes as its text: the rows' JSON is unchanged.
//!
//! A provider is one [`ModuleId`]; the JSON of a row writes it as the two
//! members `provider_module` and `provider_machine`, as `status --json`
//! always has ([`provider_members`]).

use mesh_protocol::event::{
    ContributionsRead, Failing, GrantState, ProviderFault, RepairOutcome, RetirementAction,
};
use mesh_protocol::{ModuleId, Name, Timestamp};
use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};

/// Writes a provider as the members `provider_module` and
/// `provider_machine` of the object it is flattened into
/// (`#[serde(flatten, serialize_with = "provider_members")]`).
///
/// # Errors
/// The serializer's.
pub fn provider_members<S: Serializer>(provider: &ModuleId, s: S) -> Result<S::Ok, S::Error> {
    #[derive(Serialize)]
    struct Members<'a> {
        provider_module: &'a str,
        provider_machine: &'a str,
    }
    Members {
        provider_module: provider.module.as_str(),
        provider_machine: provider.machine.as_str(),
    }
    .serialize(s)
}

/// A stored `failing` event: a standing. Its JSON is the provider's two
/// members, then the event's fields but `v`, in the order `status --json`
/// lists them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct FailingRow {
    /// The provider that published it, `module@machine`.
    #[serde(flatten, serialize_with = "provider_members")]
    pub provider: ModuleId,
    /// What the provider last said of the consumer: the consumer, its
    /// machine and provision as the provider knew them, the class, the
    /// error, since when and how often it failed, when it said so.
    #[serde(flatten, serialize_with = "said_members")]
    pub said: Failing,
    /// When the interval it fails in began, when that is before
    /// `said.since`: its provider restarted while it kept failing (a
    /// restart forgets the `since` it said), and the store kept the first.
    /// Absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_since: Option<Timestamp>,
}

/// Writes a `failing` event's members but its version `v`, in the
/// event's order, into the object it is flattened into.
fn said_members<S: Serializer>(said: &Failing, s: S) -> Result<S::Ok, S::Error> {
    let mut members = s.serialize_map(Some(8))?;
    members.serialize_entry("consumer", &said.consumer)?;
    members.serialize_entry("consumer_machine", &said.consumer_machine)?;
    members.serialize_entry("provision", &said.provision)?;
    members.serialize_entry("class", &said.class)?;
    members.serialize_entry("error", &said.error)?;
    members.serialize_entry("since", &said.since)?;
    members.serialize_entry("attempts", &said.attempts)?;
    members.serialize_entry("said_at", &said.said_at)?;
    members.end()
}

/// A stored `repair` event. Its JSON is the provider's two members, then
/// the event's fields.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RepairRow {
    /// The provider that published it, `module@machine`.
    #[serde(flatten, serialize_with = "provider_members")]
    pub provider: ModuleId,
    /// The fault.
    pub fault: Name,
    /// What came of the repair.
    pub outcome: RepairOutcome,
    /// For a person.
    pub detail: String,
    /// When the next attempt is due, if one is.
    pub next_attempt_at: Option<Timestamp>,
    /// When it was published.
    pub said_at: Timestamp,
    /// How often its repair was done within the recurrence window, when
    /// it was (absent when not, or when history was not read).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub repaired: Option<RepairsDone>,
}

/// What the grant agent of a machine last said of its grants file
/// (`grant.read`), as stored.
#[derive(Clone, Debug, PartialEq)]
pub struct GrantsReadRow {
    /// The machine.
    pub machine: Name,
    /// The grants file's path.
    pub file: String,
    /// What the read refused.
    pub read: mesh_protocol::event::ContributionsRead,
    /// When the agent said it.
    pub said_at: Timestamp,
}

/// A provider's newest `alive` event, as stored.
#[derive(Clone, Debug, PartialEq)]
pub struct AliveRow {
    /// The provider that published it, `module@machine`.
    pub provider: ModuleId,
    /// When that provider process started.
    pub started_at: Timestamp,
    /// How often it publishes `alive`, in seconds.
    pub alive_every_seconds: i64,
    /// Its settled time, if reached (see the `alive` body).
    pub settled_at: Option<Timestamp>,
    /// How often it publishes `failing` again, in seconds (`None` from
    /// a provider older than the field).
    pub repeat_every_seconds: Option<i64>,
    /// When it was published.
    pub said_at: Timestamp,
    /// When the event stream stored it (the bus's clock, not the
    /// provider's); `None` for an event stored before it was kept.
    pub stored_at: Option<Timestamp>,
    /// The provider fault it carries: the provider cannot work as its
    /// administrator. `None` when it has none (and from older providers).
    pub fault: Option<ProviderFault>,
    /// What the provider's last read of its contributions file refused;
    /// `None` from providers older than the field (unknown).
    pub contributions: Option<ContributionsRead>,
}

/// One `mesh-controller serve` process, as it names itself in the store:
/// an operator reading it knows which process on which host it is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Instance {
    /// The host it runs on.
    pub host: String,
    /// Its process id there.
    pub pid: i64,
    /// When it started (its own clock).
    pub started_at: Timestamp,
    /// How long one of its pulls waits for an event.
    pub pull_wait: std::time::Duration,
}

/// A `serve` follows while it caught up within this many of its pull
/// waits...
pub const FOLLOW_WITHIN_PULLS: u32 = 3;

/// ... and at most this long.
pub const FOLLOW_WITHIN_MAX: std::time::Duration = std::time::Duration::from_secs(15);

impl Instance {
    /// How long after its last catch-up it still counts as following:
    /// [`FOLLOW_WITHIN_PULLS`] × its pull wait, at most [`FOLLOW_WITHIN_MAX`].
    pub fn follow_bound(&self) -> std::time::Duration {
        (self.pull_wait * FOLLOW_WITHIN_PULLS).min(FOLLOW_WITHIN_MAX)
    }

    /// Its key in the store: `<host> pid <pid> started <started_at>`.
    pub fn key(&self) -> String {
        format!("{} pid {} started {}", self.host, self.pid, self.started_at)
    }
}

/// One `mesh-controller serve` process as the store records it
/// (`controller_instance`); its two times are the store's clock.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InstanceRow {
    /// Which process.
    pub instance: Instance,
    /// The last time it found nothing more waiting for it in the event
    /// stream, every event it had taken stored; `None`: not yet.
    pub pulled_at: Option<Timestamp>,
    /// The last time it committed a round of events; `None`: not yet.
    pub applied_at: Option<Timestamp>,
    /// When its current run of catch-ups began (none more than
    /// [`Instance::follow_bound`] after the one before); `None`: not yet.
    pub following_since: Option<Timestamp>,
}

/// What the store says of the controller and of its own record, read with
/// every `status`: the store's clock (the instances' times are on it), when
/// its record begins, and the `serve` processes it knows, the one that
/// caught up last first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ControllerRecord {
    /// The store's clock at the read.
    pub now: Timestamp,
    /// When the store's record begins: `None` for a store that followed a
    /// stream before it kept this (its events from before are kept); a time
    /// for a store made since (first migrated, or dropped and made again):
    /// the events published before then are not in it until they are published again.
    pub begun_at: Option<Timestamp>,
    /// When the oldest event stream the store met was made: no event is
    /// older, so nothing before it is known. `None` before any stream.
    pub stream_since: Option<Timestamp>,
    /// The `serve` processes recorded (at most a few), the one that caught
    /// up last first.
    pub instances: Vec<InstanceRow>,
}

/// A provider's newest `retirement` event for one consumer the
/// declaration requires from it, as the store reads it: `retiring`,
/// `retired` or `deleted` and not followed by an event that says the
/// consumer is served again (`cancelled`, `re-enabled`, a `recovered` for
/// a success, or a `failing`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RetiredRow {
    /// The provider that published it.
    pub provider: ModuleId,
    /// The consumer.
    pub consumer: Name,
    /// `retiring`, `retired` or `deleted`.
    pub action: RetirementAction,
    /// For a person, as the provider said it.
    pub detail: String,
    /// When it was published.
    pub said_at: Timestamp,
    /// For `retiring`: when the provider will retire it.
    pub retire_at: Option<Timestamp>,
}

/// A provider whose newest `alive` is older than this many of its
/// `alive_every` is unheard: the one rule `status` and `history` count by.
pub const UNHEARD_AFTER_ALIVES: u32 = 3;

/// When an `alive` was heard: when the event stream stored it (the bus's
/// clock: a provider's clock stepped back or ahead changes nothing), else,
/// for one stored before the stream's time was kept, its `said_at`.
pub fn heard_at(stored_at: Option<Timestamp>, said_at: Timestamp) -> Timestamp {
    stored_at.unwrap_or(said_at)
}

impl AliveRow {
    /// When it was heard ([`heard_at`]).
    pub fn heard_at(&self) -> Timestamp {
        heard_at(self.stored_at, self.said_at)
    }

    /// Whether a standing of this provider, published at `said_at` and
    /// stored by the event stream at `stored_at`, is one it no longer has:
    /// published before its newest start, once it is settled. The store's
    /// read (`store::read`) leaves such standings out by the same rule.
    ///
    /// "Before" is read on the stream's clock, never the provider's (its
    /// clock may have been stepped between the two runs): the start is when
    /// the stream stored this `alive` less how long the run had been going
    /// when it said it (one run, one clock). That start is late by the
    /// `alive`'s delivery (at most an `alive_every` and a retry: the
    /// provider keeps only its newest `alive` pending), far less than the
    /// `failing_after` before a run's first `failing`. Without both stored
    /// times (rows stored before they were kept) the provider's clock
    /// decides: published before its start or in the same second.
    pub fn outlived(&self, said_at: Timestamp, stored_at: Option<Timestamp>) -> bool {
        #[cfg(mesh_mutant = "no-settled-rule")]
        return {
            let _ = (said_at, stored_at);
            false
        };
        #[cfg(not(mesh_mutant = "no-settled-rule"))]
        return self.settled_at.is_some()
            && match (stored_at, self.started_on_stream()) {
                (Some(stored), Some(start)) => stored.system_time() < start,
                _ => said_at <= self.started_at,
            };
    }

    /// When this run started on the stream's clock: when the stream stored
    /// this `alive`, less how long the run had been going when it published
    /// it (one run, one clock). `None` for a row stored before the stream's
    /// times were kept.
    pub fn started_on_stream(&self) -> Option<std::time::SystemTime> {
        let ran = self
            .said_at
            .system_time()
            .duration_since(self.started_at.system_time())
            .unwrap_or_default();
        let stored = self.stored_at?.system_time();
        Some(stored.checked_sub(ran).unwrap_or(std::time::UNIX_EPOCH))
    }
}

/// A grant's newest event, as stored (`mesh-grants`): its state decides
/// which of the optional fields are set.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GrantRow {
    /// The consumer's machine (whose grant agent published it).
    pub machine: Name,
    /// The consumer.
    pub consumer: Name,
    /// The provision granted.
    pub provision: String,
    /// The provider as the grants file names it, `module@machine`: text,
    /// kept as published (the agent checks and publishes a grant whatever
    /// its file says there), and printed as such.
    pub from: String,
    /// What the event says of the grant (its kind).
    pub state: GrantState,
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
    /// When it was published.
    pub said_at: Timestamp,
}

/// How often an open repair fault's repair was done within the window:
/// what its `status` line adds. Its JSON is the `repaired` member of a
/// `status --json` repair.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RepairsDone {
    /// Repairs done within the window.
    pub count: u64,
    /// The window, in seconds.
    pub window_seconds: u64,
    /// The last one.
    pub last_at: Timestamp,
}

/// A note a person attached to a failing interval: what was learnt, and
/// who wrote it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct NoteRow {
    /// The note.
    pub text: String,
    /// Who wrote it.
    pub by: String,
}

/// An acknowledgement that still holds: a person said a provider's
/// standing for a consumer is being worked on, why, and until when. It
/// changes no verdict; every surface that lists the standing says it
/// beside the problem. Its JSON is the `acknowledged` member of a
/// `status --json` failing entry.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct AckRow {
    /// The standing's provider (not written: the entry names it).
    #[serde(skip)]
    pub provider: ModuleId,
    /// Its consumer (not written).
    #[serde(skip)]
    pub consumer: Name,
    /// The consumer's machine (not written).
    #[serde(skip)]
    pub consumer_machine: Name,
    /// Why: what is being done.
    pub reason: String,
    /// Who said it (the console session's name).
    pub by: String,
    /// When it was said.
    pub at: Timestamp,
    /// When it ends.
    pub until: Timestamp,
}

#[cfg(test)]
impl AckRow {
    /// ana's acknowledgement of postgres@db-1's standing for `consumer` on
    /// app-1, said 2026-10-05T00:10:00Z, until 04:00 that day.
    pub(crate) fn for_tests(consumer: &str, reason: &str) -> AckRow {
        let ts = |s: &str| Timestamp::parse(s).unwrap();
        AckRow {
            provider: ModuleId::parse("postgres@db-1").unwrap(),
            consumer: Name::parse(consumer).unwrap(),
            consumer_machine: Name::parse("app-1").unwrap(),
            reason: reason.into(),
            by: "ana".into(),
            at: ts("2026-10-05T00:10:00Z"),
            until: ts("2026-10-05T04:00:00Z"),
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_standing_is_outlived_by_its_providers_newest_start_table() {
        // The provider started 00:10 by its clock; its alive, said 00:15 by
        // its clock, was stored by the stream at `stored` (its clock is off
        // by `stored - said`).
        let alive = |stored: Option<&str>, settled: bool| AliveRow {
            provider: ModuleId::parse("postgres@db-1").unwrap(),
            started_at: ts("2026-10-05T00:10:00Z"),
            alive_every_seconds: 60,
            settled_at: settled.then(|| ts("2026-10-05T00:15:00Z")),
            repeat_every_seconds: None,
            said_at: ts("2026-10-05T00:15:00Z"),
            stored_at: stored.map(ts),
            fault: None,
            contributions: None,
        };
        // (alive stored at, settled, standing said at, standing stored at, outlived)
        let cases = [
            // Not settled: kept.
            (None, false, "2026-10-05T00:05:00Z", None, false),
            // No stored times (older rows): the provider's clock.
            (None, true, "2026-10-05T00:05:00Z", None, true),
            (None, true, "2026-10-05T00:10:00Z", None, true),
            (None, true, "2026-10-05T00:12:00Z", None, false),
            // A clock right: said and stored before the start.
            (
                Some("2026-10-05T00:15:00Z"),
                true,
                "2026-10-05T00:05:00Z",
                Some("2026-10-05T00:05:01Z"),
                true,
            ),
            // Said after the start, by this run: kept.
            (
                Some("2026-10-05T00:15:00Z"),
                true,
                "2026-10-05T00:12:00Z",
                Some("2026-10-05T00:12:01Z"),
                false,
            ),
            // The clock stepped back an hour at the restart: the standing
            // was said (by the old clock) after the new start's stamp, but
            // stored before the start (00:10 by the stream's clock + 1 h).
            (
                Some("2026-10-05T01:15:00Z"),
                true,
                "2026-10-05T00:30:00Z",
                Some("2026-10-05T00:30:00Z"),
                true,
            ),
            // The clock stepped ahead an hour: a standing of this run,
            // stored after the start, is kept though said after it.
            (
                Some("2026-10-04T23:15:00Z"),
                true,
                "2026-10-05T00:12:00Z",
                Some("2026-10-04T23:12:00Z"),
                false,
            ),
        ];
        for (stored, settled, said, said_stored, expected) in cases {
            let a = alive(stored, settled);
            assert_eq!(
                a.outlived(ts(said), said_stored.map(ts)),
                expected,
                "{stored:?} {settled} {said} {said_stored:?}"
            );
        }
    }

    use super::*;

    fn ts(s: &str) -> Timestamp {
        Timestamp::parse(s).unwrap()
    }

    #[test]
    fn a_provider_is_written_as_its_two_members_in_place() {
        let row = RepairRow {
            provider: ModuleId::parse("identity@id-1").unwrap(),
            fault: Name::parse("admin-refused").unwrap(),
            outcome: RepairOutcome::Braked,
            detail: "later".into(),
            next_attempt_at: None,
            said_at: ts("2026-10-05T00:09:00Z"),
            repaired: None,
        };
        assert_eq!(
            serde_json::to_string(&row).unwrap(),
            r#"{"provider_module":"identity","provider_machine":"id-1","fault":"admin-refused","outcome":"braked","detail":"later","next_attempt_at":null,"said_at":"2026-10-05T00:09:00Z"}"#
        );
    }
}
