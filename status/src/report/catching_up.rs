//! A new store catching up (pure): after the store was made anew (first
//! migrated, or dropped and made again), the events providers published before
//! its record began were taken from the stream by the store that was there,
//! so the failures they keep are in it only once they are said again.
//!
//! Rule: a provider heard from, whose process started (on the event
//! stream's clock, where the store has it) before the store's record began, is *not fully known yet* until the record began one
//! `repeat_every` (its `alive` says it; [`Clock::silent_after`] for a
//! provider that does not) plus one `alive_every` ago: by then it has said
//! every failure it keeps again, and the store holds it. Until then it
//! breaks all-well: status says what it knows, never a wrong "all well".
//! A provider that started after the record began has said everything
//! since its start into the stream (its older standings are dropped once
//! it settles), so the store knows it whole.
//!
//! Rule (issue 31): a provider the new store holds no `alive` of is not
//! fully known yet either, never unheard, while its record began at most 3
//! × the longest `alive_every` of the `alive`s it holds ago
//! ([`DEFAULT_ALIVE_EVERY`], the SDK's default, when it holds none): its
//! newest `alive` went to the store that was there, and the next may not
//! be due yet. Past that, one still silent is unheard, as in any store.
//!
//! While some provider is not fully known yet, the store is *new* and the
//! sentence says so first: `the store is new since <time>; N providers not
//! fully known yet`.

use std::time::Duration;

use mesh_protocol::{ModuleId, Timestamp};
use serde::Serialize;

use super::{Clock, UNHEARD_AFTER_ALIVES};
use crate::model::row::provider_members;
use crate::model::{AliveRow, ControllerRecord};

/// A provider whose failures the store may not hold all of yet. Its JSON
/// is an entry of `catching_up` in `status --json`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CatchingUp {
    /// The provider, written as `provider_module` and `provider_machine`.
    #[serde(flatten, serialize_with = "provider_members")]
    pub provider: ModuleId,
    /// When its process started (before the store's record began); null
    /// when the store has not heard it since its record began.
    pub started_at: Option<Timestamp>,
    /// When the store's record began (the store's clock).
    pub record_begins_at: Timestamp,
    /// By when it has said again every failure it keeps (the store's
    /// clock): the record began + its `repeat_every` + its `alive_every`.
    /// For one not heard since the record began: when it is unheard if it
    /// stays silent (the record began + 3 × the `alive_every` assumed).
    pub until: Timestamp,
}

impl CatchingUp {
    /// The line of the human listing (without its indent).
    pub fn line(&self) -> String {
        match self.started_at {
            Some(started) => format!(
                "{} not fully known yet: the store's record begins {}, after it started ({}); it \
                 says the failures it keeps again by {}",
                self.provider, self.record_begins_at, started, self.until
            ),
            None => format!(
                "{} not fully known yet: not heard from since the store's record began {}; \
                 unheard if still silent at {}",
                self.provider, self.record_begins_at, self.until
            ),
        }
    }
}

/// The `alive_every` assumed of a provider when the store holds no
/// `alive` at all: the SDK's default (`--alive-every 1m`).
pub const DEFAULT_ALIVE_EVERY: Duration = Duration::from_secs(60);

/// How long after a new store's record began a provider it holds no
/// `alive` of is not called unheard: 3 × the longest `alive_every` of the
/// `alive`s it holds, or of [`DEFAULT_ALIVE_EVERY`] when it holds none.
pub fn unheard_after(alive: &[AliveRow]) -> Duration {
    let every = alive
        .iter()
        .map(|a| seconds(a.alive_every_seconds.max(1)))
        .max()
        .unwrap_or(DEFAULT_ALIVE_EVERY);
    every * UNHEARD_AFTER_ALIVES
}

/// Whether `provider`, of which the store holds no `alive`, is not fully
/// known yet (not unheard): the store's record began at most
/// [`unheard_after`] ago, by the store's `record`.
pub fn not_heard_yet(
    provider: &ModuleId,
    alive: &[AliveRow],
    record: &ControllerRecord,
) -> Option<CatchingUp> {
    let begun = record.begun_at?;
    let until = begun.system_time() + unheard_after(alive);
    (record.now.system_time() <= until).then(|| CatchingUp {
        provider: provider.clone(),
        started_at: None,
        record_begins_at: begun,
        until: Timestamp::from_system(until),
    })
}

fn seconds(n: i64) -> Duration {
    Duration::from_secs(u64::try_from(n).unwrap_or(0))
}

