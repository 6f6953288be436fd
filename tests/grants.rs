//! Grants end to end over real processes (as root): a private nats-server
//! configured with the permissions `mesh-controller permissions` derives (so
//! `_grants@app-1` may publish its own machine's grant subjects and nothing
//! more), PostgreSQL, `mesh-controller serve`, `mesh-postgres`, and the built
//! `mesh-grants` checking a grant from inside a consumer's network namespace
//! the test makes (a veth pair from test-support's bed). Every assertion
//! reads `mesh-controller status`, as an operator would.
//!
//! Where the kernel refuses network namespaces the test says `SKIPPED` and
//! passes without checking.

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::time::Duration;

use mesh_test_support::mesh::{all_well, healthy_mesh_with, Mesh, Options};
use mesh_test_support::netns::Bed;
use mesh_test_support::write_whole;
use serde_json::{json, Value};

/// What the all-well sentence says when not every grant in scope was
/// checked reachable.
const NOT_PROVEN: &str = "does not prove that a consumer can reach its provider";

/// A provider's port on the machine's own address of the bed: it accepts
/// (and drops) every connection, so its backlog never fills.
fn provider_port(bed: &Bed) -> SocketAddr {
    let listener = TcpListener::bind((bed.host_ip.as_str(), 0)).unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            drop(stream);
        }
    });
    addr
}

/// The grants file of app-1: forge's grant, checked from the bed's
/// namespace, and each of `more`.
fn write_grants(file: &Path, bed: &Bed, addr: SocketAddr, more: &[Value]) {
    let mut grants = vec![json!({
        "consumer": "forge", "provision": "postgres-database", "from": "postgres@db-1",
        "address": bed.host_ip, "port": addr.port(), "as": "forge", "netns": bed.netns() })];
    grants.extend_from_slice(more);
    let text = json!({ "machine": "app-1", "grants": grants }).to_string();
    write_whole(file, text);
}

/// wiki's grant entry: its `port` as given, dialled from `netns`.
fn wiki(bed: &Bed, port: Value, netns: &Path) -> Value {
    json!({
        "consumer": "wiki", "provision": "postgres-database", "from": "postgres@db-1",
        "address": bed.host_ip, "port": port, "as": "wiki", "netns": netns })
}

fn grants(status: &Value) -> &Value {
    &status["grants"]
}

fn reachable(status: &Value) -> u64 {
    grants(status)["reachable"].as_u64().unwrap_or(0)
}

