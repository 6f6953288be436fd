//! `why`'s verdict for a person (lines) or a script (one JSON object).

use std::io::{self, Write};

use mesh_protocol::Timestamp;
use serde::Serialize;

use super::human::{acknowledgement, one_line, recurrence};
use crate::report::history::{duration_text, HistoryEntry};
use crate::report::why::{ago, Why, WhyVerdict};
use crate::report::{runbook, Listed, ProblemEntry};

/// A standing as its verdict says it.
fn failing(s: &Listed) -> String {
    let r = &s.row;
    let attempts = if r.said.attempts == 1 {
        "attempt"
    } else {
        "attempts"
    };
    format!(
        "{} says {} since {} ({} {attempts}, said {}): {}",
        r.provider, r.said.class, r.said.since, r.said.attempts, r.said.said_at, r.said.error
    )
}

/// The last failing interval that ended, as one line.
fn last(e: &HistoryEntry) -> String {
    let from = e.from.map_or("?".to_owned(), |t| t.to_string());
    let to = e.to.map_or("?".to_owned(), |t| t.to_string());
    let lasted = e
        .seconds
        .map(|s| format!(" ({})", duration_text(s)))
        .unwrap_or_default();
    let class = e.class.map(|c| format!(", {c}")).unwrap_or_default();
    let ended = e
        .reason
        .as_deref()
        .map(|r| format!(", ended: {r}"))
        .unwrap_or_default();
    format!("last failed {from} → {to}{lasted}{class}{ended}")
}

/// The verdict for a person: its sentence (`CONSUMER: …` without the
/// consumer), the lines it is joined from, and the runbook's next step
/// (its anchor and text) when it is not well. `human` and the console's
/// consumer page both say these.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WhyLines {
    /// The verdict, one line.
    pub verdict: String,
    /// What it is joined from, one line each.
    pub lines: Vec<String>,
    /// The runbook entry's anchor and next step.
    pub next_step: Option<(String, &'static str)>,
}

/// [`WhyLines`] of `why` at `now`.
pub fn lines(why: &Why, now: Timestamp) -> WhyLines {
    let verdict = match &why.verdict {
        WhyVerdict::Failing(s) => format!("failing: {}", failing(s)),
        WhyVerdict::Problem(p) => p.line(),
        WhyVerdict::NotFailing => "not failing: no provider of it says it fails it, and nothing \
                                else the store knows concerns it"
            .to_owned(),
    };
    let mut lines = Vec::new();
    for s in why.standings.iter().skip(1) {
        lines.push(format!("also failing: {}", one_line(&failing(s))));
    }
    for p in &why.problems {
        if why.verdict != WhyVerdict::Problem(p.clone()) {
            lines.push(one_line(&p.line()).into_owned());
        }
    }
    for s in &why.standings {
        if let Some(ack) = &s.acknowledged {
            lines.push(format!(
                "{}: {}",
                s.row.provider,
                one_line(&acknowledgement(ack))
            ));
        }
    }
    for (provision, provider, heard) in &why.providers {
        let state = if *heard {
            "heard from"
        } else {
            "not heard from"
        };
        lines.push(format!("{provider} gives it {provision}: {state}"));
    }
    if !why.following {
        lines.push("the controller follows no events: what the store says may be old".to_owned());
    }
    let before = why.standings.first().and_then(|s| s.recurrence.as_ref());
    match (before, &why.last_interval) {
        (Some(r), _) => lines.push(format!("before: {}", recurrence(r))),
        (None, Some(e)) => lines.push(format!(
            "{}{}",
            one_line(&last(e)),
            e.to.map(|t| format!(", {} ago", ago(t, now)))
                .unwrap_or_default()
        )),
        (None, None) => {}
    }
    WhyLines {
        verdict: one_line(&verdict).into_owned(),
        lines,
        next_step: why.runbook().zip(why.next_step()),
    }
}

