//! The `admin-refused` repair against the real Keycloak, with the process
//! runtime: the repair runs the distribution's own `kc.sh bootstrap-admin`
//! on this host, beside the live server.
//!
//! Each test uses its own administrator of realm `master` (never the
//! server's first one), and the tests take turns ([`TURN`]): they change
//! realm `master`'s brute-force settings.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use mesh_provider_identity::login_backoff::LoginBackoff;
use mesh_provider_identity::{AdminLogin, AdminRepair, IdentityConfig, IdentityProvisioner};
use mesh_sdk::testing::{self, LogCapture, Outbox, Runner, Settings};
use mesh_sdk::testing::{BrakeRules, RepairRules};
use mesh_sdk::{Class, Consumer, Name, Probe, Provisioner, Repair, Secret};
use mesh_test_support::{CmdlineScan, KeycloakServer};

use crate::TURN;
use serde_json::{json, Value};

/// Bound of one `kc.sh bootstrap-admin` (a JVM start; ~8 s seen on two cores).
const BOOTSTRAP: Duration = Duration::from_secs(150);

/// A folder with the `kc.sh` the repair runs (on the server's JDK) and
/// the path of the `keycloak.conf` it is given (written with the server's
/// settings when `settings`).
fn repair_files(kc: &KeycloakServer, settings: bool) -> (tempfile::TempDir, PathBuf, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let kc_sh = kc.kc_sh_wrapper(dir.path());
    let conf = dir.path().join("keycloak.conf");
    if settings {
        kc.write_config_file(&conf);
    }
    (dir, kc_sh, conf)
}

/// The mesh's administrator: its name, the password the mesh holds, its id.
struct MeshAdmin {
    name: String,
    password: String,
    id: String,
}

async fn mesh_admin(kc: &KeycloakServer) -> MeshAdmin {
    let (name, password, id) = kc.new_master_admin("mesh-admin").await;
    MeshAdmin { name, password, id }
}

/// The configuration of a provider over `realm` as `admin`, repairing
/// through `kc_sh` with `conf` as its `--config-file`.
fn config(
    kc: &KeycloakServer,
    realm: &str,
    admin: &MeshAdmin,
    kc_sh: &Path,
    conf: &Path,
) -> IdentityConfig {
    IdentityConfig::new(
        &kc.url(),
        realm,
        &admin.name,
        Secret::new(admin.password.clone()),
    )
    .unwrap()
    .with_kc_sh(kc_sh.to_owned(), Some(conf.to_owned()))
    .unwrap()
    .with_http_timeout(Duration::from_secs(20))
    .with_bootstrap_timeout(BOOTSTRAP)
}

/// Sets `admin`'s password behind the provider's back.
async fn set_password_by_hand(kc: &KeycloakServer, admin: &MeshAdmin, password: &str) {
    let body = json!({"type": "password", "value": password, "temporary": false});
    let (status, answer) = kc
        .admin(
            "PUT",
            &format!("master/users/{}/reset-password", admin.id),
            Some(&body),
        )
        .await;
    assert_eq!(status, 204, "setting the password by hand: {answer}");
}

/// The users of realm `master` whose names start with `prefix`.
async fn master_users(kc: &KeycloakServer, prefix: &str) -> Vec<Value> {
    let (status, users) = kc
        .admin(
            "GET",
            &format!("master/users?search={prefix}&briefRepresentation=true&max=1000"),
            None,
        )
        .await;
    assert_eq!(status, 200, "{users}");
    users
        .as_array()
        .unwrap()
        .iter()
        .filter(|u| u["username"].as_str().unwrap_or("").starts_with(prefix))
        .cloned()
        .collect()
}

