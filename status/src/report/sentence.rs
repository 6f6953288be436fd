//! The first line of `status` and `node show` (pure).

use std::time::Duration;

use std::collections::BTreeSet;

use mesh_protocol::event::RetirementAction;
use mesh_protocol::{ModuleId, Timestamp};

use super::history::{duration_text, duration_text_at_least};
use super::input::Input;
use super::problem::Problem;

/// What the sentence says beside the problems: who was looked at and
/// how recently they were heard, for the all-well sentence.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Context<'a> {
    /// The machine of `node show`.
    pub machine: Option<&'a str>,
    /// Providers assigned (in scope).
    pub providers: usize,
    /// Of which not heard from recently, but not called unheard: their
    /// silence is not yet 3 `alive`s long while the controller followed
    /// (it follows again since recently).
    pub awaiting: usize,
    /// How long ago the least recently heard of the others was heard
    /// (`None` when none was heard from).
    pub heard_within: Option<Duration>,
    /// The silence threshold.
    pub silent_after: Duration,
    /// Grants in scope last published `reachable`.
    pub grants_reachable: u64,
    /// Grants in scope last published `unchecked`.
    pub grants_unchecked: u64,
    /// When the store's record begins (a new store).
    pub record_begins: Option<Timestamp>,
}

/// How many of each kind the list holds: what the not-all-well sentence
/// counts (a view of the list, made here and nowhere kept).
#[derive(Default)]
struct Counted {
    failing: u64,
    silent: u64,
    controller_silent: Option<Option<Timestamp>>,
    unheard: u64,
    retiring: u64,
    retired: u64,
    deleted: u64,
    catching_up: u64,
    faults: u64,
    /// The providers whose contributions are refused.
    input_refused: BTreeSet<ModuleId>,
    /// The machines whose grants file (or an entry of it) is refused.
    grants_refused: BTreeSet<ModuleId>,
    repairs: u64,
    grants_unreachable: u64,
    refused: u64,
}

impl Counted {
    fn of(problems: &[Problem]) -> Self {
        let mut c = Counted::default();
        for p in problems {
            match p {
                Problem::ControllerNotFollowing(since) => c.controller_silent = Some(*since),
                Problem::ConsumersFailing(g) => {
                    c.failing += g.standings;
                    c.silent += g.silent;
                }
                Problem::ProviderUnheard(_) => c.unheard += 1,
                Problem::Retirement(r) => match r.action {
                    RetirementAction::Retiring => c.retiring += 1,
                    RetirementAction::Deleted => c.deleted += 1,
                    _ => c.retired += 1,
                },
                Problem::ProviderCatchingUp(_) => c.catching_up += 1,
                Problem::ProviderFault(_) => c.faults += 1,
                Problem::InputRefused(i) => {
                    match i.input {
                        Input::Contributions => &mut c.input_refused,
                        Input::Grants => &mut c.grants_refused,
                    }
                    .insert(i.provider.clone());
                }
                Problem::RepairFault(_) => c.repairs += 1,
                Problem::GrantUnreachable(_) => c.grants_unreachable += 1,
                Problem::DeclarationRefused(_) => c.refused += 1,
            }
        }
        c
    }
}

