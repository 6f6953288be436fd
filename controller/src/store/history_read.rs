//! Reading history (table `history`, migration V10): what `mesh-controller
//! history` lists ([`PgStore::read_history`]), and, in a status read's
//! snapshot, the history of the standings it lists (their recurrence) and
//! of its open repair faults ([`StatusRead::recurrences`]); and removing
//! what is past its retention ([`PgStore::prune_history`]).

use mesh_protocol::{ModuleId, Name, Timestamp};
use std::time::{Duration, SystemTime};
use tokio_postgres::types::ToSql;
use tokio_postgres::Row;

use super::connection::{PgStore, STATEMENT_TIMEOUT};
use super::read::{decoded, optional_time, time, ReadError, StatusRead};
use super::PgError;
use mesh_status::model::history::{RepairsDone, Transition};
use mesh_status::model::reduce::Place;
use mesh_status::store::HistoryFilter;

/// The columns a transition is read from, in [`transition_row`]'s order.
const COLUMNS: &str = "h.id, h.kind, h.at, h.provider_module, h.provider_machine, h.consumer, \
     h.consumer_machine, h.provision, h.class, h.error, h.since, h.attempts, h.reason, h.fault, \
     h.detail, h.stream_epoch, h.stream_seq, h.stored_at";

/// What [`HistoryFilter`] selects (`$1` consumer, `$2` its machine, `$3`
/// and `$4` a provider, `$5` a machine; each null when not asked).
const SCOPED: &str = "($1::text IS NULL OR h.consumer = $1)
  AND ($2::text IS NULL OR h.consumer_machine = $2 OR h.consumer_machine IS NULL)
  AND ($3::text IS NULL OR (h.provider_module = $3 AND h.provider_machine = $4))
  AND ($5::text IS NULL OR h.provider_machine = $5 OR h.consumer_machine = $5)";

/// The history in scope from `$6` on, oldest first, with the beginning of
/// each interval still failing that began before `$6`.
///
/// The standings are narrowed by the consumer and provider asked (which
/// the lateral's join implies) before the lateral runs: otherwise it looks
/// for a beginning of every standing in the store, 100,000 index probes
/// for one consumer's page at 100,000 standings.
fn read_history() -> String {
    format!(
        "SELECT {COLUMNS} FROM history h WHERE h.at >= $6 AND {SCOPED}
         UNION ALL
         SELECT {COLUMNS} FROM failing f CROSS JOIN LATERAL (
             SELECT * FROM history h
             WHERE h.kind = 'failing-began' AND h.consumer = f.consumer
               AND h.provider_module = f.provider_module
               AND h.provider_machine = f.provider_machine AND h.at < $6 AND {SCOPED}
             ORDER BY h.at DESC LIMIT 1) h
         WHERE ($1::text IS NULL OR f.consumer = $1)
           AND ($3::text IS NULL OR (f.provider_module = $3 AND f.provider_machine = $4))
         ORDER BY 1"
    )
}

/// The beginnings and recoveries within the window (`$3` on) of the
/// standings failing now in scope (`$1` providers, `$2` machine) that
/// recovered within it: what their recurrence is read from.
const RECURRING: &str = "
SELECT h.id, h.kind, h.at, h.provider_module, h.provider_machine, h.consumer,
       h.consumer_machine, h.provision, h.class, h.error, h.since, h.attempts, h.reason, h.fault,
       h.detail, h.stream_epoch, h.stream_seq, h.stored_at
FROM history h
WHERE h.kind IN ('failing-began', 'recovered') AND h.at >= $3
  AND h.provider_module || '@' || h.provider_machine = ANY($1::text[])
  AND ($2::text IS NULL OR h.provider_machine = $2 OR h.consumer_machine = $2)
  AND EXISTS (
      SELECT 1 FROM failing f
      WHERE f.provider_module = h.provider_module AND f.provider_machine = h.provider_machine
        AND f.consumer = h.consumer)
  AND EXISTS (
      SELECT 1 FROM history r
      WHERE r.kind = 'recovered' AND r.at >= $3 AND r.consumer = h.consumer
        AND r.provider_module = h.provider_module AND r.provider_machine = h.provider_machine)
ORDER BY h.id";

/// The repairs done within the window (`$3` on) per fault of the
/// providers in scope.
const REPAIRS_DONE: &str = "
SELECT provider_module, provider_machine, fault, count(*), max(at)
FROM history
WHERE kind = 'repair-done' AND at >= $3
  AND provider_module || '@' || provider_machine = ANY($1::text[])
  AND ($2::text IS NULL OR provider_machine = $2)
GROUP BY provider_module, provider_machine, fault";

fn optional_provider(row: &Row, i: usize) -> Result<Option<ModuleId>, ReadError> {
    let (module, machine): (Option<&str>, Option<&str>) = (row.try_get(i)?, row.try_get(i + 1)?);
    match (module, machine) {
        (Some(_), Some(_)) => Ok(Some(ModuleId::new(
            decoded::<Name>(row, i, "history.provider_module")?,
            decoded::<Name>(row, i + 1, "history.provider_machine")?,
        ))),
        _ => Ok(None),
    }
}

