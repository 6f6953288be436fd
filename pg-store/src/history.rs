//! Writing history (table `history`, migration V10): in a round's
//! transaction, after its key locks, what the store holds of each key the
//! round touches is read ([`Keys::previous`]), the engine walks the round's
//! events from it ([`mesh_status::model::history::Transitions`]), and the
//! transitions are inserted with the round's other statements
//! ([`HistoryColumns`]). The first `since` of a failing interval comes
//! from the same walk (`failing.first_since`).

use std::collections::{HashMap, HashSet};
use std::sync::LazyLock;
use std::time::{Duration, SystemTime};

use futures::future::try_join_all;
use mesh_protocol::event::RetirementAction;
use mesh_protocol::{Class, ModuleId, Name, Timestamp};
use tokio_postgres::types::ToSql;
use tokio_postgres::{Client, Row, Statement};

use mesh_status::model::history::{
    following_run_began, LastCatchUp, Previous, PreviousKey, Transition,
};
use mesh_status::model::{AliveRow, Instance, Received};

use super::column_list::{column_list, names, unnest};
use super::history_row::HistoryRow;

/// What the store holds of a round's standings (`$1`..`$3`: provider
/// module, machine, consumer): the failing row's place, its first `since`,
/// its times (for the settled rule), the `recovered` row's place, and the
/// provider's newest `alive`.
pub(super) const PREVIOUS_STANDINGS: &str = "
SELECT w.m, w.n, w.c,
       f.stream_epoch, f.stream_seq, COALESCE(f.first_since, f.since), f.said_at, f.stored_at,
       r.stream_epoch, r.stream_seq,
       a.started_at, a.settled_at, a.said_at, a.stored_at, a.alive_every_seconds
FROM unnest($1::text[], $2::text[], $3::text[]) AS w(m, n, c)
LEFT JOIN failing f ON f.provider_module = w.m AND f.provider_machine = w.n AND f.consumer = w.c
LEFT JOIN recovered r ON r.provider_module = w.m AND r.provider_machine = w.n AND r.consumer = w.c
LEFT JOIN alive a ON a.provider_module = w.m AND a.provider_machine = w.n";

/// The newest `alive` of a round's providers (`$1`, `$2`), with the
/// provider fault it carries (V11).
pub(super) const PREVIOUS_ALIVE: &str = "
SELECT a.provider_module, a.provider_machine, a.stream_epoch, a.stream_seq,
       COALESCE(a.stored_at, a.said_at), a.alive_every_seconds, a.fault_class, a.fault_since
FROM unnest($1::text[], $2::text[]) AS w(m, n)
JOIN alive a ON a.provider_module = w.m AND a.provider_machine = w.n";

/// The newest event of a round's grants (`$1`..`$4`: machine, consumer,
/// provision, from).
pub(super) const PREVIOUS_GRANTS: &str = "
SELECT g.machine, g.consumer, g.provision, g.provider, g.stream_epoch, g.stream_seq, g.kind
FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]) AS w(m, c, p, f)
JOIN grant_event g ON g.machine = w.m AND g.consumer = w.c AND g.provision = w.p
                  AND g.provider = w.f";

/// The newest `repair` of a round's faults (`$1`..`$3`).
pub(super) const PREVIOUS_REPAIRS: &str = "
SELECT p.provider_module, p.provider_machine, p.fault, p.stream_epoch, p.stream_seq
FROM unnest($1::text[], $2::text[], $3::text[]) AS w(m, n, f)
JOIN repair p ON p.provider_module = w.m AND p.provider_machine = w.n AND p.fault = w.f";

/// The newest `retirement` of a round's (provider, consumer, action) (`$1`..`$4`).
pub(super) const PREVIOUS_RETIREMENTS: &str = "
SELECT t.provider_module, t.provider_machine, t.consumer, t.action, t.stream_epoch, t.stream_seq
FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]) AS w(m, n, c, a)
JOIN retirement t ON t.provider_module = w.m AND t.provider_machine = w.n AND t.consumer = w.c
                 AND t.action = w.a";

/// The `serve` that caught up last (its last catch-up, when its run of
/// catch-ups began, its pull wait) and the store's clock: when the
/// controller's run of following in which the round is stored began
/// ([`mesh_status::model::history::following_run_began`]). One row, its
/// first three null when no `serve` ever caught up.
pub(super) const LAST_CATCH_UP: &str = "
SELECT c.pulled_at, c.following_since, c.pull_wait_ms, now()
FROM (SELECT 1) AS one
LEFT JOIN LATERAL (
    SELECT pulled_at, following_since, pull_wait_ms FROM controller_instance
    WHERE pulled_at IS NOT NULL ORDER BY pulled_at DESC LIMIT 1
) c ON true";

