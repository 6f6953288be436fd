//! The provider in the SDK's loop, pass by pass on tokio's paused clock:
//! a refused administrator closes the gate (no client request reaches
//! Keycloak), is repaired and verified, and consumers recover; a failing
//! repair is braked 10, 20, 40 … minutes up to 6 hours and published each time;
//! the temporary administrator never remains; no secret is published or logged.

use std::time::Duration;

use axum::http::Method;
use mesh_provider_identity::{IdentityConfig, IdentityProvisioner};
use mesh_sdk::testing::LogCapture;
use mesh_sdk::{Name, Secret, Timestamp};
use serde_json::{json, Value};

use crate::fake_keycloak::REALM;
use crate::world::{
    assert_no_secret, hold_clock, minted, minutes, temp_passwords, Setup, World,
    MESH_ADMIN_PASSWORD, OLD_ADMIN_PASSWORD, T0,
};

const PASS: Duration = Duration::from_secs(5);

fn of<'a>(published: &'a [(String, Value)], kind: &str) -> Vec<&'a Value> {
    published
        .iter()
        .filter(|(k, _)| k == kind)
        .map(|(_, v)| v)
        .collect()
}

fn repairs<'a>(published: &'a [(String, Value)], outcome: &str) -> Vec<&'a Value> {
    of(published, "repair")
        .into_iter()
        .filter(|v| v["outcome"] == outcome)
        .collect()
}

/// No secret in the events published, the log, or the runtime's command lines;
/// none but the temporary administrators' own passwords in the environment
/// the runtime forwarded into the container.
fn assert_nothing_leaked(w: &World, published: &[(String, Value)], logs: &LogCapture) {
    let secrets = w.setup.secrets();
    assert_no_secret(&format!("{published:?}"), &secrets, "the events published");
    assert_no_secret(&logs.text(), &secrets, "the log");
    assert_no_secret(
        &w.setup.runtime.argv().join("\n"),
        &secrets,
        "the runtime's command lines",
    );
    let temps = temp_passwords(&w.setup.runtime);
    let others: Vec<String> = secrets.into_iter().filter(|s| !temps.contains(s)).collect();
    assert_no_secret(
        &w.setup.runtime.env().join("\n"),
        &others,
        "the container's environment",
    );
}

#[tokio::test(start_paused = true)]
async fn a_moved_administrator_password_stops_client_calls_until_it_is_repaired() {
    let (logs, _guard) = LogCapture::start();
    let _hold = hold_clock();
    let setup = Setup::new(OLD_ADMIN_PASSWORD, 401);
    setup.runtime.set_mode("fail");
    let mut w = World::new(setup, &["forge", "wiki"]);
    let mut published = Vec::new();

    // Refused on start; the first repair fails (the runtime exits 1).
    w.passes(1, PASS).await;
    let first = w.published();
    let failed = repairs(&first, "failed");
    assert_eq!(failed.len(), 1, "{first:?}");
    assert_eq!(failed[0]["fault"], "admin-refused");
    assert_eq!(failed[0]["said_at"], T0);
    assert_eq!(minutes(failed[0], "next_attempt_at"), 10);
    let detail = failed[0]["detail"].as_str().unwrap();
    assert!(
        detail.starts_with("repair failed: kc.sh bootstrap-admin ended with status 1"),
        "{detail}"
    );
    published.extend(first);

    // Ten minutes gated: consumers fail with the fault's message, and no
    // client request reaches Keycloak.
    for _ in 0..119 {
        w.passes(1, PASS).await;
        published.extend(w.published());
    }
    w.setup.kc.with(|s| {
        assert_eq!(s.client_requests(), 0, "no client call while refused");
        assert!(s.clients.is_empty());
    });
    let failing = of(&published, "failing");
    assert_eq!(
        failing.len(),
        2,
        "both consumers, at 5 minutes: {published:?}"
    );
    for f in &failing {
        assert_eq!(f["class"], "credentials-rejected");
        assert_eq!(f["said_at"], "2026-10-05T00:05:00Z");
        assert_eq!(
            f["error"],
            "admin-refused: administrator login as admin: keycloak answered 401: invalid_grant: Invalid user credentials"
        );
    }

    // The runtime works again; at 10 minutes the brake lets the repair run.
    w.setup.runtime.set_mode("ok");
    w.passes(1, PASS).await;
    let then = w.published();
    let repaired = repairs(&then, "repaired");
    assert_eq!(repaired.len(), 1, "{then:?}");
    assert_eq!(repaired[0]["said_at"], "2026-10-05T00:10:00Z");
    assert_eq!(repaired[0]["next_attempt_at"], Value::Null);
    let detail = repaired[0]["detail"].as_str().unwrap();
    assert!(
        detail.starts_with("password of administrator admin set to the mesh's")
            && detail.ends_with("; verified"),
        "{detail}"
    );
    let reasons: Vec<&Value> = of(&then, "recovered")
        .iter()
        .map(|v| &v["reason"])
        .collect();
    assert_eq!(
        reasons,
        vec!["success", "success"],
        "served in the same pass"
    );
    published.extend(then);

    w.setup.kc.with(|s| {
        assert_eq!(s.admin().password, MESH_ADMIN_PASSWORD);
        assert_eq!(s.temporary_made.len(), 1);
        assert_eq!(s.temporary_deleted, s.temporary_made);
        assert!(s.temporary_admins().is_empty());
        for c in ["forge", "wiki"] {
            let client = s.client(c).unwrap();
            assert_eq!(client.secret.as_deref(), Some(minted(c, 1).as_str()));
        }
    });
    assert_eq!(w.setup.runtime.argv().len(), 2, "two repairs tried");
    assert_nothing_leaked(&w, &published, &logs);
}

