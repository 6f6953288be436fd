//! Clients made, checked, mended, listed, retired and deleted; foreign
//! clients refused and untouched; classes from statuses; the
//! administrator's token cached and renewed.

use std::time::Duration;

use axum::http::Method;
use mesh_provider_identity::{IdentityError, MARK};
use mesh_sdk::{Class, Held, Name, Provisioner, Secret, Served};
use serde_json::json;

use crate::fake_keycloak::Client;
use crate::world::{consumer, hold_clock, minted, Setup, MESH_ADMIN_PASSWORD, OLD_ADMIN_PASSWORD};

fn secret(consumer: &str, n: u32) -> Secret {
    Secret::new(minted(consumer, n))
}

fn name(s: &str) -> Name {
    Name::parse(s).unwrap()
}

#[tokio::test]
async fn a_client_is_made_once_and_checked_with_its_own_secret() {
    let setup = Setup::new(MESH_ADMIN_PASSWORD, 401);
    let p = setup.provisioner();
    let forge = consumer("forge");
    for _ in 0..3 {
        p.ensure(&forge, &secret("forge", 1)).await.unwrap();
        p.check(&forge, &secret("forge", 1)).await.unwrap();
    }
    setup.kc.with(|s| {
        assert_eq!(
            s.count("POST", "/admin/realms/mesh/clients"),
            1,
            "made once"
        );
        assert_eq!(s.count("PUT", "/clients/"), 0, "nothing to mend");
        let client = s.client("forge").unwrap();
        assert_eq!(client.secret.as_deref(), Some(minted("forge", 1).as_str()));
        assert!(client.enabled && client.service_accounts_enabled && !client.public_client);
        assert_eq!(
            client.attributes.get(MARK).map(String::as_str),
            Some("true")
        );
        assert_eq!(
            s.password_logins("admin"),
            (1, 0),
            "the admin token is cached"
        );
        let checks = s
            .logins
            .iter()
            .filter(|l| l.1 == "client_credentials" && l.2 == "forge" && l.3)
            .count();
        assert_eq!(checks, 3);
    });
}

#[tokio::test]
async fn a_409_while_making_is_taken_as_made_when_the_client_is_ours() {
    let setup = Setup::new(MESH_ADMIN_PASSWORD, 400);
    let p = setup.provisioner();
    // Another run of the provider made it a moment ago; the lookup missed it.
    setup.kc.with(|s| {
        s.add_marked("forge", &minted("forge", 1), true);
        s.stale_lookups = 1;
    });
    p.ensure(&consumer("forge"), &secret("forge", 1))
        .await
        .unwrap();
    // Someone else made "wiki" a moment ago: refused.
    setup.kc.with(|s| {
        s.clients.push(Client::foreign("w-1", "wiki", "theirs"));
        s.stale_lookups = 1;
    });
    let error = p
        .ensure(&consumer("wiki"), &secret("wiki", 1))
        .await
        .unwrap_err();
    assert!(matches!(error, IdentityError::Foreign { .. }), "{error}");
    setup.kc.with(|s| {
        assert_eq!(s.count("POST", "/clients"), 2, "both makes answered 409");
        assert_eq!(s.clients.len(), 2);
    });
}

#[tokio::test]
async fn a_changed_minted_secret_is_applied_once() {
    let setup = Setup::new(MESH_ADMIN_PASSWORD, 401);
    let p = setup.provisioner();
    let forge = consumer("forge");
    assert_eq!(
        p.ensure(&forge, &secret("forge", 1)).await.unwrap(),
        Served::AsIs
    );
    assert_eq!(
        p.check(&forge, &secret("forge", 1)).await.unwrap(),
        Served::AsIs,
        "made, not mended"
    );
    // The mesh minted a new secret: ensure leaves the client alone, the
    // refused check sets the secret once (and says so: the loop tells a
    // rotation from a hand edit), then passes.
    assert_eq!(
        p.ensure(&forge, &secret("forge", 2)).await.unwrap(),
        Served::AsIs
    );
    assert_eq!(
        p.check(&forge, &secret("forge", 2)).await.unwrap(),
        Served::mended("the client's secret was refused and set to the minted one")
    );
    assert_eq!(
        p.check(&forge, &secret("forge", 2)).await.unwrap(),
        Served::AsIs
    );
    setup.kc.with(|s| {
        assert_eq!(s.count("PUT", "/admin/realms/mesh/clients/"), 1, "set once");
        assert_eq!(
            s.client("forge").unwrap().secret.as_deref(),
            Some(minted("forge", 2).as_str())
        );
        let checks: Vec<bool> = s
            .logins
            .iter()
            .filter(|l| l.1 == "client_credentials")
            .map(|l| l.3)
            .collect();
        assert_eq!(checks, vec![true, false, true, true]);
    });
}

