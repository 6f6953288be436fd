//! What the store counts of history for `status`'s recurrence, and the
//! console's capped listing, on a real PostgreSQL: each case of the
//! recurrence rules read both ways the store reads it (for every standing
//! in scope, as `status` does, and for the standings a capped listing
//! lists, as the console's pages do), and the same answer from both.

use std::time::Duration;

mod common;

use common::store_at;
use mesh_pg_store::{migrate, PgStore};
use mesh_protocol::{Class, ModuleId, Timestamp};
use mesh_status::model::history::Recoveries;
use mesh_status::model::NoteRow;
use mesh_status::store::{Order, StatusFilter};
use mesh_test_support::PgCluster;

const NOW: &str = "2026-11-29T12:00:00Z";
const WEEK: Duration = Duration::from_secs(7 * 86_400);

fn ts(s: &str) -> Timestamp {
    Timestamp::parse(s).unwrap()
}

async fn store(pg: &PgCluster, db: &str) -> (PgStore, tokio_postgres::Client) {
    let (options, admin) = store_at(pg, db).await;
    migrate(&options).await.unwrap();
    (PgStore::new(options), admin)
}

/// A standing of `p@db-1` failing `consumer` for `class`, said since
/// `since` (first since `first`, when a restart said a later one).
async fn failing(
    admin: &tokio_postgres::Client,
    consumer: &str,
    class: &str,
    since: &str,
    first: Option<&str>,
) {
    admin
        .execute(
            "INSERT INTO failing (provider_module, provider_machine, consumer, consumer_machine,
                 provision, class, error, since, attempts, said_at, stream_seq, stream_epoch,
                 first_since)
             VALUES ('p', 'db-1', $1, 'app-1', 'postgres-database', $2, 'refused',
                 $3::text::timestamptz, 3, $3::text::timestamptz, 1, 1, $4::text::timestamptz)",
            &[&consumer, &class, &since, &first],
        )
        .await
        .unwrap();
}

/// A history row of `p@db-1` and `consumer`: `began` (with its class) or
/// `recovered`, at `at`, of the interval that began at `since`.
async fn history(
    admin: &tokio_postgres::Client,
    consumer: &str,
    kind: &str,
    at: &str,
    since: &str,
) {
    let class = (kind == "failing-began").then_some("credentials-rejected");
    admin
        .execute(
            "INSERT INTO history (kind, at, provider_module, provider_machine, consumer,
                 consumer_machine, class, since, stream_epoch, stream_seq)
             VALUES ($1, $2::text::timestamptz, 'p', 'db-1', $3, 'app-1', $4,
                 $5::text::timestamptz, 1, 1)",
            &[&kind, &at, &consumer, &class, &since],
        )
        .await
        .unwrap();
}

/// A person's note on `p@db-1`'s interval of `consumer`, at `at`.
async fn note(admin: &tokio_postgres::Client, consumer: &str, at: &str, text: &str, by: &str) {
    admin
        .execute(
            "INSERT INTO history (kind, at, provider_module, provider_machine, consumer,
                 consumer_machine, detail, by_name)
             VALUES ('note', $1::text::timestamptz, 'p', 'db-1', $2, 'app-1', $3, $4)",
            &[&at, &consumer, &text, &by],
        )
        .await
        .unwrap();
}

async fn interval(admin: &tokio_postgres::Client, consumer: &str, since: &str, until: &str) {
    history(admin, consumer, "failing-began", since, since).await;
    history(admin, consumer, "recovered", until, since).await;
}

fn filter(per_group: Option<u32>) -> StatusFilter {
    StatusFilter {
        providers: vec![ModuleId::parse("p@db-1").unwrap()],
        providers_chosen: false,
        machine: None,
        silent_before: ts("2026-01-01T00:00:00Z"),
        required: vec![],
        order: Order::Cause,
        consumer: None,
        per_group,
    }
}

/// What the store counts, read for every standing in scope (`None`) or for
/// a listing capped at `per_group`, by consumer.
async fn counted(store: &mut PgStore, per_group: Option<u32>) -> Vec<Recoveries> {
    let mut read = store.read_status(&filter(per_group)).await.unwrap();
    let mut counted = read.recoveries(ts(NOW), WEEK).await.unwrap();
    read.finish().await.unwrap();
    counted.sort_by(|a, b| a.consumer.cmp(&b.consumer));
    counted
}

