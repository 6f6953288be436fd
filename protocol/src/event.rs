//! Event kinds and bodies, exactly as docs/contracts/bus.md#bodies and
//! docs/contracts/grants.md say.
//!
//! The emitter (machine, module) is in the subject ([`crate::subject`]);
//! bodies never name it. Grant events are published by `mesh-grants` on a
//! consumer's machine, on `mesh.event.<machine>.<consumer>.grant.<kind>`.
//!
//! The enums of a body (a reason, an action, an outcome, and the
//! [`GrantState`] a grant event gives) are written as fixed values: each has
//! `as_str`, `Display` and `FromStr`, for a reader that keeps them as text.

use serde::{Deserialize, Serialize};

use crate::class::Class;
use crate::name::Name;

pub use crate::alive::{
    Alive, ContributionsRead, ProviderFault, RefusedContribution, MAX_REFUSED_LISTED,
};
use crate::time::Timestamp;

/// Version of every body.
pub const VERSION: u32 = 1;

/// The event kinds, the last token of their subject: all eight
/// ([`EventKind::ALL`]), the provisioner's five ([`EventKind::PROVISIONER`])
/// and the grant agent's three ([`EventKind::GRANT`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum EventKind {
    /// A consumer keeps failing.
    Failing,
    /// A consumer recovered (or was retired).
    Recovered,
    /// Something happened to a withdrawn consumer.
    Retirement,
    /// A repair was tried.
    Repair,
    /// The provider is running: what its loop knows.
    Alive,
    /// A grant failed `unreachable_after` checks in a row (`grant.unreachable`).
    Unreachable,
    /// A grant was reached again, or for the first time since start (`grant.reachable`).
    Reachable,
    /// A grant cannot be checked: no port, or its consumer is not running (`grant.unchecked`).
    Unchecked,
    /// What the machine agent's last read of its grants file refused
    /// (`grant.read`, said by the agent itself: `_grants` where a consumer
    /// stands in the subject).
    GrantsRead,
}

impl EventKind {
    /// Every kind: the provisioner's, then the grant agent's.
    pub const ALL: [EventKind; 9] = [
        EventKind::Failing,
        EventKind::Recovered,
        EventKind::Retirement,
        EventKind::Repair,
        EventKind::Alive,
        EventKind::Unreachable,
        EventKind::Reachable,
        EventKind::Unchecked,
        EventKind::GrantsRead,
    ];

    /// Every kind a provisioner publishes (`...provisioner.<kind>`).
    pub const PROVISIONER: [EventKind; 5] = [
        EventKind::Failing,
        EventKind::Recovered,
        EventKind::Retirement,
        EventKind::Repair,
        EventKind::Alive,
    ];

    /// The subject token.
    pub fn as_str(self) -> &'static str {
        match self {
            EventKind::Failing => "failing",
            EventKind::Recovered => "recovered",
            EventKind::Retirement => "retirement",
            EventKind::Repair => "repair",
            EventKind::Alive => "alive",
            EventKind::Unreachable => "unreachable",
            EventKind::Reachable => "reachable",
            EventKind::Unchecked => "unchecked",
            EventKind::GrantsRead => "read",
        }
    }

    /// Every kind the grant agent publishes for a grant
    /// (`mesh.event.<machine>.<consumer>.grant.<kind>`); its own
    /// [`EventKind::GrantsRead`] is not one.
    pub const GRANT: [EventKind; 3] = [
        EventKind::Unreachable,
        EventKind::Reachable,
        EventKind::Unchecked,
    ];

    /// The state a grant kind gives its grant; `None` for a provisioner kind.
    pub fn grant_state(self) -> Option<GrantState> {
        match self {
            EventKind::Unreachable => Some(GrantState::Unreachable),
            EventKind::Reachable => Some(GrantState::Reachable),
            EventKind::Unchecked => Some(GrantState::Unchecked),
            EventKind::Failing
            | EventKind::Recovered
            | EventKind::Retirement
            | EventKind::Repair
            | EventKind::Alive
            | EventKind::GrantsRead => None,
        }
    }
}

/// What a grant's newest event says of it: one state per grant kind, named
/// as the kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum GrantState {
    /// Its consumer failed to reach it `unreachable_after` checks in a row.
    Unreachable,
    /// Its consumer reached it.
    Reachable,
    /// It could not be checked (never a verdict).
    Unchecked,
}

impl GrantState {
    /// Every state, in a stable order.
    pub const ALL: [GrantState; 3] = [
        GrantState::Unreachable,
        GrantState::Reachable,
        GrantState::Unchecked,
    ];

