//! A consumer's failing time per day (the console's bars, one per UTC day,
//! like Gatus's): from its failing intervals in history (pure).

use mesh_protocol::Timestamp;

use super::history::{EntryKind, HistoryEntry};

/// Seconds in a day.
const DAY_SECONDS: u64 = 86_400;

/// Seconds in an hour.
const HOUR_SECONDS: u64 = 3600;

/// One bar: a UTC day (or hour) and the time failing in it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bar {
    /// When it begins (midnight UTC, or the hour).
    pub start: Timestamp,
    /// How long it was failing in its known part.
    pub failing_seconds: u64,
    /// How long it is so far: whole, or for the current one until now.
    pub seconds: u64,
    /// How much of it the store knows: after the store's record began.
    /// Zero: no data (grey, never green).
    pub known_seconds: u64,
}

impl Bar {
    /// No data at all: it ends before the store's record began (a bar
    /// that has not begun yet, the hour `now` opens, is not one).
    pub fn no_data(&self) -> bool {
        self.known_seconds == 0 && self.seconds > 0
    }
}

/// The share of `bars`' known time not failing, in hundredths of a per
/// cent (`9_993` is 99.93 %); `None` when nothing of them is known.
pub fn uptime(bars: &[Bar]) -> Option<u64> {
    let known: u64 = bars.iter().map(|b| b.known_seconds).sum();
    let failing: u64 = bars.iter().map(|b| b.failing_seconds).sum();
    // Rounded down: never more up than it was.
    (known > 0).then(|| (known - failing.min(known)) * 10_000 / known)
}

