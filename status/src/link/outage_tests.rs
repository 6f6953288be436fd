//! The link's rounds through a bus outage of 60 s, on tokio's paused
//! clock, over a message source that behaves as the JetStream client does
//! (issue 31): the first pull ends in the server's `409 Server Shutdown`,
//! and every pull while the client is disconnected comes back empty and
//! without an error once its own expiry (the wait + 5 s) passes. And the
//! caught-up gauge's time over the same source, on the link's clock.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use async_trait::async_trait;
use mesh_runtime::{Stop, WallClock};

use super::{
    follow_messages, BusConnection, BusWatch, ConsumerPending, Delivery, DeliveryError,
    DeliveryErrorKind, LinkSettings, LinkState, Messages,
};
use crate::model::Received;
use crate::store::{Store, StoreError};

/// The bus, as the fake client sees it.
#[derive(Clone, Default)]
struct Bus {
    away: Arc<AtomicBool>,
    /// The server said it shuts down (once, at the start of the outage).
    shutdown_said: Arc<AtomicBool>,
    /// Asking for the consumer fails while the bus is away (the request
    /// times out): the link sets the consumer up again.
    lose_consumer: bool,
}

impl BusWatch for Bus {
    fn connection(&self) -> BusConnection {
        match self.away.load(Ordering::SeqCst) {
            true => BusConnection::Away("disconnected".to_owned()),
            false => BusConnection::Connected,
        }
    }
}

struct NoMessage;

#[async_trait]
impl Delivery for NoMessage {
    fn subject(&self) -> &str {
        ""
    }
    fn payload(&self) -> &[u8] {
        b""
    }
    fn stream_sequence(&self) -> u64 {
        0
    }
    fn stored_at(&self) -> Option<SystemTime> {
        None
    }
    async fn ack(&self) -> Result<(), DeliveryError> {
        Ok(())
    }
    async fn double_ack(&self) -> Result<(), DeliveryError> {
        Ok(())
    }
    async fn nak(&self, _: Duration) -> Result<(), DeliveryError> {
        Ok(())
    }
    async fn term(&self) -> Result<(), DeliveryError> {
        Ok(())
    }
}

#[async_trait]
impl Messages for Bus {
    type Message = NoMessage;

    async fn pull(
        &mut self,
        _batch: usize,
        wait: Duration,
    ) -> (Vec<NoMessage>, Option<DeliveryError>) {
        if !self.away.load(Ordering::SeqCst) {
            tokio::time::sleep(wait).await;
            return (Vec::new(), None);
        }
        if !self.shutdown_said.swap(true, Ordering::SeqCst) {
            return (
                Vec::new(),
                Some(DeliveryError::new(
                    DeliveryErrorKind::Other,
                    "409, Some(\"Server Shutdown\")",
                )),
            );
        }
        // The client's own expiry: nothing was asked of the server.
        tokio::time::sleep(wait + Duration::from_secs(5)).await;
        (Vec::new(), None)
    }

    async fn pending(&mut self) -> Result<ConsumerPending, DeliveryError> {
        if self.lose_consumer && self.away.load(Ordering::SeqCst) {
            tokio::time::sleep(Duration::from_secs(5)).await;
            return Err(DeliveryError::new(
                DeliveryErrorKind::TimedOut,
                "request timed out",
            ));
        }
        Ok(ConsumerPending::default())
    }
}

struct Kept;

#[async_trait]
impl Store for Kept {
    async fn apply(&mut self, _: &[Received]) -> Result<(), StoreError> {
        Ok(())
    }
    async fn stream_epoch(&mut self, _: &str, _: SystemTime) -> Result<u64, StoreError> {
        Ok(1)
    }
}

