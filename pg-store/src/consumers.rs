//! Reading the consumer table (the console's `/consumers`): one statement,
//! its own snapshot, that joins every consumer a provider said something
//! of (its newest `failing`, `recovered` and retirement events) with the
//! consumers the declaration requires, decides each line's state
//! ([`mesh_status::model::consumers`] says the rules), counts the lines by
//! state and returns one page of them.

use tokio_postgres::types::ToSql;
use tokio_postgres::Row;

use super::connection::{PgStore, STATEMENT_TIMEOUT};
use super::rows::{decoded, optional_decoded, optional_time, provider, ReadError};
use super::PgError;
use mesh_protocol::{Class, ModuleId, Name};
use mesh_status::model::consumers::{
    ConsumerLine, ConsumerQuery, ConsumerState, ConsumerTable, PAGE_LINES,
};

/// `$1`-`$4`: the declared requirements (provider module, provider
/// machine, consumer, consumer machine); `$5`-`$9`: the query's provider
/// (module, machine), machine, class and name; `$10` its state; `$11` and
/// `$12` the page's limit and offset. Part 0 rows are the counts by state
/// (`state`, `n`), part 1 rows the page's lines.
///
/// A retirement event counts when it is the provider's newest of the
/// consumer (approvals aside) and no `failing`, nor a `recovered` for a
/// success, came after it: the rule of `status`'s retired consumers.
const CONSUMERS: &str = "
WITH declared (provider_module, provider_machine, consumer, consumer_machine) AS (
    SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[])
), retired AS (
    SELECT DISTINCT ON (provider_module, provider_machine, consumer)
           provider_module, provider_machine, consumer, action, said_at, stream_epoch, stream_seq
    FROM retirement
    WHERE action <> 'approved'
    ORDER BY provider_module, provider_machine, consumer, stream_epoch DESC, stream_seq DESC
), line AS MATERIALIZED (
    SELECT provider_module, provider_machine, consumer,
           COALESCE(f.consumer_machine, r.consumer_machine, d.consumer_machine) AS machine,
           CASE WHEN t.action IN ('retiring', 'retired', 'deleted')
                 AND (f.stream_seq IS NULL
                      OR (f.stream_epoch, f.stream_seq) < (t.stream_epoch, t.stream_seq))
                 AND (r.stream_seq IS NULL
                      OR r.reason NOT IN ('success', 'first-success-after-start')
                      OR (r.stream_epoch, r.stream_seq) < (t.stream_epoch, t.stream_seq))
                THEN t.action
                WHEN f.stream_seq IS NOT NULL THEN 'failing'
                ELSE 'ok' END AS state,
           f.since AS failing_since, f.class, t.said_at AS retired_at, r.said_at AS recovered_at,
           d.consumer_machine IS NOT NULL AS declared
    FROM failing f
    FULL JOIN recovered r USING (provider_module, provider_machine, consumer)
    FULL JOIN declared d USING (provider_module, provider_machine, consumer)
    FULL JOIN retired t USING (provider_module, provider_machine, consumer)
    WHERE ($5::text IS NULL OR (provider_module = $5 AND provider_machine = $6))
      AND ($7::text IS NULL
           OR COALESCE(f.consumer_machine, r.consumer_machine, d.consumer_machine) = $7)
      AND ($8::text IS NULL OR f.class = $8)
      AND ($9::text IS NULL OR strpos(consumer, $9) > 0)
)
SELECT 0 AS part, state, count(*) AS n, NULL, NULL, NULL, NULL, NULL::timestamptz, NULL, false
FROM line GROUP BY state
UNION ALL
(SELECT 1, state, 0, provider_module, provider_machine, consumer, machine,
        CASE state WHEN 'failing' THEN failing_since
                   WHEN 'ok' THEN recovered_at
                   ELSE retired_at END,
        class, declared
 FROM line
 WHERE $10::text IS NULL OR state = $10
 ORDER BY CASE state WHEN 'failing' THEN 0 WHEN 'retiring' THEN 1 WHEN 'retired' THEN 2
                     WHEN 'deleted' THEN 3 ELSE 4 END,
          provider_module COLLATE \"C\", provider_machine COLLATE \"C\",
          consumer COLLATE \"C\", machine COLLATE \"C\"
 LIMIT $11 OFFSET $12)";

