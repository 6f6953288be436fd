//! The controller's store over TLS, against a real PostgreSQL with
//! `ssl = on`: `migrate`, `status` and the store's sessions speak TLS as the
//! database URL says (`pg_stat_ssl` shows it), and a certificate that does
//! not match ends `migrate`, `status` and `serve` at once (exit 2) with the
//! reason and never a password.

use std::process::Command;
use std::time::Duration;

use mesh_controller::{serve, LinkError, NatsOptions};
use mesh_pg_store::{migrate, DatabaseOptions, PgError, PgStore};
use mesh_protocol::Timestamp;
use mesh_status::store::{Order, StatusFilter};
use mesh_status::{LinkSettings, LinkState};
use mesh_test_support::{PgCluster, TestCa};

const DECLARATION: &str = r#"{"modules":[
  {"module":"postgres","machine":"db-1","provides":["postgres-database"]},
  {"module":"forge","machine":"app-1","requires":[
    {"provision":"postgres-database","from":"postgres@db-1"}]}
]}"#;

fn url(pg: &PgCluster, host: &str, query: &str) -> String {
    format!("postgres://postgres@{host}:{}/store?{query}", pg.port())
}

fn options(pg: &PgCluster, url: &str) -> DatabaseOptions {
    DatabaseOptions::new(url, Some(&pg.superuser_password_file())).unwrap()
}

/// Runs the binary with `--database url`; (exit code, stdout, stderr).
fn controller(
    pg: &PgCluster,
    declaration: &std::path::Path,
    url: &str,
    command: &[&str],
) -> (i32, String, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_mesh-controller"))
        .arg("--database")
        .arg(url)
        .arg("--database-password-file")
        .arg(pg.superuser_password_file())
        .arg("--declaration")
        .arg(declaration)
        .args(command)
        .env_remove("RUST_LOG")
        .output()
        .unwrap();
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// Reads the status with a store at `url`, and while its session is open,
/// whether the controller's sessions are encrypted.
async fn read_encrypted(pg: &PgCluster, url: &str) -> Vec<bool> {
    let mut store = PgStore::new(options(pg, url));
    let filter = StatusFilter {
        providers: vec!["postgres@db-1".parse().unwrap()],
        providers_chosen: false,
        machine: None,
        silent_before: Timestamp::parse("2026-10-05T00:00:00Z").unwrap(),
        required: vec![],
        order: Order::Key,
        consumer: None,
        per_group: None,
    };
    let read = tokio::time::timeout(Duration::from_secs(20), store.read_status(&filter))
        .await
        .expect("reading the store hung")
        .unwrap();
    let encrypted = pg.sessions_encrypted("mesh-controller").await;
    read.finish().await.unwrap();
    encrypted
}

#[tokio::test(flavor = "multi_thread")]
async fn the_store_speaks_verified_tls() {
    let ca = TestCa::new("controller tls ca");
    let pg = PgCluster::start_with_tls(&ca.server("pg", &["localhost", "127.0.0.1"]));
    pg.create_database("store").await;
    let dir = tempfile::tempdir().unwrap();
    let declaration = dir.path().join("declaration.json");
    std::fs::write(&declaration, DECLARATION).unwrap();
    let root = ca.ca_file().display().to_string();
    let full = format!("sslmode=verify-full&sslrootcert={root}&channel_binding=require");

    let url_full = url(&pg, "127.0.0.1", &full);
    let applied = migrate(&options(&pg, &url_full)).await.unwrap();
    assert!(applied > 0);
    assert_eq!(read_encrypted(&pg, &url_full).await, [true]);
    let (code, out, err) = controller(
        &pg,
        &declaration,
        &url(&pg, "localhost", &full),
        &["status", "--json"],
    );
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("\"all_well\""), "{out}");
    let (code, _, err) = controller(&pg, &declaration, &url_full, &["migrate"]);
    assert_eq!(code, 0, "{err}");

    // sslmode=disable still speaks plain to the same server.
    let plain = url(&pg, "127.0.0.1", "sslmode=disable");
    assert_eq!(read_encrypted(&pg, &plain).await, [false]);
    let (code, _, err) = controller(&pg, &declaration, &plain, &["status"]);
    assert_eq!(code, 0, "{err}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_certificate_that_does_not_match_ends_the_commands() {
    let ca = TestCa::new("controller tls ca");
    let other = TestCa::new("another ca");
    let pg = PgCluster::start_with_tls(&ca.server("pg", &["db.example"]));
    pg.create_database("store").await;
    let dir = tempfile::tempdir().unwrap();
    let declaration = dir.path().join("declaration.json");
    std::fs::write(&declaration, DECLARATION).unwrap();
    let cases = [
        (
            format!("sslmode=verify-full&sslrootcert={}", ca.ca_file().display()),
            "name mismatch: the server's certificate is not for 127.0.0.1 (only for db.example)"
                .to_owned(),
        ),
        (
            format!(
                "sslmode=verify-ca&sslrootcert={}",
                other.ca_file().display()
            ),
            format!(
                "unknown authority: the server's certificate is not signed by the authority in {}",
                other.ca_file().display()
            ),
        ),
    ];
    for (query, says) in &cases {
        let url = url(&pg, "127.0.0.1", query);
        // The library: a lasting refusal.
        let error = migrate(&options(&pg, &url)).await.unwrap_err();
        assert!(matches!(error, PgError::Tls { .. }), "{error}");
        assert!(error.is_lasting() && error.is_transient());
        let message = error.to_string();
        assert!(
            message.starts_with("store postgres://postgres@127.0.0.1:")
                && message.contains("fails the TLS settings of the database URL")
                && message.contains(says.as_str()),
            "{message}"
        );
        // The binary: exit 2 with the reason, no password.
        for command in [&["migrate"][..], &["status"][..]] {
            let (code, out, err) = controller(&pg, &declaration, &url, command);
            assert_eq!(code, 2, "{command:?}: {err}");
            assert!(out.is_empty(), "{out}");
            assert!(err.contains(says.as_str()), "{command:?}: {err}");
            assert!(!err.contains(pg.superuser_password()), "{err}");
        }
        // serve: ends at once (it migrates before it joins the bus).
        let nats = NatsOptions {
            url: "nats://127.0.0.1:1".into(),
            ..NatsOptions::default()
        };
        let ended = tokio::time::timeout(
            Duration::from_secs(20),
            serve(
                &options(&pg, &url),
                &nats,
                LinkSettings::default(),
                &LinkState::new(),
                &mesh_runtime::Stop::new(),
            ),
        )
        .await
        .expect("serve ends instead of waiting for the store");
        let error = ended.unwrap_err();
        assert!(
            matches!(error, LinkError::Store(PgError::Tls { .. })),
            "{error}"
        );
        assert!(error.to_string().contains(says.as_str()), "{error}");
    }
    // The certificate's own authority without the name check: accepted.
    let url = url(
        &pg,
        "127.0.0.1",
        &format!("sslmode=verify-ca&sslrootcert={}", ca.ca_file().display()),
    );
    migrate(&options(&pg, &url)).await.unwrap();
}
