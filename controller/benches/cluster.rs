//! Ingest on a three-server NATS cluster (stream and consumer with three
//! replicas): one controller, then two sharing the durable consumer, each
//! with its own bus connection (to another server) and its own store
//! connection. Prints events/s of each and the ratio two ÷ one.
//!
//! ```text
//! cargo bench -p mesh-controller --bench cluster
//! MESH_BENCH_EVENTS=50000 cargo bench -p mesh-controller --bench cluster
//! ```
//!
//! Everything (three nats-servers, PostgreSQL, the controllers, the
//! filling client) shares this machine's cores: on a small machine the
//! ratio says more about the cores than about the design.

mod common;

use std::time::{Duration, Instant};

use async_nats::jetstream;
use common::{env_number, fill, store};
use mesh_controller::{ensure_consumer, follow};
use mesh_pg_store::PgStore;
use mesh_status::link::{LinkSettings, LinkState, DEFAULT_BATCH};
use mesh_test_support::{NatsCluster, CLUSTER_SIZE};

async fn connect(cluster: &NatsCluster, index: usize) -> async_nats::Client {
    async_nats::connect(cluster.url(index % CLUSTER_SIZE))
        .await
        .expect("connecting to a cluster member")
}

/// `controllers` links follow the consumer until it has nothing pending or
/// unacknowledged; returns events/s.
async fn ingest(
    cluster: &NatsCluster,
    options: &mesh_pg_store::DatabaseOptions,
    settings: LinkSettings,
    controllers: usize,
    events: u64,
) -> f64 {
    let mut stops = Vec::new();
    let mut tasks = Vec::new();
    let mut followings = Vec::new();
    for n in 0..controllers {
        let client = connect(cluster, n + 1).await;
        let mut store = PgStore::new(options.clone());
        let following = ensure_consumer(&client, &settings, &mut store)
            .await
            .expect("stream and consumer");
        followings.push((client, following, store));
    }
    let watcher = connect(cluster, 0).await;
    let mut consumer = jetstream::new(watcher)
        .get_stream("MESH_EVENTS")
        .await
        .expect("stream")
        .get_consumer::<jetstream::consumer::pull::Config>("controller")
        .await
        .expect("consumer");
    let started = Instant::now();
    for (client, following, mut store) in followings {
        let stop = mesh_runtime::Stop::new();
        stops.push(stop.clone());
        tasks.push(tokio::spawn(async move {
            let state = LinkState::new();
            follow(&following, &mut store, &settings, &state, &stop).await;
            drop(client);
        }));
    }
    loop {
        let info = consumer.info().await.expect("consumer info");
        if info.num_pending == 0 && info.num_ack_pending == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let elapsed = started.elapsed();
    for stop in stops {
        stop.request();
    }
    for task in tasks {
        task.await.expect("link task");
    }
    events as f64 / elapsed.as_secs_f64()
}

fn main() {
    mesh_controller::init_tracing("warn", mesh_runtime::LogFormat::Text);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let events = env_number("MESH_BENCH_EVENTS", 20_000);
        let (_pg, options, _db) = store("bench").await;
        let cluster = NatsCluster::start();
        let settings = LinkSettings {
            batch: DEFAULT_BATCH,
            replicas: 3,
            wait: Duration::from_millis(200),
            ..LinkSettings::default()
        };
        let filler = connect(&cluster, 0).await;
        let js = jetstream::new(filler.clone());
        ensure_consumer(&filler, &settings, &mut PgStore::new(options.clone()))
            .await
            .expect("stream and consumer");
        println!(
            "cluster ingest: 3 nats-servers, stream and consumer with 3 replicas, batch {DEFAULT_BATCH}, {events} events per run"
        );
        let mut rates = Vec::new();
        for (run, controllers) in [1usize, 2].into_iter().enumerate() {
            fill(&js, run as u64 * events, events, 512).await;
            let rate = ingest(&cluster, &options, settings, controllers, events).await;
            println!("  {controllers} controller(s): {rate:>9.0} events/s");
            rates.push(rate);
        }
        println!("  ratio two / one: {:.2}", rates[1] / rates[0]);
    });
}
