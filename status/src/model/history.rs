//! History: the transitions the store keeps, append-only, beside the newest
//! event of each key (pure: no I/O).
//!
//! A *transition* is a change of standing, never a repeat: `failing` said
//! again for a consumer already failing is none (its interval keeps its
//! first `since`, even across a provider restart that reset it), a
//! redelivered or older event is none. [`transition`] decides it from the
//! key's [`Previous`] standing and the event, and moves the standing on, so
//! a round's events walked in stream order give its transitions
//! ([`Transitions`]).
//!
//! Two transitions are computed, not published: a provider *heard again*
//! (its `alive` stored more than 3 × its `alive_every` after the one
//! before, or after the controller's current run of following began when
//! that is later: [`heard_again`]) and the controller *following again* (it
//! catches up with the event stream more than its follow bound after any
//! `serve` last did: [`following_again`]). Nobody can record a silence
//! while it lasts, so each is recorded when it ends, as one row whose
//! `since` says when it began; `status` names it while it lasts.
//!
//! A provider's silence counts only while the controller followed (the bus
//! and the store were there, a `serve` caught up): as `status` counts it,
//! from its newest `alive` or from when the controller's current run of
//! catch-ups began ([`following_run_began`]), whichever is later. A time
//! the controller followed nothing — `serve` stopped, the bus or the store
//! away — is the controller's own interval (`following-again`), never a
//! provider's.

use std::collections::HashMap;
use std::time::Duration;

use mesh_protocol::event::{RepairOutcome, RetirementAction};
use mesh_protocol::{Class, Event, ModuleId, Name, Timestamp};

pub use super::recoveries::{Past, PastRow, Recoveries};
pub use super::row::RepairsDone;

use super::reduce::Place;
use super::Received;

/// What changed: the kind of a transition's [`Change`] (whose variant of
/// the same name carries its fields), as the store writes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TransitionKind {
    /// A consumer began failing: the first `failing` since it was last fine.
    FailingBegan,
    /// A failing consumer recovered.
    Recovered,
    /// The provider retired the consumer.
    Retired,
    /// The provider enabled the retired consumer again.
    ReEnabled,
    /// The provider deleted the consumer's provision.
    Deleted,
    /// A provider unheard for a while was heard again.
    HeardAgain,
    /// The controller, following nothing for a while, follows again.
    FollowingAgain,
    /// A repair was done and verified.
    RepairDone,
    /// A failed repair is braked.
    RepairBraked,
    /// A grant became unreachable.
    GrantUnreachable,
    /// An unreachable grant is reachable again.
    GrantReachable,
    /// A provider's fault began, or changed class.
    ProviderFaultBegan,
    /// A provider's fault cleared.
    ProviderFaultCleared,
    /// A person attached a note to a consumer's failing interval.
    Note,
    /// A person acted from the console (approved a retirement or a
    /// deletion): who, what, and the provider's answer.
    Action,
}

impl TransitionKind {
    /// Every kind, in a stable order.
    pub const ALL: [TransitionKind; 15] = [
        TransitionKind::FailingBegan,
        TransitionKind::Recovered,
        TransitionKind::Retired,
        TransitionKind::ReEnabled,
        TransitionKind::Deleted,
        TransitionKind::HeardAgain,
        TransitionKind::FollowingAgain,
        TransitionKind::RepairDone,
        TransitionKind::RepairBraked,
        TransitionKind::GrantUnreachable,
        TransitionKind::GrantReachable,
        TransitionKind::ProviderFaultBegan,
        TransitionKind::ProviderFaultCleared,
        TransitionKind::Note,
        TransitionKind::Action,
    ];

    /// The kind as the store writes it (column `history.kind`).
    pub fn as_str(self) -> &'static str {
        match self {
            TransitionKind::FailingBegan => "failing-began",
            TransitionKind::Recovered => "recovered",
            TransitionKind::Retired => "retired",
            TransitionKind::ReEnabled => "re-enabled",
            TransitionKind::Deleted => "deleted",
            TransitionKind::HeardAgain => "heard-again",
            TransitionKind::FollowingAgain => "following-again",
            TransitionKind::RepairDone => "repair-done",
            TransitionKind::RepairBraked => "repair-braked",
            TransitionKind::GrantUnreachable => "grant-unreachable",
            TransitionKind::GrantReachable => "grant-reachable",
            TransitionKind::ProviderFaultBegan => "provider-fault-began",
            TransitionKind::ProviderFaultCleared => "provider-fault-cleared",
            TransitionKind::Note => "note",
            TransitionKind::Action => "action",
        }
    }
}

mesh_protocol::wire_words!(TransitionKind, "a transition");

/// One transition: a row of the store's `history`, as written and as read
/// back. What changed, and exactly what that kind of change carries, is
/// its [`Change`]; the store flattens it into the row's columns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Transition {
    /// When: the event's `said_at` (the provider's clock), for a computed
    /// transition when its silence ended, for a note when it was written
    /// (the store's clock).
    pub at: Timestamp,
    /// Where its event stands in the event stream; `None` when computed
    /// with no event of its own (the controller following again, a note).
    pub place: Option<Place>,
    /// What changed.
    pub change: Change,
}

impl Transition {
    /// What changed: the kind of [`Transition::change`].
    pub fn kind(&self) -> TransitionKind {
        self.change.kind()
    }

    /// The provider it is about (for a grant, the provider it reaches,
    /// when its grants file names one that parses); `None` for the
    /// controller's own.
    pub fn provider(&self) -> Option<&ModuleId> {
        self.change.provider()
    }
}

