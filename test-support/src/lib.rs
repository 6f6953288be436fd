//! Shared test support for the mesh crates: real, private server instances.
//!
//! Everything here starts the *installed* binaries (never mocks) on free
//! ports, with private data directories under [`data_base`] (`/dev/shm`
//! when it has room, else the system temp dir), and cleans up on drop:
//!
//! * [`NatsServer`]: a `nats-server` with JetStream (file storage);
//! * [`NatsCluster`]: three of them in a JetStream cluster;
//! * [`PgCluster`]: a PostgreSQL cluster with SCRAM authentication;
//! * [`RedisServer`]: a Redis server with one ACL administrator, for the
//!   hooks of `mesh-provide` (`examples/hooks/redis-acl.sh`);
//! * [`MariaDbServer`]: a MariaDB server with one administrator, for the
//!   TypeScript kit's example hook (`examples/hooks/mariadb`);
//! * [`RabbitServer`]: a RabbitMQ node with its management API and one
//!   administrator, for the Go hook (`examples/hooks/rabbitmq`);
//! * [`KeycloakServer`]: a Keycloak (`kc.sh start-dev`), one shared per
//!   test binary, a realm per test;
//! * [`Browser`]: a headless Chromium under its own chromedriver, for the
//!   web console's tests (screenshots kept under `target/screenshots`);
//! * [`TcpProxy`]: a TCP proxy that can cut its connections on demand;
//! * [`TestCa`]: a private certificate authority for TLS tests;
//! * [`netns::Bed`]: a network namespace joined to the machine by a veth
//!   pair (as root), for checks from a consumer's own network position;
//! * [`mesh::Mesh`]: a whole mesh over the built binaries (the servers
//!   above, `mesh-controller serve` and the providers as processes), which
//!   the end-to-end tests and the demo drive.
//!
//! Beside them, files a test writes: an executable script
//! ([`write_script`]), a provider's contributions file over many
//! consumers with their minted secrets ([`write_contributions`]), and any
//! file a running process reads, written whole ([`write_whole`]).
//!
//! Starting and stopping the servers is synchronous (blocking, with
//! `std::thread::sleep` polling and a hard deadline), so it works from any
//! test, including tests on tokio's paused clock. Every instance is private:
//! tests may run them concurrently.

use std::io::Read;
use std::net::{Ipv4Addr, TcpListener};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

mod browser;
mod certs;
mod cluster;
mod cmdline;
mod contributions;
mod keycloak;
mod mariadb;
pub mod mesh;
mod nats;
pub mod netns;
mod pg;
mod proxy;
mod rabbitmq;
mod redis;
mod scratch;
mod script;
mod tier;
mod whole;

pub use browser::{
    png_size, screenshots_dir, AxeViolation, Browser, BrowserMissing, BROWSER_HEIGHT,
    REQUIRE_BROWSER,
};
pub use certs::{CertFiles, TestCa};
pub use cluster::{NatsCluster, CLUSTER_SIZE};
pub use cmdline::CmdlineScan;
pub use contributions::write_contributions;
pub use keycloak::{
    KeycloakDist, KeycloakServer, KEYCLOAK_ADMIN, KEYCLOAK_BUILD, KEYCLOAK_START_DEADLINE,
};
pub use mariadb::{MariaDbServer, MARIADB_ADMIN};
pub use nats::{create_events_stream, NatsServer};
pub use pg::PgCluster;
pub use proxy::TcpProxy;
pub use rabbitmq::{RabbitServer, RABBITMQ_ADMIN, RABBITMQ_START_DEADLINE};
pub use redis::{RedisServer, REDIS_ADMIN};
pub use scratch::data_base;
pub use script::write_script;
pub use tier::{in_slow_tier, SLOW_TIER};
pub use whole::write_whole;

/// How long a server may take to become ready before the start panics.
const START_DEADLINE: Duration = Duration::from_secs(30);

/// How many times a start is tried on a fresh port when the chosen port
/// turned out to be taken (another test grabbed it in between).
const START_ATTEMPTS: usize = 3;

