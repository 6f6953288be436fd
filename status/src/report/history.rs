//! What history says (pure: no I/O): the intervals `mesh-controller
//! history` lists, newest first ([`entries`]), the per-consumer totals
//! ([`summaries`]), and the recurrence `status` names on a standing's line
//! ([`recurrence`], [`Recurrences`]) and on an open repair fault's
//! ([`crate::model::row::RepairsDone`]).
//!
//! Rules:
//! - A failing interval runs from the first `since` its `failing-began`
//!   says to its `recovered`; the `recovered` row carries that `since` too,
//!   so an interval that began before the window still has its start.
//!   One still open runs to now.
//! - A grant's unreachable interval runs from its `failing_since` to the
//!   `reachable` after it; a provider's silence and the controller's
//!   (each recorded when it ends) from their `since` to when they ended.
//! - A provider fault runs from the `since` its `provider-fault-began`
//!   says to its `provider-fault-cleared` (which carries that `since` and
//!   class too), or to the next `provider-fault-began` of another class.
//! - Recurrence: a standing failing now whose consumer recovered before
//!   within the window is in its Nth interval there (N = the recoveries + 1).
//!   One that recovered [`FLAPPING_AFTER`] times or more within the last
//!   [`FLAPPING_WITHIN`] is *flapping*, said once as such. The store counts
//!   the recoveries of each standing in one read ([`Recoveries`]): only
//!   those that ended an interval begun before the current one, and the
//!   class of the last from its beginning within the window.

use std::collections::HashMap;
use std::time::Duration;

use mesh_protocol::{Class, ModuleId, Name, Timestamp};
use serde::Serialize;

use crate::model::history::{Change, Recoveries, Transition};
use crate::model::{AckRow, NoteRow};

/// The default `--recurrence-window` of `status`: 7 days.
pub const DEFAULT_RECURRENCE_WINDOW: Duration = Duration::from_secs(7 * 24 * 3600);

/// The default `--since` of `history`: 7 days.
pub const DEFAULT_HISTORY_SINCE: Duration = Duration::from_secs(7 * 24 * 3600);

/// Recoveries within [`FLAPPING_WITHIN`] from which a consumer is flapping.
pub const FLAPPING_AFTER: u64 = 3;

/// How far back flapping is counted: an hour.
pub const FLAPPING_WITHIN: Duration = Duration::from_secs(3600);

/// What an entry of history is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum EntryKind {
    /// A consumer failing (an interval).
    Failing,
    /// A grant unreachable (an interval).
    GrantUnreachable,
    /// A provider not heard from (an interval).
    Unheard,
    /// The controller following nothing (an interval).
    NotFollowing,
    /// A consumer retired (a moment).
    Retired,
    /// A consumer re-enabled (a moment).
    ReEnabled,
    /// A consumer's provision deleted (a moment).
    Deleted,
    /// A repair done (a moment).
    RepairDone,
    /// A repair braked (a moment).
    RepairBraked,
    /// A provider that could not work as its administrator (an interval).
    ProviderFault,
    /// A note a person attached (a moment): `detail` the note, `by` who.
    Note,
    /// A person's action from the console (a moment): `reason` what was
    /// asked (`approve`, `approve-delete`, `acknowledge`), `by` who, `done`
    /// whether the provider did it, `detail` its answer (an
    /// acknowledgement's reason), `until` when an acknowledgement ends.
    Action,
}

