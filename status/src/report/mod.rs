//! `status` and `node show`: what the store says, seen through the
//! declaration (pure: no I/O).
//!
//! - [`filter`] turns the declaration and the scope into what the store
//!   reads ([`StatusFilter`]).
//! - [`head`] composes what comes before and around the standings from the
//!   store's [`Facts`] ([`Head`]): the one list of [`Problem`]s every
//!   surface is drawn from (see [`problem`]) — whether the controller
//!   follows ([`controller`]), the standings by provider and class, the
//!   providers unheard, the required consumers retired or retiring
//!   ([`retired`]), the providers a new store does not fully know yet
//!   ([`catching_up`]), the providers that cannot work as their
//!   administrator ([`faults`]), the providers whose refused input holds
//!   back a required consumer ([`input`]), the open repair faults, the
//!   unreachable grants ([`grants()`]), the refused declaration entries —
//!   and the sentence made of it ([`sentence()`]).
//! - [`standing`] marks one stored `failing` event silent or not
//!   ([`Listed`]); [`group`] gathers the standings failing for one cause.
//!
//! Rules:
//! - A standing is listed only when its provider is *assigned* where it ran
//!   (the declaration lists that module on that machine).
//! - A provider is *unheard* when it was never heard from, or its newest
//!   `alive` is older than 3 × its `alive_every_seconds`: a provider that is
//!   down says nothing, so silence is never read as health. Only a silence
//!   the controller could have heard counts: up to its last catch-up, so
//!   none that began after the controller's own (see [`controller`]). One
//!   silent past 3 alives to now but not to that catch-up, while the
//!   controller followed throughout, counts as heard (its alive may be on
//!   its way); only one the controller may have missed (it follows again
//!   since after its newest `alive`) is neither ([`Hearing`]).
//! - A provider a new store holds no `alive` of, within 3 × the longest
//!   `alive_every` it knows of its record's beginning, is not fully known
//!   yet, never unheard, once the controller has caught up with the
//!   stream ([`catching_up`]); the sentence then begins `the store is new
//!   since <time>; N providers not fully known yet`.
//! - A controller that follows nothing, any listed standing, unheard
//!   provider, required consumer retired or retiring, provider not fully known yet,
//!   provider fault, required consumer held back by refused input, open repair fault,
//!   unreachable grant or refused declaration entry breaks the all-well sentence.
//! - A standing whose event is older than `silent_after` carries
//!   `silent_for_seconds` (the provider stopped repeating it: it may be gone).

pub mod catching_up;
pub mod controller;
pub mod days;
pub mod faults;
pub mod grants;
pub mod group;
pub mod history;
pub mod input;
pub mod problem;
pub mod retired;
pub mod runbook;
pub mod sentence;
pub mod why;

use std::time::{Duration, UNIX_EPOCH};

use mesh_protocol::event::RetirementAction;
use mesh_protocol::{ModuleId, Timestamp};
use serde::Serialize;

use crate::model::row::provider_members;
use crate::model::{
    AckRow, AliveRow, ControllerRecord, FailingRow, GrantsReadRow, ParsedDeclaration, RepairRow,
    RetiredRow,
};
use crate::store::{Order, StatusFilter};

pub use crate::store::FailingGroup;
pub use catching_up::CatchingUp;
pub use controller::{Controller, Hearing};
pub use faults::Faulted;
pub use grants::{grants, Grants, UncheckedGrant, UnreachableGrant};
pub use history::{Recurrence, Recurrences};
pub use input::{Input, InputRefused};
pub use problem::{Kind, Problem, ProblemEntry};
pub use retired::Retired;
pub use sentence::{sentence, Context};

use grants::count;

/// The default `--silent-after`.
pub const DEFAULT_SILENT_AFTER: Duration = Duration::from_secs(30 * 60);

/// What `status` or `node show` looks at.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Scope {
    /// Everything (`status`).
    All,
    /// Standings whose provider or consumer is on this machine, and repairs
    /// of providers on it (`node show MACHINE`).
    Machine(String),
}

impl Scope {
    fn machine(&self) -> Option<&str> {
        match self {
            Scope::All => None,
            Scope::Machine(m) => Some(m),
        }
    }
}

/// The wall time and the silence threshold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Clock {
    /// Now (tests fix it).
    pub now: Timestamp,
    /// A standing not published again for this long is marked silent.
    pub silent_after: Duration,
}

/// One listed standing: a provider says it keeps failing a consumer. Its
/// JSON is the stored event's fields, then `silent_for_seconds`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Listed {
    /// The stored `failing` event.
    #[serde(flatten)]
    pub row: FailingRow,
    /// Seconds since it was published, when that is at least `silent_after`; else null.
    pub silent_for_seconds: Option<u64>,
    /// It failed before within the recurrence window (absent when not, or
    /// when history was not read).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recurrence: Option<Recurrence>,
    /// A person said it is being worked on, until a time not yet come
    /// (absent when not, or when history was not read). It changes no
    /// verdict.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub acknowledged: Option<AckRow>,
}

/// A provider assigned in scope that is not heard from. Its JSON is the
/// `unheard` entry of `status --json`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Unheard {
    /// The provider, written as `provider_module` and `provider_machine`.
    #[serde(flatten, serialize_with = "provider_members")]
    pub provider: ModuleId,
    /// When its newest `alive` was published; null when never heard from.
    pub heard_at: Option<Timestamp>,
    /// When the process that published it started; null when never heard from.
    pub started_at: Option<Timestamp>,
}

pub use crate::model::row::UNHEARD_AFTER_ALIVES;

