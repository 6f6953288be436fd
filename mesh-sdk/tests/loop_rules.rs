//! The provisioner loop driven pass by pass on tokio's paused clock, with the
//! SDK's fake provisioner: standing, redaction, classification, the
//! contributions file, concurrency and timeouts, retirement and approvals,
//! withdrawn consumers and the `alive` event.

use std::sync::Arc;
use std::time::Duration;

use mesh_sdk::internals::{FakeError, FakeProvisioner};
use mesh_sdk::testing::Outbox;
use mesh_sdk::testing::{self, kinds, LogCapture};
use mesh_sdk::testing::{Runner, Settings, WallClock};
use mesh_sdk::{Class, Name, Timestamp};
use serde_json::{json, Value};
use tokio::time::Instant;

const PASS: Duration = Duration::from_secs(5);
const T0: &str = "2026-10-05T00:00:00Z";

struct World {
    dir: tempfile::TempDir,
    fake: FakeProvisioner,
    outbox: Arc<Outbox>,
    runner: Runner<FakeProvisioner>,
}

fn name(s: &str) -> Name {
    Name::parse(s).unwrap()
}

impl World {
    /// A provider `postgres@db-1` serving `consumers`, each with secret `pw-<name>`.
    fn new(consumers: &[&str]) -> World {
        World::with(consumers, FakeProvisioner::new(), Settings::default())
    }

    fn with(consumers: &[&str], fake: FakeProvisioner, settings: Settings) -> World {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("secrets")).unwrap();
        for c in consumers {
            std::fs::write(dir.path().join("secrets").join(c), format!("pw-{c}\n")).unwrap();
        }
        let outbox = Arc::new(Outbox::new());
        let clock = WallClock::fixed(Timestamp::parse(T0).unwrap(), Instant::now());
        let runner = Runner::new(
            fake.clone(),
            dir.path().join("contributions.json"),
            settings,
            Arc::clone(&outbox),
        )
        .with_clock(clock);
        let world = World {
            dir,
            fake,
            outbox,
            runner,
        };
        world.list(consumers);
        world
    }

    /// Writes the contributions file listing `consumers`.
    fn list(&self, consumers: &[&str]) {
        let path = self.dir.path().join("contributions.json");
        testing::write_contributions(&path, ("postgres", "db-1"), "postgres-database", consumers);
    }

    fn write_raw(&self, text: &str) {
        std::fs::write(self.dir.path().join("contributions.json"), text).unwrap();
    }

    fn secret(&self, consumer: &str, value: Option<&str>) {
        let path = self.dir.path().join("secrets").join(consumer);
        match value {
            Some(v) => std::fs::write(path, v).unwrap(),
            None => std::fs::remove_file(path).unwrap(),
        }
    }

    /// Runs `n` passes, one every PASS, the clock advancing after each.
    async fn passes(&mut self, n: usize) {
        mesh_sdk::testing::passes(&mut self.runner, n, PASS).await;
    }

    /// Takes every event published so far: (kind, body).
    fn published(&self) -> Vec<(String, Value)> {
        testing::drain(&self.outbox)
    }
}

#[tokio::test(start_paused = true)]
async fn first_success_of_each_consumer_after_start_is_announced() {
    let mut w = World::new(&["forge", "wiki"]);
    w.passes(3).await;
    let published = w.published();
    let mut k = kinds(&published);
    k.sort();
    assert_eq!(
        k,
        vec![
            "recovered:forge:first-success-after-start",
            "recovered:wiki:first-success-after-start"
        ]
    );
    assert_eq!(
        published[0].1,
        json!({"v":1,"consumer":published[0].1["consumer"],"consumer_machine":"app-1","provision":"postgres-database",
               "reason":"first-success-after-start","said_at":T0})
    );

    // A restarted provider has forgotten: it says so again.
    let fake = w.fake.clone();
    let outbox = Arc::new(Outbox::new());
    let mut again = Runner::new(
        fake,
        w.dir.path().join("contributions.json"),
        Settings::default(),
        Arc::clone(&outbox),
    );
    again.pass().await;
    assert_eq!(outbox.len(), 2);
}

#[tokio::test(start_paused = true)]
async fn failing_after_five_minutes_repeated_every_fifteen_then_recovered() {
    let mut w = World::new(&["forge", "wiki"]);
    w.passes(1).await;
    w.published();
    w.fake.with(|b| {
        b.fail_check.insert(
            name("forge"),
            FakeError::message("password authentication failed for user \"forge\""),
        )
    });
    // 60 failing passes: 5 s .. 300 s; nothing yet.
    w.passes(60).await;
    assert!(w.published().is_empty());
    // The 61st failure, at 305 s = 5 minutes after the first, says failing.
    w.passes(1).await;
    let published = w.published();
    assert_eq!(
        published,
        vec![(
            "failing".to_owned(),
            json!({"v":1,"consumer":"forge","consumer_machine":"app-1","provision":"postgres-database",
                   "class":"credentials-rejected","error":"password authentication failed for user \"forge\"",
                   "since":"2026-10-05T00:00:05Z","attempts":61,"said_at":"2026-10-05T00:05:05Z"})
        )]
    );
    // Again exactly 15 minutes later, and not before.
    w.passes(179).await;
    assert!(w.published().is_empty());
    w.passes(1).await;
    let published = w.published();
    assert_eq!(published.len(), 1);
    assert_eq!(published[0].1["said_at"], "2026-10-05T00:20:05Z");
    assert_eq!(published[0].1["attempts"], 241);
    assert_eq!(published[0].1["since"], "2026-10-05T00:00:05Z");

    w.fake.with(|b| b.fail_check.clear());
    w.passes(2).await;
    assert_eq!(kinds(&w.published()), vec!["recovered:forge:success"]);
}