/// Whether the provider heard from with `alive` is not fully known yet,
/// by the store's `record`.
pub fn catching_up(
    alive: &AliveRow,
    record: &ControllerRecord,
    clock: &Clock,
) -> Option<CatchingUp> {
    let begun = record.begun_at?;
    // On the stream's clock where the row has it: the provider's own may
    // be stepped; the store's record and the stream are the servers'.
    let started = alive
        .started_on_stream()
        .unwrap_or_else(|| alive.started_at.system_time());
    if started >= begun.system_time() {
        return None;
    }
    let repeat = alive
        .repeat_every_seconds
        .map_or(clock.silent_after, seconds);
    let until = begun.system_time() + repeat + seconds(alive.alive_every_seconds.max(1));
    (record.now.system_time() < until).then(|| CatchingUp {
        provider: alive.provider.clone(),
        started_at: Some(alive.started_at),
        record_begins_at: begun,
        until: Timestamp::from_system(until),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ts(s: &str) -> Timestamp {
        Timestamp::parse(s).unwrap()
    }

    #[test]
    fn catching_up_table() {
        let clock = Clock {
            now: ts("2026-10-05T00:00:00Z"),
            silent_after: Duration::from_secs(1800),
        };
        let alive = |started: &str, repeat: Option<i64>| AliveRow {
            provider: ModuleId::parse("postgres@db-1").unwrap(),
            started_at: ts(started),
            alive_every_seconds: 60,
            settled_at: None,
            repeat_every_seconds: repeat,
            said_at: ts("2026-10-05T00:09:00Z"),
            stored_at: None,
            fault: None,
            contributions: None,
        };
        let record = |now: &str, begun: Option<&str>| ControllerRecord {
            now: ts(now),
            begun_at: begun.map(ts),
            stream_since: None,
            instances: vec![],
        };
        let begun = Some("2026-10-05T00:00:00Z");
        // (alive, store's record, catching up until)
        let cases = [
            // An old store: complete as the stream made it.
            (
                alive("2026-10-04T00:00:00Z", Some(900)),
                record("2026-10-05T00:01:00Z", None),
                None,
            ),
            // Started before the record began: until 15m + 1m after it.
            (
                alive("2026-10-04T00:00:00Z", Some(900)),
                record("2026-10-05T00:15:59Z", begun),
                Some("2026-10-05T00:16:00Z"),
            ),
            (
                alive("2026-10-04T00:00:00Z", Some(900)),
                record("2026-10-05T00:16:00Z", begun),
                None,
            ),
            // A provider that does not say its repeat_every: --silent-after.
            (
                alive("2026-10-04T00:00:00Z", None),
                record("2026-10-05T00:20:00Z", begun),
                Some("2026-10-05T00:31:00Z"),
            ),
            // Started after the record began: known whole.
            (
                alive("2026-10-05T00:00:00Z", Some(900)),
                record("2026-10-05T00:01:00Z", begun),
                None,
            ),
        ];
        for (alive, record, until) in cases {
            let got = catching_up(&alive, &record, &clock);
            assert_eq!(
                got.as_ref().map(|c| c.until),
                until.map(ts),
                "{alive:?} {record:?}"
            );
        }
        // "Started before the record began" is read on the stream's clock:
        // a provider whose clock is an hour behind, started (by the stream)
        // two minutes after the record began, is known whole; one whose
        // clock is an hour ahead, started before it, is not.
        let stepped = |started: &str, said: &str, stored: &str| AliveRow {
            started_at: ts(started),
            said_at: ts(said),
            stored_at: Some(ts(stored)),
            fault: None,
            contributions: None,
            ..alive("2026-10-04T00:00:00Z", Some(900))
        };
        let behind = stepped(
            "2026-10-04T23:02:00Z",
            "2026-10-04T23:03:00Z",
            "2026-10-05T00:03:00Z",
        );
        assert_eq!(
            catching_up(&behind, &record("2026-10-05T00:04:00Z", begun), &clock),
            None
        );
        let ahead = stepped(
            "2026-10-05T00:30:00Z",
            "2026-10-05T01:31:00Z",
            "2026-10-05T00:31:00Z",
        );
        assert_eq!(
            catching_up(&ahead, &record("2026-10-05T00:04:00Z", begun), &clock).map(|c| c.until),
            Some(ts("2026-10-05T00:16:00Z"))
        );
        let got = catching_up(
            &alive("2026-10-04T00:00:00Z", Some(900)),
            &record("2026-10-05T00:01:00Z", begun),
            &clock,
        )
        .unwrap();
        assert_eq!(
            got.line(),
            "postgres@db-1 not fully known yet: the store's record begins 2026-10-05T00:00:00Z, \
             after it started (2026-10-04T00:00:00Z); it says the failures it keeps again by \
             2026-10-05T00:16:00Z"
        );
    }

    #[test]
    fn a_provider_a_new_store_holds_no_alive_of_is_not_fully_known_for_3_alives() {
        let provider = ModuleId::parse("identity@id-1").unwrap();
        let record = |now: &str, begun: Option<&str>| ControllerRecord {
            now: ts(now),
            begun_at: begun.map(ts),
            stream_since: None,
            instances: vec![],
        };
        let alive = |every: i64| AliveRow {
            provider: ModuleId::parse("postgres@db-1").unwrap(),
            started_at: ts("2026-10-05T00:00:00Z"),
            alive_every_seconds: every,
            settled_at: None,
            repeat_every_seconds: Some(900),
            said_at: ts("2026-10-05T00:00:01Z"),
            stored_at: None,
            fault: None,
            contributions: None,
        };
        let begun = Some("2026-10-05T00:00:00Z");
        // (alive rows held, store's record, not fully known until)
        let cases = [
            // An old store: a provider never heard from is unheard.
            (vec![], record("2026-10-05T00:00:10Z", None), None),
            // None heard: the SDK's default, 3 minutes.
            (
                vec![],
                record("2026-10-05T00:03:00Z", begun),
                Some("2026-10-05T00:03:00Z"),
            ),
            (vec![], record("2026-10-05T00:03:01Z", begun), None),
            // The longest alive_every it holds.
            (
                vec![alive(1), alive(20)],
                record("2026-10-05T00:00:59Z", begun),
                Some("2026-10-05T00:01:00Z"),
            ),
            (vec![alive(1)], record("2026-10-05T00:00:04Z", begun), None),
        ];
        for (held, record, until) in cases {
            let got = not_heard_yet(&provider, &held, &record);
            assert_eq!(got.as_ref().map(|c| c.until), until.map(ts), "{record:?}");
            assert!(got.is_none_or(|c| c.started_at.is_none()));
        }
        let got = not_heard_yet(&provider, &[], &record("2026-10-05T00:00:10Z", begun)).unwrap();
        assert_eq!(
            got.line(),
            "identity@id-1 not fully known yet: not heard from since the store's record began \
             2026-10-05T00:00:00Z; unheard if still silent at 2026-10-05T00:03:00Z"
        );
    }
}
