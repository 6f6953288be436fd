//! Catching up a backlog into a store made anew (issue 41): the controller
//! started on a freshly migrated store, nothing analyzed, with 1,000,000
//! events waiting in JetStream (the ingest benchmarks' events: 10
//! providers × 5,000 consumers, every tenth a recovery, so the history
//! grows as the standings change), followed with the default batch. It
//! prints the rate over the whole run and, for each tenth of the events,
//! its rate and its average round, with the slowest tenth's ratio to the
//! median tenth: a stall (rounds that slow down as tables fill, until
//! autovacuum or a re-prepare catches up) shows as a tenth far above it.
//!
//! A slow tier: it runs on request, not in CI (publishing the backlog and
//! ingesting it take a few minutes on two cores).
//!
//! ```text
//! cargo bench -p mesh-controller --bench catch_up
//! MESH_BENCH_EVENTS=100000 cargo bench -p mesh-controller --bench catch_up
//! MESH_BENCH_STATEMENTS=1 cargo bench -p mesh-controller --bench catch_up   # the server's statements
//! MESH_BENCH_STATEMENTS=1 MESH_BENCH_EXPLAIN=15 cargo bench …   # and the plans slower than 15 ms
//! ```

mod common;

use std::time::{Duration, Instant};

use common::{env_number, fill, followed, ingest_in_parts, print_statements, Followed};
use mesh_status::link::{LinkSettings, DEFAULT_BATCH};

/// The parts the run is cut into.
const PARTS: u64 = 10;

fn main() {
    mesh_controller::init_tracing("warn", mesh_runtime::LogFormat::Text);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let events = env_number("MESH_BENCH_EVENTS", 1_000_000);
        let Followed {
            pg,
            options,
            db,
            statements,
            js,
            consumer,
            nats: _nats,
        } = followed("catchup").await;
        let published = Instant::now();
        fill(&js, 0, events, 1024).await;
        println!(
            "catch-up into a store made anew: {events} events waiting (published in {:.0} s), \
             batch {DEFAULT_BATCH}",
            published.elapsed().as_secs_f64()
        );
        let follow = LinkSettings {
            wait: Duration::from_millis(200),
            ..LinkSettings::default()
        };
        let parts = ingest_in_parts(&consumer, &options, &db, &follow, 0, events, PARTS).await;
        let total: Duration = parts.iter().sum();
        let rounds_a_part = (events / PARTS).div_ceil(DEFAULT_BATCH as u64) as f64;
        let round_ms: Vec<f64> = parts
            .iter()
            .map(|d| d.as_secs_f64() * 1e3 / rounds_a_part)
            .collect();
        let mut sorted = round_ms.clone();
        sorted.sort_by(f64::total_cmp);
        let median = (sorted[sorted.len() / 2 - 1] + sorted[sorted.len() / 2]) / 2.0;
        for (n, (part, ms)) in parts.iter().zip(&round_ms).enumerate() {
            println!(
                "  tenth {:>2}: {:>7.0} events/s, {ms:>6.2} ms a round ({:.2} of the median)",
                n + 1,
                (events / PARTS) as f64 / part.as_secs_f64(),
                ms / median
            );
        }
        let rate = events as f64 / total.as_secs_f64();
        let slowest = sorted[sorted.len() - 1];
        println!(
            "  whole run: {rate:.0} events/s (ratio {:.2} to the 10,000 events/s target); \
             slowest tenth's round {:.2} of the median (target <= 2)",
            rate / 10_000.0,
            slowest / median
        );
        if statements {
            print_statements(&db).await;
        }
        if std::env::var_os("MESH_BENCH_EXPLAIN").is_some() {
            let log = pg.log();
            std::fs::write("/tmp/catch_up-server.log", &log).expect("writing the server log");
            println!("  the server's log (auto_explain, autovacuum): /tmp/catch_up-server.log");
        }
    });
}
