//! The test support against the real servers.

use std::time::Duration;

use mesh_test_support::{create_events_stream, NatsServer, PgCluster, TcpProxy};
use tokio_postgres::error::SqlState;

/// A bound for every network step, so a hang fails instead of blocking.
const STEP: Duration = Duration::from_secs(20);

async fn bounded<F: std::future::Future>(what: &str, future: F) -> F::Output {
    tokio::time::timeout(STEP, future)
        .await
        .unwrap_or_else(|_| panic!("{what} took longer than {STEP:?}"))
}

#[tokio::test]
async fn nats_jetstream_survives_a_restart() {
    let mut nats = NatsServer::start();
    assert!(nats.is_running());
    assert_eq!(nats.url(), format!("nats://127.0.0.1:{}", nats.port()));
    let port = nats.port();

    let client = bounded("connect", async_nats::connect(nats.url()))
        .await
        .unwrap();
    let stream = bounded("create stream", create_events_stream(&client)).await;
    assert_eq!(stream.cached_info().config.name, "MESH_EVENTS");
    let jetstream = async_nats::jetstream::new(client.clone());
    let ack = bounded("publish", async {
        jetstream
            .publish("mesh.event.t1.r1.provisioner.ready", "hello".into())
            .await
            .unwrap()
            .await
            .unwrap()
    })
    .await;
    assert_eq!(ack.stream, "MESH_EVENTS");
    assert_eq!(ack.sequence, 1);
    drop(client);

    nats.stop();
    assert!(!nats.is_running());
    nats.start_again();
    assert!(nats.is_running());
    assert_eq!(nats.port(), port);

    let client = bounded("reconnect", async_nats::connect(nats.url()))
        .await
        .unwrap();
    // Getting the existing stream, with the message kept on file.
    let stream = bounded("get stream", create_events_stream(&client)).await;
    let info = bounded("stream info", stream.get_info()).await.unwrap();
    assert_eq!(info.state.messages, 1);
    assert!(nats.log().contains("Server is ready"));
}

#[tokio::test]
async fn nats_config_with_users() {
    let nats = NatsServer::start_with_config(serde_json::json!({
        "authorization": {
            "users": [
                {"user": "a", "password": "p", "permissions": {"publish": {"allow": ["x.>"]}}}
            ]
        }
    }));

    let anonymous = bounded("anonymous connect", async_nats::connect(nats.url())).await;
    assert!(anonymous.is_err(), "a client without credentials got in");

    let client = bounded(
        "connect as a",
        async_nats::ConnectOptions::with_user_and_password("a".into(), "p".into())
            .connect(nats.url()),
    )
    .await
    .unwrap();
    client.publish("x.y", "allowed".into()).await.unwrap();
    bounded("flush", client.flush()).await.unwrap();
}

/// Asserts that `pg` refuses its superuser with `password`.
async fn assert_password_refused(pg: &PgCluster, password: &str) {
    let conninfo = format!(
        "host=127.0.0.1 port={} user=postgres password={password} dbname=postgres",
        pg.port()
    );
    let error = bounded(
        "a wrong password",
        tokio_postgres::connect(&conninfo, tokio_postgres::NoTls),
    )
    .await
    .err()
    .expect("a wrong password was accepted");
    assert_eq!(error.code(), Some(&SqlState::INVALID_PASSWORD), "{error}");
}

#[tokio::test]
async fn pg_cluster_auth_restart_and_log() {
    let mut pg = PgCluster::start();
    assert_eq!(pg.host(), "127.0.0.1");
    assert_eq!(pg.superuser(), "postgres");
    assert_eq!(
        pg.admin_url(),
        format!("postgres://postgres@127.0.0.1:{}/postgres", pg.port())
    );
    assert_eq!(
        std::fs::read_to_string(pg.superuser_password_file()).unwrap(),
        pg.superuser_password()
    );

    let admin = bounded("connect admin", pg.connect_admin()).await;
    bounded(
        "create table",
        admin.batch_execute("CREATE TABLE kept (x int); INSERT INTO kept VALUES (42)"),
    )
    .await
    .unwrap();

    assert_password_refused(&pg, "wrong").await;

    let conninfo = bounded("create database", pg.create_database("store test")).await;
    let (store, connection) = bounded(
        "connect to the new database",
        tokio_postgres::connect(&conninfo, tokio_postgres::NoTls),
    )
    .await
    .unwrap();
    tokio::spawn(connection);
    let row = bounded(
        "current_database",
        store.query_one("SELECT current_database()", &[]),
    )
    .await
    .unwrap();
    assert_eq!(row.get::<_, String>(0), "store test");
    drop(store);
    drop(admin);

    assert!(pg.log().contains("CREATE TABLE kept"), "{}", pg.log());

    pg.stop();
    assert!(!pg.is_running());
    pg.start_again();
    assert!(pg.is_running());
    let admin = bounded("reconnect admin", pg.connect_admin()).await;
    let row = bounded("select", admin.query_one("SELECT x FROM kept", &[]))
        .await
        .unwrap();
    assert_eq!(row.get::<_, i32>(0), 42);
}

/// Under `scripts/test` every cluster is a copy of the run's template
/// (`MESH_PG_TEMPLATE`): each still has a password of its own, refuses
/// another's, and keeps its own data.
#[tokio::test]
async fn two_clusters_keep_their_own_password_and_data() {
    let (one, two) = (PgCluster::start(), PgCluster::start());
    assert_ne!(one.superuser_password(), two.superuser_password());
    assert_password_refused(&one, two.superuser_password()).await;

    let first = bounded("connect to one", one.connect_admin()).await;
    bounded(
        "create table",
        first.batch_execute("CREATE TABLE only_here (x int)"),
    )
    .await
    .unwrap();
    let second = bounded("connect to two", two.connect_admin()).await;
    let there = bounded(
        "look for the table",
        second.query_one("SELECT to_regclass('only_here') IS NOT NULL", &[]),
    )
    .await
    .unwrap();
    assert!(
        !there.get::<_, bool>(0),
        "a table made in one cluster is in the other"
    );
}

#[tokio::test]
async fn proxy_cuts_and_reopens() {
    let pg = PgCluster::start();
    let target = format!("{}:{}", pg.host(), pg.port()).parse().unwrap();
    let proxy = TcpProxy::start(target).await;
    assert_eq!(proxy.addr().port(), proxy.port());
    let conninfo = format!(
        "host=127.0.0.1 port={} user=postgres password={} dbname=postgres connect_timeout=5",
        proxy.port(),
        pg.superuser_password()
    );
    let connect = || async {
        let (client, connection) = tokio_postgres::connect(&conninfo, tokio_postgres::NoTls)
            .await
            .map_err(|error| error.to_string())?;
        tokio::spawn(connection);
        Ok::<_, String>(client)
    };

    let client = bounded("connect through the proxy", connect())
        .await
        .unwrap();
    bounded("query", client.simple_query("SELECT 1"))
        .await
        .unwrap();

    proxy.cut();
    let cut = bounded("query after cut", client.simple_query("SELECT 2")).await;
    assert!(cut.is_err(), "a query went through a cut proxy");
    assert!(client.is_closed());
    let refused = bounded("connect while cut", connect()).await;
    assert!(refused.is_err(), "a connection went through a cut proxy");

    proxy.open();
    let client = bounded("connect after open", connect()).await.unwrap();
    bounded("query after open", client.simple_query("SELECT 3"))
        .await
        .unwrap();
}
