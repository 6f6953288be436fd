//! The `mesh-postgres` binary end to end: it provisions a consumer on a real
//! PostgreSQL, says `recovered` through JetStream on a real nats-server,
//! stops cleanly on SIGTERM, writes its log as one JSON object a line with
//! `--log-format json`, and never shows the administrator's password (given
//! inside the admin URL here, through the environment) or a minted secret.
//! Real time throughout (async-nats needs it).

mod common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::{login, within};
use futures::StreamExt;
use mesh_test_support::{create_events_stream, NatsServer, PgCluster};
use serde_json::{json, Value};

const SECRET: &str = "minted-forge-binary-9d31e0";

fn contributions(dir: &Path) -> std::path::PathBuf {
    std::fs::create_dir_all(dir.join("secrets")).unwrap();
    std::fs::write(dir.join("secrets/forge"), format!("{SECRET}\n")).unwrap();
    let file = json!({
        "provider": {"module": "postgres", "machine": "db-1"},
        "consumers": [{"consumer": "forge", "machine": "app-1",
                       "provision": "postgres-database", "secret_file": "secrets/forge"}]
    });
    let path = dir.join("contributions.json");
    std::fs::write(&path, file.to_string()).unwrap();
    path
}

#[tokio::test]
async fn the_binary_provisions_says_recovered_and_stops_on_sigterm() {
    let nats = NatsServer::start();
    let pg = PgCluster::start();
    let bus = async_nats::connect(nats.url()).await.unwrap();
    let stream = create_events_stream(&bus).await;
    let dir = tempfile::tempdir().unwrap();
    let path = contributions(dir.path());
    let stderr = dir.path().join("stderr");
    let url_with_password = format!(
        "postgres://postgres:{}@127.0.0.1:{}/postgres",
        pg.superuser_password(),
        pg.port()
    );

    let mut child = Command::new(env!("CARGO_BIN_EXE_mesh-postgres"))
        .args(["--contributions", path.to_str().unwrap()])
        // A password inside the NATS URL (the test server takes any): never shown.
        .args([
            "--nats",
            &nats.url().replace("nats://", "nats://mesh:Nats-Secret-77@"),
        ])
        .args(["--pass-every", "300ms", "--log-format", "json"])
        .env("MESH_POSTGRES_ADMIN_URL", &url_with_password)
        .env("RUST_LOG", "info")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&stderr).unwrap())
        .spawn()
        .unwrap();

    let consumer = stream
        .create_consumer(async_nats::jetstream::consumer::pull::Config::default())
        .await
        .unwrap();
    let mut messages = consumer.messages().await.unwrap();
    let event: Value = tokio::time::timeout(Duration::from_secs(60), async {
        loop {
            let message = messages.next().await.unwrap().unwrap();
            message.ack().await.unwrap();
            if message.subject.as_str() == "mesh.event.db-1.postgres.provisioner.recovered" {
                return serde_json::from_slice(&message.payload).unwrap();
            }
        }
    })
    .await
    .unwrap_or_else(|_| {
        panic!(
            "no recovered event within a minute; the provider said:\n{}",
            std::fs::read_to_string(&stderr).unwrap_or_default()
        )
    });
    assert_eq!(event["consumer"], "forge");
    assert_eq!(event["reason"], "first-success-after-start");
    login(&pg, "forge", SECRET, "forge").await.unwrap();

    Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    let status = within("the provider to stop on SIGTERM", async {
        loop {
            if let Some(status) = child.try_wait().unwrap() {
                return status;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
    let said = std::fs::read_to_string(&stderr).unwrap();
    assert!(status.success(), "{status}: {said}");
    // One JSON object a line, with the text format's fields at the top.
    let lines: Vec<Value> = said
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: not JSON: {l}")))
        .collect();
    for line in &lines {
        for key in ["timestamp", "level", "target", "message"] {
            assert!(line.get(key).is_some(), "no {key} in {line}");
        }
    }
    let message = |text: &str| lines.iter().find(|l| l["message"] == text);
    assert!(message("mesh-postgres starting").is_some(), "{said}");
    let configured = message("PostgreSQL provider configured").unwrap_or_else(|| panic!("{said}"));
    let shown = format!("postgres://postgres@127.0.0.1:{}/postgres", pg.port());
    assert_eq!(configured["admin"], shown.as_str(), "{configured}");
    let recovered = message("publishing recovered").unwrap_or_else(|| panic!("{said}"));
    assert_eq!(recovered["consumer"], "forge");
    assert!(message("stopped").is_some(), "{said}");
    assert!(said.contains("mesh:***@127.0.0.1"), "{said}");
    for secret in [pg.superuser_password(), SECRET, "Nats-Secret-77"] {
        assert!(!said.contains(secret), "a secret was logged:\n{said}");
        assert!(
            !pg.log().contains(secret),
            "a secret reached the server log"
        );
    }
}

#[test]
fn a_configuration_that_cannot_work_ends_with_exit_code_1_and_hides_the_password() {
    let dir = tempfile::tempdir().unwrap();
    let path = contributions(dir.path());
    let run = |args: &[&str], url: &str| {
        Command::new(env!("CARGO_BIN_EXE_mesh-postgres"))
            .args(["--contributions", path.to_str().unwrap()])
            .args(args)
            .env("MESH_POSTGRES_ADMIN_URL", url)
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    let cases: [(&[&str], &str, &str); 3] = [
        (
            &["--admin-password-file", "/nonexistent/pw"],
            "postgres://postgres@127.0.0.1:5432/postgres",
            "the admin password file /nonexistent/pw cannot be read",
        ),
        (
            &[],
            "postgres://postgres:Secret-In-Url-42@127.0.0.1:port/postgres",
            "cannot be parsed",
        ),
        (
            &[],
            "postgres://postgres:Secret-In-Url-42@h1,h2/postgres",
            "exactly one host",
        ),
    ];
    for (args, url, expected) in cases {
        let output = run(args, url);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{stderr}");
        assert!(stderr.contains(expected), "{stderr}");
        assert!(!stderr.contains("Secret-In-Url-42"), "{stderr}");
    }
    // A bad command line is clap's exit code 2; --help never shows the URL from the environment.
    let output = run(
        &["--pass-every", "soon"],
        "postgres://u:Secret-In-Url-42@h/db",
    );
    assert_eq!(output.status.code(), Some(2));
    let output = run(&["--help"], "postgres://u:Secret-In-Url-42@h/db");
    let help = String::from_utf8_lossy(&output.stdout);
    assert!(help.contains("--admin-url"), "{help}");
    assert!(!help.contains("Secret-In-Url-42"), "{help}");
}
