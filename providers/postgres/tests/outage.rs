//! The kept administrator session survives a dropped connection; a stopped
//! server is a provider fault (`unreachable`) at once and makes consumers
//! `unreachable` once `failing_after` has passed, and its restart clears
//! the fault and makes them `recovered`. A Runner driven pass by pass (no
//! bus), one private cluster, real time with a short `failing_after`; and a
//! server that never answers, on the paused clock.

mod common;

use std::time::Duration;

use common::{kinds, provisioner, World};
use mesh_provider_postgres::PostgresProvisioner;
use mesh_sdk::testing::Settings;
use mesh_sdk::testing::StandingRules;
use mesh_sdk::Provisioner;
use mesh_test_support::{PgCluster, TcpProxy};
use tokio::time::Instant;

const FAILING_AFTER: Duration = Duration::from_secs(2);
const PASS_EVERY: Duration = Duration::from_millis(250);

async fn a_dropped_admin_session_is_made_again(pg: &PgCluster) {
    // The administrator reaches the server through a proxy that can cut it;
    // consumers are checked directly.
    let proxy = TcpProxy::start(format!("{}:{}", pg.host(), pg.port()).parse().unwrap()).await;
    let through_proxy = format!("postgres://postgres@127.0.0.1:{}/postgres", proxy.port());
    let password =
        mesh_sdk::Secret::from_file(&pg.superuser_password_file(), "admin password").unwrap();
    let config = mesh_provider_postgres::PostgresConfig::new(&through_proxy, Some(password))
        .unwrap()
        .with_consumer_address(None, Some(pg.port()))
        .unwrap();
    let mut w = World::new(
        PostgresProvisioner::new(config),
        &[("forge", "minted-forge-1"), ("wiki", "minted-wiki-1")],
        Settings::default(),
    );
    let report = w.pass().await;
    assert_eq!(
        report.failed,
        0,
        "{:?} {:?}",
        w.failure("forge"),
        w.failure("wiki")
    );
    let logins_before = admin_logins(pg);

    proxy.cut();
    proxy.open();
    // The next pass lists what it holds on a login of its own (every pass
    // does) and serves the consumers proven before without the kept
    // session; one that needs the administrator (its secret rotated, so
    // its password is set again) makes the kept session again, once, and
    // nobody fails.
    w.secret("forge", "minted-forge-2");
    let report = w.pass().await;
    assert_eq!(report.failed, 0, "{:?}", w.failure("forge"));
    assert_eq!(admin_logins(pg), logins_before + 1);
    w.pass().await;
    assert_eq!(
        admin_logins(pg),
        logins_before + 1,
        "the new session is kept"
    );
}

/// How many sessions the provider's administrator opened: each new one
/// looks up the marker role once (log_statement=all logs it).
fn admin_logins(pg: &PgCluster) -> usize {
    pg.log()
        .matches("FROM pg_roles WHERE rolname = 'mesh_provisioned'")
        .count()
}

#[tokio::test]
async fn the_admin_session_is_made_again_and_an_outage_is_said_then_recovered() {
    let mut pg = PgCluster::start();
    a_dropped_admin_session_is_made_again(&pg).await;
    a_stopped_server_is_unreachable_after_failing_after_and_its_restart_recovers(&mut pg).await;
}