/// What a transition changed: one variant per [`TransitionKind`], each
/// carrying exactly the fields of its kind. A new kind is a new variant:
/// the compiler then points at every `match` that must say what it is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Change {
    /// A consumer began failing: the first `failing` since it was last fine.
    FailingBegan {
        /// The provider that said it.
        provider: ModuleId,
        /// The consumer.
        consumer: Name,
        /// The consumer's machine, when the provider knew it.
        consumer_machine: Option<Name>,
        /// The provision, when the provider knew it.
        provision: Option<String>,
        /// The failure's class.
        class: Class,
        /// The start of the failure's message.
        error: String,
        /// Its first failure since the last success.
        since: Timestamp,
        /// Failed attempts since `since`.
        attempts: u64,
    },
    /// A failing consumer recovered.
    Recovered {
        /// The provider that said it.
        provider: ModuleId,
        /// The consumer.
        consumer: Name,
        /// The consumer's machine, when the provider knew it.
        consumer_machine: Option<Name>,
        /// The provision, when the provider knew it.
        provision: Option<String>,
        /// When the interval it ends began (its first `since`).
        since: Timestamp,
        /// Why it recovered (the `recovered` reason's word).
        reason: String,
    },
    /// The provider retired the consumer.
    Retired(RetirementChange),
    /// The provider enabled the retired consumer again.
    ReEnabled(RetirementChange),
    /// The provider deleted the consumer's provision.
    Deleted(RetirementChange),
    /// A provider unheard since `since` was heard again.
    HeardAgain {
        /// The provider.
        provider: ModuleId,
        /// When it became unheard.
        since: Timestamp,
    },
    /// The controller, following nothing since `since`, follows again.
    FollowingAgain {
        /// Its last catch-up before.
        since: Timestamp,
    },
    /// A repair was done and verified.
    RepairDone(RepairChange),
    /// A failed repair is braked.
    RepairBraked(RepairChange),
    /// A grant became unreachable.
    GrantUnreachable {
        /// The provider it reaches, when its grants file names one that
        /// parses as `module@machine`.
        provider: Option<ModuleId>,
        /// The consumer whose grant agent said it, `consumer@machine`.
        consumer: ModuleId,
        /// The provision granted.
        provision: String,
        /// Why the newest check failed.
        error: String,
        /// The first failed check.
        since: Timestamp,
        /// Failed checks in a row.
        attempts: u64,
        /// The grant's `address:port`.
        address: String,
    },
    /// An unreachable grant is reachable again.
    GrantReachable {
        /// The provider it reaches, as for [`Change::GrantUnreachable`].
        provider: Option<ModuleId>,
        /// The consumer whose grant agent said it, `consumer@machine`.
        consumer: ModuleId,
        /// The provision granted.
        provision: String,
        /// Why it is said (the `reachable` reason's word).
        reason: String,
    },
    /// A provider's fault began, or changed class: its `alive` says it
    /// cannot work as its administrator.
    ProviderFaultBegan {
        /// The provider.
        provider: ModuleId,
        /// The fault's class.
        class: Class,
        /// The start of its message.
        error: String,
        /// When it began.
        since: Timestamp,
    },
    /// A provider's fault cleared: its `alive` carries none.
    ProviderFaultCleared {
        /// The provider.
        provider: ModuleId,
        /// The class of the fault that cleared.
        class: Class,
        /// When that fault began.
        since: Timestamp,
    },
    /// A person attached a note to a consumer's failing interval. Never a
    /// provider's word.
    Note {
        /// The provider of the interval.
        provider: ModuleId,
        /// The consumer, `consumer@machine`.
        consumer: ModuleId,
        /// The note.
        text: String,
        /// Who wrote it.
        by: String,
    },
    /// A person acted: asked a provider to retire or delete a consumer
    /// (its answer carried), or acknowledged a consumer's problem. Never a
    /// provider's word.
    Action(ActionChange),
}

/// What a person did ([`Change::Action`]), as history's `reason` says it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ActionWord {
    /// Approved retiring a withdrawn consumer now.
    Approve,
    /// Approved deleting a retired consumer's data.
    ApproveDelete,
    /// Said a consumer's problem is being worked on, until a time. It
    /// changes no verdict: status still says the problem.
    Acknowledge,
}

impl ActionWord {
    /// Every action, in a stable order.
    pub const ALL: [ActionWord; 3] = [
        ActionWord::Approve,
        ActionWord::ApproveDelete,
        ActionWord::Acknowledge,
    ];

    /// The action's word.
    pub fn as_str(self) -> &'static str {
        match self {
            ActionWord::Approve => "approve",
            ActionWord::ApproveDelete => "approve-delete",
            ActionWord::Acknowledge => "acknowledge",
        }
    }
}

mesh_protocol::wire_words!(ActionWord, "an action");

/// What an action row carries ([`Change::Action`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ActionChange {
    /// The provider asked.
    pub provider: ModuleId,
    /// The consumer it was asked about.
    pub consumer: Name,
    /// The consumer's machine, when the action names it (an
    /// acknowledgement; an approval names the provider's consumer only).
    pub consumer_machine: Option<Name>,
    /// What was asked.
    pub action: ActionWord,
    /// Who asked (the console token's name).
    pub by: String,
    /// Whether the provider did it; `false` also when it did not answer.
    pub ok: bool,
    /// The provider's answer, or why there was none; an
    /// acknowledgement's reason.
    pub answer: String,
    /// Until when an acknowledgement holds; none for an approval.
    pub until: Option<Timestamp>,
}

/// What a retirement transition carries ([`Change::Retired`],
/// [`Change::ReEnabled`], [`Change::Deleted`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RetirementChange {
    /// The provider that said it.
    pub provider: ModuleId,
    /// The consumer.
    pub consumer: Name,
    /// For a person, as the provider said it.
    pub detail: String,
}

/// What a repair transition carries ([`Change::RepairDone`],
/// [`Change::RepairBraked`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RepairChange {
    /// The provider that said it.
    pub provider: ModuleId,
    /// The fault.
    pub fault: Name,
    /// For a person, as the provider said it.
    pub detail: String,
}

