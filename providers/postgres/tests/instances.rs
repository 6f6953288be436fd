//! Two provider instances on one PostgreSQL server (a move in progress, two
//! machines' providers sharing a cluster), on a real private cluster: each
//! lists, retires, re-enables and deletes only the roles it made, refuses
//! to take over the other's, and a role an older version made (marked
//! `mesh_provisioned` alone) is adopted only by an instance that lists it.

mod common;

use std::time::Duration;

use common::{kinds, login, name, provisioner, role_and_database, within, World};
use mesh_sdk::testing::RetireRules;
use mesh_sdk::testing::Settings;
use mesh_sdk::{Held, ModuleId, Provisioner};
use mesh_test_support::PgCluster;

const FORGE: &str = "minted-forge-5c1e9a";
const WIKI: &str = "minted-wiki-77b0d2";
const APP: &str = "minted-app-3f9e41";

/// Retirement at the first pass that misses a consumer.
fn at_once() -> Settings {
    Settings {
        retire: RetireRules {
            after_passes: 1,
            after: Duration::ZERO,
        },
        ..Settings::default()
    }
}

fn instance(text: &str) -> ModuleId {
    text.parse().unwrap()
}

/// What `w`'s provisioner lists as the instance `of`, by name.
async fn held(w: &World, of: &str) -> Vec<Held> {
    let p = w.runner.provisioner();
    let mut held = within("held", p.held(&instance(of))).await.unwrap();
    held.sort_by(|x, y| x.name.cmp(&y.name));
    held
}

#[tokio::test]
async fn two_instances_on_one_server_never_retire_delete_or_take_each_others_roles() {
    let pg = PgCluster::start();
    let admin = pg.connect_admin().await;
    let mut a = World::of(
        ("postgres", "db-1"),
        provisioner(&pg),
        &[("forge", FORGE), ("wiki", WIKI)],
        at_once(),
    );
    let mut b = World::of(
        ("postgres", "db-2"),
        provisioner(&pg),
        &[("app", APP)],
        at_once(),
    );
    assert_eq!(a.pass().await.failed, 0, "{:?}", a.failure("forge"));
    assert_eq!(b.pass().await.failed, 0, "{:?}", b.failure("app"));
    a.published();
    b.published();

    // Each lists only its own.
    assert_eq!(
        held(&a, "postgres@db-1").await,
        [Held::active(name("forge")), Held::active(name("wiki"))]
    );
    assert_eq!(held(&b, "postgres@db-2").await, [Held::active(name("app"))]);

    // Many passes with retirement at once: neither retires the other's.
    for _ in 0..3 {
        a.pass().await;
        b.pass().await;
    }
    assert_eq!(kinds(&a.published()), Vec::<String>::new());
    assert_eq!(kinds(&b.published()), Vec::<String>::new());
    for (role, secret) in [("forge", FORGE), ("wiki", WIKI), ("app", APP)] {
        assert_eq!(
            role_and_database(&admin, role).await,
            (Some(true), true),
            "{role}"
        );
        login(&pg, role, secret, role).await.unwrap();
    }

    // The other instance's role named in b's file: refused, naming its
    // maker, and left working with its own secret.
    b.secret("forge", "another-secret-of-b");
    b.list(&["app", "forge"]);
    b.pass().await;
    let (class, error) = b.failure("forge").expect("forge fails for b");
    assert_eq!(class, "refused");
    assert_eq!(
        error,
        "role \"forge\" was made by another mesh-postgres instance (postgres@db-1); it is left untouched"
    );
    login(&pg, "forge", FORGE, "forge").await.unwrap();

    // Asked directly as b (an approval, a bug): refused, nothing changed.
    let pb = b.runner.provisioner();
    let db2 = instance("postgres@db-2");
    for refused in [
        within("retire", pb.retire(&db2, &name("wiki"))).await,
        within("re-enable", pb.re_enable(&db2, &name("wiki"))).await,
        within("delete", pb.delete(&db2, &name("wiki"))).await,
    ] {
        let error = refused.unwrap_err().to_string();
        assert!(
            error.contains("another mesh-postgres instance (postgres@db-1)"),
            "{error}"
        );
    }
    assert_eq!(role_and_database(&admin, "wiki").await, (Some(true), true));
    login(&pg, "wiki", WIKI, "wiki").await.unwrap();

    // Its own withdrawn consumer b still retires, and only that.
    b.list(&[]);
    b.pass().await;
    assert_eq!(
        kinds(&b.published()),
        vec![
            "recovered:app:retired",
            "retirement:app:retired",
            "retirement:app:retiring"
        ]
    );
    assert_eq!(role_and_database(&admin, "app").await, (Some(false), true));
    assert_eq!(role_and_database(&admin, "forge").await, (Some(true), true));
}

