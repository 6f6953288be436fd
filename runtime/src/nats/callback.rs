//! The event callback every mesh client installs: what the NATS client
//! tells about the connection, logged with the servers it talks to or
//! tries (shown without credentials); a server's refusal of a publish or
//! subscribe as an error (async-nats answers `Ok` to a refused publish and
//! reports the refusal here only); an outage said when it begins, every
//! [`REPEAT_EVERY`](super::outage::REPEAT_EVERY) while it lasts and when it
//! ends, not at every failed attempt ([`Outage`]).

use std::sync::{Arc, Mutex};

use async_nats::{Event as NatsEvent, ServerError};
use tokio::time::Instant;

use super::outage::{Began, Outage, Say};

/// The callback's state: the servers as shown, and the outage in progress.
#[derive(Debug)]
pub(crate) struct BusLog {
    servers: String,
    outage: Mutex<Outage>,
}

impl BusLog {
    /// The log of a client of `servers` (already without credentials).
    pub(crate) fn new(servers: String) -> Arc<BusLog> {
        Arc::new(BusLog {
            servers,
            outage: Mutex::new(Outage::default()),
        })
    }

    /// Logs what the client tells about the connection.
    pub(crate) fn event(&self, event: &NatsEvent) {
        let servers = self.servers.as_str();
        let now = Instant::now();
        let mut outage = self.outage.lock().unwrap_or_else(|e| e.into_inner());
        match event {
            NatsEvent::ServerError(ServerError::Other(text))
                if text.to_lowercase().contains("permissions violation") =>
            {
                tracing::error!(error = %text, servers, "the bus refused a publish or subscribe: check the derived permissions");
            }
            NatsEvent::ServerError(error) => {
                tracing::error!(error = %error, servers, "bus server error")
            }
            NatsEvent::ClientError(error) => match outage.attempt_failed(now) {
                Say::Began(_) => tracing::warn!(
                    error = %error,
                    servers,
                    "cannot reach the bus; trying again"
                ),
                Say::Lasts { for_, attempts } => tracing::error!(
                    error = %error,
                    servers,
                    away = %humantime::format_duration(for_),
                    attempts,
                    "still cannot reach the bus"
                ),
                _ => tracing::debug!(error = %error, servers, "bus connection attempt failed"),
            },
            NatsEvent::Disconnected => {
                if let Say::Began(Began::Disconnected) = outage.disconnected(now) {
                    tracing::warn!(
                        servers,
                        "disconnected from the bus; events are kept pending until it is back"
                    )
                }
            }
            NatsEvent::Connected => match outage.connected(now) {
                Say::Back { after, attempts } => tracing::info!(
                    servers,
                    away = %humantime::format_duration(after),
                    attempts,
                    "connected to the bus again"
                ),
                _ => tracing::info!(servers, "connected to the bus"),
            },
            other => tracing::info!(event = %other, servers, "bus event"),
        }
    }
}