/// One entry of `history`: an interval (`from` → `to`, `to` null while it
/// lasts) or a moment (`from` = `to`). Its JSON is an entry of `history
/// --json`'s `entries`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct HistoryEntry {
    /// What it is.
    pub kind: EntryKind,
    /// The provider's module (for a grant, of the provider it reaches);
    /// null for the controller's own.
    pub provider_module: Option<String>,
    /// The provider's machine.
    pub provider_machine: Option<String>,
    /// The consumer, if any.
    pub consumer: Option<String>,
    /// The consumer's machine, when known.
    pub consumer_machine: Option<String>,
    /// When it began; null when history does not say (a grant's interval
    /// that began before the window).
    pub from: Option<Timestamp>,
    /// When it ended; null while it lasts.
    pub to: Option<Timestamp>,
    /// How long it lasted (to now while it lasts), when `from` is known.
    pub seconds: Option<u64>,
    /// The failure's class, when known.
    pub class: Option<Class>,
    /// The start of the failure's message, when known.
    pub error: Option<String>,
    /// How it ended: the `recovered` or `reachable` reason, `cleared` for
    /// a provider fault that cleared (null when another class followed it).
    pub reason: Option<String>,
    /// The repair's fault.
    pub fault: Option<String>,
    /// For a person (a retirement's or repair's detail, a grant's address,
    /// a note's text).
    pub detail: Option<String>,
    /// Who wrote it (a note); absent for the providers' and the
    /// controller's entries.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub by: Option<String>,
    /// Whether the provider did what an action asked; absent for every
    /// other entry.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub done: Option<bool>,
    /// Until when an acknowledgement holds; absent for every other entry.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub until: Option<Timestamp>,
}

impl HistoryEntry {
    /// The entry of `kind` `t` begins or is, its fields those `t` carries
    /// (its times and how it ended are the caller's).
    fn of(kind: EntryKind, t: &Transition) -> HistoryEntry {
        let mut e = HistoryEntry {
            kind,
            provider_module: t.provider().map(|p| p.module.to_string()),
            provider_machine: t.provider().map(|p| p.machine.to_string()),
            consumer: None,
            consumer_machine: None,
            from: None,
            to: None,
            seconds: None,
            class: None,
            error: None,
            reason: None,
            fault: None,
            detail: None,
            by: None,
            done: None,
            until: None,
        };
        let name = |n: &Name| Some(n.to_string());
        let mut consumer = |c: &Name, m: Option<&Name>| {
            e.consumer = name(c);
            e.consumer_machine = m.and_then(name);
        };
        match &t.change {
            Change::FailingBegan {
                consumer: c,
                consumer_machine: m,
                class,
                error,
                ..
            } => {
                consumer(c, m.as_ref());
                (e.class, e.error) = (Some(*class), Some(error.clone()));
            }
            Change::Recovered {
                consumer: c,
                consumer_machine: m,
                ..
            } => consumer(c, m.as_ref()),
            Change::Retired(r) | Change::ReEnabled(r) | Change::Deleted(r) => {
                consumer(&r.consumer, None);
                e.detail = Some(r.detail.clone());
            }
            Change::RepairDone(r) | Change::RepairBraked(r) => {
                e.fault = name(&r.fault);
                e.detail = Some(r.detail.clone());
            }
            Change::GrantUnreachable {
                consumer: c,
                error,
                address,
                ..
            } => {
                consumer(&c.module, Some(&c.machine));
                (e.error, e.detail) = (Some(error.clone()), Some(address.clone()));
            }
            Change::GrantReachable { consumer: c, .. } => consumer(&c.module, Some(&c.machine)),
            Change::ProviderFaultBegan { class, error, .. } => {
                (e.class, e.error) = (Some(*class), Some(error.clone()));
            }
            Change::ProviderFaultCleared { class, .. } => e.class = Some(*class),
            Change::Note {
                consumer: c,
                text,
                by,
                ..
            } => {
                consumer(&c.module, Some(&c.machine));
                (e.detail, e.by) = (Some(text.clone()), Some(by.clone()));
            }
            Change::Action(a) => {
                consumer(&a.consumer, a.consumer_machine.as_ref());
                e.until = a.until;
                e.reason = Some(a.action.as_str().to_owned());
                (e.detail, e.by, e.done) = (Some(a.answer.clone()), Some(a.by.clone()), Some(a.ok));
            }
            Change::HeardAgain { .. } | Change::FollowingAgain { .. } => {}
        }
        e
    }

    fn moment(kind: EntryKind, t: &Transition) -> HistoryEntry {
        let mut e = HistoryEntry::of(kind, t);
        e.from = Some(t.at);
        e.to = Some(t.at);
        e.seconds = Some(0);
        e
    }

