//! Whether the controller follows the bus, from what `serve` records of
//! itself in the store (pure: the store's clock is passed in with the
//! record).
//!
//! Rules:
//! - The controller *follows* while some `serve` process caught up with
//!   the event stream (found nothing more waiting for it, every event it
//!   took stored) within 3 × its pull wait, at most 15 s
//!   ([`Instance::follow_bound`]). Both times are the store's clock, so the clocks
//!   of the hosts play no part. A time ahead of the store's clock counts as
//!   now.
//! - A provider is called unheard only for a silence of 3 × its
//!   `alive_every` while the controller followed: from its newest `alive`
//!   (or, when that is older, from when the controller's current run of
//!   catch-ups began: after a gap it heard nothing of what was said) to the
//!   controller's last catch-up (everything said before it is stored), never
//!   to now. So a silence that began after the controller's is not blamed
//!   (also in the seconds a `serve` just killed still counts as following),
//!   and after it follows again a provider has 3 alives to be heard. One never heard from is unheard once the controller has
//!   caught up at all; while it never did, no provider is called unheard.
//! - A provider silent for 3 alives to now but not to the controller's last
//!   catch-up, while the controller followed throughout its silence (its
//!   run of catch-ups began before its newest `alive`), is counted as heard
//!   (its age said): the catch-up is at most the follow bound old, and its
//!   next `alive` may be on its way. Only a silence the controller followed
//!   part of (it follows again since recently, or follows nothing) is
//!   *missed*: neither unheard nor heard.

use std::time::Duration;

use mesh_protocol::Timestamp;
use serde::Serialize;

use super::UNHEARD_AFTER_ALIVES;
use crate::model::{AliveRow, ControllerRecord, Instance, InstanceRow};

/// What `status` says of the controller. Its JSON is the `controller`
/// member of `status --json`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Controller {
    /// Some `serve` caught up with the event stream recently (see the
    /// module's rules).
    pub following: bool,
    /// When a `serve` last caught up (the store's clock); null: never.
    pub pulled_at: Option<Timestamp>,
    /// When a `serve` last committed a round of events (the store's
    /// clock); null: never.
    pub applied_at: Option<Timestamp>,
    /// When the run of catch-ups of the `serve` that caught up last began
    /// (the store's clock): the controller heard nothing before, so a
    /// provider's silence counts from then at the earliest; null: never.
    pub following_since: Option<Timestamp>,
    /// The host of the `serve` that caught up last (or, when none did, the
    /// one recorded last); null when none is recorded.
    pub host: Option<String>,
    /// Its process id.
    pub pid: Option<i64>,
    /// When it started (its own clock).
    pub started_at: Option<Timestamp>,
    /// When the store's record begins, for a store made after it kept
    /// this (first migrated, or dropped and made again); null for a store
    /// that followed the stream before.
    pub record_begins_at: Option<Timestamp>,
    /// Since when the store knows anything: the later of its oldest
    /// stream's making and its record's beginning (the console's bars are
    /// no data before); none when it knows neither.
    #[serde(skip)]
    pub known_since: Option<Timestamp>,
}

impl Controller {
    /// Whether it follows nothing since a catch-up, and since when: `None`
    /// while it follows, `Some(None)` when it never caught up.
    pub fn silent_since(&self) -> Option<Option<Timestamp>> {
        (!self.following).then_some(self.pulled_at)
    }
}

#[cfg(test)]
impl Controller {
    /// A controller that follows, as the tests of other layers need one.
    pub(crate) fn following_for_tests() -> Controller {
        Controller {
            following: true,
            pulled_at: None,
            applied_at: None,
            following_since: None,
            host: None,
            pid: None,
            started_at: None,
            record_begins_at: None,
            known_since: None,
        }
    }
}

fn age(now: Timestamp, then: Timestamp) -> Duration {
    now.system_time()
        .duration_since(then.system_time())
        .unwrap_or(Duration::ZERO)
}

/// Whether one recorded `serve` follows at the store's `now`.
pub fn follows(row: &InstanceRow, now: Timestamp) -> bool {
    row.pulled_at
        .is_some_and(|at| age(now, at) <= row.instance.follow_bound())
}