/// Appends transitions ([`HistoryColumns`]).
pub(super) static INSERT_HISTORY: LazyLock<String> = LazyLock::new(|| {
    let columns = HistoryColumns::COLUMNS;
    format!(
        "INSERT INTO history ({}) SELECT w.* FROM {}",
        names(columns),
        unnest(columns)
    )
});

/// The history statements, prepared with the write statements.
pub(super) struct HistoryStatements {
    pub(super) standings: Statement,
    pub(super) alive: Statement,
    pub(super) grants: Statement,
    pub(super) repairs: Statement,
    pub(super) retirements: Statement,
    pub(super) last_catch_up: Statement,
    pub(super) insert: Statement,
}

impl HistoryStatements {
    pub(super) async fn prepare(client: &Client) -> Result<Self, tokio_postgres::Error> {
        Ok(HistoryStatements {
            standings: client.prepare(PREVIOUS_STANDINGS).await?,
            alive: client.prepare(PREVIOUS_ALIVE).await?,
            grants: client.prepare(PREVIOUS_GRANTS).await?,
            repairs: client.prepare(PREVIOUS_REPAIRS).await?,
            retirements: client.prepare(PREVIOUS_RETIREMENTS).await?,
            last_catch_up: client.prepare(LAST_CATCH_UP).await?,
            insert: client.prepare(&INSERT_HISTORY).await?,
        })
    }
}

/// The keys a round touches, each once, as the columns of the statements
/// that read what the store holds of them.
#[derive(Default)]
pub(super) struct Keys {
    seen: HashSet<PreviousKey>,
    standings: [Vec<String>; 3],
    alive: [Vec<String>; 2],
    grants: [Vec<String>; 4],
    repairs: [Vec<String>; 3],
    retirements: [Vec<String>; 4],
}

impl Keys {
    pub(super) fn of(events: &[Received]) -> Keys {
        let mut keys = Keys::default();
        for received in events {
            let key = PreviousKey::of(received);
            if !keys.seen.insert(key.clone()) {
                continue;
            }
            let push = |columns: &mut [Vec<String>], values: &[&str]| {
                for (column, value) in columns.iter_mut().zip(values) {
                    column.push((*value).to_owned());
                }
            };
            match &key {
                PreviousKey::Standing(p, c) => push(
                    &mut keys.standings,
                    &[p.module.as_str(), p.machine.as_str(), c.as_str()],
                ),
                PreviousKey::Alive(p) => {
                    push(&mut keys.alive, &[p.module.as_str(), p.machine.as_str()])
                }
                PreviousKey::Grant(agent, provision, from) => push(
                    &mut keys.grants,
                    &[
                        agent.machine.as_str(),
                        agent.module.as_str(),
                        provision,
                        from,
                    ],
                ),
                PreviousKey::Repair(p, fault) => push(
                    &mut keys.repairs,
                    &[p.module.as_str(), p.machine.as_str(), fault.as_str()],
                ),
                // No transition: nothing stored is read for it.
                PreviousKey::GrantsRead(_) => {}
                PreviousKey::Retirement(p, c, action) => push(
                    &mut keys.retirements,
                    &[
                        p.module.as_str(),
                        p.machine.as_str(),
                        c.as_str(),
                        action.as_str(),
                    ],
                ),
            }
        }
        keys
    }

    /// What the store holds of each key (in the round's transaction, after
    /// its locks): the reads of the kinds the round has, pipelined.
    pub(super) async fn previous(
        &self,
        client: &Client,
        s: &HistoryStatements,
    ) -> Result<HashMap<PreviousKey, Previous>, tokio_postgres::Error> {
        fn params(columns: &[Vec<String>]) -> Vec<&(dyn ToSql + Sync)> {
            columns.iter().map(|c| c as &(dyn ToSql + Sync)).collect()
        }
        type Decode = fn(&Row) -> Result<Entry, tokio_postgres::Error>;
        let reads: Vec<(&Statement, &[Vec<String>], Decode)> = [
            (&s.standings, &self.standings[..], standing as Decode),
            (&s.alive, &self.alive[..], alive),
            (&s.grants, &self.grants[..], grant),
            (&s.repairs, &self.repairs[..], repair),
            (&s.retirements, &self.retirements[..], retirement),
        ]
        .into_iter()
        .filter(|(_, columns, _)| !columns[0].is_empty())
        .collect();
        let answers = try_join_all(reads.iter().map(|(statement, columns, decode)| async move {
            let rows = client.query(*statement, &params(columns)).await?;
            Ok::<_, tokio_postgres::Error>((*decode, rows))
        }))
        .await?;
        let mut previous = HashMap::new();
        for (decode, rows) in answers {
            for row in rows {
                if let (Some(key), value) = decode(&row)? {
                    previous.insert(key, value);
                }
            }
        }
        Ok(previous)
    }
}

