//! Past one machine (issue 16), over real processes: a three-server NATS
//! cluster configured with the rendered permissions (the same authorization
//! block on every member), the stream and consumer with three replicas, two
//! `mesh-controller serve` sharing the one durable consumer, and a provider
//! (the SDK's outbox and JetStream sink, as every provider binary uses)
//! publishing a steady flow of events for many consumers.
//!
//! Mid-flow the NATS server the provider is connected to is killed with
//! SIGKILL (and later started again), then one controller is killed (and
//! later started again). Afterwards the store holds exactly what one
//! uninterrupted controller would: every consumer's newest event, no
//! `recovered` lost, no stale `failing`.

use std::collections::BTreeMap;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use mesh_protocol::subject::event_subject;
use mesh_protocol::{Event, EventKind, ModuleId, Name, Timestamp};
use mesh_runtime::nats::connect;
use mesh_runtime::outbox::{publish_loop, JetStreamSink};
use mesh_runtime::{NatsArgs, Outbox};
use mesh_test_support::mesh::{binary, Process};
use mesh_test_support::{NatsCluster, PgCluster, CLUSTER_SIZE};
use serde_json::{json, Value};

/// Consumers of the provider.
const CONSUMERS: usize = 40;
/// Events published, one every `EVERY`: each consumer gets `EVENTS / CONSUMERS`.
const EVENTS: usize = 600;
const EVERY: Duration = Duration::from_millis(25);

/// Word `step`: consumer `step % CONSUMERS`; its `round` decides the kind
/// (a consumer fails in even rounds and recovers in odd ones; in the last
/// round consumers with an even number stay failing). `attempts` and
/// `said_at` carry the step, so the store's rows say which event they hold.
fn event_at(step: usize) -> (String, Event) {
    let consumer = step % CONSUMERS;
    let round = step / CONSUMERS;
    let last_round = (EVENTS - 1) / CONSUMERS;
    let failing = if round == last_round {
        consumer % 2 == 0
    } else {
        round % 2 == 0
    };
    let said_at =
        Timestamp::from(SystemTime::UNIX_EPOCH + Duration::from_secs(1_790_000_000 + step as u64));
    let (kind, body) = if failing {
        (
            EventKind::Failing,
            json!({"v": 1, "consumer": format!("c{consumer}"), "consumer_machine": "app-1",
                "provision": "postgres-database", "class": "refused", "error": "no",
                "since": "2026-10-05T00:04:00Z", "attempts": step, "said_at": said_at}),
        )
    } else {
        (
            EventKind::Recovered,
            json!({"v": 1, "consumer": format!("c{consumer}"), "consumer_machine": "app-1",
                "provision": "postgres-database", "reason": "success", "said_at": said_at}),
        )
    };
    let machine = Name::parse("db-1").unwrap();
    let module = Name::parse("postgres").unwrap();
    let event = Event::parse(kind, body.to_string().as_bytes()).unwrap();
    (event_subject(&machine, &module, kind), event)
}

/// What one controller taking every event leaves: for each consumer whose
/// newest event is `failing`, that event's step (`attempts`); for each whose
/// newest is `recovered`, no failing row and its recovered row of that step.
fn expected() -> (BTreeMap<String, i64>, BTreeMap<String, SystemTime>) {
    let mut failing = BTreeMap::new();
    let mut recovered = BTreeMap::new();
    for step in 0..EVENTS {
        let (_, event) = event_at(step);
        let body: Value = serde_json::from_slice(&event.to_json()).unwrap();
        let consumer = body["consumer"].as_str().unwrap().to_owned();
        match event {
            Event::Failing(_) => {
                recovered.remove(&consumer);
                failing.insert(consumer, step as i64);
            }
            _ => {
                failing.remove(&consumer);
                recovered.insert(consumer, event.said_at().system_time());
            }
        }
    }
    (failing, recovered)
}

struct World {
    dir: tempfile::TempDir,
    cluster: NatsCluster,
    store: PgCluster,
    store_url: String,
    /// The store for the test's own reads.
    conninfo: String,
}