fn plural(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

fn count(n: usize) -> u64 {
    u64::try_from(n).unwrap_or(u64::MAX)
}

/// All well: the list holds no problem.
pub fn all_well(problems: &[Problem]) -> bool {
    problems.is_empty()
}

/// The first line of the report: `all well: ...` or `not all well: ...`,
/// from its problems and their context.
pub fn sentence(problems: &[Problem], t: &Context<'_>) -> String {
    if all_well(problems) {
        let providers = plural(count(t.providers), "provider", "providers");
        // Never "all were heard" while some were not: those the controller
        // may have missed (it follows again since recently) are said apart.
        let heard_n = t.providers.saturating_sub(t.awaiting);
        // A bound: never below the age it says.
        let age = |age: Duration| duration_text_at_least(age.as_secs());
        let awaiting = format!(
            "{} not heard from since the controller follows again",
            plural(count(t.awaiting), "provider", "providers")
        );
        let heard = match (t.heard_within.filter(|_| heard_n > 0), t.awaiting) {
            (Some(within), 0) => Some(format!(
                "{} heard from within the last {}",
                match t.providers {
                    1 => "it was".to_owned(),
                    n => format!("all {n} were"),
                },
                age(within)
            )),
            (Some(within), _) => Some(format!(
                "{heard_n} of the {} heard from within the last {}, {awaiting}",
                t.providers,
                age(within)
            )),
            (None, n) if n > 0 => Some(awaiting),
            (None, _) => None,
        };
        let checked = match t.machine {
            None => format!(
                "none of the {providers} assigned in the declaration says it keeps failing a \
                 consumer{}, and no repair fault is open",
                heard.map(|h| format!(" ({h})")).unwrap_or_default()
            ),
            Some(m) => format!(
                "no provider says it keeps failing a consumer whose provider or consumer is on \
                 {m} ({providers} on it or serving it{}), and no repair fault is open there",
                heard.map(|h| format!(", {h}")).unwrap_or_default()
            ),
        };
        let grants = t.grants_reachable + t.grants_unchecked;
        let reach = (grants > 0).then(|| {
            format!(
                "; {} of {} checked reachable from their consumers' own network positions{}",
                t.grants_reachable,
                plural(grants, "grant", "grants"),
                match t.grants_unchecked {
                    0 => String::new(),
                    n => format!(" ({n} unchecked)"),
                }
            )
        });
        // Only a check from every consumer's own position says it can reach.
        let proven = grants > 0 && t.grants_reachable == grants;
        return format!(
            "all well: {checked}{}{}",
            reach.unwrap_or_default(),
            if proven {
                ""
            } else {
                "; this does not prove that a consumer can reach its provider"
            }
        );
    }
    let c = Counted::of(problems);
    let on = t.machine.map(|m| format!(" on {m}")).unwrap_or_default();
    let mut parts = Vec::new();
    // A new store first: what it does not know yet is no provider's fault.
    let mut new_store = String::new();
    let not_known = plural(c.catching_up, "provider", "providers");
    match (c.catching_up, t.record_begins) {
        (0, _) => {}
        (_, Some(at)) => {
            new_store = format!("the store is new since {at}; ");
            parts.push(format!("{not_known} not fully known yet"));
        }
        (_, None) => parts.push(format!("{not_known} not fully known yet")),
    }
    // The controller first: while it follows nothing, the rest is what the
    // store knew when it stopped.
    match c.controller_silent {
        None => {}
        Some(since) => parts.push(format!(
            "the controller has {} (is mesh-controller serve running and on the bus?)",
            match since {
                Some(at) => format!("followed no events since {at}"),
                None => "never followed events".to_owned(),
            }
        )),
    }
    let mut failing = format!("{} failing{on}", plural(c.failing, "consumer", "consumers"));
    if c.silent > 0 {
        failing.push_str(&format!(
            " ({} not said again for more than {})",
            c.silent,
            duration_text(t.silent_after.as_secs())
        ));
    }
    parts.push(failing);
    if c.faults > 0 {
        parts.push(format!(
            "{} as {} administrator",
            match c.faults {
                1 => "1 provider cannot work".to_owned(),
                n => format!("{n} providers cannot work"),
            },
            if c.faults == 1 { "its" } else { "their" }
        ));
    }
    if !c.input_refused.is_empty() {
        parts.push(match c.input_refused.len() {
            1 => "1 provider's input refused".to_owned(),
            n => format!("{n} providers' input refused"),
        });
    }
    if !c.grants_refused.is_empty() {
        parts.push(match c.grants_refused.len() {
            1 => "1 machine's grants refused".to_owned(),
            n => format!("{n} machines' grants refused"),
        });
    }
    if c.grants_unreachable > 0 {
        let mut grants = format!(
            "{} unreachable",
            plural(c.grants_unreachable, "grant", "grants")
        );
        if t.grants_unchecked > 0 {
            grants.push_str(&format!(" ({} unchecked)", t.grants_unchecked));
        }
        parts.push(grants);
    }
    if c.repairs > 0 {
        parts.push(format!(
            "{} open",
            plural(c.repairs, "repair fault", "repair faults")
        ));
    }
    let retirements = [
        (c.retiring, "retiring"),
        (c.retired, "retired"),
        (c.deleted, "deleted"),
    ];
    for (n, what) in retirements {
        if n > 0 {
            parts.push(format!(
                "{} {what}",
                plural(n, "required consumer", "required consumers")
            ));
        }
    }
    if c.unheard > 0 {
        parts.push(format!(
            "{} not heard from",
            plural(c.unheard, "provider", "providers")
        ));
    }
    if c.refused > 0 {
        parts.push(format!(
            "{} refused (not checked)",
            plural(c.refused, "declaration entry", "declaration entries")
        ));
    }
    format!("not all well: {new_store}{}", parts.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::RepairRow;
    use crate::report::{CatchingUp, Faulted, InputRefused, Retired, Unheard, UnreachableGrant};
    use crate::store::FailingGroup;
    use mesh_protocol::event::RepairOutcome;
    use mesh_protocol::Class;
    use mesh_protocol::Name;

    /// A table row: how many of each kind, and the context.
    #[derive(Clone, Copy, Debug)]
    struct Spec<'a> {
        failing: u64,
        silent: u64,
        repairs: usize,
        refused: usize,
        providers: usize,
        unheard: usize,
        awaiting: usize,
        heard_within: Option<Duration>,
        silent_after: Duration,
        machine: Option<&'a str>,
        grants_reachable: u64,
        grants_unreachable: u64,
        grants_unchecked: u64,
        controller_silent: Option<Option<Timestamp>>,
        retired: usize,
        deleted: usize,
        retiring: usize,
        catching_up: usize,
        record_begins: Option<Timestamp>,
        faults: usize,
        input_refused: usize,
        grants_refused: usize,
    }

    fn at() -> Timestamp {
        Timestamp::parse("2026-10-05T00:00:00Z").unwrap()
    }

    fn provider(i: u64) -> ModuleId {
        ModuleId::parse(&format!("p{i}@m")).unwrap()
    }

    fn retirement(i: usize, action: RetirementAction) -> Problem {
        Problem::Retirement(Retired {
            provider: provider(0),
            consumer: Name::parse(&format!("c{i}")).unwrap(),
            consumer_machine: Name::parse("m").unwrap(),
            action,
            detail: String::new(),
            said_at: at(),
            retire_at: None,
        })
    }

    /// The problems and the context a row stands for.
    fn made(s: &Spec<'static>) -> (Vec<Problem>, Context<'static>) {
        let mut p = Vec::new();
        if let Some(since) = s.controller_silent {
            p.push(Problem::ControllerNotFollowing(since));
        }
        if s.failing > 0 {
            p.push(Problem::ConsumersFailing(FailingGroup {
                provider: provider(0),
                class: Class::Unreachable,
                standings: s.failing,
                silent: s.silent,
            }));
        }
        for i in 0..s.unheard {
            p.push(Problem::ProviderUnheard(Unheard {
                provider: provider(count(i)),
                heard_at: None,
                started_at: None,
            }));
        }
        for i in 0..s.retiring {
            p.push(retirement(i, RetirementAction::Retiring));
        }
        for i in 0..s.retired {
            p.push(retirement(i, RetirementAction::Retired));
        }
        for i in 0..s.deleted {
            p.push(retirement(i, RetirementAction::Deleted));
        }
        for i in 0..s.catching_up {
            p.push(Problem::ProviderCatchingUp(CatchingUp {
                provider: provider(count(i)),
                started_at: None,
                record_begins_at: at(),
                until: at(),
            }));
        }
        for i in 0..s.faults {
            p.push(Problem::ProviderFault(Faulted {
                provider: provider(count(i)),
                class: Class::CredentialsRejected,
                error: "no".into(),
                since: at(),
                said_at: at(),
            }));
        }
        for i in 0..s.input_refused {
            // Two entries of one provider count once.
            for index in [Some(0), Some(1)] {
                p.push(Problem::InputRefused(InputRefused {
                    input: crate::report::Input::Contributions,
                    provider: provider(count(i)),
                    index,
                    reason: "bad".into(),
                    required: Vec::new(),
                    said_at: at(),
                }));
            }
        }
        for i in 0..s.grants_refused {
            // A machine's file and an entry of it count once.
            for index in [None, Some(1)] {
                p.push(Problem::InputRefused(InputRefused {
                    input: crate::report::Input::Grants,
                    provider: ModuleId::new(
                        Name::parse("mesh-grants").unwrap(),
                        Name::parse(&format!("app-{i}")).unwrap(),
                    ),
                    index,
                    reason: "bad".into(),
                    required: Vec::new(),
                    said_at: at(),
                }));
            }
        }
        for i in 0..s.repairs {
            p.push(Problem::RepairFault(RepairRow {
                provider: provider(0),
                fault: Name::parse(&format!("f{i}")).unwrap(),
                outcome: RepairOutcome::Failed,
                detail: String::new(),
                next_attempt_at: None,
                said_at: at(),
                repaired: None,
            }));
        }
        for i in 0..s.grants_unreachable {
            p.push(Problem::GrantUnreachable(UnreachableGrant {
                machine: Name::parse("m").unwrap(),
                consumer: Name::parse(&format!("c{i}")).unwrap(),
                provision: "x".into(),
                from: "p0@m".into(),
                address: "127.0.0.1".into(),
                port: None,
                failures: 1,
                failing_since: None,
                last_reachable_at: None,
                error: String::new(),
                said_at: at(),
            }));
        }
        for i in 0..s.refused {
            p.push(Problem::DeclarationRefused(format!("entry {i}")));
        }
        let context = Context {
            machine: s.machine,
            providers: s.providers,
            awaiting: s.awaiting,
            heard_within: s.heard_within,
            silent_after: s.silent_after,
            grants_reachable: s.grants_reachable,
            grants_unchecked: s.grants_unchecked,
            record_begins: s.record_begins,
        };
        (p, context)
    }

    fn tally() -> Spec<'static> {
        Spec {
            failing: 0,
            silent: 0,
            repairs: 0,
            refused: 0,
            providers: 2,
            unheard: 0,
            awaiting: 0,
            heard_within: Some(Duration::from_millis(45_800)),
            silent_after: Duration::from_secs(1800),
            machine: None,
            grants_reachable: 0,
            grants_unreachable: 0,
            grants_unchecked: 0,
            controller_silent: None,
            retired: 0,
            deleted: 0,
            retiring: 0,
            catching_up: 0,
            record_begins: None,
            faults: 0,
            input_refused: 0,
            grants_refused: 0,
        }
    }

    #[test]
    fn sentence_table() {
        let cases: Vec<(Spec<'static>, &str)> = vec![
            (
                tally(),
                "all well: none of the 2 providers assigned in the declaration says it keeps \
                 failing a consumer (all 2 were heard from within the last 45 s), and no repair \
                 fault is open; this does not prove that a consumer can reach its provider",
            ),
            (
                Spec {
                    providers: 0,
                    heard_within: None,
                    ..tally()
                },
                "all well: none of the 0 providers assigned in the declaration says it keeps \
                 failing a consumer, and no repair fault is open; this does not prove that a \
                 consumer can reach its provider",
            ),
            (
                Spec {
                    unheard: 1,
                    ..tally()
                },
                "not all well: 0 consumers failing, 1 provider not heard from",
            ),
            // A provider fault breaks all-well with no consumer failing yet.
            (
                Spec {
                    faults: 1,
                    ..tally()
                },
                "not all well: 0 consumers failing, 1 provider cannot work as its administrator",
            ),
            // Refused input breaks all-well with no consumer failing yet.
            (
                Spec {
                    input_refused: 1,
                    ..tally()
                },
                "not all well: 0 consumers failing, 1 provider's input refused",
            ),
            (
                Spec {
                    input_refused: 2,
                    faults: 1,
                    grants_unreachable: 1,
                    ..tally()
                },
                "not all well: 0 consumers failing, 1 provider cannot work as its administrator, \
                 2 providers' input refused, 1 grant unreachable",
            ),
            // A machine's grants refused, counted apart from the providers'.
            (
                Spec {
                    input_refused: 1,
                    grants_refused: 2,
                    ..tally()
                },
                "not all well: 0 consumers failing, 1 provider's input refused, 2 machines' \
                 grants refused",
            ),
            (
                Spec {
                    faults: 2,
                    failing: 3,
                    unheard: 1,
                    ..tally()
                },
                "not all well: 3 consumers failing, 2 providers cannot work as their \
                 administrator, 1 provider not heard from",
            ),
            // Never "all were heard" while one was not (the controller
            // follows again since recently: it may have missed it).
            (
                Spec {
                    awaiting: 1,
                    ..tally()
                },
                "all well: none of the 2 providers assigned in the declaration says it keeps \
                 failing a consumer (1 of the 2 heard from within the last 45 s, 1 provider not \
                 heard from since the controller follows again), and no repair fault is open; \
                 this does not prove that a consumer can reach its provider",
            ),
            (
                Spec {
                    awaiting: 2,
                    heard_within: None,
                    ..tally()
                },
                "all well: none of the 2 providers assigned in the declaration says it keeps \
                 failing a consumer (2 providers not heard from since the controller follows \
                 again), and no repair fault is open; this does not prove that a consumer can \
                 reach its provider",
            ),
            (
                Spec {
                    failing: 3,
                    unheard: 2,
                    refused: 1,
                    ..tally()
                },
                "not all well: 3 consumers failing, 2 providers not heard from, 1 declaration \
                 entry refused (not checked)",
            ),
            (
                Spec {
                    providers: 1,
                    machine: Some("db-1"),
                    ..tally()
                },
                "all well: no provider says it keeps failing a consumer whose provider or \
                 consumer is on db-1 (1 provider on it or serving it, it was heard from within the \
                 last 45 s), and no repair fault is open there; this does not prove that a \
                 consumer can reach its provider",
            ),
            (
                Spec {
                    failing: 1,
                    machine: Some("app-1"),
                    ..tally()
                },
                "not all well: 1 consumer failing on app-1",
            ),
            (
                Spec {
                    failing: 2,
                    silent: 1,
                    repairs: 1,
                    ..tally()
                },
                "not all well: 2 consumers failing (1 not said again for more than 30 min), \
                 1 repair fault open",
            ),
            (
                Spec {
                    refused: 2,
                    repairs: 3,
                    ..tally()
                },
                "not all well: 0 consumers failing, 3 repair faults open, 2 declaration \
                 entries refused (not checked)",
            ),
            (
                Spec {
                    controller_silent: Some(Some(
                        Timestamp::parse("2026-10-05T00:09:00Z").unwrap(),
                    )),
                    ..tally()
                },
                "not all well: the controller has followed no events since 2026-10-05T00:09:00Z \
                 (is mesh-controller serve running and on the bus?), 0 consumers failing",
            ),
            (
                Spec {
                    controller_silent: Some(None),
                    failing: 1,
                    machine: Some("app-1"),
                    unheard: 1,
                    ..tally()
                },
                "not all well: the controller has never followed events (is mesh-controller \
                 serve running and on the bus?), 1 consumer failing on app-1, 1 provider not \
                 heard from",
            ),
            (
                Spec {
                    retired: 1,
                    deleted: 2,
                    ..tally()
                },
                "not all well: 0 consumers failing, 1 required consumer retired, 2 required \
                 consumers deleted",
            ),
            (
                Spec {
                    retiring: 1,
                    ..tally()
                },
                "not all well: 0 consumers failing, 1 required consumer retiring",
            ),
            (
                Spec {
                    retiring: 2,
                    retired: 1,
                    ..tally()
                },
                "not all well: 0 consumers failing, 2 required consumers retiring, 1 required \
                 consumer retired",
            ),
            (
                Spec {
                    catching_up: 2,
                    record_begins: Some(Timestamp::parse("2026-10-05T00:00:00Z").unwrap()),
                    ..tally()
                },
                "not all well: the store is new since 2026-10-05T00:00:00Z; 2 providers not \
                 fully known yet, 0 consumers failing",
            ),
            // The store new is said first, before the controller.
            (
                Spec {
                    catching_up: 1,
                    failing: 1,
                    controller_silent: Some(None),
                    record_begins: Some(Timestamp::parse("2026-10-05T00:00:00Z").unwrap()),
                    ..tally()
                },
                "not all well: the store is new since 2026-10-05T00:00:00Z; 1 provider not fully \
                 known yet, the controller has never followed events (is mesh-controller serve \
                 running and on the bus?), 1 consumer failing",
            ),
        ];
        for (spec, expected) in cases {
            let (problems, context) = made(&spec);
            assert_eq!(sentence(&problems, &context), expected, "{spec:?}");
            assert_eq!(all_well(&problems), expected.starts_with("all well"));
        }
    }
}
