//! The consumer table's read (`PgStore::read_consumers`) against its rules
//! written plainly: one statement that joins every standing, recovery,
//! declared requirement and newest retirement event of each consumer, and
//! decides each line's state. The store reads the table in parts so that a
//! page does not join and sort every line; over a store that holds every
//! case the rules tell apart, the two agree on every query.

use mesh_pg_store::{migrate, PgStore};
use mesh_protocol::{Class, ModuleId, Name, Timestamp};
use mesh_status::model::consumers::{ConsumerQuery, ConsumerState, PAGE_LINES};
use mesh_test_support::PgCluster;

use super::common::store_at;

/// The rules of a line's state, as one statement over `$1`, the query as
/// JSON (`declared`: the requirements as `[provider module, provider
/// machine, consumer, consumer machine]`; `module`, `machine`: its
/// provider; `on`: its machine; `class`, `name`, `state`; `limit` and
/// `offset`: the page's): the counts by state (part 0), then the page
/// (part 1).
const PLAIN: &str = "
WITH declared (provider_module, provider_machine, consumer, consumer_machine) AS (
    SELECT d->>0, d->>1, d->>2, d->>3 FROM jsonb_array_elements($1::jsonb->'declared') d
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
    WHERE ($1::jsonb->>'module' IS NULL
           OR (provider_module = $1::jsonb->>'module' AND provider_machine = $1::jsonb->>'machine'))
      AND ($1::jsonb->>'on' IS NULL
           OR COALESCE(f.consumer_machine, r.consumer_machine, d.consumer_machine) = $1::jsonb->>'on')
      AND ($1::jsonb->>'class' IS NULL OR f.class = $1::jsonb->>'class')
      AND ($1::jsonb->>'name' IS NULL OR strpos(consumer, $1::jsonb->>'name') > 0)
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
 WHERE $1::jsonb->>'state' IS NULL OR state = $1::jsonb->>'state'
 ORDER BY CASE state WHEN 'failing' THEN 0 WHEN 'retiring' THEN 1 WHEN 'retired' THEN 2
                     WHEN 'deleted' THEN 3 ELSE 4 END,
          provider_module COLLATE \"C\", provider_machine COLLATE \"C\",
          consumer COLLATE \"C\"
 LIMIT ($1::jsonb->>'limit')::int8 OFFSET ($1::jsonb->>'offset')::int8)";

/// Two providers' consumers `c0`..`c259`, in every case the rules tell
/// apart: failing (its machine said or not), recovered for a success or
/// not, both, neither; retirement events of each action, newer or older
/// than the standing and the recovery, one or several a consumer; and
/// consumers only the declaration names.
const FILL: &str = "
INSERT INTO failing (provider_module, provider_machine, consumer, consumer_machine, provision,
                     class, error, since, attempts, said_at, stream_seq, stream_epoch)
SELECT 'p' || (i % 2), 'db-' || (i % 2), 'c' || i,
       CASE WHEN i % 13 = 0 THEN NULL ELSE 'app-' || (i % 3) END, 'postgres-database',
       CASE WHEN i % 4 = 0 THEN 'refused' ELSE 'credentials-rejected' END, 'no',
       '2026-10-05T00:00:00Z'::timestamptz + i * interval '1 minute', 3,
       '2026-10-05T01:00:00Z', 1000 + i, 1
FROM generate_series(0, 139) AS i;
INSERT INTO recovered (provider_module, provider_machine, consumer, consumer_machine, provision,
                       reason, said_at, stream_seq, stream_epoch)
SELECT 'p' || (i % 2), 'db-' || (i % 2), 'c' || i,
       CASE WHEN i % 11 = 0 THEN NULL ELSE 'app-' || (i % 3) END, 'postgres-database',
       (ARRAY['success', 'first-success-after-start', 'retired', 'withdrawn'])[1 + i % 4],
       '2026-10-05T02:00:00Z'::timestamptz + i * interval '1 minute',
       CASE WHEN i % 3 = 0 THEN 500 + i ELSE 2000 + i END, 1
FROM generate_series(100, 219) AS i;
INSERT INTO retirement (provider_module, provider_machine, consumer, action, detail, said_at,
                        stream_seq, stream_epoch)
SELECT 'p' || (i % 2), 'db-' || (i % 2), 'c' || i,
       (ARRAY['retiring', 'cancelled', 'retired', 'approved', 're-enabled', 'deleted'])[1 + i % 6],
       'withdrawn', '2026-10-05T03:00:00Z'::timestamptz + i * interval '1 minute',
       CASE WHEN i % 5 = 0 THEN 100 + i ELSE 1500 + i END, 1
FROM generate_series(80, 239) AS i;
INSERT INTO retirement (provider_module, provider_machine, consumer, action, detail, said_at,
                        stream_seq, stream_epoch)
SELECT 'p' || (i % 2), 'db-' || (i % 2), 'c' || i,
       (ARRAY['retired', 'deleted', 'cancelled', 'retiring'])[1 + i % 4],
       'again', '2026-10-05T04:00:00Z', CASE WHEN i % 2 = 0 THEN 3000 + i ELSE 50 END, 1
