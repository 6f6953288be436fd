//! The provider against the real Keycloak: a realm per test, the
//! provider's own [`Provisioner`] code paths.
//!
//! What these tests showed of Keycloak 26.5.6 is written in the fake's
//! module docs (`tests/scenarios/fake_keycloak.rs`).

use std::path::PathBuf;
use std::time::Duration;

use mesh_provider_identity::{IdentityConfig, IdentityError, IdentityProvisioner, MARK};
use mesh_sdk::{Class, Consumer, Held, Name, Provisioner, Secret};
use mesh_test_support::{KeycloakServer, KEYCLOAK_ADMIN};
use serde_json::{json, Value};

/// The shared server, or `None` (said SKIPPED). Booting may take minutes on
/// a loaded machine; the first test waits for it, the others for the first.
fn keycloak() -> Option<&'static KeycloakServer> {
    let started = std::time::Instant::now();
    let server = KeycloakServer::shared()?;
    if started.elapsed() > Duration::from_secs(1) {
        eprintln!(
            "keycloak ready at {} after {:?}",
            server.url(),
            server.boot_time()
        );
    }
    Some(server)
}

/// A provisioner over `realm`, its administrator the server's first one.
fn provisioner(kc: &KeycloakServer, realm: &str) -> IdentityProvisioner {
    let config = IdentityConfig::new(
        &kc.url(),
        realm,
        KEYCLOAK_ADMIN,
        Secret::new(kc.admin_password()),
    )
    .unwrap()
    .with_http_timeout(Duration::from_secs(20));
    IdentityProvisioner::new(config).unwrap()
}

/// The provider instance these tests act as.
fn provider() -> mesh_sdk::ModuleId {
    "identity@id-1".parse().unwrap()
}

fn consumer(name: &str) -> Consumer {
    Consumer {
        provider: provider(),
        name: Name::parse(name).unwrap(),
        machine: Name::parse("live").unwrap(),
        provision: "oidc-client".into(),
        secret_file: PathBuf::new(),
        options: json!({}),
    }
}

fn name(s: &str) -> Name {
    Name::parse(s).unwrap()
}

/// A random secret, never printed.
fn minted() -> Secret {
    use rand::RngExt;
    let alphabet = b"abcdefghijklmnopqrstuvwxyz0123456789";
    let mut rng = rand::rng();
    Secret::new(
        (0..32)
            .map(|_| char::from(alphabet[rng.random_range(0..alphabet.len())]))
            .collect::<String>(),
    )
}

/// The client `client_id` of `realm` as the admin API shows it.
async fn client(kc: &KeycloakServer, realm: &str, client_id: &str) -> Option<Value> {
    let (status, body) = kc
        .admin(
            "GET",
            &format!("{realm}/clients?clientId={client_id}"),
            None,
        )
        .await;
    assert_eq!(status, 200);
    body.as_array().and_then(|all| all.first().cloned())
}

/// Fails when any of `secrets` is in the server's log or on the command
/// line of any process of the machine.
fn assert_nowhere(kc: &KeycloakServer, secrets: &[&str]) {
    let mut places = vec![("the Keycloak log".to_owned(), kc.log())];
    for entry in std::fs::read_dir("/proc").unwrap().filter_map(Result::ok) {
        if let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) {
            let shown = format!("{}/cmdline", entry.path().display());
            places.push((shown, String::from_utf8_lossy(&cmdline).into_owned()));
        }
    }
    for (i, secret) in secrets.iter().enumerate() {
        for (place, text) in &places {
            assert!(!text.contains(secret), "secret #{i} found in {place}");
        }
    }
}

/// Bounds a step on the real server, saying what a hang likely means.
async fn bounded<T>(what: &str, step: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(120), step)
        .await
        .unwrap_or_else(|_| panic!("{what} took over 2 minutes: Keycloak stopped answering?"))
}

