//! End to end over the built binaries with a real Keycloak (`kc.sh start
//! --optimized` on a private PostgreSQL): `mesh-identity` on the bus, the
//! controller following, and the `admin-refused` repair through the
//! distribution's own `kc.sh bootstrap-admin` on this host (`--kc-sh`, the
//! server's database settings in the provider's environment).

use std::ffi::OsString;
use std::time::{Duration, Instant};

use mesh_test_support::mesh::{all_well, failing, Mesh, Options};
use mesh_test_support::{CmdlineScan, KeycloakServer};
use serde_json::{json, Value};

use crate::TURN;

/// How long a step of this test may take: a `kc.sh bootstrap-admin` is a
/// JVM start (about 8 s alone, much more on a loaded machine).
const STEP: Duration = Duration::from_secs(240);

/// Waits until `status --json` satisfies `want`, for up to [`STEP`].
fn wait(mesh: &Mesh, what: &str, want: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + STEP;
    let mut last = Value::Null;
    while Instant::now() < deadline {
        if let Some(status) = mesh.status() {
            if want(&status) {
                return status;
            }
            last = status;
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    panic!(
        "status never showed {what}; last: {last:#}\n--- identity log:\n{}\n--- controller log:\n{}",
        mesh.identity.as_ref().map(|p| p.log_text()).unwrap_or_default(),
        mesh.controller.as_ref().map(|p| p.log_text()).unwrap_or_default(),
    );
}

/// The open repair faults `status --json` shows: (fault, outcome).
fn repairs(status: &Value) -> Vec<(String, String)> {
    status["repairs"]
        .as_array()
        .map(|rows| {
            rows.iter()
                .map(|r| {
                    (
                        r["fault"].as_str().unwrap_or("").to_owned(),
                        r["outcome"].as_str().unwrap_or("").to_owned(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn a_refused_keycloak_administrator_is_said_then_repaired_and_status_is_all_well_again() {
    let Some(kc) = KeycloakServer::shared() else {
        return;
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    // It repairs an administrator of realm `master` and counts the repair's
    // temporary ones there.
    let _turn = rt.block_on(TURN.lock());
    let realm = rt.block_on(kc.new_realm("e2e"));
    let (admin, password, admin_id) = rt.block_on(kc.new_master_admin("mesh-admin"));
    let mut mesh = Mesh::with(Options {
        consumers: Vec::new(),
        identity: vec![("forge", "app-1"), ("wiki", "app-2")],
        ..Options::default()
    });
    let password_file = mesh.path("admin-password");
    std::fs::write(&password_file, &password).unwrap();
    let kc_sh = kc.kc_sh_wrapper(mesh.dir.path());
    let keycloak = Mesh::identity_flags(&kc.url(), &realm, &admin, &password_file);

    mesh.start_controller();
    mesh.start_identity(&keycloak, &[]);
    wait(
        &mesh,
        "both clients served and the provider heard",
        all_well,
    );

    // The administrator's password is changed behind the provider's back;
    // this provider has no way to repair it: the fault is said, the
    // consumers fail with credentials-rejected, status names both.
    let by_hand = "changed-by-hand-Ue83nB";
    let body = json!({"type": "password", "value": by_hand, "temporary": false});
    let (code, answer) = rt.block_on(kc.admin(
        "PUT",
        &format!("master/users/{admin_id}/reset-password"),
        Some(&body),
    ));
    assert_eq!(code, 204, "{answer}");
    let status = wait(
        &mesh,
        "the open repair fault and both consumers failing",
        |s| {
            repairs(s) == [("admin-refused".to_owned(), "failed".to_owned())]
                && failing(s) == ["forge", "wiki"]
        },
    );
    for row in status["failing"].as_array().unwrap() {
        assert_eq!(row["class"], "credentials-rejected", "{row}");
    }
    let detail = status["repairs"][0]["detail"].as_str().unwrap();
    assert!(
        detail.contains("neither --container nor --kc-sh is given"),
        "{detail}"
    );
    assert!(!all_well(&status));

    // Restarted with --kc-sh and the server's database settings in its
    // environment: the repair runs beside the live server, is said, and
    // status is all well again.
    mesh.identity.take().unwrap().stop();
    let db_env = kc.db_env();
    let mut secrets = vec![password.clone(), by_hand.to_owned()];
    secrets.extend(
        db_env
            .iter()
            .filter(|(k, _)| k == "KC_DB_PASSWORD")
            .map(|(_, v)| v.clone()),
    );
    let scan = CmdlineScan::start("bootstrap-admin");
    scan.watch(secrets.clone());
    let mut repairing = keycloak.clone();
    repairing.extend([OsString::from("--kc-sh"), kc_sh.into()]);
    mesh.start_identity(&repairing, &db_env);
    let status = wait(&mesh, "all well after the repair", |s| {
        all_well(s) && repairs(s).is_empty() && failing(s).is_empty()
    });
    let runs = scan.finish();
    assert!(runs >= 1, "the scan saw {runs} kc.sh bootstrap-admin runs");
    assert_eq!(status["all_well"], true);
    let log = mesh.identity.as_ref().unwrap().log_text();
    assert!(
        log.contains("kc.sh bootstrap-admin finished"),
        "the repair ran: {log}"
    );
    for (i, secret) in secrets.iter().enumerate() {
        assert!(
            !log.contains(secret.as_str()),
            "secret #{i} in the identity log"
        );
    }

    // No temporary administrator is left.
    let (_, users) = rt.block_on(kc.admin(
        "GET",
        "master/users?search=mesh-repair-&briefRepresentation=true",
        None,
    ));
    let left: Vec<&Value> = users
        .as_array()
        .unwrap()
        .iter()
        .filter(|u| {
            u["username"]
                .as_str()
                .unwrap_or("")
                .starts_with("mesh-repair-")
        })
        .collect();
    assert!(left.is_empty(), "{left:?}");
}
