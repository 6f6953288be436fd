//! A round of events reduced to the newest event per key and kind (pure).
//!
//! Under the store's rules the outcome of applying events one by one, in any
//! order, depends only on the newest `failing`, the newest `recovered`, the
//! newest `repair` and the newest `retirement` of each key:
//! - `recovered` keeps its newest event and deletes a failing event older than it;
//! - `failing` keeps its newest event unless a newer `recovered` is stored.
//!
//! So a round can be applied as one multi-row statement per kind, `recovered`
//! before `failing`, with the same result as event by event in stream order.
//! "Newest" is the greatest `(stream epoch, stream sequence)`: where the
//! event stands in the event stream, never the provider's clock.

use std::collections::HashMap;
use std::hash::Hash;

use mesh_protocol::event::{Alive, Failing, GrantsRead, Recovered, RepairReport, Retirement};
use mesh_protocol::{Event, ModuleId, Timestamp};

use super::received::Received;

/// One event kept, with who published it and its stream sequence.
#[derive(Debug, PartialEq)]
pub struct Keyed<'a, T> {
    /// The emitter (from the subject).
    pub emitter: &'a ModuleId,
    /// The stream's epoch.
    pub epoch: u64,
    /// The stream sequence.
    pub seq: u64,
    /// When its provider says it published it (its clock: never an order).
    pub said_at: Timestamp,
    /// When the event stream stored it, if known (see [`Received::stored_at`]).
    pub stored_at: Option<Timestamp>,
    /// The body.
    pub body: &'a T,
}

impl<T> Keyed<'_, T> {
    /// Where it stands.
    pub fn place(&self) -> Place {
        Place {
            epoch: self.epoch,
            seq: self.seq,
            said_at: self.said_at,
            stored_at: self.stored_at,
        }
    }
}

/// Where an event stands in the event stream, the time its provider
/// stamped on it and the time the stream stored it (kept for the record:
/// they order nothing).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Place {
    /// The stream's epoch.
    pub epoch: u64,
    /// The stream sequence.
    pub seq: u64,
    /// The provider's `said_at`.
    pub said_at: Timestamp,
    /// When the stream stored it, if known.
    pub stored_at: Option<Timestamp>,
}

impl Place {
    /// Whether an event here is newer than one at `other`: it stands later
    /// in the stream, `(epoch, seq)`; the provider's clock plays no part.
    /// The store's statements compare the same columns.
    pub fn is_newer_than(&self, other: &Place) -> bool {
        #[cfg(mesh_mutant = "said-at-order")]
        return self.said_at > other.said_at;
        #[cfg(not(mesh_mutant = "said-at-order"))]
        return (self.epoch, self.seq) > (other.epoch, other.seq);
    }
}

impl<T> Clone for Keyed<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for Keyed<'_, T> {}

/// The newest event per key and kind, in order of first appearance.
#[derive(Debug, Default, PartialEq)]
pub struct Reduced<'a> {
    /// Newest `failing` per (provider, consumer).
    pub failing: Vec<Keyed<'a, Failing>>,
    /// Newest `recovered` per (provider, consumer).
    pub recovered: Vec<Keyed<'a, Recovered>>,
    /// Newest `repair` per (provider, fault).
    pub repairs: Vec<Keyed<'a, RepairReport>>,
    /// Newest `retirement` per (provider, consumer, action).
    pub retirements: Vec<Keyed<'a, Retirement>>,
    /// Newest `alive` per provider.
    pub alive: Vec<Keyed<'a, Alive>>,
    /// Newest grant event (`unreachable`, `reachable`, `unchecked`) per
    /// (machine, consumer, provision, from): one key for all three kinds.
    pub grants: Vec<Keyed<'a, Event>>,
    /// Newest grant agent's `read` per machine (the emitter's machine).
    pub grants_read: Vec<Keyed<'a, GrantsRead>>,
}

/// Keeps the newest event per key, in order of first appearance.
struct Newest<'a, K, T> {
    index: HashMap<K, usize>,
    kept: Vec<Keyed<'a, T>>,
}

impl<'a, K: Hash + Eq, T> Newest<'a, K, T> {
    fn new() -> Self {
        Newest {
            index: HashMap::new(),
            kept: Vec::new(),
        }
    }

    /// Keeps `body` of `received` under `key` unless a newer event is kept there.
    fn offer(&mut self, key: K, received: &'a Received, body: &'a T) {
        let event = Keyed {
            emitter: &received.emitter,
            epoch: received.epoch,
            seq: received.seq,
            said_at: received.event.said_at(),
            stored_at: received.stored_at,
            body,
        };
        match self.index.get(&key) {
            Some(&i) => {
                let kept = &self.kept[i];
                if event.place().is_newer_than(&kept.place()) {
                    self.kept[i] = event;
                }
            }
            None => {
                self.index.insert(key, self.kept.len());
                self.kept.push(event);
            }
        }
    }
}