#[tokio::test]
async fn a_client_per_consumer_made_checked_rotated_retired_re_enabled_and_deleted() {
    let Some(kc) = keycloak() else { return };
    let realm = kc.new_realm("live").await;
    let p = provisioner(kc, &realm);
    let forge = consumer("forge");
    let (first, second) = (minted(), minted());

    bounded("making the client", async {
        p.ensure(&forge, &first).await.unwrap();
        p.ensure(&forge, &first).await.unwrap();
    })
    .await;
    let made = client(kc, &realm, "forge").await.expect("made");
    assert_eq!(made["enabled"], true);
    assert_eq!(made["publicClient"], false);
    assert_eq!(made["serviceAccountsEnabled"], true);
    assert_eq!(made["attributes"][MARK], "true");
    assert_eq!(
        made["secret"],
        first.expose(),
        "a given secret is stored as is"
    );
    p.check(&forge, &first).await.unwrap();

    // A wrong secret on an enabled client: 401 unauthorized_client.
    let refused = p
        .keycloak()
        .client_credentials("forge", &second)
        .await
        .unwrap_err();
    assert_eq!(
        (refused.status(), refused.keycloak_error()),
        (Some(401), Some("unauthorized_client")),
        "{refused}"
    );
    assert_eq!(p.classify(&refused), Some(Class::CredentialsRejected));

    // Rotated: the refused check sets the new secret once; the old one is refused at once.
    p.check(&forge, &second).await.unwrap();
    let rotated = client(kc, &realm, "forge").await.unwrap();
    assert_eq!(rotated["secret"], second.expose());
    assert_eq!(rotated["attributes"][MARK], "true", "other fields kept");
    let old = p.keycloak().client_credentials("forge", &first).await;
    assert!(old.is_err(), "the old secret is refused");
    p.check(&forge, &second).await.unwrap();

    assert_eq!(
        p.held(&provider()).await.unwrap(),
        vec![Held::active(name("forge"))]
    );
    p.retire(&provider(), &name("forge")).await.unwrap();
    p.retire(&provider(), &name("forge")).await.unwrap();
    assert_eq!(
        p.held(&provider()).await.unwrap(),
        vec![Held::retired(name("forge"))]
    );

    // Disabled: refused with the right secret (401 invalid_client), nothing written.
    let refused = p.check(&forge, &second).await.unwrap_err();
    assert_eq!(
        (refused.status(), refused.keycloak_error()),
        (Some(401), Some("invalid_client")),
        "{refused}"
    );
    assert_eq!(p.classify(&refused), Some(Class::CredentialsRejected));
    let retired = client(kc, &realm, "forge").await.unwrap();
    assert_eq!(retired["enabled"], false);
    assert_eq!(retired["secret"], second.expose(), "kept while retired");

    p.re_enable(&provider(), &name("forge")).await.unwrap();
    p.check(&forge, &second).await.unwrap();
    assert_eq!(
        p.held(&provider()).await.unwrap(),
        vec![Held::active(name("forge"))]
    );

    p.retire(&provider(), &name("forge")).await.unwrap();
    p.delete(&provider(), &name("forge")).await.unwrap();
    p.delete(&provider(), &name("forge")).await.unwrap();
    assert!(p.held(&provider()).await.unwrap().is_empty());
    assert_eq!(client(kc, &realm, "forge").await, None);
    let gone = p.check(&forge, &second).await.unwrap_err();
    assert_eq!(gone.keycloak_error(), Some("invalid_client"), "{gone}");
    assert_nowhere(kc, &[kc.admin_password(), first.expose(), second.expose()]);
}

#[tokio::test]
async fn a_public_client_is_made_confidential_again_with_the_minted_secret() {
    let Some(kc) = keycloak() else { return };
    let realm = kc.new_realm("live").await;
    let p = provisioner(kc, &realm);
    let wiki = consumer("wiki");
    let secret = minted();
    p.ensure(&wiki, &secret).await.unwrap();
    let id = client(kc, &realm, "wiki").await.unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    // Someone turns it public: Keycloak drops its secret.
    let path = format!("{realm}/clients/{id}");
    let (status, _) = kc
        .admin("PUT", &path, Some(&json!({"publicClient": true})))
        .await;
    assert_eq!(status, 204);
    let public = client(kc, &realm, "wiki").await.unwrap();
    assert!(
        public["secret"].as_str().is_none_or(str::is_empty),
        "a public client has no secret"
    );
    let refused = p
        .keycloak()
        .client_credentials("wiki", &secret)
        .await
        .unwrap_err();
    assert_eq!(
        refused.keycloak_error(),
        Some("unauthorized_client"),
        "{refused}"
    );
    // The check mends it in one PUT (secret, publicClient, serviceAccountsEnabled).
    p.check(&wiki, &secret).await.unwrap();
    assert_eq!(
        client(kc, &realm, "wiki").await.unwrap()["secret"],
        secret.expose()
    );
}

