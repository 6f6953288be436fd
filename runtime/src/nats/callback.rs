//! The event callback every mesh client installs: what the NATS client
//! tells about the connection, logged with the servers it talks to or
//! tries (shown without credentials); a server's refusal of a publish or
//! subscribe as an error (async-nats answers `Ok` to a refused publish and
//! reports the refusal here only); an outage said when it begins, every
//! [`REPEAT_EVERY`](super::outage::REPEAT_EVERY) while it lasts and when it
//! ends, not at every failed attempt ([`Outage`]).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use async_nats::{Event as NatsEvent, ServerError};
use tokio::time::Instant;

use super::outage::{Began, Outage, Say};

/// The callback's state: the servers as shown, what to check when the
/// credentials are refused, and the outage in progress.
#[derive(Debug)]
pub(crate) struct BusLog {
    servers: String,
    credentials: String,
    outage: Mutex<Outage>,
    refused: AtomicBool,
}

/// Whether a client error is the server refusing the credentials.
fn is_refusal(error: &async_nats::ClientError) -> bool {
    let text = error.to_string().to_lowercase();
    text.contains("authorization violation") || text.contains("authentication")
}

impl BusLog {
    /// The log of a client of `servers` (already without credentials),
    /// `credentials` saying what to check should they be refused
    /// ([`super::NatsArgs::credentials_to_check`]).
    pub(crate) fn new(servers: String, credentials: String) -> Arc<BusLog> {
        Arc::new(BusLog {
            servers,
            credentials,
            outage: Mutex::new(Outage::default()),
            refused: AtomicBool::new(false),
        })
    }

    /// Whether the server refused the credentials at the last attempt
    /// (until the client connects).
    pub(crate) fn credentials_refused(&self) -> bool {
        self.refused.load(Ordering::Relaxed)
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
            NatsEvent::ClientError(error) if is_refusal(error) => {
                let first = !self.refused.swap(true, Ordering::Relaxed);
                let say = outage.attempt_failed(now);
                if first || matches!(say, Say::Lasts { .. }) {
                    tracing::error!(
                        error = %error,
                        servers,
                        "the bus refused this client's credentials (authorization violation): \
                         check {}; trying again every {} s",
                        self.credentials,
                        super::outage::REFUSED_RECONNECT.as_secs()
                    );
                }
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
            NatsEvent::Connected => {
                self.refused.store(false, Ordering::Relaxed);
                match outage.connected(now) {
                    Say::Back { after, attempts } => tracing::info!(
                        servers,
                        away = %humantime::format_duration(after),
                        attempts,
                        "connected to the bus again"
                    ),
                    _ => tracing::info!(servers, "connected to the bus"),
                }
            }
            other => tracing::info!(event = %other, servers, "bus event"),
        }
    }
}