/// Reduces a round to the newest event per key and kind.
pub fn reduce(events: &[Received]) -> Reduced<'_> {
    let mut failing = Newest::new();
    let mut recovered = Newest::new();
    let mut repairs = Newest::new();
    let mut retirements = Newest::new();
    let mut alive = Newest::new();
    let mut grants = Newest::new();
    let mut grants_read = Newest::new();
    for received in events {
        let e = &received.emitter;
        match &received.event {
            Event::Failing(body) => failing.offer((e, &body.consumer), received, body),
            Event::Recovered(body) => recovered.offer((e, &body.consumer), received, body),
            Event::Repair(body) => repairs.offer((e, &body.fault), received, body),
            Event::Retirement(body) => {
                retirements.offer((e, &body.consumer, body.action), received, body)
            }
            Event::Alive(body) => alive.offer(e, received, body),
            Event::Unreachable(b) => {
                grants.offer((e, &b.provision, &b.from), received, &received.event)
            }
            Event::Reachable(b) => {
                grants.offer((e, &b.provision, &b.from), received, &received.event)
            }
            Event::Unchecked(b) => {
                grants.offer((e, &b.provision, &b.from), received, &received.event)
            }
            Event::GrantsRead(b) => grants_read.offer(&e.machine, received, b),
        }
    }
    Reduced {
        failing: failing.kept,
        recovered: recovered.kept,
        repairs: repairs.kept,
        retirements: retirements.kept,
        alive: alive.kept,
        grants: grants.kept,
        grants_read: grants_read.kept,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::received;
    use mesh_protocol::{Class, Name, Timestamp};

    /// `secs` seconds after the Unix epoch.
    fn second(secs: u64) -> Timestamp {
        Timestamp::from_system(std::time::UNIX_EPOCH + std::time::Duration::from_secs(secs))
    }

    fn failing(provider: &str, consumer: &str, said: u64, seq: u64) -> Received {
        received(
            provider,
            seq,
            Event::Failing(Failing {
                v: 1,
                consumer: Name::parse(consumer).unwrap(),
                consumer_machine: None,
                provision: None,
                class: Class::Refused,
                error: String::new(),
                since: second(0),
                attempts: seq,
                said_at: second(said),
            }),
        )
    }

    fn recovered(provider: &str, consumer: &str, said: u64, seq: u64) -> Received {
        crate::testing::recovered(provider, consumer, second(said), seq)
    }

    fn in_epoch(mut event: Received, epoch: u64) -> Received {
        event.epoch = epoch;
        event
    }

    fn kept(reduced: &Reduced<'_>) -> (Vec<u64>, Vec<u64>) {
        (
            reduced.failing.iter().map(|k| k.seq).collect(),
            reduced.recovered.iter().map(|k| k.seq).collect(),
        )
    }

    #[test]
    fn newest_word_per_key_and_kind_table() {
        // (events, kept failing seqs, kept recovered seqs)
        let cases: Vec<(Vec<Received>, Vec<u64>, Vec<u64>)> = vec![
            (vec![], vec![], vec![]),
            // The later in the stream wins, whatever time the provider's clock
            // stamped: a clock stepped back, an event stamped far in the future.
            (
                vec![failing("p@m", "a", 10, 1), failing("p@m", "a", 9, 2)],
                vec![2],
                vec![],
            ),
            (
                vec![failing("p@m", "a", 10, 1), failing("p@m", "a", 11, 2)],
                vec![2],
                vec![],
            ),
            (
                vec![
                    failing("p@m", "a", 4_000_000_000, 1),
                    failing("p@m", "a", 10, 2),
                ],
                vec![2],
                vec![],
            ),
            (
                vec![failing("p@m", "a", 10, 2), failing("p@m", "a", 10, 1)],
                vec![2],
                vec![],
            ),
            // A stream made anew starts at 1 again, in a later epoch.
            (
                vec![
                    failing("p@m", "a", 10, 9),
                    in_epoch(failing("p@m", "a", 5, 1), 2),
                ],
                vec![1],
                vec![],
            ),
            (
                vec![
                    in_epoch(failing("p@m", "a", 5, 1), 2),
                    failing("p@m", "a", 10, 9),
                ],
                vec![1],
                vec![],
            ),
            // Kinds are kept apart; other keys too (consumer, provider).
            (
                vec![
                    failing("p@m", "a", 10, 1),
                    recovered("p@m", "a", 11, 2),
                    failing("p@m", "b", 10, 3),
                    failing("p@n", "a", 10, 4),
                    failing("q@m", "a", 10, 5),
                    recovered("p@m", "a", 9, 6),
                ],
                vec![1, 3, 4, 5],
                vec![6],
            ),
        ];
        for (events, failing, recovered) in cases {
            let reduced = reduce(&events);
            assert_eq!(kept(&reduced), (failing, recovered), "{events:?}");
        }
    }
}
