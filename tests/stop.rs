//! A stop is honoured within seconds, whatever is away (docs/contracts/command-lines.md#stopping): each long-running binary (`mesh-controller
//! serve`, `mesh-postgres`, `mesh-grants`) given SIGTERM while its bus (or
//! `serve`'s store, or the provider's backend) is away ends within
//! [`PROMPT`] with exit 0, and a second SIGINT or SIGTERM while it stops
//! ends it at once. Over the built binaries, a real nats-server and real
//! PostgreSQL.

use std::process::{Command, ExitStatus};
use std::time::{Duration, Instant};

use mesh_test_support::mesh::{binary, healthy_mesh_with, Mesh, Options, Process};
use serde_json::json;

/// How long a binary may take to end after SIGTERM while something is
/// away: a couple of seconds (the shell's own bound, after which it ends
/// the program with a nonzero code, is 10 s).
const PROMPT: Duration = Duration::from_secs(2);

/// How long a binary may take to end after a second signal.
const AT_ONCE: Duration = Duration::from_millis(500);

/// How long a process may take to notice that its bus went away.
const NOTICE: Duration = Duration::from_secs(30);

/// Waits until `process`'s log says `text`.
fn wait_for_log(process: &Process, text: &str) {
    let deadline = Instant::now() + NOTICE;
    while !process.log_text().contains(text) {
        assert!(
            Instant::now() < deadline,
            "{} never said {text:?}:\n{}",
            process.name,
            process.log_text()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Sends SIGTERM and waits [`PROMPT`]: the exit status and how long it took.
fn terminate(process: &mut Process, what: &str) -> (ExitStatus, Duration) {
    let sent = Instant::now();
    process.terminate();
    let status = process.wait_exit(PROMPT).unwrap_or_else(|| {
        panic!(
            "{what}: still running {PROMPT:?} after SIGTERM:\n{}",
            process.log_text()
        )
    });
    let took = sent.elapsed();
    eprintln!("{what}: {status} after {took:?}");
    (status, took)
}

/// Sends SIGTERM, then SIGINT 200 ms later: it ends within [`AT_ONCE`] of
/// the second signal, however far its graceful stop got.
fn terminate_twice(process: &mut Process, what: &str) {
    process.terminate();
    std::thread::sleep(Duration::from_millis(200));
    let sent = Instant::now();
    process.interrupt();
    let status = process.wait_exit(AT_ONCE);
    assert!(
        status.is_some(),
        "{what}: still running {AT_ONCE:?} after a second signal:\n{}",
        process.log_text()
    );
    eprintln!(
        "{what}: {} {:?} after the second signal",
        status.unwrap(),
        sent.elapsed()
    );
}

/// The mesh's bus stopped, and `process` told of it.
fn bus_away(mesh: &mut Mesh, process: fn(&Mesh) -> &Process) {
    mesh.nats.stop();
    wait_for_log(process(mesh), "disconnected from the bus");
}

fn controller(mesh: &Mesh) -> &Process {
    mesh.controller.as_ref().expect("serve runs")
}

fn provider(mesh: &Mesh) -> &Process {
    mesh.provider.as_ref().expect("the provider runs")
}

fn agent(mesh: &Mesh) -> &Process {
    mesh.grants.as_ref().expect("mesh-grants runs")
}

/// `mesh-grants` on app-1 with its default timings (the bus's
/// acknowledgement awaited 5 s), its one grant's consumer not running
/// (said unchecked: no network namespace needed), once it is on the bus.
fn mesh_with_grants() -> Mesh {
    let mut mesh = Mesh::with(Options::default());
    let file = mesh.path("grants.json");
    let grants = json!({"machine": "app-1", "grants": [{
        "consumer": "forge", "provision": "postgres-database", "from": "postgres@db-1",
        "address": "127.0.0.1", "port": 5432, "as": "forge",
        "netns": mesh.path("no-such-netns") }]});
    std::fs::write(&file, grants.to_string()).unwrap();
    let mut command = Command::new(binary("mesh-grants"));
    command
        .arg("--grants")
        .arg(&file)
        .args(mesh.bus_flags("_grants@app-1"))
        .args(["--check-every", "200ms"]);
    mesh.grants = Some(Process::spawn("grants", command, mesh.path("grants.log")));
    wait_for_log(agent(&mesh), "connected to the bus");
    mesh
}

/// Holds a PostgreSQL server stopped (SIGSTOP, its postmaster and every
/// session process): it accepts connections (the kernel does) and answers
/// nothing, like a server that hangs. Continued (SIGCONT) on drop.
struct Hung(Vec<String>);

impl Hung {
    fn hang(server: &mesh_test_support::PgCluster) -> Hung {
        let pid_file = server.data_dir().join("postmaster.pid");
        let text = std::fs::read_to_string(&pid_file).expect("postmaster.pid");
        let postmaster = text.lines().next().expect("a pid").trim().to_owned();
        let mut pids = vec![postmaster.clone()];
        for entry in std::fs::read_dir("/proc").unwrap().flatten() {
            let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
                continue;
            };
            // "pid (comm) state ppid ...": the parent after the command's name.
            let parent = stat
                .rsplit_once(") ")
                .and_then(|(_, rest)| rest.split(' ').nth(1));
            if parent == Some(postmaster.as_str()) {
                pids.push(entry.file_name().to_string_lossy().into_owned());
            }
        }
        for pid in &pids {
            let _ = Command::new("kill").args(["-STOP", pid]).status();
        }
        Hung(pids)
    }
}

impl Drop for Hung {
    fn drop(&mut self) {
        for pid in &self.0 {
            let _ = Command::new("kill").args(["-CONT", pid]).status();
        }
    }
}

#[test]
fn serve_given_sigterm_while_the_bus_is_away_stops_within_seconds() {
    let mut mesh = healthy_mesh_with(Options::default());
    bus_away(&mut mesh, controller);
    let mut serve = mesh.controller.take().unwrap();
    let (status, took) = terminate(&mut serve, "serve with the bus away");
    assert!(
        status.success(),
        "{status} after {took:?}:\n{}",
        serve.log_text()
    );
}

#[test]
fn serve_given_sigterm_while_the_store_is_away_stops_within_seconds() {
    let mut mesh = healthy_mesh_with(Options::default());
    mesh.store.stop();
    // An event to apply while the store is away: the round is held.
    mesh.secret("wiki", None);
    wait_for_log(controller(&mesh), "store away");
    let mut serve = mesh.controller.take().unwrap();
    let (status, took) = terminate(&mut serve, "serve with the store away");
    assert!(
        status.success(),
        "{status} after {took:?}:\n{}",
        serve.log_text()
    );
}

#[test]
fn serve_given_sigterm_while_the_store_hangs_stops_within_seconds() {
    let mut mesh = healthy_mesh_with(Options::default());
    let hung = Hung::hang(&mesh.store);
    // An event to apply: its round waits on the hung store (bounded by 30 s).
    mesh.secret("wiki", None);
    std::thread::sleep(Duration::from_secs(3));
    let mut serve = mesh.controller.take().unwrap();
    let (status, took) = terminate(&mut serve, "serve with the store hung");
    drop(hung);
    assert!(
        status.success(),
        "{status} after {took:?}:\n{}",
        serve.log_text()
    );
}

#[test]
fn a_second_signal_ends_serve_at_once_while_the_bus_is_away() {
    let mut mesh = healthy_mesh_with(Options::default());
    bus_away(&mut mesh, controller);
    let mut serve = mesh.controller.take().unwrap();
    terminate_twice(&mut serve, "serve with the bus away");
}

#[test]
fn a_provider_given_sigterm_while_its_bus_is_away_stops_within_seconds() {
    let mut mesh = healthy_mesh_with(Options::default());
    bus_away(&mut mesh, provider);
    // An event to send while the bus is away: it is pending at the stop.
    mesh.secret("wiki", None);
    std::thread::sleep(Duration::from_secs(3));
    let mut provider = mesh.provider.take().unwrap();
    let (status, took) = terminate(&mut provider, "mesh-postgres with the bus away");
    assert!(
        status.success(),
        "{status} after {took:?}:\n{}",
        provider.log_text()
    );
    assert!(
        provider.log_text().contains("pending"),
        "the events it could not send are counted:\n{}",
        provider.log_text()
    );
}

#[test]
fn a_provider_given_sigterm_while_its_backend_hangs_stops_within_seconds() {
    let mut mesh = healthy_mesh_with(Options::default());
    let hung = Hung::hang(&mesh.backend);
    // A pass whose calls wait on the hung server (its connect timeout is 10 s).
    std::thread::sleep(Duration::from_secs(1));
    let mut provider = mesh.provider.take().unwrap();
    let (status, took) = terminate(&mut provider, "mesh-postgres with its backend hung");
    drop(hung);
    assert!(
        status.success(),
        "{status} after {took:?}:\n{}",
        provider.log_text()
    );
}

#[test]
fn a_second_signal_ends_a_provider_at_once_while_its_bus_is_away() {
    let mut mesh = healthy_mesh_with(Options::default());
    bus_away(&mut mesh, provider);
    mesh.secret("wiki", None);
    std::thread::sleep(Duration::from_secs(1));
    let mut provider = mesh.provider.take().unwrap();
    terminate_twice(&mut provider, "mesh-postgres with the bus away");
}

#[test]
fn mesh_grants_given_sigterm_while_its_bus_is_away_stops_within_seconds() {
    let mut mesh = mesh_with_grants();
    bus_away(&mut mesh, agent);
    std::thread::sleep(Duration::from_secs(1));
    let mut grants = mesh.grants.take().unwrap();
    let (status, took) = terminate(&mut grants, "mesh-grants with the bus away");
    assert!(
        status.success(),
        "{status} after {took:?}:\n{}",
        grants.log_text()
    );
}

#[test]
fn a_second_signal_ends_mesh_grants_at_once_while_its_bus_is_away() {
    let mut mesh = mesh_with_grants();
    bus_away(&mut mesh, agent);
    std::thread::sleep(Duration::from_secs(1));
    let mut grants = mesh.grants.take().unwrap();
    terminate_twice(&mut grants, "mesh-grants with the bus away");
}
