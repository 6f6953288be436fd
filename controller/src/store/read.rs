//! Reading what `status` and `node show` list, in one read-only snapshot:
//! first the counts the sentence needs, the open repair faults, what the
//! store says of the controller and the declared consumers retired, then the
//! standings streamed in order (provider module, provider machine, then
//! consumer, or class, error and consumer; byte order), so a caller can print the sentence at once and
//! each standing as it arrives. The listing is asked for only once the
//! counts came back: PostgreSQL sends nothing of a query until it has its
//! first row, and sorting 100,000 rows must not hold the sentence back.

use std::fmt::Display;
use std::pin::Pin;
use std::str::FromStr;
use std::time::{Duration, SystemTime};

use futures::TryStreamExt;
use mesh_protocol::event::ProviderFault;
use mesh_protocol::{ModuleId, Name, Timestamp};
use tokio_postgres::types::ToSql;
use tokio_postgres::{Client, Row, RowStream};

use super::connection::{classify, PgStore, STATEMENT_TIMEOUT};
use super::PgError;
use mesh_status::model::{
    AliveRow, ControllerRecord, FailingRow, GrantRow, Instance, InstanceRow, RepairRow, RetiredRow,
};
use mesh_status::store::{Counts, Order, StatusFilter};

/// The standings `$1` (providers) and `$2` (machine, or null) select. A
/// standing published before its provider's newest start is left out once
/// that provider is settled: from then on it has published `failing` again
/// for every consumer it still keeps failing, so an older event is one it
/// no longer has. "Before" is read on the stream's clock where both stored
/// times are kept (the start: the `alive`'s stored time less the run's age
/// when it said it), else on the provider's (or in the same second: times
/// are whole seconds, and a provider publishes `failing` only
/// `failing_after` after it started).
///
/// The provider key is written exactly as the statistics of migration V7
/// (`failing_provider`) are: with them the planner knows how many rows the
/// providers select, and plans the count (one core or two) and the listing
/// (the key's index or a sort) for the rows there are, not for a guess.
///
/// `mesh_status::model::AliveRow::outlived` is the same rule in Rust.
#[cfg(not(mesh_mutant = "no-settled-rule"))]
const SELECTED: &str = "
FROM failing f
WHERE f.provider_module || '@' || f.provider_machine = ANY($1::text[])
  AND ($2::text IS NULL OR f.provider_machine = $2 OR f.consumer_machine = $2)
  AND NOT EXISTS (
      SELECT 1 FROM alive a
      WHERE a.provider_module = f.provider_module AND a.provider_machine = f.provider_machine
        AND a.settled_at IS NOT NULL
        AND CASE WHEN f.stored_at IS NOT NULL AND a.stored_at IS NOT NULL
                 THEN f.stored_at < a.stored_at - (a.said_at - a.started_at)
                 ELSE f.said_at <= a.started_at END)";

/// The planted mutation `mesh_mutant="no-settled-rule"` (scripts/mutants): no standing is
/// left out at a provider's start.
#[cfg(mesh_mutant = "no-settled-rule")]
const SELECTED: &str = "
FROM failing f
WHERE f.provider_module || '@' || f.provider_machine = ANY($1::text[])
  AND ($2::text IS NULL OR f.provider_machine = $2 OR f.consumer_machine = $2)";

/// One snapshot for the counts and the listing. Within it, random page
/// reads are costed as what they are for a store that is in memory (the
/// default, 4, is for spinning disks): then PostgreSQL walks the primary
/// key's index for the whole listing, whose first row comes at once,
/// instead of sorting every row first; for a narrow `node show` it still
/// sorts the few rows it selects.
const BEGIN: &str = "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY; \
                     SET LOCAL random_page_cost = 1.1";

fn count_selected() -> String {
    format!("SELECT count(*), count(*) FILTER (WHERE f.said_at <= $3::timestamptz) {SELECTED}")
}

