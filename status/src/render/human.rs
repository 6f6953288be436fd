//! The human form: the sentence, then one line for a controller that
//! follows nothing, per provider not heard from, per required consumer
//! retired, per provider not fully known yet, per provider that cannot
//! work as its administrator, per contributions file or entry refused that
//! holds back a required consumer, per grant unreachable or
//! unchecked, per cause of standings (one standing keeps its own line; many
//! failing for one provider, class and error share one), per open repair
//! fault and per refused declaration entry. Untrusted text (errors,
//! details) has its control characters replaced, so one standing is one line.

use std::borrow::Cow;
use std::io::{self, Write};
use std::time::Duration;

use mesh_protocol::Name;

use super::Listing;
use crate::model::AckRow;
use crate::report::group::{Group, Grouper, Line};
use crate::report::history::{duration_text, ordinal, window_text};
use crate::report::{runbook, Controller, Head, Listed, Problem, Recurrence};

/// Lines for a person.
#[derive(Clone, Debug, Default)]
pub struct Human {
    grouper: Grouper,
}

/// Control characters of untrusted text replaced, so one standing is one line.
pub(crate) fn one_line(text: &str) -> Cow<'_, str> {
    if text.chars().any(char::is_control) {
        text.chars()
            .map(|c| if c.is_control() { ' ' } else { c })
            .collect::<String>()
            .into()
    } else {
        text.into()
    }
}

/// The line of a controller that follows nothing: which `serve` caught up
/// last, and when.
fn controller(out: &mut dyn Write, c: &Controller) -> io::Result<()> {
    let (Some(host), Some(pid), Some(started)) = (&c.host, c.pid, c.started_at) else {
        return writeln!(
            out,
            "  no mesh-controller serve has recorded itself in this store"
        );
    };
    write!(
        out,
        "  mesh-controller serve on {} (pid {pid}, started {started}) ",
        one_line(host)
    )?;
    match c.pulled_at {
        None => writeln!(out, "has not caught up with the event stream yet"),
        Some(pulled) => {
            write!(out, "caught up with the event stream last at {pulled}")?;
            match c.applied_at {
                Some(applied) => writeln!(out, ", stored events last at {applied}"),
                None => writeln!(out),
            }
        }
    }
}

/// One standing's own line.
fn one(out: &mut dyn Write, s: &Listed) -> io::Result<()> {
    let r = &s.row;
    let attempts = if r.said.attempts == 1 {
        "attempt"
    } else {
        "attempts"
    };
    write!(
        out,
        "  {} fails {}@{} ({}): {} since ",
        r.provider,
        r.said.consumer,
        r.said.consumer_machine.as_ref().map_or("?", Name::as_str),
        one_line(r.said.provision.as_deref().unwrap_or("?")),
        r.said.class,
    )?;
    match r.first_since {
        Some(first) => write!(
            out,
            "{first}, said again since the restart at {}",
            r.said.since
        )?,
        None => write!(out, "{}", r.said.since)?,
    }
    write!(
        out,
        ", {} {attempts}, said {}",
        r.said.attempts, r.said.said_at
    )?;
    if let Some(secs) = s.silent_for_seconds {
        write!(out, ", silent for {}", duration_text(secs))?;
    }
    if let Some(again) = &s.recurrence {
        write!(out, " ({})", recurrence(again))?;
    }
    if let Some(ack) = &s.acknowledged {
        write!(out, " [{}]", acknowledgement(ack))?;
    }
    writeln!(out, ": {}", one_line(&r.said.error))
}

/// `being worked on: "restoring the dump" — ana, until 2026-12-05T21:00:00Z`:
/// an acknowledgement that holds, said beside the problem it leaves standing.
pub fn acknowledgement(a: &AckRow) -> String {
    format!(
        "being worked on: \"{}\" — {}, until {}",
        one_line(&a.reason),
        one_line(&a.by),
        a.until
    )
}

