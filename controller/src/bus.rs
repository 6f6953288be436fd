//! The controller's side of the bus: the names it uses (stream, durable
//! consumer, user, inbox prefix) and its connection. Subjects, the user and
//! the inbox prefix are mesh-protocol's.

use mesh_protocol::subject;

/// The JetStream stream holding every provider event.
pub const STREAM: &str = "MESH_EVENTS";

/// The stream's subject filter for provider events: a wildcard for the
/// emitter (machine, module) and the kind.
pub const STREAM_SUBJECTS: &str = subject::PROVISIONER_EVENTS;

/// The stream's subject filter for grant events (`mesh-grants`): a wildcard
/// for the emitter (machine, consumer) and the kind.
pub const GRANT_SUBJECTS: &str = subject::GRANT_EVENTS;

/// Every subject the stream takes. The controller's durable consumer has
/// no filter: it takes the whole stream (nats-server 2.9 ignores several
/// filters).
pub(crate) const EVENT_SUBJECTS: [&str; 2] = [STREAM_SUBJECTS, GRANT_SUBJECTS];

/// The controller's durable pull consumer on [`STREAM`].
pub const DURABLE: &str = "controller";

/// The controller's NATS user.
pub(crate) const CONTROLLER_USER: &str = subject::CONTROLLER_USER;

/// The controller's inbox prefix. A provider's is `_INBOX.<machine>.<module>`
/// and a name cannot start with `_`, so no provider's prefix reaches it.
pub(crate) const CONTROLLER_INBOX: &str = subject::CONTROLLER_INBOX;

/// How to reach the bus: mesh-runtime's transport flags (servers,
/// credentials, TLS), the same on the controller as on every provider.
pub type NatsOptions = mesh_runtime::NatsArgs;

/// The bus could not be set up; ends the command (exit 2). mesh-runtime's:
/// the controller connects with the same shared options as every provider.
pub(crate) use mesh_runtime::BusError;

/// How the connection behaves while the server is away.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Reconnect {
    /// Keep trying forever, also for the first connection (`serve`).
    Forever,
    /// Fail when the first connection fails (one-shot commands).
    FailFast,
}

/// Connects as the controller: inbox prefix [`CONTROLLER_INBOX`] (the only
/// subject it may subscribe to), and an event callback that logs refusals
/// (a refused publish or subscribe is never silent).
///
/// # Errors
/// [`BusError`] when the flags are wrong or a file they name cannot be
/// read, or (with [`Reconnect::FailFast`]) when no server can be reached.
pub(crate) async fn connect(
    options: &NatsOptions,
    reconnect: Reconnect,
) -> Result<async_nats::Client, BusError> {
    let servers = options.servers()?;
    let mut connect =
        mesh_runtime::nats::connect_options(options, "mesh-controller", CONTROLLER_INBOX).await?;
    if reconnect == Reconnect::Forever {
        connect = connect.retry_on_initial_connect();
    } else {
        // One attempt per server: async-nats counts every server tried.
        connect = connect.max_reconnects(Some(servers.len()));
    }
    connect.connect(servers).await.map_err(|source| {
        BusError::connect(
            options.shown_servers(),
            &options.credentials_to_check(),
            source,
        )
    })
}
