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

use std::collections::HashSet;
use std::io::{self, Write};
use std::time::Duration;

use mesh_sdk::Timestamp;
use serde::Serialize;

use crate::declaration::Parsed;
use crate::store::{FailingRow, RepairRow, Snapshot};

mod paged;

pub use paged::{compose_paged, PagedReport};

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

/// One listed standing: a provider says it keeps failing a consumer. Its
/// JSON is the stored word's fields, then `silent_for_seconds`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Standing {
    /// The stored failing word.
    #[serde(flatten)]
    pub row: FailingRow,
    /// Seconds since it was said, when that is more than `silent_after`; else null.
    pub silent_for_seconds: Option<u64>,
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
    /// The open repair faults (the newest repair word of each, not `repaired`).
    pub repairs: Vec<RepairRow>,
    /// Declaration entries that were refused (they were not checked).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub declaration_errors: Vec<String>,
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

/// Which providers are assigned, and what a scope looks at.
pub(crate) struct View<'d> {
    declaration: &'d Parsed,
    assigned: HashSet<(&'d str, &'d str)>,
    scope: &'d Scope,
}

impl<'d> View<'d> {
    pub(crate) fn new(declaration: &'d Parsed, scope: &'d Scope) -> View<'d> {
        let assigned = declaration
            .declaration
            .modules
            .iter()
            .map(|m| (m.id.module.as_str(), m.id.machine.as_str()))
            .collect();
        View {
            declaration,
            assigned,
            scope,
        }
    }

    /// The declaration lists `module` on `machine`.
    pub(crate) fn is_assigned(&self, module: &str, machine: &str) -> bool {
        self.assigned.contains(&(module, machine))
    }

    fn in_scope(&self, provider_machine: &str, consumer_machine: Option<&str>) -> bool {
        match self.scope {
            Scope::All => true,
            Scope::Machine(m) => provider_machine == m || consumer_machine == Some(m.as_str()),
        }
    }

    /// The open repairs listed, in order.
    fn repairs(&self, open: Vec<RepairRow>) -> Vec<RepairRow> {
        let mut repairs: Vec<RepairRow> = open
            .into_iter()
            .filter(|r| self.is_assigned(&r.provider_module, &r.provider_machine))
            .filter(|r| self.in_scope(&r.provider_machine, None))
            .collect();
        repairs.sort_by(|a, b| {
            (&a.provider_module, &a.provider_machine, &a.fault).cmp(&(
                &b.provider_module,
                &b.provider_machine,
                &b.fault,
            ))
        });
        repairs
    }

    /// The report around its standings (listed apart): all-well, the
    /// sentence, the repairs and the refused declaration entries.
    pub(crate) fn report(
        &self,
        failing: usize,
        silent: usize,
        open_repairs: Vec<RepairRow>,
        clock: &Clock,
    ) -> Report {
        let d = &self.declaration.declaration;
        let repairs = self.repairs(open_repairs);
        let declaration_errors: Vec<String> = self
            .declaration
            .refused
            .iter()
            .map(|e| e.to_string())
            .collect();
        let providers = d
            .modules
            .iter()
            .filter(|m| d.receives_contributions(&m.id))
            .filter(|m| self.in_scope(m.id.machine.as_str(), None))
            .count();
        let machine = match self.scope {
            Scope::All => None,
            Scope::Machine(m) => Some(m.as_str()),
        };
        let sentence = sentence(&Counts {
            failing,
            silent,
            repairs: repairs.len(),
            refused: declaration_errors.len(),
            providers,
            silent_after: clock.silent_after,
            machine,
        });
        Report {
            machine: machine.map(str::to_owned),
            all_well: failing == 0 && repairs.is_empty() && declaration_errors.is_empty(),
            sentence,
            failing: Vec::new(),
            repairs,
            declaration_errors,
        }
    }
}