FROM generate_series(90, 239, 3) AS i
ON CONFLICT DO NOTHING;
ANALYZE";

fn id(text: &str) -> ModuleId {
    ModuleId::parse(text).unwrap()
}

/// A line as both reads say it.
type Line = (
    ConsumerState,
    String,
    String,
    Option<String>,
    Option<Timestamp>,
    Option<Class>,
    bool,
);

/// What the plain statement says of `query`: the counts by state, then
/// the page's lines.
async fn plain(
    admin: &tokio_postgres::Client,
    query: &ConsumerQuery,
    declared: &[(ModuleId, ModuleId)],
) -> (Vec<(ConsumerState, u64)>, Vec<Line>) {
    let declared: Vec<[String; 4]> = declared
        .iter()
        .map(|(p, c)| [&p.module, &p.machine, &c.module, &c.machine].map(ToString::to_string))
        .collect();
    let asked = serde_json::json!({
        "declared": declared,
        "module": query.provider.as_ref().map(|p| p.module.to_string()),
        "machine": query.provider.as_ref().map(|p| p.machine.to_string()),
        "on": query.machine.as_ref().map(Name::to_string),
        "class": query.class.map(Class::as_str),
        "name": query.name,
        "state": query.state.map(ConsumerState::as_str),
        "limit": PAGE_LINES,
        "offset": query.offset(),
    });
    let rows = admin.query(PLAIN, &[&asked]).await.unwrap();
    let mut counts: Vec<(ConsumerState, u64)> =
        ConsumerState::ALL.iter().map(|s| (*s, 0)).collect();
    let mut lines = Vec::new();
    for row in rows {
        let state = row.get::<_, &str>(1).parse::<ConsumerState>().unwrap();
        if row.get::<_, i32>(0) == 0 {
            let slot = counts.iter_mut().find(|(s, _)| *s == state).unwrap();
            slot.1 = u64::try_from(row.get::<_, i64>(2)).unwrap();
            continue;
        }
        let since: Option<std::time::SystemTime> = row.get(7);
        lines.push((
            state,
            format!("{}@{}", row.get::<_, &str>(3), row.get::<_, &str>(4)),
            row.get::<_, String>(5),
            row.get::<_, Option<String>>(6),
            since.map(Timestamp::from_system),
            row.get::<_, Option<&str>>(8)
                .map(|c| c.parse::<Class>().unwrap()),
            row.get(9),
        ));
    }
    (counts, lines)
}

#[tokio::test]
async fn the_consumer_table_read_in_parts_agrees_with_its_rules_on_every_query() {
    let pg = PgCluster::start();
    let (options, admin) = store_at(&pg, "consumer_table").await;
    migrate(&options).await.unwrap();
    admin.batch_execute(FILL).await.unwrap();
    let mut store = PgStore::new(options);

    // Required: some consumers that have standings, recoveries or
    // retirements, and some that have none (c240..c259).
    let declared: Vec<(ModuleId, ModuleId)> = (0..260)
        .filter(|i| i % 7 == 0 || *i >= 240)
        .map(|i| {
            (
                id(&format!("p{}@db-{}", i % 2, i % 2)),
                id(&format!("c{i}@app-{}", i % 3)),
            )
        })
        .collect();

    let everything = store
        .read_consumers(&ConsumerQuery::default(), &declared)
        .await
        .unwrap();
    for (state, n) in &everything.counts {
        assert!(*n > 0, "the store holds no {state:?} line: {everything:?}");
    }

    let mut queries = Vec::new();
    for provider in [None, Some(id("p1@db-1"))] {
        for machine in [None, Some(Name::parse("app-1").unwrap())] {
            for class in [None, Some(Class::Refused)] {
                for name in [None, Some("1".to_owned())] {
                    for state in std::iter::once(None).chain(ConsumerState::ALL.map(Some)) {
                        for page in [1, 2] {
                            queries.push(ConsumerQuery {
                                state,
                                provider: provider.clone(),
                                machine: machine.clone(),
                                class,
                                name: name.clone(),
                                page,
                            });
                        }
                    }
                }
            }
        }
    }
    let mut full_pages = 0;
    for query in &queries {
        let read = store.read_consumers(query, &declared).await.unwrap();
        let lines: Vec<Line> = read
            .lines
            .iter()
            .map(|l| {
                (
                    l.state,
                    l.provider.to_string(),
                    l.consumer.to_string(),
                    l.machine.as_ref().map(Name::to_string),
                    l.since,
                    l.class,
                    l.declared,
                )
            })
            .collect();
        let (counts, plain_lines) = plain(&admin, query, &declared).await;
        assert_eq!(read.counts, counts, "{}", query.path());
        assert_eq!(lines, plain_lines, "{}", query.path());
        full_pages += usize::from(lines.len() == PAGE_LINES as usize);
    }
    assert!(full_pages > 4, "only {full_pages} queries fill a page");
}
