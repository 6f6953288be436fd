//! Reading what `status` and `node show` list, in one read-only snapshot:
//! first the counts the sentence needs, the open repair faults, what the
//! store says of the controller and the declared consumers retired, then the
//! standings streamed in order (provider module, provider machine, then
//! consumer, or class, error and consumer; byte order), so a caller can print the sentence at once and
//! each standing as it arrives. The listing is asked for only once the
//! counts came back: PostgreSQL sends nothing of a query until it has its
//! first row, and sorting 100,000 rows must not hold the sentence back.
//! A console page that shows at most some standings of each provider and
//! class reads those with the counts instead (a capped listing), and its
//! groups' counts with them. What history says of the standings listed
//! is read in the same snapshot ([`super::history_read`]).

use std::pin::Pin;
use std::time::SystemTime;

use futures::TryStreamExt;
use mesh_protocol::{Class, ModuleId};
use tokio_postgres::types::ToSql;
use tokio_postgres::{Client, Row, RowStream};

use super::connection::{classify, PgStore, STATEMENT_TIMEOUT};
use super::rows::{
    alive_row, decoded, failing_row, grant_row, grants_read_row, instance_row, optional_time,
    provider, repair_row, retired_row, time, ReadError, FAILING_PROVIDER,
};
use super::selected::{count_selected, list_capped, list_selected, Reach, BEGIN, INDEX_COSTS};
use super::PgError;
use mesh_status::model::{
    AliveRow, ControllerRecord, FailingRow, GrantRow, GrantsReadRow, RepairRow, RetiredRow,
};
use mesh_status::store::{FailingGroup, Order, StatusFilter};

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
       repeat_every_seconds, stored_at, fault_class, fault_error, fault_since, contributions
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

/// What the grant agent of each machine in scope (`$1`, null: all) last
/// said of its grants file (migration V19).
const GRANTS_READ: &str = "
SELECT machine, file, readable, problem, refused, more, said_at
FROM grants_read
WHERE $1::text IS NULL OR machine = $1
ORDER BY machine";

/// The store's clock and when its record begins (migration V8).
const RECORD: &str = "SELECT now(), (SELECT begun_at FROM store_record LIMIT 1), \
     (SELECT min(created) FROM stream_epoch)";

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
    /// The filter's consumer.
    pub(super) consumer: Option<String>,
    /// The listing: streamed once asked for, or read with the counts
    /// when capped per group.
    rows: Option<Listing>,
    /// The provider of the standing listed last: the listing is in provider
    /// order, so the next one is most often the same.
    last_provider: Option<ModuleId>,
    /// The open repair faults, in order.
    pub repairs: Vec<RepairRow>,
    /// The newest `alive` of each selected provider heard from, in order.
    pub alive: Vec<AliveRow>,
    /// The newest event of each grant in scope, in order.
    pub grants: Vec<GrantRow>,
    /// What the grant agent of each machine in scope last said of its
    /// grants file, in order.
    pub grants_read: Vec<GrantsReadRow>,
    /// What the store says of the controller and of its own record.
    pub record: ControllerRecord,
    /// The consumers the declaration requires that their provider last
    /// said it is retiring, retired or deleted, in order.
    pub retired: Vec<RetiredRow>,
    /// The order of the listing.
    order: Order,
    /// The standings selected, counted by provider and class, in cause order.
    pub groups: Vec<FailingGroup>,
}

/// The standings of a capped listing, as columns: their provider modules,
/// machines, consumers, and the first `since` of the interval each fails
/// in now.
#[derive(Debug, Default)]
pub(super) struct ListedKeys {
    pub(super) modules: Vec<String>,
    pub(super) machines: Vec<String>,
    pub(super) consumers: Vec<String>,
    pub(super) failing_since: Vec<SystemTime>,
}

/// The standings a read lists: a stream, or the rows of a capped listing.
enum Listing {
    Stream(Pin<Box<RowStream>>),
    Read(std::vec::IntoIter<Row>),
}

