//! Printing a report as it is read: the [`Head`] first (so a reader has the
//! sentence at once), then each standing as it arrives (for a person, the
//! standings of one cause as one line once the cause is whole), then what
//! follows them. [`human`] writes lines for a person, [`json`] one JSON object;
//! [`series`] makes the report Prometheus series (what `serve` exports).

pub mod history;
pub mod html;
pub mod human;
pub mod json;
pub mod series;
pub mod why;

use std::io::{self, Write};

use crate::report::{Head, Listed};

/// A report printed piece by piece.
///
/// # Expected flow
/// [`Listing::head`] once, [`Listing::standing`] per standing in order,
/// [`Listing::finish`] once. The head is flushed to the output at once.
pub trait Listing {
    /// Writes what comes before the standings, and flushes it.
    ///
    /// # Errors
    /// When writing fails.
    fn head(&mut self, out: &mut dyn Write, head: &Head) -> io::Result<()>;

    /// Takes one standing (the human listing writes a cause's line once the
    /// cause is whole).
    ///
    /// # Errors
    /// When writing fails.
    fn standing(&mut self, out: &mut dyn Write, standing: Listed) -> io::Result<()>;

    /// Writes what comes after the standings, and flushes.
    ///
    /// # Errors
    /// When writing fails.
    fn finish(&mut self, out: &mut dyn Write, head: &Head) -> io::Result<()>;
}

/// The listing for `--json` or not.
pub fn listing(json: bool) -> Box<dyn Listing> {
    if json {
        Box::new(json::Json::default())
    } else {
        Box::new(human::Human::default())
    }
}

/// Writes a whole report at once (tests and small reports).
///
/// # Errors
/// When writing fails.
pub fn write_all(
    listing: &mut dyn Listing,
    out: &mut dyn Write,
    head: &Head,
    standings: &[Listed],
) -> io::Result<()> {
    listing.head(out, head)?;
    for standing in standings {
        listing.standing(out, standing.clone())?;
    }
    listing.finish(out, head)
}

/// Every kind of problem reaches every surface: the sentence, `all_well`,
/// the JSON's `problems`, the series and the console's page.
#[cfg(test)]
mod every_kind {
    use mesh_protocol::event::{RepairOutcome, RetirementAction};
    use mesh_protocol::{Class, ModuleId, Name, Timestamp};

    use super::html::mesh::{overview, Overview};
    use super::series::series;
    use super::*;
    use crate::model::RepairRow;
    use crate::report::{
        sentence, CatchingUp, Context, Controller, FailingGroup, Faulted, InputRefused, Kind,
        Problem, Retired, Unheard, UnreachableGrant,
    };

    fn at() -> Timestamp {
        Timestamp::parse("2026-10-05T00:00:00Z").unwrap()
    }

    fn p() -> ModuleId {
        ModuleId::parse("postgres@db-1").unwrap()
    }

    fn retirement(action: RetirementAction) -> Problem {
        Problem::Retirement(Retired {
            provider: p(),
            consumer: Name::parse("forge").unwrap(),
            consumer_machine: Name::parse("app-1").unwrap(),
            action,
            detail: "withdrawn".into(),
            said_at: at(),
            retire_at: None,
        })
    }