/// Everything of the report but its standings (listed one by one apart).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Head {
    /// The machine of `node show`; `None` for `status`.
    pub machine: Option<String>,
    /// The first line: `all well: ...` or `not all well: ...`.
    pub sentence: String,
    /// Whether the controller follows the bus, from its own record.
    pub controller: Controller,
    /// What makes the report not all well, in [`Kind::ALL`] order (but
    /// the consumers retired and deleted together), in order within each
    /// kind: empty when all is well.
    pub problems: Vec<Problem>,
    /// Grants in scope last published `reachable`.
    pub grants_reachable: u64,
    /// Grants in scope last published `unchecked`: counted, never called
    /// broken.
    pub grants_unchecked: Vec<UncheckedGrant>,
}

/// The payloads of one variant of [`Problem`] in a [`Head`]'s list.
macro_rules! problems_of {
    ($($(#[$doc:meta])* $name:ident: $variant:ident => $ty:ty;)*) => {
        impl Head {
            $(
                $(#[$doc])*
                pub fn $name(&self) -> impl Iterator<Item = &$ty> + Clone + '_ {
                    self.problems.iter().filter_map(|p| match p {
                        Problem::$variant(x) => Some(x),
                        _ => None,
                    })
                }
            )*
        }
    };
}

problems_of! {
    /// The providers assigned in scope not heard from, in order.
    unheard: ProviderUnheard => Unheard;
    /// The standings by provider and class, in order.
    failing: ConsumersFailing => FailingGroup;
    /// The required consumers their provider retires, retired or deleted, in order.
    retirements: Retirement => Retired;
    /// The providers a new store does not fully know yet, in order.
    catching_up: ProviderCatchingUp => CatchingUp;
    /// The providers heard from that cannot work as their administrator, in order.
    faults: ProviderFault => Faulted;
    /// What the refused input of providers heard from holds back of the
    /// consumers required in scope: files first, then entries, by provider.
    input_refused: InputRefused => InputRefused;
    /// The open repair faults (the newest repair event of each, not `repaired`).
    repairs: RepairFault => RepairRow;
    /// The grants in scope their consumer cannot reach.
    unreachable_grants: GrantUnreachable => UnreachableGrant;
    /// The declaration entries refused (not checked).
    declaration_errors: DeclarationRefused => String;
}

impl Head {
    /// Nothing makes it not all well.
    pub fn all_well(&self) -> bool {
        sentence::all_well(&self.problems)
    }

    /// How many of `kind` the list counts (a failing group counts each standing).
    pub fn count(&self, kind: Kind) -> u64 {
        self.problems
            .iter()
            .filter(|p| p.kind() == kind)
            .map(Problem::count)
            .sum()
    }

    /// The required consumers retiring (`retiring`), or retired or deleted (otherwise).
    pub fn retired(&self, retiring: bool) -> impl Iterator<Item = &Retired> + '_ {
        self.retirements()
            .filter(move |r| (r.action == RetirementAction::Retiring) == retiring)
    }

    /// Every grant in scope.
    pub fn grants_total(&self) -> u64 {
        self.grants_reachable
            + self.count(Kind::GrantsUnreachable)
            + count(self.grants_unchecked.len())
    }
}

/// What the store's read says beside the standings: what the [`Head`] is
/// made of.
#[derive(Clone, Debug)]
pub struct Facts<'a> {
    /// The standings in scope by provider and class, in order.
    pub failing: Vec<FailingGroup>,
    /// The open repair faults in scope.
    pub repairs: Vec<RepairRow>,
    /// The newest `alive` of each provider heard from.
    pub alive: &'a [AliveRow],
    /// The grants in scope.
    pub grants: Grants,
    /// What each machine's grant agent last said of its grants file.
    pub grants_read: &'a [GrantsReadRow],
    /// What the store says of the controller and of its own record.
    pub record: &'a ControllerRecord,
    /// The required consumers in scope their provider last said it is
    /// retiring, retired or deleted.
    pub retired: &'a [RetiredRow],
}

/// Seconds since `said_at` when at least `silent_after` passed; else `None`.
pub fn silent_for(said_at: Timestamp, clock: &Clock) -> Option<u64> {
    let age = clock
        .now
        .system_time()
        .duration_since(said_at.system_time())
        .ok()?;
    (age >= clock.silent_after).then_some(age.as_secs())
}

/// What the store reads for `scope`: the standings of providers assigned
/// where they ran, in scope; silent when published `silent_after` ago or earlier
/// (the same line [`silent_for`] draws); the retirements of the consumers
/// required in scope; standings in `order`.
pub fn filter(
    declaration: &ParsedDeclaration,
    scope: &Scope,
    clock: &Clock,
    order: Order,
) -> StatusFilter {
    let mut providers: Vec<ModuleId> = declaration
        .declaration
        .modules
        .iter()
        .map(|m| m.id.clone())
        .collect();
    providers.sort_unstable();
    providers.dedup();
    let silent_before = clock
        .now
        .system_time()
        .checked_sub(clock.silent_after)
        .unwrap_or(UNIX_EPOCH);
    StatusFilter {
        providers,
        providers_chosen: false,
        machine: scope.machine().map(str::to_owned),
        silent_before: Timestamp::from_system(silent_before),
        required: retired::required(&declaration.declaration, scope.machine()),
        order,
        consumer: None,
        per_group: None,
    }
}

