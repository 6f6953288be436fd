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
use super::history_row::{HistoryRow, Misfit};
use super::read::{ListedKeys, StatusRead};
use super::rows::{decoded, optional_decoded, optional_time, time, ReadError};
use super::PgError;
use mesh_status::model::history::{
    Past, PastRow, Recoveries, RepairsDone, Transition, TransitionKind,
};
use mesh_status::model::reduce::Place;
use mesh_status::model::{AckRow, NoteRow};
use mesh_status::report::history::{window_start, Recurrences, FLAPPING_WITHIN};
use mesh_status::store::HistoryFilter;

/// The columns a transition is read from, in [`transition_row`]'s order.
const COLUMNS: &str = "h.id, h.kind, h.at, h.provider_module, h.provider_machine, h.consumer, \
     h.consumer_machine, h.provision, h.class, h.error, h.since, h.attempts, h.reason, h.fault, \
     h.detail, h.stream_epoch, h.stream_seq, h.stored_at, h.by_name, h.done, h.until";

/// What [`HistoryFilter`] selects (`$1` consumer, `$2` its machine, `$3`
/// and `$4` a provider, `$5` a machine; each null when not asked).
const SCOPED: &str = "($1::text IS NULL OR h.consumer = $1)
  AND ($2::text IS NULL OR h.consumer_machine = $2 OR h.consumer_machine IS NULL)
  AND ($3::text IS NULL OR (h.provider_module = $3 AND h.provider_machine = $4))
  AND ($5::text IS NULL OR h.provider_machine = $5 OR h.consumer_machine = $5)";

/// The history in scope from `$6` on, oldest first, with the beginning of
/// each interval still failing that began before `$6`, and of each
/// provider fault still lasting (its newest `alive` carries one) that did.
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
         UNION ALL
         SELECT {COLUMNS} FROM alive a CROSS JOIN LATERAL (
             SELECT * FROM history h
             WHERE h.kind = 'provider-fault-began'
               AND h.provider_module = a.provider_module
               AND h.provider_machine = a.provider_machine AND h.at < $6 AND {SCOPED}
             ORDER BY h.at DESC LIMIT 1) h
         WHERE a.fault_class IS NOT NULL
           AND ($3::text IS NULL OR (a.provider_module = $3 AND a.provider_machine = $4))
         ORDER BY 1"
    )
}

/// The standings failing now in scope (`$3` providers, `$4` machine, `$5`
/// consumer; each null when not asked), for [`window_rows`]: each with the
/// first `since` of the interval it fails in now.
const IN_SCOPE: &str = "(SELECT f.provider_module, f.provider_machine, f.consumer,
           LEAST(f.first_since, f.since) AS failing_since
    FROM failing f
    WHERE f.provider_module || '@' || f.provider_machine = ANY($3::text[])
      AND ($4::text IS NULL OR f.provider_machine = $4 OR f.consumer_machine = $4)
      AND ($5::text IS NULL OR f.consumer = $5))";

/// The standings listed, as the listing read them (`$3` provider modules,
/// `$4` their machines, `$5` consumers, `$6` the first `since` of the
/// interval each fails in now), for [`window_rows`].
const OF_KEYS: &str = "unnest($3::text[], $4::text[], $5::text[], $6::timestamptz[])";

/// Per standing of `standings` ([`IN_SCOPE`] or [`OF_KEYS`]): its rows
/// within the window (`$1` to `$2`, now) that bear on its recurrence
/// ([`PastRow`]): the recoveries that ended an interval begun before the
/// one it fails in now, the beginnings, and the notes (with their text)
/// written before the interval it fails in now began (to the second: a
/// provider says `since` in whole seconds, so a note written in the second
/// a failure began, after the recovery before it, is the last time's). In
/// any order.
///
/// Each standing's rows come from one probe of the consumer's index, and
/// [`Recoveries::of_window`] counts them. Counted here instead (a window
/// function and four ordered aggregates a standing), the 1,000 standings
/// the mesh page lists took 24–32 ms in pgbench where these rows take
/// 17–19, and the whole mesh's 100,000 standings 404–420 ms against
/// 163–177 (1,000,000 history rows, `cargo bench -p mesh-console`'s).
fn window_rows(standings: &str) -> String {
    format!(
        "SELECT f.provider_module, f.provider_machine, f.consumer, h.at, h.id, h.kind, h.since,
       h.class, h.detail, h.by_name
FROM {standings} AS f (provider_module, provider_machine, consumer, failing_since)
JOIN history h ON h.consumer = f.consumer AND h.provider_module = f.provider_module
     AND h.provider_machine = f.provider_machine
WHERE h.at >= $1 AND h.at <= $2
  AND (h.kind = 'failing-began'
       OR (h.kind = 'recovered' AND (h.since IS NULL OR h.since < f.failing_since))
       OR (h.kind = 'note' AND h.detail IS NOT NULL
           AND date_trunc('second', h.at) <= f.failing_since))"
    )
}