/// The log lines written while it is set as the default subscriber.
#[derive(Clone, Default)]
struct Lines(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Lines {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Lines {
    fn count(&self, text: &str) -> usize {
        String::from_utf8_lossy(&self.0.lock().unwrap())
            .matches(text)
            .count()
    }
}

const WORKS_AGAIN: &str = "pulling events works again";

#[tokio::test(start_paused = true)]
async fn no_line_says_pulling_works_again_while_the_bus_is_away_and_one_does_once_it_is_back() {
    outage(false).await;
}

/// The consumer looked up in vain during the outage: the link ends, to
/// be set up again (as `serve` does), and the outage is still said once
/// when it begins and once when it ends.
#[tokio::test(start_paused = true)]
async fn an_outage_through_setups_of_the_consumer_is_said_once_each_way() {
    outage(true).await;
}

async fn outage(lose_consumer: bool) {
    let lines = Lines::default();
    let writer = lines.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .finish();
    let _default = tracing::subscriber::set_default(subscriber);

    let bus = Bus {
        lose_consumer,
        ..Bus::default()
    };
    let state = Arc::new(LinkState::new());
    state.joined(Box::new(bus.clone()));
    state.store_answered();
    let stop = Stop::new();
    let settings = LinkSettings::default();
    let mut source = bus.clone();
    let (linked, stopping) = (Arc::clone(&state), stop.clone());
    let link = tokio::spawn(async move {
        // As serve does: a consumer lost is set up again, then followed.
        let mut setups = 0;
        loop {
            match follow_messages(&mut source, 1, &mut Kept, &settings, &linked, &stopping).await {
                super::Followed::Stopped => return (super::Followed::Stopped, setups),
                super::Followed::ConsumerLost => setups += 1,
            }
        }
    });

    tokio::time::sleep(Duration::from_secs(3)).await;
    assert!(state.ready().is_passing(), "{:?}", state.ready());
    bus.away.store(true, Ordering::SeqCst);
    // Every second of the 60-s outage: not ready, healthy, and no line
    // says pulling works again.
    for second in 1..=60 {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let ready = state.ready();
        assert!(
            !ready.is_passing() && ready.text().contains("not connected to the bus"),
            "{ready:?}"
        );
        assert!(
            state.health(Duration::from_secs(66)).is_passing(),
            "{second} s into the outage: {:?}",
            state.health(Duration::from_secs(66))
        );
        assert_eq!(lines.count(WORKS_AGAIN), 0, "{second} s into the outage");
    }
    assert_eq!(lines.count("cannot pull events; trying again"), 1);
    bus.away.store(false, Ordering::SeqCst);
    tokio::time::timeout(Duration::from_secs(30), async {
        while lines.count(WORKS_AGAIN) == 0 {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await
    .expect("pulling never said to work again after the bus came back");
    tokio::time::sleep(Duration::from_secs(10)).await;
    assert_eq!(lines.count(WORKS_AGAIN), 1, "said once");
    assert!(state.ready().is_passing(), "{:?}", state.ready());
    stop.request();
    let (followed, setups) = tokio::time::timeout(Duration::from_secs(30), link)
        .await
        .expect("the link stops")
        .unwrap();
    assert_eq!(followed, super::Followed::Stopped);
    assert_eq!(setups > 0, lose_consumer, "{setups} setups");
}

/// The value of the gauge `metric` (no labels) in a `/metrics` text.
fn gauge(text: &str, metric: &str) -> Option<f64> {
    text.lines()
        .find_map(|line| line.strip_prefix(metric)?.strip_prefix(' '))
        .and_then(|value| value.trim().parse().ok())
}

#[tokio::test(start_paused = true)]
async fn the_caught_up_gauge_is_the_wall_time_of_the_turn_on_the_links_clock() {
    let base = mesh_protocol::Timestamp::parse("2030-01-01T00:00:00Z").unwrap();
    let start = tokio::time::Instant::now();
    let state = Arc::new(LinkState::with_clock(WallClock::fixed(
        base.system_time(),
        start,
    )));
    let base_secs = base
        .system_time()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    let caught_up = || gauge(&state.encode(), "mesh_caught_up_timestamp_seconds");
    assert_eq!(caught_up(), Some(0.0), "not caught up before a pull");
    let stop = Stop::new();
    let settings = LinkSettings::default();
    let (linked, stopping) = (Arc::clone(&state), stop.clone());
    let link = tokio::spawn(async move {
        let mut source = Bus::default();
        follow_messages(&mut source, 1, &mut Kept, &settings, &linked, &stopping).await
    });
    // Each pull finds nothing waiting after its wait (2 s): every turn
    // catches up, at 2 s, 4 s, ... on the paused clock.
    for (at, seen) in [(3, 2.0), (5, 4.0), (601, 600.0)] {
        tokio::time::sleep_until(start + Duration::from_secs(at)).await;
        assert_eq!(
            caught_up(),
            Some(base_secs + seen),
            "{at} s after the start"
        );
    }
    stop.request();
    let followed = tokio::time::timeout(Duration::from_secs(30), link)
        .await
        .expect("the link stops within a pull wait")
        .unwrap();
    assert_eq!(followed, super::Followed::Stopped);
}
