//! Shared setup of the controller benchmarks: the store's (`store.rs`,
//! which the console's benchmark shares), the timings' median
//! (`measure.rs`, shared likewise) and the ingest benchmarks' events.

pub mod measure;
mod store;

pub use store::*;

use mesh_pg_store::DatabaseOptions;
use mesh_protocol::subject::event_subject;
use mesh_protocol::{EventKind, Name};
use mesh_test_support::{NatsServer, PgCluster};

/// A migrated store (with the server's statements kept when
/// `MESH_BENCH_STATEMENTS` asks) and a NATS server holding the mesh's stream
/// and the link's durable consumer: what a benchmark that publishes events
/// and follows them into the store starts from.
#[allow(dead_code)] // the catch-up and prune benchmarks'
pub struct Followed {
    pub pg: PgCluster,
    pub options: DatabaseOptions,
    pub db: tokio_postgres::Client,
    /// Whether the server's statements are kept ([`statements_if_asked`]).
    pub statements: bool,
    pub js: async_nats::jetstream::Context,
    pub consumer: mesh_controller::Following,
    /// The NATS server: bind it (`nats: _nats`) to keep it running, as a
    /// field left to `..` is dropped at once.
    pub nats: NatsServer,
}

/// [`Followed`], its store's database named `name`, the stream and the
/// consumer made as `serve` makes them with the default settings.
#[allow(dead_code)] // the catch-up and prune benchmarks'
pub async fn followed(name: &str) -> Followed {
    let (mut pg, options, db) = store(name).await;
    let (db, statements) = statements_if_asked(&mut pg, db, name).await;
    let nats = NatsServer::start();
    let client = async_nats::connect(nats.url()).await.expect("nats");
    let js = async_nats::jetstream::new(client.clone());
    let mut setup_store = mesh_pg_store::PgStore::new(options.clone());
    let settings = mesh_status::link::LinkSettings::default();
    let consumer = mesh_controller::ensure_consumer(&client, &settings, &mut setup_store)
        .await
        .expect("stream and consumer");
    Followed {
        pg,
        options,
        db,
        statements,
        js,
        consumer,
        nats,
    }
}

/// Providers of the ingest benchmarks' events.
#[allow(dead_code)] // the ingest benchmarks', not status'
pub const PROVIDERS: u64 = 10;

/// Consumers of each provider in the ingest benchmarks' events.
#[allow(dead_code)] // the ingest benchmarks', not status'
pub const CONSUMERS: u64 = 5000;

/// Word `i` of the ingest benchmarks: a `failing` (every tenth a
/// `recovered`) of one of [`PROVIDERS`] x [`CONSUMERS`] keys, `said_at` rising.
#[allow(dead_code)] // the ingest benchmarks', not status'
pub fn event(i: u64) -> (String, String) {
    let provider = format!("p{}", i % PROVIDERS);
    let subject = |kind| {
        let (machine, module) = (Name::parse("db-1"), Name::parse(&provider));
        event_subject(&machine.unwrap(), &module.unwrap(), kind)
    };
    let consumer = format!("c{}", (i / PROVIDERS) % CONSUMERS);
    let said_at = humantime::format_rfc3339_seconds(
        std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_790_000_000 + i),
    );
    if i % 10 == 9 {
        (
            subject(EventKind::Recovered),
            format!(
                r#"{{"v":1,"consumer":"{consumer}","consumer_machine":"app-1","provision":"postgres-database","reason":"success","said_at":"{said_at}"}}"#
            ),
        )
    } else {
        (
            subject(EventKind::Failing),
            format!(
                r#"{{"v":1,"consumer":"{consumer}","consumer_machine":"app-1","provision":"postgres-database","class":"credentials-rejected","error":"password authentication failed for user \"{consumer}\"","since":"2026-10-05T00:04:00Z","attempts":{i},"said_at":"{said_at}"}}"#
            ),
        )
    }
}

/// Publishes events `from` to `from + count - 1` ([`event`]), at most
/// `in_flight` unacknowledged at once, and waits for the stream's acks.
#[allow(dead_code)] // the ingest benchmarks', not status'
pub async fn fill(js: &async_nats::jetstream::Context, from: u64, count: u64, in_flight: usize) {
    let mut acks = Vec::with_capacity(in_flight);
    for i in from..from + count {
        let (subject, body) = event(i);
        acks.push(js.publish(subject, body.into()).await.expect("publish"));
        if acks.len() == in_flight {
            for ack in acks.drain(..) {
                ack.await.expect("stream ack");
            }
        }
    }
    for ack in acks {
        ack.await.expect("stream ack");
    }
}

/// Whether event `i` (stream sequence `i + 1`) is in the store: it is the
/// newest event of its key, so its row carries its sequence.
#[allow(dead_code)] // the ingest benchmarks', not status'
pub async fn landed(client: &tokio_postgres::Client, i: u64) -> bool {
    let (subject, _) = event(i);
    let table = if subject.ends_with(".recovered") {
        "recovered"
    } else {
        "failing"
    };
    let provider = format!("p{}", i % PROVIDERS);
    let consumer = format!("c{}", (i / PROVIDERS) % CONSUMERS);
    let seq = (i + 1) as i64;
    client
        .query_opt(
            &format!(
                "SELECT 1 FROM {table} WHERE provider_module = $1 AND provider_machine = 'db-1' \
                 AND consumer = $2 AND stream_seq >= $3"
            ),
            &[&provider, &consumer, &seq],
        )
        .await
        .expect("polling the store")
        .is_some()
}

/// Follows `consumer` into the store with `settings` until event `first +
/// events - 1` landed; returns events/s.
#[allow(dead_code)] // the ingest benchmarks', not status'
pub async fn ingest(
    consumer: &mesh_controller::Following,
    options: &DatabaseOptions,
    client: &tokio_postgres::Client,
    settings: &mesh_status::link::LinkSettings,
    first: u64,
    events: u64,
) -> f64 {
    let parts = ingest_in_parts(consumer, options, client, settings, first, events, 1).await;
    events as f64 / parts[0].as_secs_f64()
}

/// [`ingest`], the events cut into `parts` equal parts: how long each part
/// took to land, from the one before (the first from the start).
#[allow(dead_code)] // the ingest benchmarks', not status'
pub async fn ingest_in_parts(
    consumer: &mesh_controller::Following,
    options: &DatabaseOptions,
    client: &tokio_postgres::Client,
    settings: &mesh_status::link::LinkSettings,
    first: u64,
    events: u64,
    parts: u64,
) -> Vec<std::time::Duration> {
    let mut store = mesh_pg_store::PgStore::new(options.clone());
    let stop = mesh_runtime::Stop::new();
    let asked = stop.clone();
    let watcher = async move {
        let mut times = Vec::new();
        let mut last = std::time::Instant::now();
        for part in 1..=parts {
            let end = first + events * part / parts - 1;
            while !landed(client, end).await {
                tokio::time::sleep(std::time::Duration::from_millis(2)).await;
            }
            times.push(last.elapsed());
            last = std::time::Instant::now();
        }
        asked.request();
        times
    };
    let state = mesh_status::LinkState::new();
    let following = mesh_controller::follow(consumer, &mut store, settings, &state, &stop);
    let (times, _) = tokio::join!(watcher, following);
    times
}
