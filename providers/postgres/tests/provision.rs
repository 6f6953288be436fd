//! Consumers get a database they can log into with their minted secret
//! (names with a leading digit, `-` and `_` are quoted identifiers);
//! passes are idempotent; a changed secret is applied; a dropped database is
//! made again; and no plaintext password reaches the server, its log, the
//! provider's log or the events it publishes. One private cluster, real time.

mod common;

use common::{kinds, log_since, login, provisioner, within, World};
use mesh_sdk::testing::LogCapture;
use mesh_sdk::testing::Settings;
use mesh_test_support::PgCluster;
use tokio_postgres::error::SqlState;

const FORGE: &str = "minted-forge-3f9a1c2e7b";
const WIKI: &str = "minted-wiki-88d0e4a61c";
const DOCS: &str = "minted-docs-5b7e2f9d03";
const FORGE_NEW: &str = "minted-forge-rotated-c41d";

#[tokio::test]
async fn consumers_get_a_database_they_can_log_into_and_no_password_reaches_the_server() {
    let (logs, _capture) = LogCapture::start();
    let pg = PgCluster::start();
    let admin = pg.connect_admin().await;
    let mut w = World::new(
        provisioner(&pg),
        &[("forge", FORGE), ("wiki", WIKI), ("2-docs_site", DOCS)],
        Settings::default(),
    );

    // First pass: everything made, proven by a login, and published.
    let report = w.pass().await;
    assert_eq!(report.failed, 0, "{:?}", w.failure("forge"));
    assert_eq!(
        kinds(&w.published()),
        vec![
            "recovered:2-docs_site:first-success-after-start",
            "recovered:forge:first-success-after-start",
            "recovered:wiki:first-success-after-start",
        ]
    );
    for (consumer, secret) in [("forge", FORGE), ("wiki", WIKI), ("2-docs_site", DOCS)] {
        let client = login(&pg, consumer, secret, consumer)
            .await
            .unwrap_or_else(|e| panic!("{consumer} cannot log in: {e:?}"));
        let row = client
            .query_one("SELECT current_user::text, current_database()::text", &[])
            .await
            .unwrap();
        assert_eq!(row.get::<_, String>(0), consumer);
        assert_eq!(row.get::<_, String>(1), consumer);
        // The owner can work in its database.
        client
            .batch_execute("CREATE TABLE notes (body text); INSERT INTO notes VALUES ('kept')")
            .await
            .unwrap();
        let row = admin
            .query_one(
                "SELECT r.rolcanlogin, r.rolsuper, r.rolcreaterole, r.rolcreatedb,
                        a.rolpassword LIKE 'SCRAM-SHA-256$4096:%',
                        EXISTS (SELECT 1 FROM pg_auth_members m JOIN pg_roles g ON g.oid = m.roleid
                                WHERE m.member = r.oid AND g.rolname = 'mesh_provisioned'),
                        d.datdba = r.oid,
                        shobj_description(d.oid, 'pg_database')
                 FROM pg_roles r JOIN pg_authid a ON a.oid = r.oid
                 JOIN pg_database d ON d.datname = r.rolname WHERE r.rolname = $1",
                &[&consumer],
            )
            .await
            .unwrap();
        assert!(row.get::<_, bool>(0), "{consumer} can log in");
        assert!(!row.get::<_, bool>(1) && !row.get::<_, bool>(2) && !row.get::<_, bool>(3));
        assert!(
            row.get::<_, bool>(4),
            "{consumer}'s password is a SCRAM verifier"
        );
        assert!(
            row.get::<_, bool>(5),
            "{consumer} is marked mesh_provisioned"
        );
        assert!(row.get::<_, bool>(6), "{consumer} owns its database");
        let comment: String = row.get(7);
        assert!(
            comment.starts_with("made by mesh-postgres for consumer"),
            "{comment}"
        );
    }
    let marker = admin
        .query_one(
            "SELECT rolcanlogin FROM pg_roles WHERE rolname = 'mesh_provisioned'",
            &[],
        )
        .await
        .unwrap();
    assert!(!marker.get::<_, bool>(0), "the marker role cannot log in");

    // Each database is closed to the other consumers.
    let error = login(&pg, "forge", FORGE, "wiki").await.err().unwrap();
    assert_eq!(
        error.code(),
        Some(&SqlState::INSUFFICIENT_PRIVILEGE),
        "{error:?}"
    );

    // Again and again: nothing is made or altered, nothing is published.
    let mark = pg.log().len();
    for _ in 0..3 {
        let report = w.pass().await;
        assert_eq!(report.failed, 0, "{:?}", w.failure("forge"));
    }
    assert!(w.published().is_empty());
    let quiet = log_since(&pg, mark);
    for statement in [
        "CREATE ROLE",
        "CREATE DATABASE",
        "ALTER ROLE",
        "COMMENT ON",
        "REVOKE",
    ] {
        assert!(
            !quiet.contains(statement),
            "{statement} sent again:\n{quiet}"
        );
    }
    // Proven by their last check, healthy consumers are not even looked up.
    assert!(pg.log().contains("AS role_exists"), "lookups are logged");
    assert!(!quiet.contains("AS role_exists"), "{quiet}");

    // A new minted secret: the login is refused, the password is reset once
    // (a verifier, never the secret), the new check passes; nothing failing.
    w.secret("forge", FORGE_NEW);
    let mark = pg.log().len();
    let report = w.pass().await;
    assert_eq!(report.failed, 0, "{:?}", w.failure("forge"));
    assert!(w.published().is_empty());
    let reset = log_since(&pg, mark);
    assert_eq!(
        reset
            .matches("ALTER ROLE \"forge\" WITH PASSWORD 'SCRAM-SHA-256$4096:")
            .count(),
        1,
        "{reset}"
    );
    assert!(!reset.contains("ALTER ROLE \"wiki\""), "{reset}");
    assert_eq!(w.mended(), 0, "a rotation brought is no mend");
    login(&pg, "forge", FORGE_NEW, "forge").await.unwrap();
    let old = login(&pg, "forge", FORGE, "forge").await.err().unwrap();
    assert_eq!(old.code(), Some(&SqlState::INVALID_PASSWORD));
    // Its data is untouched.
    let client = login(&pg, "forge", FORGE_NEW, "forge").await.unwrap();
    let kept: String = client
        .query_one("SELECT body FROM notes", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(kept, "kept");
    drop(client);

    // A consumer that changes its own password is set back to the minted one.
    let client = login(&pg, "wiki", WIKI, "wiki").await.unwrap();
    client
        .batch_execute("ALTER ROLE wiki PASSWORD 'chosen-by-wiki-itself'")
        .await
        .unwrap();
    drop(client);
    let report = w.pass().await;
    assert_eq!(report.failed, 0, "{:?}", w.failure("wiki"));
    login(&pg, "wiki", WIKI, "wiki").await.unwrap();
    assert_eq!(w.mended(), 1, "a password changed by hand is a mend");

    // A database dropped behind the provider's back is made again.
    within(
        "dropping 2-docs_site",
        admin.batch_execute("DROP DATABASE \"2-docs_site\" WITH (FORCE)"),
    )
    .await
    .unwrap();
    let report = w.pass().await;
    assert_eq!(report.failed, 0, "{:?}", w.failure("2-docs_site"));
    login(&pg, "2-docs_site", DOCS, "2-docs_site")
        .await
        .unwrap();

    // No plaintext password anywhere: the server log (every statement is
    // logged), the provider's log, the events published.
    let server_log = pg.log();
    assert!(
        server_log.contains("statement: CREATE ROLE \"forge\""),
        "log_statement=all is on"
    );
    let provider_log = logs.text();
    assert!(provider_log.contains("made the role"), "{provider_log}");
    for secret in [FORGE, WIKI, DOCS, FORGE_NEW, pg.superuser_password()] {
        assert!(
            !server_log.contains(secret),
            "the server log holds a password"
        );
        assert!(
            !provider_log.contains(secret),
            "the provider's log holds a password"
        );
    }
}

#[tokio::test]
async fn many_new_consumers_are_made_at_once_on_several_administrator_sessions() {
    let pg = PgCluster::start();
    let admin = pg.connect_admin().await;
    // A foreign role among them stays refused and untouched.
    for statement in [
        "CREATE ROLE app_own LOGIN",
        "CREATE DATABASE app_own OWNER app_own",
    ] {
        admin.batch_execute(statement).await.unwrap();
    }
    let names: Vec<String> = (0..24).map(|i| format!("many-{i:02}")).collect();
    let mut consumers: Vec<(&str, &str)> = names
        .iter()
        .map(|n| (n.as_str(), "minted-many-7d2c"))
        .collect();
    consumers.push(("app_own", "minted-foreign-1a2b"));
    let provisioner = mesh_provider_postgres::PostgresProvisioner::new(
        common::config(&pg).with_admin_sessions(4),
    );
    let settings = Settings {
        concurrency: 16,
        ..Settings::default()
    };
    let mut w = World::new(provisioner, &consumers, settings);

    let report = w.pass().await;
    assert_eq!(report.failed, 1, "{:?}", w.failure("many-00"));
    let (class, _) = w.failure("app_own").unwrap();
    assert_eq!(class, "refused");
    let sessions: i64 = admin
        .query_one(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'mesh-postgres'",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(sessions, 4, "the administrator's sessions, all kept");
    for name in &names {
        login(&pg, name, "minted-many-7d2c", name)
            .await
            .unwrap_or_else(|e| panic!("{name} cannot log in: {e:?}"));
    }
    // The second pass finds everything made: nothing new, nothing failing.
    let report = w.pass().await;
    assert_eq!(report.failed, 1);
    let owner: bool = admin
        .query_one(
            "SELECT rolcanlogin AND NOT pg_has_role(rolname, 'mesh_provisioned', 'MEMBER') FROM pg_roles WHERE rolname = 'app_own'",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert!(owner, "the foreign role is untouched");
}