    /// The state as written: its kind's subject token.
    pub fn as_str(self) -> &'static str {
        self.kind().as_str()
    }

    /// The event kind that gives it.
    pub fn kind(self) -> EventKind {
        match self {
            GrantState::Unreachable => EventKind::Unreachable,
            GrantState::Reachable => EventKind::Reachable,
            GrantState::Unchecked => EventKind::Unchecked,
        }
    }
}

crate::wire_words!(EventKind, "an event kind");
crate::wire_words!(GrantState, "a grant state");

/// `failing` body.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Failing {
    /// Body version, 1.
    pub v: u32,
    /// The consumer.
    pub consumer: Name,
    /// The consumer's machine, if known.
    pub consumer_machine: Option<Name>,
    /// The provision, if known.
    pub provision: Option<String>,
    /// Class of the newest failure.
    pub class: Class,
    /// The start of the newest failure's message, redacted.
    pub error: String,
    /// First failure since the last success.
    pub since: Timestamp,
    /// Failed attempts since `since`.
    pub attempts: u64,
    /// When this was published.
    pub said_at: Timestamp,
}

/// Why `recovered` is published.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RecoveredReason {
    /// First success after `failing` was published since start.
    Success,
    /// First success of this consumer since the provider started.
    FirstSuccessAfterStart,
    /// The consumer was withdrawn and retired.
    Retired,
    /// The consumer was withdrawn and the provider does not hold it: there
    /// is nothing to retire, and the mesh stopped asking for it.
    Withdrawn,
}

impl RecoveredReason {
    /// Every reason, in a stable order.
    pub const ALL: [RecoveredReason; 4] = [
        RecoveredReason::Success,
        RecoveredReason::FirstSuccessAfterStart,
        RecoveredReason::Retired,
        RecoveredReason::Withdrawn,
    ];

    /// The reason as written on the bus.
    pub fn as_str(self) -> &'static str {
        match self {
            RecoveredReason::Success => "success",
            RecoveredReason::FirstSuccessAfterStart => "first-success-after-start",
            RecoveredReason::Retired => "retired",
            RecoveredReason::Withdrawn => "withdrawn",
        }
    }
}

crate::wire_words!(RecoveredReason, "a recovered reason");

/// `recovered` body.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Recovered {
    /// Body version, 1.
    pub v: u32,
    /// The consumer.
    pub consumer: Name,
    /// The consumer's machine, if known.
    pub consumer_machine: Option<Name>,
    /// The provision, if known.
    pub provision: Option<String>,
    /// Why it is published.
    pub reason: RecoveredReason,
    /// When this was published.
    pub said_at: Timestamp,
}

/// What happened to a withdrawn consumer.
///
/// `retiring` and `cancelled` are newer than the other four: a controller
/// older than them refuses such a body as malformed (logged and terminated,
/// the stream goes on), so it only misses the countdown.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RetirementAction {
    /// The countdown to retire it began: withdrawn and still held, it is
    /// retired at `retire_at` unless it is listed again first.
    Retiring,
    /// The countdown ended without retiring it: listed again, or no longer
    /// held at the backend.
    Cancelled,
    /// Disabled (reversible, nothing deleted).
    Retired,
    /// A person approved (retirement at once, or deletion).
    Approved,
    /// Listed again and enabled again.
    ReEnabled,
    /// Its data was deleted (approved).
    Deleted,
}

impl RetirementAction {
    /// Every action, in a stable order.
    pub const ALL: [RetirementAction; 6] = [
        RetirementAction::Retiring,
        RetirementAction::Cancelled,
        RetirementAction::Retired,
        RetirementAction::Approved,
        RetirementAction::ReEnabled,
        RetirementAction::Deleted,
    ];

    /// The action as written on the bus.
    pub fn as_str(self) -> &'static str {
        match self {
            RetirementAction::Retiring => "retiring",
            RetirementAction::Cancelled => "cancelled",
            RetirementAction::Retired => "retired",
            RetirementAction::Approved => "approved",
            RetirementAction::ReEnabled => "re-enabled",
            RetirementAction::Deleted => "deleted",
        }
    }
}

crate::wire_words!(RetirementAction, "a retirement action");

/// `retirement` body.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Retirement {
    /// Body version, 1.
    pub v: u32,
    /// The consumer.
    pub consumer: Name,
    /// What happened.
    pub action: RetirementAction,
    /// For a person.
    pub detail: String,
    /// For `retiring`: when the provider will retire it unless it is listed
    /// again (its estimate: `retire_after`, or the passes still to count if
    /// they take longer). Absent from the other actions' bodies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retire_at: Option<Timestamp>,
    /// When this was published.
    pub said_at: Timestamp,
}

