//! The link (`serve`) between a real nats-server (JetStream) and a real
//! PostgreSQL, the store reached through a TCP proxy the tests can cut.

use std::time::Duration;

use async_nats::jetstream::stream::{self as js_stream, RetentionPolicy};
use async_nats::jetstream::{self, consumer::pull};
use futures::StreamExt;
use mesh_controller::{consumer_config, serve, LinkError};
use mesh_controller::{NatsOptions, DURABLE, GRANT_SUBJECTS, STREAM, STREAM_SUBJECTS};
use mesh_pg_store::DatabaseOptions;
use mesh_runtime::Stop;
use mesh_status::link::{LinkSettings, LinkState, DEFAULT_STREAM_MAX_AGE};
use mesh_test_support::{NatsServer, PgCluster, TcpProxy};
use tokio::task::JoinHandle;

const WAIT: Duration = Duration::from_secs(30);
const SUBJECT: &str = "mesh.event.db-1.postgres.provisioner";

fn failing(consumer: &str, said_at: &str, attempts: u64) -> String {
    format!(
        r#"{{"v":1,"consumer":"{consumer}","consumer_machine":"app-1","provision":"postgres-database","class":"credentials-rejected","error":"password authentication failed","since":"2026-10-05T00:04:00Z","attempts":{attempts},"said_at":"{said_at}"}}"#
    )
}

fn recovered(consumer: &str, said_at: &str) -> String {
    format!(
        r#"{{"v":1,"consumer":"{consumer}","consumer_machine":"app-1","provision":"postgres-database","reason":"success","said_at":"{said_at}"}}"#
    )
}

struct World {
    nats: NatsServer,
    _pg: PgCluster,
    proxy: TcpProxy,
    admin: tokio_postgres::Client,
    database: DatabaseOptions,
    js: jetstream::Context,
}

struct Controller {
    stop: Stop,
    task: JoinHandle<Result<(), LinkError>>,
}

impl Controller {
    async fn stop(self) {
        self.stop.request();
        tokio::time::timeout(WAIT, self.task)
            .await
            .expect("serve stops within its pull wait")
            .unwrap()
            .unwrap();
    }
}