fn list_selected(order: Order) -> String {
    let order = match order {
        Order::Key => "f.provider_module, f.provider_machine, f.consumer",
        // Served by the index `failing_by_cause` (migration V8).
        Order::Cause => {
            "f.provider_module, f.provider_machine, f.class COLLATE \"C\", \
             f.error COLLATE \"C\", f.consumer"
        }
    };
    format!(
        "SELECT f.provider_module, f.provider_machine, f.consumer, f.consumer_machine,
                f.provision, f.class, f.error, f.since, f.attempts, f.said_at,
                CASE WHEN f.first_since < f.since THEN f.first_since END
         {SELECTED}
         ORDER BY {order}"
    )
}

/// The open repair faults (newest event not `repaired`) of the selected providers.
const OPEN_REPAIRS: &str = "
SELECT provider_module, provider_machine, fault, outcome, detail, next_attempt_at, said_at
FROM repair
WHERE outcome <> 'repaired'
  AND provider_module || '@' || provider_machine = ANY($1::text[])
  AND ($2::text IS NULL OR provider_machine = $2)
ORDER BY provider_module, provider_machine, fault";

/// The newest `alive` event of each selected provider.
const ALIVE: &str = "
SELECT provider_module, provider_machine, started_at, alive_every_seconds, settled_at, said_at,
       repeat_every_seconds, stored_at, fault_class, fault_error, fault_since
FROM alive
WHERE provider_module || '@' || provider_machine = ANY($1::text[])
ORDER BY provider_module, provider_machine";

/// The newest grant event of each grant whose consumer the declaration lists
/// on the machine that published it; for `node show MACHINE` only those on it or
/// whose provider is on it.
const GRANTS: &str = "
SELECT machine, consumer, provision, provider, kind, address, port, failures, failing_since,
       last_reachable_at, error, reason, said_at
FROM grant_event
WHERE consumer || '@' || machine = ANY($1::text[])
  AND ($2::text IS NULL OR machine = $2 OR split_part(provider, '@', 2) = $2)
ORDER BY machine, consumer, provision, provider";

/// The store's clock and when its record begins (migration V8).
const RECORD: &str = "SELECT now(), (SELECT begun_at FROM store_record LIMIT 1)";

/// The `serve` processes recorded, the one that caught up last first (a
/// few: whether any follows, and since when none did).
const INSTANCES: &str = "
SELECT host, pid, started_at, pull_wait_ms, pulled_at, applied_at, following_since
FROM controller_instance
ORDER BY pulled_at DESC NULLS LAST, seen_at DESC
LIMIT 16";

/// Of the consumers the declaration requires (`$1` provider modules, `$2`
/// their machines, `$3` the consumers), those whose provider's newest
/// retirement event (by stream order; `approved` is an intent and does not
/// count) is `retiring`, `retired` or `deleted`, unless a later event of that provider
/// says the consumer is served again: a `recovered` for a success (a
/// deleted consumer made anew), or a `failing` (it is attempted again, and
/// listed as failing).
const RETIRED: &str = "
WITH required (module, machine, consumer) AS (
    SELECT * FROM unnest($1::text[], $2::text[], $3::text[])
), newest AS (
    SELECT DISTINCT ON (t.provider_module, t.provider_machine, t.consumer)
           t.provider_module, t.provider_machine, t.consumer, t.action, t.detail, t.said_at,
           t.stream_epoch, t.stream_seq, t.retire_at
    FROM retirement t
    JOIN required d
      ON t.provider_module = d.module AND t.provider_machine = d.machine
     AND t.consumer = d.consumer
    WHERE t.action <> 'approved'
    ORDER BY t.provider_module, t.provider_machine, t.consumer,
             t.stream_epoch DESC, t.stream_seq DESC
)
SELECT n.provider_module, n.provider_machine, n.consumer, n.action, n.detail, n.said_at,
       n.retire_at
