//! `status` and `node show`: what the store says, seen through the declaration.
//!
//! [`compose`] is pure: stored rows, the declaration, the wall time and the
//! silence threshold in; a [`Report`] out (sentence, standings, open repair
//! faults). [`Report::write_human`] and [`Report::write_json`] print it.
//!
//! Rules:
//! - A standing is listed only when its provider is *assigned* where it ran
//!   (the declaration lists that module on that machine).
//! - Any listed standing, open repair fault or refused declaration entry
//!   breaks the all-well sentence.
//! - A standing whose word is older than `silent_after` carries
//!   `silent_for_seconds` (the provider stopped repeating it: it may be gone).

use std::io::{self, Write};
use std::time::Duration;

use mesh_sdk::Timestamp;
use serde::Serialize;

use crate::declaration::Parsed;
use crate::store::{FailingRow, RepairRow, Snapshot};

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

/// The wall time and the silence threshold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Clock {
    /// Now (tests fix it).
    pub now: Timestamp,
    /// A standing not said again for this long is marked silent.
    pub silent_after: Duration,
}

/// One listed standing: a provider says it keeps failing a consumer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Standing {
    /// The provider module.
    pub provider_module: String,
    /// The machine it ran on.
    pub provider_machine: String,
    /// The consumer.
    pub consumer: String,
    /// The consumer's machine as the provider last knew it (null if never).
    pub consumer_machine: Option<String>,
    /// The provision as the provider last knew it (null if never).
    pub provision: Option<String>,
    /// The failure's class.
    pub class: String,
    /// Its first words.
    pub error: String,
    /// First failure since the last success.
    pub since: Timestamp,
    /// Failed attempts since `since`.
    pub attempts: i64,
    /// When it was said.
    pub said_at: Timestamp,
    /// Seconds since it was said, when that is more than `silent_after`; else null.
    pub silent_for_seconds: Option<u64>,
}

/// One open repair fault.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct OpenRepair {
    /// The provider module.
    pub provider_module: String,
    /// The machine it ran on.
    pub provider_machine: String,
    /// The fault.
    pub fault: String,
    /// `failed` or `braked`.
    pub outcome: String,
    /// In words.
    pub detail: String,
    /// When the next attempt is due, if one is.
    pub next_attempt_at: Option<Timestamp>,
    /// When it was said.
    pub said_at: Timestamp,
}

/// The report `status` (and `node show`) prints.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Report {
    /// The machine of `node show`; absent for `status`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub machine: Option<String>,
    /// Whether nothing is failing, no repair fault is open and the
    /// declaration was read whole.
    pub all_well: bool,
    /// The first line: `all well: ...` or `not all well: ...`.
    pub sentence: String,
    /// The listed standings.
    pub failing: Vec<Standing>,
    /// The open repair faults.
    pub repairs: Vec<OpenRepair>,
    /// Declaration entries that were refused (they were not checked).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub declaration_errors: Vec<String>,
}

/// Seconds since `said_at` when at least `silent_after` passed; else `None`.
pub fn silent_for(said_at: Timestamp, clock: &Clock) -> Option<u64> {
    let age = clock.now.0.duration_since(said_at.0).ok()?;
    (age >= clock.silent_after).then_some(age.as_secs())
}