#[tokio::test]
async fn the_store_counts_recoveries_before_the_current_interval_within_the_window() {
    let pg = PgCluster::start();
    let (mut store, admin) = store(&pg, "recurrence").await;
    let current = "2026-11-29T11:00:00Z";
    // A first failure: no recurrence.
    failing(&admin, "first", "credentials-rejected", current, None).await;
    history(&admin, "first", "failing-began", current, current).await;
    // Failed and recovered once before, within the week: the 2nd time.
    failing(&admin, "second", "unreachable", current, None).await;
    interval(
        &admin,
        "second",
        "2026-11-27T00:12:00Z",
        "2026-11-27T21:40:00Z",
    )
    .await;
    history(&admin, "second", "failing-began", current, current).await;
    // Its notes: the newest before the current interval is quoted; one
    // written during the current interval is not last time's.
    note(
        &admin,
        "second",
        "2026-11-27T10:00:00Z",
        "first guess",
        "ana",
    )
    .await;
    let learnt = "admin password reset from the vault";
    note(&admin, "second", "2026-11-28T09:00:00Z", learnt, "jochen").await;
    note(
        &admin,
        "second",
        "2026-11-29T11:30:00Z",
        "looking again",
        "bo",
    )
    .await;
    // Recovered before the window only: not counted.
    failing(&admin, "old", "credentials-rejected", current, None).await;
    interval(
        &admin,
        "old",
        "2026-11-20T00:12:00Z",
        "2026-11-21T21:40:00Z",
    )
    .await;
    // Three recoveries within the hour: flapping, the 4th time; the one
    // interval that began before the window counts by its recovery, with
    // no class (its beginning is not in the window).
    failing(
        &admin,
        "flap",
        "credentials-rejected",
        "2026-11-29T11:35:00Z",
        None,
    )
    .await;
    history(
        &admin,
        "flap",
        "recovered",
        "2026-11-22T13:00:00Z",
        "2026-11-22T11:00:00Z",
    )
    .await;
    for (since, until) in [("11:05", "11:10"), ("11:15", "11:20"), ("11:25", "11:30")] {
        let (since, until) = (
            format!("2026-11-29T{since}:00Z"),
            format!("2026-11-29T{until}:00Z"),
        );
        interval(&admin, "flap", &since, &until).await;
    }
    // Two within the hour: not flapping yet.
    failing(
        &admin,
        "twice",
        "credentials-rejected",
        "2026-11-29T11:35:00Z",
        None,
    )
    .await;
    interval(
        &admin,
        "twice",
        "2026-11-29T11:15:00Z",
        "2026-11-29T11:20:00Z",
    )
    .await;
    interval(
        &admin,
        "twice",
        "2026-11-29T11:25:00Z",
        "2026-11-29T11:30:00Z",
    )
    .await;
    // Failing since before a restart that said a later since: the
    // recovery of an interval that began at or after its first since is
    // not one before it.
    failing(
        &admin,
        "restarted",
        "credentials-rejected",
        current,
        Some("2026-11-28T00:00:00Z"),
    )
    .await;
    interval(
        &admin,
        "restarted",
        "2026-11-28T00:00:00Z",
        "2026-11-28T01:00:00Z",
    )
    .await;
    // Recovered, but not failing now: nothing to say.
    interval(
        &admin,
        "gone",
        "2026-11-28T00:00:00Z",
        "2026-11-28T01:00:00Z",
    )
    .await;

    let all = counted(&mut store, None).await;
    let by = |consumer: &str| {
        all.iter()
            .find(|r| r.consumer.as_str() == consumer)
            .cloned()
    };
    let names: Vec<&str> = all.iter().map(|r| r.consumer.as_str()).collect();
    assert_eq!(names, ["flap", "second", "twice"], "{all:?}");
    let second = by("second").unwrap();
    assert_eq!((second.count, second.within_hour), (1, 0));
    assert_eq!(second.last_at, ts("2026-11-27T21:40:00Z"));
    assert_eq!(second.last_since, Some(ts("2026-11-27T00:12:00Z")));
    assert_eq!(second.last_class, Some(Class::CredentialsRejected));
    assert_eq!(
        second.last_note,
        Some(NoteRow {
            text: learnt.to_owned(),
            by: "jochen".to_owned()
        })
    );
    assert_eq!(by("flap").unwrap().last_note, None);
    let flap = by("flap").unwrap();
    assert_eq!((flap.count, flap.within_hour), (4, 3));
    assert_eq!(flap.last_at, ts("2026-11-29T11:30:00Z"));
    assert_eq!(flap.last_since, Some(ts("2026-11-29T11:25:00Z")));
    let twice = by("twice").unwrap();
    assert_eq!((twice.count, twice.within_hour), (2, 2));

    // The capped listing's standings, read by key: the same counts.
    assert_eq!(counted(&mut store, Some(50)).await, all);
    // A cap that lists some: only theirs (in cause order: credentials-
    // rejected first: first, flap, old, restarted, twice; then unreachable).
    let capped = counted(&mut store, Some(2)).await;
    let names: Vec<&str> = capped.iter().map(|r| r.consumer.as_str()).collect();
    assert_eq!(names, ["flap", "second"], "{capped:?}");
}

