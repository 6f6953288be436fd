//! `why CONSUMER@MACHINE` (pure): one verdict on one consumer, joining its
//! standings, its providers (heard, a fault, a repair open), the controller,
//! its grants, its retirements and refused input, what history says of
//! its last failing interval, and the next step from the runbook.
//!
//! Rule: the verdict is the first that holds of — a standing (its provider
//! says it keeps failing it), a retirement (deleted, retired, retiring), a
//! refused input holding it back, a grant it cannot reach, a provider of it
//! not heard from, a provider of it that cannot work as its administrator,
//! a provider a new store does not fully know yet, an open repair fault of a
//! provider of it — else it is not failing. The controller not following
//! is said beside any verdict: what the store says may be old.

use mesh_protocol::{ModuleId, Name, Timestamp};

use super::history::{EntryKind, HistoryEntry};
use super::{Head, Input, Listed, Problem};

/// What `why` is asked about, and what the store says of it.
#[derive(Clone, Copy, Debug)]
pub struct WhyInput<'a> {
    /// The consumer: its module and machine.
    pub consumer: &'a ModuleId,
    /// What it requires, from which provider, as the declaration says.
    pub requires: &'a [(String, ModuleId)],
    /// The report of its providers and of it.
    pub head: &'a Head,
    /// Its standings.
    pub standings: &'a [Listed],
    /// Its history within the window, in any order.
    pub history: &'a [HistoryEntry],
}

/// What makes the verdict.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WhyVerdict {
    /// A provider says it keeps failing it.
    Failing(Box<Listed>),
    /// A problem of the report that concerns it.
    Problem(Problem),
    /// Nothing concerns it.
    NotFailing,
}

/// One consumer's verdict and what it is joined from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Why {
    /// The consumer.
    pub consumer: ModuleId,
    /// The verdict.
    pub verdict: WhyVerdict,
    /// Every standing of it (the verdict's first).
    pub standings: Vec<Listed>,
    /// Every problem of the report that concerns it, in the list's order.
    pub problems: Vec<Problem>,
    /// Its providers, what it requires of each, and whether each is heard.
    pub providers: Vec<(String, ModuleId, bool)>,
    /// The controller follows the event stream.
    pub following: bool,
    /// Its last failing interval that ended, from history.
    pub last_interval: Option<HistoryEntry>,
}

impl Why {
    /// Nothing concerns it.
    pub fn well(&self) -> bool {
        self.verdict == WhyVerdict::NotFailing
    }

    /// The anchor of the verdict's runbook entry (a standing's: its
    /// class's), none when it is not failing.
    pub fn runbook(&self) -> Option<String> {
        match &self.verdict {
            WhyVerdict::Failing(s) => Some(super::runbook::class_anchor(s.row.said.class)),
            WhyVerdict::Problem(p) => Some(p.runbook()),
            WhyVerdict::NotFailing => None,
        }
    }

    /// The verdict's next step, from its runbook entry.
    pub fn next_step(&self) -> Option<&'static str> {
        super::runbook::entry(&self.runbook()?).map(|e| e.next_step)
    }
}

/// Whether `p` concerns `consumer`, whose providers are `providers`.
fn concerns(p: &Problem, consumer: &ModuleId, providers: &[&ModuleId]) -> bool {
    let on = |c: &Name, m: &Name| *c == consumer.module && *m == consumer.machine;
    match p {
        Problem::ControllerNotFollowing(_) | Problem::DeclarationRefused(_) => false,
        Problem::ConsumersFailing(_) => false,
        Problem::Retirement(r) => on(&r.consumer, &r.consumer_machine),
        Problem::InputRefused(i) => {
            (i.input == Input::Grants || providers.contains(&&i.provider))
                && i.required.contains(consumer)
        }
        Problem::GrantUnreachable(g) => on(&g.consumer, &g.machine),
        Problem::ProviderUnheard(u) => providers.contains(&&u.provider),
        Problem::ProviderFault(f) => providers.contains(&&f.provider),
        Problem::ProviderCatchingUp(c) => providers.contains(&&c.provider),
        Problem::RepairFault(r) => providers.contains(&&r.provider),
    }
}

