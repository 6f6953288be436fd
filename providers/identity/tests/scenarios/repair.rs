//! The `admin-refused` repair on its own: what the probe finds, what the
//! container is asked, and that the temporary administrator is gone after
//! success, after every kind of failure, and after a cancelled repair.

use std::time::Duration;

use axum::http::Method;
use mesh_provider_identity::login_backoff::LoginBackoff;
use mesh_provider_identity::{AdminRepair, ContainerCli, IdentityConfig, IdentityProvisioner};
use mesh_sdk::testing::LogCapture;
use mesh_sdk::{Probe, Provisioner, Repair, Secret};
use serde_json::json;

use crate::world::{
    assert_no_secret, hold_clock, temp_passwords, Setup, MESH_ADMIN_PASSWORD, OLD_ADMIN_PASSWORD,
};

/// No hold: every probe asks Keycloak.
const NO_HOLD: LoginBackoff = LoginBackoff {
    first: Duration::ZERO,
    max: Duration::ZERO,
};

fn repair_of(p: &IdentityProvisioner) -> std::sync::Arc<AdminRepair> {
    assert_eq!(p.repairs().len(), 1);
    std::sync::Arc::clone(p.admin_repair())
}

async fn bounded<T>(what: &str, f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(60), f)
        .await
        .unwrap_or_else(|_| panic!("{what} hung: the fake Keycloak or runtime never answered"))
}

#[tokio::test]
async fn the_probe_tells_a_refusal_from_an_outage() {
    let setup = Setup::new(MESH_ADMIN_PASSWORD, 401);
    let config = setup.config().with_login_backoff(NO_HOLD);
    let repair = repair_of(&IdentityProvisioner::new(config).unwrap());
    assert_eq!(repair.fault().as_str(), "admin-refused");
    assert_eq!(repair.probe().await, Probe::Healthy);
    for status in [400, 401] {
        setup.kc.with(|s| {
            s.invalid_grant_status = status;
            s.move_admin_password(OLD_ADMIN_PASSWORD);
        });
        assert_eq!(
            repair.probe().await,
            Probe::Fault(format!(
                "administrator login as admin: keycloak answered {status}: invalid_grant: Invalid user credentials"
            ))
        );
    }
    setup.kc.with(|s| {
        s.inject(
            Method::POST,
            "/token",
            503,
            json!({"error": "unknown_error"}),
        );
    });
    assert!(matches!(repair.probe().await, Probe::Unknown(w) if w.contains("503")));
    drop(setup);
    let away = IdentityConfig::new(
        "http://127.0.0.1:9",
        "mesh",
        "admin",
        Secret::new(MESH_ADMIN_PASSWORD),
    )
    .unwrap();
    let repair = repair_of(&IdentityProvisioner::new(away).unwrap());
    assert!(matches!(repair.probe().await, Probe::Unknown(w) if w.contains("cannot be reached")));
}

#[tokio::test]
async fn the_repair_sets_the_password_and_removes_the_temporary_administrator() {
    let (logs, _guard) = LogCapture::start();
    let setup = Setup::new(OLD_ADMIN_PASSWORD, 401);
    let repair = repair_of(&setup.provisioner());
    assert!(matches!(repair.probe().await, Probe::Fault(_)));
    // The loop reads the secrets just before it repairs.
    let known: Vec<String> = repair
        .secrets()
        .iter()
        .map(|s| s.expose().to_owned())
        .collect();
    let did = bounded("the repair", repair.repair()).await.unwrap();
    assert_eq!(repair.probe().await, Probe::Healthy, "verified");

    let (made, deleted, admins, password) = setup.kc.with(|s| {
        (
            s.temporary_made.clone(),
            s.temporary_deleted.clone(),
            s.temporary_admins(),
            s.admin().password.clone(),
        )
    });
    assert_eq!(password, MESH_ADMIN_PASSWORD);
    assert_eq!(made.len(), 1);
    assert_eq!(deleted, made, "the temporary administrator was removed");
    assert!(admins.is_empty());
    assert!(made[0].starts_with("mesh-repair-"));
    assert!(
        did.starts_with(&format!(
            "password of administrator admin set to the mesh's through temporary administrator {} (kc.sh bootstrap-admin in container keycloak), which was removed",
            made[0]
        )),
        "{did}"
    );

    // The command line names variables; their values came through the environment.
    let argv = setup.runtime.argv();
    assert_eq!(argv.len(), 1);
    let args: Vec<&str> = argv[0].split(' ').collect();
    assert_eq!(
        &args[..5],
        [
            "exec",
            "-e",
            "MESH_BOOTSTRAP_ADMIN_USER",
            "-e",
            "MESH_BOOTSTRAP_ADMIN_PASSWORD"
        ]
    );
    assert_eq!(args[5], "-e");
    let port: u16 = args[6]
        .strip_prefix("KC_HTTP_MANAGEMENT_PORT=")
        .unwrap()
        .parse()
        .unwrap();
    assert!(port >= 49152);
    assert_eq!(
        &args[7..],
        [
            "keycloak",
            "/opt/keycloak/bin/kc.sh",
            "bootstrap-admin",
            "user",
            "--username:env",
            "MESH_BOOTSTRAP_ADMIN_USER",
            "--password:env",
            "MESH_BOOTSTRAP_ADMIN_PASSWORD",
            "--no-prompt",
            "--optimized"
        ]
    );
    let env = setup.runtime.env();
    assert_eq!(env[0], format!("MESH_BOOTSTRAP_ADMIN_USER={}", made[0]));
    let temp_password = temp_passwords(&setup.runtime).remove(0);
    assert!(
        known.contains(&temp_password),
        "the temporary password is a known secret before the repair"
    );
    assert!(
        !argv[0].contains(&made[0]),
        "the name is not on the command line"
    );

    let secrets = setup.secrets();
    assert_no_secret(&argv.join("\n"), &secrets, "the command line");
    assert_no_secret(&did, &secrets, "the repair's message");
    assert_no_secret(&logs.text(), &secrets, "the log");
    let env_secrets: Vec<String> = secrets
        .iter()
        .filter(|s| **s != temp_password)
        .cloned()
        .collect();
    assert_no_secret(&env.join("\n"), &env_secrets, "the container's environment");
    assert!(
        logs.text().contains("kc.sh bootstrap-admin finished"),
        "{}",
        logs.text()
    );
    assert!(
        !logs.text().contains("Creating temporary admin user"),
        "output never logged"
    );
}

