//! A private nats-server with JetStream.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use tempfile::TempDir;

use crate::{
    certs::TestCa, file_len, find_in_path_or, free_port, poll_until, read_lossy, read_lossy_from,
    tail, terminate, START_ATTEMPTS, START_DEADLINE,
};

/// How long `stop` waits after SIGTERM before SIGKILL.
const STOP_GRACE: Duration = Duration::from_secs(5);

/// A private `nats-server` (the installed binary) with JetStream enabled,
/// listening on 127.0.0.1 on a free port, its JetStream store in a private
/// temp dir.
///
/// Dropping it kills the server and removes the temp dir (store included).
///
/// ```no_run
/// # async fn example() {
/// let nats = mesh_test_support::NatsServer::start();
/// let client = async_nats::connect(nats.url()).await.unwrap();
/// let stream = mesh_test_support::create_events_stream(&client).await;
/// # }
/// ```
pub struct NatsServer {
    binary: PathBuf,
    dir: TempDir,
    config_file: Option<PathBuf>,
    port: u16,
    tls: bool,
    child: Mutex<Option<Child>>,
}

/// Why a start attempt failed.
enum StartFailure {
    /// The port was taken: worth a retry on another port.
    PortTaken,
    /// Anything else, with a description.
    Other(String),
}

impl NatsServer {
    /// Starts a server: JetStream enabled (`-js`), private `--store_dir` in a
    /// temp dir, listening on 127.0.0.1 on a free port. Blocks until the
    /// server is ready; panics (with the server's log tail) if it is not
    /// within 30 s.
    pub fn start() -> NatsServer {
        Self::start_inner(None)
    }

    /// Like [`NatsServer::start`], with a configuration given as JSON
    /// (nats-server reads JSON configuration files).
    ///
    /// The configuration is written to a file in the temp dir and passed with
    /// `-c`; host, port, JetStream and store dir still come from flags, which
    /// override the file. The configuration may hold `authorization` or
    /// `accounts` blocks with users. With `accounts`, an account that should
    /// use JetStream needs `"jetstream": "enabled"` in its block.
    pub fn start_with_config(config: serde_json::Value) -> NatsServer {
        Self::start_inner(Some(config))
    }

    /// Like [`NatsServer::start_with_config`] (with `config`, or none), with
    /// TLS required of every client and client certificates verified:
    /// `tls { cert_file, key_file, ca_file, verify: true }`, the server's
    /// certificate (for `localhost` and `127.0.0.1`) and the trusted CA both
    /// from `ca`. A client needs `ca.ca_file()` to trust the server and a
    /// certificate from `ca.client(..)`. [`NatsServer::url`] is then
    /// `tls://127.0.0.1:PORT`.
    ///
    /// The certificate files live in `ca`'s directory: keep `ca` alive as
    /// long as the server (a restart reads them again).
    ///
    /// Users with nkeys need nothing special: give `config` an
    /// `authorization` block whose users are `{"nkey": "U...", ...}`.
    pub fn start_with_tls(ca: &TestCa, config: Option<serde_json::Value>) -> NatsServer {
        let files = ca.server("nats-server", &["localhost", "127.0.0.1"]);
        let mut config = config.unwrap_or_else(|| serde_json::json!({}));
        config["tls"] = serde_json::json!({
            "cert_file": files.cert,
            "key_file": files.key,
            "ca_file": ca.ca_file(),
            "verify": true,
            "timeout": 5,
        });
        let mut server = Self::start_inner(Some(config));
        server.tls = true;
        server
    }

    fn start_inner(config: Option<serde_json::Value>) -> NatsServer {
        let binary = nats_server_binary();
        let dir = crate::scratch::private_dir("nats");
        let config_file = config.map(|config| {
            let path = dir.path().join("nats-server.json");
            let text = serde_json::to_string_pretty(&config).expect("serializing the nats config");
            std::fs::write(&path, text).expect("writing the nats config file");
            path
        });
        let mut server = NatsServer {
            binary,
            dir,
            config_file,
            port: 0,
            tls: false,
            child: Mutex::new(None),
        };
        for attempt in 1..=START_ATTEMPTS {
            server.port = free_port();
            match server.spawn_and_wait() {
                Ok(()) => return server,
                Err(StartFailure::PortTaken) if attempt < START_ATTEMPTS => continue,
                Err(StartFailure::PortTaken) => server.fail(&format!(
                    "nats-server found its port taken {START_ATTEMPTS} times in a row"
                )),
                Err(StartFailure::Other(why)) => server.fail(&why),
            }
        }
        unreachable!("the loop above returns or panics")
    }