/// `3rd time in 7 days; last 2026-11-27, credentials-rejected, 21 h 28 min; last
/// time: "admin password reset from the vault" — jochen`, or
/// for a consumer flapping `flapping: recovered and failed again 4 times
/// within an hour; 5th time in 7 days`.
pub fn recurrence(r: &Recurrence) -> String {
    let window = window_text(Duration::from_secs(r.window_seconds));
    let nth = format!("{} time in {window}", ordinal(r.count));
    if r.flapping {
        return format!(
            "flapping: recovered and failed again {} times within an hour; {nth}",
            r.recovered_within_hour
        );
    }
    let day = r
        .last_since
        .unwrap_or(r.last_until)
        .to_string()
        .chars()
        .take(10)
        .collect::<String>();
    let mut text = format!("{nth}; last {day}");
    if let Some(class) = r.last_class {
        text.push_str(&format!(", {class}"));
    }
    if let Some(secs) = r.last_seconds {
        text.push_str(&format!(", {}", duration_text(secs)));
    }
    if let Some(note) = &r.last_note {
        text.push_str(&format!(
            "; last time: \"{}\" — {}",
            one_line(&note.text),
            one_line(&note.by)
        ));
    }
    text
}

/// The line of many standings failing for one cause.
fn many(out: &mut dyn Write, g: &Group) -> io::Result<()> {
    let (provider, class, error) = g.cause();
    write!(out, "  {provider} fails {} consumers {class}", g.count)?;
    if g.silent > 0 {
        write!(out, " ({} of them silent)", g.silent)?;
    }
    if g.recurring > 0 {
        write!(
            out,
            " ({} of them failing again within the recurrence window)",
            g.recurring
        )?;
    }
    if g.acknowledged > 0 {
        write!(out, " ({} of them being worked on)", g.acknowledged)?;
    }
    write!(out, ": \"{}\" — {}", one_line(error), g.names.join(", "))?;
    let rest = g.count - u64::try_from(g.names.len()).unwrap_or(g.count);
    if rest > 0 {
        write!(out, ", … (and {rest} more)")?;
    }
    writeln!(out)
}

fn line(out: &mut dyn Write, line: &Line) -> io::Result<()> {
    match line {
        Line::One(s) => one(out, s),
        Line::Many(g) => many(out, g),
    }
}