impl Keys {
    /// When the controller's run of following in which the round is stored
    /// began, read only for a round with an `alive` (`None` otherwise: no
    /// silence to judge).
    pub(super) async fn following_since(
        &self,
        client: &Client,
        s: &HistoryStatements,
    ) -> Result<Option<Timestamp>, tokio_postgres::Error> {
        if self.alive[0].is_empty() {
            return Ok(None);
        }
        let row = client.query_one(&s.last_catch_up, &[]).await?;
        let pulled_at: Option<SystemTime> = row.try_get(0)?;
        let following_since: Option<SystemTime> = row.try_get(1)?;
        let pull_wait_ms: Option<i64> = row.try_get(2)?;
        let now: SystemTime = row.try_get(3)?;
        let last = pulled_at.map(|pulled_at| LastCatchUp {
            pulled_at: ts(pulled_at),
            following_since: following_since.map(ts),
            bound: Instance {
                host: String::new(),
                pid: 0,
                started_at: ts(pulled_at),
                pull_wait: Duration::from_millis(
                    u64::try_from(pull_wait_ms.unwrap_or(0)).unwrap_or(0),
                ),
            }
            .follow_bound(),
        });
        Ok(Some(following_run_began(last, ts(now))))
    }
}

fn provider(module: &str, machine: &str) -> Option<ModuleId> {
    ModuleId::parse(&format!("{module}@{machine}")).ok()
}

fn place(epoch: Option<i64>, seq: Option<i64>) -> Option<(u64, u64)> {
    let epoch = u64::try_from(epoch?).unwrap_or(0);
    let seq = u64::try_from(seq?).unwrap_or(0);
    Some((epoch, seq))
}

fn ts(at: SystemTime) -> Timestamp {
    Timestamp::from_system(at)
}

type Entry = (Option<PreviousKey>, Previous);

/// A standing: failing (unless its provider's settled start outlived it:
/// then it counts as not failing, as `status` reads it), its newest place.
fn standing(row: &Row) -> Result<Entry, tokio_postgres::Error> {
    let (m, n, c): (&str, &str, &str) = (row.try_get(0)?, row.try_get(1)?, row.try_get(2)?);
    // A key that does not parse is no event's key: it has no standing to keep.
    let (Some(id), Ok(consumer)) = (provider(m, n), Name::parse(c)) else {
        return Ok((None, Previous::Nothing));
    };
    let failing = place(row.try_get(3)?, row.try_get(4)?);
    let recovered = place(row.try_get(8)?, row.try_get(9)?);
    let newest = match (failing, recovered) {
        (None, None) => return Ok((None, Previous::Nothing)),
        (a, b) => a.max(b).unwrap_or_default(),
    };
    let first_since: Option<SystemTime> = row.try_get(5)?;
    let said_at: Option<SystemTime> = row.try_get(6)?;
    let stored_at: Option<SystemTime> = row.try_get(7)?;
    let started_at: Option<SystemTime> = row.try_get(10)?;
    let outlived = match (started_at, said_at) {
        (Some(started_at), Some(said_at)) => AliveRow {
            provider: id.clone(),
            started_at: ts(started_at),
            alive_every_seconds: row.try_get(14)?,
            settled_at: row.try_get::<_, Option<SystemTime>>(11)?.map(ts),
            repeat_every_seconds: None,
            said_at: ts(row.try_get(12)?),
            stored_at: row.try_get::<_, Option<SystemTime>>(13)?.map(ts),
            // Only its times are read here (whether the standing outlived it).
            fault: None,
            contributions: None,
        }
        .outlived(ts(said_at), stored_at.map(ts)),
        _ => false,
    };
    let failing_since = first_since
        .filter(|_| failing.is_some() && !outlived)
        .map(ts);
    let key = PreviousKey::Standing(id, consumer);
    Ok((
        Some(key),
        Previous::Standing {
            newest,
            failing_since,
        },
    ))
}