impl Change {
    /// Its kind.
    pub fn kind(&self) -> TransitionKind {
        use TransitionKind as K;
        match self {
            Change::FailingBegan { .. } => K::FailingBegan,
            Change::Recovered { .. } => K::Recovered,
            Change::Retired(_) => K::Retired,
            Change::ReEnabled(_) => K::ReEnabled,
            Change::Deleted(_) => K::Deleted,
            Change::HeardAgain { .. } => K::HeardAgain,
            Change::FollowingAgain { .. } => K::FollowingAgain,
            Change::RepairDone(_) => K::RepairDone,
            Change::RepairBraked(_) => K::RepairBraked,
            Change::GrantUnreachable { .. } => K::GrantUnreachable,
            Change::GrantReachable { .. } => K::GrantReachable,
            Change::ProviderFaultBegan { .. } => K::ProviderFaultBegan,
            Change::ProviderFaultCleared { .. } => K::ProviderFaultCleared,
            Change::Note { .. } => K::Note,
            Change::Action(_) => K::Action,
        }
    }

    /// The provider it is about ([`Transition::provider`]).
    pub fn provider(&self) -> Option<&ModuleId> {
        match self {
            Change::FailingBegan { provider, .. }
            | Change::Recovered { provider, .. }
            | Change::HeardAgain { provider, .. }
            | Change::ProviderFaultBegan { provider, .. }
            | Change::ProviderFaultCleared { provider, .. }
            | Change::Note { provider, .. } => Some(provider),
            Change::Retired(r) | Change::ReEnabled(r) | Change::Deleted(r) => Some(&r.provider),
            Change::RepairDone(r) | Change::RepairBraked(r) => Some(&r.provider),
            Change::Action(a) => Some(&a.provider),
            Change::GrantUnreachable { provider, .. } | Change::GrantReachable { provider, .. } => {
                provider.as_ref()
            }
            Change::FollowingAgain { .. } => None,
        }
    }
}

/// What the store holds of one key before an event: enough to tell a
/// transition from a repeat. `newest` is where the key's newest stored
/// event stands (`None`: nothing stored); an event not newer changes nothing.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Previous {
    /// Nothing stored for the key (or nothing that counts).
    #[default]
    Nothing,
    /// A consumer's standing: `failing_since` is the first `since` of the
    /// interval it is failing in, `None` when it is not failing.
    Standing {
        /// The newest `failing` or `recovered` stored.
        newest: (u64, u64),
        /// The interval's first `since`, when failing.
        failing_since: Option<Timestamp>,
    },
    /// A grant's newest event: whether it said unreachable.
    Grant {
        /// Its place.
        newest: (u64, u64),
        /// Whether it is unreachable.
        unreachable: bool,
    },
    /// A repair fault's or a retirement action's newest event.
    Event {
        /// Its place.
        newest: (u64, u64),
    },
    /// A provider's newest `alive`: when it was heard, how often it says
    /// it, and the provider fault it carries.
    Alive {
        /// Its place.
        newest: (u64, u64),
        /// When it was heard (the stream stored it, else its `said_at`).
        heard_at: Timestamp,
        /// Its `alive_every`.
        every: Duration,
        /// Its fault's class and `since`; `None` when it carries none.
        fault: Option<(Class, Timestamp)>,
    },
}

impl Previous {
    fn newest(&self) -> Option<(u64, u64)> {
        match self {
            Previous::Nothing => None,
            Previous::Standing { newest, .. }
            | Previous::Grant { newest, .. }
            | Previous::Event { newest }
            | Previous::Alive { newest, .. } => Some(*newest),
        }
    }

    /// The first `since` of the interval a standing is failing in.
    pub fn failing_since(&self) -> Option<Timestamp> {
        match self {
            Previous::Standing { failing_since, .. } => *failing_since,
            _ => None,
        }
    }
}

/// The key an event's [`Previous`] is kept under.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum PreviousKey {
    /// (provider, consumer): `failing` and `recovered`.
    Standing(ModuleId, Name),
    /// (provider, fault).
    Repair(ModuleId, Name),
    /// (provider, consumer, action).
    Retirement(ModuleId, Name, RetirementAction),
    /// A provider's `alive`.
    Alive(ModuleId),
    /// (agent `consumer@machine`, provision, from).
    Grant(ModuleId, String, String),
    /// The grant agent's read of its file, on a machine: no transition.
    GrantsRead(Name),
}

impl PreviousKey {
    /// The key of `received`.
    pub fn of(received: &Received) -> PreviousKey {
        let e = received.emitter.clone();
        match &received.event {
            Event::Failing(b) => PreviousKey::Standing(e, b.consumer.clone()),
            Event::Recovered(b) => PreviousKey::Standing(e, b.consumer.clone()),
            Event::Repair(b) => PreviousKey::Repair(e, b.fault.clone()),
            Event::Retirement(b) => PreviousKey::Retirement(e, b.consumer.clone(), b.action),
            Event::Alive(_) => PreviousKey::Alive(e),
            Event::Unreachable(b) => PreviousKey::Grant(e, b.provision.clone(), b.from.clone()),
            Event::Reachable(b) => PreviousKey::Grant(e, b.provision.clone(), b.from.clone()),
            Event::Unchecked(b) => PreviousKey::Grant(e, b.provision.clone(), b.from.clone()),
            Event::GrantsRead(_) => PreviousKey::GrantsRead(e.machine),
        }
    }
}

/// The transitions `received` makes from its key's `previous` standing
/// (none, one, or for an `alive` both a provider heard again and its fault
/// beginning or clearing, in that order), and the key's standing after it
/// (pure; see the module's rules).
/// `following_since` is when the controller's run of following in which
/// the event is stored began ([`following_run_began`]); `None`: unknown,
/// a provider's silence then counts from its previous `alive`.
pub fn transition(
    previous: &Previous,
    received: &Received,
    following_since: Option<Timestamp>,
) -> (Previous, Vec<Transition>) {
    let (next, transition) = one_transition(previous, received, following_since);
    let mut out: Vec<Transition> = transition.into_iter().collect();
    if let (Event::Alive(b), Previous::Alive { .. }) = (&received.event, &next) {
        if next.newest() != previous.newest() {
            let was = match previous {
                Previous::Alive { fault, .. } => *fault,
                _ => None,
            };
            out.extend(fault_transition(was, b, received));
        }
    }
    (next, out)
}

