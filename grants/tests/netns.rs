#![allow(missing_docs)]

//! Grants checked from real network namespaces (as root): each test makes
//! its own namespace, veth pair and addresses (unique names, so tests run
//! in parallel), dials only listeners it starts itself, and removes it all
//! on drop. Where the kernel refuses namespaces, a test says so loudly and
//! passes without checking (`SKIPPED`).
//!
//! A provider's port is a [`Provider`]: bound by number with no
//! `SO_REUSEADDR` nor `SO_REUSEPORT`, so no other socket of any process can
//! bind it while the test lives, and stopped with `shutdown(2)`, never by a
//! drop (issue 42: a child process that another test's thread forked holds a
//! copy of every socket of this process until it execs, and a listener
//! dropped here answers for as long as that copy lives).

use std::net::SocketAddr;
use std::os::fd::OwnedFd;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use mesh_grants::dial::{connect, dial, NOT_RUNNING};
use mesh_grants::{Agent, GrantCheck, GrantsSettings};
use mesh_protocol::event::{Event, ReachableReason};
use mesh_runtime::Outbox;
use mesh_test_support::netns::Bed;

fn settings() -> GrantsSettings {
    GrantsSettings {
        check_every: Duration::from_millis(100),
        connect_timeout: Duration::from_millis(500),
        ..GrantsSettings::default()
    }
}

struct World {
    _dir: tempfile::TempDir,
    file: PathBuf,
    agent: Agent,
}

fn world(grants: serde_json::Value) -> World {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("grants.json");
    std::fs::write(&file, grants.to_string()).unwrap();
    let agent = Agent::new(&file, settings(), Arc::new(Outbox::new()));
    World {
        _dir: dir,
        file,
        agent,
    }
}

fn grant(netns: &std::path::Path, address: &str, port: Option<u16>) -> serde_json::Value {
    serde_json::json!({ "machine": "app-1", "grants": [
        { "consumer": "forge", "provision": "postgres-database", "from": "postgres@db-1",
          "address": address, "port": port, "as": "forge", "netns": netns } ] })
}

fn kinds(published: &[Event]) -> Vec<&'static str> {
    published.iter().map(|e| e.kind().as_str()).collect()
}

/// A provider's port on the machine's side of a bed: one socket, bound to
/// its port by number, with neither `SO_REUSEADDR` nor `SO_REUSEPORT`. While
/// it lives, listening or stopped, no other socket of any process binds that
/// port on the bed's address or on `0.0.0.0`, so nothing else can answer for
/// it.
///
/// A provider goes with [`Provider::stop`]: `shutdown(2)` acts on the socket
/// itself, so it stops listening in every process that holds a copy of it.
/// Dropping it only closes this process's descriptor: a child forked by
/// another test's thread (a bed's `ip`) holds a copy until it execs, and the
/// kernel goes on completing connections for the listener until the last
/// copy is closed (issue 42; `a_stopped_provider_is_refused_while_another_process_holds_its_socket`).
struct Provider {
    socket: OwnedFd,
    addr: SocketAddr,
}

impl Provider {
    /// A port of `ip` the kernel says is free, bound by number (a port bound
    /// by number stays bound through a shutdown; one the kernel chose at
    /// bind does not), and listening. Should another socket take the port
    /// between the two binds, the second fails and another port is tried.
    fn start(ip: &str) -> Provider {
        use rustix::net::{bind, getsockname, socket_with, AddressFamily, SocketFlags, SocketType};
        let ip: std::net::IpAddr = ip.parse().unwrap();
        let new = || {
            socket_with(
                AddressFamily::INET,
                SocketType::STREAM,
                SocketFlags::CLOEXEC,
                None,
            )
            .unwrap()
        };
        for _ in 0..100 {
            let probe = new();
            bind(&probe, &SocketAddr::new(ip, 0)).unwrap();
            let port = SocketAddr::try_from(getsockname(&probe).unwrap())
                .unwrap()
                .port();
            drop(probe);
            let socket = new();
            let addr = SocketAddr::new(ip, port);
            match bind(&socket, &addr) {
                Ok(()) => {
                    let provider = Provider { socket, addr };
                    provider.restart();
                    return provider;
                }
                Err(rustix::io::Errno::ADDRINUSE) => continue,
                Err(e) => panic!("binding {addr}: {e}"),
            }
        }
        panic!("no port of {ip} stayed free from one bind to the next in 100 tries");
    }

    fn port(&self) -> u16 {
        self.addr.port()
    }

    /// The provider goes: its socket stops listening (a connection is
    /// refused) in every process that holds it, and keeps its port.
    fn stop(&self) {
        rustix::net::shutdown(&self.socket, rustix::net::Shutdown::Read).unwrap();
    }

    /// The provider listens (again) on its port.
    fn restart(&self) {
        rustix::net::listen(&self.socket, 128).unwrap();
    }
}

/// Another process holding a copy of `socket` (as its stdin) until dropped:
/// what a child forked by a test beside this one holds until it execs.
struct Holder(std::process::Child);