    /// `provider@machine`, when it has a provider.
    pub fn provider(&self) -> Option<String> {
        Some(format!(
            "{}@{}",
            self.provider_module.as_deref()?,
            self.provider_machine.as_deref()?
        ))
    }

    /// Whether it is an interval still lasting.
    pub fn is_open(&self) -> bool {
        self.to.is_none()
    }
}

fn seconds(from: Timestamp, to: Timestamp) -> u64 {
    to.system_time()
        .duration_since(from.system_time())
        .unwrap_or_default()
        .as_secs()
}

/// The key intervals pair on: kind of interval, provider, consumer, and
/// for a grant its provision.
type Pair = (
    EntryKind,
    Option<ModuleId>,
    Option<String>,
    Option<String>,
    Option<String>,
);

/// The key of `e`, the entry `t` begins or ends.
fn pair(e: &HistoryEntry, t: &Transition) -> Pair {
    let provision = match &t.change {
        Change::GrantUnreachable { provision, .. } | Change::GrantReachable { provision, .. } => {
            Some(provision.clone())
        }
        _ => None,
    };
    let grant = e.kind == EntryKind::GrantUnreachable;
    (
        e.kind,
        t.provider().cloned(),
        e.consumer.clone(),
        e.consumer_machine.clone().filter(|_| grant),
        provision.filter(|_| grant),
    )
}

/// What a transition does to the entries: begins an interval (from its
/// `since`), ends one (begun at `since`, with how it ended), is a silence
/// that ended (from `since` to when it ended), or is a moment.
enum Step<'a> {
    Begins(EntryKind, Timestamp),
    Ends(EntryKind, Option<Timestamp>, &'a str),
    Silence(EntryKind, Timestamp),
    Moment(EntryKind),
}

fn step(t: &Transition) -> Step<'_> {
    use EntryKind as E;
    match &t.change {
        Change::FailingBegan { since, .. } => Step::Begins(E::Failing, *since),
        Change::GrantUnreachable { since, .. } => Step::Begins(E::GrantUnreachable, *since),
        Change::ProviderFaultBegan { since, .. } => Step::Begins(E::ProviderFault, *since),
        Change::Recovered { since, reason, .. } => Step::Ends(E::Failing, Some(*since), reason),
        // A grant's reachable does not say when it became unreachable.
        Change::GrantReachable { reason, .. } => Step::Ends(E::GrantUnreachable, None, reason),
        Change::ProviderFaultCleared { since, .. } => {
            Step::Ends(E::ProviderFault, Some(*since), "cleared")
        }
        Change::HeardAgain { since, .. } => Step::Silence(E::Unheard, *since),
        Change::FollowingAgain { since } => Step::Silence(E::NotFollowing, *since),
        Change::Retired(_) => Step::Moment(E::Retired),
        Change::ReEnabled(_) => Step::Moment(E::ReEnabled),
        Change::Deleted(_) => Step::Moment(E::Deleted),
        Change::RepairDone(_) => Step::Moment(E::RepairDone),
        Change::RepairBraked(_) => Step::Moment(E::RepairBraked),
        Change::Note { .. } => Step::Moment(E::Note),
        Change::Action(_) => Step::Moment(E::Action),
    }
}