    /// The client URL, `nats://127.0.0.1:PORT` (`tls://` when started with
    /// [`NatsServer::start_with_tls`]).
    pub fn url(&self) -> String {
        let scheme = if self.tls { "tls" } else { "nats" };
        format!("{scheme}://127.0.0.1:{}", self.port)
    }

    /// The client port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Stops the server: SIGTERM, then SIGKILL if it has not exited after a
    /// few seconds. The store dir is kept, so [`NatsServer::start_again`]
    /// finds the streams of file storage again. Does nothing if the server is
    /// not running.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child_slot().take() {
            terminate(&mut child, STOP_GRACE);
        }
    }

    /// Starts the server again after [`NatsServer::stop`]: same port, same
    /// store dir, same configuration. Blocks until it is ready.
    ///
    /// Panics if the server is running, or if it cannot start (for example
    /// when another process took the port meanwhile).
    pub fn start_again(&mut self) {
        assert!(
            !self.is_running(),
            "NatsServer::start_again called while the server is running; call stop() first"
        );
        match self.spawn_and_wait() {
            Ok(()) => {}
            Err(StartFailure::PortTaken) => self.fail(&format!(
                "nats-server could not restart: port {} was taken by another process meanwhile",
                self.port
            )),
            Err(StartFailure::Other(why)) => self.fail(&why),
        }
    }

    /// Whether the server process is alive.
    pub fn is_running(&self) -> bool {
        let mut slot = self.child_slot();
        match slot.as_mut().map(|child| child.try_wait()) {
            Some(Ok(None)) => true,
            Some(Ok(Some(_))) => {
                *slot = None;
                false
            }
            Some(Err(_)) => true,
            None => false,
        }
    }

    /// The server log (all starts of this instance), followed by anything the
    /// process wrote to stdout/stderr (e.g. configuration errors).
    pub fn log(&self) -> String {
        let mut log = read_lossy(&self.log_path());
        let stderr = read_lossy(&self.stderr_path());
        if !stderr.trim().is_empty() {
            log.push_str("\n--- nats-server stdout/stderr ---\n");
            log.push_str(&stderr);
        }
        log
    }

    fn child_slot(&self) -> MutexGuard<'_, Option<Child>> {
        self.child
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn log_path(&self) -> PathBuf {
        self.dir.path().join("nats-server.log")
    }

    fn stderr_path(&self) -> PathBuf {
        self.dir.path().join("nats-server.stderr")
    }

    fn store_dir(&self) -> PathBuf {
        self.dir.path().join("jetstream")
    }

    /// Spawns the process on `self.port` and waits until it is ready.
    fn spawn_and_wait(&mut self) -> Result<(), StartFailure> {
        let log_path = self.log_path();
        let offset = file_len(&log_path);
        let stderr_offset = file_len(&self.stderr_path());
        let mut child = self.spawn();
        let deadline = Instant::now() + START_DEADLINE;
        let outcome = poll_until(deadline, || {
            let fresh = read_lossy_from(&log_path, offset);
            let fresh_stderr = read_lossy_from(&self.stderr_path(), stderr_offset);
            match child.try_wait() {
                Ok(Some(status)) => {
                    let all = format!("{fresh}\n{fresh_stderr}");
                    if all.to_lowercase().contains("address already in use") {
                        Some(Err(StartFailure::PortTaken))
                    } else {
                        Some(Err(StartFailure::Other(format!(
                            "nats-server exited during startup ({status}); \
                             a rejected configuration or flag is the likely cause"
                        ))))
                    }
                }
                Ok(None) if fresh.contains("Server is ready") => Some(Ok(())),
                Ok(None) => None,
                Err(error) => Some(Err(StartFailure::Other(format!(
                    "waiting for nats-server failed: {error}"
                )))),
            }
        });
        match outcome {
            Some(Ok(())) => {
                *self.child_slot() = Some(child);
                Ok(())
            }
            Some(Err(failure)) => {
                terminate(&mut child, Duration::ZERO);
                Err(failure)
            }
            None => {
                terminate(&mut child, Duration::ZERO);
                Err(StartFailure::Other(format!(
                    "nats-server did not log \"Server is ready\" within {START_DEADLINE:?}; \
                     the machine may be overloaded or the store dir unusable"
                )))
            }
        }
    }

    fn spawn(&self) -> Child {
        let stderr_file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.stderr_path())
            .expect("opening the nats-server stderr file");
        let stdout_file = stderr_file
            .try_clone()
            .expect("cloning the nats-server stderr file");
        let mut command = Command::new(&self.binary);
        if let Some(config) = &self.config_file {
            command.arg("-c").arg(config);
        }
        command
            .args([
                "-a",
                "127.0.0.1",
                "-p",
                &self.port.to_string(),
                "-js",
                "-sd",
            ])
            .arg(self.store_dir())
            .arg("-l")
            .arg(self.log_path())
            .current_dir(self.dir.path())
            .stdin(Stdio::null())
            .stdout(stdout_file)
            .stderr(stderr_file);
        command.spawn().unwrap_or_else(|error| {
            panic!(
                "could not run {}: {error}; install the Debian package `nats-server`",
                self.binary.display()
            )
        })
    }

    /// Panics with `why`, the command line and the log tail.
    fn fail(&self, why: &str) -> ! {
        panic!(
            "{why}\nbinary: {}\nport: {}\ndir: {}\n--- log tail ---\n{}",
            self.binary.display(),
            self.port,
            self.dir.path().display(),
            tail(&self.log(), 40)
        )
    }
}