#[tokio::test]
async fn a_check_that_stays_refused_after_the_reset_fails_as_credentials_rejected() {
    let setup = Setup::new(MESH_ADMIN_PASSWORD, 401);
    let p = setup.provisioner();
    let forge = consumer("forge");
    p.ensure(&forge, &secret("forge", 1)).await.unwrap();
    // Someone turned the client public; the reset makes it confidential again.
    setup.kc.with(|s| {
        s.clients[0].public_client = true;
        s.clients[0].service_accounts_enabled = false;
    });
    p.check(&forge, &secret("forge", 1)).await.unwrap();
    // Someone disabled it: a reset cannot help; the check fails, nothing written.
    setup.kc.with(|s| s.clients[0].enabled = false);
    let error = p.check(&forge, &secret("forge", 1)).await.unwrap_err();
    assert_eq!(
        p.classify(&error),
        Some(Class::CredentialsRejected),
        "{error}"
    );
    assert_eq!(
        error.to_string(),
        "client-credentials login of client forge: keycloak answered 401: invalid_client: Invalid client or Invalid client credentials"
    );
    setup.kc.with(|s| {
        assert_eq!(
            s.count("PUT", "/clients/"),
            1,
            "the public client's reset only"
        )
    });
}

#[tokio::test]
async fn a_foreign_client_is_refused_and_never_touched() {
    let setup = Setup::new(MESH_ADMIN_PASSWORD, 401);
    let p = setup.provisioner();
    let legacy = Client::foreign("l-1", "legacy", "theirs");
    setup.kc.with(|s| s.clients.push(legacy.clone()));
    let c = consumer("legacy");
    let refused = [
        p.ensure(&c, &secret("legacy", 1)).await.unwrap_err(),
        p.check(&c, &secret("legacy", 1)).await.unwrap_err(),
        p.retire(&crate::world::provider(), &name("legacy"))
            .await
            .unwrap_err(),
        p.re_enable(&crate::world::provider(), &name("legacy"))
            .await
            .unwrap_err(),
        p.delete(&crate::world::provider(), &name("legacy"))
            .await
            .unwrap_err(),
    ];
    for error in &refused {
        assert!(matches!(error, IdentityError::Foreign { .. }), "{error}");
        assert_eq!(p.classify(error), Some(Class::Refused));
    }
    assert_eq!(
        refused[0].to_string(),
        "client legacy exists in realm mesh but was not made by mesh (no mesh.provisioned attribute); it is left untouched"
    );
    assert!(
        p.held(&crate::world::provider()).await.unwrap().is_empty(),
        "never listed"
    );
    setup.kc.with(|s| {
        assert_eq!(s.client("legacy"), Some(&legacy), "untouched");
        for method in ["POST", "PUT", "DELETE"] {
            assert_eq!(s.count(method, "/clients"), 0, "{method}");
        }
    });
}

#[tokio::test]
async fn retire_re_enable_and_delete_only_what_it_made() {
    let setup = Setup::new(MESH_ADMIN_PASSWORD, 401);
    let p = setup.provisioner();
    let forge = consumer("forge");
    p.ensure(&forge, &secret("forge", 1)).await.unwrap();
    assert_eq!(
        p.held(&crate::world::provider()).await.unwrap(),
        vec![Held::active(name("forge"))]
    );

    p.retire(&crate::world::provider(), &name("forge"))
        .await
        .unwrap();
    p.retire(&crate::world::provider(), &name("forge"))
        .await
        .unwrap();
    assert_eq!(
        p.held(&crate::world::provider()).await.unwrap(),
        vec![Held::retired(name("forge"))]
    );
    setup
        .kc
        .with(|s| assert!(!s.client("forge").unwrap().enabled, "disabled, kept"));
    let error = p.check(&forge, &secret("forge", 1)).await.unwrap_err();
    assert_eq!(p.classify(&error), Some(Class::CredentialsRejected));

    p.re_enable(&crate::world::provider(), &name("forge"))
        .await
        .unwrap();
    assert_eq!(
        p.held(&crate::world::provider()).await.unwrap(),
        vec![Held::active(name("forge"))]
    );
    p.check(&forge, &secret("forge", 1)).await.unwrap();

    p.retire(&crate::world::provider(), &name("forge"))
        .await
        .unwrap();
    p.delete(&crate::world::provider(), &name("forge"))
        .await
        .unwrap();
    p.delete(&crate::world::provider(), &name("forge"))
        .await
        .unwrap();
    assert!(p.held(&crate::world::provider()).await.unwrap().is_empty());
    // Nothing to act on is fine.
    p.retire(&crate::world::provider(), &name("gone"))
        .await
        .unwrap();
    p.re_enable(&crate::world::provider(), &name("gone"))
        .await
        .unwrap();
    setup.kc.with(|s| {
        assert!(s.clients.is_empty());
        // Retiring what is already retired asks nothing of Keycloak.
        assert_eq!(
            s.count("PUT", "/clients/"),
            3,
            "disable, enable, disable (a retired client's refused check writes nothing)"
        );
        assert_eq!(s.count("DELETE", "/clients/"), 1);
    });
}