/// Composes the report (pure).
pub fn compose(declaration: &Parsed, snapshot: Snapshot, clock: &Clock, scope: &Scope) -> Report {
    let d = &declaration.declaration;
    let in_scope = |provider_machine: &str, consumer_machine: Option<&str>| match scope {
        Scope::All => true,
        Scope::Machine(m) => provider_machine == m || consumer_machine == Some(m.as_str()),
    };
    let failing: Vec<Standing> = snapshot
        .failing
        .into_iter()
        .filter(|r| d.is_assigned(&r.provider_module, &r.provider_machine))
        .filter(|r| in_scope(&r.provider_machine, r.consumer_machine.as_deref()))
        .map(|r| standing(r, clock))
        .collect();
    let repairs: Vec<OpenRepair> = snapshot
        .open_repairs
        .into_iter()
        .filter(|r| d.is_assigned(&r.provider_module, &r.provider_machine))
        .filter(|r| in_scope(&r.provider_machine, None))
        .map(open_repair)
        .collect();
    let declaration_errors: Vec<String> =
        declaration.refused.iter().map(|e| e.to_string()).collect();
    let providers = d
        .modules
        .iter()
        .filter(|m| d.receives_contributions(&m.id))
        .filter(|m| in_scope(m.id.machine.as_str(), None))
        .count();
    let silent = failing
        .iter()
        .filter(|s| s.silent_for_seconds.is_some())
        .count();
    let all_well = failing.is_empty() && repairs.is_empty() && declaration_errors.is_empty();
    let sentence = sentence(&Counts {
        failing: failing.len(),
        silent,
        repairs: repairs.len(),
        refused: declaration_errors.len(),
        providers,
        silent_after: clock.silent_after,
        machine: match scope {
            Scope::All => None,
            Scope::Machine(m) => Some(m.as_str()),
        },
    });
    Report {
        machine: match scope {
            Scope::All => None,
            Scope::Machine(m) => Some(m.clone()),
        },
        all_well,
        sentence,
        failing,
        repairs,
        declaration_errors,
    }
}

fn standing(r: FailingRow, clock: &Clock) -> Standing {
    Standing {
        silent_for_seconds: silent_for(r.said_at, clock),
        provider_module: r.provider_module,
        provider_machine: r.provider_machine,
        consumer: r.consumer,
        consumer_machine: r.consumer_machine,
        provision: r.provision,
        class: r.class,
        error: r.error,
        since: r.since,
        attempts: r.attempts,
        said_at: r.said_at,
    }
}

fn open_repair(r: RepairRow) -> OpenRepair {
    OpenRepair {
        provider_module: r.provider_module,
        provider_machine: r.provider_machine,
        fault: r.fault,
        outcome: r.outcome,
        detail: r.detail,
        next_attempt_at: r.next_attempt_at,
        said_at: r.said_at,
    }
}

/// What the sentence is made of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Counts<'a> {
    /// Listed standings.
    pub failing: usize,
    /// Of which silent.
    pub silent: usize,
    /// Open repair faults.
    pub repairs: usize,
    /// Refused declaration entries.
    pub refused: usize,
    /// Providers assigned (in scope).
    pub providers: usize,
    /// The silence threshold.
    pub silent_after: Duration,
    /// The machine of `node show`.
    pub machine: Option<&'a str>,
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// The first line of the report.
pub fn sentence(c: &Counts<'_>) -> String {
    let on = c.machine.map(|m| format!(" on {m}")).unwrap_or_default();
    if c.failing == 0 && c.repairs == 0 && c.refused == 0 {
        let providers = plural(c.providers, "provider", "providers");
        let checked = match c.machine {
            None => format!(
                "none of the {providers} assigned in the declaration says it keeps failing a \
                 consumer, and no repair fault is open"
            ),
            Some(m) => format!(
                "no provider says it keeps failing a consumer whose provider or consumer is on \
                 {m} ({providers} assigned on {m}), and no repair fault is open there"
            ),
        };
        return format!(
            "all well: {checked}; this does not prove that a consumer can reach its provider"
        );
    }
    let mut parts = vec![format!(
        "{} failing{on}",
        plural(c.failing, "consumer", "consumers")
    )];
    if c.silent > 0 {
        parts[0].push_str(&format!(
            " ({} not said again for more than {})",
            c.silent,
            humantime::format_duration(c.silent_after)
        ));
    }
    if c.repairs > 0 {
        parts.push(format!(
            "{} open",
            plural(c.repairs, "repair fault", "repair faults")
        ));
    }
    if c.refused > 0 {
        parts.push(format!(
            "{} refused (not checked)",
            plural(c.refused, "declaration entry", "declaration entries")
        ));
    }
    format!("not all well: {}", parts.join(", "))
}

/// Control characters of untrusted text replaced, so one standing is one line.
fn one_line(text: &str) -> std::borrow::Cow<'_, str> {
    if text.chars().any(char::is_control) {
        text.chars()
            .map(|c| if c.is_control() { ' ' } else { c })
            .collect::<String>()
            .into()
    } else {
        text.into()
    }
}