#[tokio::test]
async fn clients_come_in_client_id_order_and_foreign_ones_are_left_alone() {
    let Some(kc) = keycloak() else { return };
    let realm = kc.new_realm("live").await;
    let p = provisioner(kc, &realm);
    // Someone else's client of a consumer's name.
    let (status, _) = kc
        .admin(
            "POST",
            &format!("{realm}/clients"),
            Some(&json!({"clientId": "legacy", "secret": "theirs-not-a-real-one"})),
        )
        .await;
    assert_eq!(status, 201);
    let error = p.ensure(&consumer("legacy"), &minted()).await.unwrap_err();
    assert!(matches!(error, IdentityError::Foreign { .. }), "{error}");

    for n in ["zeta", "m-2", "alpha", "m-1", "omega"] {
        p.ensure(&consumer(n), &minted()).await.unwrap();
    }
    // Made in another order, listed by clientId (with Keycloak's own clients).
    let (status, all) = kc.admin("GET", &format!("{realm}/clients"), None).await;
    assert_eq!(status, 200);
    let ids: Vec<&str> = all
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["clientId"].as_str())
        .collect();
    let mut sorted = ids.clone();
    sorted.sort_unstable();
    assert_eq!(ids, sorted, "listed in clientId order");
    let held: Vec<String> = p
        .held(&provider())
        .await
        .unwrap()
        .into_iter()
        .map(|h| h.name.to_string())
        .collect();
    assert_eq!(
        held,
        ["alpha", "m-1", "m-2", "omega", "zeta"],
        "only its own, in order"
    );
}

/// A loop over `realm` serving `consumers` (their secrets in files under `dir`).
fn runner(
    kc: &KeycloakServer,
    realm: &str,
    dir: &std::path::Path,
    consumers: &[(&str, &Secret)],
) -> mesh_sdk::testing::Runner<IdentityProvisioner> {
    let mut entries = Vec::new();
    for (name, secret) in consumers {
        std::fs::write(dir.join(name), secret.expose()).unwrap();
        entries.push(json!({"consumer": name, "machine": "live", "provision": "oidc-client", "secret_file": name}));
    }
    let file = json!({"provider": {"module": "identity", "machine": "kc-1"}, "consumers": entries});
    std::fs::write(dir.join("c.json"), file.to_string()).unwrap();
    mesh_sdk::testing::Runner::new(
        provisioner(kc, realm),
        dir.join("c.json"),
        mesh_sdk::testing::Settings::default(),
        std::sync::Arc::new(mesh_sdk::testing::Outbox::new()),
    )
}

#[tokio::test]
async fn a_client_deleted_by_hand_is_made_again_within_two_passes() {
    let Some(kc) = keycloak() else { return };
    let realm = kc.new_realm("live").await;
    let dir = tempfile::tempdir().unwrap();
    let (forge, wiki) = (minted(), minted());
    let mut r = runner(
        kc,
        &realm,
        dir.path(),
        &[("forge", &forge), ("wiki", &wiki)],
    );
    let report = bounded("the first pass", r.pass()).await;
    assert_eq!((report.attempted, report.failed), (2, 0), "{report:?}");
    // A healthy pass: the clients the listing showed are not looked up again.
    let before = r.provisioner().keycloak().calls();
    let report = bounded("a healthy pass", r.pass()).await;
    assert_eq!(report.failed, 0, "{report:?}");
    let calls = r.provisioner().keycloak().calls().since(&before);
    assert_eq!((calls.lookups, calls.grants), (0, 2), "{calls}");

    // Someone deletes forge's client behind the provider's back.
    let id = client(kc, &realm, "forge").await.unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let (status, _) = kc
        .admin("DELETE", &format!("{realm}/clients/{id}"), None)
        .await;
    assert_eq!(status, 204);
    let mut passes = 0;
    let remade = loop {
        passes += 1;
        let report = bounded("a pass after the deletion", r.pass()).await;
        if let Some(remade) = client(kc, &realm, "forge").await {
            if report.failed == 0 {
                break remade;
            }
        }
        assert!(passes < 2, "not made again within two passes: {report:?}");
    };
    assert_ne!(remade["id"], id.as_str(), "a new client");
    assert_eq!(remade["attributes"][MARK], "true");
    grant_works(kc, &realm, "forge", &forge).await;
    assert_nowhere(kc, &[kc.admin_password(), forge.expose(), wiki.expose()]);
}

/// The client-credentials grant of `client_id` with `secret` succeeds.
async fn grant_works(kc: &KeycloakServer, realm: &str, client_id: &str, secret: &Secret) {
    provisioner(kc, realm)
        .keycloak()
        .client_credentials(client_id, secret)
        .await
        .unwrap();
}

