//! Status knows the controller, over the built binaries (the harness
//! `mesh_test_support::mesh`): with `serve` killed or the bus away it says
//! the controller follows nothing and blames no healthy provider; a
//! consumer the declaration requires that its provider retired is named;
//! many consumers failing for one cause share one line; `--check` and a
//! machine the declaration does not name; and a store dropped and made
//! again is true again within the providers' `--repeat-every`, never "all
//! well" before, said new first and blaming no provider meanwhile.

use std::time::{Duration, Instant};

use mesh_test_support::mesh::{all_well, failing, healthy_mesh_with, unheard, Mesh, Options, WAIT};
use serde_json::Value;

/// How late a status may come beyond what the rules allow (a status run
/// under load, and times said to the second).
const SLACK: Duration = Duration::from_secs(4);

/// `serve`'s pull wait (2 s): it counts as following for 3 of them.
const FOLLOW_BOUND: Duration = Duration::from_secs(6);

/// The providers say `alive` every second here, so a provider wrongly
/// blamed would be named within 3 s.
fn quick() -> Options {
    Options {
        alive_every: "1s",
        ..Options::default()
    }
}

fn sentence(status: &Value) -> &str {
    status["sentence"].as_str().expect("a sentence")
}

/// Whether status says the controller follows nothing.
fn controller_silent(status: &Value) -> bool {
    status["controller"]["following"] == Value::Bool(false)
        && sentence(status)
            .starts_with("not all well: the controller has followed no events since ")
}

