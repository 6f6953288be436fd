//! Ingest rate: events/s from JetStream into the store (in order, at least
//! once, acknowledged after commit), against pgbench running the same upsert
//! statement (the link's `failing` statement with one-element arrays,
//! prepared, one transaction per event, one client like the link's one
//! connection) on the same server in the same run.
//!
//! ```text
//! cargo bench -p mesh-controller --bench ingest
//! MESH_BENCH_EVENTS=50000 MESH_BENCH_SECONDS=20 cargo bench -p mesh-controller --bench ingest
//! ```

mod common;

use std::process::Command;
use std::time::Duration;

use async_nats::jetstream;
use common::{env_number, fill, ingest, store};
use mesh_controller::{ensure_consumer, PgStore, UPSERT_FAILING};
use mesh_status::link::{LinkSettings, DEFAULT_BATCH};
use mesh_test_support::NatsServer;

const PGBENCH: &str = "/usr/lib/postgresql/15/bin/pgbench";

/// pgbench running the failing upsert for `seconds`; returns its tps.
fn pgbench(pg: &mesh_test_support::PgCluster, seconds: u64) -> f64 {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut sql = String::from(
        "\\set c random(0, 4999)\n\\set p random(0, 9)\n\\set seq random(1, 1000000000)\n",
    );
    let values = [
        "('p' || :p)",
        "'db-1'",
        "('c' || :c)",
        "'app-1'",
        "'postgres-database'",
        "'credentials-rejected'",
        "('password authentication failed for user c' || :c)",
        "'2026-10-05T00:04:00Z'::timestamptz",
        "61::bigint",
        "now()",
        ":seq::bigint",
        "1::bigint",
        "now()",
        "'2026-10-05T00:04:00Z'::timestamptz",
    ];
    let mut statement = UPSERT_FAILING.to_owned();
    for (n, value) in values.iter().enumerate().rev() {
        statement = statement.replace(&format!("${}", n + 1), &format!("ARRAY[{value}]"));
    }
    sql.push_str(&statement.split_whitespace().collect::<Vec<_>>().join(" "));
    sql.push_str(";\n");
    let script = dir.path().join("upsert.sql");
    std::fs::write(&script, sql).expect("writing the pgbench script");
    let output = Command::new(PGBENCH)
        .args(["-n", "-M", "prepared", "-c", "1", "-j", "1", "-T"])
        .arg(seconds.to_string())
        .arg("-f")
        .arg(&script)
        .args([
            "-h",
            "127.0.0.1",
            "-p",
            &pg.port().to_string(),
            "-U",
            "postgres",
            "bench",
        ])
        .env("PGPASSWORD", pg.superuser_password())
        .output()
        .expect("running pgbench");
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "pgbench failed: {text}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    text.lines()
        .find(|l| l.starts_with("tps = "))
        .and_then(|l| l.split_whitespace().nth(2))
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no tps in pgbench output: {text}"))
}

fn main() {
    mesh_controller::init_tracing("warn", mesh_runtime::LogFormat::Text);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let events = env_number("MESH_BENCH_EVENTS", 100_000);
        let seconds = env_number("MESH_BENCH_SECONDS", 10);
        let (pg, options, db) = store("bench").await;
        let nats = NatsServer::start();
        let client = async_nats::connect(nats.url()).await.expect("nats");
        let js = jetstream::new(client.clone());
        let mut setup_store = PgStore::new(options.clone());

        let tps = pgbench(&pg, seconds);
        println!("ingest benchmark: events from JetStream into the store, in order, at least once");
        println!("  pgbench, same upsert, 1 client, prepared, {seconds}s: {tps:>9.0} tx/s");
        // The default batch over the whole run, then smaller batches over
        // fewer words (one at a time runs at a few hundred words a second).
        let runs = [
            (DEFAULT_BATCH, events),
            (16, events / 2),
            (4, events / 5),
            (1, events / 20),
        ];
        let mut first = 0;
        for (batch, count) in runs {
            let settings = LinkSettings {
                batch,
                ..LinkSettings::default()
            };
            let consumer = ensure_consumer(&client, &settings, &mut setup_store)
                .await
                .expect("stream and consumer");
            fill(&js, first, count, 1024).await;
            let settings = LinkSettings {
                batch,
                wait: Duration::from_millis(200),
                ..LinkSettings::default()
            };
            let rate = ingest(&consumer, &options, &db, &settings, first, count).await;
            first += count;
            println!(
                "  link, batch {batch:>2}, {count:>6} events: {rate:>9.0} events/s   ratio {:.2}{}",
                rate / tps,
                if batch == DEFAULT_BATCH {
                    "   (target >= 2.5)"
                } else {
                    ""
                }
            );
        }
    });
}