#[tokio::test]
async fn the_temporary_administrator_is_removed_when_a_step_fails() {
    let (logs, _guard) = LogCapture::start();
    let setup = Setup::new(OLD_ADMIN_PASSWORD, 400);
    let repair = repair_of(&setup.provisioner());
    let outcome = |mode: &str| {
        setup.runtime.set_mode(mode);
        let repair = std::sync::Arc::clone(&repair);
        async move {
            let error = bounded("the repair", repair.repair()).await.unwrap_err();
            error.to_string()
        }
    };

    // The bootstrap fails before making anyone: its administrator cannot
    // log in, and with the mesh's refused it cannot be looked up, which
    // the message says so rather than claim it was never made.
    let why = outcome("fail").await;
    assert!(
        why.starts_with("kc.sh bootstrap-admin ended with status 1 (")
            && why.contains(" bytes of output, not shown); temporary administrator mesh-repair-")
            && why.ends_with(" cannot log in nor be looked up, so most likely was never made"),
        "{why}"
    );
    // The bootstrap makes the administrator, then fails.
    let why = outcome("add-then-fail").await;
    assert!(
        why.starts_with("kc.sh bootstrap-admin ended with status 1"),
        "{why}"
    );
    assert!(why.ends_with("removed"), "{why}");
    // Setting the password fails.
    setup.kc.with(|s| {
        s.inject(
            Method::PUT,
            "/reset-password",
            500,
            json!({"error": "unknown_error"}),
        )
    });
    let why = outcome("ok").await;
    assert!(
        why.starts_with("resetting the password of admin: keycloak answered 500: unknown_error; temporary administrator mesh-repair-"),
        "{why}"
    );
    // The administrator is not there to be reset.
    setup.kc.with(|s| {
        s.injected.clear();
        s.users.retain(|u| u.username != "admin");
    });
    let why = outcome("ok").await;
    assert!(why.starts_with("administrator admin is not a user of realm master; temporary administrator mesh-repair-"), "{why}");

    setup.kc.with(|s| {
        assert_eq!(s.temporary_made.len(), 3);
        assert_eq!(s.temporary_deleted, s.temporary_made);
        assert!(s.temporary_admins().is_empty());
    });
    let secrets = setup.secrets();
    assert_no_secret(&logs.text(), &secrets, "the log");
    assert_no_secret(
        &setup.runtime.argv().join("\n"),
        &secrets,
        "the command lines",
    );
}

