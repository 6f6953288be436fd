//! Retirement, re-enabling and approved deletion against a real server,
//! driven through the loop: a withdrawn consumer's role loses LOGIN and its
//! sessions, keeps its data, comes back when listed again, and is dropped
//! with its database only on a person's approval. One private cluster, real time.

mod common;

use std::time::Duration;

use common::{kinds, login, name, provisioner, role_and_database, session_ended, within, World};
use mesh_provider_postgres::classify::{self, SessionStep};
use mesh_sdk::testing::RetireRules;
use mesh_sdk::testing::Settings;
use mesh_sdk::{Class, Held, Provisioner};
use mesh_test_support::PgCluster;

const FORGE: &str = "minted-forge-0a7d4c";
const WIKI: &str = "minted-wiki-e5b21f";

#[tokio::test]
async fn retire_re_enable_and_approved_delete() {
    let pg = PgCluster::start();
    let admin = pg.connect_admin().await;
    let settings = Settings {
        retire: RetireRules {
            after_passes: 2,
            after: Duration::ZERO,
        },
        ..Settings::default()
    };
    let mut w = World::new(
        provisioner(&pg),
        &[("forge", FORGE), ("wiki", WIKI)],
        settings,
    );
    let report = w.pass().await;
    assert_eq!(report.failed, 0, "{:?}", w.failure("wiki"));
    w.published();
    let wiki = login(&pg, "wiki", WIKI, "wiki").await.unwrap();
    wiki.batch_execute("CREATE TABLE pages (title text); INSERT INTO pages VALUES ('home')")
        .await
        .unwrap();

    // Withdrawn: counted for two passes (the countdown published at once),
    // then retired and published.
    w.list(&["forge"]);
    w.pass().await;
    assert_eq!(
        kinds(&w.published()),
        vec!["retirement:wiki:retiring"],
        "not retired after one pass"
    );
    w.pass().await;
    assert_eq!(
        kinds(&w.published()),
        vec!["recovered:wiki:retired", "retirement:wiki:retired"]
    );
    assert_eq!(role_and_database(&admin, "wiki").await, (Some(false), true));
    // Its open session was ended, and it cannot log in again.
    session_ended(&wiki).await;
    let refused = login(&pg, "wiki", WIKI, "wiki").await.err().unwrap();
    assert_eq!(
        classify::postgres(&refused, SessionStep::Connect),
        Class::CredentialsRejected,
        "{refused:?}"
    );
    let p = w.runner.provisioner();
    let mut held = within("held", p.held(&common::provider())).await.unwrap();
    held.sort_by(|a, b| a.name.cmp(&b.name));
    assert_eq!(
        held,
        vec![Held::active(name("forge")), Held::retired(name("wiki"))]
    );
    // Retiring again is harmless.
    within("retire again", p.retire(&common::provider(), &name("wiki")))
        .await
        .unwrap();

    // Listed again: enabled before its check, published, served in the
    // same pass; its data was kept.
    w.list(&["forge", "wiki"]);
    let report = w.pass().await;
    assert_eq!(report.failed, 0, "{:?}", w.failure("wiki"));
    assert_eq!(
        kinds(&w.published()),
        vec!["retirement:wiki:re-enabled"],
        "the re-enable says it; no recovered claims a start that did not happen"
    );
    let wiki = login(&pg, "wiki", WIKI, "wiki").await.unwrap();
    let title: String = wiki
        .query_one("SELECT title FROM pages", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(title, "home");

    // Withdrawn again: a person approves retiring it now, then deleting it.
    w.list(&["forge"]);
    let reply = within("approve", w.runner.approve(br#"{"v":1,"consumer":"wiki"}"#)).await;
    assert!(reply.ok, "{}", reply.detail);
    assert_eq!(
        kinds(&w.published()),
        vec![
            "recovered:wiki:retired",
            "retirement:wiki:approved",
            "retirement:wiki:retired"
        ]
    );
    assert_eq!(role_and_database(&admin, "wiki").await, (Some(false), true));
    // A session stays open in its database (retiring ended wiki's own ones).
    let inside = login(&pg, pg.superuser(), pg.superuser_password(), "wiki")
        .await
        .unwrap();
    let reply = within(
        "approve delete",
        w.runner
            .approve(br#"{"v":1,"consumer":"wiki","delete":true}"#),
    )
    .await;
    assert!(reply.ok, "{}", reply.detail);
    assert_eq!(
        kinds(&w.published()),
        vec!["retirement:wiki:approved", "retirement:wiki:deleted"]
    );
    // The database went although a session was open in it (WITH (FORCE)).
    assert_eq!(role_and_database(&admin, "wiki").await, (None, false));
    assert!(inside.simple_query("SELECT 1").await.is_err());
    drop((wiki, inside));
    // Deleting again is harmless; forge was never touched.
    let p = w.runner.provisioner();
    within("delete again", p.delete(&common::provider(), &name("wiki")))
        .await
        .unwrap();
    assert_eq!(role_and_database(&admin, "forge").await, (Some(true), true));
    login(&pg, "forge", FORGE, "forge").await.unwrap();
    let report = w.pass().await;
    assert_eq!((report.attempted, report.failed), (1, 0));
    assert!(w.published().is_empty());
}