FROM newest n
WHERE n.action IN ('retiring', 'retired', 'deleted')
  AND NOT EXISTS (
      SELECT 1 FROM recovered r
      WHERE r.provider_module = n.provider_module AND r.provider_machine = n.provider_machine
        AND r.consumer = n.consumer
        AND r.reason IN ('success', 'first-success-after-start')
        AND (r.stream_epoch, r.stream_seq) > (n.stream_epoch, n.stream_seq))
  AND NOT EXISTS (
      SELECT 1 FROM failing f
      WHERE f.provider_module = n.provider_module AND f.provider_machine = n.provider_machine
        AND f.consumer = n.consumer
        AND (f.stream_epoch, f.stream_seq) > (n.stream_epoch, n.stream_seq))
ORDER BY n.provider_module COLLATE \"C\", n.provider_machine COLLATE \"C\",
         n.consumer COLLATE \"C\"";

/// A read in progress: its counts and repairs are here, its standings come
/// with [`StatusRead::next`]. It holds a read-only transaction on its own
/// connection; [`StatusRead::finish`] ends it.
pub struct StatusRead {
    pub(super) client: Client,
    pub(super) target: String,
    /// The filter's providers, as the statements take them.
    pub(super) providers: Vec<String>,
    /// The filter's machine.
    pub(super) machine: Option<String>,
    /// The listing, once asked for.
    rows: Option<Pin<Box<RowStream>>>,
    /// The provider of the standing listed last: the listing is in provider
    /// order, so the next one is most often the same.
    last_provider: Option<ModuleId>,
    /// What the sentence needs.
    pub counts: Counts,
    /// The open repair faults, in order.
    pub repairs: Vec<RepairRow>,
    /// The newest `alive` of each selected provider heard from, in order.
    pub alive: Vec<AliveRow>,
    /// The newest event of each grant in scope, in order.
    pub grants: Vec<GrantRow>,
    /// What the store says of the controller and of its own record.
    pub record: ControllerRecord,
    /// The consumers the declaration requires that their provider last
    /// said it is retiring, retired or deleted, in order.
    pub retired: Vec<RetiredRow>,
    /// The order of the listing.
    order: Order,
}

impl std::fmt::Debug for StatusRead {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StatusRead")
            .field("target", &self.target)
            .field("counts", &self.counts)
            .finish_non_exhaustive()
    }
}

impl PgStore {
    /// Starts reading what `filter` selects: the counts and the open
    /// repairs are read at once, the standings then stream in order. The
    /// read takes this store's connection (the next call makes another).
    ///
    /// # Errors
    /// [`PgError`] when the store is away, refuses, or does not answer
    /// within its bound.
    pub async fn read_status(&mut self, filter: &StatusFilter) -> Result<StatusRead, PgError> {
        self.connected().await?;
        let connected = self.connected.take().expect("connected above");
        let client = connected.client;
        let target = self.options.shown.clone();
        let silent_before: SystemTime = filter.silent_before.system_time();
        let providers = provider_texts(&filter.providers);
        let (modules, machines, consumers) = required_columns(&filter.required);
        let work = async {
            let count = count_selected();
            let params: [&(dyn ToSql + Sync); 2] = [&providers, &filter.machine];
            let count_params: [&(dyn ToSql + Sync); 3] =
                [&providers, &filter.machine, &silent_before];
            let required: [&(dyn ToSql + Sync); 3] = [&modules, &machines, &consumers];
            // Sent together, answered in order.
            let (begun, counts, repairs, alive, grants, record, instances, retired) = tokio::join!(
                client.batch_execute(BEGIN),
                client.query_one(count.as_str(), &count_params),
                client.query(OPEN_REPAIRS, &params),
                client.query(ALIVE, &params[..1]),
                client.query(GRANTS, &params),
                client.query_one(RECORD, &[]),
                client.query(INSTANCES, &[]),
                client.query(RETIRED, &required),
            );
            begun?;
            let (counts, repairs, alive, grants) = (counts?, repairs?, alive?, grants?);
            let (record, instances, retired) = (record?, instances?, retired?);
            let counts = Counts {
                standings: u64::try_from(counts.try_get::<_, i64>(0)?).unwrap_or(0),
                silent: u64::try_from(counts.try_get::<_, i64>(1)?).unwrap_or(0),
            };
            let repairs = repairs.iter().map(repair_row).collect::<Result<_, _>>()?;
            let alive = alive.iter().map(alive_row).collect::<Result<_, _>>()?;
            let grants = grants.iter().map(grant_row).collect::<Result<_, _>>()?;
            let record = ControllerRecord {
                now: time(&record, 0)?,
                begun_at: optional_time(&record, 1)?,
                instances: instances
                    .iter()
                    .map(instance_row)
                    .collect::<Result<_, _>>()?,
            };
            let retired = retired.iter().map(retired_row).collect::<Result<_, _>>()?;
            Ok::<_, ReadError>((counts, repairs, alive, grants, record, retired))
        };
        match tokio::time::timeout(STATEMENT_TIMEOUT, work).await {
            Ok(Ok((counts, repairs, alive, grants, record, retired))) => Ok(StatusRead {
                client,
                target,
                providers,
                machine: filter.machine.clone(),
                rows: None,
                last_provider: None,
                counts,
                repairs,
                alive,
                grants,
                record,
                retired,
                order: filter.order,
            }),
            Ok(Err(error)) => Err(error.into_store_error(target)),
            Err(_) => Err(PgError::Timeout {
                target,
                after: STATEMENT_TIMEOUT,
            }),
        }
    }
}