/// A provider's newest `alive`. A fault class this release does not know
/// (a newer provider's) reads as `refused`: its clearing is still a row.
fn alive(row: &Row) -> Result<Entry, tokio_postgres::Error> {
    let key = provider(row.try_get(0)?, row.try_get(1)?).map(PreviousKey::Alive);
    let every: i64 = row.try_get(5)?;
    let class: Option<&str> = row.try_get(6)?;
    let since: Option<SystemTime> = row.try_get(7)?;
    let fault = class
        .zip(since)
        .map(|(class, since)| (class.parse::<Class>().unwrap_or(Class::Refused), ts(since)));
    Ok((
        key,
        Previous::Alive {
            newest: place(row.try_get(2)?, row.try_get(3)?).unwrap_or_default(),
            heard_at: ts(row.try_get(4)?),
            every: Duration::from_secs(u64::try_from(every.max(1)).unwrap_or(1)),
            fault,
        },
    ))
}

fn grant(row: &Row) -> Result<Entry, tokio_postgres::Error> {
    let agent = provider(row.try_get(1)?, row.try_get(0)?);
    let key =
        agent.map(|a| PreviousKey::Grant(a, row.get::<_, String>(2), row.get::<_, String>(3)));
    let kind: &str = row.try_get(6)?;
    Ok((
        key,
        Previous::Grant {
            newest: place(row.try_get(4)?, row.try_get(5)?).unwrap_or_default(),
            unreachable: kind == "unreachable",
        },
    ))
}

fn repair(row: &Row) -> Result<Entry, tokio_postgres::Error> {
    let fault = Name::parse(row.try_get(2)?).ok();
    let key = provider(row.try_get(0)?, row.try_get(1)?)
        .zip(fault)
        .map(|(p, fault)| PreviousKey::Repair(p, fault));
    let newest = place(row.try_get(3)?, row.try_get(4)?).unwrap_or_default();
    Ok((key, Previous::Event { newest }))
}

fn retirement(row: &Row) -> Result<Entry, tokio_postgres::Error> {
    let action = row.try_get::<_, &str>(3)?.parse::<RetirementAction>().ok();
    let consumer = Name::parse(row.try_get(2)?).ok();
    let key = provider(row.try_get(0)?, row.try_get(1)?)
        .zip(consumer.zip(action))
        .map(|(p, (c, a))| PreviousKey::Retirement(p, c, a));
    let newest = place(row.try_get(4)?, row.try_get(5)?).unwrap_or_default();
    Ok((key, Previous::Event { newest }))
}

column_list! {
    /// The columns of [`INSERT_HISTORY`], `$1` first.
    struct HistoryColumns {
        kind: &'static str = "text",
        at: SystemTime = "timestamptz",
        provider_module: Option<String> = "text",
        provider_machine: Option<String> = "text",
        consumer: Option<String> = "text",
        consumer_machine: Option<String> = "text",
        provision: Option<String> = "text",
        class: Option<&'static str> = "text",
        error: Option<String> = "text",
        since: Option<SystemTime> = "timestamptz",
        attempts: Option<i64> = "int8",
        reason: Option<String> = "text",
        fault: Option<String> = "text",
        detail: Option<String> = "text",
        stream_epoch: Option<i64> = "int8",
        stream_seq: Option<i64> = "int8",
        stored_at: Option<SystemTime> = "timestamptz",
    }
}

impl HistoryColumns {
    pub(super) fn of(transitions: &[Transition]) -> HistoryColumns {
        let mut c = HistoryColumns::default();
        for r in transitions.iter().map(HistoryRow::of) {
            c.kind.push(r.kind.as_str());
            c.at.push(r.at.system_time());
            c.provider_module
                .push(r.provider.as_ref().map(|p| p.module.to_string()));
            c.provider_machine
                .push(r.provider.as_ref().map(|p| p.machine.to_string()));
            c.consumer.push(r.consumer);
            c.consumer_machine.push(r.consumer_machine);
            c.provision.push(r.provision);
            c.class.push(r.class.map(|k| k.as_str()));
            c.error.push(r.error);
            c.since.push(r.since.map(Timestamp::system_time));
            c.attempts.push(r.attempts);
            c.reason.push(r.reason);
            c.fault.push(r.fault);
            c.detail.push(r.detail);
            let int = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
            c.stream_epoch.push(r.place.map(|p| int(p.epoch)));
            c.stream_seq.push(r.place.map(|p| int(p.seq)));
            c.stored_at.push(
                r.place
                    .and_then(|p| p.stored_at)
                    .map(Timestamp::system_time),
            );
        }
        c
    }

    pub(super) fn is_empty(&self) -> bool {
        self.kind.is_empty()
    }
}
