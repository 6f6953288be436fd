//! `mesh-controller history` printed: for a person, a line that says the
//! window, one line per entry (newest first) and one per consumer that
//! failed in it ([`human`]); or one JSON object ([`json`]). Untrusted text
//! (errors, details) has its control characters replaced, so an entry is
//! one line.

use std::io::{self, Write};
use std::time::Duration;

use mesh_protocol::Timestamp;
use serde::Serialize;

use super::human::one_line;
use crate::report::history::{
    duration_text, window_text, ConsumerSummary, EntryKind, HistoryEntry,
};

/// What `history` prints: the window, its entries newest first, and the
/// per-consumer totals. Its JSON is `history --json`'s object.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct HistoryReport {
    /// Where the window begins.
    pub since: Timestamp,
    /// Now, on the store's clock: where it ends and open intervals run to.
    pub now: Timestamp,
    /// The entries, newest first.
    pub entries: Vec<HistoryEntry>,
    /// Per consumer that failed in the window: how often, how long.
    pub consumers: Vec<ConsumerSummary>,
}

/// `2026-11-27 00:12` (UTC, to the minute).
fn minute(at: Timestamp) -> String {
    let text = at.to_string();
    format!("{} {}", &text[..10], &text[11..16])
}

/// `00:12 → 21:40` on one day, else both in full; `→ now` while it lasts.
fn span(e: &HistoryEntry) -> String {
    let from = e.from.map_or("?".to_owned(), minute);
    let to = match e.to {
        None => "now".to_owned(),
        Some(to) => {
            let to = minute(to);
            match from.get(..10) == to.get(..10) {
                true => to[11..].to_owned(),
                false => to,
            }
        }
    };
    match e.seconds {
        Some(s) => format!("{from} → {to} ({})", duration_text(s)),
        None => format!("{from} → {to}"),
    }
}

fn consumer(e: &HistoryEntry) -> String {
    format!(
        "{}@{}",
        e.consumer.as_deref().unwrap_or("?"),
        e.consumer_machine.as_deref().unwrap_or("?")
    )
}

/// One entry's line.
pub fn line(e: &HistoryEntry) -> String {
    let provider = e.provider().unwrap_or_else(|| "?".to_owned());
    let detail = |d: &Option<String>| match d {
        Some(d) if !d.is_empty() => format!(": {}", one_line(d)),
        _ => String::new(),
    };
    let reason = e.reason.as_deref().map(one_line).unwrap_or_default();
    match e.kind {
        EntryKind::Failing => {
            let class = e.class.map(|c| format!(" {c}")).unwrap_or_default();
            let end = match e.to {
                None => "still failing".to_owned(),
                Some(_) if e.reason.is_none() => {
                    "began again before a recovery was said".to_owned()
                }
                Some(_) => format!("recovered ({reason})"),
            };
            format!(
                "{} from {provider}: failing{class} {}, {end}",
                consumer(e),
                span(e)
            )
        }
        EntryKind::GrantUnreachable => {
            let end = match e.to {
                None => "still unreachable".to_owned(),
                Some(_) => format!("reachable again ({reason})"),
            };
            format!(
                "{} grant from {provider} ({}): unreachable {}, {end}",
                consumer(e),
                one_line(e.detail.as_deref().unwrap_or("?")),
                span(e)
            )
        }
        EntryKind::ProviderFault => {
            let cause = match (e.class, &e.error) {
                (Some(class), Some(error)) => format!(" ({class}: {})", one_line(error)),
                (Some(class), None) => format!(" ({class})"),
                _ => String::new(),
            };
            let end = match e.to {
                None => "still so",
                Some(_) if e.reason.is_none() => "then another fault",
                Some(_) => "cleared",
            };
            format!(
                "{provider}: cannot work as its administrator{cause} {}, {end}",
                span(e)
            )
        }
        EntryKind::Unheard => format!("{provider}: not heard from {}, heard again", span(e)),
        EntryKind::NotFollowing => {
            format!(
                "mesh-controller: followed no events {}, following again",
                span(e)
            )
        }
        EntryKind::Retired | EntryKind::ReEnabled | EntryKind::Deleted => {
            let what = match e.kind {
                EntryKind::Retired => "retired",
                EntryKind::ReEnabled => "re-enabled",
                _ => "deleted",
            };
            let at = e.from.map_or("?".to_owned(), minute);
            format!(
                "{} from {provider}: {what} {at}{}",
                e.consumer.as_deref().unwrap_or("?"),
                detail(&e.detail)
            )
        }
        EntryKind::RepairDone | EntryKind::RepairBraked => {
            let what = match e.kind {
                EntryKind::RepairDone => "done",
                _ => "braked",
            };
            let at = e.from.map_or("?".to_owned(), minute);
            format!(
                "{provider}: repair {} {what} {at}{}",
                e.fault.as_deref().unwrap_or("?"),
                detail(&e.detail)
            )
        }
        EntryKind::Note => {
            let at = e.from.map_or("?".to_owned(), minute);
            format!(
                "{} from {provider}: note by {} {at}: \"{}\"",
                consumer(e),
                one_line(e.by.as_deref().unwrap_or("?")),
                one_line(e.detail.as_deref().unwrap_or(""))
            )
        }
        EntryKind::Action if reason == "acknowledge" => {
            let at = e.from.map_or("?".to_owned(), minute);
            let until = e.until.map_or("?".to_owned(), minute);
            format!(
                "{} from {provider}: acknowledged by {} {at} until {until}: \"{}\"",
                consumer(e),
                one_line(e.by.as_deref().unwrap_or("?")),
                one_line(e.detail.as_deref().unwrap_or(""))
            )
        }
        EntryKind::Action => {
            let at = e.from.map_or("?".to_owned(), minute);
            let what = match &*reason {
                "approve" => "retiring approved".to_owned(),
                "approve-delete" => "deleting approved".to_owned(),
                other => other.to_owned(),
            };
            let done = match e.done {
                Some(true) => "done",
                _ => "not done",
            };
            format!(
                "{} from {provider}: {what} by {} {at}: {done}: \"{}\"",
                e.consumer.as_deref().unwrap_or("?"),
                one_line(e.by.as_deref().unwrap_or("?")),
                one_line(e.detail.as_deref().unwrap_or(""))
            )
        }
    }
}