#[tokio::test(start_paused = true)]
async fn failures_of_make_check_and_secret_all_count_and_success_resets() {
    let mut w = World::new(&["a", "b", "c"]);
    w.secret("a", None);
    w.fake.with(|b| {
        b.fail_ensure.insert(
            name("b"),
            FakeError::message("permission denied to create database"),
        )
    });
    w.fake.with(|b| {
        b.fail_check
            .insert(name("c"), FakeError::message("connection refused"))
    });
    w.passes(61).await;
    let published = w.published();
    let mut classes: Vec<(String, String)> = published
        .iter()
        .map(|(_, v)| {
            (
                v["consumer"].as_str().unwrap().into(),
                v["class"].as_str().unwrap().into(),
            )
        })
        .collect();
    classes.sort();
    assert_eq!(
        classes,
        vec![
            ("a".into(), "secret-unreadable".into()),
            ("b".into(), "refused".into()),
            ("c".into(), "unreachable".into())
        ]
    );
    let a = published
        .iter()
        .find(|(_, v)| v["consumer"] == "a")
        .unwrap();
    assert!(
        a.1["error"].as_str().unwrap().contains("is missing"),
        "{a:?}"
    );
    assert_eq!(a.1["attempts"], 61);
    assert_eq!(a.1["since"], T0);

    // An empty secret is unreadable too, and a single success inside the
    // window resets it.
    let mut w = World::new(&["d"]);
    w.secret("d", Some("  \n"));
    w.passes(50).await;
    w.secret("d", Some("pw-d"));
    w.passes(1).await;
    w.secret("d", Some(""));
    w.passes(60).await;
    assert_eq!(
        kinds(&w.published()),
        vec!["recovered:d:first-success-after-start"]
    );
    w.passes(1).await;
    let published = w.published();
    assert_eq!(kinds(&published), vec!["failing:d:secret-unreadable"]);
    assert_eq!(published[0].1["since"], "2026-10-05T00:04:15Z");
}

#[tokio::test(start_paused = true)]
async fn no_secret_in_any_event_log_line_or_error() {
    let (logs, _guard) = LogCapture::start();
    let fake = FakeProvisioner {
        own_secrets: vec!["admin-very-secret".into()],
        ..FakeProvisioner::new()
    };
    let mut w = World::with(&["forge"], fake, Settings::default());
    w.passes(1).await;
    // The minted secret changes: the backend keeps the old one (an ensure
    // that does not bring a rotated secret) and its
    // refusal echoes the password it was given; another error quotes the
    // provider's own admin secret.
    w.secret("forge", Some("new-minted-pw"));
    w.fake.with(|b| {
        b.echo_secret = true;
        b.keep_secrets = true;
    });
    w.passes(61).await;
    let mut published = w.published();
    w.fake.with(|b| {
        b.fail_ensure.insert(
            name("forge"),
            FakeError::message("login as admin with admin-very-secret refused; new-minted-pw"),
        )
    });
    w.passes(180).await;
    published.extend(w.published());
    assert_eq!(
        published.iter().filter(|(k, _)| k == "failing").count(),
        2,
        "{published:?}"
    );
    let all = format!("{published:?}\n{}", logs.text());
    for secret in ["new-minted-pw", "admin-very-secret", "pw-forge"] {
        assert!(!all.contains(secret), "{secret} leaked:\n{all}");
    }
    assert!(all.contains("[redacted]"), "{all}");
    assert!(
        logs.text().contains("provision failed"),
        "failures are logged"
    );
}

#[tokio::test(start_paused = true)]
async fn provider_classification_wins_over_the_message() {
    let mut w = World::new(&["forge"]);
    w.fake.with(|b| {
        b.fail_check.insert(
            name("forge"),
            FakeError {
                message: "connection refused while logging in".into(),
                class: Some(Class::CredentialsRejected),
            },
        )
    });
    w.passes(61).await;
    assert_eq!(
        kinds(&w.published()),
        vec!["failing:forge:credentials-rejected"]
    );
}

#[tokio::test(start_paused = true)]
async fn a_malformed_file_keeps_the_last_good_list_and_a_bad_entry_is_refused_alone() {
    let (logs, _guard) = LogCapture::start();
    let mut w = World::new(&["forge", "wiki"]);
    w.passes(1).await;
    w.published();
    w.write_raw("{ this is not json");
    w.passes(100).await;
    assert_eq!(
        w.fake.calls("check"),
        2 * 101,
        "both consumers still served"
    );
    assert_eq!(
        logs.text().matches("is malformed").count(),
        1,
        "logged once per change:\n{}",
        logs.text()
    );
    assert!(w.published().is_empty());

    w.write_raw(
        r#"{"provider":{"module":"postgres","machine":"db-1"},"consumers":[
        {"consumer":"Bad.Name","machine":"app-1","provision":"postgres-database","secret_file":"secrets/forge"},
        {"consumer":"forge","machine":"app-1","provision":"postgres-database","secret_file":"secrets/forge"}]}"#,
    );
    let report = w.runner.pass().await;
    assert!(report.fresh);
    assert_eq!(report.attempted, 1);
    assert!(
        logs.text().contains("consumers[0] (\"Bad.Name\")"),
        "{}",
        logs.text()
    );
}

