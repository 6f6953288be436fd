//! The human form: the sentence, then one line per provider not heard
//! from, per standing, per open repair fault and per refused declaration
//! entry. Untrusted text (errors,
//! details) has its control characters replaced, so one standing is one line.

use std::borrow::Cow;
use std::io::{self, Write};
use std::time::Duration;

use super::Listing;
use crate::report::{Head, Listed};

/// Lines for a person.
#[derive(Clone, Copy, Debug, Default)]
pub struct Human;

/// Control characters of untrusted text replaced, so one standing is one line.
fn one_line(text: &str) -> Cow<'_, str> {
    if text.chars().any(char::is_control) {
        text.chars()
            .map(|c| if c.is_control() { ' ' } else { c })
            .collect::<String>()
            .into()
    } else {
        text.into()
    }
}

impl Listing for Human {
    fn head(&mut self, out: &mut dyn Write, head: &Head) -> io::Result<()> {
        writeln!(out, "{}", head.sentence)?;
        for u in &head.unheard {
            write!(out, "  {} ", u.provider)?;
            match (u.heard_at, u.started_at) {
                (Some(heard), Some(started)) => writeln!(
                    out,
                    "not heard from since {heard} (its process started {started})"
                )?,
                _ => writeln!(out, "never heard from")?,
            }
        }
        for g in &head.grants.unreachable {
            let attempts = if g.failures == 1 { "check" } else { "checks" };
            writeln!(
                out,
                "  {}@{} cannot reach {} ({}:{}) from its own network: {} {attempts} failed since {}, last reachable {}: {}",
                g.consumer,
                g.machine,
                one_line(&g.from),
                one_line(&g.address),
                g.port.map_or("?".to_owned(), |p| p.to_string()),
                g.failures,
                g.failing_since.map_or("?".to_owned(), |t| t.to_string()),
                g.last_reachable_at.map_or("never".to_owned(), |t| t.to_string()),
                one_line(&g.error),
            )?;
        }
        for g in &head.grants.unchecked {
            writeln!(
                out,
                "  {}@{} grant from {} ({}) unchecked: {}, said {}",
                g.consumer,
                g.machine,
                one_line(&g.from),
                one_line(&g.provision),
                one_line(&g.reason),
                g.said_at,
            )?;
        }
        out.flush()
    }

    fn standing(&mut self, out: &mut dyn Write, s: &Listed) -> io::Result<()> {
        let r = &s.row;
        let attempts = if r.attempts == 1 {
            "attempt"
        } else {
            "attempts"
        };
        write!(
            out,
            "  {} fails {}@{} ({}): {} since {}, {} {attempts}, said {}",
            r.provider,
            r.consumer,
            r.consumer_machine.as_deref().unwrap_or("?"),
            one_line(r.provision.as_deref().unwrap_or("?")),
            r.class,
            r.since,
            r.attempts,
            r.said_at,
        )?;
        if let Some(secs) = s.silent_for_seconds {
            write!(
                out,
                ", silent for {}",
                humantime::format_duration(Duration::from_secs(secs))
            )?;
        }
        writeln!(out, ": {}", one_line(&r.error))
    }

