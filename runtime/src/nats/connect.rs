//! Connecting: as a provider (its own inbox prefix), or as any other mesh
//! client with its own name and inbox prefix, reconnecting forever.

use mesh_protocol::subject::inbox_prefix;
use mesh_protocol::ModuleId;

use super::args::{connect_options, NatsArgs};
use super::error::BusError;

/// Connects as `provider`: its own inbox prefix (`_INBOX.<machine>.<module>`)
/// and [`connect_options`], reconnecting forever to any server of the list.
/// Returns at once even when the servers are down: events are kept pending
/// until one answers.
///
/// # Errors
/// [`BusError`] when the flags are wrong, a file cannot be read or the
/// servers are invalid.
pub async fn connect(nats: &NatsArgs, provider: &ModuleId) -> Result<async_nats::Client, BusError> {
    connect_as(
        nats,
        &format!("mesh provider {provider}"),
        &inbox_prefix(&provider.machine, &provider.module),
    )
    .await
}

/// Connects as `name` with its own `inbox_prefix` (the grant agent's is
/// `_INBOX.<machine>._grants`) and [`connect_options`], reconnecting
/// forever, like [`connect`].
///
/// # Errors
/// [`BusError`] when the credentials cannot be read or the URL is invalid.
pub async fn connect_as(
    nats: &NatsArgs,
    name: &str,
    inbox_prefix: &str,
) -> Result<async_nats::Client, BusError> {
    let servers = nats.servers()?;
    connect_options(nats, name, inbox_prefix)
        .await?
        .retry_on_initial_connect()
        .connect(servers)
        .await
        .map_err(|source| {
            BusError::connect(nats.shown_servers(), &nats.credentials_to_check(), source)
        })
}