/// Whether a provider last heard at [`AliveRow::heard_at`], publishing `alive` every
/// `alive_every_seconds`, is heard from at `now` (a time "in the future"
/// counts as heard); and how long ago it was heard.
pub fn heard(alive: &AliveRow, now: Timestamp) -> (bool, Duration) {
    let every = Duration::from_secs(u64::try_from(alive.alive_every_seconds.max(1)).unwrap_or(1));
    let age = now
        .system_time()
        .duration_since(alive.heard_at().system_time())
        .unwrap_or(Duration::ZERO);
    (age <= every * UNHEARD_AFTER_ALIVES, age)
}

/// The report around its standings, from the store's `facts` (see the
/// module's rules); the all-well sentence says how recently the providers
/// were heard from and how many grants were checked reachable.
pub fn head(
    declaration: &ParsedDeclaration,
    scope: &Scope,
    facts: Facts<'_>,
    clock: &Clock,
) -> Head {
    let d = &declaration.declaration;
    let machine = scope.machine();
    let controller = controller::controller(facts.record);
    // In scope: every provider for `status`; for `node show MACHINE` the
    // providers on it and those a module on it requires something from (a
    // provider that is down fails its consumers' machines too).
    let serves_machine = |id: &ModuleId, on: &str| {
        id.machine.as_str() == on
            || d.modules
                .iter()
                .filter(|m| m.id.machine.as_str() == on)
                .any(|m| m.requires.iter().any(|r| &r.from == id))
    };
    let mut providers: Vec<&ModuleId> = d
        .modules
        .iter()
        .filter(|m| d.receives_contributions(&m.id))
        .filter(|m| machine.is_none_or(|on| serves_machine(&m.id, on)))
        .map(|m| &m.id)
        .collect();
    providers.sort_unstable();
    let mut unheard = Vec::new();
    let mut awaiting = 0;
    let mut catching_up = Vec::new();
    let mut faults = Vec::new();
    let mut input_refused = Vec::new();
    let mut heard_within: Option<Duration> = None;
    for provider in &providers {
        let newest = facts.alive.iter().find(|a| a.provider == **provider);
        // A new store that could not have heard it yet: not fully known,
        // never unheard. (Until the controller first caught up, nobody is
        // blamed anyway: it is the controller's silence that is said.)
        if newest.is_none() && controller.pulled_at.is_some() {
            if let Some(not_yet) = catching_up::not_heard_yet(provider, facts.alive, facts.record) {
                catching_up.push(not_yet);
                continue;
            }
        }
        match (controller::hearing(newest, &controller, clock.now), newest) {
            (Hearing::Heard(age), Some(alive)) => {
                // Whole seconds, rounded up: "within the last 1 s", never "0 s".
                let age = Duration::from_secs(age.as_secs() + u64::from(age.subsec_nanos() > 0))
                    .max(Duration::from_secs(1));
                heard_within = Some(heard_within.map_or(age, |w| w.max(age)));
                catching_up.extend(catching_up::catching_up(alive, facts.record, clock));
                faults.extend(faults::faulted(alive));
                input_refused.extend(input::refused(d, machine, alive));
            }
            (Hearing::Missed, _) => awaiting += 1,
            _ => unheard.push(Unheard {
                provider: (*provider).clone(),
                heard_at: newest.map(AliveRow::heard_at),
                started_at: newest.map(|a| a.started_at),
            }),
        }
    }
    let retirements = retired::retired(d, machine, facts.retired)
        .into_iter()
        .filter(|r| retired::current(r, facts.alive));
    let mut problems: Vec<Problem> = Vec::new();
    if let Some(since) = controller.silent_since() {
        problems.push(Problem::ControllerNotFollowing(since));
    }
    problems.extend(facts.failing.into_iter().map(Problem::ConsumersFailing));
    problems.extend(unheard.into_iter().map(Problem::ProviderUnheard));
    // Those retiring first, then those retired or deleted, each in order.
    let (retiring, retired): (Vec<Retired>, Vec<Retired>) = retirements
        .into_iter()
        .partition(|r| r.action == RetirementAction::Retiring);
    problems.extend(retiring.into_iter().chain(retired).map(Problem::Retirement));
    problems.extend(catching_up.into_iter().map(Problem::ProviderCatchingUp));
    problems.extend(faults.into_iter().map(Problem::ProviderFault));
    for row in facts.grants_read {
        input_refused.extend(input::refused_grants(d, machine, row));
    }
    problems.extend(input_refused.into_iter().map(Problem::InputRefused));
    problems.extend(facts.repairs.into_iter().map(Problem::RepairFault));
    let Grants {
        reachable,
        unreachable,
        unchecked,
    } = facts.grants;
    problems.extend(unreachable.into_iter().map(Problem::GrantUnreachable));
    problems.extend(
        declaration
            .refused
            .iter()
            .map(|e| Problem::DeclarationRefused(e.to_string())),
    );
    let context = Context {
        machine,
        providers: providers.len(),
        awaiting,
        heard_within,
        silent_after: clock.silent_after,
        grants_reachable: reachable,
        grants_unchecked: count(unchecked.len()),
        record_begins: facts.record.begun_at,
    };
    Head {
        machine: machine.map(str::to_owned),
        sentence: sentence(&problems, &context),
        controller,
        problems,
        grants_reachable: reachable,
        grants_unchecked: unchecked,
    }
}

/// A stored `failing` event as listed at `clock`.
pub fn standing(row: FailingRow, clock: &Clock) -> Listed {
    Listed {
        silent_for_seconds: silent_for(row.said.said_at, clock),
        row,
        recurrence: None,
        acknowledged: None,
    }
}

