//! The provider with the least privilege a DBA would give it: an
//! administrator holding `LOGIN CREATEROLE CREATEDB`, not a superuser.
//! Every consumer is made, checked, retired, re-enabled and deleted; the
//! administrator becomes a member of the roles it made and of no other; a
//! role a superuser provider made earlier is managed too; and an
//! administrator lacking either privilege is refused with an error naming
//! it; its password changed at the server is a provider fault within a
//! pass, cleared without a restart once the file holds the new one. One
//! private cluster, real time.

mod common;

use std::time::Duration;

use common::{kinds, login, name, role_and_database, session_ended, within, World};
use mesh_provider_postgres::{PostgresConfig, PostgresError, PostgresProvisioner};
use mesh_sdk::testing::RetireRules;
use mesh_sdk::testing::Settings;
use mesh_sdk::{Class, Provisioner};
use mesh_test_support::PgCluster;

const FORGE: &str = "minted-forge-lp-41c9e2";
const WIKI: &str = "minted-wiki-lp-7d03aa";
const OLD: &str = "minted-old-lp-b25e10";
const ADMIN_PASSWORD: &str = "mesh-admin-lp-pw-6f1e";
const ROTATED_ADMIN: &str = "mesh-admin-lp-rotated-2b7c";

/// Makes the login role `admin` with `attributes` (as the superuser).
async fn make_admin(pg: &PgCluster, admin: &str, attributes: &str) {
    pg.connect_admin()
        .await
        .batch_execute(&format!(
            "CREATE ROLE {admin} WITH LOGIN {attributes} PASSWORD '{ADMIN_PASSWORD}'"
        ))
        .await
        .unwrap();
}

/// A provisioner logging in as `admin`, its password from a file as the binary reads it.
fn provisioner_as(pg: &PgCluster, dir: &std::path::Path, admin: &str) -> PostgresProvisioner {
    let file = dir.join(format!("{admin}.password"));
    std::fs::write(&file, ADMIN_PASSWORD).unwrap();
    let password = mesh_sdk::Secret::from_file(&file, "admin password").unwrap();
    let url = format!("postgres://{admin}@127.0.0.1:{}/postgres", pg.port());
    let config = PostgresConfig::new(&url, Some(password))
        .unwrap()
        .with_consumer_address(None, None)
        .unwrap()
        .with_connect_timeout(Duration::from_secs(5))
        .with_statement_timeout(Duration::from_secs(10))
        .with_admin_password_file(&file);
    PostgresProvisioner::new(config)
}

/// The roles `member` is a direct member of, sorted.
async fn memberships(admin: &tokio_postgres::Client, member: &str) -> Vec<String> {
    admin
        .query(
            "SELECT g.rolname::text FROM pg_auth_members m
             JOIN pg_roles g ON g.oid = m.roleid JOIN pg_roles r ON r.oid = m.member
             WHERE r.rolname = $1 ORDER BY 1",
            &[&member],
        )
        .await
        .unwrap()
        .iter()
        .map(|row| row.get(0))
        .collect()
}

fn settings() -> Settings {
    Settings {
        retire: RetireRules {
            after_passes: 2,
            after: Duration::ZERO,
        },
        ..Settings::default()
    }
}