impl std::fmt::Debug for StatusRead {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StatusRead")
            .field("target", &self.target)
            .field("groups", &self.groups)
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
        let per_group = filter.per_group.map(i64::from);
        let work = async {
            let reach = Reach::of(filter.providers_chosen, filter.consumer.is_some());
            let count = match per_group {
                Some(_) => list_capped(reach),
                None => count_selected(reach),
            };
            let params: [&(dyn ToSql + Sync); 2] = [&providers, &filter.machine];
            let count_params: [&(dyn ToSql + Sync); 5] = [
                &providers,
                &filter.machine,
                &filter.consumer,
                &silent_before,
                &per_group,
            ];
            let count_params = match per_group {
                Some(_) => &count_params[..],
                None => &count_params[..4],
            };
            let required: [&(dyn ToSql + Sync); 3] = [&modules, &machines, &consumers];
            // Sent together, answered in order.
            let (begun, counted, repairs, alive, grants, grants_read, record, instances, retired) = tokio::join!(
                client.batch_execute(BEGIN),
                client.query(count.as_str(), count_params),
                client.query(OPEN_REPAIRS, &params),
                client.query(ALIVE, &params[..1]),
                client.query(GRANTS, &params),
                client.query(GRANTS_READ, &params[1..]),
                client.query_one(RECORD, &[]),
                client.query(INSTANCES, &[]),
                client.query(RETIRED, &required),
            );
            // In the order sent: the first error is the one to say (a
            // store not migrated fails the count; what follows it is
            // refused as "transaction aborted").
            begun?;
            let counted = counted?;
            let (repairs, alive, grants) = (repairs?, alive?, grants?);
            let grants_read = grants_read?
                .iter()
                .map(grants_read_row)
                .collect::<Result<_, _>>()?;
            let (record, instances, retired) = (record?, instances?, retired?);
            let (groups, listed) = match per_group {
                Some(_) => {
                    let groups = group_counts(&counted, (5, 11, 12))?;
                    (groups, Some(Listing::Read(counted.into_iter())))
                }
                None => (group_counts(&counted, (2, 3, 4))?, None),
            };
            let repairs = repairs.iter().map(repair_row).collect::<Result<_, _>>()?;
            let alive = alive.iter().map(alive_row).collect::<Result<_, _>>()?;
            let grants = grants.iter().map(grant_row).collect::<Result<_, _>>()?;
            let record = ControllerRecord {
                now: time(&record, 0)?,
                begun_at: optional_time(&record, 1)?,
                stream_since: optional_time(&record, 2)?,
                instances: instances
                    .iter()
                    .map(instance_row)
                    .collect::<Result<_, _>>()?,
            };
            let retired = retired.iter().map(retired_row).collect::<Result<_, _>>()?;
            let read = (
                groups,
                listed,
                repairs,
                alive,
                (grants, grants_read),
                record,
                retired,
            );
            Ok::<_, ReadError>(read)
        };
        match tokio::time::timeout(STATEMENT_TIMEOUT, work).await {
            Ok(Ok((groups, rows, repairs, alive, (grants, grants_read), record, retired))) => {
                Ok(StatusRead {
                    client,
                    target,
                    providers,
                    machine: filter.machine.clone(),
                    consumer: filter.consumer.clone(),
                    rows,
                    last_provider: None,
                    repairs,
                    alive,
                    grants,
                    grants_read,
                    record,
                    retired,
                    order: filter.order,
                    groups,
                })
            }
            Ok(Err(error)) => Err(error.into_store_error(target)),
            Err(_) => Err(PgError::Timeout {
                target,
                after: STATEMENT_TIMEOUT,
            }),
        }
    }
}

/// The groups of `rows` (each row names its provider in the first two
/// columns; `(class, count, silent)` are the other columns): one per
/// provider and class, rows of one group together. A capped listing's rows
/// each carry their group's counts after the listed columns; the count's
/// rows are the groups.
fn group_counts(
    rows: &[Row],
    (class, count, silent): (usize, usize, usize),
) -> Result<Vec<FailingGroup>, ReadError> {
    let mut groups: Vec<FailingGroup> = Vec::new();
    for row in rows {
        let provider = provider(row, FAILING_PROVIDER, groups.last().map(|g| &g.provider))?;
        let class: Class = decoded(row, class, "failing.class")?;
        if groups
            .last()
            .is_some_and(|g| g.provider == provider && g.class == class)
        {
            continue;
        }
        groups.push(FailingGroup {
            provider,
            class,
            standings: u64::try_from(row.try_get::<_, i64>(count)?).unwrap_or(0),
            silent: u64::try_from(row.try_get::<_, i64>(silent)?).unwrap_or(0),
        });
    }
    Ok(groups)
}

impl StatusRead {
    /// What the report's head is made of: the repairs and grants taken
    /// out of the read, the rest borrowed from it.
    pub fn facts(&mut self) -> mesh_status::report::Facts<'_> {
        mesh_status::report::Facts {
            failing: self.groups.clone(),
            repairs: std::mem::take(&mut self.repairs),
            alive: &self.alive,
            grants: mesh_status::report::grants(std::mem::take(&mut self.grants)),
            grants_read: &self.grants_read,
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
                    let params: [&(dyn ToSql + Sync); 3] =
                        [&self.providers, &self.machine, &self.consumer];
                    let statement = list_selected(self.order);
                    // Sent together: the setting is in force before the
                    // listing is planned (when it is bound, after its
                    // statement is prepared).
                    let (costed, rows) = tokio::join!(
                        self.client.batch_execute(INDEX_COSTS),
                        self.client.query_raw(statement.as_str(), params)
                    );
                    costed?;
                    self.rows.insert(Listing::Stream(Box::pin(rows?)))
                }
            };
            let next = match rows {
                Listing::Stream(rows) => rows.try_next().await?,
                Listing::Read(rows) => rows.next(),
            };
            match next {
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

    /// The keys of a capped listing's standings, read with the counts;
    /// `None` for a streamed listing, which lists every standing selected.
    pub(super) fn listed_keys(&self) -> Option<ListedKeys> {
        let Some(Listing::Read(rows)) = &self.rows else {
            return None;
        };
        let mut keys = ListedKeys::default();
        for row in rows.as_slice() {
            keys.modules.push(row.get(0));
            keys.machines.push(row.get(1));
            keys.consumers.push(row.get(2));
            let first: Option<SystemTime> = row.get(10);
            keys.failing_since.push(first.unwrap_or_else(|| row.get(7)));
        }
        Some(keys)
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
                store.connected = Some(super::connection::Connected::new(self.client));
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
