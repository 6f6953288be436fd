//! The repair hook driven pass by pass on tokio's paused clock: the gate
//! stops calls to the backend while the fault lasts, a repair is verified
//! and published, failed repairs are braked 10, 20, 40 … minutes up to 6 hours.

use std::sync::Arc;
use std::time::Duration;

use mesh_sdk::internals::{FakeError, FakeProvisioner, FakeRepair};
use mesh_sdk::testing::Outbox;
use mesh_sdk::testing::{self, LogCapture};
use mesh_sdk::testing::{Runner, Settings, WallClock};
use mesh_sdk::{Name, Timestamp};
use serde_json::{json, Value};
use tokio::time::Instant;

const PASS: Duration = Duration::from_secs(5);
const T0: &str = "2026-10-05T00:00:00Z";

struct World {
    _dir: tempfile::TempDir,
    fake: FakeProvisioner,
    admin: FakeRepair,
    outbox: Arc<Outbox>,
    runner: Runner<FakeProvisioner>,
}

fn world(refused: bool, repair_works: bool) -> World {
    let dir = tempfile::tempdir().unwrap();
    for c in ["forge", "wiki"] {
        std::fs::write(dir.path().join(c), format!("pw-{c}")).unwrap();
    }
    let file = json!({"provider": {"module": "identity", "machine": "id-1"}, "consumers": [
        {"consumer": "forge", "machine": "app-1", "provision": "oidc-client", "secret_file": "forge"},
        {"consumer": "wiki", "machine": "app-2", "provision": "oidc-client", "secret_file": "wiki"}]});
    std::fs::write(dir.path().join("c.json"), file.to_string()).unwrap();
    let admin = FakeRepair::default();
    admin.with(|a| {
        a.refused = refused;
        a.repair_works = repair_works;
        a.password = "mesh-admin-secret".into();
    });
    let fake = FakeProvisioner {
        repair: Some(admin.clone()),
        ..FakeProvisioner::new()
    };
    let outbox = Arc::new(Outbox::new());
    let clock = WallClock::fixed(Timestamp::parse(T0).unwrap(), Instant::now());
    let runner = Runner::new(
        fake.clone(),
        dir.path().join("c.json"),
        Settings::default(),
        Arc::clone(&outbox),
    )
    .with_clock(clock);
    World {
        _dir: dir,
        fake,
        admin,
        outbox,
        runner,
    }
}

impl World {
    async fn passes(&mut self, n: usize) {
        mesh_sdk::testing::passes(&mut self.runner, n, PASS).await;
    }

    /// Every event published since the last call: (kind, body), oldest first.
    fn published(&self) -> Vec<(String, Value)> {
        testing::drain(&self.outbox)
    }

    fn backend_calls(&self) -> usize {
        self.fake.with(|b| b.calls.len())
    }
}

#[tokio::test(start_paused = true)]
async fn refused_on_start_repaired_verified_and_consumers_served() {
    let mut w = world(true, true);
    w.passes(1).await;
    let published = w.published();
    assert_eq!(published[0].0, "repair");
    assert_eq!(published[0].1["fault"], "admin-refused");
    assert_eq!(published[0].1["outcome"], "repaired");
    assert_eq!(published[0].1["next_attempt_at"], Value::Null);
    assert_eq!(published[0].1["said_at"], T0);
    assert!(published[0].1["detail"]
        .as_str()
        .unwrap()
        .contains("verified"));
    assert_eq!(
        w.admin.with(|a| (a.probes, a.repairs)),
        (2, 1),
        "probed, repaired, verified"
    );
    let recovered: Vec<&Value> = published
        .iter()
        .filter(|(k, _)| k == "recovered")
        .map(|(_, v)| v)
        .collect();
    assert_eq!(
        recovered.len(),
        2,
        "consumers served in the same pass: {published:?}"
    );
    assert!(!format!("{published:?}").contains("mesh-admin-secret"));
}

#[tokio::test(start_paused = true)]
async fn while_refused_the_backend_is_not_called_and_failed_repairs_are_braked() {
    let (logs, _guard) = LogCapture::start();
    let mut w = world(true, false);
    let mut published = Vec::new();
    // Thirteen hours of passes, every 5 seconds.
    for _ in 0..(13 * 720) {
        w.passes(1).await;
        published.extend(w.published());
    }
    assert_eq!(
        w.backend_calls(),
        0,
        "no consumer call, no listing, while the administrator is refused"
    );

    let t0 = Timestamp::parse(T0).unwrap();
    assert_eq!(
        mesh_sdk::internals::failed_repairs(&published, t0),
        mesh_sdk::internals::BRAKE_SCHEDULE,
        "10, 20, 40, 80, 160, 320, then 360 minutes"
    );
    let failed: Vec<&Value> = published
        .iter()
        .filter(|(k, v)| k == "repair" && v["outcome"] == "failed")
        .map(|(_, v)| v)
        .collect();
    assert_eq!(w.admin.with(|a| a.repairs), 7);
    assert!(failed[0]["detail"]
        .as_str()
        .unwrap()
        .contains("repair failed: bootstrap-admin failed"));

    // The brake's hold is published again every 15 minutes, so it never looks silent.
    let braked = published
        .iter()
        .filter(|(k, v)| k == "repair" && v["outcome"] == "braked")
        .count();
    assert!(braked > 30, "{braked}");

    // Consumers still count as failing, with the fault's class and message.
    let failing: Vec<&Value> = published
        .iter()
        .filter(|(k, _)| k == "failing")
        .map(|(_, v)| v)
        .collect();
    assert_eq!(failing[0]["class"], "credentials-rejected");
    assert_eq!(failing[0]["since"], T0);
    assert_eq!(failing[0]["said_at"], "2026-10-05T00:05:00Z");
    assert!(failing[0]["error"]
        .as_str()
        .unwrap()
        .starts_with("admin-refused: invalid_grant"));
    assert_eq!(
        failing.len(),
        2 * (1 + (13 * 60 - 5) / 15),
        "both consumers, every 15 minutes"
    );

    let all = format!("{published:?}{}", logs.text());
    assert!(
        !all.contains("mesh-admin-secret"),
        "the administrator's password leaked"
    );

    // Repaired by hand: the next probe (within 5 minutes) opens the gate.
    w.admin.with(|a| a.refused = false);
    w.passes(61).await;
    let published = w.published();
    assert!(
        published
            .iter()
            .any(|(k, v)| k == "repair" && v["outcome"] == "repaired"),
        "{published:?}"
    );
    let reasons: Vec<&Value> = published
        .iter()
        .filter(|(k, _)| k == "recovered")
        .map(|(_, v)| &v["reason"])
        .collect();
    assert_eq!(reasons, vec!["success", "success"]);
    assert!(w.backend_calls() > 0);
}

#[tokio::test(start_paused = true)]
async fn a_refused_consumer_asks_for_a_probe() {
    let mut w = world(false, true);
    w.passes(1).await;
    assert_eq!(w.admin.with(|a| a.probes), 1, "probed on start");
    w.published();
    // The administrator's password moves while a consumer is refused.
    w.admin.with(|a| a.refused = true);
    w.fake.with(|b| {
        b.fail_check.insert(
            Name::parse("wiki").unwrap(),
            FakeError::message("password authentication failed"),
        )
    });
    // The next probe comes a minute after the last one, not after 5 minutes.
    w.passes(12).await;
    assert_eq!(
        w.admin.with(|a| (a.probes, a.repairs)),
        (3, 1),
        "probe, repair, verify"
    );
    assert!(w
        .published()
        .iter()
        .any(|(k, v)| k == "repair" && v["outcome"] == "repaired"));
}