/// A stored `failing` event as listed at `clock`, with its recurrence
/// from the history of the standings in scope.
pub fn recurring_standing(row: FailingRow, clock: &Clock, history: &Recurrences) -> Listed {
    let recurrence = history.of(&row.provider, &row.said.consumer);
    let acknowledged = history.acknowledged(
        &row.provider,
        &row.said.consumer,
        row.said.consumer_machine.as_ref(),
    );
    Listed {
        recurrence,
        acknowledged,
        ..standing(row, clock)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::declaration::parse;
    use crate::model::GrantRow;
    use crate::model::RetiredRow;
    use mesh_protocol::event::GrantState;
    use mesh_protocol::Name;

    fn ts(s: &str) -> Timestamp {
        Timestamp::parse(s).unwrap()
    }

    fn declaration() -> ParsedDeclaration {
        parse(
            r#"{"modules":[
              {"module":"postgres","machine":"db-1","provides":["postgres-database"]},
              {"module":"identity","machine":"id-1","provides":["oidc-client"]},
              {"module":"forge","machine":"app-1","requires":[
                {"provision":"postgres-database","from":"postgres@db-1"}]}
            ]}"#,
        )
        .unwrap()
    }

    /// A controller that caught up at `now`.
    fn following(now: Timestamp) -> ControllerRecord {
        ControllerRecord {
            now,
            begun_at: None,
            stream_since: None,
            instances: vec![crate::model::InstanceRow {
                instance: crate::model::Instance {
                    host: "ctl-1".into(),
                    pid: 4242,
                    started_at: ts("2026-10-01T00:00:00Z"),
                    pull_wait: Duration::from_secs(2),
                },
                pulled_at: Some(now),
                applied_at: Some(now),
                following_since: Some(ts("2026-10-01T00:00:00Z")),
            }],
        }
    }

    /// [`head`] of these facts, the controller following, nothing retired.
    fn head_of(
        declaration: &ParsedDeclaration,
        scope: &Scope,
        failing: Vec<FailingGroup>,
        repairs: Vec<RepairRow>,
        alive: &[AliveRow],
        grants: Grants,
        clock: &Clock,
    ) -> Head {
        let record = following(clock.now);
        let facts = Facts {
            failing,
            repairs,
            alive,
            grants,
            grants_read: &[],
            record: &record,
            retired: &[],
        };
        head(declaration, scope, facts, clock)
    }

    fn clock(now: &str) -> Clock {
        Clock {
            now: ts(now),
            silent_after: DEFAULT_SILENT_AFTER,
        }
    }

    #[test]
    fn silence_table() {
        let said = ts("2026-10-05T00:00:00Z");
        let cases = [
            ("2026-10-05T00:00:00Z", None),
            ("2026-10-05T00:29:59Z", None),
            ("2026-10-05T00:30:00Z", Some(1800)),
            ("2026-10-05T01:00:00Z", Some(3600)),
            ("2026-10-04T23:00:00Z", None),
        ];
        for (now, expected) in cases {
            let c = clock(now);
            assert_eq!(silent_for(said, &c), expected, "{now}");
            // The store's line is the same one.
            let line = filter(&declaration(), &Scope::All, &c, Order::Key).silent_before;
            assert_eq!(said <= line, expected.is_some(), "{now}");
        }
    }

    #[test]
    fn filter_names_every_declared_module_once_and_the_scope() {
        let c = clock("2026-10-05T00:10:00Z");
        let all = filter(&declaration(), &Scope::All, &c, Order::Key);
        let providers: Vec<String> = all.providers.iter().map(ToString::to_string).collect();
        assert_eq!(providers, ["forge@app-1", "identity@id-1", "postgres@db-1"]);
        assert_eq!(all.machine, None);
        assert_eq!(all.silent_before, ts("2026-10-04T23:40:00Z"));
        let node = filter(
            &declaration(),
            &Scope::Machine("db-1".into()),
            &c,
            Order::Key,
        );
        assert_eq!(node.machine.as_deref(), Some("db-1"));
    }

    fn alive(module: &str, machine: &str, said_at: &str, every: i64) -> AliveRow {
        AliveRow {
            provider: ModuleId::parse(&format!("{module}@{machine}")).unwrap(),
            started_at: ts("2026-10-05T00:00:00Z"),
            alive_every_seconds: every,
            settled_at: None,
            repeat_every_seconds: Some(900),
            said_at: ts(said_at),
            stored_at: None,
            fault: None,
            contributions: None,
        }
    }

    #[test]
    fn heard_is_judged_by_when_the_stream_stored_the_alive() {
        let now = ts("2026-10-05T00:10:00Z");
        // (provider's said_at, stream's stored_at, heard)
        let cases = [
            // No stored time (an older row): the provider's clock.
            ("2026-10-05T00:09:00Z", None, true),
            ("2026-10-05T00:06:59Z", None, false),
            // A clock an hour behind: its alive stored a minute ago is heard.
            ("2026-10-04T23:09:00Z", Some("2026-10-05T00:09:00Z"), true),
            // A clock an hour ahead: stored 4 minutes ago, it is not heard.
            ("2026-10-05T01:06:00Z", Some("2026-10-05T00:06:00Z"), false),
            ("2026-10-05T00:09:59Z", Some("2026-10-05T00:09:59Z"), true),
        ];
        for (said, stored, expected) in cases {
            let mut a = alive("postgres", "db-1", said, 60);
            a.stored_at = stored.map(ts);
            assert_eq!(heard(&a, now).0, expected, "{said} {stored:?}");
        }
    }

    /// Both providers of the declaration heard from 30 s before `c.now`.
    fn alive_now(c: &Clock) -> Vec<AliveRow> {
        let said = Timestamp::from_system(c.now.system_time() - Duration::from_secs(30));
        ["postgres@db-1", "identity@id-1"]
            .iter()
            .map(|p| {
                let (module, machine) = p.split_once('@').unwrap();
                let mut a = alive(module, machine, "2026-10-05T00:00:00Z", 60);
                a.said_at = said;
                a
            })
            .collect()
    }

    #[test]
    fn refused_input_breaks_all_well_at_once_only_for_a_required_consumer_of_a_heard_provider() {
        use mesh_protocol::event::{ContributionsRead, RefusedContribution};
        let c = clock("2026-10-05T00:10:00Z");
        let entry = |consumer: &str| RefusedContribution {
            index: 2,
            consumer: Some(mesh_protocol::Name::parse(consumer).unwrap()),
            reason: "provision: it is empty".into(),
        };
        let unreadable = ContributionsRead {
            readable: false,
            problem: Some("contributions file /c.json is malformed: EOF".into()),
            ..ContributionsRead::good()
        };
        // (provider, what its alive says, scope, sentence)
        let cases = [
            (0, ContributionsRead::good(), Scope::All, None),
            // forge requires from postgres@db-1, not from identity@id-1.
            (
                1,
                ContributionsRead {
                    refused: vec![entry("forge")],
                    ..ContributionsRead::good()
                },
                Scope::All,
                None,
            ),
            (
                0,
                ContributionsRead {
                    refused: vec![entry("wiki")],
                    ..ContributionsRead::good()
                },
                Scope::All,
                None,
            ),
            (
                0,
                ContributionsRead {
                    refused: vec![entry("forge")],
                    ..ContributionsRead::good()
                },
                Scope::All,
                Some("not all well: 0 consumers failing, 1 provider's input refused"),
            ),
            (
                0,
                unreadable.clone(),
                Scope::All,
                Some("not all well: 0 consumers failing, 1 provider's input refused"),
            ),
            (
                0,
                unreadable.clone(),
                Scope::Machine("app-1".into()),
                Some("not all well: 0 consumers failing on app-1, 1 provider's input refused"),
            ),
            // identity@id-1 serves no one the declaration names.
            (1, unreadable, Scope::All, None),
        ];
        for (i, (provider, said, scope, sentence)) in cases.into_iter().enumerate() {
            let mut heard = alive_now(&c);
            heard[provider].contributions = Some(said);
            let head = head_of(
                &declaration(),
                &scope,
                Vec::new(),
                vec![],
                &heard,
                Grants::default(),
                &c,
            );
            assert_eq!(
                head.all_well(),
                sentence.is_none(),
                "case {i}: {}",
                head.sentence
            );
            if let Some(sentence) = sentence {
                assert_eq!(head.sentence, sentence, "case {i}");
                assert_eq!(head.input_refused().count(), 1, "case {i}");
            }
        }
    }

    #[test]
    fn a_provider_fault_breaks_all_well_at_once_and_only_a_heard_provider_is_named() {
        let c = clock("2026-10-05T00:10:00Z");
        let refused = mesh_protocol::event::ProviderFault {
            class: mesh_protocol::Class::CredentialsRejected,
            error: "password authentication failed for user \"mesh_admin\"".into(),
            since: ts("2026-10-05T00:04:00Z"),
        };
        let mut heard = alive_now(&c);
        heard[0].fault = Some(refused.clone());
        let head = head_of(
            &declaration(),
            &Scope::All,
            Vec::new(),
            vec![],
            &heard,
            Grants::default(),
            &c,
        );
        assert!(!head.all_well());
        assert_eq!(
            head.sentence,
            "not all well: 0 consumers failing, 1 provider cannot work as its administrator"
        );
        let named: Vec<String> = head.faults().map(|f| f.provider.to_string()).collect();
        assert_eq!(named, ["postgres@db-1"]);
        assert_eq!(head.faults().next().unwrap().since, refused.since);
        // Unheard: its line says that; the old fault is not named.
        let mut old = alive("postgres", "db-1", "2026-10-05T00:01:00Z", 60);
        old.fault = Some(refused);
        let head = head_of(
            &declaration(),
            &Scope::All,
            Vec::new(),
            vec![],
            &[old, alive_now(&c).remove(1)],
            Grants::default(),
            &c,
        );
        assert!(head.faults().next().is_none());
        assert_eq!(
            head.sentence,
            "not all well: 0 consumers failing, 1 provider not heard from"
        );
    }

    #[test]
    fn unheard_table() {
        let c = clock("2026-10-05T00:10:00Z");
        // (alive events, scope, unheard providers, sentence)
        let cases: Vec<(Vec<AliveRow>, Scope, Vec<&str>, &str)> = vec![
            (
                vec![],
                Scope::All,
                vec!["identity@id-1 never", "postgres@db-1 never"],
                "not all well: 0 consumers failing, 2 providers not heard from",
            ),
            (
                vec![
                    alive("postgres", "db-1", "2026-10-05T00:07:00Z", 60),
                    alive("identity", "id-1", "2026-10-05T00:06:59Z", 60),
                ],
                Scope::All,
                vec!["identity@id-1 2026-10-05T00:06:59Z"],
                "not all well: 0 consumers failing, 1 provider not heard from",
            ),
            (
                vec![
                    alive("postgres", "db-1", "2026-10-05T00:07:00Z", 60),
                    alive("identity", "id-1", "2026-10-05T00:09:59Z", 60),
                    // Not assigned: not looked at.
                    alive("ghost", "db-1", "2026-10-04T00:00:00Z", 60),
                ],
                Scope::All,
                vec![],
                "all well: none of the 2 providers assigned in the declaration says it keeps \
                 failing a consumer (all 2 were heard from within the last 3 min), and no repair \
                 fault is open; this does not prove that a consumer can reach its provider",
            ),
            (
                // A clock ahead: heard. A slow alive_every: heard.
                vec![
                    alive("postgres", "db-1", "2026-10-05T01:00:00Z", 60),
                    alive("identity", "id-1", "2026-10-05T00:00:00Z", 300),
                ],
                Scope::All,
                vec![],
                "all well: none of the 2 providers assigned in the declaration says it keeps \
                 failing a consumer (all 2 were heard from within the last 10 min), and no repair \
                 fault is open; this does not prove that a consumer can reach its provider",
            ),
            (
                // forge on app-1 requires from postgres@db-1: a provider
                // that is down fails app-1 too.
                vec![],
                Scope::Machine("app-1".into()),
                vec!["postgres@db-1 never"],
                "not all well: 0 consumers failing on app-1, 1 provider not heard from",
            ),
            (
                vec![alive("postgres", "db-1", "2026-10-05T00:09:59Z", 60)],
                Scope::Machine("app-1".into()),
                vec![],
                "all well: no provider says it keeps failing a consumer whose provider or \
                 consumer is on app-1 (1 provider on it or serving it, it was heard from within \
                 the last 1 s), and no repair fault is open there; this does not prove that a \
                 consumer can reach its provider",
            ),
            (
                vec![],
                Scope::Machine("app-9".into()),
                vec![],
                "all well: no provider says it keeps failing a consumer whose provider or \
                 consumer is on app-9 (0 providers on it or serving it), and no repair fault is \
                 open there; this does not prove that a consumer can reach its provider",
            ),
            (
                vec![],
                Scope::Machine("db-1".into()),
                vec!["postgres@db-1 never"],
                "not all well: 0 consumers failing on db-1, 1 provider not heard from",
            ),
        ];
        for (alive, scope, unheard, sentence) in cases {
            let head = head_of(
                &declaration(),
                &scope,
                Vec::new(),
                vec![],
                &alive,
                Grants::default(),
                &c,
            );
            let listed: Vec<String> = head
                .unheard()
                .map(|u| {
                    format!(
                        "{} {}",
                        u.provider,
                        u.heard_at.map_or("never".to_owned(), |t| t.to_string())
                    )
                })
                .collect();
            assert_eq!(listed, unheard, "{scope:?}");
            assert_eq!(head.sentence, sentence, "{scope:?}");
            assert_eq!(head.all_well(), unheard.is_empty(), "{scope:?}");
        }
    }

    /// The controller follows again since a minute: a provider last heard
    /// 4 minutes ago is not called unheard (it had no 3 alives to be
    /// heard), and the sentence does not say all were heard.
    #[test]
    fn a_provider_the_controller_may_have_missed_is_not_said_heard() {
        let c = clock("2026-10-05T00:10:00Z");
        let mut record = following(c.now);
        record.instances[0].following_since = Some(ts("2026-10-05T00:09:00Z"));
        let alive = [
            alive("postgres", "db-1", "2026-10-05T00:09:50Z", 60),
            alive("identity", "id-1", "2026-10-05T00:06:00Z", 60),
        ];
        let facts = Facts {
            failing: Vec::new(),
            repairs: vec![],
            alive: &alive,
            grants: Grants::default(),
            grants_read: &[],
            record: &record,
            retired: &[],
        };
        let head = head(&declaration(), &Scope::All, facts, &c);
        assert!(
            head.unheard().next().is_none(),
            "{:?}",
            head.unheard().collect::<Vec<_>>()
        );
        assert!(head.all_well());
        assert_eq!(
            head.sentence,
            "all well: none of the 2 providers assigned in the declaration says it keeps failing \
             a consumer (1 of the 2 heard from within the last 10 s, 1 provider not heard from \
             since the controller follows again), and no repair fault is open; this does not \
             prove that a consumer can reach its provider"
        );
    }

    /// The controller followed throughout; a provider's third `alive` is
    /// due, and its last catch-up (2 s ago) heard it within 3 alives: the
    /// alive may be on its way, so it counts as heard (its age said), never
    /// as "not heard from since the controller follows again" (issue 31).
    #[test]
    fn a_provider_silent_past_3_alives_while_the_controller_followed_is_not_said_awaited() {
        let c = clock("2026-10-05T00:10:02Z");
        let mut record = following(c.now);
        record.instances[0].pulled_at = Some(ts("2026-10-05T00:10:00Z"));
        let alive = [
            alive("postgres", "db-1", "2026-10-05T00:09:50Z", 60),
            alive("identity", "id-1", "2026-10-05T00:07:01Z", 60),
        ];
        let facts = Facts {
            failing: Vec::new(),
            repairs: vec![],
            alive: &alive,
            grants: Grants::default(),
            grants_read: &[],
            record: &record,
            retired: &[],
        };
        let head = head(&declaration(), &Scope::All, facts, &c);
        assert!(
            head.unheard().next().is_none(),
            "{:?}",
            head.unheard().collect::<Vec<_>>()
        );
        assert_eq!(
            head.sentence,
            "all well: none of the 2 providers assigned in the declaration says it keeps failing \
             a consumer (all 2 were heard from within the last 3 min 1 s), and no repair fault is \
             open; this does not prove that a consumer can reach its provider"
        );
    }

    /// A store made anew (its record began at 00:10:00) has heard no
    /// provider yet: within 3 × the longest `alive_every` it knows (the
    /// SDK's default, a minute, when it heard none) of its record's
    /// beginning, a provider it has no `alive` of is not fully known yet,
    /// never unheard; the sentence says the store is new first. Past that
    /// window, one still silent is unheard (issue 31).
    #[test]
    fn a_new_store_calls_no_provider_unheard_before_it_could_have_heard_it() {
        let begun = ts("2026-10-05T00:10:00Z");
        let record = |now: &str| {
            let mut record = following(ts(now));
            record.begun_at = Some(begun);
            record
        };
        let heard_late = |said: &str| {
            let mut a = alive("postgres", "db-1", said, 1);
            // Started after the record began: known whole.
            a.started_at = ts("2026-10-05T00:10:01Z");
            a
        };
        // (now, alive rows, sentence, unheard)
        let cases: Vec<(&str, Vec<AliveRow>, &str, Vec<&str>)> = vec![
            (
                "2026-10-05T00:10:20Z",
                vec![],
                "not all well: the store is new since 2026-10-05T00:10:00Z; 2 providers not \
                 fully known yet, 0 consumers failing",
                vec![],
            ),
            (
                "2026-10-05T00:12:59Z",
                vec![],
                "not all well: the store is new since 2026-10-05T00:10:00Z; 2 providers not \
                 fully known yet, 0 consumers failing",
                vec![],
            ),
            // Three minutes of silence: unheard.
            (
                "2026-10-05T00:13:01Z",
                vec![],
                "not all well: 0 consumers failing, 2 providers not heard from",
                vec!["identity@id-1", "postgres@db-1"],
            ),
            // One heard, alive every second: the other is unheard 3 s
            // after the record began.
            (
                "2026-10-05T00:10:02Z",
                vec![heard_late("2026-10-05T00:10:02Z")],
                "not all well: the store is new since 2026-10-05T00:10:00Z; 1 provider not \
                 fully known yet, 0 consumers failing",
                vec![],
            ),
            (
                "2026-10-05T00:10:04Z",
                vec![heard_late("2026-10-05T00:10:04Z")],
                "not all well: 0 consumers failing, 1 provider not heard from",
                vec!["identity@id-1"],
            ),
        ];
        for (now, alive, sentence, unheard) in cases {
            let c = clock(now);
            let record = record(now);
            let facts = Facts {
                failing: Vec::new(),
                repairs: vec![],
                alive: &alive,
                grants: Grants::default(),
                grants_read: &[],
                record: &record,
                retired: &[],
            };
            let head = head(&declaration(), &Scope::All, facts, &c);
            let named: Vec<String> = head.unheard().map(|u| u.provider.to_string()).collect();
            assert_eq!(named, unheard, "{now}");
            assert_eq!(head.sentence, sentence, "{now}");
            assert!(!head.all_well(), "{now}");
        }
        // Until the controller first caught up, its silence is what is
        // said: a store just migrated is not called new for the providers.
        let mut never = record("2026-10-05T00:10:20Z");
        never.instances.clear();
        let facts = Facts {
            failing: Vec::new(),
            repairs: vec![],
            alive: &[],
            grants: Grants::default(),
            grants_read: &[],
            record: &never,
            retired: &[],
        };
        let head = head(
            &declaration(),
            &Scope::All,
            facts,
            &clock("2026-10-05T00:10:20Z"),
        );
        assert_eq!(
            (
                head.sentence.as_str(),
                head.unheard().count(),
                head.catching_up().count()
            ),
            (
                "not all well: the controller has never followed events (is mesh-controller \
                 serve running and on the bus?), 0 consumers failing",
                0,
                0
            )
        );
    }

    /// A required consumer its provider counts down to retire is named at
    /// once, apart from the retired ones, with when; the countdown ends
    /// with the process that said it (a restart says it again if it runs).
    #[test]
    fn retiring_and_retired_table() {
        let c = clock("2026-10-05T00:10:00Z");
        let row = |action: RetirementAction, said: &str| RetiredRow {
            provider: ModuleId::parse("postgres@db-1").unwrap(),
            consumer: Name::parse("forge").unwrap(),
            action,
            detail: "withdrawn".into(),
            said_at: ts(said),
            retire_at: (action == RetirementAction::Retiring).then(|| ts("2026-10-05T00:19:00Z")),
        };
        // (newest event, provider started, sentence, retiring, retired)
        let cases = [
            (
                row(RetirementAction::Retiring, "2026-10-05T00:09:00Z"),
                "2026-10-05T00:00:00Z",
                "not all well: 0 consumers failing, 1 required consumer retiring",
                1,
                0,
            ),
            (
                row(RetirementAction::Retiring, "2026-10-05T00:09:00Z"),
                "2026-10-05T00:09:30Z",
                "all well: none of the 2 providers",
                0,
                0,
            ),
            (
                row(RetirementAction::Retired, "2026-10-05T00:09:00Z"),
                "2026-10-05T00:09:30Z",
                "not all well: 0 consumers failing, 1 required consumer retired",
                0,
                1,
            ),
        ];
        for (event, started, sentence, retiring, retired) in cases {
            let mut alive = alive_now(&c);
            alive.iter_mut().for_each(|a| a.started_at = ts(started));
            let record = following(c.now);
            let rows = [event.clone()];
            let facts = Facts {
                failing: Vec::new(),
                repairs: vec![],
                alive: &alive,
                grants: Grants::default(),
                grants_read: &[],
                record: &record,
                retired: &rows,
            };
            let head = head(&declaration(), &Scope::All, facts, &c);
            assert!(head.sentence.starts_with(sentence), "{}", head.sentence);
            assert_eq!(head.all_well(), retiring + retired == 0, "{event:?}");
            assert_eq!(head.retired(true).count(), retiring, "{event:?}");
            assert_eq!(head.retired(false).count(), retired, "{event:?}");
            if let Some(r) = head.retired(true).next() {
                assert_eq!(r.retire_at, Some(ts("2026-10-05T00:19:00Z")));
            };
        }
    }

    fn grant_row(state: &str, consumer: &str) -> GrantRow {
        let state: GrantState = state.parse().unwrap();
        GrantRow {
            machine: Name::parse("app-1").unwrap(),
            consumer: Name::parse(consumer).unwrap(),
            provision: "postgres-database".into(),
            from: "postgres@db-1".into(),
            state,
            address: Some("10.10.0.1".into()),
            port: Some(6852),
            failures: (state == GrantState::Unreachable).then_some(4),
            failing_since: Some(ts("2026-10-05T00:04:00Z")),
            last_reachable_at: None,
            error: Some("connect timed out after 3s".into()),
            reason: Some("consumer not running".into()),
            said_at: ts("2026-10-05T00:09:00Z"),
        }
    }

    #[test]
    fn grants_table() {
        let c = clock("2026-10-05T00:10:00Z");
        let tail = "and no repair fault is open";
        // (grant kinds in scope, all well, sentence ends with)
        let cases: Vec<(Vec<&str>, bool, &str)> =
            vec![
            (vec![], true, "; this does not prove that a consumer can reach its provider"),
            (
                vec!["reachable", "reachable"],
                true,
                "; 2 of 2 grants checked reachable from their consumers' own network positions",
            ),
            (
                vec!["reachable", "unchecked"],
                true,
                "; 1 of 2 grants checked reachable from their consumers' own network positions \
                 (1 unchecked); this does not prove that a consumer can reach its provider",
            ),
            (
                vec!["unchecked"],
                true,
                "; 0 of 1 grant checked reachable from their consumers' own network positions \
                 (1 unchecked); this does not prove that a consumer can reach its provider",
            ),
            (
                vec!["reachable", "unreachable", "unchecked"],
                false,
                "not all well: 0 consumers failing, 1 grant unreachable (1 unchecked)",
            ),
        ];
        for (kinds, all_well, ends) in cases {
            let rows = kinds
                .iter()
                .enumerate()
                .map(|(i, k)| grant_row(k, &format!("c{i}")))
                .collect();
            let head = head_of(
                &declaration(),
                &Scope::All,
                Vec::new(),
                vec![],
                &alive_now(&c),
                grants(rows),
                &c,
            );
            assert_eq!(head.all_well(), all_well, "{kinds:?}");
            assert!(
                head.sentence.ends_with(ends),
                "{kinds:?}: {}",
                head.sentence
            );
            if all_well {
                assert!(head.sentence.contains(tail), "{}", head.sentence);
            }
            assert_eq!(head.grants_total(), kinds.len() as u64);
        }
    }

    #[test]
    fn head_table() {
        let c = clock("2026-10-05T00:10:00Z");
        let repair = RepairRow {
            provider: ModuleId::parse("identity@id-1").unwrap(),
            fault: Name::parse("admin-refused").unwrap(),
            outcome: mesh_protocol::event::RepairOutcome::Failed,
            detail: "could not log in".into(),
            next_attempt_at: None,
            said_at: ts("2026-10-05T00:09:00Z"),
            repaired: None,
        };
        // (scope, counts, repairs, all well, sentence starts with)
        let cases = [
            (
                Scope::All,
                (0, 0),
                0,
                true,
                "all well: none of the 2 providers",
            ),
            (
                Scope::Machine("db-1".into()),
                (0, 0),
                0,
                true,
                "all well: no provider says it keeps failing a consumer whose provider or \
                 consumer is on db-1 (1 provider on it or serving it, it was heard from within \
                 the last 30 s)",
            ),
            (
                Scope::All,
                (2, 1),
                1,
                false,
                "not all well: 2 consumers failing (1 not said",
            ),
            (
                Scope::All,
                (0, 0),
                1,
                false,
                "not all well: 0 consumers failing, 1 repair fault open",
            ),
        ];
        for (scope, (standings, silent), repairs, all_well, starts) in cases {
            let failing = (standings > 0)
                .then(|| FailingGroup {
                    provider: ModuleId::parse("postgres@db-1").unwrap(),
                    class: mesh_protocol::Class::Unreachable,
                    standings,
                    silent,
                })
                .into_iter()
                .collect();
            let head = head_of(
                &declaration(),
                &scope,
                failing,
                vec![repair.clone(); repairs],
                &alive_now(&c),
                Grants::default(),
                &c,
            );
            assert_eq!(head.all_well(), all_well, "{scope:?}");
            assert!(head.sentence.starts_with(starts), "{}", head.sentence);
            assert_eq!(head.machine.as_deref(), scope.machine());
        }
        let refused = parse(r#"{"modules":[{"module":"Bad","machine":"m"}]}"#).unwrap();
        let head = head_of(
            &refused,
            &Scope::All,
            Vec::new(),
            vec![],
            &[],
            Grants::default(),
            &c,
        );
        assert!(!head.all_well());
        assert_eq!(
            head.sentence,
            "not all well: 0 consumers failing, 1 declaration entry refused (not checked)"
        );
        assert_eq!(head.declaration_errors().count(), 1);
    }
}