/// One consumer's totals: `wiki@app-1 from postgres@db-1: failed 2 times
/// in 7 days, 22 h 28 min in all, longest 21 h 28 min`.
pub fn summary_line(s: &ConsumerSummary, window: Duration) -> String {
    let times = if s.intervals == 1 { "time" } else { "times" };
    format!(
        "{}@{} from {}@{}: failed {} {times} in {}, {} in all, longest {}",
        s.consumer,
        s.consumer_machine.as_deref().unwrap_or("?"),
        s.provider_module,
        s.provider_machine,
        s.intervals,
        window_text(window),
        duration_text(s.failing_seconds),
        duration_text(s.longest_seconds),
    )
}

/// Writes `report` for a person.
///
/// # Errors
/// When writing fails.
pub fn human(out: &mut dyn Write, report: &HistoryReport) -> io::Result<()> {
    let window = report
        .now
        .system_time()
        .duration_since(report.since.system_time())
        .unwrap_or_default();
    let window = Duration::from_secs(window.as_secs());
    let count = match report.entries.len() {
        0 => "nothing changed".to_owned(),
        1 => "1 change".to_owned(),
        n => format!("{n} changes"),
    };
    writeln!(
        out,
        "history since {} ({}): {count}",
        minute(report.since),
        window_text(window)
    )?;
    for e in &report.entries {
        writeln!(out, "  {}", line(e))?;
    }
    for s in &report.consumers {
        writeln!(out, "  {}", summary_line(s, window))?;
    }
    out.flush()
}

