//! The in-memory store: the same [`Store`] trait as `PgStore`, the same
//! rules, kept as small as the rules allow and built on the engine's own
//! pieces (`mesh-status`): the round is reduced by [`reduce`], "newer" is
//! [`Place::is_newer_than`] and the settled rule is [`AliveRow::outlived`],
//! the very functions the PostgreSQL store's statements mirror.
//!
//! - one `failing` per (provider, consumer): the newest; a `recovered`
//!   deletes only an older one and keeps its own place (a tombstone), so a
//!   `failing` older than it cannot come back;
//! - the newest `alive` per provider;
//! - the read leaves out a standing its provider outlived (settled rule).
//!
//! A store outage fails every call with a transient error.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use async_trait::async_trait;
use mesh_protocol::{ModuleId, Name, Timestamp};
use mesh_status::model::reduce::{reduce, Place};
use mesh_status::model::{
    AliveRow, ControllerRecord, FailingRow, InstanceRow, Received, RepairRow,
};
use mesh_status::store::{
    ControllerRecordUpdate, FailingGroup, StatusFilter, Store, StoreError, StoreErrorKind,
};
use tokio::time::Instant;

/// A standing's key: provider module, provider machine, consumer (the
/// listing's byte order).
pub type StandingKey = (String, String, String);

/// What the store holds.
#[derive(Debug, Default)]
pub struct Tables {
    /// The newest `failing` per key, with its place.
    pub failing: BTreeMap<StandingKey, (FailingRow, Place)>,
    /// The newest `recovered` per key (tombstones).
    pub recovered: BTreeMap<StandingKey, Place>,
    /// The newest `alive` per provider.
    pub alive: BTreeMap<ModuleId, (AliveRow, Place)>,
    /// What each `serve` process recorded of itself, by its key.
    pub instances: BTreeMap<String, InstanceRow>,
    /// Whether the store is away.
    pub down: bool,
    /// The store's clock: this wall time at this instant.
    pub clock: Option<(Instant, SystemTime)>,
}

impl Tables {
    /// The store's clock now (`now()`).
    pub fn now(&self) -> Timestamp {
        let (at, wall) = self
            .clock
            .unwrap_or((Instant::now(), SystemTime::UNIX_EPOCH));
        Timestamp::from_system(wall + (Instant::now() - at))
    }
}

/// The store; clones share it (one database, many connections).
#[derive(Clone, Debug, Default)]
pub struct MemStore {
    tables: Arc<Mutex<Tables>>,
}

/// What one status read gives.
#[derive(Clone, Debug, PartialEq)]
pub struct Read {
    /// The standings counted by provider and class, in that order.
    pub groups: Vec<FailingGroup>,
    /// The open repair faults (none are simulated).
    pub repairs: Vec<RepairRow>,
    /// The newest `alive` of each selected provider.
    pub alive: Vec<AliveRow>,
    /// The standings listed, in order.
    pub standings: Vec<FailingRow>,
}

fn key(emitter: &ModuleId, consumer: &str) -> StandingKey {
    (
        emitter.module.to_string(),
        emitter.machine.to_string(),
        consumer.to_owned(),
    )
}

impl MemStore {
    /// An empty store whose clock reads `wall` at `at`.
    pub fn new(at: Instant, wall: SystemTime) -> MemStore {
        let store = MemStore::default();
        store.with(|t| t.clock = Some((at, wall)));
        store
    }

    /// What the store says of the controller (`PgStore`'s record read):
    /// the instance that caught up last first.
    ///
    /// # Errors
    /// While the store is away.
    pub fn record(&self) -> Result<ControllerRecord, StoreError> {
        self.with(|t| {
            if t.down {
                return Err(MemStore::away());
            }
            let mut instances: Vec<InstanceRow> = t.instances.values().cloned().collect();
            instances.sort_by_key(|r| std::cmp::Reverse(r.pulled_at));
            Ok(ControllerRecord {
                now: t.now(),
                begun_at: None,
                // Its stream's making is not kept: all it holds is known.
                stream_since: None,
                instances,
            })
        })
    }

    /// Runs `f` on the tables.
    pub fn with<R>(&self, f: impl FnOnce(&mut Tables) -> R) -> R {
        f(&mut self.tables.lock().expect("store lock"))
    }

    /// Sets whether the store is away.
    pub fn set_down(&self, down: bool) {
        self.with(|t| t.down = down);
    }

    /// The error of every call while the store is away: transient, as a
    /// store that is down is.
    fn away() -> StoreError {
        StoreError::new(StoreErrorKind::Away, "the simulated store is away")
    }

