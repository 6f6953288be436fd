//! End to end over real processes: the built `mesh-controller` and
//! `mesh-postgres` binaries, a real nats-server configured with the derived
//! permissions, and real PostgreSQL clusters (the provider's backend and the
//! controller's store). Every assertion reads `mesh-controller status --json`
//! (or `node show`, `approve`), as an operator would.

mod support;

use std::time::{Duration, Instant};

use support::{all_well, failing, unheard, Mesh, Options, WAIT};

/// Waits until the provider's log says `words` at least `times` times.
fn wait_log(mesh: &Mesh, words: &str, times: usize) {
    let deadline = Instant::now() + WAIT;
    while mesh.provider_log().matches(words).count() < times {
        assert!(
            Instant::now() < deadline,
            "the provider never said {words:?} {times} times:\n{}",
            mesh.provider_log()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A mesh whose three consumers have been served once, and whose provider
/// the controller has heard from (until then status rightly says it is not).
fn healthy_mesh() -> Mesh {
    healthy_mesh_with(Options::default())
}

/// Like [`healthy_mesh`], made of `options`.
fn healthy_mesh_with(options: Options) -> Mesh {
    let mut mesh = Mesh::with(options);
    mesh.start_controller();
    mesh.start_provider();
    wait_log(&mesh, "saying recovered", 3);
    mesh.wait_status("postgres@db-1 heard from", |s| {
        !unheard(s).contains(&"postgres@db-1".to_owned())
    });
    mesh
}

#[test]
fn a_failing_consumer_shows_in_status_and_disappears_when_it_recovers() {
    let mesh = healthy_mesh();
    let status = mesh.wait_status("all well", all_well);
    assert!(
        status["sentence"].as_str().unwrap().starts_with("all well"),
        "{status}"
    );
    assert_eq!(failing(&status), Vec::<String>::new());

    mesh.secret("wiki", None);
    let status = mesh.wait_status("wiki failing", |s| failing(s) == ["wiki"]);
    assert!(!all_well(&status));
    let entry = &status["failing"][0];
    assert_eq!(entry["provider_module"], "postgres");
    assert_eq!(entry["provider_machine"], "db-1");
    assert_eq!(entry["consumer_machine"], "app-1");
    assert_eq!(entry["provision"], "postgres-database");
    assert_eq!(entry["class"], "secret-unreadable");
    assert!(entry["attempts"].as_u64().unwrap() >= 2);
    assert!(
        !status.to_string().contains("minted-"),
        "no secret in status"
    );

    // node show names it on the provider's and on the consumer's machine only.
    for (machine, expected) in [("db-1", true), ("app-1", true), ("app-2", false)] {
        let (code, out, err) = mesh.controller(&["node", "show", machine, "--json"]);
        assert_eq!(code, 0, "{err}");
        assert_eq!(
            out.contains("\"wiki\""),
            expected,
            "node show {machine}: {out}"
        );
    }
    let (code, human, _) = mesh.controller(&["status"]);
    assert_eq!(code, 0);
    assert!(human.starts_with("not all well: 1 consumer"), "{human}");
    assert!(human.contains("wiki"), "{human}");

    mesh.secret("wiki", Some("minted-wiki-secret"));
    mesh.wait_status("all well again", |s| all_well(s) && failing(s).is_empty());
}

#[test]
fn a_provider_restart_on_a_healthy_mesh_produces_no_failing_entry() {
    let mut mesh = healthy_mesh();
    mesh.stop_provider();
    mesh.start_provider();
    wait_log(&mesh, "saying recovered", 3);
    // Several passes later, still nothing failing.
    let deadline = Instant::now() + Duration::from_secs(3);
    while Instant::now() < deadline {
        let status = mesh.status().expect("status");
        assert!(
            all_well(&status) && failing(&status).is_empty(),
            "{status:#}"
        );
        std::thread::sleep(Duration::from_millis(300));
    }
    assert!(!mesh.provider_log().contains("saying failing"));
}

#[test]
fn a_recovery_said_while_the_controller_is_stopped_lands_after_it_restarts() {
    let mut mesh = healthy_mesh();
    mesh.secret("wiki", None);
    mesh.wait_status("wiki failing", |s| failing(s) == ["wiki"]);
    mesh.stop_controller();
    mesh.secret("wiki", Some("minted-wiki-secret"));
    wait_log(&mesh, "saying recovered consumer=wiki reason=success", 1);
    std::thread::sleep(Duration::from_secs(1));
    assert_eq!(
        failing(&mesh.status().unwrap()),
        ["wiki"],
        "the store still holds the failing word"
    );
    mesh.start_controller();
    mesh.wait_status("wiki gone", |s| all_well(s) && failing(s).is_empty());
}

#[test]
fn a_recovery_said_while_the_store_is_stopped_lands_after_it_returns() {
    let mut mesh = healthy_mesh();
    mesh.secret("wiki", None);
    mesh.wait_status("wiki failing", |s| failing(s) == ["wiki"]);
    mesh.store.stop();
    assert!(
        mesh.status().is_none(),
        "status cannot print without its store"
    );
    let (code, _, err) = mesh.controller(&["status"]);
    assert_eq!(code, 2, "exit 2 when the store is unreadable: {err}");
    mesh.secret("wiki", Some("minted-wiki-secret"));
    wait_log(&mesh, "saying recovered consumer=wiki reason=success", 1);
    std::thread::sleep(Duration::from_secs(2));
    mesh.store.start_again();
    mesh.wait_status("wiki gone", |s| all_well(s) && failing(s).is_empty());
}

#[test]
fn retirement_and_an_approved_deletion_through_mesh_controller_approve() {
    let mesh = healthy_mesh();
    mesh.list(&["forge", "wiki"]);
    std::thread::sleep(Duration::from_millis(600));

    let (code, out, err) = mesh.controller(&["approve", "postgres@db-1", "wiki"]);
    assert_ne!(code, 0, "wiki is still listed: {out}{err}");
    assert!(format!("{out}{err}").contains("still listed"), "{out}{err}");
    let (code, out, err) = mesh.controller(&["approve", "postgres@db-1", "docs", "--delete"]);
    assert_ne!(code, 0, "docs is not retired yet: {out}{err}");

    let (code, out, err) = mesh.controller(&["approve", "postgres@db-1", "docs"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("retired"), "{out}");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let admin = rt.block_on(mesh.backend.connect_admin());
    let can_login = |role: &str| {
        rt.block_on(admin.query_opt(
            "SELECT rolcanlogin FROM pg_roles WHERE rolname = $1",
            &[&role],
        ))
        .unwrap()
        .map(|row| row.get::<_, bool>(0))
    };
    assert_eq!(
        can_login("docs"),
        Some(false),
        "retired: NOLOGIN, nothing deleted"
    );
    let database_exists = |name: &str| {
        rt.block_on(admin.query_opt("SELECT 1 FROM pg_database WHERE datname = $1", &[&name]))
            .unwrap()
            .is_some()
    };
    assert!(database_exists("docs"));

    let (code, out, err) = mesh.controller(&["approve", "postgres@db-1", "docs", "--delete"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(!database_exists("docs"), "deleted on approval");
    assert_eq!(can_login("docs"), None);
    assert_eq!(can_login("forge"), Some(true), "the others are untouched");
    mesh.wait_status("all well", all_well);
}