impl StatusRead {
    /// What the report's head is made of: the repairs and grants taken
    /// out of the read, the rest borrowed from it.
    pub(crate) fn facts(&mut self) -> mesh_status::report::Facts<'_> {
        mesh_status::report::Facts {
            counts: self.counts,
            repairs: std::mem::take(&mut self.repairs),
            alive: &self.alive,
            grants: mesh_status::report::grants(std::mem::take(&mut self.grants)),
            record: &self.record,
            retired: &self.retired,
        }
    }

    /// The next standing, or `None` after the last. Each wait is bounded
    /// (a slow reader of the output does not count against the store).
    ///
    /// # Errors
    /// [`PgError`] when the store breaks off or does not answer in time.
    pub async fn next(&mut self) -> Result<Option<FailingRow>, PgError> {
        let next = async {
            let rows = match &mut self.rows {
                Some(rows) => rows,
                None => {
                    let params: [&(dyn ToSql + Sync); 2] = [&self.providers, &self.machine];
                    let rows = self
                        .client
                        .query_raw(list_selected(self.order).as_str(), params)
                        .await?;
                    self.rows.insert(Box::pin(rows))
                }
            };
            match rows.try_next().await? {
                Some(row) => {
                    let provider = provider(&row, FAILING_PROVIDER, self.last_provider.as_ref())?;
                    self.last_provider = Some(provider.clone());
                    failing_row(&row, provider).map(Some)
                }
                None => Ok(None),
            }
        };
        match tokio::time::timeout(STATEMENT_TIMEOUT, next).await {
            Ok(Ok(row)) => Ok(row),
            Ok(Err(error)) => Err(error.into_store_error(self.target.clone())),
            Err(_) => Err(PgError::Timeout {
                target: self.target.clone(),
                after: STATEMENT_TIMEOUT,
            }),
        }
    }

    /// Ends the read-only transaction and gives its connection back to
    /// `store` for its next call (a reader that reads again and again, as
    /// the console's, keeps one connection).
    ///
    /// # Errors
    /// [`PgError`] when the store breaks off (the connection is dropped).
    pub async fn finish_into(self, store: &mut PgStore) -> Result<(), PgError> {
        let commit = self.client.batch_execute("COMMIT");
        match tokio::time::timeout(STATEMENT_TIMEOUT, commit).await {
            Ok(Ok(())) => {
                store.connected = Some(super::connection::Connected {
                    client: self.client,
                    statements: None,
                });
                Ok(())
            }
            Ok(Err(source)) => Err(classify(self.target, source)),
            Err(_) => Err(PgError::Timeout {
                target: self.target,
                after: STATEMENT_TIMEOUT,
            }),
        }
    }

    /// Ends the read-only transaction.
    ///
    /// # Errors
    /// [`PgError`] when the store breaks off.
    pub async fn finish(self) -> Result<(), PgError> {
        let commit = self.client.batch_execute("COMMIT");
        match tokio::time::timeout(STATEMENT_TIMEOUT, commit).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(source)) => Err(classify(self.target, source)),
            Err(_) => Err(PgError::Timeout {
                target: self.target,
                after: STATEMENT_TIMEOUT,
            }),
        }
    }
}