/// Composes the report (pure).
///
/// Standings are listed by provider module, provider machine, consumer;
/// repairs by provider module, provider machine, fault.
pub fn compose(declaration: &Parsed, snapshot: Snapshot, clock: &Clock, scope: &Scope) -> Report {
    let view = View::new(declaration, scope);
    let mut failing: Vec<Standing> = snapshot
        .failing
        .into_iter()
        .filter(|r| view.is_assigned(&r.provider_module, &r.provider_machine))
        .filter(|r| view.in_scope(&r.provider_machine, r.consumer_machine.as_deref()))
        .map(|r| standing(r, clock))
        .collect();
    failing.sort_unstable_by(|a, b| {
        (
            &a.row.provider_module,
            &a.row.provider_machine,
            &a.row.consumer,
        )
            .cmp(&(
                &b.row.provider_module,
                &b.row.provider_machine,
                &b.row.consumer,
            ))
    });
    let silent = failing
        .iter()
        .filter(|s| s.silent_for_seconds.is_some())
        .count();
    let mut report = view.report(failing.len(), silent, snapshot.open_repairs, clock);
    report.failing = failing;
    report
}

fn standing(r: FailingRow, clock: &Clock) -> Standing {
    Standing {
        silent_for_seconds: silent_for(r.said_at, clock),
        row: r,
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
            let consumer_machine = s.row.consumer_machine.as_deref().unwrap_or("?");
            let provision = s.row.provision.as_deref().unwrap_or("?");
            write!(
                out,
                "  {}@{} fails {}@{} ({}): {} since {}, {}, said {}",
                s.row.provider_module,
                s.row.provider_machine,
                s.row.consumer,
                consumer_machine,
                one_line(provision),
                s.row.class,
                s.row.since,
                plural(
                    usize::try_from(s.row.attempts).unwrap_or(0),
                    "attempt",
                    "attempts"
                ),
                s.row.said_at,
            )?;
            if let Some(secs) = s.silent_for_seconds {
                write!(
                    out,
                    ", silent for {}",
                    humantime::format_duration(Duration::from_secs(secs))
                )?;
            }
            writeln!(out, ": {}", one_line(&s.row.error))?;
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

    /// The JSON form: one object, one line (the same as this type's
    /// `Serialize`, written directly: 100,000 standings are tens of MB).
    ///
    /// # Errors
    /// When writing fails.
    pub fn write_json(&self, out: &mut dyn Write) -> io::Result<()> {
        self.write_json_listing(out, |w| {
            for (i, s) in self.failing.iter().enumerate() {
                if i > 0 {
                    w.raw(",");
                }
                standing_fields(w, &s.row);
                w.silent_for(s.silent_for_seconds);
                w.flush_if_full()?;
            }
            Ok(())
        })
    }

    /// The JSON form with `list` writing the standings (inside the array).
    pub(crate) fn write_json_listing(
        &self,
        out: &mut dyn Write,
        list: impl FnOnce(&mut JsonWriter<'_>) -> io::Result<()>,
    ) -> io::Result<()> {
        let mut w = JsonWriter::new(out);
        w.raw("{");
        if let Some(machine) = &self.machine {
            w.raw("\"machine\":");
            w.string(machine);
            w.raw(",");
        }
        w.raw(if self.all_well {
            "\"all_well\":true,\"sentence\":"
        } else {
            "\"all_well\":false,\"sentence\":"
        });
        w.string(&self.sentence);
        w.raw(",\"failing\":[");
        list(&mut w)?;
        w.raw("],\"repairs\":[");
        for (i, r) in self.repairs.iter().enumerate() {
            w.raw(if i == 0 { "{" } else { ",{" });
            w.field_str("provider_module", &r.provider_module, true);
            w.field_str("provider_machine", &r.provider_machine, false);
            w.field_str("fault", &r.fault, false);
            w.field_str("outcome", &r.outcome, false);
            w.field_str("detail", &r.detail, false);
            w.field_time("next_attempt_at", r.next_attempt_at);
            w.field_time("said_at", Some(r.said_at));
            w.raw("}");
            w.flush_if_full()?;
        }
        w.raw("]");
        if !self.declaration_errors.is_empty() {
            w.raw(",\"declaration_errors\":[");
            for (i, e) in self.declaration_errors.iter().enumerate() {
                if i > 0 {
                    w.raw(",");
                }
                w.string(e);
            }
            w.raw("]");
        }
        w.raw("}\n");
        w.finish()
    }
}

/// A standing's JSON up to its `said_at`: the object still open, its
/// `silent_for_seconds` and closing brace to come (they depend on the time
/// of the report). Status pages store exactly these bytes.
fn standing_fields(w: &mut Json, row: &FailingRow) {
    w.raw("{");
    w.field_str("provider_module", &row.provider_module, true);
    w.field_str("provider_machine", &row.provider_machine, false);
    w.field_str("consumer", &row.consumer, false);
    w.field_opt_str("consumer_machine", row.consumer_machine.as_deref());
    w.field_opt_str("provision", row.provision.as_deref());
    w.field_str("class", &row.class, false);
    w.field_str("error", &row.error, false);
    w.field_time("since", Some(row.since));
    w.raw(",\"attempts\":");
    w.int(row.attempts);
    w.field_time("said_at", Some(row.said_at));
}

/// Appends a standing's JSON up to its `said_at` (see [`standing_fields`]) to `buf`.
pub(crate) fn standing_json(buf: &mut Vec<u8>, row: &FailingRow) {
    let mut json = Json {
        buf: std::mem::take(buf),
    };
    standing_fields(&mut json, row);
    *buf = json.buf;
}

/// JSON built in memory.
pub(crate) struct Json {
    buf: Vec<u8>,
}

impl Json {
    pub(crate) fn raw(&mut self, text: &str) {
        self.buf.extend_from_slice(text.as_bytes());
    }

    pub(crate) fn bytes(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }

    /// Ends a standing begun by [`standing_json`].
    pub(crate) fn silent_for(&mut self, seconds: Option<u64>) {
        self.raw(",\"silent_for_seconds\":");
        match seconds {
            Some(n) => self.uint(n),
            None => self.raw("null"),
        }
        self.raw("}");
    }

    /// A JSON string; text that needs no escaping is copied as is.
    fn string(&mut self, text: &str) {
        let plain = text
            .bytes()
            .all(|b| b >= 0x20 && b != b'"' && b != b'\\' && b != 0x7f);
        if plain {
            self.buf.push(b'"');
            self.buf.extend_from_slice(text.as_bytes());
            self.buf.push(b'"');
        } else {
            serde_json::to_writer(&mut self.buf, text).expect("writing to a Vec cannot fail");
        }
    }

    fn key(&mut self, key: &str, first: bool) {
        if !first {
            self.buf.push(b',');
        }
        self.buf.push(b'"');
        self.buf.extend_from_slice(key.as_bytes());
        self.buf.extend_from_slice(b"\":");
    }

    fn field_str(&mut self, key: &str, value: &str, first: bool) {
        self.key(key, first);
        self.string(value);
    }

    fn field_opt_str(&mut self, key: &str, value: Option<&str>) {
        self.key(key, false);
        match value {
            Some(value) => self.string(value),
            None => self.raw("null"),
        }
    }

    fn field_time(&mut self, key: &str, value: Option<Timestamp>) {
        self.key(key, false);
        match value {
            Some(t) => {
                self.buf.push(b'"');
                rfc3339(&mut self.buf, t);
                self.buf.push(b'"');
            }
            None => self.raw("null"),
        }
    }

    fn int(&mut self, n: i64) {
        if n < 0 {
            self.buf.push(b'-');
        }
        self.uint(n.unsigned_abs());
    }

    fn uint(&mut self, mut n: u64) {
        let mut digits = [0u8; 20];
        let mut i = digits.len();
        loop {
            i -= 1;
            digits[i] = b'0' + (n % 10) as u8;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        self.buf.extend_from_slice(&digits[i..]);
    }
}

const FLUSH_AT: usize = 1 << 20;

/// Writes JSON into a buffer flushed to the output in large pieces.
pub(crate) struct JsonWriter<'a> {
    out: &'a mut dyn Write,
    json: Json,
}

impl std::ops::Deref for JsonWriter<'_> {
    type Target = Json;

    fn deref(&self) -> &Json {
        &self.json
    }
}

impl std::ops::DerefMut for JsonWriter<'_> {
    fn deref_mut(&mut self) -> &mut Json {
        &mut self.json
    }
}

