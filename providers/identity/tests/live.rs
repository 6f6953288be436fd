//! Against a real Keycloak, when one is given; skipped (and passing) otherwise.
//!
//! - `KEYCLOAK_URL`: its base URL, e.g. `http://127.0.0.1:8080`.
//! - `KEYCLOAK_ADMIN_PASSWORD_FILE`: the administrator's password (the one
//!   it has now: this test never changes it).
//! - `KEYCLOAK_CONTAINER`: the container it runs in; when set, the repair
//!   runs for real (a temporary administrator, the password set to the
//!   same value, the temporary administrator removed).
//! - optional: `KEYCLOAK_REALM` (default `master`), `KEYCLOAK_ADMIN_USER`
//!   (default `admin`), `KEYCLOAK_CONTAINER_CLI` (default `docker`).
//!
//! It makes a client `mesh-live-<random>`, proves it, sets a new secret,
//! retires, re-enables and deletes it.

use std::path::PathBuf;
use std::time::Duration;

use mesh_provider_identity::cli::{Flags, MAIN};
use mesh_provider_identity::keycloak::Auth;
use mesh_provider_identity::IdentityProvisioner;
use mesh_sdk::{Consumer, Held, Name, Probe, Provisioner, Repair, Secret};

fn var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

fn random(n: usize) -> String {
    use rand::RngExt;
    let alphabet = b"abcdefghijklmnopqrstuvwxyz0123456789";
    let mut rng = rand::rng();
    (0..n)
        .map(|_| char::from(alphabet[rng.random_range(0..alphabet.len())]))
        .collect()
}

#[tokio::test]
async fn against_a_real_keycloak() {
    let (Some(url), Some(password_file)) =
        (var("KEYCLOAK_URL"), var("KEYCLOAK_ADMIN_PASSWORD_FILE"))
    else {
        println!("skipped: set KEYCLOAK_URL and KEYCLOAK_ADMIN_PASSWORD_FILE (and KEYCLOAK_CONTAINER for the repair) to run against a real Keycloak");
        return;
    };
    let mut argv = vec![
        "mesh-identity".to_owned(),
        "--contributions".into(),
        "unused.json".into(),
        "--keycloak-url".into(),
        url,
        "--realm".into(),
        var("KEYCLOAK_REALM").unwrap_or_else(|| "master".into()),
        "--admin-user".into(),
        var("KEYCLOAK_ADMIN_USER").unwrap_or_else(|| "admin".into()),
        "--admin-password-file".into(),
        password_file,
        "--container-cli".into(),
        var("KEYCLOAK_CONTAINER_CLI").unwrap_or_else(|| "docker".into()),
    ];
    let container = var("KEYCLOAK_CONTAINER");
    if let Some(container) = &container {
        argv.extend(["--container".into(), container.clone()]);
    }
    let (_, flags) = MAIN.parse_from::<Flags, _, _>(argv).unwrap();
    let p = IdentityProvisioner::new(flags.config().unwrap()).unwrap();

    let repair = std::sync::Arc::clone(p.admin_repair());
    assert_eq!(
        repair.probe().await,
        Probe::Healthy,
        "the administrator's login must work with the given password file"
    );

    let name = Name::parse(&format!("mesh-live-{}", random(8))).unwrap();
    let consumer = Consumer {
        name: name.clone(),
        machine: Name::parse("live").unwrap(),
        provision: "oidc-client".into(),
        secret_file: PathBuf::new(),
        options: serde_json::json!({}),
    };
    let (first, second) = (
        Secret::new(format!("s1-{}", random(24))),
        Secret::new(format!("s2-{}", random(24))),
    );
    p.ensure(&consumer, &first).await.unwrap();
    p.ensure(&consumer, &first).await.unwrap();
    p.check(&consumer, &first).await.unwrap();
    // A new minted secret is set once by the refused check.
    p.check(&consumer, &second).await.unwrap();
    assert!(p
        .held()
        .await
        .unwrap()
        .contains(&Held::active(name.clone())));
    p.retire(&name).await.unwrap();
    assert!(p
        .held()
        .await
        .unwrap()
        .contains(&Held::retired(name.clone())));
    assert!(p.check(&consumer, &second).await.is_err(), "disabled");
    p.re_enable(&name).await.unwrap();
    p.check(&consumer, &second).await.unwrap();
    p.retire(&name).await.unwrap();
    p.delete(&name).await.unwrap();
    assert!(!p.held().await.unwrap().iter().any(|h| h.name == name));
    println!("live: client {name} made, checked, mended, retired, re-enabled and deleted");

    if container.is_none() {
        println!(
            "skipped the repair: set KEYCLOAK_CONTAINER to run kc.sh bootstrap-admin for real"
        );
        return;
    }
    let did = tokio::time::timeout(Duration::from_secs(180), repair.repair())
        .await
        .expect("the repair took over 3 minutes")
        .unwrap();
    assert_eq!(repair.probe().await, Probe::Healthy, "verified");
    let temp = did
        .split("temporary administrator ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .unwrap()
        .to_owned();
    assert!(temp.starts_with("mesh-repair-"), "{did}");
    let left = p.keycloak().find_user(Auth::Admin, &temp).await.unwrap();
    assert_eq!(left, None, "the temporary administrator {temp} was removed");
    println!("live: {did}");
}