impl World {
    fn start() -> World {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let mut modules = vec![
            json!({"module": "postgres", "machine": "db-1", "provides": ["postgres-database"]}),
        ];
        for c in 0..CONSUMERS {
            modules.push(json!({"module": format!("c{c}"), "machine": "app-1",
                "requires": [{"provision": "postgres-database", "from": "postgres@db-1"}]}));
        }
        std::fs::write(
            d.join("declaration.json"),
            json!({ "modules": modules }).to_string(),
        )
        .unwrap();
        std::fs::create_dir(d.join("credentials")).unwrap();
        let users = (0..CONSUMERS)
            .map(|c| format!("c{c}@app-1"))
            .chain(["postgres@db-1".to_owned(), "controller".to_owned()])
            .chain(mesh_test_support::mesh::grant_agents(std::iter::once(
                "app-1",
            )));
        for user in users {
            std::fs::write(d.join("credentials").join(&user), format!("pw-{user}")).unwrap();
        }
        // Rendered once, the same block on every member.
        let rendered = Command::new(binary("mesh-controller"))
            .arg("--declaration")
            .arg(d.join("declaration.json"))
            .args(["permissions", "--format", "nats", "--credentials"])
            .arg(d.join("credentials"))
            .output()
            .unwrap();
        assert!(
            rendered.status.success(),
            "{}",
            String::from_utf8_lossy(&rendered.stderr)
        );
        let config: Value = serde_json::from_slice(&rendered.stdout).unwrap();
        let cluster = NatsCluster::start_with_config(config);
        let store = PgCluster::start();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let conninfo = rt.block_on(store.create_database("mesh_store"));
        let store_url = format!("postgres://postgres@127.0.0.1:{}/mesh_store", store.port());
        World {
            dir,
            cluster,
            store,
            store_url,
            conninfo,
        }
    }

    fn controller(&self, name: &'static str) -> Process {
        let mut command = Command::new(binary("mesh-controller"));
        command
            .arg("--database")
            .arg(&self.store_url)
            .arg("--database-password-file")
            .arg(self.store.superuser_password_file())
            .args(["--nats", &self.cluster.urls(), "--nats-user", "controller"])
            .arg("--nats-password-file")
            .arg(self.dir.path().join("credentials/controller"))
            .args(["serve", "--stream-replicas", "3", "--batch", "16"]);
        let log = self.dir.path().join(format!("{name}.log"));
        // A restarted controller appends to a fresh file of its own.
        let log = if log.exists() {
            self.dir.path().join(format!("{name}-again.log"))
        } else {
            log
        };
        Process::spawn(name, command, log)
    }

    fn logs(&self, controllers: &[&Process]) -> String {
        let mut text = String::new();
        for p in controllers {
            text.push_str(&format!(
                "\n--- {} ---\n{}",
                p.name,
                tail(&p.log_text(), 30)
            ));
        }
        for i in 0..CLUSTER_SIZE {
            text.push_str(&format!(
                "\n--- nats {} ---\n{}",
                i + 1,
                tail(&self.cluster.log(i), 15)
            ));
        }
        text
    }
}