async fn a_stopped_server_is_unreachable_after_failing_after_and_its_restart_recovers(
    pg: &mut PgCluster,
) {
    let settings = Settings {
        standing: StandingRules {
            failing_after: FAILING_AFTER,
            repeat_every: Duration::from_secs(3600),
        },
        ..Settings::default()
    };
    let mut w = World::new(
        provisioner(pg),
        &[("app", "minted-app-2"), ("blog", "minted-blog-2")],
        settings,
    );
    let report = w.pass().await;
    assert_eq!(report.failed, 0, "{:?}", w.failure("app"));
    w.published();

    pg.stop();
    let first_failure = Instant::now();
    let mut faults = Vec::new();
    let failing = loop {
        let report = w.pass().await;
        assert_eq!(report.failed, 2);
        let (alive, published): (Vec<_>, Vec<_>) = w
            .published()
            .into_iter()
            .partition(|(kind, _)| kind == "alive");
        faults.extend(alive.into_iter().map(|(_, body)| body["fault"].clone()));
        if !published.is_empty() {
            break published;
        }
        assert!(
            first_failure.elapsed() < FAILING_AFTER * 10,
            "failing never published: {:?}",
            w.failure("app")
        );
        tokio::time::sleep(PASS_EVERY).await;
    };
    assert!(
        first_failure.elapsed() >= FAILING_AFTER,
        "failing published before failing_after"
    );
    assert_eq!(
        kinds(&failing),
        vec!["failing:app:unreachable", "failing:blog:unreachable"]
    );
    let error = failing[0].1["error"].as_str().unwrap();
    assert!(
        error.contains("cannot log in as the administrator")
            && error.contains("Connection refused"),
        "{error}"
    );
    assert!(!error.contains(pg.superuser_password()));
    // The provider fault was published at once, on the first pass, not after
    // failing_after, and only once while it lasted.
    assert_eq!(faults.len(), 1, "{faults:?}");
    assert_eq!(faults[0]["class"], "unreachable", "{faults:?}");

    pg.start_again();
    let report = w.pass().await;
    assert_eq!(report.failed, 0, "{:?}", w.failure("app"));
    let published = w.published();
    assert_eq!(
        kinds(&published),
        vec!["alive::", "recovered:app:success", "recovered:blog:success"],
        "the fault's end is published at once too"
    );
    assert!(published
        .iter()
        .all(|(_, body)| body.get("fault").is_none()));
}

/// A server that accepts connections and never answers (a network black
/// hole): the login as the administrator waits for the connect timeout once,
/// and the consumers queued behind it fail at once with the same message,
/// rather than each waiting for the timeout in turn.
///
/// On tokio's paused clock: nothing but the connect timeout is awaited, so
/// the clock jumps to it and the test measures virtual time.
#[tokio::test(start_paused = true)]
async fn a_silent_server_costs_one_connect_timeout_not_one_per_consumer() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let silent = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            held.push(socket);
        }
    });
    let config = mesh_provider_postgres::PostgresConfig::new(
        &format!("postgres://postgres@127.0.0.1:{port}/postgres"),
        Some(mesh_sdk::Secret::new("unused-admin-pw")),
    )
    .unwrap()
    .with_consumer_address(None, None)
    .unwrap()
    .with_connect_timeout(Duration::from_secs(1));
    let names: Vec<String> = (0..40).map(|i| format!("c{i:02}")).collect();
    let consumers: Vec<(&str, &str)> = names.iter().map(|n| (n.as_str(), "minted")).collect();
    let mut w = World::new(
        PostgresProvisioner::new(config),
        &consumers,
        Settings::default(),
    );
    let start = Instant::now();
    let report = w.pass().await;
    let took = start.elapsed();
    assert_eq!(report.failed, 40);
    assert!(
        took >= Duration::from_secs(1) && took < Duration::from_secs(2),
        "the pass took {took:?}"
    );
    let expected = format!(
        "logging in as the administrator at postgres://postgres@127.0.0.1:{port}/postgres timed out after 1s"
    );
    for name in &names {
        assert_eq!(
            w.failure(name),
            Some(("unreachable".to_owned(), expected.clone())),
            "{name}"
        );
    }
    // A check against it ends at the connect timeout too: unreachable.
    let consumer = mesh_sdk::Consumer {
        provider: "postgres@db-1".parse().unwrap(),
        name: mesh_sdk::Name::parse("c00").unwrap(),
        machine: mesh_sdk::Name::parse("app-1").unwrap(),
        provision: "postgres-database".into(),
        secret_file: "unused".into(),
        options: serde_json::json!({}),
    };
    let p = w.runner.provisioner();
    let start = Instant::now();
    let error = p
        .check(&consumer, &mesh_sdk::Secret::new("minted"))
        .await
        .unwrap_err();
    assert_eq!(start.elapsed(), Duration::from_secs(1));
    assert_eq!(p.classify(&error), Some(mesh_sdk::Class::Unreachable));
    assert_eq!(
        error.to_string(),
        format!("logging in as c00 at 127.0.0.1:{port} timed out after 1s")
    );
    silent.abort();
}