#[tokio::test(start_paused = true)]
async fn concurrency_is_bounded_and_calls_time_out() {
    let names: Vec<String> = (0..40).map(|i| format!("c{i}")).collect();
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let settings = Settings {
        concurrency: 4,
        call_timeout: Duration::from_secs(2),
        ..Settings::default()
    };
    let mut w = World::with(&refs, FakeProvisioner::new(), settings);
    w.fake.with(|b| b.latency = Duration::from_millis(100));
    let start = Instant::now();
    w.runner.pass().await;
    // 40 consumers, 2 calls of 100 ms each, 4 at a time: 10 rounds of 200 ms,
    // then one 100 ms call listing what the backend holds.
    assert_eq!(start.elapsed(), Duration::from_millis(2100));

    w.fake.with(|b| b.latency = Duration::from_secs(3));
    let report = w.runner.pass().await;
    assert_eq!(report.failed, 40);
    let standing = w.runner.standing(&name("c0")).unwrap();
    let failure = standing.failure().unwrap();
    assert_eq!(failure.detail.class, Class::Unreachable);
    assert_eq!(failure.detail.error, "ensure timed out after 2s");
}

#[tokio::test(start_paused = true)]
async fn withdrawn_consumer_is_retired_after_ten_minutes_and_five_passes_and_said() {
    let mut w = World::new(&["forge", "wiki"]);
    w.fake.with(|b| {
        b.fail_check
            .insert(name("wiki"), FakeError::message("connection refused"))
    });
    w.passes(61).await;
    assert_eq!(
        kinds(&w.published()),
        vec![
            "recovered:forge:first-success-after-start",
            "failing:wiki:unreachable"
        ]
    );
    w.list(&["forge"]);
    // Withdrawn at 305 s: still held, not retired until 10 minutes passed;
    // the countdown is published at once, and once, with when it ends.
    w.passes(120).await;
    let published = w.published();
    assert_eq!(kinds(&published), vec!["retirement:wiki:retiring"]);
    assert_eq!(published[0].1["said_at"], "2026-10-05T00:05:05Z");
    assert_eq!(published[0].1["retire_at"], "2026-10-05T00:15:05Z");
    assert!(!w.fake.with(|b| b.provisions[&name("wiki")].retired));
    w.passes(1).await;
    let published = w.published();
    assert_eq!(
        kinds(&published),
        vec!["retirement:wiki:retired", "recovered:wiki:retired"]
    );
    assert_eq!(
        published[1].1["consumer_machine"], "app-1",
        "the machine it last knew"
    );
    assert!(w.fake.with(|b| b.provisions[&name("wiki")].retired));
    assert_eq!(w.fake.calls("delete"), 0);
    // Nothing more, ever, without approval.
    w.passes(1000).await;
    assert!(w.published().is_empty());
    assert_eq!(w.fake.calls("delete"), 0);
    assert_eq!(w.fake.calls("retire"), 1);

    // Listed again: re-enabled and published, then served in the same pass.
    w.list(&["forge", "wiki"]);
    w.fake.with(|b| b.fail_check.clear());
    w.passes(1).await;
    assert_eq!(
        kinds(&w.published()),
        vec!["retirement:wiki:re-enabled"],
        "the re-enable says it; no recovered claims a start that did not happen"
    );
    assert!(!w.fake.with(|b| b.provisions[&name("wiki")].retired));
    // It fails again: published failing after failing_after, as any consumer.
    w.fake.with(|b| {
        b.fail_check
            .insert(name("wiki"), FakeError::message("connection refused"))
    });
    w.passes(60).await;
    assert!(w.published().is_empty(), "not before failing_after");
    w.passes(1).await;
    assert_eq!(kinds(&w.published()), vec!["failing:wiki:unreachable"]);
}

#[tokio::test(start_paused = true)]
async fn relisted_while_pending_cancels_the_countdown_and_starts_over() {
    let mut w = World::new(&["forge", "wiki"]);
    w.passes(1).await;
    w.published();
    w.list(&["forge"]);
    w.passes(100).await;
    assert_eq!(kinds(&w.published()), vec!["retirement:wiki:retiring"]);
    w.list(&["forge", "wiki"]);
    w.passes(1).await;
    let published = w.published();
    assert_eq!(kinds(&published), vec!["retirement:wiki:cancelled"]);
    assert!(
        published[0].1.get("retire_at").is_none(),
        "{:?}",
        published[0].1
    );
    w.list(&["forge"]);
    w.passes(120).await;
    assert_eq!(
        kinds(&w.published()),
        vec!["retirement:wiki:retiring"],
        "count started over"
    );
    w.passes(1).await;
    assert_eq!(
        kinds(&w.published()),
        vec!["retirement:wiki:retired", "recovered:wiki:retired"]
    );
}

