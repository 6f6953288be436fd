//! The event callback every mesh client installs: what the NATS client
//! tells about the connection, logged; a server's refusal of a publish or
//! subscribe as an error (async-nats answers `Ok` to a refused publish and
//! reports the refusal here only).

use async_nats::{Event as NatsEvent, ServerError};

/// Logs what the client tells about the connection; a permission refusal
/// as an error (a refused announcement is never silent).
pub(crate) fn log_event(event: &NatsEvent) {
    match event {
        NatsEvent::ServerError(ServerError::Other(text))
            if text.to_lowercase().contains("permissions violation") =>
        {
            tracing::error!(error = %text, "the bus refused a publish or subscribe: check the derived permissions");
        }
        NatsEvent::ServerError(error) => tracing::error!(error = %error, "bus server error"),
        NatsEvent::ClientError(error) => tracing::error!(error = %error, "bus client error"),
        NatsEvent::Disconnected => {
            tracing::warn!("disconnected from the bus; events are kept pending until it is back")
        }
        NatsEvent::Connected => tracing::info!("connected to the bus"),
        other => tracing::info!(event = %other, "bus event"),
    }
}