fn tail(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

fn wait_for(
    what: &str,
    within: Duration,
    mut done: impl FnMut() -> bool,
    logs: impl Fn() -> String,
) {
    let deadline = Instant::now() + within;
    while !done() {
        assert!(
            Instant::now() < deadline,
            "never {what} within {within:?}{}",
            logs()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The store's rows: failing consumer -> attempts, recovered consumer -> said_at.
async fn stored(conninfo: &str) -> (BTreeMap<String, i64>, BTreeMap<String, SystemTime>) {
    let (client, connection) = tokio_postgres::connect(conninfo, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    let failing = client
        .query("SELECT consumer, attempts FROM failing", &[])
        .await
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    let recovered = client
        .query("SELECT consumer, said_at FROM recovered", &[])
        .await
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    (failing, recovered)
}

#[test]
fn with_a_nats_server_and_a_controller_killed_mid_flow_the_store_ends_as_one_controller_leaves_it()
{
    let mut world = World::start();
    // Both at once on a fresh store: the migrations take turns.
    let mut a = world.controller("controller-a");
    let b = world.controller("controller-b");
    let following = |p: &Process| p.log_text().contains("following provider events");
    wait_for(
        "both controllers following",
        Duration::from_secs(60),
        || following(&a) && following(&b),
        || world.logs(&[&a, &b]),
    );
    for p in [&a, &b] {
        assert!(!p.log_text().contains("ERROR"), "{}", p.log_text());
    }

    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let _runtime = rt.enter();
    let outbox = Arc::new(Outbox::new());
    let nats = NatsArgs {
        url: world.cluster.urls(),
        user: Some("postgres@db-1".into()),
        password_file: Some(world.dir.path().join("credentials/postgres@db-1")),
        ..NatsArgs::default()
    };
    let provider = ModuleId {
        module: Name::parse("postgres").unwrap(),
        machine: Name::parse("db-1").unwrap(),
    };
    let client = rt.block_on(connect(&nats, &provider)).unwrap();
    rt.block_on(client.flush()).unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let publisher = rt.spawn(publish_loop(
        Arc::clone(&outbox),
        Arc::new(JetStreamSink::new(client.clone(), Duration::from_secs(1))),
        Duration::from_millis(200),
        async {
            let _ = stopped.await;
        },
    ));

    let started = Instant::now();
    let mut held_after_kill = 0;
    let mut killed_server = None;
    let mut a_killed = false;
    for step in 0..EVENTS {
        let (subject, event) = event_at(step);
        outbox.put(subject, &event);
        std::thread::sleep(EVERY);
        let at = started.elapsed();
        if killed_server.is_none() && at > Duration::from_secs(3) {
            // The server the provider is connected to dies.
            let index = world
                .cluster
                .member_on(client.server_info().port)
                .expect("the provider is connected to a member");
            world.cluster.kill(index);
            killed_server = Some((index, step));
        }
        if let Some((index, _)) = killed_server {
            held_after_kill = held_after_kill.max(outbox.len());
            if at > Duration::from_secs(7) && !world.cluster.is_running(index) {
                world.cluster.start_again(index);
            }
        }
        if !a_killed && at > Duration::from_secs(9) {
            a.kill();
            a_killed = true;
        }
        if a_killed && at > Duration::from_secs(12) && a.is_dead() {
            a = world.controller("controller-a");
        }
    }
    let (index, step) = killed_server.expect("a server was killed mid-flow");
    // The provider delivered every held event through another server.
    wait_for(
        "the provider's events all acknowledged",
        Duration::from_secs(60),
        || outbox.is_empty(),
        || world.logs(&[&a, &b]),
    );
    assert_ne!(
        world.cluster.member_on(client.server_info().port),
        Some(index),
        "the provider moved to another server when its own died"
    );
    eprintln!(
        "killed nats {} at event {step}; the provider held up to {held_after_kill} events meanwhile",
        index + 1
    );

    let (want_failing, want_recovered) = expected();
    let got: std::cell::RefCell<(BTreeMap<String, i64>, BTreeMap<String, SystemTime>)> =
        Default::default();
    // A killed controller's unacknowledged events come again after the ack wait (30 s).
    wait_for(
        "the store as one controller leaves it",
        Duration::from_secs(90),
        || {
            let now = rt.block_on(stored(&world.conninfo));
            let done = now.0 == want_failing
                && want_recovered
                    .iter()
                    .all(|(c, at)| now.1.get(c) == Some(at));
            *got.borrow_mut() = now;
            done
        },
        || format!("\nstore: {:#?}\n{}", got.borrow(), world.logs(&[&a, &b])),
    );
    let got = got.into_inner();
    assert_eq!(
        got.0.len(),
        CONSUMERS / 2,
        "every even consumer failing, with its newest event"
    );
    assert_eq!(want_recovered.len(), CONSUMERS / 2);
    for (consumer, at) in &want_recovered {
        assert!(
            !got.0.contains_key(consumer),
            "stale failing for {consumer}"
        );
        assert_eq!(
            got.1.get(consumer),
            Some(at),
            "newest recovered of {consumer}"
        );
    }
    assert!(
        following(&a),
        "the restarted controller follows again:\n{}",
        a.log_text()
    );
    let _ = stop.send(());
    rt.block_on(publisher).unwrap();
    for p in [&a, &b] {
        assert!(
            !p.log_text().contains("pw-controller"),
            "no secret in the log"
        );
    }
}
