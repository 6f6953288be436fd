//! A private Keycloak server (`kc.sh start --optimized` on a private
//! PostgreSQL) for the identity provider's live tests.
//!
//! # Where Keycloak comes from
//! `scripts/test` runs `ensure_keycloak` (in `scripts/lib.sh`), which fetches
//! the `org.keycloak:keycloak-quarkus-dist` zip once with Maven, unpacks it
//! into `${XDG_CACHE_HOME:-~/.cache}/mesh/keycloak/keycloak-<version>`, and
//! builds it once for PostgreSQL (`kc.sh build` + [`KEYCLOAK_BUILD`], noted
//! in the distribution's `.mesh-build` file), and exports
//! `MESH_KEYCLOAK_HOME` (the unpacked folder) and `MESH_KEYCLOAK_JAVA_HOME`
//! (a JDK it runs on). Without `MESH_KEYCLOAK_HOME` the newest `keycloak-*`
//! folder of that cache is used; when there is none, or it is not built so,
//! [`KeycloakServer::shared`] says `SKIPPED: no Keycloak (...)` on the
//! test's stderr (not captured) and returns `None`.
//!
//! # What runs
//! A private [`PgCluster`] (Keycloak's tables in its `postgres` database),
//! and `kc.sh start --optimized` on it: production mode over plain HTTP on
//! free ports of 127.0.0.1, a local cache (`--cache=local`: no JGroups
//! cluster, no fixed ports), its transaction logs in a private temp dir, and
//! a first administrator `admin` with a random password handed over in
//! `KC_BOOTSTRAP_ADMIN_PASSWORD` (an environment variable: never on a
//! command line). Keycloak marks that first administrator
//! `is_temporary_admin`, as it does the ones `kc.sh bootstrap-admin` makes.
//! Because the database is a real server (not start-dev's H2 file, which
//! the running server locks), `kc.sh bootstrap-admin --optimized` can run
//! beside the live server with [`KeycloakServer::db_env`] — the repair's
//! setting. `--optimized` never writes into the distribution, so servers of
//! one distribution may boot at the same moment.
//!
//! # Lifetime
//! Keycloak is started by a small guardian shell that leads its own process
//! group. The guardian ends the group (SIGTERM, then SIGKILL after 30 s),
//! stops the PostgreSQL under it (SIGQUIT to its postmaster) and removes
//! both data dirs as soon as the test process or Keycloak has gone,
//! so the shared server of [`KeycloakServer::shared`] (a static, never
//! dropped) ends with its test binary, even one killed by a signal. An
//! owned server ([`KeycloakServer::start`]) is stopped on drop the same way.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use tempfile::TempDir;

mod admin;
mod dist;

pub use dist::KeycloakDist;

use crate::{free_port, poll_until, random_hex, read_lossy, tail, PgCluster, START_ATTEMPTS};

/// The JVM options of the tests' Keycloak and of its `kc.sh` commands: the
/// first JIT tier only (kc.sh picks the collector), for a server that lives a
/// few minutes on a machine of two cores (a JVM's full JIT spends most of a
/// short life compiling).
const TEST_JVM: &str = "-XX:TieredStopAtLevel=1";

/// The `kc.sh build` options the distribution must have been built with;
/// `scripts/lib.sh` (`MESH_KEYCLOAK_BUILD`) writes them to its `.mesh-build`.
pub const KEYCLOAK_BUILD: &str = "--db=postgres --health-enabled=true";

/// How long a Keycloak boot may take (two cores, one busy: ~30–75 s seen).
pub const KEYCLOAK_START_DEADLINE: Duration = Duration::from_secs(300);

/// How long a stop waits after SIGTERM before SIGKILL.
const STOP_GRACE: Duration = Duration::from_secs(40);

/// How long a cancelled start waits after SIGTERM before SIGKILL.
const CANCEL_GRACE: Duration = Duration::from_secs(2);

/// The first administrator's user name (realm `master`).
pub const KEYCLOAK_ADMIN: &str = "admin";