impl<'a> JsonWriter<'a> {
    fn new(out: &'a mut dyn Write) -> Self {
        JsonWriter {
            out,
            json: Json {
                buf: Vec::with_capacity(FLUSH_AT + (1 << 16)),
            },
        }
    }

    pub(crate) fn flush_if_full(&mut self) -> io::Result<()> {
        if self.json.buf.len() >= FLUSH_AT {
            self.out.write_all(&self.json.buf)?;
            self.json.buf.clear();
        }
        Ok(())
    }

    fn finish(mut self) -> io::Result<()> {
        self.out.write_all(&self.json.buf)?;
        self.json.buf.clear();
        Ok(())
    }
}

/// `YYYY-MM-DDTHH:MM:SSZ`, as [`Timestamp`]'s `Display` writes it.
fn rfc3339(buf: &mut Vec<u8>, t: Timestamp) {
    let Ok(since_epoch) = t.system_time().duration_since(std::time::UNIX_EPOCH) else {
        buf.extend_from_slice(t.to_string().as_bytes());
        return;
    };
    let secs = since_epoch.as_secs();
    let days = i64::try_from(secs / 86_400).unwrap_or(i64::MAX);
    let rem = secs % 86_400;
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    if !(0..=9999).contains(&year) {
        buf.extend_from_slice(t.to_string().as_bytes());
        return;
    }
    let two = |buf: &mut Vec<u8>, n: u64| {
        buf.push(b'0' + (n / 10) as u8);
        buf.push(b'0' + (n % 10) as u8);
    };
    let year = year as u64;
    two(buf, year / 100);
    two(buf, year % 100);
    buf.push(b'-');
    two(buf, month as u64);
    buf.push(b'-');
    two(buf, day as u64);
    buf.push(b'T');
    two(buf, rem / 3600);
    buf.push(b':');
    two(buf, rem % 3600 / 60);
    buf.push(b':');
    two(buf, rem % 60);
    buf.push(b'Z');
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

    pub(super) fn row(module: &str, machine: &str, consumer: &str, said_at: &str) -> FailingRow {
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
            let listed: Vec<&str> = report
                .failing
                .iter()
                .map(|s| s.row.consumer.as_str())
                .collect();
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

    #[test]
    fn timestamps_are_written_as_display_writes_them() {
        let mut t = std::time::UNIX_EPOCH;
        // Every ~37 hours over 60 years, leap years and month ends included.
        for _ in 0..15_000 {
            let mut buf = Vec::new();
            rfc3339(&mut buf, Timestamp::from_system(t));
            assert_eq!(
                String::from_utf8(buf).unwrap(),
                Timestamp::from_system(t).to_string()
            );
            t += Duration::from_secs(37 * 3600 + 59);
        }
    }

    #[test]
    fn the_fast_json_is_the_serialize_json() {
        let mut r = row("postgres", "db-1", "forge", "2026-10-04T23:00:00Z");
        r.error = "quote \" backslash \\ newline \n tab \t nul \0 unicode é ✓ \u{7f}".into();
        r.attempts = 0;
        let mut plain = row("postgres", "db-1", "wiki", "2026-10-05T00:09:00Z");
        plain.consumer_machine = None;
        plain.provision = None;
        let mut braked = repair("identity", "id-1");
        braked.next_attempt_at = Some(ts("2028-02-29T23:59:59Z"));
        let parsed = parse(r#"{"modules":[{"module":"postgres","machine":"db-1","provides":["p"]},
            {"module":"identity","machine":"id-1","provides":["q"]},{"module":"Bad","machine":"x"}]}"#)
        .unwrap();
        let snapshot = Snapshot {
            failing: vec![plain, r],
            open_repairs: vec![braked, repair("identity", "id-1")],
        };
        let c = clock("2026-10-05T00:10:00Z");
        for scope in [Scope::All, Scope::Machine("db-1".into())] {
            for snapshot in [snapshot.clone(), Snapshot::default()] {
                let report = compose(&parsed, snapshot, &c, &scope);
                let mut out = Vec::new();
                report.write_json(&mut out).unwrap();
                assert!(out.ends_with(b"}\n"));
                let fast: serde_json::Value = serde_json::from_slice(&out).unwrap();
                assert_eq!(fast, serde_json::to_value(&report).unwrap(), "{scope:?}");
            }
        }
    }

    #[test]
    fn standings_are_listed_in_order() {
        let snapshot = Snapshot {
            failing: vec![
                row("postgres", "db-1", "wiki", "2026-10-05T00:09:00Z"),
                row("identity", "id-1", "zed", "2026-10-05T00:09:00Z"),
                row("postgres", "db-1", "forge", "2026-10-05T00:09:00Z"),
            ],
            open_repairs: vec![],
        };
        let report = compose(
            &declaration(),
            snapshot,
            &clock("2026-10-05T00:10:00Z"),
            &Scope::All,
        );
        let listed: Vec<&str> = report
            .failing
            .iter()
            .map(|s| s.row.consumer.as_str())
            .collect();
        assert_eq!(listed, ["zed", "forge", "wiki"]);
    }
}