/// `consumer@machine` of each grant in `grants.<kind>` of `status --json`.
fn named(status: &Value, kind: &str) -> Vec<String> {
    grants(status)[kind]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|g| {
                    format!(
                        "{}@{}",
                        g["consumer"].as_str().unwrap_or("?"),
                        g["machine"].as_str().unwrap_or("?")
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

fn sentence(status: &Value) -> &str {
    status["sentence"].as_str().expect("a sentence")
}

/// What `mesh-controller status` (human) prints; it exits 0.
fn human_status(mesh: &Mesh) -> String {
    let (code, out, err) = mesh.controller(&["status"]);
    assert_eq!(code, 0, "status exits 0 whatever it says: {err}");
    out
}

/// Whether the machine's own position reaches the provider's port.
fn machine_reaches(addr: SocketAddr) -> bool {
    TcpStream::connect_timeout(&addr, Duration::from_millis(500)).is_ok()
}

#[test]
fn a_consumers_dropped_path_is_named_by_status_and_all_well_returns_when_restored() {
    let Some(bed) = Bed::new() else { return };
    let addr = provider_port(&bed);
    let mut mesh = healthy_mesh_with(Options::default());
    let file = mesh.path("grants.json");
    write_grants(&file, &bed, addr, &[]);
    mesh.start_grants("app-1", &file);

    // Reachable: the grant is counted checked, and with every grant in scope
    // checked reachable, all-well no longer says it proves nothing.
    let status = mesh.wait_status("forge's grant checked reachable", |s| {
        all_well(s) && reachable(s) == 1
    });
    let said = sentence(&status);
    assert!(
        said.starts_with("all well")
            && said.contains(
                "; 1 of 1 grant checked reachable from their consumers' own network positions"
            )
            && !said.contains(NOT_PROVEN),
        "{said}"
    );
    assert_eq!(named(&status, "unreachable"), Vec::<String>::new());
    assert_eq!(named(&status, "unchecked"), Vec::<String>::new());

    // The path from forge's namespace is dropped; the machine's stays open.
    bed.drop_path(&bed.host_ip);
    let status = mesh.wait_status("forge's grant unreachable", |s| {
        named(s, "unreachable") == ["forge@app-1"]
    });
    assert!(!all_well(&status));
    let grant = &grants(&status)["unreachable"][0];
    assert_eq!(grant["provision"], "postgres-database");
    assert_eq!(grant["from"], "postgres@db-1");
    assert_eq!(grant["address"], bed.host_ip.as_str());
    assert_eq!(grant["port"], addr.port());
    let failures = grant["failures"].as_u64().unwrap();
    assert!(failures >= 3, "said after the third failed check: {grant}");
    assert!(
        !grant["last_reachable_at"].is_null(),
        "it worked before: {grant}"
    );
    assert!(!grant["error"].as_str().unwrap().is_empty(), "{grant}");
    assert!(
        machine_reaches(addr),
        "a check from the machine's own position still passes"
    );
    let human = human_status(&mesh);
    assert!(
        human.starts_with("not all well: 0 consumers failing, 1 grant unreachable"),
        "{human}"
    );
    let line = format!(
        "  forge@app-1 cannot reach postgres@db-1 ({}:{}) from its own network: ",
        bed.host_ip,
        addr.port()
    );
    let named_line = human
        .lines()
        .find(|l| l.starts_with(&line))
        .unwrap_or_else(|| panic!("no line {line:?} in:\n{human}"));
    assert!(
        named_line.contains(" checks failed since ")
            && !named_line.contains("last reachable never"),
        "{named_line}"
    );

    // Restored: all well again, proven again.
    bed.restore_path(&bed.host_ip);
    let status = mesh.wait_status("forge's grant reachable again", |s| {
        all_well(s) && reachable(s) == 1 && named(s, "unreachable").is_empty()
    });
    assert!(!sentence(&status).contains(NOT_PROVEN), "{status:#}");
    let human = human_status(&mesh);
    assert!(human.starts_with("all well"), "{human}");

    // A consumer that is not running (its namespace gone) is counted
    // unchecked, never called broken, and all-well proves nothing again.
    let stopped = format!("/run/netns/{}-stopped", bed.name);
    write_grants(
        &file,
        &bed,
        addr,
        &[wiki(&bed, json!(addr.port()), Path::new(&stopped))],
    );
    let status = mesh.wait_status("wiki's grant unchecked", |s| {
        named(s, "unchecked") == ["wiki@app-1"]
    });
    assert!(all_well(&status), "unchecked is not broken: {status:#}");
    assert_eq!(reachable(&status), 1);
    assert_eq!(named(&status, "unreachable"), Vec::<String>::new());
    assert_eq!(
        grants(&status)["unchecked"][0]["reason"],
        "consumer not running"
    );
    let said = sentence(&status);
    assert!(
        said.contains(
            "; 1 of 2 grants checked reachable from their consumers' own network positions \
             (1 unchecked); this does not prove that a consumer can reach its provider"
        ),
        "{said}"
    );
    let human = human_status(&mesh);
    assert!(human.starts_with("all well"), "{human}");
    assert!(
        human.contains(
            "  wiki@app-1 grant from postgres@db-1 (postgres-database) unchecked: consumer not running"
        ),
        "{human}"
    );

    // A bad entry (wiki's port is no number): wiki's grant is not checked,
    // and the mesh says so at once, naming the entry; it is not all well.
    write_grants(&file, &bed, addr, &[wiki(&bed, json!("x"), &bed.netns())]);
    let status = mesh.wait_status("wiki's grants entry refused", |s| !refused(s).is_empty());
    assert!(!all_well(&status));
    assert!(
        sentence(&status).contains("1 machine's grants refused"),
        "{status:#}"
    );
    let entry = &refused(&status)[0];
    assert_eq!(entry["input"], "grants");
    assert_eq!(entry["provider_module"], "mesh-grants");
    assert_eq!(entry["provider_machine"], "app-1");
    assert_eq!(entry["index"], 1);
    assert_eq!(entry["required"], json!(["wiki@app-1"]));
    let human = human_status(&mesh);
    assert!(
        human.contains(
            "  wiki@app-1: grants not checked: mesh-grants@app-1 refused its grants entry 1: "
        ),
        "{human}"
    );

    // Restarted with a file that cannot be parsed: status names the file,
    // not a silence.
    mesh.stop_grants();
    std::fs::write(&file, "{ \"machine\": ").unwrap();
    mesh.start_grants("app-1", &file);
    let status = mesh.wait_status("the grants file refused", |s| {
        refused(s).iter().any(|e| e["index"].is_null())
    });
    assert!(!all_well(&status));
    let reason = refused(&status)[0]["reason"].as_str().unwrap().to_owned();
    assert!(
        reason.contains(&file.display().to_string()) && reason.contains("cannot be parsed"),
        "{reason}"
    );
    assert_eq!(
        refused(&status)[0]["required"],
        json!(["forge@app-1", "wiki@app-1"])
    );

    // Mended: all well again, nothing refused.
    write_grants(&file, &bed, addr, &[]);
    let status = mesh.wait_status("the grants file taken again", |s| {
        all_well(s) && refused(s).is_empty() && reachable(s) >= 1
    });
    assert!(sentence(&status).starts_with("all well"), "{status:#}");
    mesh.stop_grants();
}

/// The `input_refused` entries of `status --json` (absent: none).
fn refused(status: &Value) -> Vec<Value> {
    status["input_refused"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}
