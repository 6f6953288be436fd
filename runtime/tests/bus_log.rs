//! What a client logs while the bus is away, against a real nats-server
//! that is stopped and started again: the lines name the server, the
//! outage is said once when it begins (not at every failed attempt, 2 s
//! apart), and once when it ends.

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mesh_protocol::ModuleId;
use mesh_runtime::nats::{connect, NatsArgs};
use mesh_test_support::NatsServer;

/// Every log line, from every thread (the callback runs on the runtime's).
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

    /// Waits (at most 30 s) for a line holding `text`.
    async fn wait_for(&self, text: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(line) = self.matching(text).pop() {
                return line;
            }
            assert!(
                Instant::now() < deadline,
                "no line with {text:?}:\n{}",
                self.text()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_outage_names_the_server_and_is_said_once_not_every_attempt() {
    let lines = Lines::default();
    let writer = lines.clone();
    tracing_subscriber::fmt()
        .with_env_filter("mesh_runtime=info")
        .with_ansi(false)
        .with_writer(move || writer.clone())
        .init();
    let mut nats = NatsServer::start();
    let url = nats.url();
    let args = NatsArgs {
        url: url.clone(),
        ..NatsArgs::default()
    };
    let provider = ModuleId::parse("postgres@db-1").unwrap();
    let client = connect(&args, &provider).await.unwrap();
    client.flush().await.unwrap();
    let connected = lines.wait_for("connected to the bus").await;
    assert!(connected.contains(&url), "{connected}");

    nats.stop();
    let disconnected = lines.wait_for("disconnected from the bus").await;
    assert!(disconnected.contains(&url), "{disconnected}");
    assert!(disconnected.contains("WARN"), "{disconnected}");
    // Six seconds of reconnect attempts (at most 2 s apart) say nothing more.
    tokio::time::sleep(Duration::from_secs(6)).await;
    let text = lines.text();
    assert!(
        !text.contains("ERROR") && !text.contains("IO error"),
        "a failed attempt is not said each time:\n{text}"
    );
    assert_eq!(lines.matching("disconnected").len(), 1, "{text}");

    nats.start_again();
    let back = lines.wait_for("connected to the bus again").await;
    assert!(back.contains(&url), "{back}");
    assert!(back.contains("away="), "{back}");
    drop(client);

    // A server nobody listens on, from the start: the first failed
    // attempt is said as a warning naming it, the next ones are not.
    let nowhere = format!("nats://127.0.0.1:{}", mesh_test_support::free_port());
    let args = NatsArgs {
        url: nowhere.clone(),
        ..NatsArgs::default()
    };
    let away = connect(&args, &provider).await.unwrap();
    let said = lines.wait_for("cannot reach the bus").await;
    assert!(said.contains(&nowhere) && said.contains("WARN"), "{said}");
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert_eq!(
        lines.matching("cannot reach the bus").len(),
        1,
        "{}",
        lines.text()
    );
    drop(away);
}