/// A free TCP port on 127.0.0.1 (bind :0, read, drop).
///
/// The port is free when this returns; nothing stops another process from
/// taking it before it is used, so the servers here retry on a new port when
/// theirs turns out to be taken.
pub fn free_port() -> u16 {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .expect("binding 127.0.0.1:0 to find a free port");
    listener
        .local_addr()
        .expect("local address of a bound listener")
        .port()
}

/// Whether this process runs as root.
fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

/// The first executable `name` in `PATH`, else the first of `fallbacks` that
/// exists.
fn find_in_path_or(name: &str, fallbacks: &[&str]) -> Option<PathBuf> {
    let from_path = std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|dir| dir.join(name))
            .find(|candidate| is_executable(candidate))
    });
    from_path.or_else(|| {
        fallbacks
            .iter()
            .map(PathBuf::from)
            .find(|candidate| is_executable(candidate))
    })
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    path.metadata()
        .map(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
        .unwrap_or(false)
}

/// The contents of a file, lossily decoded, or "" when it cannot be read.
fn read_lossy(path: &Path) -> String {
    read_lossy_from(path, 0)
}

/// The contents of a file from byte `offset`, lossily decoded, or "".
fn read_lossy_from(path: &Path, offset: u64) -> String {
    let mut bytes = Vec::new();
    if let Ok(mut file) = std::fs::File::open(path) {
        let _ = file.read_to_end(&mut bytes);
    }
    let start = usize::try_from(offset)
        .unwrap_or(usize::MAX)
        .min(bytes.len());
    String::from_utf8_lossy(&bytes[start..]).into_owned()
}

/// The size of a file, or 0.
fn file_len(path: &Path) -> u64 {
    path.metadata().map(|meta| meta.len()).unwrap_or(0)
}

/// The last `lines` lines of `text`.
fn tail(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// `len` random bytes from the kernel, hex encoded.
fn random_hex(len: usize) -> String {
    let mut bytes = vec![0u8; len];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut file| file.read_exact(&mut bytes))
        .expect("reading /dev/urandom");
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

/// Polls `ready` every 50 ms until it returns `Some`, or `None` once
/// `deadline` has passed.
fn poll_until<T>(deadline: Instant, mut ready: impl FnMut() -> Option<T>) -> Option<T> {
    loop {
        if let Some(value) = ready() {
            return Some(value);
        }
        if Instant::now() >= deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Waits until a server just spawned as `child` writes `ready` into its
/// `log`, at most [`START_DEADLINE`]: `Ok` with the child, else `Err(true)`
/// when the port was taken ("Address already in use"; try another) or
/// `Err(false)` when it ended or never became ready (then it is killed).
fn wait_ready(
    mut child: std::process::Child,
    log: &Path,
    ready: &str,
) -> Result<std::process::Child, bool> {
    let deadline = Instant::now() + START_DEADLINE;
    let outcome = poll_until(deadline, || {
        let text = read_lossy(log);
        let taken = text.contains("Address already in use");
        match child.try_wait() {
            Ok(Some(_)) => Some(Err(taken)),
            Ok(None) if text.contains(ready) => Some(Ok(())),
            Ok(None) if taken => Some(Err(true)),
            _ => None,
        }
    });
    match outcome {
        Some(Ok(())) => Ok(child),
        Some(Err(taken)) => {
            terminate(&mut child, Duration::ZERO);
            Err(taken)
        }
        None => {
            terminate(&mut child, Duration::ZERO);
            Err(false)
        }
    }
}

/// Sends SIGTERM to a child, waits up to `grace` for it to exit, then kills
/// it with SIGKILL and reaps it.
fn terminate(child: &mut std::process::Child, grace: Duration) {
    if let Ok(Some(_)) = child.try_wait() {
        return;
    }
    let pid = rustix::process::Pid::from_child(child);
    if rustix::process::kill_process(pid, rustix::process::Signal::TERM).is_ok() {
        let deadline = Instant::now() + grace;
        if poll_until(deadline, || child.try_wait().ok().flatten()).is_some() {
            return;
        }
    }
    let _ = child.kill();
    let _ = child.wait();
}
