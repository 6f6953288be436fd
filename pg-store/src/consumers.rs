//! Reading the consumer table (the console's `/consumers`): one statement
//! that counts every consumer a provider said something of (its newest
//! `failing`, `recovered` and retirement events) or the declaration
//! requires by state ([`mesh_status::model::consumers`] says the rules),
//! and returns one page of them.
//!
//! The lines are read in three parts, each from the table that decides
//! its state, so that neither the counts nor the page joins every table
//! with every other: the consumers set aside (retiring, retired, deleted:
//! from the retirement events, the fewest), the failing ones (the
//! standings but those set aside) and the ok ones (recovered, declared or
//! once retired, and neither failing nor set aside). A page walks the
//! failing standings in the primary key's order and stops when it is full;
//! the ok lines are read only when the page reaches them. At 100,000
//! failing consumers the first page took 170 ms in one statement that
//! joined the four and sorted them all, and takes 25 ms this way.

use std::sync::LazyLock;

use tokio_postgres::types::ToSql;
use tokio_postgres::Row;

use super::connection::{PgStore, STATEMENT_TIMEOUT};
use super::rows::{decoded, optional_decoded, optional_time, provider, ReadError};
use super::PgError;
use mesh_protocol::{Class, ModuleId, Name};
use mesh_status::model::consumers::{
    ConsumerLine, ConsumerQuery, ConsumerState, ConsumerTable, PAGE_LINES,
};

/// The key of a line: a provider and a consumer it serves.
const KEY: &str = "provider_module, provider_machine, consumer";

/// `a`'s key equals `b`'s, `b`'s columns compared in `collate` (empty:
/// their own). The standings' key columns are in the "C" collation and
/// the other tables' in the default one: a lookup from a standing into
/// another table compares in the default one, or that table's primary key
/// cannot serve it.
fn same(a: &str, b: &str, collate: &str) -> String {
    format!(
        "({a}.provider_module, {a}.provider_machine, {a}.consumer) \
         = ({b}.provider_module{collate}, {b}.provider_machine{collate}, {b}.consumer{collate})"
    )
}

/// The machine the declaration gives the consumer of `line` (one of them,
/// if it names the consumer on two: a line is a provider's consumer, and
/// a provider knows its consumers by name).
fn declared_machine(line: &str) -> String {
    format!(
        "(SELECT d.consumer_machine FROM declared d WHERE {} LIMIT 1)",
        same("d", line, "")
    )
}

/// `line`'s key is not one of the consumers set aside. (`NOT IN` is hashed
/// once; PostgreSQL misjudges how many are set aside and would compare
/// every standing with each of them.)
fn not_set_aside(line: &str) -> String {
    format!(
        "({line}.provider_module, {line}.provider_machine, {line}.consumer) \
         NOT IN (SELECT {KEY} FROM set_aside)"
    )
}

/// The declared requirements (`$1`-`$4`: provider module, provider
/// machine, consumer, consumer machine), and the consumers set aside: a
/// provider's newest retirement event of the consumer (approvals aside)
/// says retiring, retired or deleted, and no `failing`, nor a `recovered`
/// for a success, came after it. The rule of `status`'s retired consumers.
fn declared_and_set_aside() -> String {
    format!(
        "WITH declared (provider_module, provider_machine, consumer, consumer_machine) AS (
    SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[])
), set_aside AS MATERIALIZED (
    SELECT t.provider_module, t.provider_machine, t.consumer,
           COALESCE(f.consumer_machine, r.consumer_machine, {machine}) AS machine,
           t.action AS state, t.said_at AS since, f.class
    FROM (SELECT DISTINCT ON ({KEY}) {KEY}, action, said_at, stream_epoch, stream_seq
          FROM retirement
          WHERE action <> 'approved'
          ORDER BY {KEY}, stream_epoch DESC, stream_seq DESC) t
    LEFT JOIN failing f USING ({KEY})
    LEFT JOIN recovered r USING ({KEY})
    WHERE t.action IN ('retiring', 'retired', 'deleted')
      AND (f.stream_seq IS NULL
           OR (f.stream_epoch, f.stream_seq) < (t.stream_epoch, t.stream_seq))
      AND (r.stream_seq IS NULL
           OR r.reason NOT IN ('success', 'first-success-after-start')
           OR (r.stream_epoch, r.stream_seq) < (t.stream_epoch, t.stream_seq))
)",
        machine = declared_machine("t"),
    )
}

