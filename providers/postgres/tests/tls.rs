//! The provider over TLS, against a real PostgreSQL with `ssl = on`: the
//! administrator's sessions and the login check as each consumer use the
//! admin URL's `sslmode` and `sslrootcert`, with SCRAM channel binding; a
//! certificate that does not match is refused plainly.

mod common;

use std::time::Duration;

use common::{within, World};
use mesh_provider_postgres::{PostgresConfig, PostgresProvisioner};
use mesh_sdk::testing::Settings;
use mesh_test_support::{PgCluster, TestCa};

/// The provider's configuration for `pg` with `query` after the admin URL.
fn config(pg: &PgCluster, query: &str, consumer_host: Option<&str>) -> PostgresConfig {
    let password =
        mesh_sdk::Secret::from_file(&pg.superuser_password_file(), "admin password").unwrap();
    PostgresConfig::new(&format!("{}?{query}", pg.admin_url()), Some(password))
        .unwrap()
        .with_consumer_address(consumer_host.map(str::to_owned), None)
        .unwrap()
        .with_connect_timeout(Duration::from_secs(5))
        .with_statement_timeout(Duration::from_secs(10))
}

/// Turns on `log_connections` so the server log says whether each login used TLS.
async fn log_connections(pg: &PgCluster) {
    let admin = pg.connect_admin().await;
    for statement in [
        "ALTER SYSTEM SET log_connections = on",
        "SELECT pg_reload_conf()",
    ] {
        admin.batch_execute(statement).await.unwrap();
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
}

/// The server log's "connection authorized" lines for `user`.
fn logins_of(pg: &PgCluster, user: &str) -> Vec<String> {
    pg.log()
        .lines()
        .filter(|line| line.contains(&format!("connection authorized: user={user} ")))
        .map(str::to_owned)
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn admin_and_check_speak_verified_tls_with_channel_binding() {
    let ca = TestCa::new("provider tls ca");
    let pg = PgCluster::start_with_tls(&ca.server("pg", &["localhost", "127.0.0.1"]));
    log_connections(&pg).await;
    let query = format!(
        "sslmode=verify-full&sslrootcert={}&channel_binding=require",
        ca.ca_file().display()
    );
    let provisioner = PostgresProvisioner::new(config(&pg, &query, None));
    let mut world = World::new(
        provisioner,
        &[("forge", "forge-secret-1")],
        Settings::default(),
    );
    world.pass().await;
    assert_eq!(world.failure("forge"), None);
    // The kept administrator sessions are encrypted.
    let sessions = pg.sessions_encrypted("mesh-postgres").await;
    assert!(
        !sessions.is_empty() && sessions.iter().all(|ssl| *ssl),
        "{sessions:?}"
    );
    // So was the check's login as the consumer (it closes at once: the log says).
    let logins = logins_of(&pg, "forge");
    assert!(!logins.is_empty(), "no login as forge in the log");
    for line in &logins {
        assert!(line.contains("SSL enabled"), "{line}");
    }
    assert!(!pg.log().contains("forge-secret-1"));
}

#[tokio::test(flavor = "multi_thread")]
async fn certificates_that_do_not_match_are_refused_plainly() {
    let ca = TestCa::new("provider tls ca");
    let other = TestCa::new("another ca");
    // Valid for 127.0.0.1 only: not for a consumer host named localhost.
    let pg = PgCluster::start_with_tls(&ca.server("pg", &["127.0.0.1"]));
    let root = ca.ca_file().display().to_string();

    // The administrator's session verifies; the check, to localhost, is refused.
    let query = format!("sslmode=verify-full&sslrootcert={root}");
    let provisioner = PostgresProvisioner::new(config(&pg, &query, Some("localhost")));
    let mut world = World::new(
        provisioner,
        &[("forge", "forge-secret-1")],
        Settings::default(),
    );
    world.pass().await;
    let (class, message) = world.failure("forge").expect("the check fails");
    assert_eq!(class, "refused", "{message}");
    assert!(
        message.contains("cannot log in as forge")
            && message.contains(
                "name mismatch: the server's certificate is not for localhost (only for 127.0.0.1)"
            ),
        "{message}"
    );
    assert!(!message.contains("forge-secret-1") && !message.contains(pg.superuser_password()));

    // verify-ca does not check the name: the same check passes.
    let query = format!("sslmode=verify-ca&sslrootcert={root}");
    let provisioner = PostgresProvisioner::new(config(&pg, &query, Some("localhost")));
    within(
        "a check",
        provisioner.login("forge", &mesh_sdk::Secret::new("forge-secret-1")),
    )
    .await
    .unwrap();

    // Another authority: the administrator cannot log in at all.
    let query = format!(
        "sslmode=verify-full&sslrootcert={}",
        other.ca_file().display()
    );
    let provisioner = PostgresProvisioner::new(config(&pg, &query, None));
    let mut world = World::new(
        provisioner,
        &[("forge", "forge-secret-1")],
        Settings::default(),
    );
    world.pass().await;
    let (class, message) = world
        .failure("forge")
        .expect("the administrator is refused");
    assert_eq!(class, "refused", "{message}");
    assert!(
        message.contains("cannot log in as the administrator")
            && message.contains("unknown authority: the server's certificate is not signed by"),
        "{message}"
    );
    assert!(!message.contains(pg.superuser_password()), "{message}");
}

#[tokio::test(flavor = "multi_thread")]
async fn sslmode_disable_still_speaks_plain_to_a_tls_server() {
    let ca = TestCa::new("provider tls ca");
    let pg = PgCluster::start_with_tls(&ca.server("pg", &["localhost", "127.0.0.1"]));
    log_connections(&pg).await;
    let provisioner = PostgresProvisioner::new(config(&pg, "sslmode=disable", None));
    let mut world = World::new(
        provisioner,
        &[("forge", "forge-secret-1")],
        Settings::default(),
    );
    world.pass().await;
    assert_eq!(world.failure("forge"), None);
    let sessions = pg.sessions_encrypted("mesh-postgres").await;
    assert!(
        !sessions.is_empty() && sessions.iter().all(|ssl| !*ssl),
        "{sessions:?}"
    );
    let logins = logins_of(&pg, "forge");
    assert!(!logins.is_empty());
    for line in &logins {
        assert!(!line.contains("SSL enabled"), "{line}");
    }
}