/// The entries `rows` (oldest first, as the store gives them) make at
/// `now`, newest first (by when they began, or ended when that is all
/// history says).
pub fn entries(rows: &[Transition], now: Timestamp) -> Vec<HistoryEntry> {
    let mut out: Vec<HistoryEntry> = Vec::new();
    let mut open: HashMap<Pair, usize> = HashMap::new();
    for t in rows {
        match step(t) {
            Step::Begins(kind, since) => {
                let mut e = HistoryEntry::of(kind, t);
                e.from = Some(since);
                if let Some(before) = open.insert(pair(&e, t), out.len()) {
                    // Began again without an end said: the earlier one
                    // ended no later than this one began.
                    let ended = e.from;
                    let b = &mut out[before];
                    b.to = ended;
                    b.seconds = b.from.zip(ended).map(|(f, t)| seconds(f, t));
                }
                out.push(e);
            }
            Step::Ends(kind, since, reason) => {
                let end = HistoryEntry::of(kind, t);
                let i = match open.remove(&pair(&end, t)) {
                    Some(i) => i,
                    None => {
                        // It began before the rows read.
                        let mut e = end.clone();
                        e.from = since;
                        out.push(e);
                        out.len() - 1
                    }
                };
                let e = &mut out[i];
                e.to = Some(t.at);
                e.seconds = e.from.map(|f| seconds(f, t.at));
                e.reason = Some(reason.to_owned());
                if e.consumer_machine.is_none() {
                    e.consumer_machine = end.consumer_machine;
                }
            }
            Step::Silence(kind, since) => {
                let mut e = HistoryEntry::of(kind, t);
                e.from = Some(since);
                e.to = Some(t.at);
                e.seconds = Some(seconds(since, t.at));
                out.push(e);
            }
            Step::Moment(kind) => out.push(HistoryEntry::moment(kind, t)),
        }
    }
    for e in &mut out {
        if e.to.is_none() {
            e.seconds = e.from.map(|f| seconds(f, now));
        }
    }
    out.sort_by_key(|e| std::cmp::Reverse(e.from.or(e.to)));
    out
}

/// Per consumer (and provider), what its failing intervals in the window
/// add up to. Its JSON is an entry of `history --json`'s `consumers`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ConsumerSummary {
    /// The provider's module.
    pub provider_module: String,
    /// The provider's machine.
    pub provider_machine: String,
    /// The consumer.
    pub consumer: String,
    /// The consumer's machine, when known.
    pub consumer_machine: Option<String>,
    /// Its failing intervals in the window.
    pub intervals: u64,
    /// How long it failed in the window, in seconds (an interval begun
    /// before the window counts from the window's start).
    pub failing_seconds: u64,
    /// Its longest interval, in seconds (whole, even begun before the window).
    pub longest_seconds: u64,
}

/// The [`ConsumerSummary`] of each consumer with failing intervals among
/// `entries`, in the window from `window_start` to `now`, in order of
/// provider and consumer.
pub fn summaries(
    entries: &[HistoryEntry],
    window_start: Timestamp,
    now: Timestamp,
) -> Vec<ConsumerSummary> {
    let mut by: HashMap<(String, String, String), ConsumerSummary> = HashMap::new();
    for e in entries.iter().filter(|e| e.kind == EntryKind::Failing) {
        let (Some(module), Some(machine), Some(consumer)) =
            (&e.provider_module, &e.provider_machine, &e.consumer)
        else {
            continue;
        };
        let s = by
            .entry((module.clone(), machine.clone(), consumer.clone()))
            .or_insert_with(|| ConsumerSummary {
                provider_module: module.clone(),
                provider_machine: machine.clone(),
                consumer: consumer.clone(),
                consumer_machine: None,
                intervals: 0,
                failing_seconds: 0,
                longest_seconds: 0,
            });
        if s.consumer_machine.is_none() {
            s.consumer_machine = e.consumer_machine.clone();
        }
        s.intervals += 1;
        let to = e.to.unwrap_or(now);
        let from = e.from.unwrap_or(window_start).max(window_start);
        s.failing_seconds += seconds(from, to);
        s.longest_seconds = s.longest_seconds.max(e.seconds.unwrap_or(0));
    }
    let mut out: Vec<ConsumerSummary> = by.into_values().collect();
    out.sort_by(|a, b| {
        (&a.provider_module, &a.provider_machine, &a.consumer).cmp(&(
            &b.provider_module,
            &b.provider_machine,
            &b.consumer,
        ))
    });
    out
}

/// A standing failing again within the window: its JSON is the
/// `recurrence` member of a `status --json` failing entry.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Recurrence {
    /// Which interval this is within the window (2: the second time).
    pub count: u64,
    /// The window, in seconds (`--recurrence-window`).
    pub window_seconds: u64,
    /// When the last interval before this one began, when known.
    pub last_since: Option<Timestamp>,
    /// When it ended (its `recovered`).
    pub last_until: Timestamp,
    /// Its class, when history has its beginning.
    pub last_class: Option<Class>,
    /// How long it lasted, when its beginning is known.
    pub last_seconds: Option<u64>,
    /// Recovered at least [`FLAPPING_AFTER`] times within [`FLAPPING_WITHIN`]:
    /// flapping.
    pub flapping: bool,
    /// The recoveries within [`FLAPPING_WITHIN`] before now.
    pub recovered_within_hour: u64,
    /// The newest note a person attached before this interval began
    /// (what was learnt last time); absent when none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_note: Option<NoteRow>,
}

