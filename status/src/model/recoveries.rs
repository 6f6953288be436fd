//! What history says of the standings failing now, before their current
//! interval: the store reads each one's rows within the recurrence window
//! ([`PastRow`]), [`Recoveries::of_window`] counts them.

use mesh_protocol::{Class, ModuleId, Name, Timestamp};

use super::row::NoteRow;

/// What history says of a standing failing now, before its current
/// interval and within the recurrence window: how often it recovered, and
/// its last interval. What [`crate::report::history::recurrence`] is made
/// of.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Recoveries {
    /// The standing's provider.
    pub provider: ModuleId,
    /// Its consumer.
    pub consumer: Name,
    /// Its recoveries within the window, each ending an interval that
    /// began before the one it fails in now.
    pub count: u64,
    /// Those within the last hour.
    pub within_hour: u64,
    /// When the last of them came.
    pub last_at: Timestamp,
    /// When the interval it ended began, when known.
    pub last_since: Option<Timestamp>,
    /// That interval's class, when history has its beginning within the
    /// window.
    pub last_class: Option<Class>,
    /// The newest note a person attached before the current interval
    /// began, within the window.
    pub last_note: Option<NoteRow>,
}

/// A row of a standing's history within the recurrence window that can
/// bear on its recurrence, as the store reads it for
/// [`Recoveries::of_window`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PastRow {
    /// The standing's provider.
    pub provider: ModuleId,
    /// Its consumer.
    pub consumer: Name,
    /// When the row was written.
    pub at: Timestamp,
    /// Its place in history: of two rows at one time, the greater was
    /// written later.
    pub order: i64,
    /// What it says.
    pub past: Past,
}

/// What a [`PastRow`] says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Past {
    /// A recovery that ended an interval begun before the one failing now
    /// (`since`: when that interval began, when the recovery says). A
    /// recovery of an interval that began at or after the current one's
    /// first `since` (a restart said a later one) is not such a row.
    Recovered {
        /// When the interval it ended began.
        since: Option<Timestamp>,
    },
    /// An interval began, with its class when known.
    Began {
        /// The interval's class.
        class: Option<Class>,
    },
    /// A note a person attached before the interval failing now began.
    Noted(NoteRow),
}

impl Recoveries {
    /// Per standing of `rows` that recovered within the window: its
    /// recoveries, those at or after `hour_start` (the last hour), the
    /// last one's time and beginning, the class of the last beginning at
    /// or before it, and the newest note. The newest of rows at one time
    /// is the one of greater [`PastRow::order`]. By provider and consumer.
    pub fn of_window(mut rows: Vec<PastRow>, hour_start: Timestamp) -> Vec<Recoveries> {
        // Each standing's rows together, newest first: each "last" below
        // is the first of its kind.
        rows.sort_by(|a, b| {
            (&a.provider, &a.consumer)
                .cmp(&(&b.provider, &b.consumer))
                .then_with(|| (b.at, b.order).cmp(&(a.at, a.order)))
        });
        rows.chunk_by(|a, b| a.provider == b.provider && a.consumer == b.consumer)
            .filter_map(|standing| counted(standing, hour_start))
            .collect()
    }
}