fn unix(t: Timestamp) -> u64 {
    t.system_time()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

fn at(secs: u64) -> Timestamp {
    Timestamp::from_system(std::time::UNIX_EPOCH + std::time::Duration::from_secs(secs))
}

/// The last `days` UTC days up to today's (the day `now` is in), oldest
/// first, each with the time failing in its known part (after
/// `known_from`, the store's beginning; all of it when `None`): an
/// interval still lasting runs to `now`, overlaps count once, only
/// failing intervals count.
pub fn failing_days(
    entries: &[HistoryEntry],
    now: Timestamp,
    days: u32,
    known_from: Option<Timestamp>,
) -> Vec<Bar> {
    bars(entries, now, days, DAY_SECONDS, known_from)
}

/// The last `hours` UTC hours up to the current one, oldest first, as
/// [`failing_days`] counts days.
pub fn failing_hours(
    entries: &[HistoryEntry],
    now: Timestamp,
    hours: u32,
    known_from: Option<Timestamp>,
) -> Vec<Bar> {
    bars(entries, now, hours, HOUR_SECONDS, known_from)
}

/// The last `count` bars of `size` seconds up to the one `now` is in,
/// oldest first, each with the time the failing intervals among `entries`
/// cover in its known part (after `known_from`, the store's record's
/// beginning; all of it when `None`). An interval still lasting runs to
/// `now`; overlapping intervals count once; other entries are left out;
/// one with no known beginning counts from the first bar shown.
fn bars(
    entries: &[HistoryEntry],
    now: Timestamp,
    count: u32,
    size: u64,
    known_from: Option<Timestamp>,
) -> Vec<Bar> {
    let now = unix(now);
    let current = now - now % size;
    let first = current.saturating_sub(size * u64::from(count.saturating_sub(1)));
    let known = known_from.map_or(0, unix);
    let mut spans: Vec<(u64, u64)> = entries
        .iter()
        .filter(|e| e.kind == EntryKind::Failing)
        .map(|e| {
            let from = e.from.map_or(first, unix).max(known);
            let to = e.to.map_or(now, unix).min(now);
            (from, to)
        })
        .filter(|(from, to)| to > from)
        .collect();
    spans.sort_unstable();
    let mut merged: Vec<(u64, u64)> = Vec::new();
    for (from, to) in spans {
        match merged.last_mut() {
            Some(last) if from <= last.1 => last.1 = last.1.max(to),
            _ => merged.push((from, to)),
        }
    }
    (0..u64::from(count))
        .map(|i| {
            let start = first + i * size;
            let end = (start + size).min(now.max(start));
            let failing_seconds = merged
                .iter()
                .map(|&(from, to)| to.min(end).saturating_sub(from.max(start)))
                .sum();
            Bar {
                start: at(start),
                failing_seconds,
                seconds: end - start,
                known_seconds: end - known.clamp(start, end),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ts(s: &str) -> Timestamp {
        Timestamp::parse(s).unwrap()
    }

    fn failing(from: Option<&str>, to: Option<&str>) -> HistoryEntry {
        HistoryEntry {
            kind: EntryKind::Failing,
            provider_module: Some("postgres".into()),
            provider_machine: Some("db-1".into()),
            consumer: Some("wiki".into()),
            consumer_machine: Some("app-1".into()),
            from: from.map(ts),
            to: to.map(ts),
            seconds: None,
            class: None,
            error: None,
            reason: None,
            fault: None,
            detail: None,
            by: None,
            done: None,
            until: None,
        }
    }

    fn bars(entries: &[HistoryEntry], now: &str, days: u32) -> Vec<(String, u64, u64)> {
        failing_days(entries, ts(now), days, None)
            .into_iter()
            .map(|d| (d.start.to_string(), d.failing_seconds, d.seconds))
            .collect()
    }

    #[test]
    fn no_interval_makes_empty_days_ending_today_so_far() {
        assert_eq!(
            bars(&[], "2026-11-27T06:00:00Z", 3),
            [
                ("2026-11-25T00:00:00Z".to_owned(), 0, DAY_SECONDS),
                ("2026-11-26T00:00:00Z".to_owned(), 0, DAY_SECONDS),
                ("2026-11-27T00:00:00Z".to_owned(), 0, 6 * 3600),
            ]
        );
    }

    #[test]
    fn an_interval_over_midnight_is_split_and_an_open_one_runs_to_now() {
        let entries = [
            failing(Some("2026-11-25T22:00:00Z"), Some("2026-11-26T01:30:00Z")),
            failing(Some("2026-11-27T05:00:00Z"), None),
        ];
        assert_eq!(
            bars(&entries, "2026-11-27T06:00:00Z", 3)
                .iter()
                .map(|b| b.1)
                .collect::<Vec<_>>(),
            [2 * 3600, 5400, 3600]
        );
    }

    #[test]
    fn overlaps_count_once_other_kinds_not_at_all_and_the_unknown_beginning_from_the_first_day() {
        let mut grant = failing(Some("2026-11-26T00:00:00Z"), Some("2026-11-26T12:00:00Z"));
        grant.kind = EntryKind::GrantUnreachable;
        let entries = [
            failing(Some("2026-11-26T10:00:00Z"), Some("2026-11-26T12:00:00Z")),
            failing(Some("2026-11-26T11:00:00Z"), Some("2026-11-26T13:00:00Z")),
            grant,
            failing(None, Some("2026-11-25T01:00:00Z")),
            failing(Some("2026-11-01T00:00:00Z"), Some("2026-11-02T00:00:00Z")),
        ];
        assert_eq!(
            bars(&entries, "2026-11-27T06:00:00Z", 3)
                .iter()
                .map(|b| b.1)
                .collect::<Vec<_>>(),
            [3600, 3 * 3600, 0]
        );
    }

    /// A mesh 30 s old has no green days: every bar before the store's
    /// record began is no data, the first day known only in part, its
    /// failing time counted only there.
    #[test]
    fn before_the_store_began_is_no_data_and_never_green() {
        let entries = [failing(Some("2026-11-25T00:00:00Z"), None)];
        let days = failing_days(
            &entries,
            ts("2026-11-27T06:00:00Z"),
            3,
            Some(ts("2026-11-27T05:59:30Z")),
        );
        assert_eq!(
            days.iter()
                .map(|d| (d.no_data(), d.known_seconds, d.failing_seconds))
                .collect::<Vec<_>>(),
            [(true, 0, 0), (true, 0, 0), (false, 30, 30)]
        );
        assert_eq!(uptime(&days), Some(0));
        let none = failing_days(
            &[],
            ts("2026-11-27T06:00:00Z"),
            2,
            Some(ts("2026-11-28T00:00:00Z")),
        );
        assert!(none.iter().all(Bar::no_data));
        assert_eq!(uptime(&none), None);
    }

    #[test]
    fn hours_split_an_interval_and_uptime_counts_only_what_is_known() {
        let entries = [failing(
            Some("2026-11-27T04:30:00Z"),
            Some("2026-11-27T05:15:00Z"),
        )];
        let hours = failing_hours(&entries, ts("2026-11-27T06:00:00Z"), 3, None);
        assert_eq!(
            hours
                .iter()
                .map(|h| (h.start.to_string(), h.failing_seconds, h.seconds))
                .collect::<Vec<_>>(),
            [
                ("2026-11-27T04:00:00Z".to_owned(), 1800, 3600),
                ("2026-11-27T05:00:00Z".to_owned(), 900, 3600),
                ("2026-11-27T06:00:00Z".to_owned(), 0, 0),
            ]
        );
        // 45 min failing of 2 h known: 62.5 % up.
        assert_eq!(uptime(&hours), Some(6250));
        // A 6 s blip in a day rounds down, never up to 100 %.
        let blip = [failing(
            Some("2026-11-26T10:00:00Z"),
            Some("2026-11-26T10:00:06Z"),
        )];
        let days = failing_days(&blip, ts("2026-11-27T00:00:00Z"), 2, None);
        assert_eq!(uptime(&days), Some(9999));
    }

    #[test]
    fn a_whole_day_failing_is_the_whole_day() {
        let entries = [failing(Some("2026-11-20T00:00:00Z"), None)];
        let b = bars(&entries, "2026-11-27T06:00:00Z", 2);
        assert_eq!((b[0].1, b[0].2), (DAY_SECONDS, DAY_SECONDS));
        assert_eq!((b[1].1, b[1].2), (6 * 3600, 6 * 3600));
    }
}