/// The recurrence of a standing failing now, from what the store counted
/// of its history ([`Recoveries`]: its recoveries within `window`, each
/// ending an interval before the current one).
pub fn recurrence(r: &Recoveries, window: Duration) -> Recurrence {
    Recurrence {
        count: r.count + 1,
        window_seconds: window.as_secs(),
        last_since: r.last_since,
        last_until: r.last_at,
        last_class: r.last_class,
        last_seconds: r.last_since.map(|s| seconds(s, r.last_at)),
        flapping: r.within_hour >= FLAPPING_AFTER,
        recovered_within_hour: r.within_hour,
        last_note: r.last_note.clone(),
    }
}

/// What the store counted of the history of the standings listed, by
/// (provider, consumer): what [`recurrence`] reads for each.
#[derive(Clone, Debug, Default)]
pub struct Recurrences {
    by_key: HashMap<(ModuleId, Name), Recoveries>,
    window: Duration,
    acknowledged: HashMap<(ModuleId, Name), Vec<AckRow>>,
}

impl Recurrences {
    /// From the store's counts, read within `window`.
    pub fn new(counted: Vec<Recoveries>, window: Duration) -> Recurrences {
        let by_key = counted
            .into_iter()
            .map(|r| ((r.provider.clone(), r.consumer.clone()), r))
            .collect();
        Recurrences {
            by_key,
            window,
            acknowledged: HashMap::new(),
        }
    }

    /// With the acknowledgements that still hold.
    pub fn with_acknowledgements(mut self, acks: Vec<AckRow>) -> Recurrences {
        for ack in acks {
            self.acknowledged
                .entry((ack.provider.clone(), ack.consumer.clone()))
                .or_default()
                .push(ack);
        }
        self
    }

    /// The newest acknowledgement that holds of `provider`'s standing for
    /// `consumer` on `machine` (on any machine when the standing does not
    /// say its consumer's, as events older than that field do not).
    pub fn acknowledged(
        &self,
        provider: &ModuleId,
        consumer: &Name,
        machine: Option<&Name>,
    ) -> Option<AckRow> {
        self.acknowledged
            .get(&(provider.clone(), consumer.clone()))?
            .iter()
            .filter(|a| machine.is_none_or(|m| *m == a.consumer_machine))
            .max_by_key(|a| a.at)
            .cloned()
    }

    /// The recurrence of `provider`'s standing for `consumer`, `None` for
    /// one that did not recover within the window before.
    pub fn of(&self, provider: &ModuleId, consumer: &Name) -> Option<Recurrence> {
        let r = self.by_key.get(&(provider.clone(), consumer.clone()))?;
        Some(recurrence(r, self.window))
    }

    /// The window.
    pub fn window(&self) -> Duration {
        self.window
    }
}

/// Where a window of `span` ending at `now` begins (the epoch for a span
/// the clock cannot go back by): what `history --since`, the recurrence
/// window and a consumer's page read from.
pub fn window_start(now: Timestamp, span: Duration) -> Timestamp {
    Timestamp::from_system(
        now.system_time()
            .checked_sub(span)
            .unwrap_or(std::time::UNIX_EPOCH),
    )
}