#[tokio::test(start_paused = true)]
async fn a_failing_repair_is_braked_to_six_hours_and_leaves_no_temporary_administrator() {
    let (logs, _guard) = LogCapture::start();
    let _hold = hold_clock();
    let setup = Setup::new(OLD_ADMIN_PASSWORD, 400);
    setup.kc.with(|s| {
        s.inject(
            Method::PUT,
            "/reset-password",
            500,
            json!({"error": "unknown_error"}),
        )
    });
    // Brute-force protection on, at Keycloak's default failure factor.
    setup.kc.with(|s| s.failure_factor = Some(30));
    let mut w = World::new(setup, &["forge"]);
    let every = Duration::from_secs(30);
    let mut published = Vec::new();
    // Thirteen hours of passes.
    for _ in 0..(13 * 120) {
        w.passes(1, every).await;
        published.extend(w.published());
    }
    w.setup
        .kc
        .with(|s| assert_eq!(s.client_requests(), 0, "gated all along"));

    let failed = repairs(&published, "failed");
    assert_eq!(
        mesh_sdk::internals::failed_repairs(&published, Timestamp::parse(T0).unwrap()),
        mesh_sdk::internals::BRAKE_SCHEDULE,
        "10, 20, 40, 80, 160, 320, then 360 minutes"
    );
    for f in &failed {
        let detail = f["detail"].as_str().unwrap();
        assert!(
            detail.starts_with(
                "repair failed: resetting the password of admin: keycloak answered 500"
            ),
            "{detail}"
        );
    }
    let braked = repairs(&published, "braked");
    assert!(
        braked.len() > 30,
        "the hold is published again: {}",
        braked.len()
    );
    assert!(braked.iter().all(|b| b["next_attempt_at"].is_string()));
    w.setup.kc.with(|s| {
        assert_eq!(s.temporary_made.len(), 7, "one per attempt");
        assert_eq!(s.temporary_deleted, s.temporary_made, "each one removed");
        assert!(s.temporary_admins().is_empty());
        assert_eq!(s.admin().password, OLD_ADMIN_PASSWORD);
        // The refused password was tried at 0, 5, 15, 35, 75 minutes, then
        // every 2 hours: never near a lockout.
        let (_, refused) = s.password_logins("admin");
        assert!((10..=12).contains(&refused), "{refused} refused logins");
        assert_eq!(s.admin().failures as usize, refused, "not locked out");
    });

    // Keycloak lets the password be set again; the next attempt, at 990
    // minutes, repairs it, and the consumer is served.
    w.setup.kc.with(|s| s.injected.clear());
    for _ in 0..(990 - 13 * 60) * 2 + 1 {
        w.passes(1, every).await;
        published.extend(w.published());
    }
    let repaired = repairs(&published, "repaired");
    assert_eq!(repaired.len(), 1);
    assert_eq!(minutes(repaired[0], "said_at"), 990);
    let recovered = of(&published, "recovered");
    assert_eq!(recovered.len(), 1);
    assert_eq!(recovered[0]["reason"], "success");
    w.setup.kc.with(|s| {
        assert_eq!(s.temporary_made.len(), 8);
        assert_eq!(s.temporary_deleted, s.temporary_made);
        assert_eq!(s.admin().password, MESH_ADMIN_PASSWORD);
    });
    // The refused administrator was a provider fault from the first pass,
    // through every failed and braked repair (published once, at once), until
    // the repair: its end published at once too.
    let alive = of(&published, "alive");
    assert_eq!(alive.len(), 2, "{alive:?}");
    assert_eq!(
        alive[0]["fault"]["class"], "credentials-rejected",
        "{}",
        alive[0]
    );
    assert_eq!(alive[0]["fault"]["since"], T0);
    assert!(
        alive[0]["fault"]["error"]
            .as_str()
            .unwrap()
            .starts_with("admin-refused: "),
        "{}",
        alive[0]
    );
    assert_eq!(minutes(alive[1], "said_at"), 990);
    assert!(alive[1].get("fault").is_none(), "{}", alive[1]);
    assert_nothing_leaked(&w, &published, &logs);
}