/// Outcome of a repair.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RepairOutcome {
    /// Repaired and verified.
    Repaired,
    /// Tried and failed.
    Failed,
    /// Not tried: the brake holds it until `next_attempt_at`.
    Braked,
}

impl RepairOutcome {
    /// Every outcome, in a stable order.
    pub const ALL: [RepairOutcome; 3] = [
        RepairOutcome::Repaired,
        RepairOutcome::Failed,
        RepairOutcome::Braked,
    ];

    /// The outcome as written on the bus.
    pub fn as_str(self) -> &'static str {
        match self {
            RepairOutcome::Repaired => "repaired",
            RepairOutcome::Failed => "failed",
            RepairOutcome::Braked => "braked",
        }
    }
}

crate::wire_words!(RepairOutcome, "a repair outcome");

/// `repair` body: a provider reports what came of repairing a known fault
/// (the `repair` kind; `mesh-sdk`'s `Repair` trait is what makes one).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RepairReport {
    /// Body version, 1.
    pub v: u32,
    /// The fault's name.
    pub fault: Name,
    /// What came of it.
    pub outcome: RepairOutcome,
    /// For a person (redacted).
    pub detail: String,
    /// When the next attempt is due, if one is.
    pub next_attempt_at: Option<Timestamp>,
    /// When this was published.
    pub said_at: Timestamp,
}

/// Why `reachable` is published.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReachableReason {
    /// The first success after `unreachable` or `unchecked` was published.
    Success,
    /// The first success of this grant since the agent started.
    FirstSuccessAfterStart,
}

impl ReachableReason {
    /// Every reason, in a stable order.
    pub const ALL: [ReachableReason; 2] = [
        ReachableReason::Success,
        ReachableReason::FirstSuccessAfterStart,
    ];

    /// The reason as written on the bus.
    pub fn as_str(self) -> &'static str {
        match self {
            ReachableReason::Success => "success",
            ReachableReason::FirstSuccessAfterStart => "first-success-after-start",
        }
    }
}

crate::wire_words!(ReachableReason, "a reachable reason");

/// `grant.unreachable` body: the consumer could not connect to its grant's
/// address and port from its own network position, `failures` checks in a row.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GrantUnreachable {
    /// Body version, 1.
    pub v: u32,
    /// The provision granted.
    pub provision: String,
    /// The provider, `module@machine` ([`crate::ModuleId`]) as the grants
    /// file names it. Text, not checked: a grant whose file names its
    /// provider otherwise is still checked and published, and readers keep it.
    pub from: String,
    /// The address the grant names.
    pub address: String,
    /// The port the grant names.
    pub port: u16,
    /// Failed checks in a row, this one included.
    pub failures: u64,
    /// The first failed check of them.
    pub failing_since: Timestamp,
    /// The last successful check since the agent started; null: never.
    pub last_reachable_at: Option<Timestamp>,
    /// Why the newest check failed.
    pub error: String,
    /// When this was published.
    pub said_at: Timestamp,
}

/// `grant.reachable` body.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GrantReachable {
    /// Body version, 1.
    pub v: u32,
    /// The provision granted.
    pub provision: String,
    /// The provider, `module@machine` ([`crate::ModuleId`]) as the grants
    /// file names it. Text, not checked: a grant whose file names its
    /// provider otherwise is still checked and published, and readers keep it.
    pub from: String,
    /// The address the grant names.
    pub address: String,
    /// The port the grant names.
    pub port: u16,
    /// Why it is published.
    pub reason: ReachableReason,
    /// When this was published.
    pub said_at: Timestamp,
}

/// `grant.unchecked` body: the grant could not be checked (never a verdict).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GrantUnchecked {
    /// Body version, 1.
    pub v: u32,
    /// The provision granted.
    pub provision: String,
    /// The provider, `module@machine` ([`crate::ModuleId`]) as the grants
    /// file names it. Text, not checked: a grant whose file names its
    /// provider otherwise is still checked and published, and readers keep it.
    pub from: String,
    /// Why: `no port`, `consumer not running`, ...
    pub reason: String,
    /// When this was published.
    pub said_at: Timestamp,
}