/// The failing lines: every standing but those set aside. Each part's
/// columns: the key, the consumer's machine (as the provider said it,
/// else as the declaration does), the state, since when, the class.
///
/// A query of one machine (`$7`) reads only the standings whose provider
/// said that machine, or said none (their line's machine is found
/// elsewhere, and [`SELECTS`] decides): the index on the consumer's
/// machine finds them. Without it a machine's page read every standing,
/// at 100,000 standings 64 ms for a provider's machine that has no
/// consumer, each time the page changed.
fn failing_lines() -> String {
    format!(
        "SELECT f.provider_module, f.provider_machine, f.consumer,
           COALESCE(f.consumer_machine,
                    (SELECT r.consumer_machine FROM recovered r WHERE {recovered}),
                    {machine}) AS machine,
           'failing' AS state, f.since, f.class
    FROM failing f
    WHERE {kept}
      AND ($7::text IS NULL OR f.consumer_machine = $7 OR f.consumer_machine IS NULL)",
        recovered = same("r", "f", " COLLATE \"default\""),
        machine = declared_machine("f"),
        kept = not_set_aside("f"),
    )
}

/// The set-aside lines.
const SET_ASIDE_LINES: &str = "SELECT * FROM set_aside";

/// The ok lines: a consumer recovered, declared or once retired, neither
/// failing nor set aside; since its recovery.
fn ok_lines() -> String {
    format!(
        "SELECT k.provider_module, k.provider_machine, k.consumer, k.machine, 'ok' AS state,
           k.since, NULL::text AS class
    FROM (
        SELECT r.provider_module, r.provider_machine, r.consumer,
               COALESCE(r.consumer_machine, {machine}) AS machine, r.said_at AS since
        FROM recovered r
        UNION ALL
        SELECT DISTINCT ON ({KEY}) {KEY}, consumer_machine, NULL
        FROM declared d
        WHERE NOT EXISTS (SELECT 1 FROM recovered r WHERE {declared_recovered})
        UNION ALL
        SELECT DISTINCT {KEY}, NULL, NULL::timestamptz
        FROM retirement t
        WHERE action <> 'approved'
          AND NOT EXISTS (SELECT 1 FROM recovered r WHERE {retired_recovered})
          AND NOT EXISTS (SELECT 1 FROM declared d WHERE {retired_declared})
    ) k
    WHERE NOT EXISTS (SELECT 1 FROM failing f WHERE {failing})
      AND {kept}",
        machine = declared_machine("r"),
        declared_recovered = same("r", "d", ""),
        retired_recovered = same("r", "t", ""),
        retired_declared = same("d", "t", ""),
        failing = same("f", "k", ""),
        kept = not_set_aside("k"),
    )
}

/// What the query's fields select of a line `l` but its state: `$5`-`$9`,
/// its provider (module, machine), machine, class and name.
const SELECTS: &str = "($5::text IS NULL OR (l.provider_module = $5 AND l.provider_machine = $6))
      AND ($7::text IS NULL OR l.machine = $7)
      AND ($8::text IS NULL OR l.class = $8)
      AND ($9::text IS NULL OR strpos(l.consumer, $9) > 0)";

/// The table's order within a state.
const KEY_ORDER: &str =
    "l.provider_module COLLATE \"C\", l.provider_machine COLLATE \"C\", l.consumer COLLATE \"C\"";

/// The table's order of states: the worst first.
const RANK: &str = "CASE l.state WHEN 'failing' THEN 0 WHEN 'retiring' THEN 1 \
                    WHEN 'retired' THEN 2 WHEN 'deleted' THEN 3 ELSE 4 END";