#[tokio::test(start_paused = true)]
async fn a_password_moved_while_running_is_found_through_a_refused_consumer() {
    let (logs, _guard) = LogCapture::start();
    let _hold = hold_clock();
    let setup = Setup::new(MESH_ADMIN_PASSWORD, 401);
    let mut w = World::new(setup, &["forge", "wiki"]);
    w.passes(1, PASS).await;
    let mut published = w.published();
    assert_eq!(of(&published, "recovered").len(), 2);
    // The password moves and the server forgets the token (restarted on a
    // moved database).
    w.setup.kc.with(|s| {
        s.move_admin_password(OLD_ADMIN_PASSWORD);
        s.revoke_tokens();
    });
    // Healthy consumers need no administrator until the realm is listed
    // again, a minute after the last listing: that listing (at the start of
    // the pass, before its attempts) is refused, so the same pass looks the
    // consumers up, they are refused, and a refused consumer asks for a
    // probe, repaired at the next pass's start.
    w.passes(14, PASS).await;
    let now = w.published();
    let repaired = repairs(&now, "repaired");
    assert_eq!(repaired.len(), 1, "{now:?}");
    assert_eq!(repaired[0]["said_at"], "2026-10-05T00:01:05Z");
    assert!(
        of(&now, "failing").is_empty(),
        "repaired before failing was due"
    );
    for c in ["forge", "wiki"] {
        let standing = w.runner.standing(&Name::parse(c).unwrap()).unwrap();
        assert!(standing.failure().is_none(), "{c} is served again");
    }
    w.setup.kc.with(|s| {
        let (_, refused) = s.password_logins("admin");
        assert!(
            refused <= 4,
            "a refused login is held, not repeated by every consumer: {refused}"
        );
        assert!(s.temporary_admins().is_empty());
    });
    published.extend(now);
    assert_nothing_leaked(&w, &published, &logs);
}

#[tokio::test(start_paused = true)]
async fn a_new_admin_password_written_into_its_file_ends_the_provider_fault_without_a_restart() {
    let (logs, _guard) = LogCapture::start();
    let _hold = hold_clock();
    // Keycloak's administrator has the mesh's password; the file still
    // holds the old one, and there is no container to repair it through.
    let setup = Setup::new(MESH_ADMIN_PASSWORD, 401);
    let file = setup.dir.path().join("admin.password");
    std::fs::write(&file, format!("{OLD_ADMIN_PASSWORD}\n")).unwrap();
    let config = IdentityConfig::new(
        &setup.kc.url,
        REALM,
        "admin",
        Secret::new(OLD_ADMIN_PASSWORD),
    )
    .unwrap()
    .with_admin_password_file(&file)
    .with_http_timeout(Duration::from_secs(10));
    let provisioner = IdentityProvisioner::new(config).unwrap();
    let mut w = World::with(setup, provisioner, &["forge"]);
    let every = Duration::from_secs(30);
    w.passes(1, every).await;
    let published = w.published();
    let alive = of(&published, "alive");
    assert_eq!(alive.len(), 1, "{published:?}");
    assert_eq!(
        alive[0]["fault"]["class"], "credentials-rejected",
        "{}",
        alive[0]
    );

    // The operator writes the right password into the file: the next probe
    // (within repair_check_every) logs in with it; no restart.
    std::fs::write(&file, MESH_ADMIN_PASSWORD).unwrap();
    let mut cleared = None;
    for pass in 1..=12 {
        w.passes(1, every).await;
        let published = w.published();
        if let Some(a) = of(&published, "alive").first() {
            cleared = Some((pass, (*a).clone()));
            break;
        }
    }
    let (pass, alive) = cleared.expect("the fault never cleared");
    assert!(alive.get("fault").is_none(), "{alive}");
    assert!(pass <= 10, "cleared at pass {pass}: within 5 minutes");
    assert!(logs.text().contains("read a new secret from its file"));
    assert!(
        !logs.text().contains(MESH_ADMIN_PASSWORD) && !logs.text().contains(OLD_ADMIN_PASSWORD)
    );
}