impl Report {
    /// The human form: the sentence, then one line per standing and per open
    /// repair fault, then the refused declaration entries.
    ///
    /// # Errors
    /// When writing fails.
    pub fn write_human(&self, out: &mut dyn Write) -> io::Result<()> {
        writeln!(out, "{}", self.sentence)?;
        for s in &self.failing {
            let consumer_machine = s.consumer_machine.as_deref().unwrap_or("?");
            let provision = s.provision.as_deref().unwrap_or("?");
            write!(
                out,
                "  {}@{} fails {}@{} ({}): {} since {}, {}, said {}",
                s.provider_module,
                s.provider_machine,
                s.consumer,
                consumer_machine,
                one_line(provision),
                s.class,
                s.since,
                plural(
                    usize::try_from(s.attempts).unwrap_or(0),
                    "attempt",
                    "attempts"
                ),
                s.said_at,
            )?;
            if let Some(secs) = s.silent_for_seconds {
                write!(
                    out,
                    ", silent for {}",
                    humantime::format_duration(Duration::from_secs(secs))
                )?;
            }
            writeln!(out, ": {}", one_line(&s.error))?;
        }
        for r in &self.repairs {
            write!(
                out,
                "  {}@{} repair fault {}: {}, said {}",
                r.provider_module, r.provider_machine, r.fault, r.outcome, r.said_at
            )?;
            if let Some(next) = r.next_attempt_at {
                write!(out, ", next attempt {next}")?;
            }
            writeln!(out, ": {}", one_line(&r.detail))?;
        }
        for e in &self.declaration_errors {
            writeln!(out, "  declaration entry refused: {}", one_line(e))?;
        }
        Ok(())
    }