#[tokio::test]
async fn a_capped_listing_lists_the_first_of_each_provider_and_class_and_counts_them_all() {
    let pg = PgCluster::start();
    let (mut store, admin) = store(&pg, "capped").await;
    for i in 0..7 {
        let since = format!("2026-11-29T10:0{i}:00Z");
        failing(
            &admin,
            &format!("c{i}"),
            "credentials-rejected",
            &since,
            None,
        )
        .await;
    }
    for i in 0..3 {
        let since = format!("2026-11-29T11:0{i}:00Z");
        failing(&admin, &format!("u{i}"), "unreachable", &since, None).await;
    }
    let mut filter = filter(Some(5));
    filter.silent_before = ts("2026-11-29T10:03:00Z");
    let mut read = store.read_status(&filter).await.unwrap();
    let silent: u64 = read.groups.iter().map(|g| g.silent).sum();
    assert_eq!(silent, 4);
    let p = ModuleId::parse("p@db-1").unwrap();
    let groups: Vec<_> = read
        .groups
        .iter()
        .map(|g| (g.provider.clone(), g.class, g.standings))
        .collect();
    assert_eq!(
        groups,
        [
            (p.clone(), Class::CredentialsRejected, 7),
            (p.clone(), Class::Unreachable, 3)
        ]
    );
    // Uncapped, the count is the same groups.
    let mut whole = filter.clone();
    whole.per_group = None;
    let uncapped = store.read_status(&whole).await.unwrap();
    assert_eq!(uncapped.groups, read.groups);
    uncapped.finish().await.unwrap();
    let mut listed = Vec::new();
    while let Some(row) = read.next().await.unwrap() {
        listed.push(row.said.consumer.to_string());
    }
    read.finish().await.unwrap();
    assert_eq!(listed, ["c0", "c1", "c2", "c3", "c4", "u0", "u1", "u2"]);

    // One consumer's standings only.
    let mut filter = self::filter(None);
    filter.consumer = Some("u1".to_owned());
    let mut read = store.read_status(&filter).await.unwrap();
    assert_eq!(read.groups.iter().map(|g| g.standings).sum::<u64>(), 1);
    let row = read.next().await.unwrap().expect("u1's standing");
    assert_eq!(row.said.consumer.as_str(), "u1");
    assert!(read.next().await.unwrap().is_none());
    read.finish().await.unwrap();
}

/// A person's acknowledgement of `p@db-1`'s standing for `consumer` on
/// `machine`, said at `at`, holding until `until`.
async fn acknowledge(
    admin: &tokio_postgres::Client,
    consumer: &str,
    machine: &str,
    at: &str,
    until: &str,
    reason: &str,
) {
    admin
        .execute(
            "INSERT INTO history (kind, at, provider_module, provider_machine, consumer,
                 consumer_machine, reason, detail, by_name, done, until)
             VALUES ('action', $1::text::timestamptz, 'p', 'db-1', $2, $3, 'acknowledge', $4,
                 'ana', true, $5::text::timestamptz)",
            &[&at, &consumer, &machine, &reason, &until],
        )
        .await
        .unwrap();
}

#[tokio::test]
async fn the_acknowledgements_that_hold_are_read_with_the_recurrences() {
    let pg = PgCluster::start();
    let (mut store, admin) = store(&pg, "acknowledged").await;
    let current = "2026-11-29T11:00:00Z";
    for consumer in ["held", "ended", "other-machine", "none"] {
        failing(&admin, consumer, "unreachable", current, None).await;
    }
    // Two that hold: the newer is said.
    acknowledge(
        &admin,
        "held",
        "app-1",
        "2026-11-29T11:05:00Z",
        "2026-11-29T15:00:00Z",
        "older",
    )
    .await;
    acknowledge(
        &admin,
        "held",
        "app-1",
        "2026-11-29T11:30:00Z",
        "2026-11-29T13:00:00Z",
        "restoring",
    )
    .await;
    // One that ended before now.
    acknowledge(
        &admin,
        "ended",
        "app-1",
        "2026-11-29T10:00:00Z",
        "2026-11-29T11:59:59Z",
        "over",
    )
    .await;
    // One of the same name on another machine.
    acknowledge(
        &admin,
        "other-machine",
        "app-2",
        "2026-11-29T11:05:00Z",
        "2026-11-29T15:00:00Z",
        "not this one",
    )
    .await;
    // Another provider's action kinds are not acknowledgements.
    admin
        .execute(
            "INSERT INTO history (kind, at, provider_module, provider_machine, consumer,
                 consumer_machine, reason, detail, by_name, done)
             VALUES ('action', $1::text::timestamptz, 'p', 'db-1', 'none', 'app-1', 'approve',
                 'retired', 'ana', true)",
            &[&"2026-11-29T11:10:00Z"],
        )
        .await
        .unwrap();

    let mut read = store.read_status(&filter(None)).await.unwrap();
    let recurrences = read.recurrences(ts(NOW), WEEK).await.unwrap();
    let mut said = Vec::new();
    while let Some(row) = read.next().await.unwrap() {
        let ack = recurrences.acknowledged(
            &row.provider,
            &row.said.consumer,
            row.said.consumer_machine.as_ref(),
        );
        said.push((
            row.said.consumer.to_string(),
            ack.map(|a| (a.reason, a.by, a.until)),
        ));
    }
    read.finish().await.unwrap();
    said.sort();
    assert_eq!(
        said,
        [
            ("ended".to_owned(), None),
            (
                "held".to_owned(),
                Some((
                    "restoring".to_owned(),
                    "ana".to_owned(),
                    ts("2026-11-29T13:00:00Z")
                ))
            ),
            ("none".to_owned(), None),
            ("other-machine".to_owned(), None),
        ]
    );
}
