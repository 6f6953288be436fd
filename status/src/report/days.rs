//! A consumer's failing time per day (the console's bars, one per UTC day,
//! like Gatus's): from its failing intervals in history (pure).

use mesh_protocol::Timestamp;

use super::history::{EntryKind, HistoryEntry};

/// Seconds in a day.
const DAY_SECONDS: u64 = 86_400;

/// One UTC day's bar.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Day {
    /// Midnight (UTC) the day begins at.
    pub start: Timestamp,
    /// How long it was failing that day (of the day so far for today).
    pub failing_seconds: u64,
    /// How long the day is so far: a whole day, or for today until now.
    pub seconds: u64,
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
/// first, each with the time the failing intervals among `entries`
/// cover in it (an interval still lasting runs to `now`; overlapping
/// intervals count once; other entries are left out; one with no known
/// beginning counts from the first day shown).
pub fn failing_days(entries: &[HistoryEntry], now: Timestamp, days: u32) -> Vec<Day> {
    let now = unix(now);
    let today = now - now % DAY_SECONDS;
    let first = today.saturating_sub(DAY_SECONDS * u64::from(days.saturating_sub(1)));
    let mut spans: Vec<(u64, u64)> = entries
        .iter()
        .filter(|e| e.kind == EntryKind::Failing)
        .map(|e| {
            let from = e.from.map_or(first, unix);
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
    (0..u64::from(days))
        .map(|i| {
            let start = first + i * DAY_SECONDS;
            let end = (start + DAY_SECONDS).min(now.max(start));
            let failing_seconds = merged
                .iter()
                .map(|&(from, to)| to.min(end).saturating_sub(from.max(start)))
                .sum();
            Day {
                start: at(start),
                failing_seconds,
                seconds: end - start,
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
        }
    }

    fn bars(entries: &[HistoryEntry], now: &str, days: u32) -> Vec<(String, u64, u64)> {
        failing_days(entries, ts(now), days)
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

    #[test]
    fn a_whole_day_failing_is_the_whole_day() {
        let entries = [failing(Some("2026-11-20T00:00:00Z"), None)];
        let b = bars(&entries, "2026-11-27T06:00:00Z", 2);
        assert_eq!((b[0].1, b[0].2), (DAY_SECONDS, DAY_SECONDS));
        assert_eq!((b[1].1, b[1].2), (6 * 3600, 6 * 3600));
    }
}