/// The transition of a provider fault an applied `alive` begins, changes
/// the class of, or clears (`was`: the class and `since` of the fault the
/// provider's `alive` before carried): a fault said again with its class,
/// and none said again, are none.
fn fault_transition(
    was: Option<(Class, Timestamp)>,
    alive: &mesh_protocol::event::Alive,
    received: &Received,
) -> Option<Transition> {
    let provider = received.emitter.clone();
    let change = match (&alive.fault, was) {
        (Some(now), Some((class, _))) if now.class == class => return None,
        (None, None) => return None,
        (Some(now), _) => Change::ProviderFaultBegan {
            provider,
            class: now.class,
            error: now.error.clone(),
            since: now.since,
        },
        (None, Some((class, since))) => Change::ProviderFaultCleared {
            provider,
            class,
            since,
        },
    };
    Some(of_event(received, change))
}

/// The transition `received` makes, `change`: at its `said_at`, its place.
fn of_event(received: &Received, change: Change) -> Transition {
    let at = received.event.said_at();
    Transition {
        at,
        place: Some(Place {
            epoch: received.epoch,
            seq: received.seq,
            said_at: at,
            stored_at: received.stored_at,
        }),
        change,
    }
}

fn one_transition(
    previous: &Previous,
    received: &Received,
    following_since: Option<Timestamp>,
) -> (Previous, Option<Transition>) {
    let place = (received.epoch, received.seq);
    if previous.newest().is_some_and(|newest| newest >= place) {
        // Redelivered, or older than what is stored: nothing changes.
        return (previous.clone(), None);
    }
    let t = |change: Change| of_event(received, change);
    let provider = received.emitter.clone();
    match &received.event {
        Event::Failing(b) => {
            let began = previous.failing_since().is_none();
            let since = previous.failing_since().unwrap_or(b.since);
            let next = Previous::Standing {
                newest: place,
                failing_since: Some(since),
            };
            let transition = began.then(|| {
                t(Change::FailingBegan {
                    provider,
                    consumer: b.consumer.clone(),
                    consumer_machine: b.consumer_machine.clone(),
                    provision: b.provision.clone(),
                    class: b.class,
                    error: b.error.clone(),
                    since: b.since,
                    attempts: b.attempts,
                })
            });
            (next, transition)
        }
        Event::Recovered(b) => {
            let next = Previous::Standing {
                newest: place,
                failing_since: None,
            };
            let transition = previous.failing_since().map(|since| {
                t(Change::Recovered {
                    provider,
                    consumer: b.consumer.clone(),
                    consumer_machine: b.consumer_machine.clone(),
                    provision: b.provision.clone(),
                    since,
                    reason: b.reason.as_str().to_owned(),
                })
            });
            (next, transition)
        }
        Event::Retirement(b) => {
            let r = || RetirementChange {
                provider,
                consumer: b.consumer.clone(),
                detail: b.detail.clone(),
            };
            let change = match b.action {
                RetirementAction::Retired => Some(Change::Retired(r())),
                RetirementAction::ReEnabled => Some(Change::ReEnabled(r())),
                RetirementAction::Deleted => Some(Change::Deleted(r())),
                // A countdown said or called off is the standing's, not a
                // transition of history: the retirement that ends it is.
                RetirementAction::Approved
                | RetirementAction::Retiring
                | RetirementAction::Cancelled => None,
            };
            (Previous::Event { newest: place }, change.map(t))
        }
        Event::Repair(b) => {
            let r = || RepairChange {
                provider,
                fault: b.fault.clone(),
                detail: b.detail.clone(),
            };
            let change = match b.outcome {
                RepairOutcome::Repaired => Some(Change::RepairDone(r())),
                RepairOutcome::Braked => Some(Change::RepairBraked(r())),
                RepairOutcome::Failed => None,
            };
            (Previous::Event { newest: place }, change.map(t))
        }
        Event::Alive(b) => {
            let heard_at = super::row::heard_at(received.stored_at, b.said_at);
            let every = Duration::from_secs(b.alive_every_seconds.max(1));
            let transition = heard_again(previous, heard_at, following_since).map(|since| {
                let mut t = t(Change::HeardAgain { provider, since });
                t.at = heard_at;
                t
            });
            let next = Previous::Alive {
                newest: place,
                heard_at,
                every,
                fault: b.fault.as_ref().map(|f| (f.class, f.since)),
            };
            (next, transition)
        }
        Event::Unreachable(b) => {
            let was = matches!(
                previous,
                Previous::Grant {
                    unreachable: true,
                    ..
                }
            );
            let transition = (!was).then(|| {
                t(Change::GrantUnreachable {
                    provider: ModuleId::parse(&b.from).ok(),
                    consumer: provider,
                    provision: b.provision.clone(),
                    error: b.error.clone(),
                    since: b.failing_since,
                    attempts: b.failures,
                    address: format!("{}:{}", b.address, b.port),
                })
            });
            let next = Previous::Grant {
                newest: place,
                unreachable: true,
            };
            (next, transition)
        }
        Event::Reachable(b) => {
            let was = matches!(
                previous,
                Previous::Grant {
                    unreachable: true,
                    ..
                }
            );
            let transition = was.then(|| {
                t(Change::GrantReachable {
                    provider: ModuleId::parse(&b.from).ok(),
                    consumer: provider,
                    provision: b.provision.clone(),
                    reason: b.reason.as_str().to_owned(),
                })
            });
            let next = Previous::Grant {
                newest: place,
                unreachable: false,
            };
            (next, transition)
        }
        // Unchecked is neither broken nor checked: an unreachable grant
        // stays so until it is said reachable.
        Event::Unchecked(_) => {
            let unreachable = matches!(
                previous,
                Previous::Grant {
                    unreachable: true,
                    ..
                }
            );
            let next = Previous::Grant {
                newest: place,
                unreachable,
            };
            (next, None)
        }
        // What the agent refused is a problem while it lasts, not history.
        Event::GrantsRead(_) => (previous.clone(), None),
    }
}