impl World {
    async fn start() -> World {
        let filter = tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| {
            tracing_subscriber::EnvFilter::new("mesh_controller=info,mesh_status=info")
        });
        let _ = tracing_subscriber::fmt()
            .with_env_filter(filter)
            .with_test_writer()
            .with_ansi(false)
            .try_init();
        let nats = NatsServer::start();
        let pg = PgCluster::start();
        let conninfo = pg.create_database("store").await;
        let (admin, connection) = tokio_postgres::connect(&conninfo, tokio_postgres::NoTls)
            .await
            .unwrap();
        tokio::spawn(connection);
        let proxy = TcpProxy::start(format!("127.0.0.1:{}", pg.port()).parse().unwrap()).await;
        let database = DatabaseOptions::new(
            &format!("postgres://postgres@127.0.0.1:{}/store", proxy.port()),
            Some(&pg.superuser_password_file()),
        )
        .unwrap();
        let client = async_nats::connect(nats.url()).await.unwrap();
        World {
            nats,
            _pg: pg,
            proxy,
            admin,
            database,
            js: jetstream::new(client),
        }
    }

    fn serve(&self, settings: LinkSettings) -> Controller {
        let stop = Stop::new();
        let database = self.database.clone();
        let nats = NatsOptions {
            url: self.nats.url(),
            ..NatsOptions::default()
        };
        let stopped = stop.clone();
        let task = tokio::spawn(async move {
            serve(&database, &nats, settings, &LinkState::new(), &stopped).await
        });
        Controller { stop, task }
    }

    /// Publishes through JetStream (waiting for the stream's ack); the stream
    /// must exist (the controller creates it).
    async fn publish(&self, subject: &str, body: String) {
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            let sent = match self
                .js
                .publish(subject.to_owned(), body.clone().into())
                .await
            {
                Ok(ack) => ack.await.map(|_| ()).map_err(|e| e.to_string()),
                Err(e) => Err(e.to_string()),
            };
            match sent {
                Ok(()) => return,
                Err(error) if tokio::time::Instant::now() < deadline => {
                    let _ = error;
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                Err(error) => panic!("publishing on {subject} failed: {error}"),
            }
        }
    }

    /// `consumer (attempts)` of every failing row of `module@machine`.
    async fn rows(&self, module: &str, machine: &str) -> Vec<String> {
        let rows = self
            .admin
            .query(
                "SELECT consumer, attempts FROM failing WHERE provider_module = $1 \
                 AND provider_machine = $2 ORDER BY consumer",
                &[&module, &machine],
            )
            .await;
        match rows {
            Ok(rows) => rows
                .iter()
                .map(|r| format!("{} ({})", r.get::<_, String>(0), r.get::<_, i64>(1)))
                .collect(),
            // Not migrated yet.
            Err(_) => Vec::new(),
        }
    }

    async fn wait_rows(&self, module: &str, machine: &str, expected: &[&str], what: &str) {
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            let rows = self.rows(module, machine).await;
            if rows == expected {
                return;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "{what}: rows of {module}@{machine} are {rows:?}, expected {expected:?}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    async fn consumer_info(&self) -> jetstream::consumer::Info {
        let stream = self.js.get_stream(STREAM).await.unwrap();
        let mut consumer: jetstream::consumer::Consumer<pull::Config> =
            stream.get_consumer(DURABLE).await.unwrap();
        consumer.info().await.unwrap().clone()
    }

    /// Waits until the consumer has nothing pending nor unacknowledged.
    async fn wait_drained(&self, what: &str) {
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            let info = self.consumer_info().await;
            if info.num_pending == 0 && info.num_ack_pending == 0 {
                return;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "{what}: consumer not drained: {info:?}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    async fn wait_stream(&self) {
        let deadline = tokio::time::Instant::now() + WAIT;
        while self.js.get_stream(STREAM).await.is_err() {
            assert!(tokio::time::Instant::now() < deadline, "no stream created");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

fn quick() -> LinkSettings {
    LinkSettings {
        wait: Duration::from_millis(500),
        nak_first: Duration::from_millis(100),
        nak_max: Duration::from_millis(800),
        ..LinkSettings::default()
    }
}

#[tokio::test]
async fn the_link_follows_events_into_the_store() {
    let world = World::start().await;
    let controller = world.serve(quick());
    world.wait_stream().await;
    let f = |kind: &str| format!("{SUBJECT}.{kind}");

    // Failing stored, the newest kept, recovered removes only its own row.
    world
        .publish(&f("failing"), failing("forge", "2026-10-05T00:09:00Z", 61))
        .await;
    world
        .publish(&f("failing"), failing("wiki", "2026-10-05T00:09:00Z", 5))
        .await;
    world
        .wait_rows(
            "postgres",
            "db-1",
            &["forge (61)", "wiki (5)"],
            "failing stored",
        )
        .await;
    // Events are ordered by the stream, never by the provider's clock: an
    // event stamped earlier (its clock stepped back) but later in the stream
    // replaces the stored one.
    world
        .publish(&f("failing"), failing("forge", "2026-10-05T00:08:00Z", 50))
        .await;
    world
        .publish(&f("failing"), failing("wiki", "2026-10-05T00:10:00Z", 6))
        .await;
    world
        .wait_rows(
            "postgres",
            "db-1",
            &["forge (50)", "wiki (6)"],
            "the later in the stream kept",
        )
        .await;
    world
        .publish(&f("recovered"), recovered("forge", "2026-10-05T00:11:00Z"))
        .await;
    world
        .wait_rows(
            "postgres",
            "db-1",
            &["wiki (6)"],
            "recovered removes its own row",
        )
        .await;
    // A recovered stamped before the stored failing still ends it.
    world
        .publish(&f("recovered"), recovered("wiki", "2026-10-05T00:09:30Z"))
        .await;
    world
        .wait_rows(
            "postgres",
            "db-1",
            &[],
            "a recovered from a clock stepped back",
        )
        .await;
    // A failing stamped in 2096 pins nothing: the next recovered ends it.
    world
        .publish(&f("failing"), failing("wiki", "2096-01-01T00:00:00Z", 7))
        .await;
    world
        .wait_rows(
            "postgres",
            "db-1",
            &["wiki (7)"],
            "an event from the future",
        )
        .await;
    world
        .publish(&f("recovered"), recovered("wiki", "2026-10-05T00:12:00Z"))
        .await;
    world
        .wait_rows(
            "postgres",
            "db-1",
            &[],
            "an event from the future pins nothing",
        )
        .await;
    // wiki fails again.
    world
        .publish(&f("failing"), failing("wiki", "2026-10-05T00:13:00Z", 8))
        .await;
    world
        .wait_rows("postgres", "db-1", &["wiki (8)"], "failing again")
        .await;

    // A body claiming another emitter is stored under the subject's emitter.
    let claimed = failing("gitea", "2026-10-05T00:09:00Z", 3).replacen(
        r#""v":1,"#,
        r#""v":1,"module":"identity","machine":"id-1","#,
        1,
    );
    world
        .publish("mesh.event.db-2.postgres.provisioner.failing", claimed)
        .await;
    world
        .wait_rows(
            "postgres",
            "db-2",
            &["gitea (3)"],
            "stored under the subject's emitter",
        )
        .await;
    assert!(world.rows("identity", "id-1").await.is_empty());

    // Malformed messages are terminated and do not block the next event.
    world.publish(&f("failing"), "not json".into()).await;
    world
        .publish(&f("recovered"), failing("forge", "2026-10-05T00:09:00Z", 1))
        .await;
    world
        .publish(&f("bogus"), failing("forge", "2026-10-05T00:09:00Z", 1))
        .await;
    world
        .publish(
            "mesh.event.DB-1.postgres.provisioner.failing",
            failing("forge", "2026-10-05T00:09:00Z", 1),
        )
        .await;
    world
        .publish(&f("failing"), failing("after", "2026-10-05T00:12:00Z", 1))
        .await;
    world
        .wait_rows(
            "postgres",
            "db-1",
            &["after (1)", "wiki (8)"],
            "next event after malformed ones",
        )
        .await;
    world.wait_drained("malformed messages terminated").await;

    // Events sent while the controller is stopped are applied after it
    // starts again (here taking one message at a time: the consumer is updated).
    controller.stop().await;
    world
        .publish(
            &f("failing"),
            failing("while-down", "2026-10-05T00:13:00Z", 2),
        )
        .await;
    world
        .publish(&f("recovered"), recovered("after", "2026-10-05T00:13:00Z"))
        .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        world.rows("postgres", "db-1").await,
        ["after (1)", "wiki (8)"],
        "nothing applied while stopped"
    );
    let controller = world.serve(LinkSettings {
        batch: 1,
        ..quick()
    });
    world
        .wait_rows(
            "postgres",
            "db-1",
            &["while-down (2)", "wiki (8)"],
            "applied after the restart",
        )
        .await;
    assert_eq!(world.consumer_info().await.config.max_ack_pending, 1);

    // The consumer deleted under the running controller: it is set up again,
    // what the stream still holds is delivered again and changes nothing
    // stored, and new events flow.
    world
        .js
        .get_stream(STREAM)
        .await
        .unwrap()
        .delete_consumer(DURABLE)
        .await
        .unwrap();
    world
        .publish(
            &f("failing"),
            failing("after-setup", "2026-10-05T00:14:00Z", 3),
        )
        .await;
    world
        .wait_rows(
            "postgres",
            "db-1",
            &["after-setup (3)", "while-down (2)", "wiki (8)"],
            "events flow again after the consumer was set up again",
        )
        .await;
    world.wait_drained("the stream delivered again").await;
    assert_eq!(
        world.rows("postgres", "db-1").await,
        ["after-setup (3)", "while-down (2)", "wiki (8)"],
        "delivering the stream again changes nothing"
    );

    // The stream is bounded: an event is gone once the controller took it.
    let mut stream = world.js.get_stream(STREAM).await.unwrap();
    let info = stream.info().await.unwrap();
    assert_eq!(info.config.retention, RetentionPolicy::WorkQueue);
    assert_eq!(info.config.max_age, DEFAULT_STREAM_MAX_AGE);
    assert_eq!(info.state.messages, 0, "acknowledged events are removed");
    controller.stop().await;
}

#[tokio::test]
async fn a_recovery_sent_while_the_store_is_away_lands_when_it_returns() {
    let world = World::start().await;
    let controller = world.serve(quick());
    world.wait_stream().await;
    let f = |kind: &str| format!("{SUBJECT}.{kind}");

    world
        .publish(&f("failing"), failing("forge", "2026-10-05T00:09:00Z", 61))
        .await;
    world
        .wait_rows("postgres", "db-1", &["forge (61)"], "failing stored")
        .await;

    // Cut the store mid-stream: the recovery is held, not dropped.
    world.proxy.cut();
    world
        .publish(&f("recovered"), recovered("forge", "2026-10-05T00:10:00Z"))
        .await;
    world
        .publish(&f("failing"), failing("wiki", "2026-10-05T00:10:00Z", 2))
        .await;
    let deadline = tokio::time::Instant::now() + WAIT;
    while world.consumer_info().await.num_redelivered == 0 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the held events were never NAKed and delivered again"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(
        world.rows("postgres", "db-1").await,
        ["forge (61)"],
        "nothing applied while the store is away"
    );
    let info = world.consumer_info().await;
    assert!(
        info.num_ack_pending + info.num_pending as usize >= 2,
        "the events are still held by JetStream: {info:?}"
    );

    world.proxy.open();
    world
        .wait_rows(
            "postgres",
            "db-1",
            &["wiki (2)"],
            "the recovery landed after the store returned",
        )
        .await;
    world.wait_drained("everything acknowledged").await;
    controller.stop().await;
}

/// What the store records of the one `serve` instance, in one snapshot:
/// (caught up since `since`, committed a round since `since`, wiki stored).
async fn recorded(
    admin: &tokio_postgres::Client,
    since: std::time::SystemTime,
) -> (bool, bool, bool) {
    let row = admin
        .query_one(
            "SELECT coalesce(max(pulled_at) > $1, false), coalesce(max(applied_at) > $1, false),
                    EXISTS (SELECT 1 FROM failing WHERE consumer = 'wiki'),
                    count(*), min(pid)
             FROM controller_instance",
            &[&since],
        )
        .await
        .unwrap();
    // None yet: `serve` records itself after its first round (and, after a
    // short pull, once it asked the consumer whether delivery waits).
    let instances = row.get::<_, i64>(3);
    assert!(instances <= 1, "one instance recorded, not {instances}");
    if instances == 1 {
        let pid: Option<i64> = row.get(4);
        assert_eq!(pid, Some(i64::from(std::process::id())));
    }
    (row.get(0), row.get(1), row.get(2))
}

/// The store's clock.
async fn store_now(admin: &tokio_postgres::Client) -> std::time::SystemTime {
    admin.query_one("SELECT now()", &[]).await.unwrap().get(0)
}

/// `serve` records when it last caught up with the stream (for `status`):
/// while events are held for a store that is away it is not caught up, and
/// after the store returns it says it is only once they are stored, so
/// `status` never reads the gap as providers' silence.
#[tokio::test]
async fn serve_records_it_caught_up_only_once_the_events_held_for_the_store_are_stored() {
    let world = World::start().await;
    let controller = world.serve(quick());
    world.wait_stream().await;
    let f = |kind: &str| format!("{SUBJECT}.{kind}");
    world
        .publish(&f("failing"), failing("forge", "2026-10-05T00:09:00Z", 61))
        .await;
    world
        .wait_rows("postgres", "db-1", &["forge (61)"], "failing stored")
        .await;
    let (look, store_now) = (recorded, store_now);
    let admin = &world.admin;
    // Idle and caught up: it says so every pull (at most every half wait).
    let before = store_now(admin).await;
    let deadline = tokio::time::Instant::now() + WAIT;
    while !look(admin, before).await.0 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "never recorded a catch-up"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    world.proxy.cut();
    world
        .publish(&f("failing"), failing("wiki", "2026-10-05T00:10:00Z", 2))
        .await;
    let deadline = tokio::time::Instant::now() + WAIT;
    while world.consumer_info().await.num_redelivered == 0 {
        assert!(tokio::time::Instant::now() < deadline, "never NAKed");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let opened = store_now(admin).await;
    world.proxy.open();
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let (caught_up, applied, wiki) = look(admin, opened).await;
        assert!(
            !caught_up || wiki,
            "recorded caught up after the store returned while wiki's event was still held"
        );
        if caught_up && applied && wiki {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "never caught up again"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    controller.stop().await;
}

/// A stream of that name made by another program with settings `serve`
/// cannot change in place (limits retention: every message kept) ends `serve`
/// with an error naming them and what to do; the stream and its events are
/// left as they are, nothing is applied from it.
#[tokio::test]
async fn a_stream_serve_cannot_update_ends_it_and_is_left_as_it_is() {
    let world = World::start().await;
    world
        .js
        .create_stream(js_stream::Config {
            name: STREAM.to_owned(),
            subjects: vec![STREAM_SUBJECTS.to_owned()],
            storage: js_stream::StorageType::File,
            ..Default::default()
        })
        .await
        .unwrap();
    let f = format!("{SUBJECT}.failing");
    for (consumer, attempts) in [("kept-1", 1), ("kept-2", 2)] {
        world
            .publish(&f, failing(consumer, "2026-10-05T00:09:00Z", attempts))
            .await;
    }

    let controller = world.serve(quick());
    let ended = tokio::time::timeout(WAIT, controller.task)
        .await
        .expect("serve ends instead of waiting for a stream it cannot change")
        .unwrap();
    let error = ended.expect_err("serve ends with an error").to_string();
    assert!(
        error.contains("stream MESH_EVENTS exists with limits retention")
            && error.contains("work-queue retention")
            && error.contains("administrator's credentials"),
        "{error}"
    );
    let mut stream = world.js.get_stream(STREAM).await.unwrap();
    let info = stream.info().await.unwrap();
    assert_eq!(info.config.retention, RetentionPolicy::Limits);
    assert!(!info.config.sealed);
    assert_eq!(info.state.messages, 2, "its events are left in it");
    assert_eq!(
        world.rows("postgres", "db-1").await,
        Vec::<String>::new(),
        "nothing was applied from it"
    );
}

/// How long the bus is away in the readiness test: several of serve's
/// 2-s pull waits, each of which may end in an error, an expired pull or
/// a consumer looked up in vain. (The loop's own timing over a 60-s
/// outage runs on the paused clock in `mesh_status::link`'s tests.)
const BUS_AWAY: Duration = Duration::from_secs(10);

/// Polls `/readyz` from `since` until it is not 200; asserts that took at
/// most 5 s; returns its answer.
async fn until_not_ready<F, Fut>(get: &F, since: tokio::time::Instant) -> (u16, String)
where
    F: Fn(&str) -> Fut,
    Fut: std::future::Future<Output = (u16, String)>,
{
    loop {
        let answer = get("/readyz").await;
        if answer.0 != 200 {
            assert!(
                since.elapsed() <= Duration::from_secs(5),
                "/readyz said not ready only {:?} after: {}",
                since.elapsed(),
                answer.1
            );
            return answer;
        }
        assert!(
            since.elapsed() <= Duration::from_secs(5),
            "/readyz still ready {:?} after: {}",
            since.elapsed(),
            answer.1
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// `mesh-controller serve --metrics-listen` (the binary, JSON logs): its
/// metrics scraped with a real HTTP client and parsed by a Prometheus text
/// parser, `/readyz` and `/healthz` answering, the summary gauges read from
/// the store with the declaration, and every log line one JSON object.
#[tokio::test]
async fn serve_shows_its_metrics_health_and_readiness() {
    let mut world = World::start().await;
    let dir = tempfile::tempdir().unwrap();
    let declaration = dir.path().join("declaration.json");
    std::fs::write(
        &declaration,
        r#"{"modules":[{"module":"postgres","machine":"db-1","provides":["postgres-database"]},
                      {"module":"identity","machine":"id-1","provides":["oidc-client"]}]}"#,
    )
    .unwrap();
    let port = mesh_test_support::free_port();
    let stderr = dir.path().join("stderr");
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_mesh-controller"))
        .args(["--log-format", "json"])
        .args([
            "--database",
            &format!("postgres://postgres@127.0.0.1:{}/store", world.proxy.port()),
        ])
        .arg("--database-password-file")
        .arg(world._pg.superuser_password_file())
        .arg("--declaration")
        .arg(&declaration)
        .args(["--nats", &world.nats.url()])
        .args(["serve", "--metrics-listen", &format!("127.0.0.1:{port}")])
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(&stderr).unwrap())
        .spawn()
        .unwrap();
    let _ = rustls::crypto::ring::default_provider().install_default();
    let http = reqwest::Client::new();
    let get = |path: &str| {
        let request = http.get(format!("http://127.0.0.1:{port}{path}")).send();
        async move {
            match request.await {
                Ok(r) => (r.status().as_u16(), r.text().await.unwrap()),
                Err(_) => (0, String::new()),
            }
        }
    };
    let metrics = |text: String| -> std::collections::HashMap<String, f64> {
        let lines = text.lines().map(|l| Ok(l.to_owned()));
        prometheus_parse::Scrape::parse(lines)
            .expect("Prometheus text")
            .samples
            .into_iter()
            .filter_map(|s| {
                let labels: Vec<String> =
                    s.labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
                match s.value {
                    prometheus_parse::Value::Counter(v)
                    | prometheus_parse::Value::Gauge(v)
                    | prometheus_parse::Value::Untyped(v) => {
                        Some((format!("{}{{{}}}", s.metric, labels.join(",")), v))
                    }
                    _ => None,
                }
            })
            .collect()
    };
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        if get("/readyz").await.0 == 200 {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "serve never ready: {}",
            std::fs::read_to_string(&stderr).unwrap_or_default()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let (status, health) = get("/healthz").await;
    assert_eq!(status, 200, "{health}");

    world.wait_stream().await;
    world
        .publish(
            &format!("{SUBJECT}.failing"),
            failing("forge", "2026-10-05T00:09:00Z", 61),
        )
        .await;
    world
        .wait_rows("postgres", "db-1", &["forge (61)"], "stored by the binary")
        .await;
    // The counters move once the round's commit has returned to serve: a
    // moment after the row can be read (seen once in CI).
    let deadline = tokio::time::Instant::now() + WAIT;
    let m = loop {
        let m = metrics(get("/metrics").await.1);
        if m["mesh_events_applied_total{kind=failing}"] >= 1.0
            || tokio::time::Instant::now() >= deadline
        {
            break m;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(m["mesh_events_applied_total{kind=failing}"], 1.0, "{m:?}");
    assert_eq!(m["mesh_events_applied_total{kind=recovered}"], 0.0);
    // The name before 0.2.0 is there too, one release, with the same values.
    assert_eq!(m["mesh_words_applied_total{kind=failing}"], 1.0, "{m:?}");
    assert_eq!(m["mesh_words_applied_total{kind=recovered}"], 0.0);
    assert!(m["mesh_batches_total{}"] >= 1.0);
    assert_eq!(m["mesh_store_errors_total{}"], 0.0);
    assert!(m.contains_key("mesh_stream_lag_messages{}"), "{m:?}");
    // The summary read from the store (every 15 s, every second until it
    // first answers): forge is listed, and nobody said alive, so both
    // providers are unheard.
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let m = metrics(get("/metrics").await.1);
        if m["mesh_providers_unheard{}"] == 2.0 && m["mesh_standings_failing{}"] == 1.0 {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "{m:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // It caught up with the stream (every event stored), seconds ago.
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    let m = metrics(get("/metrics").await.1);
    let caught_up = m["mesh_caught_up_timestamp_seconds{}"];
    assert!((now - caught_up).abs() < 30.0, "{caught_up} against {now}");

    // The bus away (issue 31): /readyz fails within 5 s, /healthz stays
    // true (the loops turn; a restart would not help), and no line says
    // pulling works again while nats-server is down. Once it is back, the
    // line comes once and /readyz is true again.
    let said = || std::fs::read_to_string(&stderr).unwrap_or_default();
    let works_again = |text: &str| text.matches("pulling events works again").count();
    assert_eq!(works_again(&said()), 0, "{}", said());
    world.nats.stop();
    let away = tokio::time::Instant::now();
    let (status, ready) = until_not_ready(&get, away).await;
    assert_eq!(status, 503, "{ready}");
    assert!(ready.contains("bus"), "{ready}");
    while away.elapsed() < BUS_AWAY {
        let (status, health) = get("/healthz").await;
        assert_eq!(status, 200, "healthy while the bus is away: {health}");
        assert_eq!(
            get("/readyz").await.0,
            503,
            "not ready while the bus is away"
        );
        assert_eq!(works_again(&said()), 0, "while the bus is away: {}", said());
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    world.nats.start_again();
    // A pull waiting when the server shut down failed (`409 Server
    // Shutdown`): that is said once, and once pulling works again. (With
    // no pull waiting at that moment neither is said.)
    let failed = || said().matches("cannot pull events; trying again").count();
    let deadline = tokio::time::Instant::now() + WAIT;
    while get("/readyz").await.0 != 200 || works_again(&said()) != failed() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "never ready again with pulling working: {}",
            said()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(failed() <= 1, "one outage, said once: {}", said());
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(works_again(&said()), failed(), "said once: {}", said());
    assert_eq!(get("/healthz").await.0, 200);

    // The store away: /readyz fails within 5 s though no event comes (an
    // active check), and is true again once it is back.
    world.proxy.cut();
    let (status, ready) = until_not_ready(&get, tokio::time::Instant::now()).await;
    assert_eq!(status, 503, "{ready}");
    assert!(ready.contains("store"), "{ready}");
    assert_eq!(
        get("/healthz").await.0,
        200,
        "healthy while the store is away"
    );
    world.proxy.open();
    let deadline = tokio::time::Instant::now() + WAIT;
    while get("/readyz").await.0 != 200 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "never ready again: {}",
            said()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    let status = tokio::time::timeout(WAIT, async {
        loop {
            if let Some(status) = child.try_wait().unwrap() {
                return status;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
    .expect("serve stops on SIGTERM");
    let said = std::fs::read_to_string(&stderr).unwrap();
    assert!(status.success(), "{said}");
    for line in said.lines() {
        let line: serde_json::Value =
            serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: not JSON: {line}"));
        assert!(
            line.get("level").is_some() && line.get("message").is_some(),
            "{line}"
        );
    }
    assert!(said.contains("following provider events"), "{said}");
    assert!(!said.contains(world._pg.superuser_password()), "{said}");
}

/// A store that refuses the login (wrong password) or has no such database
/// ends `serve` at once with the server's reason, instead of waiting
/// forever; the password is never in the message.
#[tokio::test]
async fn serve_ends_at_once_when_the_store_refuses_the_login() {
    let world = World::start().await;
    let dir = tempfile::tempdir().unwrap();
    let wrong = dir.path().join("wrong");
    std::fs::write(&wrong, "Wrong-Pw-31").unwrap();
    let port = world.proxy.port();
    let cases = [
        (
            format!("postgres://postgres@127.0.0.1:{port}/store"),
            Some(wrong.as_path()),
            "password authentication failed for user \"postgres\" (28P01)",
        ),
        (
            format!("postgres://postgres@127.0.0.1:{port}/nowhere"),
            None,
            "database \"nowhere\" does not exist (3D000)",
        ),
    ];
    for (url, password, says) in cases {
        let password = password
            .map(std::path::Path::to_path_buf)
            .unwrap_or_else(|| world._pg.superuser_password_file());
        let database = DatabaseOptions::new(&url, Some(&password)).unwrap();
        let nats = NatsOptions {
            url: world.nats.url(),
            ..NatsOptions::default()
        };
        let ended = tokio::time::timeout(
            Duration::from_secs(20),
            serve(&database, &nats, quick(), &LinkState::new(), &Stop::new()),
        )
        .await
        .expect("serve ends instead of waiting for the store");
        let error = ended.unwrap_err();
        assert!(matches!(error, LinkError::Store(_)), "{error}");
        let message = error.to_string();
        assert!(message.contains(says), "{message}");
        assert!(!message.contains("Wrong-Pw-31"), "{message}");
    }
}

/// A grant event of `mesh-grants` (docs/contracts/grants.md).
fn unreachable_grant(failures: u64) -> String {
    format!(
        r#"{{"v":1,"provision":"postgres-database","from":"postgres@db-1","address":"10.10.0.1","port":6852,"failures":{failures},"failing_since":"2026-10-05T00:04:00Z","last_reachable_at":null,"error":"connect timed out after 3s","said_at":"2026-10-05T00:05:00Z"}}"#
    )
}

/// The stream and the durable consumer as the controller before grants made
/// them (bounded stream of provider events only, durable filtered on them)
/// are updated in place by this one: the stream takes grant events too, the
/// durable loses its filter, every event the old durable had not
/// acknowledged (pending, and delivered but never acknowledged) lands, and
/// grant events flow. (nats-server 2.9 takes the filter change in place.)
#[tokio::test]
async fn a_stream_and_durable_made_before_grants_take_grant_events_without_losing_one() {
    let world = World::start().await;
    let settings = LinkSettings {
        ack_wait: Duration::from_secs(2),
        ..quick()
    };
    // What the previous version made.
    world
        .js
        .create_stream(js_stream::Config {
            name: STREAM.to_owned(),
            description: Some("mesh provider events (created by mesh-controller)".to_owned()),
            subjects: vec![STREAM_SUBJECTS.to_owned()],
            storage: js_stream::StorageType::File,
            retention: RetentionPolicy::WorkQueue,
            max_age: DEFAULT_STREAM_MAX_AGE,
            ..Default::default()
        })
        .await
        .unwrap();
    let old_durable = pull::Config {
        filter_subject: STREAM_SUBJECTS.to_owned(),
        ..consumer_config(&settings)
    };
    let consumer = world
        .js
        .get_stream(STREAM)
        .await
        .unwrap()
        .create_consumer(old_durable)
        .await
        .unwrap();
    let f = format!("{SUBJECT}.failing");
    for (consumer, attempts) in [("taken", 1), ("in-flight", 2), ("left-1", 3), ("left-2", 4)] {
        world
            .publish(&f, failing(consumer, "2026-10-05T00:09:00Z", attempts))
            .await;
    }
    // The previous controller stored (elsewhere) and acknowledged the first,
    // and was killed while holding the second, never acknowledged.
    let mut taken = consumer.fetch().max_messages(2).messages().await.unwrap();
    taken
        .next()
        .await
        .unwrap()
        .unwrap()
        .double_ack()
        .await
        .unwrap();
    let in_flight = taken.next().await.unwrap().unwrap();
    assert_eq!(in_flight.info().unwrap().stream_sequence, 2);
    drop(taken);
    let old = world.consumer_info().await;
    assert_eq!((old.num_pending, old.num_ack_pending), (2, 1), "{old:?}");
    // A grant event said before the upgrade is refused: no stream takes it.
    let grant = "mesh.event.app-1.forge.grant.unreachable";
    let refused = match world.js.publish(grant, unreachable_grant(3).into()).await {
        Ok(ack) => ack.await.is_err(),
        Err(_) => true,
    };
    assert!(refused, "the old stream has no grant subject");

    let controller = world.serve(settings);
    world
        .wait_rows(
            "postgres",
            "db-1",
            &["in-flight (2)", "left-1 (3)", "left-2 (4)"],
            "every event the old durable had not acknowledged is stored",
        )
        .await;
    let mut stream = world.js.get_stream(STREAM).await.unwrap();
    let info = stream.info().await.unwrap().clone();
    assert_eq!(
        info.config.subjects,
        [STREAM_SUBJECTS, GRANT_SUBJECTS],
        "the stream takes grant events"
    );
    assert_eq!(info.config.retention, RetentionPolicy::WorkQueue);
    let durable = world.consumer_info().await;
    assert_eq!(durable.config.filter_subject, "", "{durable:?}");
    // nats-server 2.9 changes a durable's filter in place: the same durable.
    assert_eq!(durable.created, old.created, "updated, not made again");

    world.publish(grant, unreachable_grant(4)).await;
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let rows = world
            .admin
            .query(
                "SELECT kind, failures FROM grant_event WHERE machine = 'app-1' AND consumer = 'forge'",
                &[],
            )
            .await
            .unwrap();
        if let [row] = &rows[..] {
            assert_eq!(row.get::<_, String>(0), "unreachable");
            assert_eq!(row.get::<_, i64>(1), 4);
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the grant event never reached the store: {rows:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    world
        .publish(&f, failing("after", "2026-10-05T00:10:00Z", 5))
        .await;
    world
        .wait_rows(
            "postgres",
            "db-1",
            &["after (5)", "in-flight (2)", "left-1 (3)", "left-2 (4)"],
            "provider events still flow",
        )
        .await;
    world.wait_drained("the upgraded durable").await;
    controller.stop().await;
}