#[tokio::test]
async fn held_lists_every_page_of_marked_clients() {
    let setup = Setup::new(MESH_ADMIN_PASSWORD, 401);
    let p = setup.provisioner();
    setup.kc.with(|s| {
        for i in 0..230 {
            s.add_marked(&format!("c-{i:03}"), "x", i % 10 != 0);
            if i % 23 == 0 {
                s.clients.push(Client::foreign(
                    &format!("f-{i}"),
                    &format!("theirs-{i}"),
                    "y",
                ));
            }
        }
        // Marked, but no consumer could have this name: ignored.
        s.add_marked("Not A Name", "x", true);
    });
    let held = p.held(&crate::world::provider()).await.unwrap();
    assert_eq!(held.len(), 230);
    assert_eq!(held.iter().filter(|h| h.retired).count(), 23);
    assert!(held.iter().all(|h| h.name.as_str().starts_with("c-")));
    setup.kc.with(|s| {
        assert_eq!(
            s.count("GET", "/admin/realms/mesh/clients"),
            3,
            "pages of 100"
        )
    });
}

#[tokio::test]
async fn a_client_made_while_listing_shifts_the_pages_but_loses_no_other() {
    let setup = Setup::new(MESH_ADMIN_PASSWORD, 401);
    let p = setup.provisioner_listing_every_pass();
    setup.kc.with(|s| {
        for i in 0..150 {
            s.add_marked(&format!("c-{i:03}"), "x", true);
        }
        // Sorted first: the second page starts one client early.
        s.made_during_listing = vec!["a-new".into()];
    });
    let held = p.held(&crate::world::provider()).await.unwrap();
    assert_eq!(held.len(), 150, "c-099 comes twice, is kept once");
    assert!(
        held.contains(&Held::active(name("c-149"))),
        "the last one is not lost"
    );
    let held = p.held(&crate::world::provider()).await.unwrap();
    assert_eq!(held.len(), 151, "the new one is in the next listing");
}

#[tokio::test]
async fn classes_come_from_statuses_and_keycloak_errors() {
    // A refused administrator, with Keycloak's 400 (26.6 on) and 401 (before).
    for status in [400, 401] {
        let setup = Setup::new(OLD_ADMIN_PASSWORD, status);
        let p = setup.provisioner();
        let error = p
            .ensure(&consumer("forge"), &secret("forge", 1))
            .await
            .unwrap_err();
        assert!(error.is_invalid_grant(), "{error}");
        assert_eq!(p.classify(&error), Some(Class::CredentialsRejected));
        assert_eq!(
            error.to_string(),
            format!("administrator login as admin: keycloak answered {status}: invalid_grant: Invalid user credentials")
        );
        setup.kc.with(|s| assert_eq!(s.client_requests(), 0));
    }

    let setup = Setup::new(MESH_ADMIN_PASSWORD, 401);
    let p = setup.provisioner();
    let forge = consumer("forge");
    let class_of = |error: &IdentityError| p.classify(error);

    setup.kc.with(|s| {
        s.inject(
            Method::GET,
            "/clients",
            503,
            json!({"error": "unknown_error"}),
        )
    });
    let error = p.ensure(&forge, &secret("forge", 1)).await.unwrap_err();
    assert_eq!(class_of(&error), Some(Class::Unreachable), "{error}");

    setup.kc.with(|s| {
        s.injected.clear();
        s.inject(
            Method::GET,
            "/clients",
            403,
            json!({"error": "HTTP 403 Forbidden"}),
        );
    });
    let error = p.ensure(&forge, &secret("forge", 1)).await.unwrap_err();
    assert_eq!(class_of(&error), Some(Class::Refused), "{error}");

    setup.kc.with(|s| {
        s.injected.clear();
        s.inject(Method::GET, "/clients", 200, json!({"not": "a list"}));
    });
    let error = p.ensure(&forge, &secret("forge", 1)).await.unwrap_err();
    assert_eq!(class_of(&error), None, "its message decides: {error}");

    let mut wrong = consumer("forge");
    wrong.provision = "postgres-database".into();
    let error = p.ensure(&wrong, &secret("forge", 1)).await.unwrap_err();
    assert_eq!(class_of(&error), Some(Class::Refused), "{error}");

    // Nothing listens: unreachable.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let away = mesh_provider_identity::IdentityConfig::new(
        &format!("http://127.0.0.1:{port}"),
        "mesh",
        "admin",
        Secret::new(MESH_ADMIN_PASSWORD),
    )
    .unwrap();
    let p = mesh_provider_identity::IdentityProvisioner::new(away).unwrap();
    let error = p.ensure(&forge, &secret("forge", 1)).await.unwrap_err();
    assert_eq!(p.classify(&error), Some(Class::Unreachable), "{error}");
    let message = mesh_sdk::redact::error_text(&error);
    assert!(message.contains("keycloak cannot be reached"), "{message}");
    assert!(!message.contains(MESH_ADMIN_PASSWORD));
}