/// One standing's [`Recoveries`] from its rows, newest first; `None` when
/// none is a recovery.
fn counted(rows: &[PastRow], hour_start: Timestamp) -> Option<Recoveries> {
    let recovered = || {
        rows.iter().filter_map(|r| match r.past {
            Past::Recovered { since } => Some((r.at, since)),
            _ => None,
        })
    };
    let (last_at, last_since) = recovered().next()?;
    let last_class = rows.iter().find_map(|r| match r.past {
        Past::Began { class } if r.at <= last_at => Some(class),
        _ => None,
    });
    let last_note = rows.iter().find_map(|r| match &r.past {
        Past::Noted(note) => Some(note.clone()),
        _ => None,
    });
    let first = &rows[0];
    Some(Recoveries {
        provider: first.provider.clone(),
        consumer: first.consumer.clone(),
        count: recovered().count() as u64,
        within_hour: recovered().filter(|(at, _)| *at >= hour_start).count() as u64,
        last_at,
        last_since,
        last_class: last_class.flatten(),
        last_note,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 2026-11-29 at `hh_mm` (UTC).
    fn at(hh_mm: &str) -> Timestamp {
        Timestamp::parse(&format!("2026-11-29T{hh_mm}:00Z")).unwrap()
    }

    fn provider(machine: &str) -> ModuleId {
        ModuleId::new("postgres".parse().unwrap(), machine.parse().unwrap())
    }

    fn row(consumer: &str, at: &str, order: i64, past: Past) -> PastRow {
        PastRow {
            provider: provider("db-1"),
            consumer: consumer.parse().unwrap(),
            at: self::at(at),
            order,
            past,
        }
    }

    fn recovered(since: &str) -> Past {
        Past::Recovered {
            since: Some(at(since)),
        }
    }

    fn began(class: Class) -> Past {
        Past::Began { class: Some(class) }
    }

    fn noted(text: &str) -> Past {
        Past::Noted(NoteRow {
            text: text.to_owned(),
            by: "ana".to_owned(),
        })
    }

    fn of_window(rows: Vec<PastRow>) -> Vec<Recoveries> {
        Recoveries::of_window(rows, at("11:00"))
    }

    #[test]
    fn a_standing_with_no_recovery_is_not_counted() {
        let rows = vec![
            row("a", "10:00", 1, began(Class::Unreachable)),
            row("a", "10:05", 2, noted("looked")),
        ];
        assert_eq!(of_window(rows), []);
        assert_eq!(of_window(vec![]), []);
    }

    #[test]
    fn counts_its_recoveries_and_those_of_the_last_hour_in_any_order() {
        let rows = vec![
            row("a", "11:00", 5, recovered("10:50")),
            row("a", "09:00", 1, recovered("08:00")),
            row("a", "11:30", 7, recovered("11:20")),
            row("a", "10:59", 3, recovered("10:40")),
        ];
        let [a] = of_window(rows).try_into().unwrap();
        // The hour starts at 11:00 and holds it.
        assert_eq!((a.count, a.within_hour), (4, 2));
        assert_eq!(a.last_at, at("11:30"));
        assert_eq!(a.last_since, Some(at("11:20")));
    }

    #[test]
    fn of_two_rows_at_one_time_the_later_written_is_the_last() {
        let rows = vec![
            row("a", "10:00", 9, recovered("09:30")),
            row("a", "10:00", 4, recovered("09:00")),
            row("a", "09:00", 2, began(Class::Unreachable)),
            row("a", "09:30", 6, began(Class::CredentialsRejected)),
            row("a", "09:40", 8, noted("newer")),
            row("a", "09:40", 7, noted("older")),
        ];
        let [a] = of_window(rows).try_into().unwrap();
        assert_eq!(a.last_since, Some(at("09:30")));
        assert_eq!(a.last_class, Some(Class::CredentialsRejected));
        assert_eq!(a.last_note.unwrap().text, "newer");
    }

    #[test]
    fn the_class_is_the_last_beginning_at_or_before_the_last_recovery() {
        let rows = vec![
            row("a", "09:00", 1, began(Class::Unreachable)),
            row("a", "10:00", 2, began(Class::CredentialsRejected)),
            row("a", "10:00", 3, recovered("10:00")),
            // The interval failing now began after: not last time's.
            row("a", "10:30", 4, began(Class::Refused)),
        ];
        let [a] = of_window(rows).try_into().unwrap();
        assert_eq!(a.last_class, Some(Class::CredentialsRejected));
        // A beginning before the window: no class, the recovery counted.
        let rows = vec![row("b", "10:00", 1, recovered("08:00"))];
        let [b] = of_window(rows).try_into().unwrap();
        assert_eq!((b.count, b.last_class, b.last_note), (1, None, None));
        // A beginning that says no class.
        let rows = vec![
            row("c", "09:00", 1, Past::Began { class: None }),
            row("c", "10:00", 2, Past::Recovered { since: None }),
        ];
        let [c] = of_window(rows).try_into().unwrap();
        assert_eq!((c.last_class, c.last_since), (None, None));
    }

    #[test]
    fn each_standing_is_counted_apart() {
        let other = |mut r: PastRow| {
            r.provider = provider("db-2");
            r
        };
        let rows = vec![
            row("a", "10:00", 1, recovered("09:00")),
            row("b", "10:10", 2, recovered("09:10")),
            other(row("a", "10:20", 3, recovered("09:20"))),
            row("a", "10:30", 4, noted("a's")),
            other(row("a", "10:40", 5, began(Class::Unreachable))),
        ];
        let seen: Vec<String> = of_window(rows)
            .into_iter()
            .map(|r| {
                let note = r.last_note.map(|n| n.text);
                let (at, class) = (r.last_at, r.last_class);
                format!("{}/{} {at} {class:?} {note:?}", r.provider, r.consumer)
            })
            .collect();
        // The last beginning of db-2's `a` came after its recovery.
        assert_eq!(
            seen,
            [
                r#"postgres@db-1/a 2026-11-29T10:00:00Z None Some("a's")"#,
                "postgres@db-1/b 2026-11-29T10:10:00Z None None",
                "postgres@db-2/a 2026-11-29T10:20:00Z None None",
            ]
        );
    }
}
