//! `recovered` (`withdrawn`) for a consumer the mesh stopped asking for that
//! the provider never made, and the `alive` word, on tokio's paused clock
//! with the SDK's fake provisioner.

use std::sync::Arc;
use std::time::Duration;

use mesh_sdk::testing::{self, kinds, FakeError, FakeProvisioner, Outbox};
use mesh_sdk::testing::{Runner, Settings, WallClock};
use mesh_sdk::{Name, Timestamp};
use serde_json::Value;
use tokio::time::Instant;

const PASS: Duration = Duration::from_secs(5);
const T0: &str = "2026-10-05T00:00:00Z";

struct World {
    dir: tempfile::TempDir,
    fake: FakeProvisioner,
    outbox: Arc<Outbox>,
    runner: Runner<FakeProvisioner>,
}

impl World {
    fn new(consumers: &[&str], settings: Settings) -> World {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("secrets")).unwrap();
        for c in consumers {
            std::fs::write(dir.path().join("secrets").join(c), format!("pw-{c}")).unwrap();
        }
        let fake = FakeProvisioner::new();
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

    fn list(&self, consumers: &[&str]) {
        let path = self.dir.path().join("contributions.json");
        testing::write_contributions(&path, ("postgres", "db-1"), "postgres-database", consumers);
    }

    /// The create of `consumer` is refused from now on.
    fn refuse(&self, consumer: &str) {
        let name = Name::parse(consumer).unwrap();
        self.fake.with(|b| {
            b.fail_ensure
                .insert(name, FakeError::words("permission denied to create role"))
        });
    }

    async fn passes(&mut self, n: usize) {
        testing::passes(&mut self.runner, n, PASS).await;
    }

    fn said(&self) -> Vec<(String, Value)> {
        testing::drain(&self.outbox)
    }
}

/// Passes until `failing_after` (5 min) has passed for a consumer failing from the start.
const TO_FAILING: usize = 62;

#[tokio::test(start_paused = true)]
async fn a_withdrawn_never_made_consumer_is_said_recovered_withdrawn_once() {
    let mut w = World::new(&["forge", "wiki"], Settings::default());
    w.refuse("forge");
    w.passes(TO_FAILING).await;
    let said = kinds(&w.said());
    assert!(
        said.contains(&"failing:forge:refused".to_owned()),
        "{said:?}"
    );
    assert_eq!(w.runner.standings(), 2);

    // Withdrawn while the file cannot be read that pass: nothing said.
    std::fs::write(w.dir.path().join("contributions.json"), "{ not json").unwrap();
    w.passes(3).await;
    assert_eq!(kinds(&w.said()), Vec::<String>::new());

    // The file is good again, without forge: recovered (withdrawn), once,
    // with what the provider last knew of it; the standing is forgotten.
    w.list(&["wiki"]);
    w.passes(1).await;
    let said = w.said();
    assert_eq!(kinds(&said), ["recovered:forge:withdrawn"]);
    assert_eq!(said[0].1["consumer_machine"], "app-1");
    assert_eq!(said[0].1["provision"], "postgres-database");
    assert_eq!(w.runner.standings(), 1);
    w.passes(5).await;
    assert_eq!(kinds(&w.said()), Vec::<String>::new(), "said once");

    // Listed again: a new standing, greeted again.
    w.fake.with(|b| b.fail_ensure.clear());
    w.list(&["forge", "wiki"]);
    w.passes(1).await;
    assert_eq!(
        kinds(&w.said()),
        ["recovered:forge:first-success-after-start"]
    );
}

#[tokio::test(start_paused = true)]
async fn a_withdrawn_consumer_never_said_failing_is_forgotten_quietly() {
    let mut w = World::new(&["forge", "wiki"], Settings::default());
    w.refuse("forge");
    w.passes(3).await;
    w.said();
    w.list(&["wiki"]);
    w.passes(2).await;
    assert_eq!(kinds(&w.said()), Vec::<String>::new());
    assert_eq!(w.runner.standings(), 1);
}

#[tokio::test(start_paused = true)]
async fn a_withdrawn_consumer_the_backend_holds_is_left_to_retirement() {
    let mut w = World::new(&["forge", "wiki"], Settings::default());
    w.passes(1).await;
    // Held, then failing for long enough, then withdrawn.
    w.fake.with(|b| {
        b.fail_check.insert(
            Name::parse("forge").unwrap(),
            FakeError::words("connection refused"),
        )
    });
    w.passes(TO_FAILING).await;
    w.said();
    w.list(&["wiki"]);
    w.passes(2).await;
    assert_eq!(
        kinds(&w.said()),
        Vec::<String>::new(),
        "retired later, not withdrawn"
    );
    assert_eq!(w.runner.standings(), 2);
}

#[tokio::test(start_paused = true)]
async fn alive_after_the_first_pass_then_every_alive_every_and_settled() {
    let settings = Settings {
        alive_every: Duration::from_secs(60),
        ..Settings::default()
    };
    let mut w = World::new(&["forge", "wiki"], settings);
    w.refuse("forge");
    assert!(
        !w.runner.say_alive_if_due(),
        "nothing before the first pass"
    );
    w.passes(1).await;
    assert!(w.runner.say_alive_if_due());
    let said = w.said();
    let alive: Vec<&Value> = said
        .iter()
        .filter(|(k, _)| k == "alive")
        .map(|(_, b)| b)
        .collect();
    assert_eq!(alive.len(), 1, "{said:?}");
    let body = alive[0];
    assert_eq!(body["v"], 1);
    assert_eq!(body["started_at"], T0);
    assert_eq!(body["alive_every_seconds"], 60);
    assert_eq!(body["failing_after_seconds"], 300);
    assert_eq!(body["settled_at"], Value::Null);
    assert_eq!(body["consumers"], 2);
    assert_eq!(body["failing"], 1);
    assert!(body["pass_seconds"].as_f64().unwrap() >= 0.0);
    assert!(!w.runner.say_alive_if_due(), "not again at once");

    // Every minute; settled at the end of the first pass that began 5
    // minutes after the first ended (first ended at 0 s: the pass at 300 s).
    let mut settled = None;
    for minute in 1..=7 {
        w.passes(12).await;
        assert!(w.runner.say_alive_if_due(), "minute {minute}");
        let said = w.said();
        let body = &said.iter().find(|(k, _)| k == "alive").unwrap().1;
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