#[tokio::test]
async fn a_refused_administrator_is_not_asked_again_by_every_consumer() {
    let setup = Setup::new(OLD_ADMIN_PASSWORD, 401);
    let p = setup.provisioner();
    for c in ["forge", "wiki", "chat"] {
        for _ in 0..3 {
            let error = p.ensure(&consumer(c), &secret(c, 1)).await.unwrap_err();
            assert_eq!(p.classify(&error), Some(Class::CredentialsRejected));
        }
    }
    setup.kc.with(|s| {
        assert_eq!(
            s.password_logins("admin"),
            (0, 1),
            "one refused login, held"
        );
    });
}

#[tokio::test(start_paused = true)]
async fn the_administrator_token_is_cached_renewed_and_fetched_again_on_401() {
    let _hold = hold_clock();
    let setup = Setup::new(MESH_ADMIN_PASSWORD, 401);
    let p = setup.provisioner();
    let logins = || setup.kc.with(|s| s.password_logins("admin").0);
    for c in ["forge", "wiki"] {
        p.ensure(&consumer(c), &secret(c, 1)).await.unwrap();
    }
    assert_eq!(logins(), 1, "cached");
    // Tokens live 60 s; it is renewed at 45 s. (New consumers each time:
    // a client already made is not looked up again.)
    tokio::time::advance(Duration::from_secs(44)).await;
    p.ensure(&consumer("chat"), &secret("chat", 1))
        .await
        .unwrap();
    assert_eq!(logins(), 1);
    tokio::time::advance(Duration::from_secs(2)).await;
    p.ensure(&consumer("mail"), &secret("mail", 1))
        .await
        .unwrap();
    assert_eq!(logins(), 2, "renewed");
    // The server forgot it early (restart): a 401, then one new login.
    setup.kc.with(|s| s.revoke_tokens());
    p.ensure(&consumer("news"), &secret("news", 1))
        .await
        .unwrap();
    assert_eq!(logins(), 3, "fetched again once");
    setup.kc.with(|s| {
        let lookups = s
            .requests
            .iter()
            .filter(|r| r.method == "GET" && r.path.ends_with("/clients"))
            .count();
        assert_eq!(lookups, 6, "5 lookups, one of them sent twice");
    });
}

