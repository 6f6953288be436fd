//! A client whose bus credentials are refused, against a real nats-server
//! with users: it says once, at error, which user and which password file
//! to check, and neither it nor the NATS client says it again every
//! attempt (2 s apart).

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mesh_runtime::nats::{connect_as, NatsArgs};
use mesh_test_support::NatsServer;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

/// Every log line, from every thread.
#[derive(Clone, Default)]
struct Lines(Arc<Mutex<Vec<u8>>>);

impl Write for Lines {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Lines {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }

    fn matching(&self, text: &str) -> Vec<String> {
        self.text()
            .lines()
            .filter(|line| line.contains(text))
            .map(str::to_owned)
            .collect()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_password_names_the_user_and_its_file_once_and_is_not_said_every_attempt() {
    let lines = Lines::default();
    let writer = lines.clone();
    // The filter and layers every mesh program installs, on a test writer.
    tracing_subscriber::fmt()
        .with_env_filter("info,async_nats=warn")
        .with_ansi(false)
        .with_writer(move || writer.clone())
        .finish()
        .with(mesh_runtime::log::ClientRepeats::default())
        .init();
    let nats = NatsServer::start_with_config(serde_json::json!({
        "authorization": {"users": [{"user": "controller", "password": "right-pw-3f1a"}]}
    }));
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("nats-password");
    std::fs::write(&file, "wrong-pw-9c2e\n").unwrap();
    let args = NatsArgs {
        url: nats.url(),
        user: Some("controller".into()),
        password_file: Some(file.clone()),
        ..NatsArgs::default()
    };
    let client = connect_as(&args, "mesh-controller", "_INBOX.controller")
        .await
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(15);
    while lines
        .matching("refused this client's credentials")
        .is_empty()
    {
        assert!(Instant::now() < deadline, "never said:\n{}", lines.text());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // Six more seconds: three more attempts at the old pace.
    tokio::time::sleep(Duration::from_secs(6)).await;
    let text = lines.text();
    let said = lines.matching("refused this client's credentials");
    assert_eq!(said.len(), 1, "said once:\n{text}");
    let line = &said[0];
    assert!(line.contains("ERROR"), "{line}");
    for what in [
        "controller",
        "--nats-user",
        "MESH_NATS_USER",
        file.to_str().unwrap(),
        "--nats-password-file",
        "MESH_NATS_PASSWORD_FILE",
    ] {
        assert!(line.contains(what), "names {what}: {line}");
    }
    assert!(
        lines.matching("authorization violation").len() <= 2,
        "the client's own line is not said every attempt:\n{text}"
    );
    assert!(
        !text.contains("wrong-pw") && !text.contains("right-pw"),
        "{text}"
    );
    drop(client);
}