/// What the store's record says of the controller.
pub fn controller(record: &ControllerRecord) -> Controller {
    let rows = &record.instances;
    let following = rows.iter().any(|r| follows(r, record.now));
    let last_pull = rows
        .iter()
        .filter(|r| r.pulled_at.is_some())
        .max_by_key(|r| r.pulled_at);
    let named: Option<&Instance> = last_pull.or(rows.first()).map(|r| &r.instance);
    Controller {
        following,
        pulled_at: last_pull.and_then(|r| r.pulled_at),
        applied_at: rows.iter().filter_map(|r| r.applied_at).max(),
        following_since: last_pull.and_then(|r| r.following_since.or(r.pulled_at)),
        host: named.map(|i| i.host.clone()),
        pid: named.map(|i| i.pid),
        started_at: named.map(|i| i.started_at),
        record_begins_at: record.begun_at,
        known_since: record.begun_at.max(record.stream_since),
    }
}

/// How `status` counts one provider (see the module's rules).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hearing {
    /// Heard from, this long ago: within 3 alives of now, or of the
    /// controller's last catch-up while it followed throughout (its alive
    /// may be on its way).
    Heard(Duration),
    /// Not heard from, but not blamed: its silence while the controller
    /// followed is not 3 alives long, for the controller followed nothing
    /// for part of it (it follows again since recently, or follows
    /// nothing now, or never did).
    Missed,
    /// Unheard: never heard from, or silent for 3 alives while the
    /// controller followed.
    Unheard,
}