/// Starts `$@` in the background, then waits until the watched process
/// (`$1`, the test process) or Keycloak is gone; then ends the process
/// group, stops the PostgreSQL whose data dir is `$3` (immediate shutdown),
/// removes the temp dirs (`$2`, `$4`) and ends itself.
const GUARDIAN: &str = r#"
watched=$1; dir=$2; pgdata=$3; pgdir=$4; shift 4
"$@" &
kc=$!
trap '' TERM
while kill -0 "$watched" 2>/dev/null && kill -0 "$kc" 2>/dev/null; do sleep 1; done
kill -TERM 0 2>/dev/null
n=0
while kill -0 "$kc" 2>/dev/null && [ "$n" -lt 30 ]; do sleep 1; n=$((n + 1)); done
pg=$(head -n 1 "$pgdata/postmaster.pid" 2>/dev/null)
if [ -n "$pg" ] && kill -QUIT "$pg" 2>/dev/null; then
  n=0
  while kill -0 "$pg" 2>/dev/null && [ "$n" -lt 20 ]; do sleep 0.5; n=$((n + 1)); done
fi
rm -rf "$dir" "$pgdir"
kill -KILL 0
"#;

/// A private Keycloak (`kc.sh start --optimized` on a private PostgreSQL)
/// on free ports of 127.0.0.1, with a first administrator
/// [`KEYCLOAK_ADMIN`] and a random password.
///
/// ```no_run
/// # async fn example() {
/// let Some(keycloak) = mesh_test_support::KeycloakServer::shared() else {
///     return; // said SKIPPED
/// };
/// let realm = keycloak.new_realm("forge").await;
/// println!("{} realm {realm}", keycloak.url());
/// # }
/// ```
pub struct KeycloakServer {
    dist: KeycloakDist,
    dir: TempDir,
    pg: PgCluster,
    http_port: u16,
    management_port: u16,
    admin_password: String,
    boot: Duration,
    child: Mutex<Option<Child>>,
}

static SHARED: OnceLock<Result<KeycloakServer, String>> = OnceLock::new();