impl Holder {
    fn of(socket: &OwnedFd) -> Holder {
        let copy = socket.try_clone().unwrap();
        let child = std::process::Command::new("sleep")
            .arg("600")
            .stdin(copy)
            .spawn()
            .unwrap();
        Holder(child)
    }
}

impl Drop for Holder {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test]
async fn issue_145_the_consumers_path_dropped_while_the_machines_stays_open() {
    let Some(bed) = Bed::new() else { return };
    // The provider's port, on the machine's own address.
    let provider = Provider::start(&bed.host_ip);
    let port = provider.port();
    let mut w = world(grant(&bed.netns(), &bed.host_ip, Some(port)));

    let round = w.agent.check().await;
    assert_eq!(round.reached, 1, "{round:?}");
    match &round.published[..] {
        [Event::Reachable(b)] => assert_eq!(b.reason, ReachableReason::FirstSuccessAfterStart),
        other => panic!("{other:?}"),
    }
    assert_eq!(
        connect(&bed.host_ip, port, Duration::from_millis(500)),
        GrantCheck::Reached
    );

    bed.drop_path(&bed.host_ip);
    for n in 1..=2 {
        let round = w.agent.check().await;
        assert_eq!(round.failed, 1, "check {n}: {round:?}");
        assert!(
            round.published.is_empty(),
            "nothing said before the third: {round:?}"
        );
        // The machine's own position still passes: why the position matters.
        assert_eq!(
            connect(&bed.host_ip, port, Duration::from_millis(500)),
            GrantCheck::Reached
        );
    }
    let round = w.agent.check().await;
    match &round.published[..] {
        [Event::Unreachable(b)] => {
            assert_eq!(b.failures, 3);
            assert_eq!(b.port, port);
            assert_eq!(b.address, bed.host_ip);
            assert!(b.last_reachable_at.is_some(), "it worked before: {b:?}");
            assert!(b.last_reachable_at.unwrap() <= b.failing_since);
            assert!(!b.error.is_empty());
        }
        other => panic!("unreachable after the third failed check, got {other:?}"),
    }
    assert_eq!(
        connect(&bed.host_ip, port, Duration::from_millis(500)),
        GrantCheck::Reached,
        "a check from the machine passes while the consumer cannot reach it"
    );
    // The fourth says nothing new (repeat every 15 min); the count goes on.
    assert!(w.agent.check().await.published.is_empty());

    bed.restore_path(&bed.host_ip);
    let round = w.agent.check().await;
    match &round.published[..] {
        [Event::Reachable(b)] => assert_eq!(b.reason, ReachableReason::Success),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn a_restarting_provider_says_nothing_and_the_count_rises_and_falls() {
    let Some(bed) = Bed::new() else { return };
    let provider = Provider::start(&bed.host_ip);
    let mut w = world(grant(&bed.netns(), &bed.host_ip, Some(provider.port())));
    assert_eq!(kinds(&w.agent.check().await.published), ["reachable"]);
    let key = (
        mesh_protocol::Name::parse("forge").unwrap(),
        "postgres-database".to_owned(),
        "postgres@db-1".to_owned(),
    );
    provider.stop(); // the provider restarts: gone for one check
    let round = w.agent.check().await;
    assert_eq!((round.reached, round.failed), (0, 1), "{round:?}");
    assert!(round.published.is_empty(), "{round:?}");
    assert_eq!(w.agent.standing(&key).unwrap().failures(), 1);
    provider.restart();
    let round = w.agent.check().await;
    assert_eq!(round.reached, 1);
    assert!(round.published.is_empty(), "{round:?}");
    assert_eq!(w.agent.standing(&key).unwrap().failures(), 0);
}

/// Issue 42: `a_restarting_provider_says_nothing_and_the_count_rises_and_falls`
/// dropped its listener and found the port still answering (in CI, on a busy
/// machine, beside another test of this binary making its bed): the thread
/// of that test had forked a child to run `ip`, the child held a copy of
/// every descriptor of this process until it exec'd (and its socket was
/// seen held there, by the child not yet exec'd), and a listener is open
/// while any copy of it is. Here the copy is held for the whole test: a drop
/// still answers, a stop is refused.
#[tokio::test]
async fn a_stopped_provider_is_refused_while_another_process_holds_its_socket() {
    let Some(bed) = Bed::new() else { return };
    let timeout = Duration::from_millis(500);
    let netns = bed.netns();

    let dropped = Provider::start(&bed.host_ip);
    let port = dropped.port();
    let _held = Holder::of(&dropped.socket);
    drop(dropped);
    assert_eq!(
        dial(&netns, &bed.host_ip, port, timeout).await,
        GrantCheck::Reached,
        "a listener dropped here and held by another process still answers: \
         a drop is not a provider gone"
    );

    let stopped = Provider::start(&bed.host_ip);
    let _held = Holder::of(&stopped.socket);
    assert_eq!(
        dial(&netns, &bed.host_ip, stopped.port(), timeout).await,
        GrantCheck::Reached
    );
    stopped.stop();
    assert_eq!(
        dial(&netns, &bed.host_ip, stopped.port(), timeout).await,
        GrantCheck::Failed("connection refused".into()),
        "stopped, it is refused though another process holds it"
    );
    stopped.restart();
    assert_eq!(
        dial(&netns, &bed.host_ip, stopped.port(), timeout).await,
        GrantCheck::Reached,
        "back on the same port"
    );
}

/// Beds made at once (six threads here; another copy of this suite may be
/// making its own beside them) share no name and no subnet, and each one's
/// namespace reaches a provider on its own side of the pair.
#[tokio::test]
async fn beds_made_at_once_share_no_name_nor_subnet_and_each_reaches_its_own() {
    let start = std::sync::Barrier::new(6);
    let beds = std::thread::scope(|s| {
        let made: Vec<_> = (0..6)
            .map(|_| {
                s.spawn(|| {
                    start.wait();
                    Bed::new()
                })
            })
            .collect();
        made.into_iter()
            .map(|h| h.join().unwrap())
            .collect::<Option<Vec<Bed>>>()
    });
    let Some(beds) = beds else { return };
    let distinct = |of: fn(&Bed) -> &str| {
        let all: std::collections::BTreeSet<&str> = beds.iter().map(of).collect();
        all.len() == beds.len()
    };
    assert!(distinct(|b| &b.name), "names shared");
    assert!(distinct(|b| &b.host_ip), "subnets shared");
    for bed in &beds {
        let provider = Provider::start(&bed.host_ip);
        assert_eq!(
            dial(
                &bed.netns(),
                &bed.host_ip,
                provider.port(),
                Duration::from_millis(500)
            )
            .await,
            GrantCheck::Reached,
            "from {}",
            bed.name
        );
    }
}

#[tokio::test]
async fn a_consumer_not_running_is_unchecked_never_unreachable() {
    let Some(bed) = Bed::new() else { return };
    let gone = PathBuf::from(format!("/run/netns/{}-stopped", bed.name));
    let mut w = world(grant(&gone, &bed.host_ip, Some(9)));
    let round = w.agent.check().await;
    match &round.published[..] {
        [Event::Unchecked(b)] => assert_eq!(b.reason, NOT_RUNNING),
        other => panic!("{other:?}"),
    }
    for _ in 0..5 {
        let round = w.agent.check().await;
        assert_eq!((round.unchecked, round.failed), (1, 0));
        assert!(round.published.is_empty(), "{round:?}");
    }
}

#[tokio::test]
async fn a_grant_with_no_port_is_never_dialled_nor_claimed_checked() {
    let Some(bed) = Bed::new() else { return };
    let mut w = world(grant(&bed.netns(), &bed.host_ip, None));
    let round = w.agent.check().await;
    assert_eq!((round.reached, round.failed, round.unchecked), (0, 0, 1));
    match &round.published[..] {
        [Event::Unchecked(b)] => assert_eq!(b.reason, "no port"),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn a_bad_grants_file_names_the_entry_and_keeps_the_last_good() {
    let Some(bed) = Bed::new() else { return };
    let provider = Provider::start(&bed.host_ip);
    let port = provider.port();
    let mut w = world(grant(&bed.netns(), &bed.host_ip, Some(port)));
    assert_eq!(w.agent.check().await.reached, 1);
    let mut bad = grant(&bed.netns(), &bed.host_ip, Some(port));
    bad["grants"].as_array_mut().unwrap().push(serde_json::json!(
        { "consumer": "Wiki!", "provision": "p", "from": "a@b", "address": "x", "port": 1, "netns": "/x" }));
    std::fs::write(&w.file, bad.to_string()).unwrap();
    let round = w.agent.check().await;
    assert_eq!(round.reached, 1, "the good entry goes on");
    assert_eq!(round.file_errors.len(), 1);
    assert!(
        round.file_errors[0].contains("grants[1] (consumer \"Wiki!\"): "),
        "{:?}",
        round.file_errors
    );
    let metric = |text: &str, name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(&format!("{name} ")).map(str::to_owned))
            .unwrap_or_else(|| panic!("no {name} in {text}"))
    };
    let text = w.agent.metrics().encode();
    assert_eq!(metric(&text, "mesh_grants_entries_refused"), "1", "{text}");
    assert_eq!(metric(&text, "mesh_grants_file_refused"), "0", "{text}");
    std::fs::write(&w.file, "{ not json").unwrap();
    let round = w.agent.check().await;
    assert_eq!(round.reached, 1, "the last good list is kept");
    assert!(round.file_errors[0].contains(&w.file.display().to_string()));
    let text = w.agent.metrics().encode();
    assert_eq!(metric(&text, "mesh_grants_file_refused"), "1", "{text}");
    assert_eq!(
        metric(&text, "mesh_grants_entries_refused"),
        "1",
        "the list served is the one with the entry refused: {text}"
    );
}