#[tokio::test]
async fn an_admin_with_createrole_createdb_makes_checks_retires_re_enables_and_deletes() {
    let pg = PgCluster::start();
    let superuser = pg.connect_admin().await;
    make_admin(&pg, "mesh_admin", "CREATEROLE CREATEDB").await;
    // Someone else's role: the administrator must never become its member.
    for statement in ["CREATE ROLE app LOGIN", "CREATE DATABASE app OWNER app"] {
        superuser.batch_execute(statement).await.unwrap();
    }
    let dir = tempfile::tempdir().unwrap();
    let mut w = World::new(
        provisioner_as(&pg, dir.path(), "mesh_admin"),
        &[("forge", FORGE), ("wiki", WIKI)],
        settings(),
    );

    // Made and checked: each consumer logs into its own database.
    let report = w.pass().await;
    assert_eq!(
        report.failed,
        0,
        "forge: {:?}, wiki: {:?}",
        w.failure("forge"),
        w.failure("wiki")
    );
    assert_eq!(
        kinds(&w.published()),
        vec![
            "recovered:forge:first-success-after-start",
            "recovered:wiki:first-success-after-start",
        ]
    );
    for (consumer, secret) in [("forge", FORGE), ("wiki", WIKI)] {
        let client = login(&pg, consumer, secret, consumer).await.unwrap();
        client
            .batch_execute("CREATE TABLE notes (body text); INSERT INTO notes VALUES ('kept')")
            .await
            .unwrap();
        let row = superuser
            .query_one(
                "SELECT d.datdba = r.oid, shobj_description(d.oid, 'pg_database') IS NOT NULL,
                        has_database_privilege('app', d.oid, 'CONNECT')
                 FROM pg_database d JOIN pg_roles r ON r.rolname = d.datname WHERE d.datname = $1",
                &[&consumer],
            )
            .await
            .unwrap();
        assert!(row.get::<_, bool>(0), "{consumer} owns its database");
        assert!(row.get::<_, bool>(1), "{consumer}'s database is commented");
        assert!(!row.get::<_, bool>(2), "others cannot connect to it");
    }
    assert_eq!(
        memberships(&superuser, "mesh_admin").await,
        ["forge", "wiki"],
        "the administrator is a member of the roles it made and of no other"
    );
    let marker_owner: bool = superuser
        .query_one(
            "SELECT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'mesh_provisioned' AND NOT rolcanlogin)",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert!(
        marker_owner,
        "the marker role was made by the administrator"
    );

    // Marked by hand, the administrator is still never one of the provider's roles.
    superuser
        .batch_execute("GRANT mesh_provisioned TO mesh_admin")
        .await
        .unwrap();
    let mut held: Vec<String> = within("held", w.runner.provisioner().held(&common::provider()))
        .await
        .unwrap()
        .into_iter()
        .map(|h| h.name.as_str().to_owned())
        .collect();
    held.sort();
    assert_eq!(held, ["forge", "wiki"]);
    superuser
        .batch_execute("REVOKE mesh_provisioned FROM mesh_admin")
        .await
        .unwrap();

    // A second pass changes nothing and says nothing.
    let report = w.pass().await;
    assert_eq!((report.attempted, report.failed), (2, 0));
    assert!(w.published().is_empty());

    // A changed secret: the administrator resets the password.
    w.secret("forge", "minted-forge-lp-rotated");
    let report = w.pass().await;
    assert_eq!(report.failed, 0, "{:?}", w.failure("forge"));
    login(&pg, "forge", "minted-forge-lp-rotated", "forge")
        .await
        .unwrap();
    w.secret("forge", FORGE);
    w.pass().await;

    // Withdrawn: its countdown published, then retired after two passes, its
    // open session ended.
    let wiki = login(&pg, "wiki", WIKI, "wiki").await.unwrap();
    w.list(&["forge"]);
    w.pass().await;
    w.pass().await;
    assert_eq!(
        kinds(&w.published()),
        vec![
            "recovered:wiki:retired",
            "retirement:wiki:retired",
            "retirement:wiki:retiring"
        ]
    );
    assert_eq!(
        role_and_database(&superuser, "wiki").await,
        (Some(false), true)
    );
    session_ended(&wiki).await;

    // Listed again: enabled before its check (served in the same pass),
    // and its data kept.
    w.list(&["forge", "wiki"]);
    let report = w.pass().await;
    assert_eq!(report.failed, 0, "{:?}", w.failure("wiki"));
    assert_eq!(
        kinds(&w.published()),
        vec!["retirement:wiki:re-enabled"],
        "the re-enable says it; no recovered claims a start that did not happen"
    );
    let wiki = login(&pg, "wiki", WIKI, "wiki").await.unwrap();
    let kept: String = wiki
        .query_one("SELECT body FROM notes", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(kept, "kept");

    // Withdrawn again, approved, deleted although its own session is open in it.
    w.list(&["forge"]);
    let reply = within("approve", w.runner.approve(br#"{"v":1,"consumer":"wiki"}"#)).await;
    assert!(reply.ok, "{}", reply.detail);
    let inside = login(&pg, "mesh_admin", ADMIN_PASSWORD, "wiki")
        .await
        .unwrap();
    let reply = within(
        "approve delete",
        w.runner
            .approve(br#"{"v":1,"consumer":"wiki","delete":true}"#),
    )
    .await;
    assert!(reply.ok, "{}", reply.detail);
    assert_eq!(role_and_database(&superuser, "wiki").await, (None, false));
    assert!(inside.simple_query("SELECT 1").await.is_err());
    drop((wiki, inside));
    assert_eq!(memberships(&superuser, "mesh_admin").await, ["forge"]);
    // Someone else's role and database were never touched.
    assert_eq!(
        role_and_database(&superuser, "app").await,
        (Some(true), true)
    );
    let report = w.pass().await;
    assert_eq!((report.attempted, report.failed), (1, 0));

    // The administrator's password changed at the server (record 224): its
    // kept session still works, so forge is served, but the pass's fresh
    // login is refused: a provider fault, published at once in an alive.
    superuser
        .batch_execute(&format!("ALTER ROLE mesh_admin PASSWORD '{ROTATED_ADMIN}'"))
        .await
        .unwrap();
    let report = w.pass().await;
    assert_eq!(report.failed, 0, "the kept session still serves forge");
    let published = w.published();
    let alive: Vec<&serde_json::Value> = published
        .iter()
        .filter(|(k, _)| k == "alive")
        .map(|(_, b)| b)
        .collect();
    assert_eq!(alive.len(), 1, "published within the pass: {published:?}");
    let fault = &alive[0]["fault"];
    assert_eq!(fault["class"], "credentials-rejected", "{fault}");
    let error = fault["error"].as_str().unwrap();
    assert!(
        error.contains("password authentication failed for user \"mesh_admin\""),
        "{error}"
    );
    assert!(!error.contains(ADMIN_PASSWORD) && !error.contains(ROTATED_ADMIN));
    w.pass().await;
    assert!(
        w.published().is_empty(),
        "kept, not published again at once"
    );

    // The new password written into the file: read at the next login, no
    // restart; the fault clears, published at once.
    std::fs::write(
        dir.path().join("mesh_admin.password"),
        format!("{ROTATED_ADMIN}\n"),
    )
    .unwrap();
    let report = w.pass().await;
    assert_eq!(report.failed, 0, "{:?}", w.failure("forge"));
    let published = w.published();
    assert_eq!(published.len(), 1, "{published:?}");
    assert_eq!(published[0].0, "alive");
    assert!(published[0].1.get("fault").is_none(), "{published:?}");
    // A new kept session logs in with it too.
    drop(w);
    let mut again = World::new(
        provisioner_as(&pg, dir.path(), "mesh_admin"),
        &[("forge", FORGE)],
        settings(),
    );
    std::fs::write(dir.path().join("mesh_admin.password"), ROTATED_ADMIN).unwrap();
    let report = again.pass().await;
    assert_eq!(report.failed, 0, "{:?}", again.failure("forge"));
}

#[tokio::test]
async fn roles_a_superuser_provider_made_are_managed_after_moving_to_least_privilege() {
    let pg = PgCluster::start();
    let superuser = pg.connect_admin().await;
    make_admin(&pg, "mesh_admin", "CREATEROLE CREATEDB").await;
    // Made earlier by the provider as the superuser: the administrator is
    // no member of these roles, and did not make the marker.
    let mut before = World::new(common::provisioner(&pg), &[("old", OLD)], settings());
    assert_eq!(before.pass().await.failed, 0);
    let dir = tempfile::tempdir().unwrap();
    let p = provisioner_as(&pg, dir.path(), "mesh_admin");
    // Its database dropped by hand: made again, owned by the old role.
    superuser.batch_execute("DROP DATABASE old").await.unwrap();
    let mut w = World::new(p, &[("old", OLD)], settings());
    let report = w.pass().await;
    assert_eq!(report.failed, 0, "{:?}", w.failure("old"));
    login(&pg, "old", OLD, "old").await.unwrap();
    let p = w.runner.provisioner();
    within("retire", p.retire(&common::provider(), &name("old")))
        .await
        .unwrap();
    assert_eq!(
        role_and_database(&superuser, "old").await,
        (Some(false), true)
    );
    within("re-enable", p.re_enable(&common::provider(), &name("old")))
        .await
        .unwrap();
    within("retire", p.retire(&common::provider(), &name("old")))
        .await
        .unwrap();
    within("delete", p.delete(&common::provider(), &name("old")))
        .await
        .unwrap();
    assert_eq!(role_and_database(&superuser, "old").await, (None, false));
    assert!(memberships(&superuser, "mesh_admin").await.is_empty());
    drop(before);
}

#[tokio::test]
async fn an_admin_lacking_createrole_or_createdb_is_refused_naming_what_it_lacks() {
    let pg = PgCluster::start();
    make_admin(&pg, "no_createdb", "CREATEROLE").await;
    make_admin(&pg, "no_createrole", "CREATEDB").await;
    make_admin(&pg, "neither", "").await;
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        ("no_createdb", "CREATEDB"),
        ("no_createrole", "CREATEROLE"),
        ("neither", "CREATEROLE and CREATEDB"),
    ];
    for (admin, missing) in cases {
        let p = provisioner_as(&pg, dir.path(), admin);
        let error = within("the admin check", p.check_admin())
            .await
            .unwrap_err();
        let message = mesh_sdk::redact::error_text(&error);
        assert!(
            message.contains(&format!("\"{admin}\" lacks {missing}")),
            "{admin}: {message}"
        );
        assert!(message.contains("ALTER ROLE"), "{admin}: {message}");
        assert!(
            matches!(error, PostgresError::AdminLacks { .. }),
            "{error:?}"
        );
        assert_eq!(p.classify(&error), Some(Class::Refused));
        // Every consumer then fails with the same message, not with a statement's.
        let mut w = World::new(p, &[("forge", FORGE)], settings());
        assert_eq!(w.pass().await.failed, 1);
        let (class, error) = w.failure("forge").unwrap_or_default();
        assert_eq!(class, "refused");
        assert!(error.contains(&format!("lacks {missing}")), "{error}");
    }
    // The superuser and an administrator with both pass the check.
    make_admin(&pg, "mesh_both", "CREATEROLE CREATEDB").await;
    within(
        "the admin check",
        provisioner_as(&pg, dir.path(), "mesh_both").check_admin(),
    )
    .await
    .unwrap();
    within("the admin check", common::provisioner(&pg).check_admin())
        .await
        .unwrap();
}

#[test]
fn the_binary_does_not_start_with_an_admin_lacking_createdb() {
    let pg = PgCluster::start();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(make_admin(&pg, "no_createdb", "CREATEROLE"));
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("pw"), ADMIN_PASSWORD).unwrap();
    std::fs::write(
        dir.path().join("contributions.json"),
        r#"{"provider": {"module": "postgres", "machine": "db-1"}, "consumers": []}"#,
    )
    .unwrap();
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_mesh-postgres"))
        .arg("--contributions")
        .arg(dir.path().join("contributions.json"))
        .arg("--admin-password-file")
        .arg(dir.path().join("pw"))
        .args([
            "--admin-url",
            &format!("postgres://no_createdb@127.0.0.1:{}/postgres", pg.port()),
        ])
        // No bus: the check comes first, and nothing is sent.
        .args(["--nats", "nats://127.0.0.1:1"])
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("mesh-postgres: the administrator \"no_createdb\" lacks CREATEDB;"),
        "{stderr}"
    );
    assert!(!stderr.contains(ADMIN_PASSWORD), "{stderr}");
}