    /// One problem of `kind`, and what the sentence says of it.
    fn sample(kind: Kind) -> (Problem, &'static str) {
        match kind {
            Kind::ControllerNotFollowing => (
                Problem::ControllerNotFollowing(None),
                "the controller has never followed events",
            ),
            Kind::ConsumersFailing => (
                Problem::ConsumersFailing(FailingGroup {
                    provider: p(),
                    class: Class::Refused,
                    standings: 2,
                    silent: 0,
                }),
                "2 consumers failing",
            ),
            Kind::ProvidersUnheard => (
                Problem::ProviderUnheard(Unheard {
                    provider: p(),
                    heard_at: None,
                    started_at: None,
                }),
                "1 provider not heard from",
            ),
            Kind::ConsumersRetiring => (
                retirement(RetirementAction::Retiring),
                "1 required consumer retiring",
            ),
            Kind::ConsumersRetired => (
                retirement(RetirementAction::Retired),
                "1 required consumer retired",
            ),
            Kind::ConsumersDeleted => (
                retirement(RetirementAction::Deleted),
                "1 required consumer deleted",
            ),
            Kind::ProvidersCatchingUp => (
                Problem::ProviderCatchingUp(CatchingUp {
                    provider: p(),
                    started_at: None,
                    record_begins_at: at(),
                    until: at(),
                }),
                "1 provider not fully known yet",
            ),
            Kind::ProviderFaults => (
                Problem::ProviderFault(Faulted {
                    provider: p(),
                    class: Class::CredentialsRejected,
                    error: "password authentication failed".into(),
                    since: at(),
                    said_at: at(),
                }),
                "1 provider cannot work as its administrator",
            ),
            Kind::InputRefused => (
                Problem::InputRefused(InputRefused {
                    input: crate::report::Input::Contributions,
                    provider: p(),
                    index: None,
                    reason: "cannot be read".into(),
                    required: vec![],
                    said_at: at(),
                }),
                "1 provider's input refused",
            ),
            Kind::RepairFaultsOpen => (
                Problem::RepairFault(RepairRow {
                    provider: p(),
                    fault: Name::parse("admin-refused").unwrap(),
                    outcome: RepairOutcome::Failed,
                    detail: "no".into(),
                    next_attempt_at: None,
                    said_at: at(),
                    repaired: None,
                }),
                "1 repair fault open",
            ),
            Kind::GrantsUnreachable => (
                Problem::GrantUnreachable(UnreachableGrant {
                    machine: Name::parse("app-1").unwrap(),
                    consumer: Name::parse("forge").unwrap(),
                    provision: "postgres-database".into(),
                    from: "postgres@db-1".into(),
                    address: "10.0.0.1".into(),
                    port: Some(5432),
                    failures: 3,
                    failing_since: Some(at()),
                    last_reachable_at: None,
                    error: "timed out".into(),
                    said_at: at(),
                }),
                "1 grant unreachable",
            ),
            Kind::DeclarationRefused => (
                Problem::DeclarationRefused("modules[2]: bad name".into()),
                "1 declaration entry refused",
            ),
        }
    }

    #[test]
    fn every_kind_reaches_the_sentence_the_json_the_series_and_a_page() {
        for kind in Kind::ALL {
            let (problem, said) = sample(kind);
            assert_eq!(problem.kind(), kind);
            let problems = vec![problem];
            let context = Context {
                machine: None,
                providers: 1,
                awaiting: 0,
                heard_within: None,
                silent_after: std::time::Duration::from_secs(1800),
                grants_reachable: 0,
                grants_unchecked: 0,
                record_begins: None,
            };
            let head = Head {
                machine: None,
                sentence: sentence(&problems, &context),
                controller: Controller::following_for_tests(),
                problems,
                grants_reachable: 0,
                grants_unchecked: vec![],
            };
            assert!(!head.all_well(), "{kind:?}");
            assert!(head.sentence.starts_with("not all well: "), "{kind:?}");
            assert!(head.sentence.contains(said), "{kind:?}: {}", head.sentence);

            let mut out = Vec::new();
            write_all(&mut json::Json::default(), &mut out, &head, &[]).unwrap();
            let json: serde_json::Value = serde_json::from_slice(&out).unwrap();
            assert_eq!(json["all_well"], false, "{kind:?}");
            assert_eq!(json["problems"][0]["kind"], kind.as_str(), "{kind:?}");
            let runbook = json["problems"][0]["runbook"].as_str().unwrap();
            let expected = match kind {
                Kind::ConsumersFailing => "class-refused".to_owned(),
                _ => kind.anchor(),
            };
            assert_eq!(runbook, expected, "{kind:?}");
            assert!(
                json["problems"][0]["next_step"]
                    .as_str()
                    .is_some_and(|s| !s.is_empty()),
                "{kind:?}"
            );

            let s = series(&head);
            assert!(!s.all_well, "{kind:?}");
            assert!(s.count(kind) > 0, "{kind:?}");
            assert!(s.problems.iter().all(|(l, _)| l.kind == kind), "{kind:?}");

            let page = overview(&Overview {
                head: &head,
                standings: &[],
                providers: &[],
                machines: &[],
                now: Timestamp::from_system(std::time::UNIX_EPOCH),
            });
            assert!(page.contains("sentence unwell"), "{kind:?}");
            let escaped = said.replace('\'', "&#39;");
            assert!(page.contains(&escaped), "{kind:?}: {page}");
            if kind == Kind::ConsumersFailing {
                assert!(!page.contains("No consumer is failing"), "{page}");
            }
        }
    }
}