/// `grant.read` body: what the machine agent's last read of its grants
/// file refused, said at its first read, whenever that changes, and every
/// `repeat_every` while it refuses anything.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GrantsRead {
    /// Body version, 1.
    pub v: u32,
    /// The grants file's path.
    pub file: String,
    /// What the read refused: the file as a whole (its last good list is
    /// checked, if it has one), or entries of it (`consumer` is the
    /// entry's consumer when it could be read).
    #[serde(flatten)]
    pub read: ContributionsRead,
    /// When this was published.
    pub said_at: Timestamp,
}

/// Any event body.
#[derive(Clone, Debug, PartialEq)]
pub enum Event {
    /// `failing`.
    Failing(Failing),
    /// `recovered`.
    Recovered(Recovered),
    /// `retirement`.
    Retirement(Retirement),
    /// `repair`.
    Repair(RepairReport),
    /// `alive`.
    Alive(Alive),
    /// `grant.unreachable`.
    Unreachable(GrantUnreachable),
    /// `grant.reachable`.
    Reachable(GrantReachable),
    /// `grant.unchecked`.
    Unchecked(GrantUnchecked),
    /// `grant.read` (the agent's own).
    GrantsRead(GrantsRead),
}

/// A body that does not parse as the kind its subject names.
#[derive(Debug, thiserror::Error)]
#[error("malformed {kind} body: {source}")]
pub struct BodyError {
    kind: &'static str,
    #[source]
    source: serde_json::Error,
}

impl Event {
    /// The event's kind (its subject's last token).
    pub fn kind(&self) -> EventKind {
        match self {
            Event::Failing(_) => EventKind::Failing,
            Event::Recovered(_) => EventKind::Recovered,
            Event::Retirement(_) => EventKind::Retirement,
            Event::Repair(_) => EventKind::Repair,
            Event::Alive(_) => EventKind::Alive,
            Event::Unreachable(_) => EventKind::Unreachable,
            Event::Reachable(_) => EventKind::Reachable,
            Event::Unchecked(_) => EventKind::Unchecked,
            Event::GrantsRead(_) => EventKind::GrantsRead,
        }
    }

    /// When it was published.
    pub fn said_at(&self) -> Timestamp {
        match self {
            Event::Failing(b) => b.said_at,
            Event::Recovered(b) => b.said_at,
            Event::Retirement(b) => b.said_at,
            Event::Repair(b) => b.said_at,
            Event::Alive(b) => b.said_at,
            Event::Unreachable(b) => b.said_at,
            Event::Reachable(b) => b.said_at,
            Event::Unchecked(b) => b.said_at,
            Event::GrantsRead(b) => b.said_at,
        }
    }

    /// The body as JSON.
    pub fn to_json(&self) -> Vec<u8> {
        let result = match self {
            Event::Failing(b) => serde_json::to_vec(b),
            Event::Recovered(b) => serde_json::to_vec(b),
            Event::Retirement(b) => serde_json::to_vec(b),
            Event::Repair(b) => serde_json::to_vec(b),
            Event::Alive(b) => serde_json::to_vec(b),
            Event::Unreachable(b) => serde_json::to_vec(b),
            Event::Reachable(b) => serde_json::to_vec(b),
            Event::Unchecked(b) => serde_json::to_vec(b),
            Event::GrantsRead(b) => serde_json::to_vec(b),
        };
        result.expect("event bodies always serialize")
    }

