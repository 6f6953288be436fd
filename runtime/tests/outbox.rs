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

/// A sink that takes `delay` to acknowledge each event (a bus's round trip).
struct SlowSink {
    inner: RecordingSink,
    delay: Duration,
}

#[async_trait::async_trait]
impl mesh_runtime::outbox::EventSink for SlowSink {
    async fn publish(
        &self,
        subject: &str,
        msg_id: &str,
        body: bytes::Bytes,
    ) -> Result<(), mesh_runtime::outbox::SinkError> {
        tokio::time::sleep(self.delay).await;
        self.inner.publish(subject, msg_id, body).await
    }
}

/// Events put while an earlier one is being sent go out as soon as it is
/// acknowledged, not a retry period later: the second and third `failing`
/// of a pass once reached the bus 2 s after the first.
#[tokio::test(start_paused = true)]
async fn events_put_while_one_is_in_flight_are_sent_at_once_not_after_the_retry_period() {
    let outbox = Arc::new(Outbox::new());
    let sink = RecordingSink::default();
    let (stop, stopped) = oneshot::channel::<()>();
    let publisher = tokio::spawn(publish_loop(
        Arc::clone(&outbox),
        Arc::new(SlowSink {
            inner: sink.clone(),
            delay: Duration::from_millis(10),
        }),
        Duration::from_secs(2),
        async {
            let _ = stopped.await;
        },
    ));
    let subject = "mesh.event.db-1.postgres.provisioner.recovered";
    outbox.put(subject.into(), &recovered("a", RecoveredReason::Success));
    settle().await;
    // `a` is in flight now; `b` and `c` come during its round trip.
    advance(Duration::from_millis(1)).await;
    outbox.put(subject.into(), &recovered("b", RecoveredReason::Success));
    outbox.put(subject.into(), &recovered("c", RecoveredReason::Success));
    for _ in 0..10 {
        advance(Duration::from_millis(10)).await;
        settle().await;
    }
    let sent: Vec<String> = sink
        .events()
        .iter()
        .map(|(_, v)| v["consumer"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        sent.len(),
        3,
        "within 100 ms, not the 2 s retry period: {sent:?}"
    );
    assert!(outbox.is_empty());
    let _ = stop.send(());
    assert_eq!(publisher.await.unwrap(), 0);
}
