//! What mesh did not make is refused and never touched: an existing role or
//! database of the consumer's name, a superuser, reserved names; hostile
//! names never reach the server as SQL; a wrong administrator password and
//! an administrator without privileges fail with the right class; an
//! unreachable server is `unreachable`. One private cluster, real time.

mod common;

use common::{kinds, log_since, login, name, provisioner, within, World};
use mesh_provider_postgres::{sql, PostgresConfig, PostgresError, PostgresProvisioner};
use mesh_sdk::testing::Settings;
use mesh_sdk::{Class, Consumer, Provisioner, Secret};
use mesh_test_support::PgCluster;
use serde_json::json;

/// Everything about the roles and databases mesh must not touch, as text.
async fn snapshot(admin: &tokio_postgres::Client) -> String {
    let rows = admin
        .query(
            "SELECT format('%s login=%s super=%s pw=%s members=%s', a.rolname, a.rolcanlogin,
                           a.rolsuper, a.rolpassword,
                           (SELECT string_agg(g.rolname, ',' ORDER BY g.rolname)
                            FROM pg_auth_members m JOIN pg_roles g ON g.oid = m.roleid
                            WHERE m.member = a.oid))
             FROM pg_authid a WHERE a.rolname IN ('postgres', 'app_owner', 'superish', 'legacy')
             UNION ALL
             SELECT format('db %s owner=%s acl=%s comment=%s', d.datname, d.datdba::regrole,
                           d.datacl, shobj_description(d.oid, 'pg_database'))
             FROM pg_database d WHERE d.datname IN ('postgres', 'app_owner', 'legacy', 'superish')
             ORDER BY 1",
            &[],
        )
        .await
        .unwrap();
    rows.iter()
        .map(|r| r.get::<_, String>(0))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The provider instance these tests act as.
fn provider() -> mesh_sdk::ModuleId {
    "postgres@db-1".parse().unwrap()
}

fn consumer(text: &str, provision: &str) -> Consumer {
    Consumer {
        provider: provider(),
        name: name(text),
        machine: name("app-1"),
        provision: provision.into(),
        secret_file: "unused".into(),
        options: json!({}),
    }
}