impl Drop for NatsServer {
    fn drop(&mut self) {
        if let Some(mut child) = self.child_slot().take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl std::fmt::Debug for NatsServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NatsServer")
            .field("url", &self.url())
            .field("dir", &self.dir.path())
            .finish_non_exhaustive()
    }
}

/// The nats-server binary: `PATH` first, then /usr/sbin, /usr/local/sbin,
/// /usr/local/bin, /usr/bin.
pub(crate) fn nats_server_binary() -> PathBuf {
    find_in_path_or(
        "nats-server",
        &[
            "/usr/sbin/nats-server",
            "/usr/local/sbin/nats-server",
            "/usr/local/bin/nats-server",
            "/usr/bin/nats-server",
        ],
    )
    .unwrap_or_else(|| {
        panic!(
            "nats-server not found in PATH nor in /usr/sbin, /usr/local/sbin, /usr/local/bin, \
             /usr/bin: install the Debian package `nats-server` (apt-get install nats-server)"
        )
    })
}

/// The name of the JetStream stream holding the provisioner events.
const EVENTS_STREAM: &str = "MESH_EVENTS";

/// The subjects the events stream captures.
const EVENTS_SUBJECTS: &str = "mesh.event.*.*.provisioner.*";

/// Creates (or gets, when it exists) the JetStream stream `MESH_EVENTS`
/// capturing `mesh.event.*.*.provisioner.*`, with file storage.
///
/// Panics if the server refuses (for example when the client's account has
/// no JetStream).
pub async fn create_events_stream(
    client: &async_nats::Client,
) -> async_nats::jetstream::stream::Stream {
    let jetstream = async_nats::jetstream::new(client.clone());
    jetstream
        .get_or_create_stream(async_nats::jetstream::stream::Config {
            name: EVENTS_STREAM.to_string(),
            subjects: vec![EVENTS_SUBJECTS.to_string()],
            storage: async_nats::jetstream::stream::StorageType::File,
            ..Default::default()
        })
        .await
        .unwrap_or_else(|error| {
            panic!(
                "creating the JetStream stream {EVENTS_STREAM} ({EVENTS_SUBJECTS}) failed: {error}; \
                 is JetStream enabled for this client's account?"
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_taken_port_is_reported_as_such() {
        let taken = std::net::TcpListener::bind(("127.0.0.1", 0)).unwrap();
        let mut server = NatsServer::start();
        server.stop();
        server.port = taken.local_addr().unwrap().port();
        assert!(matches!(
            server.spawn_and_wait(),
            Err(StartFailure::PortTaken)
        ));
        assert!(!server.is_running());
    }
}

#[cfg(test)]
mod tls_tests {
    use super::*;

    #[tokio::test]
    async fn a_tls_server_takes_a_client_with_a_certificate_and_refuses_one_without() {
        let ca = TestCa::new("mesh test ca");
        let nats = NatsServer::start_with_tls(&ca, None);
        assert!(nats.url().starts_with("tls://127.0.0.1:"), "{}", nats.url());
        let client_files = ca.client("client", "client");
        let client = async_nats::ConnectOptions::new()
            .add_root_certificates(ca.ca_file().to_owned())
            .add_client_certificate(client_files.cert, client_files.key)
            .connect(nats.url())
            .await
            .unwrap_or_else(|e| panic!("{e}\n{}", nats.log()));
        client.flush().await.unwrap();
        create_events_stream(&client).await;

        let refused = async_nats::ConnectOptions::new()
            .add_root_certificates(ca.ca_file().to_owned())
            .max_reconnects(Some(1))
            .connect(nats.url())
            .await
            .map(drop)
            .expect_err("a client without a certificate is refused");
        assert!(
            refused.to_string().contains("BadCertificate"),
            "the server's TLS alert: {refused}"
        );
    }
}