    /// Parses a body of `kind`; refuses any version but 1. Unknown fields are
    /// ignored (a newer provider may add some; a claimed emitter is never read).
    ///
    /// # Errors
    /// [`BodyError`] when the body is not valid JSON of that kind.
    pub fn parse(kind: EventKind, body: &[u8]) -> Result<Event, BodyError> {
        let wrap = |source| BodyError {
            kind: kind.as_str(),
            source,
        };
        let event = match kind {
            EventKind::Failing => Event::Failing(serde_json::from_slice(body).map_err(wrap)?),
            EventKind::Recovered => Event::Recovered(serde_json::from_slice(body).map_err(wrap)?),
            EventKind::Retirement => Event::Retirement(serde_json::from_slice(body).map_err(wrap)?),
            EventKind::Repair => Event::Repair(serde_json::from_slice(body).map_err(wrap)?),
            EventKind::Alive => Event::Alive(serde_json::from_slice(body).map_err(wrap)?),
            EventKind::Unreachable => {
                Event::Unreachable(serde_json::from_slice(body).map_err(wrap)?)
            }
            EventKind::Reachable => Event::Reachable(serde_json::from_slice(body).map_err(wrap)?),
            EventKind::Unchecked => Event::Unchecked(serde_json::from_slice(body).map_err(wrap)?),
            EventKind::GrantsRead => Event::GrantsRead(serde_json::from_slice(body).map_err(wrap)?),
        };
        let v = match &event {
            Event::Failing(b) => b.v,
            Event::Recovered(b) => b.v,
            Event::Retirement(b) => b.v,
            Event::Repair(b) => b.v,
            Event::Alive(b) => b.v,
            Event::Unreachable(b) => b.v,
            Event::Reachable(b) => b.v,
            Event::Unchecked(b) => b.v,
            Event::GrantsRead(b) => b.v,
        };
        if v != VERSION {
            return Err(wrap(serde::de::Error::custom(format!(
                "unsupported version {v}"
            ))));
        }
        Ok(event)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(s: &str) -> Name {
        Name::parse(s).unwrap()
    }

    fn ts(s: &str) -> Timestamp {
        Timestamp::parse(s).unwrap()
    }

    #[test]
    fn failing_body_is_exactly_the_design() {
        let event = Event::Failing(Failing {
            v: 1,
            consumer: name("forge"),
            consumer_machine: Some(name("app-1")),
            provision: Some("postgres-database".into()),
            class: Class::CredentialsRejected,
            error: "password authentication failed for user \"forge\"".into(),
            since: ts("2026-10-05T00:04:00Z"),
            attempts: 61,
            said_at: ts("2026-10-05T00:09:00Z"),
        });
        let json: serde_json::Value = serde_json::from_slice(&event.to_json()).unwrap();
        let expected: serde_json::Value = serde_json::from_str(
            r#"{"v":1,"consumer":"forge","consumer_machine":"app-1","provision":"postgres-database",
             "class":"credentials-rejected","error":"password authentication failed for user \"forge\"",
             "since":"2026-10-05T00:04:00Z","attempts":61,"said_at":"2026-10-05T00:09:00Z"}"#,
        )
        .unwrap();
        assert_eq!(json, expected);
        assert_eq!(
            Event::parse(EventKind::Failing, &event.to_json()).unwrap(),
            event
        );
    }

    #[test]
    fn other_bodies_are_exactly_the_design() {
        let recovered = Event::Recovered(Recovered {
            v: 1,
            consumer: name("forge"),
            consumer_machine: None,
            provision: None,
            reason: RecoveredReason::FirstSuccessAfterStart,
            said_at: ts("2026-10-05T00:09:00Z"),
        });
        let retirement = Event::Retirement(Retirement {
            v: 1,
            consumer: name("forge"),
            action: RetirementAction::ReEnabled,
            detail: "listed again".into(),
            retire_at: None,
            said_at: ts("2026-10-05T00:09:00Z"),
        });
        let repair = Event::Repair(RepairReport {
            v: 1,
            fault: name("admin-refused"),
            outcome: RepairOutcome::Braked,
            detail: "next try later".into(),
            next_attempt_at: None,
            said_at: ts("2026-10-05T00:09:00Z"),
        });
        let expected = [
            r#"{"v":1,"consumer":"forge","consumer_machine":null,"provision":null,"reason":"first-success-after-start","said_at":"2026-10-05T00:09:00Z"}"#,
            r#"{"v":1,"consumer":"forge","action":"re-enabled","detail":"listed again","said_at":"2026-10-05T00:09:00Z"}"#,
            r#"{"v":1,"fault":"admin-refused","outcome":"braked","detail":"next try later","next_attempt_at":null,"said_at":"2026-10-05T00:09:00Z"}"#,
        ];
        for (event, text) in [recovered, retirement, repair].into_iter().zip(expected) {
            assert_eq!(String::from_utf8(event.to_json()).unwrap(), text);
            assert_eq!(Event::parse(event.kind(), text.as_bytes()).unwrap(), event);
        }
    }