/// Realm `master`'s brute-force protection: on with `failure_factor`, or off.
async fn brute_force(kc: &KeycloakServer, failure_factor: Option<u32>) {
    let settings = match failure_factor {
        Some(factor) => json!({
            "bruteForceProtected": true,
            "failureFactor": factor,
            "permanentLockout": false,
            "waitIncrementSeconds": 900,
            "maxFailureWaitSeconds": 900,
            "quickLoginCheckMilliSeconds": 1,
            "minimumQuickLoginWaitSeconds": 60,
            "maxDeltaTimeSeconds": 43200,
        }),
        None => json!({"bruteForceProtected": false}),
    };
    let (status, body) = kc.admin("PUT", "master", Some(&settings)).await;
    assert_eq!(status, 204, "realm master's brute-force settings: {body}");
}

/// What brute-force protection knows of user `id` of realm `master`.
async fn login_failures(kc: &KeycloakServer, id: &str) -> Value {
    let (status, body) = kc
        .admin(
            "GET",
            &format!("master/attack-detection/brute-force/users/{id}"),
            None,
        )
        .await;
    assert_eq!(status, 200, "{body}");
    body
}

/// The repair hook's secrets, exposed, for the scans.
fn exposed(repair: &AdminRepair) -> Vec<String> {
    repair
        .secrets()
        .iter()
        .map(|s| s.expose().to_owned())
        .collect()
}

fn assert_no_secret(text: &str, secrets: &[String], what: &str) {
    for (i, secret) in secrets.iter().enumerate() {
        assert!(
            !text.contains(secret.as_str()),
            "secret #{i} leaked into {what}"
        );
    }
}

/// A loop over `consumers` (secrets in `dir`), its repair timings short.
fn runner(
    provisioner: IdentityProvisioner,
    dir: &Path,
    consumers: &[(&str, &str)],
) -> (Runner<IdentityProvisioner>, Arc<Outbox>) {
    let entries: Vec<Value> = consumers
        .iter()
        .map(|(consumer, secret)| {
            std::fs::write(dir.join(format!("secret-{consumer}")), secret).unwrap();
            json!({"consumer": consumer, "machine": "app-1", "provision": "oidc-client",
                   "secret_file": format!("secret-{consumer}")})
        })
        .collect();
    let file = json!({"provider": {"module": "identity", "machine": "id-1"}, "consumers": entries});
    std::fs::write(dir.join("contributions.json"), file.to_string()).unwrap();
    let settings = Settings {
        concurrency: 4,
        call_timeout: Duration::from_secs(30),
        repair: RepairRules {
            check_every: Duration::from_millis(500),
            brake: BrakeRules {
                first: Duration::from_secs(3),
                cap: Duration::from_secs(30),
            },
            repair_timeout: BOOTSTRAP + Duration::from_secs(60),
        },
        ..Settings::default()
    };
    let outbox = Arc::new(Outbox::new());
    let runner = Runner::new(
        provisioner,
        dir.join("contributions.json"),
        settings,
        Arc::clone(&outbox),
    );
    (runner, outbox)
}