/// When a provider whose newest stored `alive` is `previous` and that is
/// heard again at `heard_at` became unheard, if it was: 3 × its
/// `alive_every` after it was last heard, or after the controller's run of
/// following began (`following_since`) when that is later — a silence the
/// controller could not have heard is not the provider's.
pub fn heard_again(
    previous: &Previous,
    heard_at: Timestamp,
    following_since: Option<Timestamp>,
) -> Option<Timestamp> {
    let Previous::Alive {
        heard_at: before,
        every,
        ..
    } = previous
    else {
        return None;
    };
    let silent_from = following_since.map_or(*before, |since| since.max(*before));
    let unheard_at = silent_from.system_time() + *every * super::row::UNHEARD_AFTER_ALIVES;
    (heard_at.system_time() > unheard_at).then_some(Timestamp::from_system(unheard_at))
}

/// The last catch-up the store records of any `serve` (the one that caught
/// up last), on the store's clock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LastCatchUp {
    /// When it last caught up.
    pub pulled_at: Timestamp,
    /// When its run of catch-ups began (`None`: not recorded; its
    /// `pulled_at` then).
    pub following_since: Option<Timestamp>,
    /// Its follow bound ([`crate::model::Instance::follow_bound`]).
    pub bound: Duration,
}

/// When the run of following in which a round stored at `now` (the
/// store's clock) is applied began: the run of the `serve` that caught up
/// last while it still follows (caught up within its follow bound), else
/// `now` — no `serve` follows, so the catch-up after this round begins a
/// new run, and a provider's silence before it is the controller's.
pub fn following_run_began(last: Option<LastCatchUp>, now: Timestamp) -> Timestamp {
    let Some(last) = last else {
        return now;
    };
    let gap = now
        .system_time()
        .duration_since(last.pulled_at.system_time())
        .unwrap_or_default();
    if gap > last.bound {
        return now;
    }
    last.following_since.unwrap_or(last.pulled_at)
}

/// The transition of the controller following again at `now`, when no
/// `serve` caught up with the event stream since `last_caught_up` (the
/// latest of any, before this one) and that is more than `bound` ago; none
/// for a store no `serve` ever caught up in.
pub fn following_again(
    last_caught_up: Option<Timestamp>,
    now: Timestamp,
    bound: Duration,
) -> Option<Transition> {
    let last = last_caught_up?;
    let gap = now.system_time().duration_since(last.system_time()).ok()?;
    (gap > bound).then_some(Transition {
        at: now,
        place: None,
        change: Change::FollowingAgain { since: last },
    })
}

/// The transitions of a round, walked in the order given (stream order)
/// from the standings the store holds.
#[derive(Clone, Debug, Default)]
pub struct Transitions {
    previous: HashMap<PreviousKey, Previous>,
    following_since: Option<Timestamp>,
}

impl Transitions {
    /// Starts from what the store holds: each key's [`Previous`], and when
    /// the controller's run of following in which the round is stored began
    /// ([`following_run_began`]; `None`: unknown).
    pub fn new(
        previous: HashMap<PreviousKey, Previous>,
        following_since: Option<Timestamp>,
    ) -> Transitions {
        Transitions {
            previous,
            following_since,
        }
    }

    /// The transitions `events` make, in order; each key's standing moves on.
    pub fn walk(&mut self, events: &[Received]) -> Vec<Transition> {
        let mut out = Vec::new();
        for received in events {
            let key = PreviousKey::of(received);
            let previous = self.previous.get(&key).cloned().unwrap_or_default();
            let (next, transitions) = transition(&previous, received, self.following_since);
            self.previous.insert(key, next);
            out.extend(transitions);
        }
        out
    }