    /// The JSON form: one object, one line.
    ///
    /// # Errors
    /// When writing fails.
    pub fn write_json(&self, out: &mut dyn Write) -> io::Result<()> {
        serde_json::to_writer(&mut *out, self)?;
        writeln!(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::declaration::parse;

    fn ts(s: &str) -> Timestamp {
        Timestamp::parse(s).unwrap()
    }

    fn declaration() -> Parsed {
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

    fn row(module: &str, machine: &str, consumer: &str, said_at: &str) -> FailingRow {
        FailingRow {
            provider_module: module.into(),
            provider_machine: machine.into(),
            consumer: consumer.into(),
            consumer_machine: Some("app-1".into()),
            provision: Some("postgres-database".into()),
            class: "credentials-rejected".into(),
            error: "password authentication failed for user \"forge\"".into(),
            since: ts("2026-10-05T00:04:00Z"),
            attempts: 61,
            said_at: ts(said_at),
        }
    }

    fn repair(module: &str, machine: &str) -> RepairRow {
        RepairRow {
            provider_module: module.into(),
            provider_machine: machine.into(),
            fault: "admin-refused".into(),
            outcome: "failed".into(),
            detail: "could not log in".into(),
            next_attempt_at: None,
            said_at: ts("2026-10-05T00:09:00Z"),
        }
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
            assert_eq!(silent_for(said, &clock(now)), expected, "{now}");
        }
    }

    #[test]
    fn all_well_says_what_was_checked() {
        let report = compose(
            &declaration(),
            Snapshot::default(),
            &clock("2026-10-05T00:10:00Z"),
            &Scope::All,
        );
        assert!(report.all_well);
        assert!(report.sentence.starts_with("all well: "));
        assert!(report.sentence.contains("2 providers assigned"));
        assert!(report
            .sentence
            .contains("does not prove that a consumer can reach its provider"));
    }

    #[test]
    fn failing_unassigned_silent_and_scope_table() {
        let snapshot = Snapshot {
            failing: vec![
                row("postgres", "db-1", "forge", "2026-10-05T00:09:00Z"),
                row("postgres", "db-1", "wiki", "2026-10-04T23:00:00Z"),
                // Not assigned there: ignored.
                row("postgres", "db-9", "forge", "2026-10-05T00:09:00Z"),
                row("ghost", "db-1", "forge", "2026-10-05T00:09:00Z"),
            ],
            open_repairs: vec![repair("identity", "id-1"), repair("ghost", "id-1")],
        };
        let c = clock("2026-10-05T00:10:00Z");
        // (scope, standings listed, repairs listed)
        let cases = [
            (Scope::All, vec!["forge", "wiki"], 1),
            (Scope::Machine("db-1".into()), vec!["forge", "wiki"], 0),
            (Scope::Machine("app-1".into()), vec!["forge", "wiki"], 0),
            (Scope::Machine("id-1".into()), vec![], 1),
            (Scope::Machine("db-9".into()), vec![], 0),
        ];
        for (scope, consumers, repairs) in cases {
            let report = compose(&declaration(), snapshot.clone(), &c, &scope);
            let listed: Vec<&str> = report.failing.iter().map(|s| s.consumer.as_str()).collect();
            assert_eq!(listed, consumers, "{scope:?}");
            assert_eq!(report.repairs.len(), repairs, "{scope:?}");
            assert_eq!(
                report.all_well,
                consumers.is_empty() && repairs == 0,
                "{scope:?}"
            );
        }
        let report = compose(&declaration(), snapshot, &c, &Scope::All);
        assert_eq!(report.failing[0].silent_for_seconds, None);
        assert_eq!(report.failing[1].silent_for_seconds, Some(4200));
        assert_eq!(
            report.sentence,
            "not all well: 2 consumers failing (1 not said again for more than 30m), 1 repair fault open"
        );
    }

    #[test]
    fn json_has_the_design_shape() {
        let snapshot = Snapshot {
            failing: vec![row("postgres", "db-1", "forge", "2026-10-05T00:09:00Z")],
            open_repairs: vec![],
        };
        let report = compose(
            &declaration(),
            snapshot,
            &clock("2026-10-05T00:10:00Z"),
            &Scope::All,
        );
        let mut out = Vec::new();
        report.write_json(&mut out).unwrap();
        let json: serde_json::Value = serde_json::from_slice(&out).unwrap();
        let expected = serde_json::json!({
            "all_well": false,
            "sentence": "not all well: 1 consumer failing",
            "failing": [{"provider_module":"postgres","provider_machine":"db-1","consumer":"forge",
                "consumer_machine":"app-1","provision":"postgres-database","class":"credentials-rejected",
                "error":"password authentication failed for user \"forge\"","since":"2026-10-05T00:04:00Z",
                "attempts":61,"said_at":"2026-10-05T00:09:00Z","silent_for_seconds":null}],
            "repairs": []
        });
        assert_eq!(json, expected);
    }

    #[test]
    fn refused_declaration_entries_break_all_well() {
        let parsed = parse(r#"{"modules":[{"module":"Bad","machine":"m"}]}"#).unwrap();
        let report = compose(
            &parsed,
            Snapshot::default(),
            &clock("2026-10-05T00:10:00Z"),
            &Scope::All,
        );
        assert!(!report.all_well);
        assert_eq!(
            report.sentence,
            "not all well: 0 consumers failing, 1 declaration entry refused (not checked)"
        );
        assert_eq!(report.declaration_errors.len(), 1);
    }

    #[test]
    fn human_lines_are_one_per_standing() {
        let mut r = row("postgres", "db-1", "forge", "2026-10-04T23:00:00Z");
        r.error = "line one\nline two".into();
        r.consumer_machine = None;
        r.provision = None;
        let snapshot = Snapshot {
            failing: vec![r],
            open_repairs: vec![repair("identity", "id-1")],
        };
        let report = compose(
            &declaration(),
            snapshot,
            &clock("2026-10-05T00:10:00Z"),
            &Scope::All,
        );
        let mut out = Vec::new();
        report.write_human(&mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3, "{text}");
        assert!(lines[0].starts_with("not all well: 1 consumer failing"));
        assert_eq!(
            lines[1],
            "  postgres@db-1 fails forge@? (?): credentials-rejected since 2026-10-05T00:04:00Z, \
             61 attempts, said 2026-10-04T23:00:00Z, silent for 1h 10m: line one line two"
        );
        assert!(lines[2].starts_with("  identity@id-1 repair fault admin-refused: failed"));
    }
}