#[tokio::test]
async fn a_role_an_older_version_made_is_adopted_only_by_the_instance_that_lists_it() {
    let pg = PgCluster::start();
    let admin = pg.connect_admin().await;
    // Made as an older mesh-postgres did: marked mesh_provisioned alone.
    admin
        .batch_execute(&format!(
            "CREATE ROLE mesh_provisioned NOLOGIN; \
             CREATE ROLE legacy LOGIN PASSWORD '{FORGE}' IN ROLE mesh_provisioned"
        ))
        .await
        .unwrap();
    admin
        .batch_execute("CREATE DATABASE legacy OWNER legacy")
        .await
        .unwrap();

    // An instance that does not list it neither lists nor retires it.
    let mut other = World::of(("postgres", "db-2"), provisioner(&pg), &[], at_once());
    for _ in 0..3 {
        other.pass().await;
    }
    let p = other.runner.provisioner();
    assert_eq!(
        within("held", p.held(&instance("postgres@db-2")))
            .await
            .unwrap(),
        []
    );
    assert_eq!(kinds(&other.published()), Vec::<String>::new());
    assert_eq!(
        role_and_database(&admin, "legacy").await,
        (Some(true), true)
    );
    let error = within(
        "retire",
        p.retire(&instance("postgres@db-2"), &name("legacy")),
    )
    .await
    .unwrap_err()
    .to_string();
    assert!(error.contains("made before instance marks"), "{error}");
    assert_eq!(
        role_and_database(&admin, "legacy").await,
        (Some(true), true)
    );

    // The instance that lists it adopts it in its ensure, serves it, and
    // from then on lists it (and retires it when it is withdrawn).
    let mut a = World::new(provisioner(&pg), &[("legacy", FORGE)], at_once());
    assert_eq!(a.pass().await.failed, 0, "{:?}", a.failure("legacy"));
    let memberships: Vec<String> = admin
        .query(
            "SELECT g.rolname::text FROM pg_auth_members m JOIN pg_roles g ON g.oid = m.roleid \
             JOIN pg_roles r ON r.oid = m.member WHERE r.rolname = 'legacy' ORDER BY 1",
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|row| row.get(0))
        .collect();
    assert_eq!(
        memberships,
        ["mesh_provisioned", "mesh_provisioned:postgres@db-1"]
    );
    let pa = a.runner.provisioner();
    assert_eq!(
        within("held", pa.held(&instance("postgres@db-1")))
            .await
            .unwrap(),
        [Held::active(name("legacy"))]
    );
    // The other instance still does not list it.
    assert_eq!(
        within("held", p.held(&instance("postgres@db-2")))
            .await
            .unwrap(),
        []
    );
    a.published();
    a.list(&[]);
    a.pass().await;
    assert_eq!(
        kinds(&a.published()),
        vec![
            "recovered:legacy:retired",
            "retirement:legacy:retired",
            "retirement:legacy:retiring"
        ]
    );
    assert_eq!(
        role_and_database(&admin, "legacy").await,
        (Some(false), true)
    );
}