    /// `retiring` carries `retire_at` and round-trips; a body of the
    /// other actions has none and reads without it; an action unknown to
    /// this reader (as `retiring` is to an older one) is refused as
    /// malformed, naming the word, never read as another action.
    #[test]
    fn retiring_carries_retire_at_and_an_unknown_action_is_refused() {
        let text = r#"{"v":1,"consumer":"forge","action":"retiring","detail":"withdrawn","retire_at":"2026-10-05T00:19:00Z","said_at":"2026-10-05T00:09:00Z"}"#;
        let event = Event::parse(EventKind::Retirement, text.as_bytes()).unwrap();
        let Event::Retirement(body) = &event else {
            panic!("retirement")
        };
        assert_eq!(body.action, RetirementAction::Retiring);
        assert_eq!(body.retire_at, Some(ts("2026-10-05T00:19:00Z")));
        assert_eq!(String::from_utf8(event.to_json()).unwrap(), text);
        let cancelled = r#"{"v":1,"consumer":"forge","action":"cancelled","detail":"listed again","said_at":"2026-10-05T00:10:00Z"}"#;
        let event = Event::parse(EventKind::Retirement, cancelled.as_bytes()).unwrap();
        assert_eq!(String::from_utf8(event.to_json()).unwrap(), cancelled);
        let newer = r#"{"v":1,"consumer":"forge","action":"postponed","detail":"x","said_at":"2026-10-05T00:10:00Z"}"#;
        let error = Event::parse(EventKind::Retirement, newer.as_bytes())
            .unwrap_err()
            .to_string();
        assert!(error.contains("postponed"), "{error}");
    }

