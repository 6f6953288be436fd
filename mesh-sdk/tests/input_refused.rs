//! What the contributions file refused, said in `alive` (driven pass by
//! pass on tokio's paused clock): a file that cannot be taken, an entry
//! refused, each said at once when it changes; and a provider told who it
//! is that cannot take its file at start says so before any pass.

use std::sync::Arc;
use std::time::Duration;

use mesh_protocol::ModuleId;
use mesh_sdk::internals::FakeProvisioner;
use mesh_sdk::testing::{self, Outbox, Runner, Settings, WallClock};
use mesh_sdk::Timestamp;
use serde_json::{json, Value};
use tokio::time::Instant;

const PASS: Duration = Duration::from_secs(5);
const T0: &str = "2026-10-05T00:00:00Z";

struct World {
    dir: tempfile::TempDir,
    outbox: Arc<Outbox>,
    runner: Runner<FakeProvisioner>,
}

impl World {
    /// `postgres@db-1` over a file not written yet; told who it is or not.
    fn new(told: bool) -> World {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("secrets")).unwrap();
        for c in ["forge", "wiki"] {
            std::fs::write(dir.path().join("secrets").join(c), format!("pw-{c}")).unwrap();
        }
        let outbox = Arc::new(Outbox::new());
        let settings = Settings {
            alive_every: Duration::from_secs(60),
            ..Settings::default()
        };
        let mut runner = Runner::new(
            FakeProvisioner::new(),
            dir.path().join("contributions.json"),
            settings,
            Arc::clone(&outbox),
        )
        .with_clock(WallClock::fixed(
            Timestamp::parse(T0).unwrap(),
            Instant::now(),
        ));
        if told {
            runner = runner.for_provider(ModuleId::parse("postgres@db-1").unwrap());
        }
        World {
            dir,
            outbox,
            runner,
        }
    }

    fn path(&self) -> std::path::PathBuf {
        self.dir.path().join("contributions.json")
    }

    fn list(&self, consumers: &[&str]) {
        testing::write_contributions(
            &self.path(),
            ("postgres", "db-1"),
            "postgres-database",
            consumers,
        );
    }

    /// One pass, the `alive` due published, the clock advanced.
    async fn pass(&mut self) {
        self.runner.pass().await;
        self.runner.publish_alive_if_due();
        tokio::time::advance(PASS).await;
    }

    /// The `contributions` of each `alive` published since the last call.
    fn said(&self) -> Vec<Value> {
        testing::drain(&self.outbox)
            .into_iter()
            .filter(|(kind, _)| kind == "alive")
            .map(|(_, body)| body["contributions"].clone())
            .collect()
    }
}

#[tokio::test(start_paused = true)]
async fn a_refused_entry_and_a_broken_file_are_said_in_alive_at_once_and_so_is_the_mend() {
    let mut w = World::new(false);
    w.list(&["forge", "wiki"]);
    w.pass().await;
    let good = json!({"readable": true, "problem": null, "refused": []});
    assert_eq!(w.said(), std::slice::from_ref(&good), "every alive says it");
    w.pass().await;
    assert_eq!(w.said(), Vec::<Value>::new(), "nothing new: not said again");

    // An entry refused: its index, its consumer and why, at the next pass.
    let text = std::fs::read_to_string(w.path()).unwrap().replacen(
        "\"provision\":\"postgres-database\"",
        "\"provision\":\"\"",
        1,
    );
    std::fs::write(w.path(), text).unwrap();
    w.pass().await;
    let refused = json!({"readable": true, "problem": null, "refused": [
        {"index": 0, "consumer": "forge", "reason": "provision: it is empty"}]});
    assert_eq!(w.said(), std::slice::from_ref(&refused));

    // The file broken: not readable, its problem named; the entries
    // refused in the list still served stay said. Said as the pass begins,
    // before its attempts (which may take their timeouts).
    std::fs::write(w.path(), "{ not json").unwrap();
    w.runner.pass().await;
    tokio::time::advance(PASS).await;
    let said = w.said();
    assert_eq!(said.len(), 1, "{said:?}");
    assert_eq!(said[0]["readable"], false);
    let problem = said[0]["problem"].as_str().unwrap();
    let file = w.path().display().to_string();
    assert!(
        problem.starts_with(&format!("contributions file {file} is malformed: ")),
        "{problem}"
    );
    assert!(!problem.contains("keeping"), "{problem}");
    assert_eq!(said[0]["refused"], refused["refused"]);
    w.pass().await;
    assert_eq!(
        w.said(),
        Vec::<Value>::new(),
        "said once, then with each alive due"
    );
    tokio::time::advance(Duration::from_secs(60)).await;
    w.pass().await;
    assert_eq!(w.said().len(), 1, "and in every alive while it lasts");

    // Mended: said at once.
    w.list(&["forge", "wiki"]);
    w.pass().await;
    assert_eq!(w.said(), [good]);
}

#[tokio::test(start_paused = true)]
async fn a_provider_told_who_it_is_says_a_broken_file_before_any_pass() {
    // Not told: a broken file at start leaves it silent (it cannot name itself).
    let mut silent = World::new(false);
    std::fs::write(silent.path(), "{ not json").unwrap();
    silent.pass().await;
    silent.pass().await;
    assert!(testing::drain(&silent.outbox).is_empty());
    assert!(silent.runner.provider().is_none());

    let mut w = World::new(true);
    std::fs::write(w.path(), "{ not json").unwrap();
    w.pass().await;
    let published = testing::drain(&w.outbox);
    assert_eq!(published.len(), 1, "{published:?}");
    let (kind, body) = &published[0];
    assert_eq!(kind, "alive");
    assert_eq!(body["consumers"], 0);
    assert_eq!(body["failing"], 0);
    assert_eq!(body["settled_at"], Value::Null);
    assert_eq!(body["contributions"]["readable"], false);
    assert_eq!(body["contributions"]["refused"], json!([]));
    let problem = body["contributions"]["problem"].as_str().unwrap();
    assert!(problem.contains("is malformed"), "{problem}");
    assert_eq!(
        w.runner.provider().map(ToString::to_string).as_deref(),
        Some("postgres@db-1")
    );
    // Again with each alive due, not with each pass.
    w.pass().await;
    assert!(w.said().is_empty());
    tokio::time::advance(Duration::from_secs(60)).await;
    w.pass().await;
    assert_eq!(w.said().len(), 1);

    // A file that is missing is said too.
    std::fs::remove_file(w.path()).unwrap();
    w.pass().await;
    let said = w.said();
    assert_eq!(said.len(), 1, "a new problem is said at once");
    assert!(
        said[0]["problem"]
            .as_str()
            .unwrap()
            .contains("cannot be read"),
        "{said:?}"
    );

    // The first good file: its first pass's alive says it is read.
    w.list(&["forge"]);
    w.pass().await;
    let published = testing::drain(&w.outbox);
    let alive: Vec<&Value> = published
        .iter()
        .filter(|(k, _)| k == "alive")
        .map(|(_, b)| b)
        .collect();
    assert_eq!(alive.len(), 1, "{published:?}");
    assert_eq!(alive[0]["consumers"], 1);
    assert_eq!(alive[0]["contributions"]["readable"], true);
}
