//! What `serve` says of itself in the store (table `controller_instance`,
//! migration V8): per process, when it last found nothing more waiting for
//! it in the event stream and when it last committed a round, on the
//! store's clock. `status` reads it ([`super::read`]) to tell a controller
//! that follows nothing from providers that say nothing. A catch-up that
//! ends a time no instance caught up (longer than its follow bound) is
//! kept in history as the controller following again, with since when.

use std::time::{Duration, SystemTime};

use mesh_protocol::Timestamp;
use tokio_postgres::types::ToSql;

use super::connection::PgStore;
use super::history::{HistoryColumns, INSERT_HISTORY};
use super::locks::LOCK_CLASS;
use super::PgError;
use mesh_status::model::history::following_again;
use mesh_status::store::ControllerRecordUpdate;

/// Writes the instance's row: made the first time, then `pulled_at`
/// (`$6`: caught up now) and `applied_at` (`$7`: a round committed since
/// the last record) set to the store's `now()` when so, `seen_at` always.
/// A catch-up more than `$8` seconds (its follow bound) after the one
/// before begins a new run (`following_since`).
const RECORD: &str = "
INSERT INTO controller_instance AS c
    (instance, host, pid, started_at, pull_wait_ms, pulled_at, applied_at, following_since,
     seen_at)
VALUES ($1, $2, $3, $4, $5, CASE WHEN $6 THEN now() END, CASE WHEN $7 THEN now() END,
        CASE WHEN $6 THEN now() END, now())
ON CONFLICT (instance) DO UPDATE SET
    pulled_at = COALESCE(EXCLUDED.pulled_at, c.pulled_at),
    applied_at = COALESCE(EXCLUDED.applied_at, c.applied_at),
    following_since = CASE
        WHEN EXCLUDED.pulled_at IS NULL THEN c.following_since
        WHEN c.pulled_at IS NULL OR c.following_since IS NULL
          OR c.pulled_at < EXCLUDED.pulled_at - make_interval(secs => $8) THEN EXCLUDED.pulled_at
        ELSE c.following_since
    END,
    seen_at = EXCLUDED.seen_at";

/// Sets when the store's record begins (`$1`: the durable consumer
/// acknowledged events before) while the store has met no stream; one that
/// has keeps its record. All sub-statements see the table before the
/// epoch is registered.
const BEGIN: &str = "
UPDATE store_record SET begun_at = CASE WHEN $1 THEN now() END
WHERE NOT EXISTS (SELECT 1 FROM stream_epoch)
RETURNING begun_at";

/// Removes the rows of instances not seen for [`FORGET_AFTER_DAYS`] days,
/// but never the one that pulled last (status says since when nothing was
/// followed, however long ago).
const PRUNE: &str = "
DELETE FROM controller_instance
WHERE seen_at < now() - make_interval(days => $1)
  AND pulled_at IS DISTINCT FROM (SELECT max(pulled_at) FROM controller_instance)";

/// The latest catch-up of any instance, and the store's clock (in the
/// transaction that records this one's).
const LAST_CAUGHT_UP: &str = "SELECT max(pulled_at), now() FROM controller_instance";

/// Serializes the records that catch up, so two instances coming back at
/// once record the controller following again once (a lock of the
/// rounds' class outside their buckets).
const CATCH_UP_LOCK: &str = "SELECT pg_advisory_xact_lock($1::int4, -1)";

/// Instances not seen for this many days are forgotten (when a `serve`
/// starts), except the one that pulled last.
pub(crate) const FORGET_AFTER_DAYS: i32 = 7;

/// How long recording may take before the store counts as away (the link
/// does not wait longer on it: the next record tries again).
pub(crate) const RECORD_TIMEOUT: Duration = Duration::from_secs(5);

impl PgStore {
    /// Says when the store's record begins, while it has met no stream:
    /// now when the durable consumer `acknowledged_before` events (a store
    /// that was there took them), else never (see [`Store::record_begins`](mesh_status::Store::record_begins)).
    /// Returns when the record began, when it began now (the store is new).
    ///
    /// # Errors
    /// [`PgError`] when the store is away, refuses, or does not answer
    /// within `RECORD_TIMEOUT`.
    pub async fn begin_record(
        &mut self,
        acknowledged_before: bool,
    ) -> Result<Option<SystemTime>, PgError> {
        let client = &self.connected().await?.client;
        let params: [&(dyn ToSql + Sync); 1] = [&acknowledged_before];
        let outcome = tokio::time::timeout(RECORD_TIMEOUT, client.query_opt(BEGIN, &params)).await;
        let row = self.settle(outcome, RECORD_TIMEOUT)?;
        Ok(row.and_then(|row| row.get::<_, Option<SystemTime>>(0)))
    }

    /// Records that `update.instance` runs: caught up now (`caught_up`: it
    /// found nothing more waiting for it, every event it took stored), and
    /// whether it committed a round since it last recorded (`applied`). The
    /// first record of a process (`first`) also forgets instances gone for
    /// long.
    ///
    /// # Errors
    /// [`PgError`] when the store is away, refuses, or does not answer
    /// within `RECORD_TIMEOUT`.
    pub async fn record_instance(
        &mut self,
        update: ControllerRecordUpdate<'_>,
    ) -> Result<(), PgError> {
        let ControllerRecordUpdate {
            instance,
            caught_up,
            applied,
            first,
        } = update;
        let client = &self.connected().await?.client;
        let key = instance.key();
        let started_at = instance.started_at.system_time();
        let wait_ms = i64::try_from(instance.pull_wait.as_millis()).unwrap_or(i64::MAX);
        let bound = instance.follow_bound().as_secs_f64();
        let params: [&(dyn ToSql + Sync); 8] = [
            &key,
            &instance.host,
            &instance.pid,
            &started_at,
            &wait_ms,
            &caught_up,
            &applied,
            &bound,
        ];
        let work = async {
            if first {
                client.execute(PRUNE, &[&FORGET_AFTER_DAYS]).await?;
            }
            if !caught_up {
                return client.execute(RECORD, &params).await.map(drop);
            }
            // A catch-up after none for longer than the follow bound ends
            // a time the controller followed nothing: history keeps it.
            client.batch_execute("BEGIN").await?;
            let recorded = async {
                client.execute(CATCH_UP_LOCK, &[&LOCK_CLASS]).await?;
                let row = client.query_one(LAST_CAUGHT_UP, &[]).await?;
                let last: Option<SystemTime> = row.try_get(0)?;
                let now: SystemTime = row.try_get(1)?;
                let again = following_again(
                    last.map(Timestamp::from_system),
                    Timestamp::from_system(now),
                    instance.follow_bound(),
                );
                if let Some(again) = again {
                    let columns = HistoryColumns::of(&[again]);
                    client.execute(&*INSERT_HISTORY, &columns.params()).await?;
                }
                client.execute(RECORD, &params).await?;
                client.batch_execute("COMMIT").await
            };
            match recorded.await {
                Ok(()) => Ok(()),
                Err(error) => {
                    let _ = client.batch_execute("ROLLBACK").await;
                    Err(error)
                }
            }
        };
        let outcome = tokio::time::timeout(RECORD_TIMEOUT, work).await;
        self.settle(outcome, RECORD_TIMEOUT).map(drop)
    }
}