impl KeycloakServer {
    /// The one server of this test binary, started by the first caller
    /// (the others wait for it); `None` after saying `SKIPPED: no Keycloak
    /// (why)` on stderr when there is no distribution.
    ///
    /// Panics (in every caller) when a distribution is there but the server
    /// does not become ready.
    pub fn shared() -> Option<&'static KeycloakServer> {
        let dist = match KeycloakDist::find() {
            Ok(dist) => dist,
            Err(why) => {
                skipped(&why);
                return None;
            }
        };
        let server = SHARED.get_or_init(|| {
            std::panic::catch_unwind(|| KeycloakServer::start(dist)).map_err(|panic| {
                panic
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                    .unwrap_or_else(|| "the Keycloak start panicked".into())
            })
        });
        match server {
            Ok(server) => Some(server),
            Err(why) => panic!("the shared Keycloak did not start: {why}"),
        }
    }

    /// Starts a server of `dist` and blocks until `/health/ready` answers
    /// 200; panics with the log's tail when it does not within
    /// [`KEYCLOAK_START_DEADLINE`].
    pub fn start(dist: KeycloakDist) -> KeycloakServer {
        KeycloakServer::start_unless(dist, || false).expect("nothing cancels this start")
    }

    /// Like [`KeycloakServer::start`], giving up as soon as `cancelled`
    /// says so (asked about twice a second while Keycloak boots): what was
    /// started is stopped and `None` returned.
    pub fn start_unless(
        dist: KeycloakDist,
        cancelled: impl Fn() -> bool,
    ) -> Option<KeycloakServer> {
        let dir = crate::scratch::private_dir("keycloak");
        let mut server = KeycloakServer {
            dist,
            dir,
            pg: PgCluster::start(),
            http_port: 0,
            management_port: 0,
            admin_password: random_hex(16),
            boot: Duration::ZERO,
            child: Mutex::new(None),
        };
        for attempt in 1..=START_ATTEMPTS {
            server.http_port = free_port();
            server.management_port = free_port();
            match server.spawn_and_wait(&cancelled) {
                Ok(()) => return Some(server),
                Err(Boot::Cancelled) => {
                    // A JVM still booting may not answer SIGTERM for tens
                    // of seconds; there is nothing in it to keep.
                    server.stop_within(CANCEL_GRACE);
                    return None;
                }
                Err(Boot::PortTaken) if attempt < START_ATTEMPTS => server.stop(),
                Err(_) => {
                    let log = tail(&server.log(), 60);
                    server.stop();
                    panic!(
                        "Keycloak ({}) did not become ready on 127.0.0.1:{} within {:?} \
                         (attempt {attempt}); log tail:\n{log}",
                        server.dist.home.display(),
                        server.http_port,
                        KEYCLOAK_START_DEADLINE,
                    );
                }
            }
        }
        unreachable!("the loop above returns or panics")
    }

    /// Spawns the guardian and Keycloak and waits until it is ready.
    fn spawn_and_wait(&mut self, cancelled: &dyn Fn() -> bool) -> Result<(), Boot> {
        let data = self.dir.path().join("data");
        std::fs::create_dir_all(&data).expect("creating Keycloak's data dir");
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.log_path())
            .expect("opening Keycloak's log file");
        let log_start = crate::file_len(&self.log_path());
        let kc = self.dist.home.join("bin/kc.sh");
        let mut command = Command::new("sh");
        command
            .arg("-c")
            .arg(GUARDIAN)
            .arg("mesh-keycloak-guardian")
            .arg(std::process::id().to_string())
            .arg(self.dir.path())
            .arg(self.pg.data_dir())
            .arg(self.pg.dir())
            .arg(&kc)
            .args([
                "start",
                "--optimized",
                "--http-enabled=true",
                "--hostname-strict=false",
                "--http-host=127.0.0.1",
                &format!("--http-port={}", self.http_port),
                &format!("--http-management-port={}", self.management_port),
            ])
            .envs(self.db_env())
            .env("KC_BOOTSTRAP_ADMIN_USERNAME", KEYCLOAK_ADMIN)
            .env("KC_BOOTSTRAP_ADMIN_PASSWORD", &self.admin_password)
            .env(
                "JAVA_OPTS_APPEND",
                format!(
                    "{TEST_JVM} -Dquarkus.transaction-manager.object-store.directory={}/transaction-logs",
                    data.display()
                ),
            )
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("cloning the log file handle"))
            .stderr(log);
        if let Some(java_home) = &self.dist.java_home {
            command.env("JAVA_HOME", java_home);
        }
        std::os::unix::process::CommandExt::process_group(&mut command, 0);
        let started = Instant::now();
        let child = command.spawn().expect("starting sh for kc.sh");
        *self.child.lock().unwrap() = Some(child);
        let deadline = started + KEYCLOAK_START_DEADLINE;
        let outcome = poll_until(deadline, || {
            if self.ready() {
                return Some(Ok(()));
            }
            if self.exited() {
                let fresh = crate::read_lossy_from(&self.log_path(), log_start);
                let taken = fresh.contains("Address already in use")
                    || fresh.contains("Port(s) already in use");
                return Some(Err(if taken { Boot::PortTaken } else { Boot::Failed }));
            }
            if cancelled() {
                return Some(Err(Boot::Cancelled));
            }
            std::thread::sleep(Duration::from_millis(450));
            None
        });
        self.boot = started.elapsed();
        outcome.unwrap_or(Err(Boot::Failed))
    }

    fn exited(&self) -> bool {
        let mut slot = self.child.lock().unwrap();
        matches!(slot.as_mut().map(Child::try_wait), Some(Ok(Some(_))))
    }

    /// Whether `GET /health/ready` on the management port answers 200.
    fn ready(&self) -> bool {
        let Ok(mut stream) = TcpStream::connect((Ipv4Addr::LOCALHOST, self.management_port)) else {
            return false;
        };
        let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
        let request = format!(
            "GET /health/ready HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nConnection: close\r\n\r\n",
            self.management_port
        );
        if stream.write_all(request.as_bytes()).is_err() {
            return false;
        }
        let mut head = [0u8; 12];
        stream.read_exact(&mut head).is_ok() && head.starts_with(b"HTTP/1.1 200")
    }

    /// Stops the server: SIGTERM to its process group, SIGKILL after 40 s.
    pub fn stop(&self) {
        self.stop_within(STOP_GRACE);
    }

    /// SIGTERM to the server's process group, SIGKILL after `grace`.
    fn stop_within(&self, grace: Duration) {
        let Some(mut child) = self.child.lock().unwrap().take() else {
            return;
        };
        let group = rustix::process::Pid::from_child(&child);
        let _ = rustix::process::kill_process_group(group, rustix::process::Signal::TERM);
        let deadline = Instant::now() + grace;
        if poll_until(deadline, || child.try_wait().ok().flatten()).is_none() {
            let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
            let _ = child.wait();
        }
    }

    /// The base URL, `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.http_port)
    }

    /// The management interface's base URL (`/health/ready` and so on).
    pub fn management_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.management_port)
    }

    /// The server's runtime settings beyond its command line, as `KC_*`
    /// environment variables: its database (URL, user, password) and its
    /// local cache. `kc.sh bootstrap-admin` needs the same to reach the
    /// server's database; the password is only ever handed over in the
    /// environment.
    pub fn db_env(&self) -> Vec<(String, String)> {
        [
            (
                "KC_DB_URL",
                format!(
                    "jdbc:postgresql://{}:{}/postgres",
                    self.pg.host(),
                    self.pg.port()
                ),
            ),
            ("KC_DB_USERNAME", self.pg.superuser().to_owned()),
            ("KC_DB_PASSWORD", self.pg.superuser_password().to_owned()),
            ("KC_CACHE", "local".to_owned()),
        ]
        .into_iter()
        .map(|(name, value)| (name.to_owned(), value))
        .collect()
    }

    /// The first administrator's password (realm `master`).
    pub fn admin_password(&self) -> &str {
        &self.admin_password
    }

    /// How long the (last) start took until ready.
    pub fn boot_time(&self) -> Duration {
        self.boot
    }

    /// The distribution it runs.
    pub fn dist(&self) -> &KeycloakDist {
        &self.dist
    }

    /// The server's log (its stdout and stderr).
    pub fn log(&self) -> String {
        read_lossy(&self.log_path())
    }

    fn log_path(&self) -> PathBuf {
        self.dir.path().join("keycloak.log")
    }

    /// Writes the server's settings beyond its command line (database and
    /// cache, [`db_env`](Self::db_env)) as a `keycloak.conf` at `path`
    /// (mode 0600: it holds the database password), for `kc.sh
    /// --config-file`.
    pub fn write_config_file(&self, path: &Path) {
        let text: String = self
            .db_env()
            .into_iter()
            .map(|(name, value)| {
                let key = name
                    .trim_start_matches("KC_")
                    .to_lowercase()
                    .replace('_', "-");
                format!("{key}={value}\n")
            })
            .collect();
        std::fs::write(path, text).expect("writing keycloak.conf");
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
            .expect("making keycloak.conf private");
    }

    /// Writes an executable `kc.sh` into `dir` that runs the distribution's
    /// own `kc.sh` on the JDK the server runs on (what an operator's
    /// environment would give it), and returns its path.
    pub fn kc_sh_wrapper(&self, dir: &Path) -> PathBuf {
        let path = dir.join("kc.sh");
        let java = match &self.dist.java_home {
            Some(java_home) => format!("JAVA_HOME='{}' ", java_home.display()),
            None => String::new(),
        };
        let text = format!(
            "#!/bin/sh\n{java}JAVA_OPTS_APPEND='{TEST_JVM}' exec '{}' \"$@\"\n",
            self.dist.home.join("bin/kc.sh").display()
        );
        std::fs::write(&path, text).expect("writing the kc.sh wrapper");
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))
            .expect("making the kc.sh wrapper executable");
        path
    }
}

impl Drop for KeycloakServer {
    fn drop(&mut self) {
        self.stop();
    }
}

impl std::fmt::Debug for KeycloakServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeycloakServer")
            .field("url", &self.url())
            .field("home", &self.dist.home)
            .field("dir", &self.dir.path())
            .finish_non_exhaustive()
    }
}

/// Why a boot did not end ready.
enum Boot {
    /// A port was taken by another process meanwhile: try other ports.
    PortTaken,
    /// It stopped, or was not ready by the deadline.
    Failed,
    /// The caller gave up.
    Cancelled,
}

/// Says loudly, past the test harness's capture, that a test did not run.
fn skipped(why: &str) {
    let _ = writeln!(std::io::stderr(), "SKIPPED: no Keycloak ({why})");
}