fn transition_row(row: &Row) -> Result<Transition, ReadError> {
    let class = match row.try_get::<_, Option<&str>>(8)? {
        Some(_) => Some(decoded(row, 8, "history.class")?),
        None => None,
    };
    let place = match (
        row.try_get::<_, Option<i64>>(15)?,
        row.try_get::<_, Option<i64>>(16)?,
    ) {
        (Some(epoch), Some(seq)) => Some(Place {
            epoch: u64::try_from(epoch).unwrap_or(0),
            seq: u64::try_from(seq).unwrap_or(0),
            said_at: time(row, 2)?,
            stored_at: optional_time(row, 17)?,
        }),
        _ => None,
    };
    Ok(Transition {
        kind: decoded(row, 1, "history.kind")?,
        at: time(row, 2)?,
        provider: optional_provider(row, 3)?,
        consumer: row.try_get(5)?,
        consumer_machine: row.try_get(6)?,
        provision: row.try_get(7)?,
        class,
        error: row.try_get(9)?,
        since: optional_time(row, 10)?,
        attempts: row.try_get(11)?,
        reason: row.try_get(12)?,
        fault: row.try_get(13)?,
        detail: row.try_get(14)?,
        place,
    })
}

/// Removes at most `$2` rows recorded more than `$1` seconds ago, oldest
/// first (served by the index `history_by_recorded`).
pub(super) const PRUNE_HISTORY: &str = "
DELETE FROM history WHERE id IN (
    SELECT id FROM history WHERE recorded_at < now() - make_interval(secs => $1)
    ORDER BY recorded_at LIMIT $2)";

/// How long one prune may take before the store counts as away.
const PRUNE_TIMEOUT: Duration = Duration::from_secs(10);

impl PgStore {
    /// Removes at most `limit` history rows recorded more than `keep` ago
    /// ([`Store::prune_history`](mesh_status::Store::prune_history)).
    ///
    /// # Errors
    /// [`PgError`] when the store is away, refuses, or does not answer in time.
    pub async fn prune_history(&mut self, keep: Duration, limit: u32) -> Result<u64, PgError> {
        let client = &self.connected().await?.client;
        let keep = keep.as_secs_f64();
        let limit = i64::from(limit);
        let params: [&(dyn ToSql + Sync); 2] = [&keep, &limit];
        let outcome =
            tokio::time::timeout(PRUNE_TIMEOUT, client.execute(PRUNE_HISTORY, &params)).await;
        self.settle(outcome, PRUNE_TIMEOUT)
    }
}

impl PgStore {
    /// The history `filter` selects, oldest first (see [`HistoryFilter`]),
    /// and the store's clock.
    ///
    /// # Errors
    /// [`PgError`] when the store is away, refuses, is not migrated to this
    /// release, or holds a value this release cannot read.
    pub async fn read_history(
        &mut self,
        filter: &HistoryFilter,
    ) -> Result<(Vec<Transition>, Timestamp), PgError> {
        let target = self.options.shown.clone();
        let client = &self.connected().await?.client;
        let (consumer, consumer_machine) = match &filter.consumer {
            Some((c, m)) => (Some(c.as_str()), m.as_deref()),
            None => (None, None),
        };
        let module = filter.provider.as_ref().map(|p| p.module.as_str());
        let machine = filter.provider.as_ref().map(|p| p.machine.as_str());
        let since: SystemTime = filter.since.system_time();
        let params: [&(dyn ToSql + Sync); 6] = [
            &consumer,
            &consumer_machine,
            &module,
            &machine,
            &filter.machine,
            &since,
        ];
        let statement = read_history();
        let work = async {
            let (rows, now) = tokio::join!(
                client.query(statement.as_str(), &params),
                client.query_one("SELECT now()", &[])
            );
            let rows = rows?
                .iter()
                .map(transition_row)
                .collect::<Result<Vec<_>, _>>()?;
            Ok::<_, ReadError>((rows, time(&now?, 0)?))
        };
        match tokio::time::timeout(STATEMENT_TIMEOUT, work).await {
            Ok(Ok(read)) => Ok(read),
            Ok(Err(error)) => Err(error.into_store_error(target)),
            Err(_) => Err(PgError::Timeout {
                target,
                after: STATEMENT_TIMEOUT,
            }),
        }
    }
}

impl StatusRead {
    /// In the read's snapshot, before its standings are asked for: the
    /// history from `since` on of the standings it lists that recovered
    /// since then (oldest first), and the repairs done since then per
    /// fault of its providers.
    ///
    /// # Errors
    /// [`PgError`] when the store breaks off, does not answer in time, or
    /// holds a value this release cannot read.
    pub async fn recurrences(
        &mut self,
        since: Timestamp,
    ) -> Result<(Vec<Transition>, Vec<(ModuleId, String, RepairsDone)>), PgError> {
        let since_at: SystemTime = since.system_time();
        let params: [&(dyn ToSql + Sync); 3] = [&self.providers, &self.machine, &since_at];
        let client = &self.client;
        let work = async {
            let (rows, repairs) = tokio::join!(
                client.query(RECURRING, &params),
                client.query(REPAIRS_DONE, &params)
            );
            let rows = rows?
                .iter()
                .map(transition_row)
                .collect::<Result<Vec<_>, _>>()?;
            let repairs = repairs?
                .iter()
                .map(|row| {
                    let provider = ModuleId::new(
                        decoded::<Name>(row, 0, "history.provider_module")?,
                        decoded::<Name>(row, 1, "history.provider_machine")?,
                    );
                    let count: i64 = row.try_get(3)?;
                    let done = RepairsDone {
                        count: u64::try_from(count).unwrap_or(0),
                        window_seconds: 0,
                        last_at: time(row, 4)?,
                    };
                    Ok::<_, ReadError>((provider, row.try_get::<_, String>(2)?, done))
                })
                .collect::<Result<Vec<_>, _>>()?;
            Ok::<_, ReadError>((rows, repairs))
        };
        match tokio::time::timeout(STATEMENT_TIMEOUT, work).await {
            Ok(Ok(read)) => Ok(read),
            Ok(Err(error)) => Err(error.into_store_error(self.target.clone())),
            Err(_) => Err(PgError::Timeout {
                target: self.target.clone(),
                after: STATEMENT_TIMEOUT,
            }),
        }
    }
}