/// `part`'s lines the query selects, counted by state.
fn counted(part: &str) -> String {
    format!("SELECT l.state, count(*) AS n FROM ({part}) l WHERE {SELECTS} GROUP BY l.state")
}

/// The first `$11` + `$12` lines of `part` the query selects in state
/// `$10` (or any), in the table's order, with their rank; `also`, a
/// further condition.
fn paged(part: &str, also: &str) -> String {
    format!(
        "(SELECT {RANK} AS rank, l.* FROM ({part}) l
     WHERE {SELECTS} AND ($10::text IS NULL OR l.state = $10){also}
     ORDER BY rank, {KEY_ORDER} LIMIT $11::int8 + $12::int8)"
    )
}

/// The ok lines are read only when the lines before them (of state `$10`,
/// or any) do not fill the page.
const OK_REACHED: &str = "
       AND (SELECT COALESCE(sum(c.n), 0) FROM counted c
            WHERE c.state <> 'ok' AND ($10::text IS NULL OR c.state = $10)) < $11::int8 + $12::int8";

/// `$1`-`$4`: the declared requirements (provider module, provider
/// machine, consumer, consumer machine); `$5`-`$9`: the query's provider
/// (module, machine), machine, class and name; `$10` its state; `$11` and
/// `$12` the page's limit and offset. Part 0 rows are the counts by state
/// (`state`, `n`), part 1 rows the page's lines.
static CONSUMERS: LazyLock<String> = LazyLock::new(|| {
    let (failing, ok) = (failing_lines(), ok_lines());
    format!(
        "{head}, counted AS MATERIALIZED (
    {counted_failing}
    UNION ALL {counted_set_aside}
    UNION ALL {counted_ok}
)
SELECT 0 AS part, c.state, c.n, NULL, NULL, NULL, NULL, NULL::timestamptz, NULL, false
FROM counted c
UNION ALL
(SELECT 1, l.state, 0, l.provider_module, l.provider_machine, l.consumer, l.machine, l.since,
        l.class, EXISTS (SELECT 1 FROM declared d WHERE {declared})
 FROM ({paged_failing} UNION ALL {paged_set_aside} UNION ALL {paged_ok}) l
 ORDER BY l.rank, {KEY_ORDER}
 LIMIT $11 OFFSET $12)",
        head = declared_and_set_aside(),
        counted_failing = counted(&failing),
        counted_set_aside = counted(SET_ASIDE_LINES),
        counted_ok = counted(&ok),
        declared = same("d", "l", ""),
        paged_failing = paged(&failing, ""),
        paged_set_aside = paged(SET_ASIDE_LINES, ""),
        paged_ok = paged(&ok, OK_REACHED),
    )
});

/// Where the statement runs: its own read-only transaction, nothing
/// compiled to machine code (JIT). PostgreSQL's cost of the statement,
/// which counts every standing, passes the threshold of compiling, and
/// compiling took 1.5 s where the statement runs in 25 ms.
const BEGIN: &str = "BEGIN READ ONLY; SET LOCAL jit = off";

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
            // Sent together, answered in order. (The statement is sent
            // once it is prepared, a round trip later: a `COMMIT` sent with
            // them would come before it.)
            let (begun, rows) = tokio::join!(
                client.batch_execute(BEGIN),
                client.query(CONSUMERS.as_str(), &params),
            );
            begun?;
            let rows = rows?;
            client.batch_execute("COMMIT").await?;
            table(&rows)
        };
        let result = match tokio::time::timeout(STATEMENT_TIMEOUT, work).await {
            Ok(Ok(table)) => return Ok(table),
            Ok(Err(error)) => error.into_store_error(target),
            Err(_) => PgError::Timeout {
                target,
                after: STATEMENT_TIMEOUT,
            },
        };
        // Cut off inside its transaction, or failed: the next read
        // connects again.
        self.connected = None;
        Err(result)
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