/// How a provider whose newest `alive` is `newest` (`None`: never heard
/// from) is counted at status's own clock `now`, by what the controller
/// heard (see the module's rules).
pub fn hearing(newest: Option<&AliveRow>, controller: &Controller, now: Timestamp) -> Hearing {
    if let Some((true, age)) = newest.map(|a| super::heard(a, now)) {
        return Hearing::Heard(age);
    }
    // The planted mutation `mesh_mutant="blame-providers"` (scripts/mutants): a
    // provider's silence counts to now, whether the controller follows or not.
    // (A constant of the build, false unless built with that cfg.)
    if cfg!(mesh_mutant = "blame-providers") {
        return Hearing::Unheard;
    }
    let (Some(pulled), Some(since)) = (controller.pulled_at, controller.following_since) else {
        return Hearing::Missed;
    };
    let Some(alive) = newest else {
        return Hearing::Unheard;
    };
    // Everything said before the last catch-up is in the store: a silence
    // counts up to it, never beyond (a `serve` just killed still counts as
    // following for a few seconds, and heard nothing in them).
    let heard = alive.heard_at();
    let every = Duration::from_secs(u64::try_from(alive.alive_every_seconds.max(1)).unwrap_or(1));
    if age(pulled, heard.max(since)) > every * UNHEARD_AFTER_ALIVES {
        return Hearing::Unheard;
    }
    // Followed throughout its silence, and heard within 3 alives of the
    // last catch-up (at most the follow bound ago): what it said since may
    // not be stored yet. Never "since the controller follows again".
    if controller.following && since <= heard {
        return Hearing::Heard(age(now, heard));
    }
    Hearing::Missed
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::row::{FOLLOW_WITHIN_MAX, FOLLOW_WITHIN_PULLS};
    use mesh_protocol::ModuleId;

    fn ts(s: &str) -> Timestamp {
        Timestamp::parse(s).unwrap()
    }

    fn instance(host: &str, wait: u64, pulled: Option<&str>, applied: Option<&str>) -> InstanceRow {
        InstanceRow {
            instance: Instance {
                host: host.into(),
                pid: 4242,
                started_at: ts("2026-10-05T00:00:00Z"),
                pull_wait: Duration::from_secs(wait),
            },
            pulled_at: pulled.map(ts),
            applied_at: applied.map(ts),
            following_since: pulled.map(|_| ts("2026-10-05T00:01:00Z")),
        }
    }

    fn record(now: &str, instances: Vec<InstanceRow>) -> ControllerRecord {
        ControllerRecord {
            now: ts(now),
            begun_at: None,
            stream_since: None,
            instances,
        }
    }

    #[test]
    fn the_store_knows_since_the_later_of_its_stream_and_its_record() {
        let at = |begun: Option<&str>, stream: Option<&str>| {
            let mut r = record("2026-10-05T00:10:00Z", vec![]);
            r.begun_at = begun.map(ts);
            r.stream_since = stream.map(ts);
            controller(&r).known_since
        };
        let (early, late) = ("2026-10-01T00:00:00Z", "2026-10-04T00:00:00Z");
        assert_eq!(at(None, None), None);
        assert_eq!(at(Some(late), None), Some(ts(late)));
        assert_eq!(at(None, Some(early)), Some(ts(early)));
        assert_eq!(at(Some(late), Some(early)), Some(ts(late)));
        assert_eq!(at(Some(early), Some(late)), Some(ts(late)));
    }

    #[test]
    fn the_bound_is_three_pulls_and_at_most_15s() {
        let bound = |wait| instance("ctl-1", wait, None, None).instance.follow_bound();
        assert_eq!(bound(2), Duration::from_secs(6));
        assert_eq!(bound(30), Duration::from_secs(15));
        assert_eq!((FOLLOW_WITHIN_PULLS, FOLLOW_WITHIN_MAX.as_secs()), (3, 15));
    }

    #[test]
    fn following_table() {
        // (now, instances, following, pulled_at, applied_at, host named)
        type Case = (
            &'static str,
            Vec<InstanceRow>,
            bool,
            Option<&'static str>,
            Option<&'static str>,
            Option<&'static str>,
        );
        let cases: Vec<Case> = vec![
            ("2026-10-05T00:10:00Z", vec![], false, None, None, None),
            (
                "2026-10-05T00:10:00Z",
                vec![instance("ctl-1", 2, None, None)],
                false,
                None,
                None,
                Some("ctl-1"),
            ),
            (
                "2026-10-05T00:10:06Z",
                vec![instance(
                    "ctl-1",
                    2,
                    Some("2026-10-05T00:10:00Z"),
                    Some("2026-10-05T00:09:00Z"),
                )],
                true,
                Some("2026-10-05T00:10:00Z"),
                Some("2026-10-05T00:09:00Z"),
                Some("ctl-1"),
            ),
            (
                "2026-10-05T00:10:07Z",
                vec![instance("ctl-1", 2, Some("2026-10-05T00:10:00Z"), None)],
                false,
                Some("2026-10-05T00:10:00Z"),
                None,
                Some("ctl-1"),
            ),
            (
                // A time ahead of the store's clock counts as now.
                "2026-10-05T00:09:00Z",
                vec![instance("ctl-1", 2, Some("2026-10-05T00:10:00Z"), None)],
                true,
                Some("2026-10-05T00:10:00Z"),
                None,
                Some("ctl-1"),
            ),
            (
                // A slow pull wait is bounded by 15 s.
                "2026-10-05T00:10:16Z",
                vec![instance("ctl-1", 30, Some("2026-10-05T00:10:00Z"), None)],
                false,
                Some("2026-10-05T00:10:00Z"),
                None,
                Some("ctl-1"),
            ),
            (
                // Any instance following is enough; the newest pull and round are said.
                "2026-10-05T00:10:05Z",
                vec![
                    instance(
                        "ctl-1",
                        2,
                        Some("2026-10-05T00:08:00Z"),
                        Some("2026-10-05T00:10:04Z"),
                    ),
                    instance(
                        "ctl-2",
                        2,
                        Some("2026-10-05T00:10:01Z"),
                        Some("2026-10-05T00:10:01Z"),
                    ),
                ],
                true,
                Some("2026-10-05T00:10:01Z"),
                Some("2026-10-05T00:10:04Z"),
                Some("ctl-2"),
            ),
        ];
        for (now, instances, following, pulled, applied, host) in cases {
            let c = controller(&record(now, instances.clone()));
            assert_eq!(c.following, following, "{now} {instances:?}");
            assert_eq!(c.pulled_at, pulled.map(ts), "{now}");
            assert_eq!(c.applied_at, applied.map(ts), "{now}");
            assert_eq!(c.host.as_deref(), host, "{now}");
            assert_eq!(c.silent_since().is_none(), following);
        }
    }

    #[test]
    fn a_provider_silent_since_the_controller_is_not_blamed() {
        let alive = |said: &str| AliveRow {
            provider: ModuleId::parse("postgres@db-1").unwrap(),
            started_at: ts("2026-10-05T00:00:00Z"),
            alive_every_seconds: 60,
            settled_at: None,
            repeat_every_seconds: Some(900),
            said_at: ts(said),
            stored_at: None,
            fault: None,
            contributions: None,
        };
        // The controller: following or not, its last catch-up, since when
        // its run of catch-ups goes.
        let controller = |following: bool, pulled: Option<&str>, since: Option<&str>| Controller {
            following,
            pulled_at: pulled.map(ts),
            applied_at: None,
            following_since: since.map(ts),
            host: None,
            pid: None,
            started_at: None,
            record_begins_at: None,
            known_since: None,
        };
        let (long, pulled) = (Some("2026-10-05T00:00:00Z"), Some("2026-10-05T00:10:00Z"));
        let stopped = Some("2026-10-05T00:08:00Z");
        let now = "2026-10-05T00:10:02Z";
        let heard = |secs| Hearing::Heard(Duration::from_secs(secs));
        use Hearing::{Missed, Unheard};
        // (newest alive, controller, now, how it is counted)
        let cases = [
            // Following for long: 3 alives of silence.
            (None, controller(true, pulled, long), now, Unheard),
            (
                Some(alive("2026-10-05T00:06:59Z")),
                controller(true, pulled, long),
                now,
                Unheard,
            ),
            (
                Some(alive("2026-10-05T00:07:02Z")),
                controller(true, pulled, long),
                now,
                heard(180),
            ),
            // Past 3 alives to now, not to the last catch-up 2 s ago: its
            // alive may be on its way; heard, never "follows again" (issue 31).
            (
                Some(alive("2026-10-05T00:07:00Z")),
                controller(true, pulled, long),
                now,
                heard(182),
            ),
            // Following, its last catch-up 4 s ago (a serve just killed):
            // the silence counts to that catch-up, not to now.
            (
                Some(alive("2026-10-05T00:06:59Z")),
                controller(true, Some("2026-10-05T00:09:58Z"), long),
                now,
                heard(183),
            ),
            (
                Some(alive("2026-10-05T00:06:57Z")),
                controller(true, Some("2026-10-05T00:09:58Z"), long),
                now,
                Unheard,
            ),
            // Never caught up: nobody is blamed.
            (None, controller(false, None, None), now, Missed),
            (
                Some(alive("2026-10-05T00:01:00Z")),
                controller(false, None, None),
                now,
                Missed,
            ),
            // Stopped at 00:08: a silence that began after 00:05 is not blamed.
            (
                Some(alive("2026-10-05T00:05:01Z")),
                controller(false, stopped, long),
                now,
                Missed,
            ),
            (
                Some(alive("2026-10-05T00:04:59Z")),
                controller(false, stopped, long),
                now,
                Unheard,
            ),
            (None, controller(false, stopped, long), now, Unheard),
            // Following again since 00:08 after a gap: 3 alives from then.
            (
                Some(alive("2026-10-05T00:01:00Z")),
                controller(true, pulled, Some("2026-10-05T00:08:00Z")),
                now,
                Missed,
            ),
            (
                Some(alive("2026-10-05T00:01:00Z")),
                controller(true, pulled, Some("2026-10-05T00:06:59Z")),
                now,
                Unheard,
            ),
            // Following again since just after its newest alive: missed;
            // since just before it: followed throughout, heard.
            (
                Some(alive("2026-10-05T00:07:01Z")),
                controller(true, pulled, Some("2026-10-05T00:07:02Z")),
                now,
                Missed,
            ),
            (
                Some(alive("2026-10-05T00:07:01Z")),
                controller(true, pulled, Some("2026-10-05T00:07:00Z")),
                now,
                heard(181),
            ),
        ];
        for (newest, controller, now, expected) in cases {
            assert_eq!(
                hearing(newest.as_ref(), &controller, ts(now)),
                expected,
                "{newest:?} {controller:?}"
            );
        }
    }
}
