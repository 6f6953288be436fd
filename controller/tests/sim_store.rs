//! The simulator's slow tier: its in-memory store (`mesh_sim::store`)
//! against the real `PgStore` on a private PostgreSQL, the same random
//! event sequences applied to both in the same random rounds, then what
//! `status` reads compared. So the two cannot drift. It lives here, not in
//! `mesh-sim`, so that the simulator does not depend on this crate.
//! It runs in every `cargo test` (12 sequences; 40 under `MESH_TESTS_SLOW`).
//! The in-memory store keeps no history, so history, and the standings'
//! `first_since` that PostgreSQL's round takes from it, are not compared
//! yet.

use std::time::Duration;

mod common;

use mesh_pg_store::{migrate, PgStore};
use mesh_protocol::event::{Alive, Failing, Recovered, RecoveredReason, VERSION};
use mesh_protocol::{Class, Event, ModuleId, Name, Timestamp};
use mesh_sim::rng::Rng;
use mesh_sim::store::MemStore;
use mesh_status::model::Received;
use mesh_status::store::{Order, StatusFilter};
use mesh_status::Store;
use mesh_test_support::PgCluster;

fn at(base: &Timestamp, secs: i64) -> Timestamp {
    let t = base.system_time();
    Timestamp::from_system(match secs >= 0 {
        true => t + Duration::from_secs(secs.unsigned_abs()),
        false => t - Duration::from_secs(secs.unsigned_abs()),
    })
}

/// A random sequence: 2 providers, 3 consumers, failing / recovered /
/// alive, provider clocks off by up to an hour, restarts (a new start),
/// stream sequences mostly rising with some redelivered (an older event
/// again).
fn sequence(seed: u64) -> Vec<Received> {
    let mut rng = Rng::derive(seed, 7);
    let base = Timestamp::parse("2026-10-05T00:00:00Z").unwrap();
    let providers = ["pg@db-0", "pg@db-1"];
    let mut started = [0i64; 2];
    let mut offset = [0i64; 2];
    let mut out: Vec<Received> = Vec::new();
    for step in 0..60u64 {
        let p = usize::try_from(rng.below(2)).unwrap();
        let now = i64::try_from(step * 20).unwrap();
        if rng.chance(80) {
            started[p] = now;
            offset[p] = i64::try_from(rng.below(7200)).unwrap() - 3600;
        }
        let said = at(&base, now + offset[p]);
        let consumer = Name::parse(&format!("app{}", rng.below(3))).unwrap();
        let event = match rng.below(3) {
            0 => Event::Failing(Failing {
                v: VERSION,
                consumer,
                consumer_machine: Some(Name::parse("app-1").unwrap()),
                provision: Some("postgres-database".into()),
                class: Class::Unreachable,
                error: "could not connect".into(),
                since: said,
                attempts: step,
                said_at: said,
            }),
            1 => Event::Recovered(Recovered {
                v: VERSION,
                consumer,
                consumer_machine: None,
                provision: None,
                reason: RecoveredReason::Success,
                said_at: said,
            }),
            _ => Event::Alive(Alive {
                v: VERSION,
                started_at: at(&base, started[p] + offset[p]),
                alive_every_seconds: 20,
                failing_after_seconds: 60,
                settled_at: (now - started[p] > 60).then_some(said),
                consumers: 3,
                failing: 1,
                pass_seconds: 0.1,
                repeat_every_seconds: Some(150),
                said_at: said,
                fault: None,
                contributions: None,
            }),
        };
        let seq = step + 1;
        let received = Received {
            epoch: 1,
            seq,
            stored_at: Some(at(&base, now + 1)),
            emitter: ModuleId::parse(providers[p]).unwrap(),
            event,
        };
        // Now and then an older event delivered again.
        if rng.chance(100) && !out.is_empty() {
            let i = usize::try_from(rng.below(out.len() as u64)).unwrap();
            out.push(out[i].clone());
        }
        out.push(received);
    }
    out
}

#[tokio::test]
async fn the_in_memory_store_reads_as_postgres_does() {
    let pg = PgCluster::start();
    let filter = StatusFilter {
        providers: vec![
            ModuleId::parse("pg@db-0").unwrap(),
            ModuleId::parse("pg@db-1").unwrap(),
        ],
        providers_chosen: false,
        machine: None,
        silent_before: Timestamp::parse("2026-10-05T00:10:00Z").unwrap(),
        required: vec![],
        order: Order::Key,
        consumer: None,
        per_group: None,
    };
    let (mut listed, mut outlived) = (0, 0);
    // 12 sequences in every run; the slow tier (`MESH_TESTS_SLOW`) 40.
    let seeds = match std::env::var_os("MESH_TESTS_SLOW") {
        Some(_) => 40,
        None => 12,
    };
    for seed in 0..seeds {
        let db = format!("seed{seed}");
        pg.create_database(&db).await;
        let options = common::options_of(&pg, &db);
        migrate(&options).await.unwrap();
        let mut postgres = PgStore::new(options);
        let mut memory = MemStore::new(tokio::time::Instant::now(), std::time::SystemTime::now());
        let events = sequence(seed);
        let mut rng = Rng::derive(seed, 8);
        let mut rest = &events[..];
        while !rest.is_empty() {
            let n = usize::try_from(rng.between(1, 8)).unwrap().min(rest.len());
            let (round, more) = rest.split_at(n);
            postgres.apply(round).await.unwrap();
            memory.apply(round).await.unwrap();
            rest = more;
        }
        let mut read = postgres.read_status(&filter).await.unwrap();
        let mut standings = Vec::new();
        while let Some(row) = read.next().await.unwrap() {
            standings.push(row);
        }
        let (groups, alive) = (read.groups.clone(), read.alive.clone());
        read.finish().await.unwrap();
        let mine = memory.read(&filter).unwrap();
        // `first_since` (the interval's first `since` across a provider's
        // restarts) comes from the history walk, which the in-memory store
        // does not run: it is compared without it.
        let without_first = |rows: &[mesh_status::model::FailingRow]| {
            rows.iter()
                .cloned()
                .map(|mut r| {
                    r.first_since = None;
                    r
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(
            without_first(&mine.standings),
            without_first(&standings),
            "seed {seed}: standings"
        );
        assert_eq!(mine.groups, groups, "seed {seed}: groups");
        assert_eq!(mine.alive, alive, "seed {seed}: alive");
        listed += mine.standings.len();
        outlived += memory.with(|t| t.failing.len()) - mine.standings.len();
    }
    // The sequences reach both sides of the settled rule.
    assert!(
        listed > 0 && outlived > 0,
        "listed {listed}, outlived {outlived}"
    );
}
