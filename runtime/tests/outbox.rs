//! The outbox and its publisher on tokio's paused clock: an event the bus
//! does not acknowledge stays pending, the newest per consumer wins, and it
//! is sent again until acknowledged.

use std::sync::Arc;
use std::time::Duration;

use mesh_protocol::event::RecoveredReason;
use mesh_runtime::outbox::publish_loop;
use mesh_runtime::testing::{recovered, RecordingSink};
use mesh_runtime::Outbox;
use tokio::sync::oneshot;
use tokio::time::advance;

/// Lets spawned tasks run until they wait on the clock again.
async fn settle() {
    for _ in 0..20 {
        tokio::task::yield_now().await;
    }
}

#[tokio::test(start_paused = true)]
async fn pending_while_the_bus_is_down_the_newest_is_sent_when_back() {
    let outbox = Arc::new(Outbox::new());
    let sink = RecordingSink::default();
    sink.set_down(true);
    let (stop, stopped) = oneshot::channel::<()>();
    let publisher = tokio::spawn(publish_loop(
        Arc::clone(&outbox),
        Arc::new(sink.clone()),
        Duration::from_secs(1),
        async {
            let _ = stopped.await;
        },
    ));
    outbox.put(
        "mesh.event.db-1.postgres.provisioner.recovered".into(),
        &recovered("a", RecoveredReason::FirstSuccessAfterStart),
    );
    outbox.put(
        "mesh.event.db-1.postgres.provisioner.recovered".into(),
        &recovered("b", RecoveredReason::FirstSuccessAfterStart),
    );
    settle().await;
    advance(Duration::from_secs(10)).await;
    settle().await;
    assert!(sink.events().is_empty());
    assert_eq!(outbox.len(), 2, "pending, not dropped");

    // A newer event for `a` replaces the pending one.
    outbox.put(
        "mesh.event.db-1.postgres.provisioner.recovered".into(),
        &recovered("a", RecoveredReason::Success),
    );
    sink.set_down(false);
    advance(Duration::from_secs(1)).await;
    settle().await;
    let events = sink.events();
    assert_eq!(events.len(), 2, "{events:?}");
    let a: Vec<_> = events
        .iter()
        .filter(|(_, v)| v["consumer"] == "a")
        .collect();
    assert_eq!(a.len(), 1);
    assert_eq!(a[0].1["reason"], "success");
    assert!(outbox.is_empty());

    // Once acknowledged, nothing is sent again.
    advance(Duration::from_secs(10)).await;
    settle().await;
    assert_eq!(sink.events().len(), 2);
    let ids = sink.msg_ids.lock().unwrap().clone();
    assert_ne!(ids[0], ids[1]);

    let _ = stop.send(());
    assert_eq!(publisher.await.unwrap(), 0);
}

#[tokio::test(start_paused = true)]
async fn stopping_reports_what_is_still_pending() {
    let outbox = Arc::new(Outbox::new());
    let sink = RecordingSink::default();
    sink.set_down(true);
    outbox.put("s".into(), &recovered("a", RecoveredReason::Success));
    let left = publish_loop(
        Arc::clone(&outbox),
        Arc::new(sink),
        Duration::from_secs(1),
        async {},
    )
    .await;
    assert_eq!(left, 1);
    assert_eq!(outbox.len(), 1);
}