    fn finish(&mut self, out: &mut dyn Write, head: &Head) -> io::Result<()> {
        for r in &head.repairs {
            write!(
                out,
                "  {} repair fault {}: {}, said {}",
                r.provider, r.fault, r.outcome, r.said_at
            )?;
            if let Some(next) = r.next_attempt_at {
                write!(out, ", next attempt {next}")?;
            }
            writeln!(out, ": {}", one_line(&r.detail))?;
        }
        for e in &head.declaration_errors {
            writeln!(out, "  declaration entry refused: {}", one_line(e))?;
        }
        out.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{FailingRow, RepairRow};
    use crate::render::write_all;
    use crate::report::Unheard;
    use mesh_protocol::event::RepairOutcome;
    use mesh_protocol::{Class, ModuleId, Timestamp};

    fn id(text: &str) -> ModuleId {
        ModuleId::parse(text).unwrap()
    }

    fn ts(s: &str) -> Timestamp {
        Timestamp::parse(s).unwrap()
    }

    #[test]
    fn an_unreachable_grant_is_named() {
        use crate::report::{Grants, UncheckedGrant, UnreachableGrant};
        let head = Head {
            machine: None,
            all_well: false,
            sentence: "not all well: 0 consumers failing, 1 grant unreachable".into(),
            unheard: vec![],
            repairs: vec![],
            declaration_errors: vec![],
            grants: Grants {
                reachable: 1,
                unreachable: vec![UnreachableGrant {
                    machine: "app-1".into(),
                    consumer: "forge".into(),
                    provision: "postgres-database".into(),
                    from: "postgres@db-1".into(),
                    address: "10.10.0.1".into(),
                    port: Some(6852),
                    failures: 4,
                    failing_since: Some(ts("2026-10-05T00:04:00Z")),
                    last_reachable_at: None,
                    error: "connect timed out after 3s".into(),
                    said_at: ts("2026-10-05T00:05:30Z"),
                }],
                unchecked: vec![UncheckedGrant {
                    machine: "app-1".into(),
                    consumer: "wiki".into(),
                    provision: "postgres-database".into(),
                    from: "postgres@db-1".into(),
                    reason: "consumer not running".into(),
                    said_at: ts("2026-10-05T00:05:30Z"),
                }],
            },
        };
        let mut out = Vec::new();
        write_all(&mut Human, &mut out, &head, &[]).unwrap();
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines,
            [
                "not all well: 0 consumers failing, 1 grant unreachable",
                "  forge@app-1 cannot reach postgres@db-1 (10.10.0.1:6852) from its own network: \
                 4 checks failed since 2026-10-05T00:04:00Z, last reachable never: connect timed \
                 out after 3s",
                "  wiki@app-1 grant from postgres@db-1 (postgres-database) unchecked: consumer \
                 not running, said 2026-10-05T00:05:30Z",
            ]
        );
    }

    #[test]
    fn human_lines_are_one_per_standing() {
        let row = FailingRow {
            provider: id("postgres@db-1"),
            consumer: "forge".into(),
            consumer_machine: None,
            provision: None,
            class: Class::CredentialsRejected,
            error: "line one\nline two".into(),
            since: ts("2026-10-05T00:04:00Z"),
            attempts: 61,
            said_at: ts("2026-10-04T23:00:00Z"),
        };
        let mut once = row.clone();
        once.attempts = 1;
        once.consumer = "wiki".into();
        once.consumer_machine = Some("app-2".into());
        once.provision = Some("postgres-database".into());
        let head = Head {
            machine: None,
            all_well: false,
            sentence: "not all well: 2 consumers failing".into(),
            unheard: vec![
                Unheard {
                    provider: id("postgres@db-2"),
                    heard_at: Some(ts("2026-10-05T00:01:00Z")),
                    started_at: Some(ts("2026-10-04T12:00:00Z")),
                },
                Unheard {
                    provider: id("postgres@db-3"),
                    heard_at: None,
                    started_at: None,
                },
            ],
            repairs: vec![RepairRow {
                provider: id("identity@id-1"),
                fault: "admin-refused".into(),
                outcome: RepairOutcome::Failed,
                detail: "could not\rlog in".into(),
                next_attempt_at: Some(ts("2026-10-05T01:00:00Z")),
                said_at: ts("2026-10-05T00:09:00Z"),
            }],
            declaration_errors: vec!["modules[3]: bad\nname".into()],
            grants: Default::default(),
        };
        let standings = [
            Listed {
                row,
                silent_for_seconds: Some(4200),
            },
            Listed {
                row: once,
                silent_for_seconds: None,
            },
        ];
        let mut out = Vec::new();
        write_all(&mut Human, &mut out, &head, &standings).unwrap();
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines,
            [
                "not all well: 2 consumers failing",
                "  postgres@db-2 not heard from since 2026-10-05T00:01:00Z (its process started \
                 2026-10-04T12:00:00Z)",
                "  postgres@db-3 never heard from",
                "  postgres@db-1 fails forge@? (?): credentials-rejected since \
                 2026-10-05T00:04:00Z, 61 attempts, said 2026-10-04T23:00:00Z, silent for \
                 1h 10m: line one line two",
                "  postgres@db-1 fails wiki@app-2 (postgres-database): credentials-rejected \
                 since 2026-10-05T00:04:00Z, 1 attempt, said 2026-10-04T23:00:00Z: line one \
                 line two",
                "  identity@id-1 repair fault admin-refused: failed, said 2026-10-05T00:09:00Z, \
                 next attempt 2026-10-05T01:00:00Z: could not log in",
                "  declaration entry refused: modules[3]: bad name",
            ]
        );
    }
}
