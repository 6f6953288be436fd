//! The report as Prometheus series (pure): what `serve` exports at
//! `/metrics` from the same report `status` prints, so an alert and the
//! sentence never disagree.
//!
//! - [`series`]: a report's list of problems as [`Series`]: whether it is
//!   all well, a count for every [`Kind`] (the `clause` label; zero when
//!   none of it holds), and the counts by kind, provider and cause.
//! - [`export`] sets [`StatusGauges`] from them ([`init`]: every clause at
//!   zero before the first report).
//!
//! Rules: the counts are those of the report (standings listed, providers
//! unheard, ...); a clause whose count is non-zero holds; all well exactly
//! when none holds.

use std::collections::BTreeMap;

use mesh_protocol::Timestamp;
use mesh_runtime::endpoints::gauge_value;

use crate::link::StatusGauges;
use crate::report::{Head, Kind};

/// Labels of one count by clause, provider and cause: `provider` is
/// `module@machine`, empty for a clause of no provider; `cause` is the
/// class, the fault or why, empty when the clause has none.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Labels {
    /// The kind of problem.
    pub kind: Kind,
    /// The provider, or empty.
    pub provider: String,
    /// The cause, or empty.
    pub cause: String,
}

/// A report as series.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Series {
    /// The report is all well.
    pub all_well: bool,
    /// The count of every clause, in [`Kind::ALL`] order (zero when it
    /// does not hold).
    pub clauses: Vec<(Kind, u64)>,
    /// The non-zero counts by clause, provider and cause, in order.
    pub problems: Vec<(Labels, u64)>,
}

impl Series {
    /// The count of `clause`.
    pub fn count(&self, clause: Kind) -> u64 {
        self.clauses
            .iter()
            .find(|(c, _)| *c == clause)
            .map_or(0, |(_, n)| *n)
    }
}

/// The report's problems as series: each problem counted by its kind,
/// provider and cause.
pub fn series(head: &Head) -> Series {
    let mut counts: BTreeMap<Labels, u64> = BTreeMap::new();
    for p in &head.problems {
        let key = Labels {
            kind: p.kind(),
            provider: p.provider().map(|p| p.to_string()).unwrap_or_default(),
            cause: p.cause().unwrap_or_default().to_owned(),
        };
        *counts.entry(key).or_default() += p.count();
    }
    let clauses = Kind::ALL
        .iter()
        .map(|&clause| (clause, head.count(clause)))
        .collect();
    Series {
        all_well: head.all_well(),
        clauses,
        problems: counts.into_iter().collect(),
    }
}

/// Every clause's gauge at zero, before the first report (so a rule or a
/// panel that selects a clause finds its series at once); all well stays 0.
pub fn init(gauges: &StatusGauges) {
    for clause in Kind::ALL {
        let _ = gauges.clauses.get_or_create(&[("clause", clause.as_str())]);
    }
}