    /// What `status` reads for `filter` (`PgStore::read_status`).
    ///
    /// # Errors
    /// While the store is away.
    pub fn read(&self, filter: &StatusFilter) -> Result<Read, StoreError> {
        self.with(|t| {
            if t.down {
                return Err(MemStore::away());
            }
            let providers: std::collections::BTreeSet<&ModuleId> =
                filter.providers.iter().collect();
            let selected = |p: &ModuleId| providers.contains(p);
            let alive: Vec<AliveRow> = t
                .alive
                .iter()
                .filter(|(p, _)| selected(p))
                .map(|(_, (row, _))| row.clone())
                .collect();
            let standings: Vec<FailingRow> = t
                .failing
                .values()
                .filter(|(row, place)| {
                    !t.alive
                        .get(&row.provider)
                        .is_some_and(|(a, _)| a.outlived(row.said.said_at, place.stored_at))
                })
                .map(|(row, _)| row)
                .filter(|row| selected(&row.provider))
                .filter(|row| {
                    filter.machine.as_ref().is_none_or(|m| {
                        row.provider.machine.as_str() == m
                            || row.said.consumer_machine.as_ref().map(Name::as_str) == Some(m)
                    })
                })
                .cloned()
                .collect();
            let mut groups: Vec<FailingGroup> = Vec::new();
            for row in &standings {
                let silent = u64::from(row.said.said_at <= filter.silent_before);
                match groups
                    .iter_mut()
                    .find(|g| g.provider == row.provider && g.class == row.said.class)
                {
                    Some(g) => {
                        g.standings += 1;
                        g.silent += silent;
                    }
                    None => groups.push(FailingGroup {
                        provider: row.provider.clone(),
                        class: row.said.class,
                        standings: 1,
                        silent,
                    }),
                }
            }
            groups.sort_by(|a, b| {
                (&a.provider, a.class.as_str()).cmp(&(&b.provider, b.class.as_str()))
            });
            Ok(Read {
                groups,
                repairs: Vec::new(),
                alive,
                standings,
            })
        })
    }
}

#[async_trait]
impl Store for MemStore {
    async fn apply(&mut self, events: &[Received]) -> Result<(), StoreError> {
        let reduced = reduce(events);
        self.with(|t| {
            if t.down {
                return Err(MemStore::away());
            }
            // `recovered` before `failing`, as the statements run.
            for k in &reduced.recovered {
                let key = key(k.emitter, k.body.consumer.as_str());
                let place = k.place();
                if t.failing
                    .get(&key)
                    .is_some_and(|(_, kept)| place.is_newer_than(kept))
                {
                    t.failing.remove(&key);
                }
                if t.recovered
                    .get(&key)
                    .is_none_or(|kept| place.is_newer_than(kept))
                {
                    t.recovered.insert(key, place);
                }
            }
            for k in &reduced.failing {
                let b = k.body;
                let key = key(k.emitter, b.consumer.as_str());
                let place = k.place();
                if t.recovered
                    .get(&key)
                    .is_some_and(|kept| kept.is_newer_than(&place))
                {
                    continue;
                }
                if t.failing
                    .get(&key)
                    .is_none_or(|(_, kept)| place.is_newer_than(kept))
                {
                    let row = FailingRow {
                        provider: k.emitter.clone(),
                        said: b.clone(),
                        first_since: None,
                    };
                    t.failing.insert(key, (row, place));
                }
            }
            for k in &reduced.alive {
                let b = k.body;
                let place = k.place();
                if t.alive
                    .get(k.emitter)
                    .is_none_or(|(_, kept)| place.is_newer_than(kept))
                {
                    let row = AliveRow {
                        provider: k.emitter.clone(),
                        started_at: b.started_at,
                        alive_every_seconds: i64::try_from(b.alive_every_seconds)
                            .unwrap_or(i64::MAX),
                        settled_at: b.settled_at,
                        repeat_every_seconds: b
                            .repeat_every_seconds
                            .map(|s| i64::try_from(s).unwrap_or(i64::MAX)),
                        said_at: b.said_at,
                        stored_at: k.stored_at,
                        fault: b.fault.clone(),
                        contributions: b.contributions.clone(),
                    };
                    t.alive.insert(k.emitter.clone(), (row, place));
                }
            }
            Ok(())
        })
    }

    /// As `PgStore`'s record statement: `pulled_at` and `applied_at` set
    /// to the store's clock when so; a catch-up more than the follow bound
    /// after the one before begins a new run (`following_since`).
    async fn record(&mut self, update: ControllerRecordUpdate<'_>) -> Result<(), StoreError> {
        let ControllerRecordUpdate {
            instance,
            caught_up,
            applied,
            first: _,
        } = update;
        self.with(|t| {
            if t.down {
                return Err(MemStore::away());
            }
            let now = t.now();
            let row = t
                .instances
                .entry(instance.key())
                .or_insert_with(|| InstanceRow {
                    instance: instance.clone(),
                    pulled_at: None,
                    applied_at: None,
                    following_since: None,
                });
            if caught_up {
                let bound = instance.follow_bound();
                let new_run = match (row.pulled_at, row.following_since) {
                    (Some(pulled), Some(_)) => pulled.system_time() + bound < now.system_time(),
                    _ => true,
                };
                if new_run {
                    row.following_since = Some(now);
                }
                row.pulled_at = Some(now);
            }
            if applied {
                row.applied_at = Some(now);
            }
            Ok(())
        })
    }

    async fn stream_epoch(
        &mut self,
        _stream: &str,
        _created: SystemTime,
    ) -> Result<u64, StoreError> {
        Ok(1)
    }
}