    #[test]
    fn alive_carries_repeat_every_and_reads_a_word_without_it() {
        let old = r#"{"v":1,"started_at":"2026-10-05T00:00:00Z","alive_every_seconds":60,"failing_after_seconds":300,"settled_at":null,"consumers":2,"failing":1,"pass_seconds":0.5,"said_at":"2026-10-05T00:09:00Z"}"#;
        let Event::Alive(mut alive) = Event::parse(EventKind::Alive, old.as_bytes()).unwrap()
        else {
            panic!("alive")
        };
        assert_eq!(alive.repeat_every_seconds, None);
        assert_eq!(
            String::from_utf8(Event::Alive(alive.clone()).to_json()).unwrap(),
            old,
            "not written when unknown"
        );
        alive.repeat_every_seconds = Some(900);
        let text = String::from_utf8(Event::Alive(alive.clone()).to_json()).unwrap();
        assert!(
            text.contains(r#""failing_after_seconds":300,"repeat_every_seconds":900,"#),
            "{text}"
        );
        assert_eq!(
            Event::parse(EventKind::Alive, text.as_bytes()).unwrap(),
            Event::Alive(alive)
        );
    }

    #[test]
    fn alive_carries_a_fault_and_reads_a_word_without_it() {
        let old = r#"{"v":1,"started_at":"2026-10-05T00:00:00Z","alive_every_seconds":60,"failing_after_seconds":300,"repeat_every_seconds":900,"settled_at":null,"consumers":2,"failing":0,"pass_seconds":0.5,"said_at":"2026-10-05T00:09:00Z"}"#;
        let Event::Alive(mut alive) = Event::parse(EventKind::Alive, old.as_bytes()).unwrap()
        else {
            panic!("alive")
        };
        assert_eq!(alive.fault, None, "an older provider's event has no fault");
        assert_eq!(
            String::from_utf8(Event::Alive(alive.clone()).to_json()).unwrap(),
            old,
            "no fault: not written, so an older reader sees the event it knows"
        );
        alive.fault = Some(ProviderFault {
            class: Class::CredentialsRejected,
            error: "password authentication failed for user \"mesh_admin\"".into(),
            since: ts("2026-10-05T00:04:00Z"),
        });
        let text = String::from_utf8(Event::Alive(alive.clone()).to_json()).unwrap();
        assert!(
            text.ends_with(
                r#""said_at":"2026-10-05T00:09:00Z","fault":{"class":"credentials-rejected","error":"password authentication failed for user \"mesh_admin\"","since":"2026-10-05T00:04:00Z"}}"#
            ),
            "{text}"
        );
        assert_eq!(
            Event::parse(EventKind::Alive, text.as_bytes()).unwrap(),
            Event::Alive(alive)
        );
        // A null fault (how another writer may say "none") reads as none.
        let null = old.replace('}', r#","fault":null}"#);
        let Event::Alive(alive) = Event::parse(EventKind::Alive, null.as_bytes()).unwrap() else {
            panic!("alive")
        };
        assert_eq!(alive.fault, None);
        // A fault without its class is refused like any malformed body.
        let broken = old.replace(
            '}',
            r#","fault":{"error":"x","since":"2026-10-05T00:04:00Z"}}"#,
        );
        assert!(Event::parse(EventKind::Alive, broken.as_bytes()).is_err());
    }

    #[test]
    fn alive_carries_what_the_contributions_file_refused_and_reads_a_word_without_it() {
        let old = r#"{"v":1,"started_at":"2026-10-05T00:00:00Z","alive_every_seconds":60,"failing_after_seconds":300,"repeat_every_seconds":900,"settled_at":null,"consumers":2,"failing":0,"pass_seconds":0.5,"said_at":"2026-10-05T00:09:00Z"}"#;
        let Event::Alive(mut alive) = Event::parse(EventKind::Alive, old.as_bytes()).unwrap()
        else {
            panic!("alive")
        };
        assert_eq!(alive.contributions, None, "an older provider's: unknown");
        assert_eq!(
            String::from_utf8(Event::Alive(alive.clone()).to_json()).unwrap(),
            old
        );
        // (what it read, how it is written)
        let cases = [
            (
                ContributionsRead::good(),
                r#""contributions":{"readable":true,"problem":null,"refused":[]}}"#,
            ),
            (
                ContributionsRead {
                    readable: false,
                    problem: Some("contributions file /etc/mesh/c.json is malformed: EOF".into()),
                    refused: vec![RefusedContribution {
                        index: 3,
                        consumer: Some(name("forge")),
                        reason: "provision: it is empty".into(),
                    }],
                    more: 0,
                },
                r#""contributions":{"readable":false,"problem":"contributions file /etc/mesh/c.json is malformed: EOF","refused":[{"index":3,"consumer":"forge","reason":"provision: it is empty"}]}}"#,
            ),
            (
                ContributionsRead {
                    readable: true,
                    problem: None,
                    refused: vec![RefusedContribution {
                        index: 0,
                        consumer: None,
                        reason: "missing field `consumer`".into(),
                    }],
                    more: 4,
                },
                r#""contributions":{"readable":true,"problem":null,"refused":[{"index":0,"consumer":null,"reason":"missing field `consumer`"}],"more":4}}"#,
            ),
        ];
        for (read, written) in cases {
            alive.contributions = Some(read);
            let text = String::from_utf8(Event::Alive(alive.clone()).to_json()).unwrap();
            assert!(text.ends_with(written), "{text}");
            assert_eq!(
                Event::parse(EventKind::Alive, text.as_bytes()).unwrap(),
                Event::Alive(alive.clone())
            );
        }
        // A consumer that is not a name is refused like any malformed body.
        let broken = old.replace(
            '}',
            r#","contributions":{"readable":true,"problem":null,"refused":[{"index":0,"consumer":"A B","reason":"x"}]}}"#,
        );
        assert!(Event::parse(EventKind::Alive, broken.as_bytes()).is_err());
    }

    #[test]
    fn refused_entries_are_capped_and_the_rest_counted() {
        let entry = |index| RefusedContribution {
            index,
            consumer: None,
            reason: "x".into(),
        };
        // (entries, more before, listed, more after)
        for (n, more, listed, after) in
            [(0, 0, 0, 0), (20, 0, 20, 0), (21, 0, 20, 1), (25, 2, 20, 7)]
        {
            let read = ContributionsRead {
                refused: (0..n).map(entry).collect(),
                more,
                ..ContributionsRead::good()
            }
            .capped();
            assert_eq!(
                (read.refused.len(), read.more),
                (listed, after),
                "{n} {more}"
            );
            assert_eq!(read.refuses_anything(), n > 0 || more > 0);
        }
        assert!(!ContributionsRead::good().refuses_anything());
    }

    #[test]
    fn grant_bodies_are_exactly_the_design() {
        let texts = [
            r#"{"v":1,"provision":"postgres-database","from":"postgres@db-1","address":"10.10.0.1","port":6852,"failures":4,"failing_since":"2026-10-05T00:04:00Z","last_reachable_at":null,"error":"connect timed out after 3s","said_at":"2026-10-05T00:09:00Z"}"#,
            r#"{"v":1,"provision":"postgres-database","from":"postgres@db-1","address":"10.10.0.1","port":6852,"reason":"first-success-after-start","said_at":"2026-10-05T00:09:00Z"}"#,
            r#"{"v":1,"provision":"postgres-database","from":"postgres@db-1","reason":"consumer not running","said_at":"2026-10-05T00:09:00Z"}"#,
        ];
        for (kind, text) in EventKind::GRANT.into_iter().zip(texts) {
            let event = Event::parse(kind, text.as_bytes()).unwrap();
            assert_eq!(event.kind(), kind);
            assert_eq!(String::from_utf8(event.to_json()).unwrap(), text);
        }
        // The agent's own read: a file it cannot take, an entry refused.
        let read = [
            r#"{"v":1,"file":"/etc/mesh/grants.json","readable":false,"problem":"grants file /etc/mesh/grants.json cannot be parsed: EOF while parsing","refused":[],"said_at":"2026-10-05T00:09:00Z"}"#,
            r#"{"v":1,"file":"/etc/mesh/grants.json","readable":true,"problem":null,"refused":[{"index":2,"consumer":"forge","reason":"port: invalid type"}],"more":3,"said_at":"2026-10-05T00:09:00Z"}"#,
        ];
        for text in read {
            let event = Event::parse(EventKind::GrantsRead, text.as_bytes()).unwrap();
            assert_eq!(String::from_utf8(event.to_json()).unwrap(), text);
        }
        let Event::GrantsRead(b) = Event::parse(EventKind::GrantsRead, read[1].as_bytes()).unwrap()
        else {
            panic!("a read");
        };
        assert_eq!(
            b.read.refused[0].consumer.as_ref().unwrap().as_str(),
            "forge"
        );
        assert_eq!(b.read.more, 3);
    }

    #[test]
    fn every_enum_word_round_trips_and_a_strange_one_is_named() {
        fn check<T>(all: &[T], expected: &str)
        where
            T: Copy + std::fmt::Debug + PartialEq + std::fmt::Display + std::str::FromStr,
            T: Serialize + serde::de::DeserializeOwned,
            T::Err: std::fmt::Display,
        {
            for value in all {
                let text = value.to_string();
                assert_eq!(serde_json::to_string(value).unwrap(), format!("{text:?}"));
                assert_eq!(text.parse::<T>().ok(), Some(*value), "{text}");
            }
            let error = "Bogus".parse::<T>().err().unwrap().to_string();
            assert!(
                error.starts_with(&format!("\"Bogus\" is not {expected} (one of ")),
                "{error}"
            );
        }
        check(&RecoveredReason::ALL, "a recovered reason");
        check(&RetirementAction::ALL, "a retirement action");
        check(&RepairOutcome::ALL, "a repair outcome");
        check(&ReachableReason::ALL, "a reachable reason");
        check(&GrantState::ALL, "a grant state");
        for state in GrantState::ALL {
            assert_eq!(state.kind().grant_state(), Some(state));
        }
        assert_eq!(
            EventKind::GRANT.map(|k| k.grant_state().unwrap()),
            GrantState::ALL
        );
        assert!(EventKind::PROVISIONER
            .iter()
            .all(|k| k.grant_state().is_none()));
        // ALL is every kind once: the provisioner's, then the grant agent's
        // (a grant's, then its own read).
        assert_eq!(EventKind::ALL[..5], EventKind::PROVISIONER);
        assert_eq!(EventKind::ALL[5..8], EventKind::GRANT);
        assert_eq!(EventKind::ALL[8], EventKind::GrantsRead);
        assert_eq!(EventKind::GrantsRead.grant_state(), None);
        let tokens: std::collections::BTreeSet<&str> =
            EventKind::ALL.iter().map(|k| k.as_str()).collect();
        assert_eq!(tokens.len(), EventKind::ALL.len());
    }

    #[test]
    fn malformed_bodies_are_refused() {
        for (kind, body) in [
            (EventKind::Failing, "not json"),
            (EventKind::Failing, r#"{"v":1}"#),
            (
                EventKind::Recovered,
                r#"{"v":2,"consumer":"a","consumer_machine":null,"provision":null,"reason":"success","said_at":"2026-10-05T00:09:00Z"}"#,
            ),
            (
                EventKind::Recovered,
                r#"{"v":1,"consumer":"A B","consumer_machine":null,"provision":null,"reason":"success","said_at":"2026-10-05T00:09:00Z"}"#,
            ),
            (
                EventKind::Recovered,
                r#"{"v":1,"consumer":"a","consumer_machine":null,"provision":null,"reason":"fine","said_at":"2026-10-05T00:09:00Z"}"#,
            ),
            (
                EventKind::Failing,
                r#"{"v":1,"consumer":"a","consumer_machine":null,"provision":null,"class":"refused","error":"x","since":"then","attempts":1,"said_at":"2026-10-05T00:09:00Z"}"#,
            ),
        ] {
            assert!(Event::parse(kind, body.as_bytes()).is_err(), "{body}");
        }
    }

    #[test]
    fn unknown_fields_are_ignored_so_a_claimed_emitter_changes_nothing() {
        let body = r#"{"v":1,"consumer":"a","consumer_machine":null,"provision":null,"reason":"success","said_at":"2026-10-05T00:09:00Z","machine":"x","module":"y"}"#;
        assert!(Event::parse(EventKind::Recovered, body.as_bytes()).is_ok());
    }
}