/// Where a line's provider is.
const LINE_PROVIDER: super::rows::ProviderColumns =
    (3, ["failing.provider_module", "failing.provider_machine"]);

impl PgStore {
    /// The page of the consumer table `query` asks for, and the counts by
    /// state of every line its other fields select; `declared` is what the
    /// declaration requires: each (provider, consumer) with the consumer's
    /// machine.
    ///
    /// # Errors
    /// [`PgError`] when the store is away, refuses, does not answer in
    /// time, is not migrated to this release, or holds a value this release
    /// cannot read.
    pub async fn read_consumers(
        &mut self,
        query: &ConsumerQuery,
        declared: &[(ModuleId, ModuleId)],
    ) -> Result<ConsumerTable, PgError> {
        let target = self.options.shown.clone();
        let client = &self.connected().await?.client;
        let column = |f: fn(&(ModuleId, ModuleId)) -> &Name| -> Vec<&str> {
            declared.iter().map(|d| f(d).as_str()).collect()
        };
        let (modules, machines, consumers, consumer_machines) = (
            column(|d| &d.0.module),
            column(|d| &d.0.machine),
            column(|d| &d.1.module),
            column(|d| &d.1.machine),
        );
        let module = query.provider.as_ref().map(|p| p.module.as_str());
        let machine = query.provider.as_ref().map(|p| p.machine.as_str());
        let on = query.machine.as_ref().map(Name::as_str);
        let class = query.class.map(Class::as_str);
        let name = query.name.as_deref();
        let state = query.state.map(ConsumerState::as_str);
        let limit = i64::from(PAGE_LINES);
        let offset = i64::try_from(query.offset()).unwrap_or(i64::MAX);
        let params: [&(dyn ToSql + Sync); 12] = [
            &modules,
            &machines,
            &consumers,
            &consumer_machines,
            &module,
            &machine,
            &on,
            &class,
            &name,
            &state,
            &limit,
            &offset,
        ];
        let work = async {
            let rows = client.query(CONSUMERS, &params).await?;
            table(&rows)
        };
        match tokio::time::timeout(STATEMENT_TIMEOUT, work).await {
            Ok(Ok(table)) => Ok(table),
            Ok(Err(error)) => Err(error.into_store_error(target)),
            Err(_) => Err(PgError::Timeout {
                target,
                after: STATEMENT_TIMEOUT,
            }),
        }
    }
}

/// The statement's rows as a table: the counts (every state, 0 where none),
/// then the lines in the order they came.
fn table(rows: &[Row]) -> Result<ConsumerTable, ReadError> {
    let mut counts: Vec<(ConsumerState, u64)> =
        ConsumerState::ALL.iter().map(|s| (*s, 0)).collect();
    let mut lines = Vec::new();
    let mut last: Option<ModuleId> = None;
    for row in rows {
        let part: i32 = row.try_get(0)?;
        let state: ConsumerState = decoded(row, 1, "consumer state")?;
        if part == 0 {
            let n: i64 = row.try_get(2)?;
            if let Some(slot) = counts.iter_mut().find(|(s, _)| *s == state) {
                slot.1 = u64::try_from(n).unwrap_or(0);
            }
            continue;
        }
        let provider = provider(row, LINE_PROVIDER, last.as_ref())?;
        last = Some(provider.clone());
        lines.push(ConsumerLine {
            provider,
            consumer: decoded(row, 5, "failing.consumer")?,
            machine: optional_decoded(row, 6, "failing.consumer_machine")?,
            state,
            since: optional_time(row, 7)?,
            class: optional_decoded(row, 8, "failing.class")?,
            declared: row.try_get(9)?,
        });
    }
    Ok(ConsumerTable { counts, lines })
}