#[tokio::test(start_paused = true)]
async fn a_broken_file_for_an_hour_retires_nobody() {
    let mut w = World::new(&["forge", "wiki"]);
    w.passes(1).await;
    w.published();
    w.write_raw("[]");
    w.passes(720).await;
    std::fs::remove_file(w.dir.path().join("contributions.json")).unwrap();
    w.passes(720).await;
    assert!(w.published().is_empty());
    assert_eq!(w.fake.calls("retire"), 0);
    // An unlistable backend for an hour does not count either.
    w.list(&["forge"]);
    w.fake
        .with(|b| b.down = Some(FakeError::message("connection refused")));
    w.passes(720).await;
    assert_eq!(w.fake.calls("retire"), 0);
}

async fn approve(w: &mut World, body: &str) -> (bool, String) {
    let reply = w.runner.approve(body.as_bytes()).await;
    (reply.ok, reply.detail)
}

/// An approval that arrives while a pass's attempts run (`serve` answers
/// it then, never queued behind the pass): acted on between the attempts'
/// calls, against what the pass attempts; the pass ends as it would have.
#[tokio::test(start_paused = true)]
async fn an_approval_answered_while_the_attempts_run() {
    let mut w = World::new(&["forge", "wiki"]);
    w.passes(1).await;
    w.published();
    w.list(&["forge"]);
    w.fake.with(|b| {
        b.latency = Duration::from_secs(1);
        b.calls.clear();
    });
    let retire = |consumer: &str| {
        json!({"v": 1, "consumer": consumer, "delete": false})
            .to_string()
            .into_bytes()
    };
    let (report, replies) = w
        .runner
        .pass_answering(&[retire("wiki"), retire("forge")])
        .await;
    let replies: Vec<(bool, &str)> = replies.iter().map(|r| (r.ok, r.detail.as_str())).collect();
    assert_eq!(
        replies[0],
        (true, "wiki retired: disabled, nothing deleted")
    );
    assert!(
        !replies[1].0 && replies[1].1.contains("still listed"),
        "{replies:?}"
    );
    // The retirement ran while forge's attempt waited on the backend.
    let calls = w.fake.with(|b| b.calls.clone());
    let at = |call: &str| {
        calls
            .iter()
            .position(|c| c == call)
            .unwrap_or_else(|| panic!("{call} in {calls:?}"))
    };
    assert!(at("ensure forge") < at("retire wiki"), "{calls:?}");
    assert!(at("retire wiki") < at("check forge"), "{calls:?}");
    assert_eq!((report.attempted, report.failed), (1, 0));
    assert_eq!(
        kinds(&w.published()),
        vec![
            "retirement:wiki:retiring",
            "retirement:wiki:approved",
            "retirement:wiki:retired",
            "recovered:wiki:retired"
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn approvals_and_every_refusal() {
    let mut w = World::new(&["forge", "wiki", "docs"]);
    w.passes(1).await;
    w.published();
    w.list(&["forge", "docs"]);

    for (body, expected) in [
        ("not json", "malformed"),
        (r#"{"v":1}"#, "malformed"),
        (r#"{"v":1,"consumer":"No Such"}"#, "malformed"),
        (r#"{"v":2,"consumer":"wiki"}"#, "version"),
        (r#"{"v":1,"consumer":"ghost"}"#, "unknown"),
        (r#"{"v":1,"consumer":"forge"}"#, "still listed"),
        (
            r#"{"v":1,"consumer":"forge","delete":true}"#,
            "still listed",
        ),
        (
            r#"{"v":1,"consumer":"wiki","delete":true}"#,
            "not retired yet",
        ),
    ] {
        let (ok, detail) = approve(&mut w, body).await;
        assert!(!ok, "{body}");
        assert!(detail.contains(expected), "{body}: {detail}");
    }
    assert!(w.published().is_empty());
    assert_eq!(w.fake.calls("retire") + w.fake.calls("delete"), 0);

    // Past its deadline (the asker stopped waiting): refused, nothing done.
    let late = r#"{"v":1,"consumer":"wiki","delete":false,"expires_at":"2026-10-05T00:00:04Z"}"#;
    let (ok, detail) = approve(&mut w, late).await;
    assert!(
        !ok && detail.contains("expired at 2026-10-05T00:00:04Z"),
        "{detail}"
    );
    assert!(w.published().is_empty());
    assert_eq!(w.fake.calls("retire"), 0);

    // Retire now, on approval (within its deadline).
    let (ok, detail) = approve(
        &mut w,
        r#"{"v":1,"consumer":"wiki","delete":false,"expires_at":"2026-10-05T01:00:00Z"}"#,
    )
    .await;
    assert!(ok, "{detail}");
    assert_eq!(
        kinds(&w.published()),
        vec![
            "retirement:wiki:approved",
            "retirement:wiki:retired",
            "recovered:wiki:retired"
        ]
    );
    let (ok, detail) = approve(&mut w, r#"{"v":1,"consumer":"wiki"}"#).await;
    assert!(!ok && detail.contains("already retired"), "{detail}");
    assert_eq!(w.fake.calls("delete"), 0);

    // Delete, on approval of a retired consumer.
    let (ok, detail) = approve(&mut w, r#"{"v":1,"consumer":"wiki","delete":true}"#).await;
    assert!(ok, "{detail}");
    assert_eq!(
        kinds(&w.published()),
        vec!["retirement:wiki:approved", "retirement:wiki:deleted"]
    );
    assert!(w.fake.with(|b| !b.provisions.contains_key(&name("wiki"))));
    let (ok, detail) = approve(&mut w, r#"{"v":1,"consumer":"wiki","delete":true}"#).await;
    assert!(!ok && detail.contains("unknown"), "{detail}");

    // A broken contributions file: nothing is approved blind.
    w.write_raw("{");
    let (ok, detail) = approve(&mut w, r#"{"v":1,"consumer":"docs"}"#).await;
    assert!(!ok && detail.contains("cannot be read"), "{detail}");
}

#[tokio::test(start_paused = true)]
async fn a_panic_in_the_provider_fails_that_consumer_only() {
    let mut w = World::new(&["forge", "wiki"]);
    w.fake.with(|b| b.panic_check.push(name("wiki")));
    w.passes(61).await;
    let published = w.published();
    assert_eq!(
        kinds(&published),
        vec![
            "recovered:forge:first-success-after-start",
            "failing:wiki:refused"
        ]
    );
    assert!(published[1].1["error"]
        .as_str()
        .unwrap()
        .contains("the provisioner panicked: index out of bounds"));
}

/// The create of `consumer` is refused from now on.
fn refuse(w: &World, consumer: &str) {
    w.fake.with(|b| {
        b.fail_ensure.insert(
            name(consumer),
            FakeError::message("permission denied to create role"),
        )
    });
}

/// Passes until `failing_after` (5 min) has passed for a consumer failing from the start.
const TO_FAILING: usize = 62;

#[tokio::test(start_paused = true)]
async fn a_withdrawn_never_made_consumer_is_said_recovered_withdrawn_once() {
    let mut w = World::new(&["forge", "wiki"]);
    refuse(&w, "forge");
    w.passes(TO_FAILING).await;
    let published = kinds(&w.published());
    assert!(
        published.contains(&"failing:forge:refused".to_owned()),
        "{published:?}"
    );
    assert_eq!(w.runner.standings(), 2);

    // Withdrawn while the file cannot be read that pass: nothing published.
    std::fs::write(w.dir.path().join("contributions.json"), "{ not json").unwrap();
    w.passes(3).await;
    assert_eq!(kinds(&w.published()), Vec::<String>::new());

    // The file is good again, without forge: recovered (withdrawn), once,
    // with what the provider last knew of it; the standing is forgotten.
    w.list(&["wiki"]);
    w.passes(1).await;
    let published = w.published();
    assert_eq!(kinds(&published), ["recovered:forge:withdrawn"]);
    assert_eq!(published[0].1["consumer_machine"], "app-1");
    assert_eq!(published[0].1["provision"], "postgres-database");
    assert_eq!(w.runner.standings(), 1);
    w.passes(5).await;
    assert_eq!(
        kinds(&w.published()),
        Vec::<String>::new(),
        "published once"
    );

    // Listed again: a new standing, greeted again.
    w.fake.with(|b| b.fail_ensure.clear());
    w.list(&["forge", "wiki"]);
    w.passes(1).await;
    assert_eq!(
        kinds(&w.published()),
        ["recovered:forge:first-success-after-start"]
    );
}

#[tokio::test(start_paused = true)]
async fn a_withdrawn_consumer_never_said_failing_is_forgotten_quietly() {
    let mut w = World::new(&["forge", "wiki"]);
    refuse(&w, "forge");
    w.passes(3).await;
    w.published();
    w.list(&["wiki"]);
    w.passes(2).await;
    assert_eq!(kinds(&w.published()), Vec::<String>::new());
    assert_eq!(w.runner.standings(), 1);
}

#[tokio::test(start_paused = true)]
async fn a_withdrawn_consumer_the_backend_holds_is_left_to_retirement() {
    let mut w = World::new(&["forge", "wiki"]);
    w.passes(1).await;
    // Held, then failing for long enough, then withdrawn.
    w.fake.with(|b| {
        b.fail_check.insert(
            Name::parse("forge").unwrap(),
            FakeError::message("connection refused"),
        )
    });
    w.passes(TO_FAILING).await;
    w.published();
    w.list(&["wiki"]);
    w.passes(2).await;
    assert_eq!(
        kinds(&w.published()),
        vec!["retirement:forge:retiring"],
        "retired later (its countdown published), not withdrawn"
    );
    assert_eq!(w.runner.standings(), 2);
}

#[tokio::test(start_paused = true)]
async fn alive_after_the_first_pass_then_every_alive_every_and_settled() {
    let settings = Settings {
        alive_every: Duration::from_secs(60),
        ..Settings::default()
    };
    let mut w = World::with(&["forge", "wiki"], FakeProvisioner::new(), settings);
    refuse(&w, "forge");
    assert!(
        !w.runner.publish_alive_if_due(),
        "nothing before the first pass"
    );
    w.passes(1).await;
    assert!(w.runner.publish_alive_if_due());
    let published = w.published();
    let alive: Vec<&Value> = published
        .iter()
        .filter(|(k, _)| k == "alive")
        .map(|(_, b)| b)
        .collect();
    assert_eq!(alive.len(), 1, "{published:?}");
    let body = alive[0];
    assert_eq!(body["v"], 1);
    assert_eq!(body["started_at"], T0);
    assert_eq!(body["alive_every_seconds"], 60);
    assert_eq!(body["failing_after_seconds"], 300);
    assert_eq!(body["repeat_every_seconds"], 900);
    assert_eq!(body["settled_at"], Value::Null);
    assert_eq!(body["consumers"], 2);
    assert_eq!(body["failing"], 1);
    assert!(body["pass_seconds"].as_f64().unwrap() >= 0.0);
    assert!(!w.runner.publish_alive_if_due(), "not again at once");

    // Every minute; settled at the end of the first pass that began 5
    // minutes after the first ended (first ended at 0 s: the pass at 300 s).
    let mut settled = None;
    for minute in 1..=7 {
        w.passes(12).await;
        assert!(w.runner.publish_alive_if_due(), "minute {minute}");
        let published = w.published();
        let body = &published.iter().find(|(k, _)| k == "alive").unwrap().1;
        if settled.is_none() && !body["settled_at"].is_null() {
            settled = Some((minute, body["settled_at"].clone()));
        }
    }
    assert_eq!(
        settled,
        Some((5, Value::from("2026-10-05T00:05:00Z"))),
        "settled at the pass begun at 300 s"
    );
}

/// The contributions file's text listing `entries` (raw JSON objects).
fn file_of(entries: &[String]) -> String {
    format!(
        r#"{{"provider": {{"module": "postgres", "machine": "db-1"}}, "consumers": [{}]}}"#,
        entries.join(",")
    )
}

fn entry(consumer: &str, secret: &str, extra: &str) -> String {
    format!(
        r#"{{"consumer": "{consumer}", "machine": "app-1", "provision": "postgres-database", "secret_file": "secrets/{secret}"{extra}}}"#
    )
}

#[tokio::test(start_paused = true)]
async fn a_typo_in_an_entry_never_retires_its_consumer() {
    let mut w = World::new(&["forge", "wiki"]);
    w.passes(2).await;
    w.published();
    // wiki's entry gets an unknown field, for longer than every retirement
    // threshold (5 passes and 10 minutes): it stays listed, its last good
    // entry is served, nothing is retired or published.
    w.write_raw(&file_of(&[
        entry("forge", "forge", ""),
        entry("wiki", "wiki", r#", "provison": "typo""#),
    ]));
    let checks = w
        .fake
        .with(|b| b.calls.iter().filter(|c| *c == "check wiki").count());
    w.passes(200).await;
    assert_eq!(w.fake.calls("retire"), 0);
    assert_eq!(kinds(&w.published()), Vec::<String>::new());
    let after = w
        .fake
        .with(|b| b.calls.iter().filter(|c| *c == "check wiki").count());
    assert!(
        after >= checks + 200,
        "wiki still served: {checks} -> {after}"
    );
}

#[tokio::test(start_paused = true)]
async fn two_entries_for_one_consumer_are_both_refused() {
    let mut w = World::new(&["forge", "wiki"]);
    w.passes(2).await;
    w.published();
    // wiki listed twice, the second entry pointing at forge's secret: the
    // last good entry (its own secret) is served, never forge's.
    w.write_raw(&file_of(&[
        entry("forge", "forge", ""),
        entry("wiki", "wiki", ""),
        entry("wiki", "forge", ""),
    ]));
    w.passes(200).await;
    assert_eq!(w.fake.calls("retire"), 0);
    assert_eq!(kinds(&w.published()), Vec::<String>::new());
    let secret = w.fake.with(|b| b.provisions[&name("wiki")].secret.clone());
    assert_eq!(secret, "pw-wiki");

    // A consumer never seen good, listed twice from the start: neither
    // served nor retired, though the backend holds it.
    let mut fresh = World::new(&["forge"]);
    fresh.fake.with(|b| {
        b.provisions.insert(
            name("old"),
            mesh_sdk::internals::FakeProvision::made_by(&"postgres@db-1".parse().unwrap(), "x"),
        )
    });
    fresh.write_raw(&file_of(&[
        entry("forge", "forge", ""),
        entry("old", "forge", ""),
        entry("old", "forge", ""),
    ]));
    fresh.passes(200).await;
    assert_eq!(fresh.fake.calls("retire"), 0);
    assert_eq!(
        fresh
            .fake
            .with(|b| b.calls.iter().filter(|c| c.ends_with(" old")).count()),
        0,
        "not served"
    );
}

/// `mesh_provisions_mended_total` as the runner's `/metrics` shows it.
fn mended(w: &World) -> u64 {
    testing::mended_total(&w.runner, &w.outbox)
}

/// Calls of the fake for `consumer`, in order (`re_enable`, `ensure`, `check`, ...).
fn calls_for(w: &World, consumer: &str) -> Vec<String> {
    let suffix = format!(" {consumer}");
    w.fake.with(|b| {
        b.calls
            .iter()
            .filter(|c| c.ends_with(&suffix))
            .filter_map(|c| c.split(' ').next().map(str::to_owned))
            .collect()
    })
}

#[tokio::test(start_paused = true)]
async fn a_consumer_listed_again_is_enabled_before_its_check() {
    let (logs, _guard) = LogCapture::start();
    let mut w = World::new(&["forge", "wiki"]);
    w.passes(1).await;
    w.list(&["forge"]);
    // Withdrawn for ten minutes and five passes: retired.
    w.passes(122).await;
    assert!(w.fake.with(|b| b.provisions[&name("wiki")].retired));
    w.published();
    w.fake.with(|b| b.calls.clear());

    w.list(&["forge", "wiki"]);
    let report = w.runner.pass().await;
    assert_eq!(calls_for(&w, "wiki"), ["re_enable", "ensure", "check"]);
    assert_eq!(
        report.failed, 0,
        "wiki's first check after it is listed again passes"
    );
    assert_eq!(
        kinds(&w.published()),
        ["retirement:wiki:re-enabled"],
        "the re-enable event says it: no first-success-after-start"
    );
    let text = logs.text();
    assert!(!text.contains("provision failed"), "{text}");
    assert!(text.contains("re-enabled"), "{text}");
    assert_eq!(mended(&w), 0, "a retirement undone is no mend");
}

#[tokio::test(start_paused = true)]
async fn a_consumer_disabled_by_hand_is_mended_not_re_enabled() {
    let (logs, _guard) = LogCapture::start();
    let mut w = World::new(&["forge", "wiki"]);
    w.passes(2).await;
    w.published();
    assert_eq!(mended(&w), 0);

    // A person disables wiki's login; the loop never retired it.
    w.fake
        .with(|b| b.provisions.get_mut(&name("wiki")).unwrap().retired = true);
    let report = w.runner.pass().await;
    assert_eq!(report.failed, 0, "enabled before its check");
    assert!(!w.fake.with(|b| b.provisions[&name("wiki")].retired));
    assert_eq!(
        kinds(&w.published()),
        Vec::<String>::new(),
        "no retirement event"
    );
    assert_eq!(mended(&w), 1);
    let text = logs.text();
    assert!(text.contains("mended"), "{text}");
    assert!(text.contains("not retired by this provider"), "{text}");
    assert!(!text.contains("re-enabled"), "{text}");
}

#[tokio::test(start_paused = true)]
async fn a_rotated_secret_brought_to_the_backend_is_no_mend() {
    let (logs, _guard) = LogCapture::start();
    let mut w = World::new(&["forge", "wiki"]);
    w.passes(2).await;
    w.published();

    // The minted secret rotates: ensure brings it to the backend.
    w.secret("wiki", Some("pw-wiki-rotated\n"));
    let report = w.runner.pass().await;
    assert_eq!(report.failed, 0);
    assert_eq!(
        w.fake.with(|b| b.provisions[&name("wiki")].secret.clone()),
        "pw-wiki-rotated"
    );
    assert_eq!(mended(&w), 0, "a rotation is not counted as a mend");
    assert!(logs
        .text()
        .contains("brought the rotated secret to the backend"));
    w.passes(3).await;
    assert_eq!(mended(&w), 0);

    // A person changes wiki's password at the backend: that is a mend.
    w.fake
        .with(|b| b.provisions.get_mut(&name("wiki")).unwrap().secret = "set-by-hand".into());
    w.runner.pass().await;
    assert_eq!(mended(&w), 1);
    assert!(logs.text().contains("secret set to the minted one"));
    assert_eq!(kinds(&w.published()), Vec::<String>::new());
    assert!(!logs.text().contains("set-by-hand"));
}

/// The `alive` bodies among `published`.
fn alives(published: &[(String, Value)]) -> Vec<&Value> {
    published
        .iter()
        .filter(|(k, _)| k == "alive")
        .map(|(_, b)| b)
        .collect()
}

/// `mesh_provider_fault{class=...}` of each class as `/metrics` shows it.
fn fault_gauges(w: &World) -> Vec<String> {
    let text = w.runner.metrics().encode(&w.outbox);
    let mut lines: Vec<String> = text
        .lines()
        .filter(|l| l.starts_with("mesh_provider_fault{"))
        .map(str::to_owned)
        .collect();
    lines.sort();
    lines
}

#[tokio::test(start_paused = true)]
async fn an_administrator_refused_is_a_provider_fault_said_at_once_and_cleared_by_the_next_good_login(
) {
    let fake = FakeProvisioner {
        own_secrets: vec!["adm1n-pw".into()],
        ..FakeProvisioner::new()
    };
    let mut w = World::with(&["forge"], fake, Settings::default());
    w.passes(1).await;
    assert!(w.runner.publish_alive_if_due());
    let published = w.published();
    assert_eq!(alives(&published).len(), 1);
    assert!(
        alives(&published)[0].get("fault").is_none(),
        "no fault: not written"
    );
    assert!(
        fault_gauges(&w).iter().all(|l| l.ends_with(" 0")),
        "{:?}",
        fault_gauges(&w)
    );

    // The administrator's password changed: listing what it holds is refused.
    let refused = "password authentication failed for user \"mesh_admin\" (password adm1n-pw)";
    w.fake.with(|b| b.down = Some(FakeError::message(refused)));
    w.passes(1).await;
    let published = w.published();
    let alive = alives(&published);
    assert_eq!(
        alive.len(),
        1,
        "published at once, not after alive_every: {published:?}"
    );
    assert_eq!(
        alive[0]["fault"],
        json!({"class": "credentials-rejected",
               "error": "password authentication failed for user \"mesh_admin\" (password [redacted])",
               "since": "2026-10-05T00:00:05Z"}),
        "redacted, since the pass that found it"
    );
    assert!(
        fault_gauges(&w)
            .contains(&"mesh_provider_fault{class=\"credentials-rejected\"} 1".to_owned()),
        "{:?}",
        fault_gauges(&w)
    );

    // While it lasts: no extra alive; the regular one carries it, since kept.
    w.passes(3).await;
    assert!(
        alives(&w.published()).is_empty(),
        "a fault kept is not published again at once"
    );
    tokio::time::advance(Duration::from_secs(60)).await;
    assert!(w.runner.publish_alive_if_due());
    let published = w.published();
    assert_eq!(
        alives(&published)[0]["fault"]["since"],
        "2026-10-05T00:00:05Z"
    );

    // Another class: published at once, since the pass that found it.
    w.fake
        .with(|b| b.down = Some(FakeError::message("connection refused")));
    w.passes(1).await;
    let published = w.published();
    assert_eq!(alives(&published).len(), 1, "{published:?}");
    assert_eq!(alives(&published)[0]["fault"]["class"], "unreachable");
    assert_ne!(
        alives(&published)[0]["fault"]["since"],
        "2026-10-05T00:00:05Z"
    );

    // The next good login clears it, published at once.
    w.fake.with(|b| b.down = None);
    w.passes(1).await;
    let published = w.published();
    assert_eq!(alives(&published).len(), 1, "{published:?}");
    assert!(
        alives(&published)[0].get("fault").is_none(),
        "{published:?}"
    );
    assert!(
        fault_gauges(&w).iter().all(|l| l.ends_with(" 0")),
        "{:?}",
        fault_gauges(&w)
    );
}

#[tokio::test(start_paused = true)]
async fn a_refusal_that_is_no_administrators_trouble_is_no_provider_fault() {
    let mut w = World::new(&["forge"]);
    w.passes(1).await;
    w.published();
    w.fake
        .with(|b| b.down = Some(FakeError::message("permission denied to create role")));
    w.passes(2).await;
    assert!(alives(&w.published()).is_empty());
    assert!(fault_gauges(&w).iter().all(|l| l.ends_with(" 0")));
}

/// Told who it is (`--provider`), a runner knows it before any file was
/// read, serves nothing from a file naming another instance (logged once),
/// and serves again once the file names it.
#[tokio::test(start_paused = true)]
async fn a_runner_told_its_instance_serves_no_file_naming_another() {
    let me: mesh_sdk::ModuleId = "postgres@db-1".parse().unwrap();
    let w = World::new(&["forge"]);
    w.write_raw("{ not json");
    let (log, _guard) = LogCapture::start();
    let mut runner = Runner::new(
        w.fake.clone(),
        w.dir.path().join("contributions.json"),
        Settings::default(),
        Arc::new(Outbox::new()),
    )
    .for_provider(me.clone());
    assert_eq!(runner.provider(), Some(&me), "known before any good file");
    runner.pass().await;
    assert_eq!(w.fake.calls("ensure"), 0);

    // A file naming another instance: nothing is served, held not even asked.
    testing::write_contributions(
        &w.dir.path().join("contributions.json"),
        ("postgres", "db-2"),
        "postgres-database",
        &["forge"],
    );
    for _ in 0..3 {
        let report = runner.pass().await;
        assert_eq!(report.attempted, 0, "{report:?}");
    }
    assert_eq!((w.fake.calls("held"), w.fake.calls("ensure")), (0, 0));
    let reply = runner
        .approve(br#"{"v":1,"consumer":"forge","delete":false}"#)
        .await;
    assert!(
        !reply.ok && reply.detail.contains("naming this provider"),
        "{reply:?}"
    );
    let text = log.text();
    let said: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("names another provider instance"))
        .collect();
    assert_eq!(said.len(), 1, "logged once: {text}");
    assert!(said[0].contains("postgres@db-2"), "{}", said[0]);
    assert_eq!(runner.provider(), Some(&me));

    // Named again: served.
    w.list(&["forge"]);
    let report = runner.pass().await;
    assert_eq!((report.attempted, report.failed), (1, 0), "{report:?}");
}

/// The provider's own word on its fault (a hook's failed hello, say) is
/// published whole, its secrets removed: a fix at the end of a long reason
/// is not cut off at the 200 characters of a consumer's error.
#[tokio::test(start_paused = true)]
async fn a_providers_own_fault_is_published_whole_without_its_secrets() {
    let fake = FakeProvisioner {
        own_secrets: vec!["adm1n-pw".into()],
        ..FakeProvisioner::new()
    };
    let mut w = World::with(&["forge"], fake, Settings::default());
    let reason = format!(
        "cannot read /etc/mesh/credentials/x/admin-password (it held adm1n-pw before): {}; restart mesh-provide@cache-1 to read the new password",
        "y".repeat(300)
    );
    w.fake
        .with(|b| b.fault = Some((Class::SecretUnreadable, reason.clone())));
    w.passes(1).await;
    let published = w.published();
    let alive = alives(&published);
    let fault = &alive.last().expect("an alive")["fault"];
    assert_eq!(fault["class"], "secret-unreadable");
    let error = fault["error"].as_str().unwrap();
    assert_eq!(error, reason.replace("adm1n-pw", "[redacted]"));
    assert!(error.ends_with("restart mesh-provide@cache-1 to read the new password"));
}