#[tokio::test]
async fn what_mesh_did_not_make_is_refused_and_untouched() {
    let pg = PgCluster::start();
    let admin = pg.connect_admin().await;
    for statement in [
        "CREATE ROLE app_owner LOGIN PASSWORD 'app-owner-own-pw'",
        "CREATE DATABASE app_owner OWNER app_owner",
        "CREATE DATABASE legacy",
        "CREATE ROLE mesh_provisioned NOLOGIN",
        "CREATE ROLE superish SUPERUSER LOGIN IN ROLE mesh_provisioned",
    ] {
        admin.batch_execute(statement).await.unwrap();
    }
    let before = snapshot(&admin).await;

    // Through the loop: every foreign or reserved name fails `refused` with
    // a clear message; the one good consumer is served.
    let mut w = World::new(
        provisioner(&pg),
        &[
            ("postgres", "minted-for-postgres-1"),
            ("app_owner", "minted-for-app-owner-1"),
            ("legacy", "minted-for-legacy-1"),
            ("superish", "minted-for-superish-1"),
            ("pg_monitor", "minted-for-pg-monitor"),
            ("mesh_provisioned", "minted-for-marker-1"),
            ("fine", "minted-for-fine-1"),
        ],
        Settings::default(),
    );
    let report = w.pass().await;
    assert_eq!(report.attempted, 7);
    assert_eq!(report.failed, 6);
    assert_eq!(
        kinds(&w.published()),
        vec!["recovered:fine:first-success-after-start"]
    );
    let expected = [
        ("postgres", "role \"postgres\" exists but it is a superuser"),
        (
            "app_owner",
            "role \"app_owner\" exists but it is not a member of mesh_provisioned, so mesh-postgres did not make it; it is left untouched",
        ),
        (
            "legacy",
            "database \"legacy\" exists and is not owned by a role mesh-postgres made; it is left untouched",
        ),
        ("superish", "role \"superish\" exists but it is a superuser"),
        ("pg_monitor", "names starting with pg_ are reserved"),
        ("mesh_provisioned", "the role mesh-postgres marks its roles with"),
    ];
    for (consumer, says) in expected {
        let (class, error) = w.failure(consumer).expect(consumer);
        assert_eq!(class, "refused", "{consumer}: {error}");
        assert!(error.contains(says), "{consumer}: {error}");
    }

    // Hostile names never reach the server: the loop refuses the entries,
    // the others go on.
    let mark = pg.log().len();
    let hostile = [
        "Forge",
        "a.b",
        "a b",
        "x\"; DROP ROLE app_owner; --",
        "x'; DROP ROLE app_owner; --",
        &"x".repeat(64),
    ];
    let mut entries: Vec<_> = hostile
        .iter()
        .map(|c| json!({"consumer": c, "machine": "app-1", "provision": "postgres-database", "secret_file": "secrets/fine"}))
        .collect();
    entries.push(json!({"consumer": "fine", "machine": "app-1", "provision": "postgres-database", "secret_file": "secrets/fine"}));
    w.list_entries(entries);
    let report = w.pass().await;
    assert!(report.fresh);
    assert_eq!((report.attempted, report.failed), (1, 0));
    let log = log_since(&pg, mark);
    for name in hostile {
        assert!(!log.contains(name), "{name:?} reached the server:\n{log}");
    }

    // The statements themselves quote whatever they are given: executed, a
    // hostile name is a name, not SQL.
    let weird = "x\"; DROP ROLE app_owner; --";
    admin
        .batch_execute(
            &sql::create_role(
                weird,
                "SCRAM-SHA-256$4096:c2FsdA==$c3Q=:c2U=",
                false,
                &provider(),
            )
            .unwrap(),
        )
        .await
        .unwrap();
    let made: bool = admin
        .query_one(
            "SELECT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = $1)",
            &[&weird],
        )
        .await
        .unwrap()
        .get(0);
    assert!(made, "the role is named exactly the hostile text");
    admin
        .batch_execute(&sql::drop_role(weird).unwrap())
        .await
        .unwrap();
    assert!(sql::ident(&"x".repeat(64)).is_err());

    // Direct calls: nothing lists, retires, enables or deletes what mesh did not make.
    let p = provisioner(&pg);
    let held = within("held", p.held(&provider())).await.unwrap();
    let held: Vec<&str> = held.iter().map(|h| h.name.as_str()).collect();
    assert_eq!(held, vec!["fine"], "only what mesh made is listed");
    for role in ["postgres", "app_owner", "superish"] {
        for (what, result) in [
            ("retire", p.retire(&provider(), &name(role)).await),
            ("re_enable", p.re_enable(&provider(), &name(role)).await),
            ("delete", p.delete(&provider(), &name(role)).await),
        ] {
            let error = result
                .err()
                .unwrap_or_else(|| panic!("{what} {role} was accepted"));
            assert!(
                matches!(error, PostgresError::NotOurs { .. }),
                "{what} {role}: {error}"
            );
            assert_eq!(p.classify(&error), Some(Class::Refused));
        }
    }
    let error = p
        .ensure(&consumer("fine", "oidc-client"), &Secret::new("x"))
        .await
        .unwrap_err();
    assert!(
        error.to_string().contains("serves only postgres-database"),
        "{error}"
    );
    assert_eq!(
        before,
        snapshot(&admin).await,
        "a foreign role or database changed"
    );
    login(&pg, "app_owner", "app-owner-own-pw", "app_owner")
        .await
        .expect("app_owner's own password still works");

    // A wrong administrator password: consumers fail `credentials-rejected`,
    // and the wrong password is in no error.
    let wrong = PostgresConfig::new(&pg.admin_url(), Some(Secret::new("wrong-admin-pw-77")))
        .unwrap()
        .with_consumer_address(None, None)
        .unwrap();
    let mut w2 = World::new(
        PostgresProvisioner::new(wrong),
        &[("fine", "minted-for-fine-1")],
        Settings::default(),
    );
    let report = w2.pass().await;
    assert_eq!(report.failed, 1);
    let (class, error) = w2.failure("fine").unwrap();
    assert_eq!(class, "credentials-rejected", "{error}");
    assert!(
        error.contains("cannot log in as the administrator at postgres://postgres@127.0.0.1:")
            && error.contains("password authentication failed for user \"postgres\""),
        "{error}"
    );
    assert!(!error.contains("wrong-admin-pw-77"), "{error}");

    // An administrator without CREATEROLE or CREATEDB: refused at its login,
    // naming what it lacks (before any statement the server would refuse).
    admin
        .batch_execute("CREATE ROLE weak_admin LOGIN PASSWORD 'weak-admin-pw-31'")
        .await
        .unwrap();
    let url = format!("postgres://weak_admin@127.0.0.1:{}/postgres", pg.port());
    let weak = PostgresConfig::new(&url, Some(Secret::new("weak-admin-pw-31")))
        .unwrap()
        .with_consumer_address(None, None)
        .unwrap();
    let weak = PostgresProvisioner::new(weak);
    let error = weak
        .ensure(
            &consumer("newcomer", "postgres-database"),
            &Secret::new("minted-newcomer"),
        )
        .await
        .unwrap_err();
    assert_eq!(weak.classify(&error), Some(Class::Refused), "{error:?}");
    let message = mesh_sdk::redact::error_text(&error);
    assert!(
        message.contains("\"weak_admin\" lacks CREATEROLE and CREATEDB"),
        "{message}"
    );

    // Nobody listening: unreachable, from the io error's kind.
    let closed = mesh_test_support::free_port();
    let nowhere = PostgresConfig::new(
        &format!("postgres://postgres@127.0.0.1:{closed}/postgres"),
        Some(Secret::new("x")),
    )
    .unwrap()
    .with_consumer_address(None, None)
    .unwrap();
    let nowhere = PostgresProvisioner::new(nowhere);
    let error = nowhere.held(&provider()).await.unwrap_err();
    assert_eq!(
        nowhere.classify(&error),
        Some(Class::Unreachable),
        "{error:?}"
    );
    let error = nowhere
        .check(&consumer("fine", "postgres-database"), &Secret::new("x"))
        .await
        .unwrap_err();
    assert_eq!(
        nowhere.classify(&error),
        Some(Class::Unreachable),
        "{error:?}"
    );

    // The good consumer was served throughout.
    login(&pg, "fine", "minted-for-fine-1", "fine")
        .await
        .unwrap();
}