/// Sets `gauges` to `series`, reported at `at`: the counts by provider
/// and cause are replaced whole (one that no longer holds is gone), the
/// aliases kept from before (`mesh_standings_failing`,
/// `mesh_providers_unheard`) are set from their clauses.
pub fn export(gauges: &StatusGauges, series: &Series, at: Timestamp) {
    gauges.all_well.set(i64::from(series.all_well));
    for (clause, n) in &series.clauses {
        gauges
            .clauses
            .get_or_create(&[("clause", clause.as_str())])
            .set(gauge_value(*n));
    }
    gauges.problems.clear();
    for (p, n) in &series.problems {
        let labels = [
            ("clause", p.kind.as_str().to_owned()),
            ("provider", p.provider.clone()),
            ("cause", p.cause.clone()),
        ];
        gauges.problems.get_or_create(&labels).set(gauge_value(*n));
    }
    gauges
        .standings_failing
        .set(gauge_value(series.count(Kind::ConsumersFailing)));
    gauges
        .providers_unheard
        .set(gauge_value(series.count(Kind::ProvidersUnheard)));
    let secs = at
        .system_time()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    gauges.reported_at.set(gauge_value(secs));
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use mesh_protocol::event::{GrantState, RepairOutcome, RetirementAction};
    use mesh_protocol::Name;

    use super::*;
    use crate::model::declaration::parse;
    use crate::model::{
        AliveRow, ControllerRecord, GrantRow, GrantsReadRow, Instance, InstanceRow,
        ParsedDeclaration, RepairRow, RetiredRow,
    };
    use crate::report::{self, Clock, Facts, Scope};
    use crate::store::FailingGroup;
    use crate::testing::declaration;
    use mesh_protocol::event::{ContributionsRead, RefusedContribution};
    use mesh_protocol::{Class, ModuleId};

    fn ts(s: &str) -> Timestamp {
        Timestamp::parse(s).unwrap()
    }

    fn id(s: &str) -> ModuleId {
        ModuleId::parse(s).unwrap()
    }

    const NOW: &str = "2026-10-05T00:10:00Z";

    /// Everything a report is made of, all well to begin with: both
    /// providers heard 30 s ago, the controller caught up now.
    #[derive(Clone)]
    struct World {
        declaration: ParsedDeclaration,
        failing: Vec<(ModuleId, Class)>,
        repairs: Vec<RepairRow>,
        alive: Vec<AliveRow>,
        grants: Vec<GrantRow>,
        grants_read: Vec<GrantsReadRow>,
        record: ControllerRecord,
        retired: Vec<RetiredRow>,
    }

    fn alive(provider: &str) -> AliveRow {
        AliveRow {
            provider: id(provider),
            started_at: ts("2026-10-05T00:00:00Z"),
            alive_every_seconds: 60,
            settled_at: None,
            repeat_every_seconds: Some(900),
            said_at: ts("2026-10-05T00:09:30Z"),
            stored_at: None,
            fault: None,
            contributions: None,
        }
    }

    /// What the grant agent of `machine` says of a grants file it cannot parse.
    fn grants_read(machine: &str) -> GrantsReadRow {
        GrantsReadRow {
            machine: Name::parse(machine).unwrap(),
            file: "/etc/mesh/grants.json".into(),
            read: ContributionsRead {
                readable: false,
                problem: Some("grants file /etc/mesh/grants.json: EOF".into()),
                refused: vec![],
                more: 0,
            },
            said_at: ts("2026-10-05T00:09:00Z"),
        }
    }

    fn world() -> World {
        World {
            declaration: declaration(),
            failing: vec![],
            repairs: vec![],
            alive: vec![alive("postgres@db-1"), alive("identity@id-1")],
            grants: vec![],
            grants_read: vec![],
            record: ControllerRecord {
                now: ts(NOW),
                begun_at: None,
                stream_since: None,
                instances: vec![InstanceRow {
                    instance: Instance {
                        host: "ctl-1".into(),
                        pid: 4242,
                        started_at: ts("2026-10-01T00:00:00Z"),
                        pull_wait: Duration::from_secs(2),
                    },
                    pulled_at: Some(ts(NOW)),
                    applied_at: Some(ts(NOW)),
                    following_since: Some(ts("2026-10-01T00:00:00Z")),
                }],
            },
            retired: vec![],
        }
    }

    /// The report of `w` as `status` makes it, and its series.
    fn report(w: &World) -> (report::Head, Series) {
        let clock = Clock {
            now: ts(NOW),
            silent_after: report::DEFAULT_SILENT_AFTER,
        };
        let facts = Facts {
            failing: groups(&w.failing),
            repairs: w.repairs.clone(),
            alive: &w.alive,
            grants: report::grants(w.grants.clone()),
            grants_read: &w.grants_read,
            record: &w.record,
            retired: &w.retired,
        };
        let head = report::head(&w.declaration, &Scope::All, facts, &clock);
        let series = series(&head);
        (head, series)
    }

    /// The standings counted by provider and class, as the store counts them.
    fn groups(failing: &[(ModuleId, Class)]) -> Vec<FailingGroup> {
        let mut groups: Vec<FailingGroup> = Vec::new();
        for (provider, class) in failing {
            match groups
                .iter_mut()
                .find(|g| &g.provider == provider && g.class == *class)
            {
                Some(g) => g.standings += 1,
                None => groups.push(FailingGroup {
                    provider: provider.clone(),
                    class: *class,
                    standings: 1,
                    silent: 0,
                }),
            }
        }
        groups
    }

    fn retired(consumer: &str, action: RetirementAction) -> RetiredRow {
        RetiredRow {
            provider: id("postgres@db-1"),
            consumer: Name::parse(consumer).unwrap(),
            action,
            detail: "withdrawn".into(),
            said_at: ts("2026-10-05T00:09:00Z"),
            retire_at: (action == RetirementAction::Retiring).then(|| ts("2026-10-05T00:19:00Z")),
        }
    }

    fn unreachable(consumer: &str) -> GrantRow {
        GrantRow {
            machine: Name::parse("app-1").unwrap(),
            consumer: Name::parse(consumer).unwrap(),
            provision: "postgres-database".into(),
            from: "postgres@db-1".into(),
            state: GrantState::Unreachable,
            address: Some("10.10.0.1".into()),
            port: Some(6852),
            failures: Some(4),
            failing_since: Some(ts("2026-10-05T00:04:00Z")),
            last_reachable_at: None,
            error: Some("connect timed out after 3s".into()),
            reason: None,
            said_at: ts("2026-10-05T00:09:00Z"),
        }
    }

    /// Each not-all-well report the engine makes: its clause, and the
    /// counts by provider and cause, are non-zero, every other clause zero;
    /// an all-well report has every clause at zero. All well in the series
    /// is the report's own, and holds exactly when no clause does.
    #[test]
    fn every_clause_that_breaks_all_well_is_a_non_zero_series() {
        type Case = (
            &'static str,
            fn(&mut World),
            Option<Kind>,
            Vec<(&'static str, &'static str, u64)>,
        );
        let cases: Vec<Case> = vec![
            ("all well", |_| {}, None, vec![]),
            (
                "a controller that stopped following",
                |w| w.record.instances[0].pulled_at = Some(ts("2026-10-05T00:09:00Z")),
                Some(Kind::ControllerNotFollowing),
                vec![("", "stopped", 1)],
            ),
            (
                "a controller that never followed",
                |w| w.record.instances.clear(),
                Some(Kind::ControllerNotFollowing),
                vec![("", "never", 1)],
            ),
            (
                "consumers failing",
                |w| {
                    w.failing = vec![
                        (id("postgres@db-1"), Class::CredentialsRejected),
                        (id("postgres@db-1"), Class::CredentialsRejected),
                        (id("identity@id-1"), Class::Unreachable),
                    ]
                },
                Some(Kind::ConsumersFailing),
                vec![
                    ("identity@id-1", "unreachable", 1),
                    ("postgres@db-1", "credentials-rejected", 2),
                ],
            ),
            (
                "providers unheard",
                |w| {
                    w.alive[0].said_at = ts("2026-10-05T00:06:00Z");
                    w.alive.truncate(1);
                },
                Some(Kind::ProvidersUnheard),
                vec![
                    ("identity@id-1", "never", 1),
                    ("postgres@db-1", "silent", 1),
                ],
            ),
            (
                "a required consumer retiring",
                |w| w.retired = vec![retired("forge", RetirementAction::Retiring)],
                Some(Kind::ConsumersRetiring),
                vec![("postgres@db-1", "", 1)],
            ),
            (
                "required consumers retired",
                |w| {
                    w.retired = vec![
                        retired("forge", RetirementAction::Retired),
                        retired("wiki", RetirementAction::Retired),
                    ]
                },
                Some(Kind::ConsumersRetired),
                vec![("postgres@db-1", "", 2)],
            ),
            (
                "a required consumer deleted",
                |w| w.retired = vec![retired("wiki", RetirementAction::Deleted)],
                Some(Kind::ConsumersDeleted),
                vec![("postgres@db-1", "", 1)],
            ),
            (
                "a provider a new store does not fully know yet",
                |w| {
                    w.record.begun_at = Some(ts("2026-10-05T00:05:00Z"));
                    w.alive[1].started_at = ts("2026-10-05T00:09:00Z");
                },
                Some(Kind::ProvidersCatchingUp),
                vec![("postgres@db-1", "", 1)],
            ),
            (
                "a provider that cannot work as its administrator",
                |w| {
                    w.alive[0].fault = Some(mesh_protocol::event::ProviderFault {
                        class: Class::CredentialsRejected,
                        error: "password authentication failed".into(),
                        since: ts("2026-10-05T00:08:00Z"),
                    })
                },
                Some(Kind::ProviderFaults),
                vec![("postgres@db-1", "credentials-rejected", 1)],
            ),
            (
                "a provider's contributions file it cannot take, and an entry refused",
                |w| {
                    w.alive[0].contributions = Some(ContributionsRead {
                        readable: false,
                        problem: Some("contributions file /c.json is malformed: EOF".into()),
                        refused: vec![RefusedContribution {
                            index: 1,
                            consumer: Some(mesh_protocol::Name::parse("wiki").unwrap()),
                            reason: "provision: it is empty".into(),
                        }],
                        more: 0,
                    })
                },
                Some(Kind::InputRefused),
                vec![("postgres@db-1", "entry", 1), ("postgres@db-1", "file", 1)],
            ),
            (
                "an entry refused of a consumer not required from that provider: all well",
                |w| {
                    w.alive[1].contributions = Some(ContributionsRead {
                        refused: vec![RefusedContribution {
                            index: 0,
                            consumer: Some(mesh_protocol::Name::parse("wiki").unwrap()),
                            reason: "provision: it is empty".into(),
                        }],
                        ..ContributionsRead::good()
                    })
                },
                None,
                vec![],
            ),
            (
                "a machine's grants file refused, and an entry of it: each consumer's grants \
                 unchecked",
                |w| {
                    let mut read = grants_read("app-1");
                    read.read.refused = vec![RefusedContribution {
                        index: 1,
                        consumer: Some(Name::parse("wiki").unwrap()),
                        reason: "port: invalid type".into(),
                    }];
                    w.grants_read = vec![read];
                },
                Some(Kind::InputRefused),
                vec![
                    ("mesh-grants@app-1", "entry", 1),
                    ("mesh-grants@app-1", "file", 1),
                ],
            ),
            (
                "a grants file of a machine with no consumer declared: all well",
                |w| w.grants_read = vec![grants_read("app-9")],
                None,
                vec![],
            ),
            (
                "an open repair fault",
                |w| {
                    w.repairs = vec![RepairRow {
                        provider: id("identity@id-1"),
                        fault: Name::parse("admin-refused").unwrap(),
                        outcome: RepairOutcome::Braked,
                        detail: "could not log in".into(),
                        next_attempt_at: None,
                        said_at: ts("2026-10-05T00:09:00Z"),
                        repaired: None,
                    }]
                },
                Some(Kind::RepairFaultsOpen),
                vec![("identity@id-1", "admin-refused", 1)],
            ),
            (
                "a grant unreachable",
                |w| w.grants = vec![unreachable("forge"), unreachable("wiki")],
                Some(Kind::GrantsUnreachable),
                vec![("postgres@db-1", "", 2)],
            ),
            (
                "a declaration entry refused",
                |w| {
                    w.declaration = parse(
                        r#"{"modules":[
                          {"module":"postgres","machine":"db-1","provides":["postgres-database"]},
                          {"module":"identity","machine":"id-1","provides":["oidc-client"]},
                          {"module":"Bad","machine":"m"}]}"#,
                    )
                    .unwrap()
                },
                Some(Kind::DeclarationRefused),
                vec![("", "", 1)],
            ),
        ];
        let mut seen = std::collections::BTreeSet::new();
        for (what, change, clause, problems) in cases {
            let mut w = world();
            change(&mut w);
            let (head, series) = report(&w);
            assert_eq!(series.all_well, head.all_well(), "{what}");
            assert_eq!(
                head.all_well(),
                clause.is_none(),
                "{what}: {}",
                head.sentence
            );
            assert_eq!(series.clauses.len(), Kind::ALL.len(), "{what}");
            for (c, n) in &series.clauses {
                assert_eq!(*n > 0, Some(*c) == clause, "{what}: {c:?} {n}");
            }
            let got: Vec<(&str, &str, u64)> = series
                .problems
                .iter()
                .map(|(p, n)| {
                    assert_eq!(Some(p.kind), clause, "{what}");
                    (p.provider.as_str(), p.cause.as_str(), *n)
                })
                .collect();
            assert_eq!(got, problems, "{what}");
            let total: u64 = problems.iter().map(|(_, _, n)| n).sum();
            if let Some(c) = clause {
                assert_eq!(series.count(c), total, "{what}");
                seen.insert(c);
            }
        }
        assert_eq!(
            seen.len(),
            Kind::ALL.len(),
            "every clause has a case: {seen:?}"
        );
    }

    #[test]
    fn every_clause_has_its_own_label() {
        let labels: std::collections::BTreeSet<&str> =
            Kind::ALL.iter().map(|c| c.as_str()).collect();
        assert_eq!(labels.len(), Kind::ALL.len());
    }

    /// Exported: every clause present (zero when it does not hold), the
    /// counts by provider and cause replaced whole, the old names aliases.
    #[test]
    fn export_sets_the_gauges_and_forgets_what_no_longer_holds() {
        let mut registry = prometheus_client::registry::Registry::with_prefix("mesh");
        let gauges = StatusGauges::register(&mut registry);
        let text = |registry: &prometheus_client::registry::Registry| {
            let mut text = String::new();
            prometheus_client::encoding::text::encode(&mut text, registry).unwrap();
            text
        };
        let mut w = world();
        w.failing = vec![(id("postgres@db-1"), Class::Refused)];
        w.alive.truncate(1);
        let (_, failing) = report(&w);
        export(&gauges, &failing, ts(NOW));
        let t = text(&registry);
        for line in [
            "mesh_status_all_well 0",
            "mesh_status_clauses{clause=\"consumers_failing\"} 1",
            "mesh_status_clauses{clause=\"providers_unheard\"} 1",
            "mesh_status_clauses{clause=\"consumers_retiring\"} 0",
            "mesh_status_problems{clause=\"consumers_failing\",provider=\"postgres@db-1\",cause=\"refused\"} 1",
            "mesh_status_problems{clause=\"providers_unheard\",provider=\"identity@id-1\",cause=\"never\"} 1",
            "mesh_standings_failing 1",
            "mesh_providers_unheard 1",
            "mesh_status_reported_timestamp_seconds 1791159000",
        ] {
            assert!(t.lines().any(|l| l == line), "{line} in\n{t}");
        }
        let (_, well) = report(&world());
        export(&gauges, &well, ts(NOW));
        let t = text(&registry);
        assert!(t.lines().any(|l| l == "mesh_status_all_well 1"), "{t}");
        assert!(!t.contains("mesh_status_problems{"), "{t}");
        assert!(t.lines().any(|l| l == "mesh_standings_failing 0"), "{t}");
        for clause in Kind::ALL {
            let line = format!("mesh_status_clauses{{clause=\"{}\"}} 0", clause.as_str());
            assert!(t.lines().any(|l| l == line), "{line} in\n{t}");
        }
    }
}