/// The conformance suite (the rules `mesh-provide conform` runs against a
/// hook) against the provider and a real Keycloak realm.
#[tokio::test]
async fn mesh_identity_passes_conform() {
    let Some(kc) = keycloak() else { return };
    let realm = kc.new_realm("conform").await;
    let p = provisioner(kc, &realm);
    let suite = mesh_sdk::conform::Suite::new(mesh_provider_identity::PROVISION);
    let report = bounded(
        "the conformance suite",
        mesh_sdk::conform::conform(&p, &suite),
    )
    .await;
    println!("{report}");
    report.assert_passed();
}

/// Two instances of mesh-identity on one realm (a move in progress, two
/// machines' providers on one Keycloak): each lists, retires and deletes
/// only the clients it made, refuses the other's, and a client an older
/// release made (the mark alone) is adopted only by the instance listing it.
#[tokio::test]
async fn two_instances_on_one_realm_touch_only_their_own_clients() {
    let Some(kc) = keycloak() else { return };
    let realm = kc.new_realm("live").await;
    let (a, b) = (provisioner(kc, &realm), provisioner(kc, &realm));
    let (id_1, id_2): (mesh_sdk::ModuleId, mesh_sdk::ModuleId) = (
        "identity@id-1".parse().unwrap(),
        "identity@id-2".parse().unwrap(),
    );
    let as_b = |n: &str| Consumer {
        provider: id_2.clone(),
        ..consumer(n)
    };
    let (forge, app) = (minted(), minted());
    bounded("making a client for each instance", async {
        a.ensure(&consumer("forge"), &forge).await.unwrap();
        b.ensure(&as_b("app"), &app).await.unwrap();
    })
    .await;
    let made = client(kc, &realm, "forge").await.unwrap();
    assert_eq!(made["attributes"][MARK], "true");
    assert_eq!(made["attributes"]["mesh.provider"], "identity@id-1");
    assert_eq!(a.held(&id_1).await.unwrap(), [Held::active(name("forge"))]);
    assert_eq!(b.held(&id_2).await.unwrap(), [Held::active(name("app"))]);

    // b asked about a's client: refused, nothing changed.
    let error = b.ensure(&as_b("forge"), &minted()).await.unwrap_err();
    assert!(
        matches!(&error, IdentityError::OtherInstance { by, .. } if by == "identity@id-1"),
        "{error}"
    );
    assert_eq!(b.classify(&error), Some(Class::Refused));
    for refused in [
        b.retire(&id_2, &name("forge")).await,
        b.delete(&id_2, &name("forge")).await,
    ] {
        assert!(
            matches!(refused, Err(IdentityError::OtherInstance { .. })),
            "{refused:?}"
        );
    }
    a.check(&consumer("forge"), &forge).await.unwrap();
    assert_eq!(client(kc, &realm, "forge").await.unwrap()["enabled"], true);

    // Made by an older release: the mark alone.
    let (status, _) = kc
        .admin(
            "POST",
            &format!("{realm}/clients"),
            Some(
                &json!({"clientId": "legacy", "secret": "an-old-secret-not-real",
                         "serviceAccountsEnabled": true, "publicClient": false,
                         "attributes": {MARK: "true"}}),
            ),
        )
        .await;
    assert_eq!(status, 201);
    assert!(b
        .held(&id_2)
        .await
        .unwrap()
        .iter()
        .all(|h| h.name.as_str() != "legacy"));
    let refused = b.retire(&id_2, &name("legacy")).await.unwrap_err();
    assert!(
        matches!(refused, IdentityError::NotAdopted { .. }),
        "{refused}"
    );
    assert_eq!(client(kc, &realm, "legacy").await.unwrap()["enabled"], true);
    // Listed by a: adopted in its ensure, then its own.
    let legacy = minted();
    a.ensure(&consumer("legacy"), &legacy).await.unwrap();
    a.check(&consumer("legacy"), &legacy).await.unwrap();
    let adopted = client(kc, &realm, "legacy").await.unwrap();
    assert_eq!(adopted["attributes"]["mesh.provider"], "identity@id-1");
    assert_eq!(adopted["attributes"][MARK], "true", "other attributes kept");
    let mut held: Vec<String> = a
        .held(&id_1)
        .await
        .unwrap()
        .into_iter()
        .map(|h| h.name.to_string())
        .collect();
    held.sort();
    assert_eq!(held, ["forge", "legacy"]);
    b.retire(&id_2, &name("app")).await.unwrap();
    assert_eq!(b.held(&id_2).await.unwrap(), [Held::retired(name("app"))]);
    assert_eq!(client(kc, &realm, "forge").await.unwrap()["enabled"], true);
    assert_nowhere(
        kc,
        &[
            kc.admin_password(),
            forge.expose(),
            app.expose(),
            legacy.expose(),
        ],
    );
}