/// Watches status for `span`: at every look no provider is unheard;
/// returns the first status that says the controller follows nothing (and
/// how long after the start it came).
fn watch_blaming_no_provider(mesh: &Mesh, span: Duration, what: &str) -> Option<(Value, Duration)> {
    let started = Instant::now();
    let mut said = None;
    while started.elapsed() < span {
        if let Some(status) = mesh.status() {
            assert_eq!(
                unheard(&status),
                Vec::<String>::new(),
                "{what}: a healthy provider blamed after {:?}: {status:#}",
                started.elapsed()
            );
            if said.is_none() && controller_silent(&status) {
                said = Some((status, started.elapsed()));
            }
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    said
}

/// Waits until status is all well, no provider called unheard on the way.
fn all_well_again_blaming_no_provider(mesh: &Mesh, what: &str) -> Value {
    let deadline = Instant::now() + WAIT;
    loop {
        if let Some(status) = mesh.status() {
            assert_eq!(
                unheard(&status),
                Vec::<String>::new(),
                "{what}: a healthy provider blamed: {status:#}\n{}",
                mesh.logs(30)
            );
            if all_well(&status) {
                return status;
            }
        }
        assert!(
            Instant::now() < deadline,
            "{what}: never all well again\n{}",
            mesh.logs(60)
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn with_serve_killed_or_the_bus_away_status_says_the_controller_follows_nothing_and_blames_no_provider(
) {
    let mut mesh = healthy_mesh_with(quick());
    let status = mesh.wait_status("all well", all_well);
    assert_eq!(status["controller"]["following"], true, "{status:#}");
    let (code, _, err) = mesh.controller(&["status", "--check"]);
    assert_eq!(code, 0, "all well: --check exits 0: {err}");

    // serve killed: nothing records its catch-ups any more.
    mesh.kill_controller();
    let span = FOLLOW_BOUND + 3 * Duration::from_secs(1) + SLACK;
    let (status, after) = watch_blaming_no_provider(&mesh, span, "serve killed")
        .expect("status never said the controller follows nothing");
    assert!(after <= FOLLOW_BOUND + SLACK, "said only after {after:?}");
    assert_eq!(failing(&status), Vec::<String>::new(), "{status:#}");
    let (code, human, err) = mesh.controller(&["status"]);
    assert_eq!(code, 0, "{err}");
    let mut lines = human.lines();
    let first = lines.next().unwrap();
    assert!(
        first.starts_with("not all well: the controller has followed no events since ")
            && first.ends_with(
                " (is mesh-controller serve running and on the bus?), 0 consumers failing"
            ),
        "{human}"
    );
    assert!(
        lines
            .next()
            .unwrap()
            .starts_with("  mesh-controller serve on "),
        "{human}"
    );
    let (code, out, err) = mesh.controller(&["status", "--check"]);
    assert_eq!(code, 1, "not all well: --check exits 1: {out}{err}");
    assert!(
        out.starts_with("not all well: the controller"),
        "printed all the same: {out}"
    );
    let (code, node, _) = mesh.controller(&["node", "show", "db-1", "--check"]);
    assert_eq!(code, 1);
    assert!(
        node.starts_with("not all well: the controller has followed no events since "),
        "{node}"
    );

    mesh.start_controller();
    let status = all_well_again_blaming_no_provider(&mesh, "serve started again");
    assert_eq!(status["controller"]["following"], true);

    // The bus away: serve pulls nothing (nor does the provider say anything).
    mesh.nats.stop();
    let (status, after) = watch_blaming_no_provider(&mesh, span, "bus away")
        .expect("status never said the controller follows nothing while the bus is away");
    assert!(
        after <= FOLLOW_BOUND + SLACK,
        "said only after {after:?}: {status:#}"
    );
    mesh.nats.start_again();
    all_well_again_blaming_no_provider(&mesh, "bus back");

    // The store away: status cannot read it (exit 2); once it is back the
    // gap is not read as the provider's silence.
    mesh.store.stop();
    let (code, _, err) = mesh.controller(&["status", "--check"]);
    assert_eq!(code, 2, "{err}");
    std::thread::sleep(span);
    mesh.store.start_again();
    all_well_again_blaming_no_provider(&mesh, "store back");
}

#[test]
fn a_consumer_the_declaration_requires_that_its_provider_retired_is_named() {
    let mesh = healthy_mesh_with(Options {
        retire_after: "1s",
        ..Options::default()
    });
    mesh.wait_status("all well", all_well);
    // wiki dropped from the provider's contributions file, still required
    // in the declaration: retired after 3 passes (NOLOGIN, nothing deleted).
    mesh.list(&["forge", "docs"]);
    let status = mesh.wait_status("wiki retired", |s| {
        s["retired"].as_array().is_some_and(|r| !r.is_empty())
    });
    assert!(!all_well(&status), "{status:#}");
    assert_eq!(
        sentence(&status),
        "not all well: 0 consumers failing, 1 required consumer retired"
    );
    let entry = &status["retired"][0];
    assert_eq!(
        (
            &entry["provider_module"],
            &entry["provider_machine"],
            &entry["consumer"],
            &entry["consumer_machine"],
            &entry["action"]
        ),
        (
            &Value::from("postgres"),
            &Value::from("db-1"),
            &Value::from("wiki"),
            &Value::from("app-1"),
            &Value::from("retired")
        ),
        "{entry}"
    );
    let (code, human, _) = mesh.controller(&["status", "--check"]);
    assert_eq!(code, 1, "{human}");
    assert!(
        human.lines().any(|l| l
            == "  wiki@app-1 retired by postgres@db-1 although the declaration requires it (its \
                contributions file no longer lists it?)"),
        "{human}"
    );
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let admin = rt.block_on(mesh.backend.connect_admin());
    let login: bool = rt
        .block_on(admin.query_one(
            "SELECT rolcanlogin FROM pg_roles WHERE rolname = 'wiki'",
            &[],
        ))
        .unwrap()
        .get(0);
    assert!(!login, "retired: NOLOGIN");
    // node show names it on the consumer's machine, not elsewhere.
    let (_, node, _) = mesh.controller(&["node", "show", "app-1", "--json"]);
    let node: Value = serde_json::from_str(&node).unwrap();
    assert_eq!(node["retired"].as_array().unwrap().len(), 1, "{node:#}");
    let (_, node, _) = mesh.controller(&["node", "show", "app-2", "--json"]);
    let node: Value = serde_json::from_str(&node).unwrap();
    assert_eq!(node["retired"], serde_json::json!([]), "{node:#}");

    // Listed again: re-enabled, all well.
    mesh.list(&["forge", "wiki", "docs"]);
    let status = mesh.wait_status("all well again", all_well);
    assert_eq!(status["retired"], serde_json::json!([]));
}

#[test]
fn many_consumers_failing_for_one_cause_share_one_line_and_json_keeps_each() {
    let mut mesh = healthy_mesh_with(Options::default());
    mesh.wait_status("all well", all_well);
    // A machine the declaration does not name is an error naming those it does.
    let (code, out, err) = mesh.controller(&["node", "show", "app1"]);
    assert_eq!((code, out.as_str()), (2, ""));
    assert_eq!(
        err,
        "mesh-controller: the declaration names no machine app1 (it names: app-1, app-2, db-1)\n"
    );

    // The provider's PostgreSQL goes away: every consumer fails for one cause.
    mesh.backend.stop();
    let status = mesh.wait_status("all three failing for one cause", |s| {
        let entries = s["failing"].as_array().cloned().unwrap_or_default();
        entries.len() == 3
            && entries
                .iter()
                .all(|e| e["error"] == entries[0]["error"] && e["class"] == entries[0]["class"])
    });
    assert_eq!(
        failing(&status),
        ["docs", "forge", "wiki"],
        "one entry each"
    );
    let (class, error) = (
        status["failing"][0]["class"].as_str().unwrap(),
        status["failing"][0]["error"].as_str().unwrap(),
    );
    let (code, human, err) = mesh.controller(&["status"]);
    assert_eq!(code, 0, "{err}");
    let lines: Vec<&str> = human.lines().collect();
    // The provider cannot log in as its administrator either: a provider
    // fault, named on its own line before the standings.
    assert_eq!(lines.len(), 3, "{human}");
    assert_eq!(
        lines[0], "not all well: 3 consumers failing, 1 provider cannot work as its administrator",
        "{human}"
    );
    assert!(
        lines[1].starts_with("  postgres@db-1 cannot work as its administrator since ")
            && lines[1].contains(" (unreachable: "),
        "{human}"
    );
    assert_eq!(
        lines[2],
        format!(
            "  postgres@db-1 fails 3 consumers {class}: \"{error}\" — docs@app-2, forge@app-1, \
             wiki@app-1"
        ),
        "{human}"
    );
    mesh.backend.start_again();
    mesh.wait_status("all well again", all_well);
}

#[test]
fn a_store_dropped_and_made_again_is_true_again_within_repeat_every_and_never_all_well_before() {
    const REPEAT_EVERY: Duration = Duration::from_secs(6);
    let mut mesh = healthy_mesh_with(Options {
        alive_every: "1s",
        repeat_every: "6s",
        ..Options::default()
    });
    mesh.secret("wiki", None);
    mesh.wait_status("wiki failing", |s| failing(s) == ["wiki"]);

    mesh.stop_controller();
    mesh.drop_store();
    let started = Instant::now();
    mesh.start_controller();
    // Until the store knows again what the provider keeps failing, status
    // says what it knows, never all well; then it is true.
    let mut said = Vec::new();
    let true_again = loop {
        if let Some(status) = mesh.status() {
            assert!(
                !all_well(&status),
                "all well {:?} after the new store, while wiki fails: {status:#}",
                started.elapsed()
            );
            // The new store is said first; no provider is blamed for what
            // the store could not have heard yet (issue 31).
            assert_eq!(
                unheard(&status),
                Vec::<String>::new(),
                "a provider blamed {:?} after the new store: {status:#}",
                started.elapsed()
            );
            let s = sentence(&status).to_owned();
            if status["catching_up"] != serde_json::json!([]) {
                assert!(
                    s.starts_with("not all well: the store is new since "),
                    "{status:#}"
                );
            }
            if failing(&status) == ["wiki"] && status["catching_up"] == serde_json::json!([]) {
                assert_eq!(s, "not all well: 1 consumer failing", "{status:#}");
                break started.elapsed();
            }
            if !said.contains(&s) {
                said.push(s);
            }
        }
        assert!(
            started.elapsed() < WAIT,
            "status never true again; it said {said:#?}\n{}",
            mesh.logs(40)
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(
        true_again <= REPEAT_EVERY + Duration::from_secs(1) + 2 * SLACK,
        "true again only {true_again:?} after serve started on the new store"
    );
    assert!(
        said.iter()
            .any(|s| s.starts_with("not all well: the store is new since ")
                && s.contains("; 1 provider not fully known yet")),
        "in between it said the store does not know the provider fully yet: {said:#?}"
    );
    // serve said it met a new store, once.
    let log = mesh.controller.as_ref().unwrap().log_text();
    assert_eq!(
        log.matches("the store is new: it holds none of the events")
            .count(),
        1,
        "{log}"
    );
    // And stays true.
    mesh.secret("wiki", Some("minted-wiki-secret"));
    mesh.wait_status("all well", all_well);
}