/// The statements' providers: `module@machine`.
fn provider_texts(providers: &[ModuleId]) -> Vec<String> {
    providers.iter().map(ToString::to_string).collect()
}

/// The required (provider, consumer) pairs as the statement's three columns.
fn required_columns(required: &[(ModuleId, String)]) -> (Vec<&str>, Vec<&str>, Vec<&str>) {
    let mut columns = (
        Vec::with_capacity(required.len()),
        Vec::with_capacity(required.len()),
        Vec::with_capacity(required.len()),
    );
    for (provider, consumer) in required {
        columns.0.push(provider.module.as_str());
        columns.1.push(provider.machine.as_str());
        columns.2.push(consumer.as_str());
    }
    columns
}

/// A read that failed: the store failed, or a value it holds does not
/// decode into its type.
#[derive(Debug)]
pub(super) enum ReadError {
    /// The store failed.
    Store(tokio_postgres::Error),
    /// The value of `column` does not decode.
    Undecodable {
        column: &'static str,
        reason: String,
    },
}

impl From<tokio_postgres::Error> for ReadError {
    fn from(error: tokio_postgres::Error) -> ReadError {
        ReadError::Store(error)
    }
}

impl ReadError {
    pub(super) fn into_store_error(self, target: String) -> PgError {
        match self {
            // A table this release reads is missing: the store is older.
            ReadError::Store(source)
                if source.code() == Some(&tokio_postgres::error::SqlState::UNDEFINED_TABLE) =>
            {
                PgError::NotMigrated { target, source }
            }
            ReadError::Store(source) => classify(target, source),
            ReadError::Undecodable { column, reason } => PgError::Undecodable {
                target,
                column,
                reason,
            },
        }
    }
}

