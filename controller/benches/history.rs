//! A consumer's history at 1,000,000 history rows: `mesh-controller history
//! CONSUMER --since 3650d` through the binary (process start included), and
//! the store's read of it in process (`PgStore::read_history`); and
//! `mesh-controller why CONSUMER` through the binary beside 100,000
//! standings (its verdict joins the standing, its provider, the controller,
//! grants and recurrence); each the median of 11 runs. The rows: 20,000
//! consumers of 10 providers, each failing and recovering 25 times over 90
//! days (50 rows each), in random order of consumer as rounds write them,
//! each consumer's last row a beginning (the console benchmark's rows:
//! `fill_history`).
//!
//! ```text
//! cargo bench -p mesh-controller --bench history
//! MESH_BENCH_HISTORY_ROWS=2000000 cargo bench -p mesh-controller --bench history
//! ```

mod common;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::measure::{median, ms};
use common::{env_number, fill_history, fill_standings, store};
use mesh_pg_store::PgStore;
use mesh_protocol::{Name, Timestamp};
use mesh_status::store::HistoryFilter;

const RUNS: usize = 11;
const PER_CONSUMER: u64 = 50;

fn main() {
    mesh_controller::init_tracing("warn", mesh_runtime::LogFormat::Text);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let rows = env_number("MESH_BENCH_HISTORY_ROWS", 1_000_000);
        let consumers = rows / PER_CONSUMER;
        let (pg, options, client) = store("history").await;
        let count = fill_history(&client, rows, consumers, 10).await;
        let consumer = "c42";
        let binary = env!("CARGO_BIN_EXE_mesh-controller");
        let database = pg.database_flags("history");
        let mut args = database.to_vec();
        args.extend([
            "history".to_owned(),
            consumer.to_owned(),
            "--since".to_owned(),
            "3650d".to_owned(),
        ]);
        let mut through_binary = Vec::new();
        let mut lines = 0;
        for _ in 0..RUNS {
            let started = Instant::now();
            let output = Command::new(binary)
                .args(&args)
                .stderr(Stdio::inherit())
                .output()
                .expect("running mesh-controller history");
            through_binary.push(started.elapsed());
            assert!(output.status.success(), "mesh-controller history failed");
            lines = output.stdout.iter().filter(|b| **b == b'\n').count();
        }
        let mut store = PgStore::new(options);
        let filter = HistoryFilter {
            consumer: Some((Name::parse(consumer).expect("a name"), None)),
            provider: None,
            machine: None,
            since: Timestamp::from_system(
                std::time::SystemTime::now() - Duration::from_secs(3650 * 86_400),
            ),
        };
        let mut in_process = Vec::new();
        let mut read = 0;
        for _ in 0..RUNS {
            let started = Instant::now();
            let (transitions, _) = store.read_history(&filter).await.expect("reading history");
            in_process.push(started.elapsed());
            read = transitions.len();
        }
        println!(
            "history of one consumer at {count} history rows: {:.1} ms through the binary \
             ({lines} lines, process start included), {:.1} ms the store's read ({read} rows); \
             median of {RUNS}",
            ms(median(through_binary)),
            ms(median(in_process)),
        );

        // `why` of the same consumer, its provider p2@db-2 and 100,000
        // standings of 10 providers beside its history.
        let standings = env_number("MESH_BENCH_STANDINGS", 100_000);
        fill_standings(&client, 10, standings).await;
        client
            .batch_execute("VACUUM ANALYZE failing")
            .await
            .expect("vacuum");
        let dir = tempfile::tempdir().expect("temp dir");
        let declaration = dir.path().join("declaration.json");
        std::fs::write(
            &declaration,
            r#"{"modules":[{"module":"p2","machine":"db-2","provides":["postgres-database"]},
               {"module":"c42","machine":"app-0","requires":[{"provision":"postgres-database","from":"p2@db-2"}]}]}"#,
        )
        .expect("writing the declaration");
        let mut why_args = database.to_vec();
        why_args.extend([
            "--declaration".to_owned(),
            declaration.display().to_string(),
            "why".to_owned(),
            consumer.to_owned(),
        ]);
        let mut why_times = Vec::new();
        let mut verdict = String::new();
        for _ in 0..RUNS {
            let started = Instant::now();
            let output = Command::new(binary)
                .args(&why_args)
                .stderr(Stdio::inherit())
                .output()
                .expect("running mesh-controller why");
            why_times.push(started.elapsed());
            // 1: the consumer is not served (it fails now); 0 would be a
            // wrong set-up, 2 an error.
            assert_eq!(output.status.code(), Some(1), "mesh-controller why");
            verdict = String::from_utf8_lossy(&output.stdout)
                .lines()
                .next()
                .unwrap_or_default()
                .to_owned();
        }
        let why_ms = ms(median(why_times));
        println!(
            "why of one consumer beside {standings} standings and {count} history rows: \
             {why_ms:.1} ms through the binary, process start included (ratio {:.2} to the \
             50 ms target); median of {RUNS}; it said: {verdict}",
            why_ms / 50.0
        );
    });
}