#[tokio::test]
async fn a_known_client_is_not_looked_up_again_until_a_call_shows_it_gone() {
    let setup = Setup::new(MESH_ADMIN_PASSWORD, 401);
    let p = setup.provisioner_listing_every_pass();
    let lookups = || setup.kc.with(|s| s.gets_with_query("clientId="));
    let (forge, wiki) = (consumer("forge"), consumer("wiki"));
    p.ensure(&forge, &secret("forge", 1)).await.unwrap();
    assert_eq!(lookups(), 1, "looked up, then made");
    // Made by the provider: known. Listed by held(): known too.
    setup
        .kc
        .with(|s| s.add_marked("wiki", &minted("wiki", 1), true));
    p.held(&crate::world::provider()).await.unwrap();
    for _ in 0..3 {
        for (c, n) in [(&forge, "forge"), (&wiki, "wiki")] {
            p.ensure(c, &secret(n, 1)).await.unwrap();
            p.check(c, &secret(n, 1)).await.unwrap();
        }
    }
    assert_eq!(lookups(), 1, "no lookup while the checks pass");

    // Deleted behind the provider's back: the refused check looks it up
    // afresh, and the next ensure makes it again.
    setup
        .kc
        .with(|s| s.clients.retain(|c| c.client_id != "forge"));
    let refused = p.check(&forge, &secret("forge", 1)).await.unwrap_err();
    assert_eq!(p.classify(&refused), Some(Class::CredentialsRejected));
    p.ensure(&forge, &secret("forge", 1)).await.unwrap();
    p.check(&forge, &secret("forge", 1)).await.unwrap();
    assert_eq!(lookups(), 3, "the refused check's, and the ensure's");
    setup.kc.with(|s| {
        assert_eq!(s.count("POST", "/clients"), 2, "made again");
        assert_eq!(
            s.client("forge")
                .unwrap()
                .attributes
                .get(MARK)
                .map(String::as_str),
            Some("true")
        );
    });

    // Gone from a listing: looked up (and made) again by the next ensure.
    setup
        .kc
        .with(|s| s.clients.retain(|c| c.client_id != "wiki"));
    p.held(&crate::world::provider()).await.unwrap();
    p.ensure(&wiki, &secret("wiki", 1)).await.unwrap();
    assert_eq!(lookups(), 4);
    setup
        .kc
        .with(|s| assert!(s.client("wiki").is_some(), "made again"));

    // Replaced by someone else's client of the same clientId: refused, untouched.
    setup.kc.with(|s| {
        s.clients.retain(|c| c.client_id != "wiki");
        s.clients.push(Client::foreign("w-9", "wiki", "theirs"));
    });
    let error = p.check(&wiki, &secret("wiki", 1)).await.unwrap_err();
    assert!(matches!(error, IdentityError::Foreign { .. }), "{error}");
    let error = p.ensure(&wiki, &secret("wiki", 1)).await.unwrap_err();
    assert!(matches!(error, IdentityError::Foreign { .. }), "{error}");
    setup.kc.with(|s| {
        assert_eq!(s.client("wiki").unwrap().secret.as_deref(), Some("theirs"));
    });
}

#[tokio::test]
async fn a_failed_listing_makes_every_consumer_looked_up_again() {
    let setup = Setup::new(MESH_ADMIN_PASSWORD, 401);
    let p = setup.provisioner();
    let forge = consumer("forge");
    p.ensure(&forge, &secret("forge", 1)).await.unwrap();
    setup.kc.with(|s| {
        s.inject(
            Method::GET,
            "/clients",
            503,
            json!({"error": "unknown_error"}),
        )
    });
    p.held(&crate::world::provider()).await.unwrap_err();
    // The administrator's calls failing show in the consumer's own ensure again.
    let error = p.ensure(&forge, &secret("forge", 1)).await.unwrap_err();
    assert_eq!(p.classify(&error), Some(Class::Unreachable), "{error}");
}

#[tokio::test(start_paused = true)]
async fn the_realm_is_listed_once_a_minute_and_own_changes_show_in_between() {
    let _hold = hold_clock();
    let setup = Setup::new(MESH_ADMIN_PASSWORD, 401);
    let p = setup.provisioner();
    let listings = || setup.kc.with(|s| s.gets_with_query("first="));
    setup.kc.with(|s| {
        s.add_marked("forge", &minted("forge", 1), true);
        s.add_marked("wiki", &minted("wiki", 1), true);
    });
    let sorted = |mut held: Vec<Held>| {
        held.sort_by(|a, b| a.name.as_str().cmp(b.name.as_str()));
        held
    };
    assert_eq!(
        sorted(p.held(&crate::world::provider()).await.unwrap()),
        [Held::active(name("forge")), Held::active(name("wiki"))]
    );
    assert_eq!(listings(), 1);
    // Within the minute: no listing; the provider's own changes show.
    p.retire(&crate::world::provider(), &name("wiki"))
        .await
        .unwrap();
    p.ensure(&consumer("chat"), &secret("chat", 1))
        .await
        .unwrap();
    // A change by hand is not seen yet.
    setup
        .kc
        .with(|s| s.clients.retain(|c| c.client_id != "forge"));
    tokio::time::advance(Duration::from_secs(59)).await;
    let mut retired_wiki = Held::active(name("wiki"));
    retired_wiki.retired = true;
    assert_eq!(
        sorted(p.held(&crate::world::provider()).await.unwrap()),
        [
            Held::active(name("chat")),
            Held::active(name("forge")),
            retired_wiki.clone()
        ]
    );
    assert_eq!(listings(), 1, "answered from what it knows");
    // A minute after the listing: listed again, the change by hand seen.
    tokio::time::advance(Duration::from_secs(1)).await;
    assert_eq!(
        sorted(p.held(&crate::world::provider()).await.unwrap()),
        [Held::active(name("chat")), retired_wiki]
    );
    assert_eq!(listings(), 2);
}