    /// The first `since` of the interval the consumer of `provider` is
    /// failing in after the walk (kept across a provider restart that
    /// reset its `since`).
    pub fn failing_since(&self, provider: &ModuleId, consumer: &Name) -> Option<Timestamp> {
        self.previous
            .get(&PreviousKey::Standing(provider.clone(), consumer.clone()))
            .and_then(Previous::failing_since)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::received;
    use mesh_protocol::event::RecoveredReason;
    use mesh_protocol::event::{
        Alive, Failing, GrantReachable, GrantUnchecked, GrantUnreachable, ReachableReason,
        Recovered, RepairReport, Retirement,
    };

    fn ts(s: &str) -> Timestamp {
        Timestamp::parse(s).unwrap()
    }

    /// The `since` of a transition that has one.
    fn since(t: &Transition) -> Option<Timestamp> {
        match &t.change {
            Change::FailingBegan { since, .. }
            | Change::Recovered { since, .. }
            | Change::HeardAgain { since, .. }
            | Change::FollowingAgain { since }
            | Change::GrantUnreachable { since, .. }
            | Change::ProviderFaultBegan { since, .. }
            | Change::ProviderFaultCleared { since, .. } => Some(*since),
            _ => None,
        }
    }

    fn failing(seq: u64, since: &str) -> Received {
        received(
            "postgres@db-1",
            seq,
            Event::Failing(Failing {
                v: 1,
                consumer: Name::parse("wiki").unwrap(),
                consumer_machine: Some(Name::parse("app-1").unwrap()),
                provision: Some("postgres-database".into()),
                class: Class::CredentialsRejected,
                error: "password authentication failed".into(),
                since: ts(since),
                attempts: 61,
                said_at: ts("2026-11-27T00:17:00Z"),
            }),
        )
    }

    fn recovered(seq: u64) -> Received {
        received(
            "postgres@db-1",
            seq,
            Event::Recovered(Recovered {
                v: 1,
                consumer: Name::parse("wiki").unwrap(),
                consumer_machine: Some(Name::parse("app-1").unwrap()),
                provision: None,
                reason: RecoveredReason::Success,
                said_at: ts("2026-11-27T21:40:00Z"),
            }),
        )
    }

    fn retirement(seq: u64, action: RetirementAction) -> Received {
        received(
            "postgres@db-1",
            seq,
            Event::Retirement(Retirement {
                v: 1,
                consumer: Name::parse("wiki").unwrap(),
                action,
                detail: "d".into(),
                retire_at: None,
                said_at: ts("2026-11-27T00:00:00Z"),
            }),
        )
    }

    fn repair(seq: u64, outcome: RepairOutcome) -> Received {
        received(
            "identity@id-1",
            seq,
            Event::Repair(RepairReport {
                v: 1,
                fault: Name::parse("admin-refused").unwrap(),
                outcome,
                detail: "d".into(),
                next_attempt_at: None,
                said_at: ts("2026-11-27T00:00:00Z"),
            }),
        )
    }

    fn alive(seq: u64, stored: &str) -> Received {
        let mut r = received(
            "postgres@db-1",
            seq,
            Event::Alive(Alive {
                v: 1,
                started_at: ts("2026-11-27T00:00:00Z"),
                alive_every_seconds: 60,
                failing_after_seconds: 300,
                repeat_every_seconds: None,
                settled_at: None,
                consumers: 1,
                failing: 0,
                fault: None,
                contributions: None,
                pass_seconds: 0.1,
                said_at: ts(stored),
            }),
        );
        r.stored_at = Some(ts(stored));
        r
    }

    fn grant(seq: u64, state: &str) -> Received {
        let (provision, from, said_at) = (
            "postgres-database".to_owned(),
            "postgres@db-1".to_owned(),
            ts("2026-11-27T00:00:00Z"),
        );
        let event = match state {
            "unreachable" => Event::Unreachable(GrantUnreachable {
                v: 1,
                provision,
                from,
                address: "10.0.0.1".into(),
                port: 5432,
                failures: 3,
                failing_since: ts("2026-11-26T23:59:00Z"),
                last_reachable_at: None,
                error: "connect timed out".into(),
                said_at,
            }),
            "reachable" => Event::Reachable(GrantReachable {
                v: 1,
                provision,
                from,
                address: "10.0.0.1".into(),
                port: 5432,
                reason: ReachableReason::Success,
                said_at,
            }),
            _ => Event::Unchecked(GrantUnchecked {
                v: 1,
                provision,
                from,
                reason: "consumer not running".into(),
                said_at,
            }),
        };
        received("wiki@app-1", seq, event)
    }

    fn failing_prev(newest: u64, since: Option<&str>) -> Previous {
        Previous::Standing {
            newest: (1, newest),
            failing_since: since.map(ts),
        }
    }

    #[test]
    fn transition_table() {
        use TransitionKind as K;
        let x = "2026-11-27T00:12:00Z";
        let y = "2026-11-27T09:00:00Z";
        let grant_prev = |unreachable| Previous::Grant {
            newest: (1, 5),
            unreachable,
        };
        let alive_prev = Previous::Alive {
            newest: (1, 5),
            heard_at: ts("2026-11-27T00:00:00Z"),
            every: Duration::from_secs(60),
            fault: None,
        };
        // (previous, event, expected transition kind)
        let cases: Vec<(Previous, Received, Option<K>)> = vec![
            // failing: the first is a transition, a repeat is none (even
            // with another since: a restarted provider), a stale one none.
            (Previous::Nothing, failing(10, x), Some(K::FailingBegan)),
            (failing_prev(5, None), failing(10, x), Some(K::FailingBegan)),
            (failing_prev(5, Some(x)), failing(10, x), None),
            (failing_prev(5, Some(x)), failing(10, y), None),
            (failing_prev(10, None), failing(10, x), None),
            (failing_prev(12, None), failing(10, x), None),
            // recovered: only a failing standing recovers.
            (failing_prev(5, Some(x)), recovered(10), Some(K::Recovered)),
            (failing_prev(5, None), recovered(10), None),
            (Previous::Nothing, recovered(10), None),
            (failing_prev(10, Some(x)), recovered(10), None),
            (failing_prev(12, Some(x)), recovered(10), None),
            // retirements: each action but `approved`, once.
            (
                Previous::Nothing,
                retirement(10, RetirementAction::Retired),
                Some(K::Retired),
            ),
            (
                Previous::Nothing,
                retirement(10, RetirementAction::ReEnabled),
                Some(K::ReEnabled),
            ),
            (
                Previous::Nothing,
                retirement(10, RetirementAction::Deleted),
                Some(K::Deleted),
            ),
            (
                Previous::Nothing,
                retirement(10, RetirementAction::Approved),
                None,
            ),
            (
                Previous::Event { newest: (1, 10) },
                retirement(10, RetirementAction::Retired),
                None,
            ),
            // repairs: done and braked; a failed attempt is none.
            (
                Previous::Nothing,
                repair(10, RepairOutcome::Repaired),
                Some(K::RepairDone),
            ),
            (
                Previous::Nothing,
                repair(10, RepairOutcome::Braked),
                Some(K::RepairBraked),
            ),
            (Previous::Nothing, repair(10, RepairOutcome::Failed), None),
            (
                Previous::Event { newest: (1, 5) },
                repair(10, RepairOutcome::Repaired),
                Some(K::RepairDone),
            ),
            (
                Previous::Event { newest: (1, 11) },
                repair(10, RepairOutcome::Repaired),
                None,
            ),
            // alive: heard again only after 3 alives of silence.
            (Previous::Nothing, alive(10, "2026-11-27T00:00:00Z"), None),
            (alive_prev.clone(), alive(10, "2026-11-27T00:03:00Z"), None),
            (
                alive_prev.clone(),
                alive(10, "2026-11-27T00:03:01Z"),
                Some(K::HeardAgain),
            ),
            (alive_prev, alive(4, "2026-11-27T01:00:00Z"), None),
            // grants: unreachable once, reachable after unreachable only.
            (
                Previous::Nothing,
                grant(10, "unreachable"),
                Some(K::GrantUnreachable),
            ),
            (
                grant_prev(false),
                grant(10, "unreachable"),
                Some(K::GrantUnreachable),
            ),
            (grant_prev(true), grant(10, "unreachable"), None),
            (
                grant_prev(true),
                grant(10, "reachable"),
                Some(K::GrantReachable),
            ),
            (grant_prev(false), grant(10, "reachable"), None),
            (Previous::Nothing, grant(10, "reachable"), None),
            (grant_prev(true), grant(10, "unchecked"), None),
            (grant_prev(true), grant(4, "reachable"), None),
        ];
        for (previous, event, expected) in cases {
            let (_, t) = transition(&previous, &event, None);
            let kinds: Vec<K> = t.iter().map(Transition::kind).collect();
            assert_eq!(
                kinds,
                Vec::from_iter(expected),
                "{previous:?} then {event:?}"
            );
        }
    }

    fn alive_with(seq: u64, stored: &str, fault: Option<(Class, &str)>) -> Received {
        let mut r = alive(seq, stored);
        if let Event::Alive(b) = &mut r.event {
            b.fault = fault.map(|(class, since)| mesh_protocol::event::ProviderFault {
                class,
                error: "password authentication failed for user \"mesh_admin\"".into(),
                since: ts(since),
            });
        }
        r
    }

    #[test]
    fn a_provider_fault_begins_changes_class_and_clears_as_history_rows() {
        use Class::{CredentialsRejected as Rejected, Unreachable};
        use TransitionKind as K;
        let (a, b) = ("2026-11-27T00:00:30Z", "2026-11-27T00:01:30Z");
        let held = |fault: Option<(Class, &str)>, newest: u64| Previous::Alive {
            newest: (1, newest),
            heard_at: ts("2026-11-27T00:01:00Z"),
            every: Duration::from_secs(60),
            fault: fault.map(|(c, s)| (c, ts(s))),
        };
        let now = "2026-11-27T00:02:00Z";
        // (held before, the alive's fault, its seq, expected (kind, class, since))
        type Case<'a> = (
            Previous,
            Option<(Class, &'a str)>,
            u64,
            Option<(K, Class, &'a str)>,
        );
        let cases: Vec<Case> = vec![
            // The first alive ever with a fault begins one; without, nothing.
            (
                Previous::Nothing,
                Some((Rejected, a)),
                10,
                Some((K::ProviderFaultBegan, Rejected, a)),
            ),
            (Previous::Nothing, None, 10, None),
            // Begins, said again (its class kept), clears.
            (
                held(None, 5),
                Some((Rejected, a)),
                10,
                Some((K::ProviderFaultBegan, Rejected, a)),
            ),
            (held(Some((Rejected, a)), 5), Some((Rejected, a)), 10, None),
            (
                held(Some((Rejected, a)), 5),
                None,
                10,
                Some((K::ProviderFaultCleared, Rejected, a)),
            ),
            (held(None, 5), None, 10, None),
            // A change of class begins the new one.
            (
                held(Some((Rejected, a)), 5),
                Some((Unreachable, b)),
                10,
                Some((K::ProviderFaultBegan, Unreachable, b)),
            ),
            // A redelivered or older alive changes nothing.
            (held(None, 10), Some((Rejected, a)), 10, None),
            (held(Some((Rejected, a)), 12), None, 10, None),
        ];
        for (previous, fault, seq, expected) in cases {
            let event = alive_with(seq, now, fault);
            let (next, t) = transition(&previous, &event, None);
            let got: Vec<_> = t
                .iter()
                .map(|t| match &t.change {
                    Change::ProviderFaultBegan { class, since, .. }
                    | Change::ProviderFaultCleared { class, since, .. } => {
                        (t.kind(), *class, *since)
                    }
                    other => panic!("not a provider fault: {other:?}"),
                })
                .collect();
            let expected: Vec<_> = expected
                .into_iter()
                .map(|(k, c, s)| (k, c, ts(s)))
                .collect();
            assert_eq!(got, expected, "{previous:?} then {fault:?}");
            if let Some(t) = t.first() {
                assert_eq!(t.at, ts(now));
                assert_eq!(
                    t.provider(),
                    Some(&ModuleId::parse("postgres@db-1").unwrap())
                );
                assert_eq!(t.place.map(|p| p.seq), Some(seq));
            }
            if t.is_empty() && previous.newest() >= Some((1, seq)) {
                assert_eq!(next, previous);
            }
        }
    }

    #[test]
    fn an_alive_after_a_silence_with_a_new_fault_is_heard_again_then_the_fault_begins() {
        let before = Previous::Alive {
            newest: (1, 5),
            heard_at: ts("2026-11-27T00:00:00Z"),
            every: Duration::from_secs(60),
            fault: None,
        };
        let event = alive_with(
            10,
            "2026-11-27T00:10:00Z",
            Some((Class::Unreachable, "2026-11-27T00:09:00Z")),
        );
        let (_, t) = transition(&before, &event, None);
        let kinds: Vec<_> = t.iter().map(Transition::kind).collect();
        assert_eq!(
            kinds,
            [
                TransitionKind::HeardAgain,
                TransitionKind::ProviderFaultBegan
            ]
        );
        // Walked: the standing after it holds the fault, so the next alive
        // that carries none clears it.
        let provider = ModuleId::parse("postgres@db-1").unwrap();
        let mut walk = Transitions::new(
            HashMap::from([(PreviousKey::Alive(provider), before)]),
            None,
        );
        let rows = walk.walk(&[
            event.clone(),
            alive_with(11, "2026-11-27T00:10:05Z", None),
            alive_with(12, "2026-11-27T00:10:06Z", None),
        ]);
        let kinds: Vec<_> = rows.iter().map(Transition::kind).collect();
        assert_eq!(
            kinds,
            [
                TransitionKind::HeardAgain,
                TransitionKind::ProviderFaultBegan,
                TransitionKind::ProviderFaultCleared
            ]
        );
        assert_eq!(since(&rows[2]), Some(ts("2026-11-27T00:09:00Z")));
    }

    #[test]
    fn a_walk_keeps_the_first_since_across_a_restart_and_counts_no_repeat() {
        let x = "2026-11-27T00:12:00Z";
        let y = "2026-11-27T09:00:00Z";
        let mut walk = Transitions::default();
        let events = [
            failing(1, x),
            failing(2, x),
            // The provider restarted: its since is reset.
            failing(3, y),
            recovered(4),
            recovered(5),
            failing(6, y),
            grant(7, "unreachable"),
            grant(8, "unchecked"),
            grant(9, "reachable"),
        ];
        let ts_of = walk.walk(&events[..3]);
        assert_eq!(ts_of.len(), 1);
        assert_eq!(since(&ts_of[0]), Some(ts(x)));
        let wiki = ModuleId::parse("postgres@db-1").unwrap();
        assert_eq!(
            walk.failing_since(&wiki, &Name::parse("wiki").unwrap()),
            Some(ts(x))
        );
        let rest = walk.walk(&events[3..]);
        let kinds: Vec<_> = rest.iter().map(Transition::kind).collect();
        assert_eq!(
            kinds,
            [
                TransitionKind::Recovered,
                TransitionKind::FailingBegan,
                TransitionKind::GrantUnreachable,
                TransitionKind::GrantReachable
            ]
        );
        // The recovered interval says its first since.
        assert_eq!(since(&rest[0]), Some(ts(x)));
        assert_eq!(
            walk.failing_since(&wiki, &Name::parse("wiki").unwrap()),
            Some(ts(y))
        );
        // A redelivered round changes nothing.
        assert!(walk.walk(&events).is_empty());
    }

    #[test]
    fn following_again_table() {
        let now = ts("2026-11-27T01:00:00Z");
        let bound = Duration::from_secs(6);
        let cases = [
            (None, None),
            (Some("2026-11-27T00:59:55Z"), None),
            (Some("2026-11-27T00:59:54Z"), None),
            (Some("2026-11-27T00:59:53Z"), Some("2026-11-27T00:59:53Z")),
            (Some("2026-11-27T00:00:00Z"), Some("2026-11-27T00:00:00Z")),
            (Some("2026-11-27T02:00:00Z"), None),
        ];
        for (last, since) in cases {
            let t = following_again(last.map(ts), now, bound);
            assert_eq!(t.as_ref().and_then(self::since), since.map(ts), "{last:?}");
            if let Some(t) = t {
                assert_eq!((t.kind(), t.at), (TransitionKind::FollowingAgain, now));
            }
        }
    }

    #[test]
    fn a_provider_is_unheard_in_history_only_for_silence_while_the_controller_followed() {
        // Its alive before was heard at 00:00:00, every 60 s: unheard after 00:03:00.
        let before = Previous::Alive {
            newest: (1, 5),
            heard_at: ts("2026-11-27T00:00:00Z"),
            every: Duration::from_secs(60),
            fault: None,
        };
        // (when the controller's run of following began, heard again at,
        // the unheard interval's beginning)
        let cases = [
            // Unknown run, or one begun before the alive: as before.
            (None, "2026-11-27T00:03:00Z", None),
            (None, "2026-11-27T00:03:01Z", Some("2026-11-27T00:03:00Z")),
            (
                Some("2026-11-26T00:00:00Z"),
                "2026-11-27T00:09:00Z",
                Some("2026-11-27T00:03:00Z"),
            ),
            // The bus or the store was away, or serve stopped, from 00:00:30
            // to 00:06:44: the run began then, 3 alives from it are not over
            // by 00:06:50, so the provider is not to blame.
            (Some("2026-11-27T00:06:44Z"), "2026-11-27T00:06:50Z", None),
            (Some("2026-11-27T00:06:44Z"), "2026-11-27T00:09:44Z", None),
            // Silent for more than 3 alives after the controller came back:
            // unheard from then.
            (
                Some("2026-11-27T00:06:44Z"),
                "2026-11-27T00:09:45Z",
                Some("2026-11-27T00:09:44Z"),
            ),
            // The round is stored before any serve follows again: the run
            // begins with it.
            (Some("2026-11-27T00:06:50Z"), "2026-11-27T00:06:50Z", None),
        ];
        for (following_since, heard, unheard_from) in cases {
            assert_eq!(
                heard_again(&before, ts(heard), following_since.map(ts)),
                unheard_from.map(ts),
                "run since {following_since:?}, heard again at {heard}"
            );
        }
        // Through a walk: a round the run began with blames no one.
        let mut walk = Transitions::new(
            HashMap::from([(
                PreviousKey::Alive(ModuleId::parse("postgres@db-1").unwrap()),
                before,
            )]),
            Some(ts("2026-11-27T00:06:50Z")),
        );
        assert!(walk.walk(&[alive(10, "2026-11-27T00:06:49Z")]).is_empty());
    }

    #[test]
    fn the_run_of_following_a_round_is_stored_in_began_when_a_serve_still_follows_else_now() {
        let now = ts("2026-11-27T01:00:00Z");
        let bound = Duration::from_secs(6);
        let last = |pulled: &str, since: Option<&str>| LastCatchUp {
            pulled_at: ts(pulled),
            following_since: since.map(ts),
            bound,
        };
        let cases = [
            // No serve ever caught up: the run begins now.
            (None, "2026-11-27T01:00:00Z"),
            // One caught up within its bound: its run.
            (
                Some(last("2026-11-27T00:59:55Z", Some("2026-11-27T00:10:00Z"))),
                "2026-11-27T00:10:00Z",
            ),
            (
                Some(last("2026-11-27T00:59:54Z", Some("2026-11-27T00:10:00Z"))),
                "2026-11-27T00:10:00Z",
            ),
            (
                Some(last("2026-11-27T00:59:54Z", None)),
                "2026-11-27T00:59:54Z",
            ),
            // Its last catch-up is older than its bound (the bus or the
            // store away, serve stopped): the catch-up to come begins a run.
            (
                Some(last("2026-11-27T00:59:53Z", Some("2026-11-27T00:10:00Z"))),
                "2026-11-27T01:00:00Z",
            ),
            // A catch-up after the store's now (another clock): still following.
            (
                Some(last("2026-11-27T01:00:01Z", Some("2026-11-27T00:10:00Z"))),
                "2026-11-27T00:10:00Z",
            ),
        ];
        for (last, began) in cases {
            assert_eq!(following_run_began(last, now), ts(began), "{last:?}");
        }
    }

    #[test]
    fn every_kind_reads_back_from_its_word() {
        for kind in TransitionKind::ALL {
            assert_eq!(kind.as_str().parse::<TransitionKind>(), Ok(kind));
        }
        assert!("failing".parse::<TransitionKind>().is_err());
    }
}
