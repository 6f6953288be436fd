//! Ingest while history's retention prunes, against the same ingest with
//! nothing to prune: events/s from JetStream into the store (batch 64, as
//! `serve` runs), over a store holding a backlog of history rows recorded
//! more than 90 days ago (as after the first 90 days of a busy mesh, or a
//! lowered `--keep-history`). With `keep_history` 90 days the link removes
//! them a batch (1,000 rows) a second between rounds; with 3,650 days it
//! finds nothing to remove and pauses its retention for a minute. The two
//! alternate on one store, three runs each, the backlog topped up before
//! each pruning run so it never runs out mid-run.
//!
//! ```text
//! cargo bench -p mesh-controller --bench prune
//! MESH_BENCH_EVENTS=20000 MESH_BENCH_PAIRS=2 cargo bench -p mesh-controller --bench prune
//! ```

mod common;

use std::time::Duration;

use common::{env_number, fill, followed, ingest, print_statements, Followed};
use mesh_status::link::{LinkSettings, DEFAULT_BATCH, DEFAULT_KEEP_HISTORY, PRUNE_BATCH};

/// History rows recorded more than 90 days ago.
async fn old_rows(client: &tokio_postgres::Client) -> i64 {
    client
        .query_one(
            "SELECT count(*) FROM history WHERE recorded_at < now() - interval '90 days'",
            &[],
        )
        .await
        .expect("counting old history")
        .get(0)
}

/// Adds old history rows (failing began and recovered, of 20,000
/// consumers, recorded 100 to 190 days ago) until `want` are there.
async fn top_up(client: &tokio_postgres::Client, want: i64) {
    let missing = want - old_rows(client).await;
    if missing > 0 {
        client
            .execute(
                "INSERT INTO history (kind, at, provider_module, provider_machine, consumer,
                     consumer_machine, provision, class, error, since, attempts, reason,
                     stream_epoch, stream_seq, recorded_at)
                 SELECT CASE WHEN i % 2 = 0 THEN 'failing-began' ELSE 'recovered' END, t,
                     'p' || (c % 10), 'db-1', 'c' || c, 'app-1', 'postgres-database',
                     CASE WHEN i % 2 = 0 THEN 'credentials-rejected' END,
                     CASE WHEN i % 2 = 0 THEN 'password authentication failed' END,
                     t - interval '1 hour', CASE WHEN i % 2 = 0 THEN 61 END,
                     CASE WHEN i % 2 = 1 THEN 'success' END, 1, i, t
                 FROM generate_series(1, $1::int8) AS i,
                      LATERAL (SELECT (i * 7919) % 20000 AS c,
                          now() - interval '190 days' + (i::float8 / $1) * interval '90 days'
                              AS t) AS k",
                &[&missing],
            )
            .await
            .expect("adding old history");
    }
    client
        .batch_execute("VACUUM ANALYZE history")
        .await
        .expect("vacuum");
}

fn main() {
    mesh_controller::init_tracing("warn", mesh_runtime::LogFormat::Text);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let events = env_number("MESH_BENCH_EVENTS", 50_000);
        let pairs = env_number("MESH_BENCH_PAIRS", 3);
        let Followed {
            pg: _pg,
            options,
            db,
            statements,
            js,
            consumer,
            nats: _nats,
        } = followed("bench").await;
        // At most one batch between two rounds (what the link did before
        // it spaced full batches a second apart): twice what a run can take.
        let backlog = (events / DEFAULT_BATCH as u64 + 1) as i64 * i64::from(PRUNE_BATCH) * 2;
        println!(
            "ingest while pruning: {events} events a run (batch {DEFAULT_BATCH}), \
             a backlog of {backlog} old history rows"
        );
        let mut first = 0;
        let (mut alone, mut pruning) = (Vec::new(), Vec::new());
        for _ in 0..pairs {
            for prune in [false, true] {
                top_up(&db, backlog).await;
                let before = old_rows(&db).await;
                let keep = match prune {
                    true => DEFAULT_KEEP_HISTORY,
                    false => Duration::from_secs(3650 * 86_400),
                };
                fill(&js, first, events, 1024).await;
                let settings = LinkSettings {
                    batch: DEFAULT_BATCH,
                    wait: Duration::from_millis(200),
                    keep_history: keep,
                    ..LinkSettings::default()
                };
                let rate = ingest(&consumer, &options, &db, &settings, first, events).await;
                first += events;
                let removed = before - old_rows(&db).await;
                println!(
                    "  {:<16} {rate:>9.0} events/s ({removed} old rows removed meanwhile)",
                    if prune { "while pruning" } else { "alone" }
                );
                assert!(
                    !prune || removed < before,
                    "the backlog ran out during the run: the figure would understate pruning"
                );
                if statements {
                    print_statements(&db).await;
                }
                match prune {
                    true => pruning.push(rate),
                    false => alone.push(rate),
                }
            }
        }
        let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
        let (a, p) = (mean(&alone), mean(&pruning));
        println!(
            "  mean: alone {a:.0} events/s, while pruning {p:.0} events/s: ratio {:.3} \
             (target >= 0.90)",
            p / a
        );
    });
}