impl Listing for Human {
    fn head(&mut self, out: &mut dyn Write, head: &Head) -> io::Result<()> {
        writeln!(out, "{}", head.sentence)?;
        if !head.controller.following {
            controller(out, &head.controller)?;
        }
        // The head's problems in the list's order; the standings come
        // next, then the repair faults and refused entries (`finish`).
        for p in &head.problems {
            match p {
                // Said above, by the standings listed, and after them.
                Problem::ControllerNotFollowing(_)
                | Problem::ConsumersFailing(_)
                | Problem::RepairFault(_)
                | Problem::DeclarationRefused(_) => {}
                Problem::ProviderUnheard(_)
                | Problem::Retirement(_)
                | Problem::ProviderCatchingUp(_)
                | Problem::ProviderFault(_)
                | Problem::InputRefused(_)
                | Problem::GrantUnreachable(_) => writeln!(out, "  {}", one_line(&p.line()))?,
            }
        }
        for g in &head.grants_unchecked {
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

    fn standing(&mut self, out: &mut dyn Write, s: Listed) -> io::Result<()> {
        match self.grouper.push(s) {
            Some(done) => line(out, &done),
            None => Ok(()),
        }
    }

    fn finish(&mut self, out: &mut dyn Write, head: &Head) -> io::Result<()> {
        if let Some(done) = self.grouper.finish() {
            line(out, &done)?;
        }
        for p in &head.problems {
            match p {
                Problem::RepairFault(_) | Problem::DeclarationRefused(_) => {
                    writeln!(out, "  {}", one_line(&p.line()))?;
                }
                // Said before the standings (`head`).
                Problem::ControllerNotFollowing(_)
                | Problem::ConsumersFailing(_)
                | Problem::ProviderUnheard(_)
                | Problem::Retirement(_)
                | Problem::ProviderCatchingUp(_)
                | Problem::ProviderFault(_)
                | Problem::InputRefused(_)
                | Problem::GrantUnreachable(_) => {}
            }
        }
        out.flush()
    }
}

/// What to do, after the report (`status --explain`): each problem's
/// runbook entry's next step, once per entry, in the list's order; nothing
/// when all is well.
///
/// # Errors
/// When writing fails.
pub fn next_steps(out: &mut dyn Write, head: &Head) -> io::Result<()> {
    let mut said: Vec<String> = Vec::new();
    for p in &head.problems {
        let anchor = p.runbook();
        if said.contains(&anchor) {
            continue;
        }
        if said.is_empty() {
            writeln!(out, "what to do (the runbook: {}):", runbook::INSTALLED_AT)?;
        }
        match p.next_step() {
            Some(step) => writeln!(out, "  #{anchor}: {step}")?,
            None => writeln!(out, "  #{anchor}")?,
        }
        said.push(anchor);
    }
    out.flush()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{FailingRow, RepairRow};
    use crate::render::write_all;
    use crate::report::{Controller, Problem, Unheard};
    use mesh_protocol::event::Failing;
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
        use crate::report::{UncheckedGrant, UnreachableGrant};
        let head = Head {
            machine: None,
            sentence: "not all well: 0 consumers failing, 1 grant unreachable".into(),
            controller: Controller::following_for_tests(),
            problems: vec![Problem::GrantUnreachable(UnreachableGrant {
                machine: Name::parse("app-1").unwrap(),
                consumer: Name::parse("forge").unwrap(),
                provision: "postgres-database".into(),
                from: "postgres@db-1".into(),
                address: "10.10.0.1".into(),
                port: Some(6852),
                failures: 4,
                failing_since: Some(ts("2026-10-05T00:04:00Z")),
                last_reachable_at: None,
                error: "connect timed out after 3s".into(),
                said_at: ts("2026-10-05T00:05:30Z"),
            })],
            grants_reachable: 1,
            grants_unchecked: vec![UncheckedGrant {
                machine: Name::parse("app-1").unwrap(),
                consumer: Name::parse("wiki").unwrap(),
                provision: "postgres-database".into(),
                from: "postgres@db-1".into(),
                reason: "consumer not running".into(),
                said_at: ts("2026-10-05T00:05:30Z"),
            }],
        };
        let mut out = Vec::new();
        write_all(&mut Human::default(), &mut out, &head, &[]).unwrap();
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
            said: Failing {
                v: 1,
                consumer: Name::parse("forge").unwrap(),
                consumer_machine: None,
                provision: None,
                class: Class::CredentialsRejected,
                error: "line one\nline two".into(),
                since: ts("2026-10-05T00:04:00Z"),
                attempts: 61,
                said_at: ts("2026-10-04T23:00:00Z"),
            },
            first_since: None,
        };
        let mut once = row.clone();
        once.said.attempts = 1;
        once.said.consumer = Name::parse("wiki").unwrap();
        once.said.consumer_machine = Some(Name::parse("app-2").unwrap());
        once.said.provision = Some("postgres-database".into());
        // Another cause (its own line); the same would be grouped.
        once.said.class = Class::Refused;
        let head = Head {
            machine: None,
            sentence: "not all well: 2 consumers failing".into(),
            controller: Controller::following_for_tests(),
            problems: vec![
                Problem::ProviderUnheard(Unheard {
                    provider: id("postgres@db-2"),
                    heard_at: Some(ts("2026-10-05T00:01:00Z")),
                    started_at: Some(ts("2026-10-04T12:00:00Z")),
                }),
                Problem::ProviderUnheard(Unheard {
                    provider: id("postgres@db-3"),
                    heard_at: None,
                    started_at: None,
                }),
                Problem::RepairFault(RepairRow {
                    provider: id("identity@id-1"),
                    fault: Name::parse("admin-refused").unwrap(),
                    outcome: RepairOutcome::Failed,
                    detail: "could not\rlog in".into(),
                    next_attempt_at: Some(ts("2026-10-05T01:00:00Z")),
                    said_at: ts("2026-10-05T00:09:00Z"),
                    repaired: None,
                }),
                Problem::DeclarationRefused("modules[3]: bad\nname".into()),
            ],
            grants_reachable: 0,
            grants_unchecked: vec![],
        };
        let standings = [
            Listed {
                row,
                silent_for_seconds: Some(4200),
                recurrence: None,
                acknowledged: None,
            },
            Listed {
                row: once,
                silent_for_seconds: None,
                recurrence: None,
                acknowledged: None,
            },
        ];
        let mut out = Vec::new();
        write_all(&mut Human::default(), &mut out, &head, &standings).unwrap();
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
                 1 h 10 min: line one line two",
                "  postgres@db-1 fails wiki@app-2 (postgres-database): refused \
                 since 2026-10-05T00:04:00Z, 1 attempt, said 2026-10-04T23:00:00Z: line one \
                 line two",
                "  identity@id-1 repair fault admin-refused: failed, said 2026-10-05T00:09:00Z, \
                 next attempt 2026-10-05T01:00:00Z: could not log in",
                "  declaration entry refused: modules[3]: bad name",
            ]
        );
    }

    fn failing(provider: &str, consumer: &str, error: &str, silent: bool) -> Listed {
        Listed {
            row: FailingRow {
                provider: id(provider),
                said: Failing {
                    v: 1,
                    consumer: Name::parse(consumer).unwrap(),
                    consumer_machine: Some(Name::parse("app-1").unwrap()),
                    provision: Some("postgres-database".into()),
                    class: Class::Unreachable,
                    error: error.into(),
                    since: ts("2026-10-05T00:04:00Z"),
                    attempts: 3,
                    said_at: ts("2026-10-05T00:09:00Z"),
                },
                first_since: None,
            },
            silent_for_seconds: silent.then_some(2000),
            recurrence: None,
            acknowledged: None,
        }
    }

    /// An acknowledgement of postgres@db-1's standing for `consumer`.
    fn ack(consumer: &str) -> crate::model::AckRow {
        crate::model::AckRow::for_tests(
            consumer,
            "restoring
the dump",
        )
    }

    fn head_of(sentence: &str) -> Head {
        Head {
            machine: None,
            sentence: sentence.into(),
            controller: Controller::following_for_tests(),
            problems: vec![],
            grants_reachable: 0,
            grants_unchecked: vec![],
        }
    }

    #[test]
    fn a_restart_while_failing_and_a_recurrence_are_said_on_the_line() {
        let mut restarted = failing("postgres@db-1", "wiki", "refused", false);
        restarted.row.first_since = Some(ts("2026-10-04T20:00:00Z"));
        let mut again = failing("postgres@db-1", "forge", "refused", false);
        again.row.said.class = Class::CredentialsRejected;
        again.recurrence = Some(Recurrence {
            count: 3,
            window_seconds: 7 * 86_400,
            last_since: Some(ts("2026-10-02T00:12:00Z")),
            last_until: ts("2026-10-02T21:40:00Z"),
            last_class: Some(Class::CredentialsRejected),
            last_seconds: Some(21 * 3600 + 28 * 60),
            flapping: false,
            recovered_within_hour: 0,
            last_note: Some(crate::model::NoteRow {
                text: "admin password reset from the vault".into(),
                by: "jochen".into(),
            }),
        });
        let mut flapping = failing("postgres@db-1", "blog", "timeout", false);
        flapping.recurrence = again.recurrence.clone().map(|mut r| {
            r.flapping = true;
            r.recovered_within_hour = 4;
            r.count = 5;
            r
        });
        let mut out = Vec::new();
        let head = head_of("not all well: 3 consumers failing");
        write_all(
            &mut Human::default(),
            &mut out,
            &head,
            &[restarted, again, flapping],
        )
        .unwrap();
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[1],
            "  postgres@db-1 fails wiki@app-1 (postgres-database): unreachable since \
             2026-10-04T20:00:00Z, said again since the restart at 2026-10-05T00:04:00Z, 3 \
             attempts, said 2026-10-05T00:09:00Z: refused"
        );
        assert_eq!(
            lines[2],
            "  postgres@db-1 fails forge@app-1 (postgres-database): credentials-rejected since \
             2026-10-05T00:04:00Z, 3 attempts, said 2026-10-05T00:09:00Z (3rd time in 7 days; \
             last 2026-10-02, credentials-rejected, 21 h 28 min; last time: \"admin password \
             reset from the vault\" — jochen): refused"
        );
        assert_eq!(
            lines[3],
            "  postgres@db-1 fails blog@app-1 (postgres-database): unreachable since \
             2026-10-05T00:04:00Z, 3 attempts, said 2026-10-05T00:09:00Z (flapping: recovered \
             and failed again 4 times within an hour; 5th time in 7 days): timeout"
        );
    }

    #[test]
    fn a_provider_fault_has_its_own_line_on_one_line() {
        let mut head = head_of(
            "not all well: 0 consumers failing, 1 provider cannot work as its administrator",
        );
        head.problems.extend(
            [crate::report::Faulted {
                provider: id("postgres@db-1"),
                class: mesh_protocol::Class::CredentialsRejected,
                error: "password authentication failed\nfor user \"mesh_admin\"".into(),
                since: ts("2026-10-05T00:04:00Z"),
                said_at: ts("2026-10-05T00:05:00Z"),
            }]
            .map(Problem::ProviderFault),
        );
        let mut out = Vec::new();
        write_all(&mut Human::default(), &mut out, &head, &[]).unwrap();
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[1..],
            [
                "  postgres@db-1 cannot work as its administrator since 2026-10-05T00:04:00Z \
              (credentials-rejected: password authentication failed for user \"mesh_admin\"); \
              none of its consumers can be made or mended meanwhile"
            ]
        );
    }

    #[test]
    fn refused_input_has_a_line_per_file_and_entry_on_one_line() {
        let mut head = head_of("not all well: 0 consumers failing, 1 provider's input refused");
        let refused = |index, reason: &str| crate::report::InputRefused {
            input: crate::report::Input::Contributions,
            provider: id("postgres@db-1"),
            index,
            reason: reason.into(),
            required: vec![id("forge@app-1")],
            said_at: ts("2026-10-05T00:05:00Z"),
        };
        head.problems.extend([
            refused(
                None,
                "contributions file /etc/mesh/c.json cannot be read: Permission denied\n(os error 13)",
            ),
            refused(Some(3), "unknown field `provison`"),
        ].map(Problem::InputRefused));
        let mut out = Vec::new();
        write_all(&mut Human::default(), &mut out, &head, &[]).unwrap();
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines,
            [
                "not all well: 0 consumers failing, 1 provider's input refused",
                "  postgres@db-1 cannot take its contributions file: contributions file \
                 /etc/mesh/c.json cannot be read: Permission denied (os error 13); it serves its \
                 last good list, if it has one (forge@app-1 required)",
                "  forge@app-1 is held back by postgres@db-1: its contributions entry 3 was \
                 refused: unknown field `provison`",
            ]
        );
    }

    #[test]
    fn many_failing_for_one_cause_share_one_line() {
        let mut standings: Vec<Listed> = (0..12)
            .map(|i| {
                failing(
                    "postgres@db-1",
                    &format!("c{i:02}"),
                    "connection refused",
                    i == 3,
                )
            })
            .collect();
        standings.push(failing("postgres@db-1", "d", "timed out", false));
        standings.push(failing("postgres@db-2", "e", "timed out", false));
        standings.push(failing("postgres@db-2", "f", "timed out", false));
        // An acknowledgement is said on the line it leaves standing, and
        // counted on a group's.
        standings[12].acknowledged = Some(ack("d"));
        standings[13].acknowledged = Some(ack("e"));
        let mut out = Vec::new();
        let head = head_of("not all well: 15 consumers failing");
        write_all(&mut Human::default(), &mut out, &head, &standings).unwrap();
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines,
            [
                "not all well: 15 consumers failing",
                "  postgres@db-1 fails 12 consumers unreachable (1 of them silent): \"connection \
                 refused\" — c00@app-1, c01@app-1, c02@app-1, c03@app-1, c04@app-1, c05@app-1, \
                 c06@app-1, c07@app-1, c08@app-1, c09@app-1, … (and 2 more)",
                "  postgres@db-1 fails d@app-1 (postgres-database): unreachable since \
                 2026-10-05T00:04:00Z, 3 attempts, said 2026-10-05T00:09:00Z [being worked on: \
                 \"restoring the dump\" — ana, until 2026-10-05T04:00:00Z]: timed out",
                "  postgres@db-2 fails 2 consumers unreachable (1 of them being worked on): \
                 \"timed out\" — e@app-1, f@app-1",
            ]
        );
    }

    #[test]
    fn a_controller_following_nothing_a_retiring_and_a_retired_consumer_and_a_new_store_are_named()
    {
        use crate::report::{CatchingUp, Retired};
        use mesh_protocol::event::RetirementAction;
        let mut head = head_of("not all well: the controller has followed no events since ...");
        head.controller = Controller {
            following: false,
            pulled_at: Some(ts("2026-10-05T00:09:00Z")),
            applied_at: Some(ts("2026-10-05T00:08:00Z")),
            following_since: Some(ts("2026-10-05T00:01:00Z")),
            host: Some("ctl-1".into()),
            pid: Some(4242),
            started_at: Some(ts("2026-10-05T00:00:00Z")),
            record_begins_at: None,
            known_since: None,
        };
        head.problems.extend(
            [Retired {
                provider: id("postgres@db-1"),
                consumer: Name::parse("wiki").unwrap(),
                consumer_machine: Name::parse("app-2").unwrap(),
                action: RetirementAction::Retiring,
                detail: "withdrawn".into(),
                said_at: ts("2026-10-05T00:09:00Z"),
                retire_at: Some(ts("2026-10-05T00:19:00Z")),
            }]
            .map(Problem::Retirement),
        );
        head.problems.extend(
            [Retired {
                provider: id("postgres@db-1"),
                consumer: Name::parse("forge").unwrap(),
                consumer_machine: Name::parse("app-1").unwrap(),
                action: RetirementAction::Retired,
                detail: "disabled".into(),
                said_at: ts("2026-10-05T00:09:00Z"),
                retire_at: None,
            }]
            .map(Problem::Retirement),
        );
        head.problems.extend(
            [CatchingUp {
                provider: id("postgres@db-1"),
                started_at: Some(ts("2026-10-04T00:00:00Z")),
                record_begins_at: ts("2026-10-05T00:00:00Z"),
                until: ts("2026-10-05T00:16:00Z"),
            }]
            .map(Problem::ProviderCatchingUp),
        );
        let render = |head: &Head| {
            let mut out = Vec::new();
            write_all(&mut Human::default(), &mut out, head, &[]).unwrap();
            String::from_utf8(out).unwrap()
        };
        let text = render(&head);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[1..],
            [
                "  mesh-controller serve on ctl-1 (pid 4242, started 2026-10-05T00:00:00Z) caught \
                 up with the event stream last at 2026-10-05T00:09:00Z, stored events last at \
                 2026-10-05T00:08:00Z",
                "  wiki@app-2 retiring by postgres@db-1 although the declaration requires it \
                 (retired at 2026-10-05T00:19:00Z unless its contributions file lists it again)",
                "  forge@app-1 retired by postgres@db-1 although the declaration requires it (its \
                 contributions file no longer lists it?)",
                "  postgres@db-1 not fully known yet: the store's record begins \
                 2026-10-05T00:00:00Z, after it started (2026-10-04T00:00:00Z); it says the \
                 failures it keeps again by 2026-10-05T00:16:00Z",
            ]
        );
        head.controller.pulled_at = None;
        assert!(render(&head).contains(
            "  mesh-controller serve on ctl-1 (pid 4242, started 2026-10-05T00:00:00Z) has not \
             caught up with the event stream yet\n"
        ));
        head.controller.host = None;
        assert!(render(&head)
            .contains("  no mesh-controller serve has recorded itself in this store\n"));
    }

    #[test]
    fn explain_says_each_entry_once_in_the_lists_order() {
        let mut head = head_of("not all well: 3 consumers failing, 1 provider not heard from");
        let group = |class| {
            Problem::ConsumersFailing(crate::store::FailingGroup {
                provider: id("postgres@db-1"),
                class,
                standings: 1,
                silent: 0,
            })
        };
        head.problems = vec![
            group(Class::CredentialsRejected),
            group(Class::Unreachable),
            Problem::ProviderUnheard(Unheard {
                provider: id("postgres@db-2"),
                heard_at: None,
                started_at: None,
            }),
            Problem::ProviderUnheard(Unheard {
                provider: id("postgres@db-3"),
                heard_at: None,
                started_at: None,
            }),
        ];
        let mut out = Vec::new();
        next_steps(&mut out, &head).unwrap();
        let text = String::from_utf8(out).unwrap();
        let anchors: Vec<&str> = text
            .lines()
            .skip(1)
            .map(|l| l.trim().split(':').next().unwrap())
            .collect();
        assert_eq!(
            anchors,
            [
                "#class-credentials-rejected",
                "#class-unreachable",
                "#providers-unheard"
            ],
            "{text}"
        );
        assert!(
            text.starts_with("what to do (the runbook: /usr/share/doc/mesh/docs/runbook.md):\n")
        );
        let step = runbook::entry("providers-unheard").unwrap().next_step;
        assert!(text.contains(step), "{text}");
        head.problems.clear();
        let mut out = Vec::new();
        next_steps(&mut out, &head).unwrap();
        assert!(out.is_empty(), "all well: nothing to do");
    }
}
