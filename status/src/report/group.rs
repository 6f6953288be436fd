//! Many failing for one cause (pure): the human listing shows the
//! standings of one provider, class and error as one line with their count
//! and the first [`GROUP_NAMES`] consumers; a cause failing one consumer
//! keeps that standing's own line.
//!
//! The standings must come in cause order (the store's `Order::Cause`), so
//! a group is whole once the next standing's cause differs. Memory is
//! bounded whatever the count: a group keeps its first standing, the
//! first names and its counts.

use mesh_protocol::{Class, ModuleId, Name};

use super::Listed;

/// How many consumers a group's line names; the rest are counted.
pub const GROUP_NAMES: usize = 10;

/// The standings of one cause, as far as they are kept.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Group {
    /// The first standing of the cause.
    pub first: Listed,
    /// The first [`GROUP_NAMES`] consumers, `consumer@machine` (`?` for an
    /// unknown machine), in order.
    pub names: Vec<String>,
    /// How many standings it has.
    pub count: u64,
    /// Of which silent.
    pub silent: u64,
    /// Of which failing again within the recurrence window.
    pub recurring: u64,
    /// Of which a person acknowledged (being worked on).
    pub acknowledged: u64,
}

impl Group {
    fn of(first: Listed) -> Group {
        Group {
            names: vec![name(&first)],
            count: 1,
            silent: u64::from(first.silent_for_seconds.is_some()),
            recurring: u64::from(first.recurrence.is_some()),
            acknowledged: u64::from(first.acknowledged.is_some()),
            first,
        }
    }

    fn add(&mut self, s: &Listed) {
        self.count += 1;
        self.silent += u64::from(s.silent_for_seconds.is_some());
        self.recurring += u64::from(s.recurrence.is_some());
        self.acknowledged += u64::from(s.acknowledged.is_some());
        if self.names.len() < GROUP_NAMES {
            self.names.push(name(s));
        }
    }

    /// The provider, class and error all its standings share.
    pub fn cause(&self) -> (&ModuleId, Class, &str) {
        cause(&self.first)
    }
}

/// `consumer@machine`, `?` for a machine the provider does not know.
fn name(s: &Listed) -> String {
    format!(
        "{}@{}",
        s.row.said.consumer,
        s.row
            .said
            .consumer_machine
            .as_ref()
            .map_or("?", Name::as_str)
    )
}

fn cause(s: &Listed) -> (&ModuleId, Class, &str) {
    (&s.row.provider, s.row.said.class, &s.row.said.error)
}

/// What the listing prints for a cause once it is whole.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Line {
    /// One standing: its own line.
    One(Listed),
    /// Several: one line for all.
    Many(Group),
}

/// Gathers standings, in cause order, into [`Line`]s.
#[derive(Clone, Debug, Default)]
pub struct Grouper {
    current: Option<Group>,
}

impl Grouper {
    /// Takes the next standing; returns the line of the cause before it
    /// when it starts another.
    pub fn push(&mut self, s: Listed) -> Option<Line> {
        if let Some(group) = &mut self.current {
            if group.cause() == cause(&s) {
                group.add(&s);
                return None;
            }
        }
        self.current.replace(Group::of(s)).map(line)
    }

    /// The line of the last cause, if any.
    pub fn finish(&mut self) -> Option<Line> {
        self.current.take().map(line)
    }
}

fn line(group: Group) -> Line {
    match group.count {
        1 => Line::One(group.first),
        _ => Line::Many(group),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::FailingRow;
    use mesh_protocol::event::Failing;
    use mesh_protocol::Timestamp;

    fn standing(provider: &str, consumer: &str, class: Class, error: &str) -> Listed {
        let at = Timestamp::parse("2026-10-05T00:09:00Z").unwrap();
        Listed {
            row: FailingRow {
                provider: ModuleId::parse(provider).unwrap(),
                said: Failing {
                    v: 1,
                    consumer: Name::parse(consumer).unwrap(),
                    consumer_machine: Some(Name::parse("app-1").unwrap()),
                    provision: None,
                    class,
                    error: error.into(),
                    since: at,
                    attempts: 3,
                    said_at: at,
                },
                first_since: None,
            },
            silent_for_seconds: (consumer == "c3").then_some(2000),
            recurrence: None,
            acknowledged: None,
        }
    }

    #[test]
    fn groups_by_provider_class_and_error() {
        let u = Class::Unreachable;
        let r = Class::Refused;
        let mut input = vec![standing("postgres@db-1", "a", u, "connection refused")];
        input.extend((0..12).map(|i| standing("postgres@db-1", &format!("c{i}"), r, "no")));
        input.push(standing("postgres@db-1", "d", r, "other"));
        input.push(standing("postgres@db-2", "e", r, "other"));
        input.push(standing("postgres@db-2", "f", r, "other"));
        let mut grouper = Grouper::default();
        let mut lines: Vec<Line> = input.into_iter().filter_map(|s| grouper.push(s)).collect();
        lines.extend(grouper.finish());
        assert!(grouper.finish().is_none());
        let shape: Vec<(String, u64, usize, u64)> = lines
            .iter()
            .map(|l| match l {
                Line::One(s) => (s.row.said.consumer.to_string(), 1, 1, 0),
                Line::Many(g) => (
                    g.first.row.said.consumer.to_string(),
                    g.count,
                    g.names.len(),
                    g.silent,
                ),
            })
            .collect();
        assert_eq!(
            shape,
            [
                ("a".to_owned(), 1, 1, 0),
                ("c0".to_owned(), 12, GROUP_NAMES, 1),
                ("d".to_owned(), 1, 1, 0),
                ("e".to_owned(), 2, 2, 0),
            ]
        );
        let Line::Many(group) = &lines[1] else {
            panic!("a group")
        };
        assert_eq!(group.names[..2], ["c0@app-1", "c1@app-1"]);
    }
}