/// Writes `report` as one JSON object on one line.
///
/// # Errors
/// When writing fails.
pub fn json(out: &mut dyn Write, report: &HistoryReport) -> io::Result<()> {
    serde_json::to_writer(&mut *out, report).map_err(io::Error::from)?;
    writeln!(out)?;
    out.flush()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::history::{Change, RepairChange, RetirementChange};
    use crate::report::history::tests::{began, provider, recovered, row as t};
    use crate::report::history::{entries, summaries};
    use mesh_protocol::{Class, ModuleId, Name};

    fn ts(s: &str) -> Timestamp {
        Timestamp::parse(s).unwrap()
    }

    fn wiki() -> Name {
        Name::parse("wiki").unwrap()
    }

    #[test]
    fn a_person_reads_intervals_newest_first_then_each_consumer() {
        let now = ts("2026-11-29T12:00:00Z");
        let since = ts("2026-11-22T12:00:00Z");
        let rows = [
            began("2026-11-27T00:17:00Z", "2026-11-27T00:12:00Z"),
            recovered("2026-11-27T21:40:00Z", "2026-11-27T00:12:00Z"),
            t(
                "2026-11-28T08:00:00Z",
                Change::Retired(RetirementChange {
                    provider: provider(),
                    consumer: wiki(),
                    detail: "line\none".into(),
                }),
            ),
            began("2026-11-29T11:05:00Z", "2026-11-29T11:00:00Z"),
        ];
        let entries = entries(&rows, now);
        let consumers = summaries(&entries, since, now);
        let report = HistoryReport {
            since,
            now,
            entries,
            consumers,
        };
        let mut out = Vec::new();
        human(&mut out, &report).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "history since 2026-11-22 12:00 (7 days): 3 changes\n\
             \x20 wiki@app-1 from postgres@db-1: failing credentials-rejected 2026-11-29 11:00 → \
             now (1 h), still failing\n\
             \x20 wiki from postgres@db-1: retired 2026-11-28 08:00: line one\n\
             \x20 wiki@app-1 from postgres@db-1: failing credentials-rejected 2026-11-27 00:12 → \
             21:40 (21 h 28 min), recovered (success)\n\
             \x20 wiki@app-1 from postgres@db-1: failed 2 times in 7 days, 22 h 28 min in all, \
             longest 21 h 28 min\n"
        );
        let mut out = Vec::new();
        json(&mut out, &report).unwrap();
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(v["entries"][0]["kind"], "failing");
        assert_eq!(v["entries"][0]["to"], serde_json::Value::Null);
        assert_eq!(v["entries"][2]["seconds"], 21 * 3600 + 28 * 60);
        assert_eq!(v["consumers"][0]["intervals"], 2);
        assert_eq!(v["since"], "2026-11-22T12:00:00Z");
    }

    #[test]
    fn silences_grants_repairs_and_provider_faults_have_their_lines() {
        let heard = t(
            "2026-11-27T01:00:00Z",
            Change::HeardAgain {
                provider: provider(),
                since: ts("2026-11-27T00:03:00Z"),
            },
        );
        let follows = t(
            "2026-11-27T01:00:00Z",
            Change::FollowingAgain {
                since: ts("2026-11-27T00:03:00Z"),
            },
        );
        let repair = t(
            "2026-11-27T01:00:00Z",
            Change::RepairBraked(RepairChange {
                provider: provider(),
                fault: Name::parse("admin-refused").unwrap(),
                detail: "next in 10 min".into(),
            }),
        );
        let agent = ModuleId::parse("wiki@app-1").unwrap();
        let unreachable = t(
            "2026-11-27T02:00:00Z",
            Change::GrantUnreachable {
                provider: Some(provider()),
                consumer: agent.clone(),
                provision: "postgres-database".into(),
                error: "password authentication failed".into(),
                since: ts("2026-11-27T01:58:00Z"),
                attempts: 3,
                address: "10.0.0.1:5432".into(),
            },
        );
        let reachable = t(
            "2026-11-27T02:10:00Z",
            Change::GrantReachable {
                provider: Some(provider()),
                consumer: agent,
                provision: "postgres-database".into(),
                reason: "success".into(),
            },
        );
        let fault = |at: &str, class, error: &str, since: &str| {
            let change = Change::ProviderFaultBegan {
                provider: provider(),
                class,
                error: error.into(),
                since: ts(since),
            };
            t(at, change)
        };
        let cleared = t(
            "2026-11-28T00:20:00Z",
            Change::ProviderFaultCleared {
                provider: provider(),
                class: Class::CredentialsRejected,
                since: ts("2026-11-28T00:00:00Z"),
            },
        );
        let again = fault(
            "2026-11-29T11:00:00Z",
            Class::Unreachable,
            "connection refused",
            "2026-11-29T11:00:00Z",
        );
        let fault = fault(
            "2026-11-28T00:00:05Z",
            Class::CredentialsRejected,
            "password authentication\nfailed",
            "2026-11-28T00:00:00Z",
        );
        let rows = [
            heard,
            follows,
            repair,
            unreachable,
            reachable,
            fault,
            cleared,
            again,
        ];
        let lines: Vec<String> = entries(&rows, ts("2026-11-29T12:00:00Z"))
            .iter()
            .map(line)
            .collect();
        assert_eq!(
            lines,
            [
                "postgres@db-1: cannot work as its administrator (unreachable: connection refused) 2026-11-29 11:00 → now (1 h), still so",
                "postgres@db-1: cannot work as its administrator (credentials-rejected: password authentication failed) 2026-11-28 00:00 → 00:20 (20 min), cleared",
                "wiki@app-1 grant from postgres@db-1 (10.0.0.1:5432): unreachable 2026-11-27 01:58 → 02:10 (12 min), reachable again (success)",
                "postgres@db-1: repair admin-refused braked 2026-11-27 01:00: next in 10 min",
                "postgres@db-1: not heard from 2026-11-27 00:03 → 01:00 (57 min), heard again",
                "mesh-controller: followed no events 2026-11-27 00:03 → 01:00 (57 min), following again",
            ]
        );
    }
}
