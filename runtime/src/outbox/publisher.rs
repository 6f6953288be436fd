//! Drains the outbox into a sink, again and again until every event is acknowledged.

use std::sync::Arc;
use std::time::Duration;

use futures::stream::{self, StreamExt};

use super::{EventSink, Outbox};

/// Events in flight at once.
const IN_FLIGHT: usize = 256;

/// Sends pending events until `stop` resolves, retrying unacknowledged ones
/// every `retry_every`. On `stop` it makes one last attempt when the sink
/// can be reached (bounded by the sink's own ack timeout; none while the
/// bus is away, which would only wait that out) and returns how many events
/// are still pending.
pub async fn publish_loop(
    outbox: Arc<Outbox>,
    sink: Arc<dyn EventSink>,
    retry_every: Duration,
    stop: impl std::future::Future<Output = ()>,
) -> usize {
    tokio::pin!(stop);
    let mut failing = false;
    loop {
        // An attempt in flight at the stop is dropped (what it did not get
        // acknowledged stays pending): it may be waiting out its ack timeout.
        // Only events the bus did not acknowledge wait out `retry_every`;
        // those put while the attempt ran were not tried yet and go at once.
        let attempt = async {
            let drained = drain(&outbox, sink.as_ref(), &mut failing).await;
            if drained.refused > 0 {
                tokio::time::sleep(retry_every).await;
            } else if drained.pending == 0 {
                outbox.changed().await;
            }
        };
        tokio::select! {
            () = &mut stop => break,
            () = attempt => {}
        }
    }
    if sink.is_connected() {
        drain(&outbox, sink.as_ref(), &mut failing).await;
    }
    let left = outbox.len();
    if left > 0 {
        tracing::warn!(
            pending = left,
            "stopping with events still pending: not acknowledged by the bus"
        );
    }
    left
}

/// What one attempt left.
struct Drained {
    /// Events still pending: refused, or put while it ran.
    pending: usize,
    /// Events the bus did not acknowledge.
    refused: usize,
}

/// One attempt at every pending event.
async fn drain(outbox: &Outbox, sink: &dyn EventSink, failing: &mut bool) -> Drained {
    let pending = outbox.snapshot();
    if pending.is_empty() {
        return Drained {
            pending: 0,
            refused: 0,
        };
    }
    let results: Vec<_> = stream::iter(pending)
        .map(|(key, pending)| async move {
            let result = sink
                .publish(&pending.subject, &pending.msg_id, pending.body.clone())
                .await;
            (key, pending, result)
        })
        .buffer_unordered(IN_FLIGHT)
        .collect()
        .await;
    let mut refused = 0usize;
    let mut first_error = None;
    for (key, pending, result) in results {
        match result {
            Ok(()) => {
                tracing::debug!(subject = %pending.subject, kind = pending.kind.as_str(), "event acknowledged");
                outbox.done(&key, pending.seq);
            }
            Err(error) => {
                refused += 1;
                first_error.get_or_insert(error);
            }
        }
    }
    match first_error {
        Some(error) if !*failing => {
            *failing = true;
            tracing::warn!(pending = refused, error = %error, "events not acknowledged by the bus; kept pending and sent again");
        }
        None if *failing => {
            *failing = false;
            tracing::info!("bus acknowledges events again");
        }
        _ => {}
    }
    Drained {
        pending: outbox.len(),
        refused,
    }
}
