//! Several controllers on one store (docs/contracts/store.md: several
//! controllers may share the one durable consumer): two stores applying
//! overlapping rounds at the same moments, one in stream order and the other
//! in the opposite order, end with exactly what one controller applying
//! every event once would have: each consumer's newest event, no stale
//! `failing`, no `recovered` lost.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

mod common;

use mesh_pg_store::{migrate, PgStore};
use mesh_protocol::subject::event_subject;
use mesh_protocol::{EventKind, Name};
use mesh_status::link::decode;
use mesh_status::model::Received;
use mesh_status::Store;
use mesh_test_support::PgCluster;

const CONSUMERS: u64 = 12;
/// Events per provider: seq 1..=EVENTS.
const EVENTS: u64 = 240;
/// Events per round; rounds start every `ROUND / 2` events, so each event is in two rounds.
const ROUND: u64 = 12;

/// Event `seq` of `provider`: consumer and kind spread by a fixed
/// pseudo-random walk, so keys flip between failing and recovered often.
fn received(provider: &str, seq: u64) -> Received {
    let mix = seq.wrapping_mul(0x9e37_79b9_7f4a_7c15).rotate_left(17);
    let consumer = format!("c{}", mix % CONSUMERS);
    let emitter = (Name::parse("db-1").unwrap(), Name::parse(provider).unwrap());
    let subject = |kind| event_subject(&emitter.0, &emitter.1, kind);
    let (subject, body) = if (mix >> 8) % 2 == 0 {
        (
            subject(EventKind::Failing),
            format!(
                r#"{{"v":1,"consumer":"{consumer}","consumer_machine":"app-1","provision":"postgres-database","class":"refused","error":"no","since":"2026-10-05T00:04:00Z","attempts":{seq},"said_at":"2026-10-05T00:09:00Z"}}"#
            ),
        )
    } else {
        (
            subject(EventKind::Recovered),
            format!(
                r#"{{"v":1,"consumer":"{consumer}","consumer_machine":"app-1","provision":"postgres-database","reason":"success","said_at":"2026-10-05T00:09:00Z"}}"#
            ),
        )
    };
    decode(&subject, body.as_bytes(), 1, seq).expect("a well-formed event")
}

/// What one controller applying every event once, in order, leaves:
/// consumer -> (newest failing seq if the newest event is failing, newest recovered seq).
fn expected(provider: &str) -> BTreeMap<String, (Option<i64>, Option<i64>)> {
    let mut rows: BTreeMap<String, (Option<i64>, Option<i64>)> = BTreeMap::new();
    for seq in 1..=EVENTS {
        let received = received(provider, seq);
        let consumer = mesh_consumer(&received);
        let row = rows.entry(consumer).or_default();
        if received.event.kind().as_str() == "failing" {
            row.0 = Some(seq as i64);
        } else {
            row.0 = None;
            row.1 = Some(seq as i64);
        }
    }
    rows
}

fn mesh_consumer(received: &Received) -> String {
    let json: serde_json::Value = serde_json::from_slice(&received.event.to_json()).unwrap();
    json["consumer"].as_str().unwrap().to_owned()
}

/// The rounds of `provider`: overlapping windows of `ROUND` events.
fn rounds(provider: &str) -> Vec<Vec<Received>> {
    (0..EVENTS / (ROUND / 2))
        .map(|start| {
            let from = start * (ROUND / 2) + 1;
            (from..(from + ROUND).min(EVENTS + 1))
                .map(|seq| received(provider, seq))
                .collect()
        })
        .collect()
}

async fn stored(
    client: &tokio_postgres::Client,
    provider: &str,
) -> BTreeMap<String, (Option<i64>, Option<i64>)> {
    let mut rows: BTreeMap<String, (Option<i64>, Option<i64>)> = BTreeMap::new();
    for row in client
        .query(
            "SELECT consumer, stream_seq FROM failing WHERE provider_module = $1",
            &[&provider],
        )
        .await
        .unwrap()
    {
        rows.entry(row.get(0)).or_default().0 = Some(row.get(1));
    }
    for row in client
        .query(
            "SELECT consumer, stream_seq FROM recovered WHERE provider_module = $1",
            &[&provider],
        )
        .await
        .unwrap()
    {
        rows.entry(row.get(0)).or_default().1 = Some(row.get(1));
    }
    rows
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_controllers_applying_overlapping_rounds_in_opposite_orders_agree_with_one() {
    let pg = PgCluster::start();
    let (options, client) = common::store_at(&pg, "store").await;
    migrate(&options).await.unwrap();

    // Rounds that failed and were tried again: none, since rounds lock their
    // keys in one order.
    let deadlocks = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    tokio::time::timeout(Duration::from_secs(240), async {
        // Several providers, each a fresh set of keys: more chances for the
        // two transactions to meet on a key.
        for run in 0..8 {
            let provider = format!("p{run}");
            let forward = rounds(&provider);
            let mut backward = forward.clone();
            backward.reverse();
            let barrier = Arc::new(tokio::sync::Barrier::new(2));
            let task = |rounds: Vec<Vec<Received>>, barrier: Arc<tokio::sync::Barrier>| {
                let options = options.clone();
                let deadlocks = Arc::clone(&deadlocks);
                tokio::spawn(async move {
                    let mut store = PgStore::new(options);
                    store
                        .stream_epoch("MESH_EVENTS", SystemTime::UNIX_EPOCH)
                        .await
                        .unwrap();
                    for round in rounds {
                        // Both controllers start each round at the same moment.
                        barrier.wait().await;
                        // A transient failure is tried again, as the link
                        // does (it NAKs the round and gets it again).
                        let mut tries = 0;
                        while let Err(error) = store.apply(&round).await {
                            tries += 1;
                            assert!(
                                error.is_transient() && tries < 20,
                                "the store fails a round: {error}"
                            );
                            deadlocks.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        }
                    }
                })
            };
            let a = task(forward, Arc::clone(&barrier));
            let b = task(backward, barrier);
            a.await.unwrap();
            b.await.unwrap();
            let want = expected(&provider);
            let got = stored(&client, &provider).await;
            assert_eq!(
                got, want,
                "run {run}: the store differs from what one controller leaves \
                 (consumer -> (failing seq, recovered seq))"
            );
        }
    })
    .await
    .expect("two controllers did not finish within 240 s: a lock wait that never ends?");
    assert_eq!(
        deadlocks.load(std::sync::atomic::Ordering::Relaxed),
        0,
        "rounds failed (deadlocks?) and were tried again"
    );
}