/// The verdict and what it is joined from, as lines.
///
/// # Errors
/// When writing fails.
pub fn human(out: &mut dyn Write, why: &Why, now: Timestamp) -> io::Result<()> {
    let said = lines(why, now);
    writeln!(out, "{}: {}", why.consumer, said.verdict)?;
    for line in &said.lines {
        writeln!(out, "  {line}")?;
    }
    if let Some((anchor, step)) = said.next_step {
        writeln!(
            out,
            "  next step (#{anchor} in {}): {step}",
            runbook::INSTALLED_AT
        )?;
    }
    out.flush()
}

/// `why --json`.
#[derive(Serialize)]
struct WhyJson<'a> {
    consumer: String,
    well: bool,
    verdict: String,
    failing: &'a [Listed],
    problems: Vec<ProblemEntry<'a>>,
    providers: Vec<ProviderJson<'a>>,
    controller_following: bool,
    last_interval: Option<&'a HistoryEntry>,
    runbook: Option<String>,
    next_step: Option<&'static str>,
}

#[derive(Serialize)]
struct ProviderJson<'a> {
    provision: &'a str,
    provider: String,
    heard: bool,
}

/// The verdict as one JSON object on one line: `consumer`, `well`,
/// `verdict` (its line), `failing` (its standings, as `status --json`'s),
/// `problems` (those that concern it, as `status --json`'s), `providers`
/// (`provision`, `provider`, `heard`), `controller_following`,
/// `last_interval` (a `history --json` entry, or null), `runbook` and
/// `next_step` (null when well).
///
/// # Errors
/// When writing fails.
pub fn json(out: &mut dyn Write, why: &Why) -> io::Result<()> {
    let verdict = match &why.verdict {
        WhyVerdict::Failing(s) => format!("failing: {}", failing(s)),
        WhyVerdict::Problem(p) => p.line(),
        WhyVerdict::NotFailing => "not failing".to_owned(),
    };
    let body = WhyJson {
        consumer: why.consumer.to_string(),
        well: why.well(),
        verdict,
        failing: &why.standings,
        problems: why.problems.iter().map(ProblemEntry::from).collect(),
        providers: why
            .providers
            .iter()
            .map(|(provision, provider, heard)| ProviderJson {
                provision,
                provider: provider.to_string(),
                heard: *heard,
            })
            .collect(),
        controller_following: why.following,
        last_interval: why.last_interval.as_ref(),
        runbook: why.runbook(),
        next_step: why.next_step(),
    };
    serde_json::to_writer(&mut *out, &body).map_err(io::Error::from)?;
    writeln!(out)?;
    out.flush()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::FailingRow;
    use crate::report::history::EntryKind;
    use crate::report::why::{why, WhyInput};
    use crate::report::{Controller, Head, Problem, Unheard};
    use mesh_protocol::event::Failing;
    use mesh_protocol::Name;
    use mesh_protocol::{Class, ModuleId};

    fn id(s: &str) -> ModuleId {
        ModuleId::parse(s).unwrap()
    }

    fn ts(s: &str) -> Timestamp {
        Timestamp::parse(s).unwrap()
    }

    fn head(problems: Vec<Problem>, following: bool) -> Head {
        let mut controller = Controller::following_for_tests();
        controller.following = following;
        Head {
            machine: None,
            sentence: String::new(),
            controller,
            problems,
            grants_reachable: 0,
            grants_unchecked: vec![],
        }
    }

    fn text(why: &Why) -> String {
        let mut out = Vec::new();
        human(&mut out, why, ts("2026-10-05T00:10:00Z")).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn a_failing_consumer_says_its_standing_its_provider_and_the_next_step() {
        let forge = id("forge@app-1");
        let requires = [("postgres-database".to_owned(), id("postgres@db-1"))];
        let standing = Listed {
            row: FailingRow {
                provider: id("postgres@db-1"),
                said: Failing {
                    v: 1,
                    consumer: Name::parse("forge").unwrap(),
                    consumer_machine: Some(Name::parse("app-1").unwrap()),
                    provision: Some("postgres-database".into()),
                    class: Class::CredentialsRejected,
                    error: "password authentication\nfailed".into(),
                    since: ts("2026-10-05T00:04:00Z"),
                    attempts: 3,
                    said_at: ts("2026-10-05T00:09:00Z"),
                },
                first_since: None,
            },
            silent_for_seconds: None,
            recurrence: None,
            acknowledged: None,
        };
        let h = head(vec![], false);
        let w = why(&WhyInput {
            consumer: &forge,
            requires: &requires,
            head: &h,
            standings: std::slice::from_ref(&standing),
            history: &[],
        });
        let text = text(&w);
        let lines: Vec<&str> = text.lines().collect();
        let step = runbook::entry("class-credentials-rejected")
            .unwrap()
            .next_step;
        assert_eq!(
            lines,
            [
                "forge@app-1: failing: postgres@db-1 says credentials-rejected since \
                 2026-10-05T00:04:00Z (3 attempts, said 2026-10-05T00:09:00Z): password \
                 authentication failed",
                "  postgres@db-1 gives it postgres-database: heard from",
                "  the controller follows no events: what the store says may be old",
                &format!(
                    "  next step (#class-credentials-rejected in /usr/share/doc/mesh/docs/runbook.md): {step}"
                ),
            ]
        );
        let mut out = Vec::new();
        json(&mut out, &w).unwrap();
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(v["well"], false);
        assert_eq!(v["runbook"], "class-credentials-rejected");
        assert_eq!(v["failing"][0]["class"], "credentials-rejected");
        assert_eq!(v["providers"][0]["heard"], true);

        // Acknowledged: said as a line of its own; the verdict stands.
        let mut acked = standing.clone();
        acked.acknowledged = Some(crate::model::AckRow::for_tests(
            "forge",
            "resetting the admin password",
        ));
        let w = why(&WhyInput {
            consumer: &forge,
            requires: &requires,
            head: &h,
            standings: std::slice::from_ref(&acked),
            history: &[],
        });
        assert!(!w.well());
        let said = self::text(&w);
        let lines: Vec<&str> = said.lines().collect();
        assert!(lines[0].starts_with("forge@app-1: failing: "), "{said}");
        assert_eq!(
            lines[1],
            "  postgres@db-1: being worked on: \"resetting the admin password\" — ana, until \
             2026-10-05T04:00:00Z"
        );
    }

    #[test]
    fn a_consumer_not_failing_says_so_and_how_its_last_interval_ended() {
        let forge = id("forge@app-1");
        let requires = [("postgres-database".to_owned(), id("postgres@db-1"))];
        let h = head(
            vec![Problem::ProviderUnheard(Unheard {
                provider: id("identity@id-1"),
                heard_at: None,
                started_at: None,
            })],
            true,
        );
        let history = [HistoryEntry {
            kind: EntryKind::Failing,
            provider_module: Some("postgres".into()),
            provider_machine: Some("db-1".into()),
            consumer: Some("forge".into()),
            consumer_machine: Some("app-1".into()),
            from: Some(ts("2026-10-04T22:00:00Z")),
            to: Some(ts("2026-10-04T23:00:00Z")),
            seconds: Some(3600),
            class: Some(Class::Unreachable),
            error: None,
            reason: Some("success".into()),
            fault: None,
            detail: None,
            by: None,
            done: None,
            until: None,
        }];
        let w = why(&WhyInput {
            consumer: &forge,
            requires: &requires,
            head: &h,
            standings: &[],
            history: &history,
        });
        assert_eq!(
            text(&w),
            "forge@app-1: not failing: no provider of it says it fails it, and nothing else \
             the store knows concerns it\n  postgres@db-1 gives it postgres-database: heard \
             from\n  last failed 2026-10-04T22:00:00Z → 2026-10-04T23:00:00Z (1 h), \
             unreachable, ended: success, 1 h 10 min ago\n"
        );
    }
}