#[tokio::test]
async fn a_cancelled_repair_still_removes_the_temporary_administrator() {
    let setup = Setup::new(OLD_ADMIN_PASSWORD, 401);
    let repair = repair_of(&setup.provisioner());
    // Setting the password takes long; the loop's bound ends the repair meanwhile.
    setup
        .kc
        .with(|s| s.slow = Some(("/reset-password".into(), Duration::from_secs(2))));
    let cut = tokio::time::timeout(Duration::from_millis(1000), repair.repair()).await;
    assert!(cut.is_err(), "the repair was cut off midway");
    setup.kc.with(|s| assert_eq!(s.temporary_made.len(), 1));
    // The guard's task removes it.
    let gone = async {
        while !setup.kc.with(|s| s.temporary_admins().is_empty()) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    bounded("removing the temporary administrator", gone).await;
    setup
        .kc
        .with(|s| assert_eq!(s.temporary_deleted, s.temporary_made));
}

#[tokio::test]
async fn without_a_container_the_fault_is_said_but_not_repaired() {
    let setup = Setup::new(OLD_ADMIN_PASSWORD, 401);
    let config = setup
        .config()
        .with_container(None, ContainerCli::Docker)
        .unwrap();
    let repair = repair_of(&IdentityProvisioner::new(config).unwrap());
    assert!(matches!(repair.probe().await, Probe::Fault(_)));
    let why = repair.repair().await.unwrap_err().to_string();
    assert_eq!(
        why,
        "neither --container nor --kc-sh is given, so administrator admin cannot be repaired here: set its password to the mesh's by hand"
    );
    assert!(setup.runtime.argv().is_empty());
}

#[tokio::test]
async fn a_runtime_that_cannot_start_made_no_one() {
    let setup = Setup::new(OLD_ADMIN_PASSWORD, 401);
    let config = setup
        .config()
        .with_kc_sh(setup.dir.path().join("no-such/kc.sh"), None)
        .unwrap();
    let repair = repair_of(&IdentityProvisioner::new(config).unwrap());
    let why = repair.repair().await.unwrap_err().to_string();
    assert!(why.starts_with("cannot run "), "{why}");
    assert!(
        why.ends_with("; no temporary administrator remains"),
        "{why}"
    );
}

#[tokio::test]
async fn a_temporary_administrator_whose_login_is_refused_is_looked_up_and_removed() {
    let (logs, _guard) = LogCapture::start();
    let setup = Setup::new(MESH_ADMIN_PASSWORD, 401);
    let repair = repair_of(&setup.provisioner());
    // The command succeeds, yet its administrator's login is refused (it
    // reached another database, or the user is locked out): not taken as
    // never made, but looked up as the mesh's administrator and removed.
    setup.runtime.set_mode("add-refused");
    let why = repair.repair().await.unwrap_err().to_string();
    assert!(
        why.starts_with("login as temporary administrator mesh-repair-"),
        "{why}"
    );
    assert!(
        why.contains("kc.sh bootstrap-admin succeeded, yet its administrator is refused; it most likely reached another database than the server's (give it the server's KC_DB* settings); temporary administrator mesh-repair-"),
        "{why}"
    );
    assert!(why.ends_with(" removed"), "{why}");
    setup.kc.with(|s| {
        assert_eq!(s.temporary_made.len(), 1);
        assert_eq!(s.temporary_deleted, s.temporary_made);
    });
    assert_no_secret(&logs.text(), &setup.secrets(), "the log");
}

#[tokio::test(start_paused = true)]
async fn a_refused_password_is_held_back_so_probes_never_lock_the_administrator() {
    let _hold = hold_clock();
    let setup = Setup::new(OLD_ADMIN_PASSWORD, 401);
    // Brute-force protection that locks at 6 refusals; a probe every minute
    // for an hour would reach it ten times over.
    setup.kc.with(|s| s.failure_factor = Some(6));
    let repair = repair_of(&setup.provisioner());
    let start = tokio::time::Instant::now();
    for _ in 0..=60 {
        assert!(matches!(repair.probe().await, Probe::Fault(w) if w.contains("invalid_grant")));
        tokio::time::advance(Duration::from_secs(60)).await;
    }
    setup.kc.with(|s| {
        assert_eq!(
            s.password_logins("admin"),
            (0, 4),
            "tried at 0, 5, 15 and 35 minutes"
        );
        assert_eq!(s.admin().failures, 4, "not locked out");
    });
    // Set right by hand: found at the next try, at 75 minutes, and the
    // good login clears the count.
    setup
        .kc
        .with(|s| s.move_admin_password(MESH_ADMIN_PASSWORD));
    while start.elapsed() < Duration::from_secs(75 * 60) {
        assert!(matches!(repair.probe().await, Probe::Fault(_)));
        tokio::time::advance(Duration::from_secs(60)).await;
    }
    assert_eq!(repair.probe().await, Probe::Healthy);
    setup.kc.with(|s| {
        assert_eq!(s.password_logins("admin"), (1, 4));
        assert_eq!(s.admin().failures, 0);
    });
}

#[tokio::test]
async fn the_repair_ends_a_lockout_of_the_administrator() {
    let setup = Setup::new(MESH_ADMIN_PASSWORD, 401);
    setup.kc.with(|s| {
        s.failure_factor = Some(3);
        s.users
            .iter_mut()
            .find(|u| u.username == "admin")
            .unwrap()
            .failures = 3;
    });
    let repair = repair_of(&setup.provisioner());
    // The right password, yet refused: locked out by someone's guesses.
    assert!(matches!(repair.probe().await, Probe::Fault(_)));
    repair.repair().await.unwrap();
    assert_eq!(repair.probe().await, Probe::Healthy, "the lockout ended");
    setup.kc.with(|s| {
        assert_eq!(s.admin().failures, 0);
        assert!(s.temporary_admins().is_empty());
    });
}
