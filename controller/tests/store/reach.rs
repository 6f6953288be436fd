//! How `status` and the console's pages read the standings of every
//! declared provider: the store counts every standing and tests the
//! provider key on the groups it counted; a read of providers chosen from
//! them (a provider's page), or of one consumer, tests it on each standing,
//! which their index finds. Over a store that holds a provider no longer
//! declared and a standing older than its provider's start, both ways
//! select the same standings.

use mesh_pg_store::{migrate, PgStore};
use mesh_protocol::event::{Alive, Failing};
use mesh_protocol::{Class, Event, ModuleId, Name, Timestamp};
use mesh_status::model::Received;
use mesh_status::store::{Order, StatusFilter};
use mesh_status::testing::received;
use mesh_status::Store;
use mesh_test_support::PgCluster;

use super::common::store_at;

/// The declared providers; each read of a half of them chooses them.
const PROVIDERS: usize = 12;

fn at(minute: u32) -> Timestamp {
    Timestamp::parse(&format!("2026-10-05T00:{minute:02}:00Z")).unwrap()
}

fn provider(p: usize) -> String {
    format!("p{p}@db-{}", p % 3)
}

/// Failing `consumer` (on `app-<machine>`) for `class`, said at minute
/// `said`.
fn failing(consumer: &str, machine: usize, class: Class, said: u32) -> Event {
    Event::Failing(Failing {
        v: 1,
        consumer: Name::parse(consumer).unwrap(),
        consumer_machine: Some(Name::parse(&format!("app-{machine}")).unwrap()),
        provision: Some("postgres-database".into()),
        class,
        error: format!("{class:?} for {consumer}"),
        since: at(1),
        attempts: 3,
        said_at: at(said),
    })
}

/// A started and settled `alive`: started at minute 30, settled at 31.
fn settled() -> Event {
    Event::Alive(Alive {
        v: 1,
        started_at: at(30),
        alive_every_seconds: 60,
        failing_after_seconds: 300,
        repeat_every_seconds: Some(900),
        settled_at: Some(at(31)),
        consumers: 2,
        failing: 1,
        pass_seconds: 0.25,
        said_at: at(32),
        fault: None,
        contributions: None,
    })
}

/// What a read selected: each group (provider, class, count, silent), then
/// each standing listed (provider, consumer).
type Selected = (Vec<(String, Class, u64, u64)>, Vec<(String, String)>);

async fn read(
    store: &mut PgStore,
    (providers, providers_chosen): (&[String], bool),
    machine: Option<&str>,
    consumer: Option<&str>,
    per_group: Option<u32>,
) -> Selected {
    let filter = StatusFilter {
        providers: providers
            .iter()
            .map(|p| ModuleId::parse(p).unwrap())
            .collect(),
        providers_chosen,
        machine: machine.map(str::to_owned),
        silent_before: at(10),
        required: vec![],
        order: Order::Cause,
        consumer: consumer.map(str::to_owned),
        per_group,
    };
    let mut read = store.read_status(&filter).await.unwrap();
    let groups = read
        .groups
        .iter()
        .map(|g| (g.provider.to_string(), g.class, g.standings, g.silent))
        .collect();
    let mut listed = Vec::new();
    while let Some(row) = read.next().await.unwrap() {
        listed.push((row.provider.to_string(), row.said.consumer.to_string()));
    }
    read.finish().await.unwrap();
    (groups, listed)
}

/// `selected` in one order, whatever order its reads came in.
fn sorted(mut selected: Selected) -> Selected {
    selected
        .0
        .sort_by(|a, b| (&a.0, a.1.as_str()).cmp(&(&b.0, b.1.as_str())));
    selected.1.sort();
    selected
}

#[tokio::test]
async fn a_read_of_every_provider_selects_what_reads_of_chosen_ones_select() {
    let pg = PgCluster::start();
    let (options, _admin) = store_at(&pg, "reach").await;
    migrate(&options).await.unwrap();
    let mut store = PgStore::new(options);
    let mut events: Vec<Received> = Vec::new();
    let mut seq = 0;
    let mut event = |provider: &str, event: Event| {
        seq += 1;
        received(provider, seq, event)
    };
    // Provider p fails p % 4 + 1 consumers, two classes, said at minute 5
    // (silent) or 20.
    let mut expected = 0;
    for p in 0..PROVIDERS {
        for i in 0..p % 4 + 1 {
            let class = [Class::CredentialsRejected, Class::Unreachable][i % 2];
            let said = [5, 20][(p + i) % 2];
            let consumer = format!("c{p}-{i}");
            events.push(event(&provider(p), failing(&consumer, i % 2, class, said)));
            expected += 1;
        }
    }
    // A provider no longer declared, failing 3 consumers: never counted.
    for i in 0..3 {
        let consumer = format!("g-{i}");
        events.push(event(
            "gone@db-1",
            failing(&consumer, 1, Class::Refused, 20),
        ));
    }
    // p5 started again and settled after failing c5-0 and c5-1 at minute 5
    // or 20: those standings are older than its start and left out; it
    // fails "late" since.
    events.push(event(&provider(5), settled()));
    events.push(event(&provider(5), failing("late", 0, Class::Refused, 33)));
    expected = expected - 2 + 1;
    store.apply(&events).await.unwrap();

    let all: Vec<String> = (0..PROVIDERS).map(provider).collect();
    let (first, second) = all.split_at(PROVIDERS / 2);
    for machine in [None, Some("db-1"), Some("app-1")] {
        for per_group in [None, Some(1)] {
            let wide = read(&mut store, (&all, false), machine, None, per_group).await;
            let mut narrow = read(&mut store, (first, true), machine, None, per_group).await;
            let rest = read(&mut store, (second, true), machine, None, per_group).await;
            narrow.0.extend(rest.0);
            narrow.1.extend(rest.1);
            assert_eq!(
                sorted(wide.clone()),
                sorted(narrow),
                "machine {machine:?}, at most {per_group:?} of each group"
            );
            assert!(
                !wide.1.iter().any(|(p, _)| p == "gone@db-1"),
                "{:?}",
                wide.1
            );
        }
    }

    let (groups, listed) = read(&mut store, (&all, false), None, None, None).await;
    let counted: u64 = groups.iter().map(|g| g.2).sum();
    assert_eq!(counted, expected);
    assert_eq!(listed.len(), expected as usize);
    assert!(!groups.iter().any(|g| g.0 == "gone@db-1"));
    let p5: Vec<_> = listed.iter().filter(|(p, _)| p == "p5@db-2").collect();
    assert_eq!(p5, [&("p5@db-2".to_owned(), "late".to_owned())]);
    // p1 fails c1-0 (said at 20) and c1-1 (said at 5): one of two silent.
    assert!(
        groups.contains(&("p1@db-1".to_owned(), Class::CredentialsRejected, 1, 0))
            && groups.contains(&("p1@db-1".to_owned(), Class::Unreachable, 1, 1)),
        "{groups:?}"
    );
    // One consumer's read of every provider: its standing alone.
    let one = read(&mut store, (&all, false), None, Some("c3-2"), None).await;
    assert_eq!(
        one,
        (
            vec![("p3@db-0".to_owned(), Class::CredentialsRejected, 1, 0)],
            vec![("p3@db-0".to_owned(), "c3-2".to_owned())]
        )
    );
}