/// The order of the verdict's precedence (lower first).
fn rank(p: &Problem) -> u8 {
    match p {
        Problem::Retirement(_) => 0,
        Problem::InputRefused(_) => 1,
        Problem::GrantUnreachable(_) => 2,
        Problem::ProviderUnheard(_) => 3,
        Problem::ProviderFault(_) => 4,
        Problem::ProviderCatchingUp(_) => 5,
        Problem::RepairFault(_) => 6,
        Problem::ControllerNotFollowing(_)
        | Problem::ConsumersFailing(_)
        | Problem::DeclarationRefused(_) => 7,
    }
}

/// The verdict on `input.consumer` (see the module's rule).
pub fn why(input: &WhyInput<'_>) -> Why {
    let c = input.consumer;
    let provider_ids: Vec<&ModuleId> = input.requires.iter().map(|(_, p)| p).collect();
    let standings: Vec<Listed> = input
        .standings
        .iter()
        .filter(|s| {
            s.row.said.consumer == c.module
                && s.row.said.consumer_machine.as_ref() == Some(&c.machine)
        })
        .cloned()
        .collect();
    let problems: Vec<Problem> = input
        .head
        .problems
        .iter()
        .filter(|p| concerns(p, c, &provider_ids))
        .cloned()
        .collect();
    let unheard: Vec<&ModuleId> = input.head.unheard().map(|u| &u.provider).collect();
    let providers = input
        .requires
        .iter()
        .map(|(provision, p)| (provision.clone(), p.clone(), !unheard.contains(&p)))
        .collect();
    let verdict = match standings.first() {
        Some(s) => WhyVerdict::Failing(Box::new(s.clone())),
        None => problems
            .iter()
            .min_by_key(|p| rank(p))
            .map_or(WhyVerdict::NotFailing, |p| WhyVerdict::Problem(p.clone())),
    };
    let last_interval = input
        .history
        .iter()
        .filter(|e| e.kind == EntryKind::Failing && e.to.is_some())
        .max_by_key(|e| e.to)
        .cloned();
    Why {
        consumer: c.clone(),
        verdict,
        standings,
        problems,
        providers,
        following: input.head.controller.following,
        last_interval,
    }
}