/// The acknowledgements that hold at `$1` (their `until` after it) of
/// the providers in scope (`$2`, `module@machine`; `$3` a machine, `$4` a
/// consumer, each null when not asked). Few rows: people write them.
const ACKNOWLEDGED: &str = "
SELECT provider_module, provider_machine, consumer, consumer_machine, detail, by_name, at, until
FROM history
WHERE kind = 'action' AND reason = 'acknowledge' AND until > $1
  AND provider_module || '@' || provider_machine = ANY($2::text[])
  AND ($3::text IS NULL OR provider_machine = $3 OR consumer_machine = $3)
  AND ($4::text IS NULL OR consumer = $4)";

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

/// A row of [`COLUMNS`] as its transition ([`HistoryRow::transition`]).
fn transition_row(row: &Row) -> Result<Transition, ReadError> {
    let class = optional_decoded(row, 8, "history.class")?;
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
    let flat = HistoryRow {
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
        by: row.try_get(18)?,
        done: row.try_get(19)?,
        until: optional_time(row, 20)?,
    };
    flat.transition()
        .map_err(|Misfit { column, reason }| ReadError::Undecodable { column, reason })
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
            Some((c, m)) => (Some(c.as_str()), m.as_ref().map(Name::as_str)),
            None => (None, None),
        };
        let module = filter.provider.as_ref().map(|p| p.module.as_str());
        let machine = filter.provider.as_ref().map(|p| p.machine.as_str());
        let since: SystemTime = filter.since.system_time();
        let on = filter.machine.as_ref().map(Name::as_str);
        let params: [&(dyn ToSql + Sync); 6] =
            [&consumer, &consumer_machine, &module, &machine, &on, &since];
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
    /// In the read's snapshot: how often each open repair fault's repair
    /// was done within `window` before `now`, set on its repair
    /// ([`RepairRow::repaired`](mesh_status::model::RepairRow)) before the
    /// head is made of them.
    ///
    /// # Errors
    /// [`PgError`] when the store breaks off, does not answer in time, or
    /// holds a value this release cannot read.
    pub async fn count_repairs(&mut self, now: Timestamp, window: Duration) -> Result<(), PgError> {
        let since: SystemTime = window_start(now, window).system_time();
        let params: [&(dyn ToSql + Sync); 3] = [&self.providers, &self.machine, &since];
        let work = async {
            let rows = self.client.query(REPAIRS_DONE, &params).await?;
            rows.iter()
                .map(|row| {
                    let provider = ModuleId::new(
                        decoded::<Name>(row, 0, "history.provider_module")?,
                        decoded::<Name>(row, 1, "history.provider_machine")?,
                    );
                    let count: i64 = row.try_get(3)?;
                    let done = RepairsDone {
                        count: u64::try_from(count).unwrap_or(0),
                        window_seconds: window.as_secs(),
                        last_at: time(row, 4)?,
                    };
                    let fault: Name = decoded(row, 2, "history.fault")?;
                    Ok::<_, ReadError>((provider, fault, done))
                })
                .collect::<Result<Vec<_>, _>>()
        };
        let done = self.bounded(work).await?;
        for repair in &mut self.repairs {
            repair.repaired = done
                .iter()
                .find(|(p, f, _)| *p == repair.provider && *f == repair.fault)
                .map(|(_, _, d)| d.clone());
        }
        Ok(())
    }

    /// In the read's snapshot: what history says within `window` before
    /// `now` of the standings this read lists (all it selects, or those of
    /// a capped listing), for their recurrence. Asked before the standings
    /// are taken from a streamed listing, after the head is printed.
    ///
    /// # Errors
    /// [`PgError`] when the store breaks off, does not answer in time, or
    /// holds a value this release cannot read.
    pub async fn recoveries(
        &mut self,
        now: Timestamp,
        window: Duration,
    ) -> Result<Vec<Recoveries>, PgError> {
        let (start, until) = (window_start(now, window).system_time(), now.system_time());
        let hour = window_start(now, FLAPPING_WITHIN);
        let keys = self.listed_keys();
        let of_keys = keys.is_some();
        let statement = window_rows(if of_keys { OF_KEYS } else { IN_SCOPE });
        let ListedKeys {
            modules,
            machines,
            consumers,
            failing_since,
        } = keys.unwrap_or_default();
        let scope: [&(dyn ToSql + Sync); 3] = [&self.providers, &self.machine, &self.consumer];
        let listed: [&(dyn ToSql + Sync); 4] = [&modules, &machines, &consumers, &failing_since];
        let times: [&(dyn ToSql + Sync); 2] = [&start, &until];
        let keyed: &[&(dyn ToSql + Sync)] = if of_keys { &listed } else { &scope };
        let params: Vec<&(dyn ToSql + Sync)> = times.iter().chain(keyed).copied().collect();
        let work = async {
            let rows = self.client.query(statement.as_str(), &params).await?;
            let past = rows.iter().map(past_row).collect::<Result<Vec<_>, _>>()?;
            Ok(Recoveries::of_window(past, hour))
        };
        self.bounded(work).await
    }

    /// In the read's snapshot: the history of the standings this read
    /// lists, as the listing reads it for each ([`Recurrences::of`],
    /// [`Recurrences::acknowledged`]): their recoveries within `window`
    /// before `now` ([`StatusRead::recoveries`]) and the acknowledgements
    /// that hold ([`StatusRead::acknowledgements`]).
    ///
    /// # Errors
    /// [`PgError`] as those two.
    pub async fn recurrences(
        &mut self,
        now: Timestamp,
        window: Duration,
    ) -> Result<Recurrences, PgError> {
        let counted = self.recoveries(now, window).await?;
        let acks = self.acknowledgements(now).await?;
        Ok(Recurrences::new(counted, window).with_acknowledgements(acks))
    }

    /// In the read's snapshot: the acknowledgements that hold at `now` of
    /// the standings in scope, for [`mesh_status::report::Recurrences`]
    /// (`with_acknowledgements`).
    ///
    /// # Errors
    /// [`PgError`] when the store breaks off, does not answer in time, or
    /// holds a value this release cannot read.
    pub async fn acknowledgements(&mut self, now: Timestamp) -> Result<Vec<AckRow>, PgError> {
        let now = now.system_time();
        let params: [&(dyn ToSql + Sync); 4] =
            [&now, &self.providers, &self.machine, &self.consumer];
        let work = async {
            let rows = self.client.query(ACKNOWLEDGED, &params).await?;
            rows.iter().map(ack_row).collect::<Result<Vec<_>, _>>()
        };
        self.bounded(work).await
    }

    /// A statement of this read, bounded by [`STATEMENT_TIMEOUT`].
    async fn bounded<T>(
        &self,
        work: impl std::future::Future<Output = Result<T, ReadError>>,
    ) -> Result<T, PgError> {
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

/// A row of [`window_rows`].
fn past_row(row: &Row) -> Result<PastRow, ReadError> {
    let kind: TransitionKind = decoded(row, 5, "history.kind")?;
    let past = match kind {
        TransitionKind::Recovered => Past::Recovered {
            since: optional_time(row, 6)?,
        },
        TransitionKind::FailingBegan => Past::Began {
            class: optional_decoded(row, 7, "history.class")?,
        },
        TransitionKind::Note => Past::Noted(NoteRow {
            text: row.try_get(8)?,
            by: row.try_get::<_, Option<String>>(9)?.unwrap_or_default(),
        }),
        other => {
            return Err(ReadError::Undecodable {
                column: "history.kind",
                reason: format!("{other} is not a row of a recurrence"),
            })
        }
    };
    Ok(PastRow {
        provider: ModuleId::new(
            decoded::<Name>(row, 0, "history.provider_module")?,
            decoded::<Name>(row, 1, "history.provider_machine")?,
        ),
        consumer: decoded(row, 2, "history.consumer")?,
        at: time(row, 3)?,
        order: row.try_get(4)?,
        past,
    })
}

fn ack_row(row: &Row) -> Result<AckRow, ReadError> {
    Ok(AckRow {
        provider: ModuleId::new(
            decoded::<Name>(row, 0, "history.provider_module")?,
            decoded::<Name>(row, 1, "history.provider_machine")?,
        ),
        consumer: decoded(row, 2, "history.consumer")?,
        consumer_machine: decoded(row, 3, "history.consumer_machine")?,
        reason: row.try_get::<_, Option<String>>(4)?.unwrap_or_default(),
        by: row.try_get::<_, Option<String>>(5)?.unwrap_or_default(),
        at: time(row, 6)?,
        until: time(row, 7)?,
    })
}