/// Column `i` of `row` (named `column`, `table.column`), its text decoded.
pub(super) fn decoded<T>(row: &Row, i: usize, column: &'static str) -> Result<T, ReadError>
where
    T: FromStr,
    T::Err: Display,
{
    let text: &str = row.try_get(i)?;
    text.parse().map_err(|e: T::Err| ReadError::Undecodable {
        column,
        reason: e.to_string(),
    })
}

/// Where a table's provider is: the index of its module column (its machine
/// follows), and the two columns' names.
type ProviderColumns = (usize, [&'static str; 2]);

const FAILING_PROVIDER: ProviderColumns =
    (0, ["failing.provider_module", "failing.provider_machine"]);
const REPAIR_PROVIDER: ProviderColumns = (0, ["repair.provider_module", "repair.provider_machine"]);
const ALIVE_PROVIDER: ProviderColumns = (0, ["alive.provider_module", "alive.provider_machine"]);
const RETIRED_PROVIDER: ProviderColumns = (
    0,
    ["retirement.provider_module", "retirement.provider_machine"],
);

/// The provider of `row`: `last` again when its columns name it, else decoded.
fn provider(
    row: &Row,
    (i, [module, machine]): ProviderColumns,
    last: Option<&ModuleId>,
) -> Result<ModuleId, ReadError> {
    if let Some(last) = last {
        let (m, n): (&str, &str) = (row.try_get(i)?, row.try_get(i + 1)?);
        if last.module.as_str() == m && last.machine.as_str() == n {
            return Ok(last.clone());
        }
    }
    Ok(ModuleId::new(
        decoded::<Name>(row, i, module)?,
        decoded::<Name>(row, i + 1, machine)?,
    ))
}

pub(super) fn time(row: &Row, i: usize) -> Result<Timestamp, ReadError> {
    Ok(Timestamp::from_system(row.try_get::<_, SystemTime>(i)?))
}

pub(super) fn optional_time(row: &Row, i: usize) -> Result<Option<Timestamp>, ReadError> {
    Ok(row
        .try_get::<_, Option<SystemTime>>(i)?
        .map(Timestamp::from_system))
}

fn failing_row(row: &Row, provider: ModuleId) -> Result<FailingRow, ReadError> {
    Ok(FailingRow {
        provider,
        consumer: row.try_get(2)?,
        consumer_machine: row.try_get(3)?,
        provision: row.try_get(4)?,
        class: decoded(row, 5, "failing.class")?,
        error: row.try_get(6)?,
        since: time(row, 7)?,
        attempts: row.try_get(8)?,
        said_at: time(row, 9)?,
        first_since: optional_time(row, 10)?,
    })
}

fn repair_row(row: &Row) -> Result<RepairRow, ReadError> {
    Ok(RepairRow {
        provider: provider(row, REPAIR_PROVIDER, None)?,
        fault: row.try_get(2)?,
        outcome: decoded(row, 3, "repair.outcome")?,
        detail: row.try_get(4)?,
        next_attempt_at: optional_time(row, 5)?,
        said_at: time(row, 6)?,
        repaired: None,
    })
}

fn alive_row(row: &Row) -> Result<AliveRow, ReadError> {
    Ok(AliveRow {
        provider: provider(row, ALIVE_PROVIDER, None)?,
        started_at: time(row, 2)?,
        alive_every_seconds: row.try_get(3)?,
        settled_at: optional_time(row, 4)?,
        said_at: time(row, 5)?,
        repeat_every_seconds: row.try_get(6)?,
        stored_at: optional_time(row, 7)?,
        fault: match row.try_get::<_, Option<&str>>(8)? {
            None => None,
            Some(_) => Some(ProviderFault {
                class: decoded(row, 8, "alive.fault_class")?,
                error: row.try_get::<_, Option<String>>(9)?.unwrap_or_default(),
                since: optional_time(row, 10)?.unwrap_or(time(row, 5)?),
            }),
        },
    })
}

fn instance_row(row: &Row) -> Result<InstanceRow, ReadError> {
    let wait_ms: i64 = row.try_get(3)?;
    Ok(InstanceRow {
        instance: Instance {
            host: row.try_get(0)?,
            pid: row.try_get(1)?,
            started_at: time(row, 2)?,
            pull_wait: Duration::from_millis(u64::try_from(wait_ms).unwrap_or(0)),
        },
        pulled_at: optional_time(row, 4)?,
        applied_at: optional_time(row, 5)?,
        following_since: optional_time(row, 6)?,
    })
}

fn retired_row(row: &Row) -> Result<RetiredRow, ReadError> {
    Ok(RetiredRow {
        provider: provider(row, RETIRED_PROVIDER, None)?,
        consumer: row.try_get(2)?,
        action: decoded(row, 3, "retirement.action")?,
        detail: row.try_get(4)?,
        said_at: time(row, 5)?,
        retire_at: optional_time(row, 6)?,
    })
}

fn grant_row(row: &Row) -> Result<GrantRow, ReadError> {
    Ok(GrantRow {
        machine: row.try_get(0)?,
        consumer: row.try_get(1)?,
        provision: row.try_get(2)?,
        from: row.try_get(3)?,
        state: decoded(row, 4, "grant_event.kind")?,
        address: row.try_get(5)?,
        port: row.try_get(6)?,
        failures: row.try_get(7)?,
        failing_since: optional_time(row, 8)?,
        last_reachable_at: optional_time(row, 9)?,
        error: row.try_get(10)?,
        reason: row.try_get(11)?,
        said_at: time(row, 12)?,
    })
}