/// How long ago `at` was, at `now`, in the one short style
/// ([`super::history::duration_text`]); a time ahead is `0 s`.
pub fn ago(at: Timestamp, now: Timestamp) -> String {
    let secs = now
        .system_time()
        .duration_since(at.system_time())
        .map_or(0, |d| d.as_secs());
    super::history::duration_text(secs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::FailingRow;
    use crate::report::{Controller, Faulted, Retired, Unheard};
    use mesh_protocol::event::Failing;
    use mesh_protocol::event::RetirementAction;
    use mesh_protocol::Class;

    fn id(s: &str) -> ModuleId {
        ModuleId::parse(s).unwrap()
    }

    fn ts(s: &str) -> Timestamp {
        Timestamp::parse(s).unwrap()
    }

    fn head(problems: Vec<Problem>) -> Head {
        Head {
            machine: None,
            sentence: String::new(),
            controller: Controller::following_for_tests(),
            problems,
            grants_reachable: 0,
            grants_unchecked: vec![],
        }
    }

    fn standing(consumer: &str, machine: &str) -> Listed {
        Listed {
            row: FailingRow {
                provider: id("postgres@db-1"),
                said: Failing {
                    v: 1,
                    consumer: Name::parse(consumer).unwrap(),
                    consumer_machine: Some(Name::parse(machine).unwrap()),
                    provision: Some("postgres-database".into()),
                    class: Class::CredentialsRejected,
                    error: "password authentication failed".into(),
                    since: ts("2026-10-05T00:04:00Z"),
                    attempts: 3,
                    said_at: ts("2026-10-05T00:09:00Z"),
                },
                first_since: None,
            },
            silent_for_seconds: None,
            recurrence: None,
            acknowledged: None,
        }
    }

    fn unheard(p: &str) -> Problem {
        Problem::ProviderUnheard(Unheard {
            provider: id(p),
            heard_at: None,
            started_at: None,
        })
    }

    fn fault(p: &str) -> Problem {
        Problem::ProviderFault(Faulted {
            provider: id(p),
            class: Class::CredentialsRejected,
            error: "no".into(),
            since: ts("2026-10-05T00:00:00Z"),
            said_at: ts("2026-10-05T00:00:00Z"),
        })
    }

    fn retired(consumer: &str, machine: &str) -> Problem {
        Problem::Retirement(Retired {
            provider: id("postgres@db-1"),
            consumer: Name::parse(consumer).unwrap(),
            consumer_machine: Name::parse(machine).unwrap(),
            action: RetirementAction::Retired,
            detail: String::new(),
            said_at: ts("2026-10-05T00:00:00Z"),
            retire_at: None,
        })
    }

    #[test]
    fn the_verdict_is_the_first_that_holds() {
        let forge = id("forge@app-1");
        let requires = [("postgres-database".to_owned(), id("postgres@db-1"))];
        let run = |problems: Vec<Problem>, standings: &[Listed]| {
            let head = head(problems);
            why(&WhyInput {
                consumer: &forge,
                requires: &requires,
                head: &head,
                standings,
                history: &[],
            })
        };
        // Nothing concerns it: another consumer retired, another provider unheard.
        let w = run(
            vec![unheard("identity@id-1"), retired("wiki", "app-1")],
            &[standing("forge", "app-2")],
        );
        assert!(w.well(), "{w:?}");
        assert_eq!((w.runbook(), w.next_step()), (None, None));
        assert!(w.providers[0].2, "its provider is heard");
        // Its provider unheard, and a fault: unheard first.
        let w = run(vec![unheard("postgres@db-1"), fault("postgres@db-1")], &[]);
        assert_eq!(w.runbook().as_deref(), Some("providers-unheard"));
        assert_eq!(w.problems.len(), 2);
        assert!(!w.providers[0].2);
        // Retired beats its provider's fault.
        let w = run(vec![fault("postgres@db-1"), retired("forge", "app-1")], &[]);
        assert_eq!(w.runbook().as_deref(), Some("consumers-retired"));
        // A standing beats everything; its class's entry is the next step.
        let w = run(
            vec![retired("forge", "app-1")],
            &[standing("forge", "app-1")],
        );
        assert!(matches!(w.verdict, WhyVerdict::Failing(_)));
        assert_eq!(w.runbook().as_deref(), Some("class-credentials-rejected"));
        assert!(w.next_step().is_some_and(|s| !s.is_empty()));
    }

    #[test]
    fn the_last_interval_is_the_newest_that_ended() {
        let entry = |from: &str, to: Option<&str>| HistoryEntry {
            kind: EntryKind::Failing,
            provider_module: Some("postgres".into()),
            provider_machine: Some("db-1".into()),
            consumer: Some("forge".into()),
            consumer_machine: Some("app-1".into()),
            from: Some(ts(from)),
            to: to.map(ts),
            seconds: None,
            class: Some(Class::Unreachable),
            error: None,
            reason: Some("success".into()),
            fault: None,
            detail: None,
            by: None,
            done: None,
            until: None,
        };
        let history = [
            entry("2026-10-01T00:00:00Z", Some("2026-10-01T01:00:00Z")),
            entry("2026-10-03T00:00:00Z", Some("2026-10-03T00:10:00Z")),
            entry("2026-10-04T00:00:00Z", None),
        ];
        let forge = id("forge@app-1");
        let head = head(vec![]);
        let w = why(&WhyInput {
            consumer: &forge,
            requires: &[],
            head: &head,
            standings: &[],
            history: &history,
        });
        assert_eq!(
            w.last_interval.and_then(|e| e.to),
            Some(ts("2026-10-03T00:10:00Z"))
        );
    }

    #[test]
    fn ago_reads_at_a_glance() {
        let now = ts("2026-10-05T00:00:00Z");
        for (at, said) in [
            ("2026-10-05T00:00:00Z", "0 s"),
            ("2026-10-04T23:59:01Z", "59 s"),
            ("2026-10-04T23:58:00Z", "2 min"),
            ("2026-10-04T22:00:00Z", "2 h"),
            ("2026-10-03T00:00:00Z", "2 d"),
            ("2026-10-06T00:00:00Z", "0 s"),
        ] {
            assert_eq!(ago(ts(at), now), said, "{at}");
        }
    }
}
