//! The grants story (as root): a network namespace stands for forge's
//! container, joined to the machine by a veth pair, and `mesh-grants`
//! checks forge's grant (the provider's PostgreSQL, on the machine's side
//! of the pair) from inside it. Status is all well and counts the grant
//! checked reachable; the path from forge's namespace is dropped (a
//! blackhole route inside it) while the machine's own path stays open:
//! status names the unreachable grant; restored: all well again. The
//! namespace and the veth pair are removed at the end.

use std::net::{SocketAddr, TcpStream};
use std::process::{Command, Stdio};
use std::time::Duration;

use mesh_test_support::mesh::{Options, GRANTS_CHECK_EVERY, GRANTS_UNREACHABLE_AFTER};
use mesh_test_support::netns::Bed;
use serde_json::json;

use super::{postgres_mesh, WITHIN};
use crate::expect;
use crate::narrate::{Demo, StoryStop};

/// Tells the story.
pub fn tell(demo: &mut Demo) -> Result<(), StoryStop> {
    if !rustix::process::geteuid().is_root() {
        return Err(StoryStop::Cannot(
            "the grants story needs root: it makes a network namespace and a veth pair \
             (ip netns, ip link), and mesh-grants enters the namespace (setns); run it as \
             root, e.g. sudo scripts/demo grants"
                .to_owned(),
        ));
    }
    let bed = Bed::new().ok_or_else(|| {
        StoryStop::Cannot(
            "the kernel refuses network namespaces here: the grants story cannot run".to_owned(),
        )
    })?;
    let netns = bed.netns();
    demo.say(&format!(
        "forge's network namespace {}; the machine's side of its veth pair is {}",
        netns.display(),
        bed.host_ip
    ));
    let mut mesh = postgres_mesh(
        demo,
        Options {
            backend_also_on: Some(bed.host_ip.clone()),
            ..Options::default()
        },
    )?;
    let port = mesh.backend.port();
    let addr: SocketAddr = format!("{}:{port}", bed.host_ip)
        .parse()
        .map_err(|e| StoryStop::Cannot(format!("the bed's address {}: {e}", bed.host_ip)))?;

    // forge's grant: the provider's port, dialled from forge's own namespace.
    let file = mesh.path("grants.json");
    let grants = json!({ "machine": "app-1", "grants": [{
        "consumer": "forge", "provision": "postgres-database", "from": "postgres@db-1",
        "address": bed.host_ip, "port": port, "as": "forge", "netns": netns }] });
    std::fs::write(&file, grants.to_string())
        .map_err(|e| StoryStop::Cannot(format!("writing {}: {e}", file.display())))?;
    mesh.start_grants("app-1", &file);
    demo.say(&format!(
        "mesh-grants checks forge's grant ({addr}, the provider's PostgreSQL) from {} every \
         {GRANTS_CHECK_EVERY} (unreachable after {GRANTS_UNREACHABLE_AFTER} failed checks)",
        netns.display()
    ));
    demo.expect(&mesh, "forge's grant checked reachable", WITHIN, |s| {
        expect::grants(s, 1, &[])
    })?;
    demo.pause();
    demo.show(
        &mesh,
        &["status"],
        "the grant was checked from forge's own position",
    )?;
    demo.pause();

    demo.say(&format!(
        "the path from forge's namespace to {} is dropped (a blackhole route inside it)",
        bed.host_ip
    ));
    bed.drop_path(&bed.host_ip);
    let from_machine = TcpStream::connect_timeout(&addr, Duration::from_secs(1)).is_ok();
    demo.check(
        &mesh,
        "the machine itself still reaches the provider's port",
        from_machine
            .then_some(())
            .ok_or(format!("{addr} does not answer the machine")),
    )?;
    demo.detail(&format!(
        "from the machine itself, {addr} still answers: a check from here would pass"
    ));
    demo.check(
        &mesh,
        "forge's namespace no longer reaches the provider's port",
        (!reaches_from(&bed, addr))
            .then_some(())
            .ok_or(format!("{addr} still answers from {}", netns.display())),
    )?;
    demo.detail("from forge's namespace it does not");
    demo.expect(
        &mesh,
        "status names forge's grant unreachable",
        WITHIN,
        |s| expect::grants(s, 0, &["forge@app-1"]),
    )?;
    let said = demo.show(
        &mesh,
        &["status"],
        &format!("{GRANTS_UNREACHABLE_AFTER} failed checks later: status names the grant"),
    )?;
    demo.check(
        &mesh,
        "status says one grant unreachable",
        expect::opens_with(
            &said,
            "not all well: 0 consumers failing, 1 grant unreachable",
        ),
    )?;
    demo.pause();

    demo.say("the path is restored");
    bed.restore_path(&bed.host_ip);
    demo.expect(
        &mesh,
        "forge's grant reachable again: all well",
        WITHIN,
        |s| expect::grants(s, 1, &[]),
    )?;
    demo.show(&mesh, &["status"], "checked reachable again: all well")?;
    demo.done();
    Ok(())
}

/// Whether `addr` answers a TCP connection made from inside the bed's
/// namespace (`ip netns exec … bash -c 'exec 3<>/dev/tcp/…'`).
fn reaches_from(bed: &Bed, addr: SocketAddr) -> bool {
    let dial = format!("exec 3<>/dev/tcp/{}/{}", addr.ip(), addr.port());
    Command::new("ip")
        .args([
            "netns", "exec", &bed.name, "timeout", "2", "bash", "-c", &dial,
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success())
}