/// Passes, half a second apart, until `done` holds of what was published (all
/// of it, oldest first); panics after `limit`.
async fn passes_until(
    runner: &mut Runner<IdentityProvisioner>,
    outbox: &Outbox,
    published: &mut Vec<(String, Value)>,
    limit: Duration,
    what: &str,
    done: impl Fn(&[(String, Value)]) -> bool,
) {
    let end = std::time::Instant::now() + limit;
    loop {
        runner.pass().await;
        published.extend(testing::drain(outbox));
        if done(published) {
            return;
        }
        assert!(
            std::time::Instant::now() < end,
            "{what} within {limit:?}; published: {published:?}"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

fn repairs<'a>(published: &'a [(String, Value)], outcome: &str) -> Vec<&'a Value> {
    published
        .iter()
        .filter(|(kind, body)| kind == "repair" && body["outcome"] == outcome)
        .map(|(_, body)| body)
        .collect()
}

fn recovered(published: &[(String, Value)], consumer: &str) -> usize {
    published
        .iter()
        .filter(|(kind, body)| kind == "recovered" && body["consumer"] == consumer)
        .count()
}

#[tokio::test]
async fn a_password_changed_by_hand_is_repaired_with_kc_sh_bootstrap_admin_beside_the_live_server()
{
    let Some(kc) = KeycloakServer::shared() else {
        return;
    };
    let _turn = TURN.lock().await;
    let (logs, _guard) = LogCapture::start();
    let (dir, kc_sh, conf) = repair_files(kc, false);
    let realm = kc.new_realm("repair").await;
    let admin = mesh_admin(kc).await;
    let provisioner = IdentityProvisioner::new(config(kc, &realm, &admin, &kc_sh, &conf)).unwrap();
    let repair = Arc::clone(provisioner.admin_repair());
    let consumers = [
        ("forge", "forge-minted-Tq83kWz1"),
        ("wiki", "wiki-minted-Lp20xVb7"),
    ];
    let (mut runner, outbox) = runner(provisioner, dir.path(), &consumers);
    let scan = CmdlineScan::start("bootstrap-admin");
    let db_password = kc
        .db_env()
        .into_iter()
        .find(|(name, _)| name == "KC_DB_PASSWORD")
        .unwrap()
        .1;
    let by_hand = "changed-by-hand-Wd71qZ".to_owned();
    let mut secrets = vec![admin.password.clone(), by_hand.clone(), db_password];
    secrets.extend(consumers.iter().map(|(_, s)| (*s).to_owned()));
    scan.watch(secrets.clone());
    scan.watch(exposed(&repair));

    let mut published = Vec::new();
    passes_until(
        &mut runner,
        &outbox,
        &mut published,
        Duration::from_secs(60),
        "both served",
        |s| recovered(s, "forge") == 1 && recovered(s, "wiki") == 1,
    )
    .await;

    // The password moves behind the provider's back, and the repair
    // cannot run yet: its kc.sh is given a keycloak.conf whose database
    // password is wrong.
    std::fs::write(
        &conf,
        "db-url=jdbc:postgresql://127.0.0.1:1/none\ndb-username=nobody\ndb-password=wrong\ncache=local\n",
    )
    .unwrap();
    set_password_by_hand(kc, &admin, &by_hand).await;
    passes_until(
        &mut runner,
        &outbox,
        &mut published,
        BOOTSTRAP * 2,
        "a failed repair",
        |s| !repairs(s, "failed").is_empty(),
    )
    .await;
    scan.watch(exposed(&repair));
    let failed = repairs(&published, "failed")[0].clone();
    let detail = failed["detail"].as_str().unwrap();
    assert!(
        detail.starts_with("repair failed: kc.sh bootstrap-admin ended with status "),
        "{detail}"
    );
    assert!(failed["next_attempt_at"].is_string(), "braked: {failed}");
    // Consumers are gated: failing with the fault's class, Keycloak not asked.
    for consumer in ["forge", "wiki"] {
        let standing = runner.standing(&Name::parse(consumer).unwrap()).unwrap();
        let failure = standing.failure().expect("failing while the fault lasts");
        assert_eq!(
            failure.detail.class,
            Class::CredentialsRejected,
            "{failure:?}"
        );
    }
    assert!(
        master_users(kc, "mesh-repair-").await.is_empty(),
        "the failed repair left no temporary administrator"
    );

    // The repair's kc.sh gets the server's settings: after the brake, the
    // next attempt repairs it and the consumers are served again.
    kc.write_config_file(&conf);
    passes_until(
        &mut runner,
        &outbox,
        &mut published,
        BOOTSTRAP * 2,
        "repaired",
        |s| !repairs(s, "repaired").is_empty(),
    )
    .await;
    // The gate is open again: the next pass serves both consumers.
    runner.pass().await;
    published.extend(testing::drain(&outbox));
    for consumer in ["forge", "wiki"] {
        let standing = runner.standing(&Name::parse(consumer).unwrap()).unwrap();
        assert!(
            standing.failure().is_none(),
            "{consumer} served again: {standing:?}"
        );
    }
    scan.watch(exposed(&repair));
    let repaired = repairs(&published, "repaired")[0].clone();
    let detail = repaired["detail"].as_str().unwrap();
    assert!(
        detail.contains(&format!("password of administrator {} set to the mesh's through temporary administrator mesh-repair-", admin.name))
            && detail.contains("(kc.sh bootstrap-admin on this host)"),
        "{detail}"
    );
    assert!(
        repaired["said_at"].as_str().unwrap() >= failed["next_attempt_at"].as_str().unwrap(),
        "not before the brake let it: {failed} then {repaired}"
    );
    let runs = scan.finish();
    assert!(runs >= 2, "the scan saw {runs} kc.sh bootstrap-admin runs");

    // No temporary administrator is left; the server's first administrator
    // (also marked temporary by Keycloak) is untouched.
    assert!(master_users(kc, "mesh-repair-").await.is_empty());
    assert_eq!(master_users(kc, "admin").await.len(), 1);
    // The mesh's password is the administrator's again.
    let token = reqwest_login(kc, &admin.name, &admin.password).await;
    assert_eq!(token, 200);

    secrets.extend(exposed(&repair));
    let mut published_text = String::new();
    for (_, body) in &published {
        published_text.push_str(&body.to_string());
    }
    assert_no_secret(&published_text, &secrets, "the events published");
    assert_no_secret(&logs.text(), &secrets, "the log");
}

/// The status of a password login as `username` to realm `master`.
async fn reqwest_login(kc: &KeycloakServer, username: &str, password: &str) -> u16 {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::new()
        .post(format!(
            "{}/realms/master/protocol/openid-connect/token",
            kc.url()
        ))
        .form(&[
            ("grant_type", "password"),
            ("client_id", "admin-cli"),
            ("username", username),
            ("password", password),
        ])
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

#[tokio::test]
async fn a_braked_hour_of_probes_does_not_lock_the_administrator_out() {
    let Some(kc) = KeycloakServer::shared() else {
        return;
    };
    let _turn = TURN.lock().await;
    let dir = tempfile::tempdir().unwrap();
    let realm = kc.new_realm("brake").await;
    let admin = mesh_admin(kc).await;
    let guesser = mesh_admin(kc).await;
    brute_force(kc, Some(5)).await;
    // The protection is on: five refused logins lock a user out.
    for _ in 0..5 {
        assert_eq!(reqwest_login(kc, &guesser.name, "a-wrong-guess").await, 401);
    }
    assert_eq!(login_failures(kc, &guesser.id).await["disabled"], true);

    // An hour in 1:1200 (3 s), the hold 5 minutes doubling to 2 hours,
    // scaled, and a probe every 50 ms while the repair is braked: far more
    // probes than logins even when a loaded machine's Keycloak takes a second
    // to refuse each login the hold lets through.
    set_password_by_hand(kc, &admin, "changed-by-hand-Rf52sM").await;
    let hold = LoginBackoff {
        first: Duration::from_millis(250),
        max: Duration::from_secs(6),
    };
    let provisioner = IdentityProvisioner::new(
        config(
            kc,
            &realm,
            &admin,
            Path::new("/nonexistent/kc.sh"),
            &dir.path().join("none"),
        )
        .with_login_backoff(hold),
    )
    .unwrap();
    let repair = provisioner.admin_repair();
    let hour = Duration::from_secs(3);
    let start = std::time::Instant::now();
    let mut probes = 0;
    while start.elapsed() < hour {
        assert!(matches!(repair.probe().await, Probe::Fault(w) if w.contains("invalid_grant")));
        probes += 1;
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let failures = login_failures(kc, &admin.id).await;
    let counted = failures["numFailures"].as_u64().unwrap();
    // The probes outnumber the logins the hold lets through (a loaded
    // machine answers slower, so the count of probes in the hour varies).
    let allowed = hold.refusals_within(hour);
    assert!(
        probes >= 2 * allowed,
        "{probes} probes, {allowed} logins allowed"
    );
    assert!(
        counted <= u64::from(hold.refusals_within(hour)) && counted < 5,
        "{counted} refused logins counted: {failures}"
    );
    assert_eq!(failures["disabled"], false, "{failures}");
    brute_force(kc, None).await;
}

#[tokio::test]
async fn the_repair_ends_a_lockout_of_the_administrator() {
    let Some(kc) = KeycloakServer::shared() else {
        return;
    };
    let _turn = TURN.lock().await;
    let (logs, _guard) = LogCapture::start();
    let (_dir, kc_sh, conf) = repair_files(kc, true);
    let realm = kc.new_realm("lockout").await;
    let admin = mesh_admin(kc).await;
    brute_force(kc, Some(3)).await;
    // Someone's guesses lock the mesh's administrator out: its right
    // password is refused, with the same answer as a wrong one.
    for _ in 0..3 {
        assert_eq!(reqwest_login(kc, &admin.name, "a-wrong-guess").await, 401);
    }
    assert_eq!(reqwest_login(kc, &admin.name, &admin.password).await, 401);
    let provisioner = IdentityProvisioner::new(config(kc, &realm, &admin, &kc_sh, &conf)).unwrap();
    let repair = provisioner.admin_repair();
    assert!(matches!(repair.probe().await, Probe::Fault(_)));
    let did = repair.repair().await.unwrap();
    assert!(did.contains("which was removed"), "{did}");
    assert_eq!(repair.probe().await, Probe::Healthy, "the lockout ended");
    assert_eq!(login_failures(kc, &admin.id).await["disabled"], false);
    assert!(master_users(kc, "mesh-repair-").await.is_empty());
    brute_force(kc, None).await;
    let secrets: Vec<String> = exposed(repair);
    assert_no_secret(&logs.text(), &secrets, "the log");
}

#[tokio::test]
async fn a_service_account_administrator_logs_in_by_client_credentials_and_its_secret_is_repaired()
{
    let Some(kc) = KeycloakServer::shared() else {
        return;
    };
    let _turn = TURN.lock().await;
    let (logs, _guard) = LogCapture::start();
    let (_dir, kc_sh, conf) = repair_files(kc, true);
    let realm = kc.new_realm("client-admin").await;
    let (client_id, secret, id) = kc.new_master_admin_client("mesh-automation").await;
    let admin = MeshAdmin {
        name: client_id.clone(),
        password: secret.clone(),
        id: id.clone(),
    };
    let provisioner = IdentityProvisioner::new(
        config(kc, &realm, &admin, &kc_sh, &conf).with_admin_login(AdminLogin::ClientCredentials),
    )
    .unwrap();
    let repair = Arc::clone(provisioner.admin_repair());
    let forge = Consumer {
        provider: "identity@id-1".parse().unwrap(),
        name: Name::parse("forge").unwrap(),
        machine: Name::parse("app-1").unwrap(),
        provision: "oidc-client".into(),
        secret_file: Default::default(),
        options: json!({}),
    };
    let minted = Secret::new("forge-minted-Hs62pQ0x");
    provisioner.ensure(&forge, &minted).await.unwrap();
    provisioner.check(&forge, &minted).await.unwrap();
    assert_eq!(repair.probe().await, Probe::Healthy);

    // The client's secret is changed by hand: its login is refused.
    let by_hand = "changed-by-hand-Nx40cR";
    let (status, body) = kc
        .admin(
            "PUT",
            &format!("master/clients/{id}"),
            Some(&json!({"secret": by_hand})),
        )
        .await;
    assert_eq!(status, 204, "{body}");
    let Probe::Fault(fault) = repair.probe().await else {
        panic!("the refused client is the fault");
    };
    assert!(
        fault.starts_with(&format!(
            "administrator login as client {client_id}: keycloak answered 401: unauthorized_client"
        )),
        "{fault}"
    );
    let did = repair.repair().await.unwrap();
    assert!(
        did.starts_with(&format!("secret of administrator client {client_id} set to the mesh's through temporary administrator mesh-repair-")),
        "{did}"
    );
    assert_eq!(repair.probe().await, Probe::Healthy);
    provisioner
        .delete(&forge.provider, &forge.name)
        .await
        .unwrap();
    assert!(master_users(kc, "mesh-repair-").await.is_empty());
    let mut secrets = vec![secret, by_hand.to_owned(), minted.expose().to_owned()];
    secrets.extend(exposed(&repair));
    assert_no_secret(&logs.text(), &secrets, "the log");
}