/// `1st`, `2nd`, `3rd`, `4th`, … `11th`, `12th`, `13th`, `21st`.
pub fn ordinal(n: u64) -> String {
    let suffix = match (n % 10, n % 100) {
        (_, 11..=13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    };
    format!("{n}{suffix}")
}

/// A duration as a person reads it, the one style of every human surface
/// (status's lines, history, why, the console): `21 h 28 min`, `3 d 2 h`,
/// `12 min`, `40 s` (the two largest units, the smaller left out at 0).
pub fn duration_text(seconds: u64) -> String {
    let (d, h, m, s) = (
        seconds / 86_400,
        seconds % 86_400 / 3600,
        seconds % 3600 / 60,
        seconds % 60,
    );
    let two = |a: u64, ua: &str, b: u64, ub: &str| match b {
        0 => format!("{a} {ua}"),
        _ => format!("{a} {ua} {b} {ub}"),
    };
    match (d, h, m) {
        (0, 0, 0) => format!("{s} s"),
        (0, 0, _) => two(m, "min", s, "s"),
        (0, _, _) => two(h, "h", m, "min"),
        _ => two(d, "d", h, "h"),
    }
}

/// A bound as [`duration_text`] says it, never below `seconds`: rounded
/// up to the smallest unit it shows (`within the last 1 min 5 s`, `within
/// the last 1 h 2 min` for 1 h 1 min 30 s), so a claim made with it holds.
pub fn duration_text_at_least(seconds: u64) -> String {
    let unit = match seconds {
        0..3600 => 1,
        3600..86_400 => 60,
        _ => 3600,
    };
    duration_text(seconds.div_ceil(unit) * unit)
}

/// A window as a person reads it: `7 days`, `1 day`, `36 h`, `90 min`.
pub fn window_text(window: Duration) -> String {
    let s = window.as_secs();
    match s {
        _ if s >= 86_400 && s % 86_400 == 0 => match s / 86_400 {
            1 => "1 day".to_owned(),
            d => format!("{d} days"),
        },
        _ if s >= 3600 && s % 3600 == 0 => format!("{} h", s / 3600),
        _ if s >= 60 && s % 60 == 0 => format!("{} min", s / 60),
        _ => format!("{s} s"),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    fn ts(s: &str) -> Timestamp {
        Timestamp::parse(s).unwrap()
    }

    pub(crate) fn provider() -> ModuleId {
        ModuleId::parse("postgres@db-1").unwrap()
    }

    pub(crate) fn row(at: &str, change: Change) -> Transition {
        Transition {
            at: ts(at),
            place: None,
            change,
        }
    }

    /// wiki@app-1 failing from postgres@db-1 since `since`, said at `at`.
    pub(crate) fn began(at: &str, since: &str) -> Transition {
        row(
            at,
            Change::FailingBegan {
                provider: provider(),
                consumer: Name::parse("wiki").unwrap(),
                consumer_machine: Some(Name::parse("app-1").unwrap()),
                provision: Some("postgres-database".into()),
                class: Class::CredentialsRejected,
                error: "password authentication failed".into(),
                since: ts(since),
                attempts: 61,
            },
        )
    }

    /// wiki@app-1 recovered at `at` from failing since `since`.
    pub(crate) fn recovered(at: &str, since: &str) -> Transition {
        row(
            at,
            Change::Recovered {
                provider: provider(),
                consumer: Name::parse("wiki").unwrap(),
                consumer_machine: Some(Name::parse("app-1").unwrap()),
                provision: Some("postgres-database".into()),
                since: ts(since),
                reason: "success".into(),
            },
        )
    }

    #[test]
    fn intervals_pair_newest_first_and_an_open_one_runs_to_now() {
        let now = ts("2026-11-29T12:00:00Z");
        let rows = [
            began("2026-11-27T00:12:00Z", "2026-11-27T00:12:00Z"),
            recovered("2026-11-27T21:40:00Z", "2026-11-27T00:12:00Z"),
            began("2026-11-29T11:00:00Z", "2026-11-29T11:00:00Z"),
        ];
        let e = entries(&rows, now);
        assert_eq!(e.len(), 2);
        assert_eq!(e[0].from, Some(ts("2026-11-29T11:00:00Z")));
        assert_eq!((e[0].to, e[0].seconds), (None, Some(3600)));
        assert_eq!(e[1].to, Some(ts("2026-11-27T21:40:00Z")));
        assert_eq!(e[1].seconds, Some(21 * 3600 + 28 * 60));
        assert_eq!(e[1].reason.as_deref(), Some("success"));
        assert_eq!(e[1].class, Some(Class::CredentialsRejected));
        let s = summaries(&e, ts("2026-11-22T12:00:00Z"), now);
        assert_eq!(s.len(), 1);
        assert_eq!(
            (s[0].intervals, s[0].failing_seconds, s[0].longest_seconds),
            (2, 21 * 3600 + 28 * 60 + 3600, 21 * 3600 + 28 * 60)
        );
    }

    #[test]
    fn an_interval_begun_before_the_window_keeps_its_start_and_counts_from_the_window() {
        let now = ts("2026-11-29T12:00:00Z");
        let rows = [recovered("2026-11-29T02:00:00Z", "2026-11-20T00:00:00Z")];
        let e = entries(&rows, now);
        assert_eq!(e[0].from, Some(ts("2026-11-20T00:00:00Z")));
        assert_eq!(e[0].class, None);
        let s = summaries(&e, ts("2026-11-29T00:00:00Z"), now);
        assert_eq!(s[0].failing_seconds, 2 * 3600);
        assert_eq!(s[0].longest_seconds, 9 * 86_400 + 2 * 3600);
    }

    #[test]
    fn began_again_without_an_end_closes_the_one_before() {
        let now = ts("2026-11-29T12:00:00Z");
        let rows = [
            began("2026-11-29T01:00:00Z", "2026-11-29T01:00:00Z"),
            began("2026-11-29T03:00:00Z", "2026-11-29T03:00:00Z"),
        ];
        let e = entries(&rows, now);
        assert_eq!(e[1].to, Some(ts("2026-11-29T03:00:00Z")));
        assert!(e[0].is_open());
    }

    #[test]
    fn a_provider_fault_is_an_interval_ended_by_its_clearing_or_by_another_class() {
        let now = ts("2026-11-29T12:00:00Z");
        #[derive(Clone, Copy)]
        enum Fault {
            Began,
            Cleared,
        }
        use Fault::{Began, Cleared};
        let fault = |kind, at: &str, class, since: &str| {
            let (provider, since) = (provider(), ts(since));
            let change = match kind {
                Began => Change::ProviderFaultBegan {
                    provider,
                    class,
                    error: "password authentication failed".into(),
                    since,
                },
                Cleared => Change::ProviderFaultCleared {
                    provider,
                    class,
                    since,
                },
            };
            row(at, change)
        };
        use Class::{CredentialsRejected as Rejected, Unreachable};
        let rows = [
            fault(
                Began,
                "2026-11-29T01:00:05Z",
                Rejected,
                "2026-11-29T01:00:00Z",
            ),
            fault(
                Cleared,
                "2026-11-29T02:00:00Z",
                Rejected,
                "2026-11-29T01:00:00Z",
            ),
            fault(
                Began,
                "2026-11-29T03:00:00Z",
                Rejected,
                "2026-11-29T03:00:00Z",
            ),
            fault(
                Began,
                "2026-11-29T04:00:00Z",
                Unreachable,
                "2026-11-29T04:00:00Z",
            ),
        ];
        let e = entries(&rows, now);
        let got: Vec<_> = e
            .iter()
            .map(|e| (e.kind, e.class, e.seconds, e.reason.as_deref()))
            .collect();
        assert_eq!(
            got,
            [
                (
                    EntryKind::ProviderFault,
                    Some(Unreachable),
                    Some(8 * 3600),
                    None
                ),
                (EntryKind::ProviderFault, Some(Rejected), Some(3600), None),
                (
                    EntryKind::ProviderFault,
                    Some(Rejected),
                    Some(3600),
                    Some("cleared")
                ),
            ]
        );
        assert!(e[0].is_open() && !e[1].is_open());
        // Cleared, its beginning before the rows read: it keeps its start.
        let e = entries(&rows[1..2], now);
        assert_eq!(e[0].from, Some(ts("2026-11-29T01:00:00Z")));
        assert_eq!(e[0].class, Some(Rejected));
        // No consumer failed: the totals name none.
        assert!(summaries(&entries(&rows, now), ts("2026-11-22T12:00:00Z"), now).is_empty());
    }

    #[test]
    fn recurrence_table() {
        let week = DEFAULT_RECURRENCE_WINDOW;
        let counted = |count: u64, within_hour: u64| Recoveries {
            provider: ModuleId::parse("postgres@db-1").unwrap(),
            consumer: Name::parse("wiki").unwrap(),
            count,
            within_hour,
            last_at: ts("2026-11-27T21:40:00Z"),
            last_since: Some(ts("2026-11-27T00:12:00Z")),
            last_class: Some(Class::CredentialsRejected),
            last_note: None,
        };
        // (recoveries, of them within the hour, expected (count, flapping))
        let cases = [
            (1, 0, (2, false)),
            (2, 2, (3, false)),
            (3, 3, (4, true)),
            (5, 3, (6, true)),
            (5, 2, (6, false)),
        ];
        for (count, hour, expected) in cases {
            let r = recurrence(&counted(count, hour), week);
            assert_eq!((r.count, r.flapping), expected, "{count} {hour}");
            assert_eq!(r.recovered_within_hour, hour);
            assert_eq!(r.window_seconds, 7 * 86_400);
        }
        let r = recurrence(&counted(1, 0), week);
        assert_eq!(r.last_class, Some(Class::CredentialsRejected));
        assert_eq!(r.last_seconds, Some(21 * 3600 + 28 * 60));
        assert_eq!(r.last_until, ts("2026-11-27T21:40:00Z"));
        let unknown = Recoveries {
            last_since: None,
            ..counted(1, 0)
        };
        assert_eq!(recurrence(&unknown, week).last_seconds, None);
        let by_key = Recurrences::new(vec![counted(1, 0)], week);
        let provider = ModuleId::parse("postgres@db-1").unwrap();
        assert_eq!(
            by_key
                .of(&provider, &Name::parse("wiki").unwrap())
                .map(|r| r.count),
            Some(2)
        );
        assert_eq!(by_key.of(&provider, &Name::parse("forge").unwrap()), None);
    }

    #[test]
    fn a_window_begins_its_span_before_now() {
        let now = ts("2026-11-29T12:00:00Z");
        assert_eq!(
            window_start(now, DEFAULT_RECURRENCE_WINDOW),
            ts("2026-11-22T12:00:00Z")
        );
        assert_eq!(window_start(now, Duration::ZERO), now);
    }

    #[test]
    fn ordinals_and_durations_table() {
        let ordinals = [(1, "1st"), (2, "2nd"), (3, "3rd"), (4, "4th"), (11, "11th")];
        for (n, text) in ordinals {
            assert_eq!(ordinal(n), text);
        }
        for (n, text) in [
            (12, "12th"),
            (13, "13th"),
            (21, "21st"),
            (22, "22nd"),
            (101, "101st"),
        ] {
            assert_eq!(ordinal(n), text);
        }
        let durations = [
            (0, "0 s"),
            (40, "40 s"),
            (60, "1 min"),
            (12 * 60 + 5, "12 min 5 s"),
            (3600, "1 h"),
            (90 * 60, "1 h 30 min"),
            (21 * 3600 + 28 * 60, "21 h 28 min"),
            (86_400, "1 d"),
            (3 * 86_400 + 2 * 3600 + 5, "3 d 2 h"),
        ];
        for (s, text) in durations {
            assert_eq!(duration_text(s), text);
        }
        let bounds = [
            (0, "0 s"),
            (65, "1 min 5 s"),
            (3599, "59 min 59 s"),
            (3600, "1 h"),
            (3601, "1 h 1 min"),
            (3600 + 90, "1 h 2 min"),
            (86_399, "1 d"),
            (86_400 + 1, "1 d 1 h"),
        ];
        for (s, text) in bounds {
            assert_eq!(duration_text_at_least(s), text, "{s} s");
        }
        let windows = [
            (7 * 86_400, "7 days"),
            (86_400, "1 day"),
            (36 * 3600, "36 h"),
            (90, "90 s"),
        ];
        for (s, text) in windows {
            assert_eq!(window_text(Duration::from_secs(s)), text);
        }
    }
}
