//! # mesh-controller
//!
//! Derives who may say what on the bus, follows every provider's events into
//! a store that survives it, and makes `status` stop printing "all well"
//! while a provider says it keeps failing a consumer.
//!
//! - [`declaration`]: the declaration, parsed entry by entry.
//! - [`permissions`]: bus permissions derived from it (pure), rendered as a
//!   nats-server configuration.
//! - [`link`]: `serve`, the JetStream stream and durable consumer into the
//!   [`store`] (PostgreSQL, numbered migrations).
//! - [`status`]: the report of `status` and `node show` (pure composition).
//! - [`approve`]: a person's approval sent to a provider.
//! - [`cli`]: the command line; the binary only calls [`cli::run`].

pub mod approve;
pub mod bus;
pub mod cli;
pub mod declaration;
pub mod link;
pub mod permissions;
pub mod status;
pub mod store;

pub use declaration::{Declaration, ModuleId};
pub use link::LinkSettings;
pub use status::{Clock, Report, Scope};
pub use store::{DatabaseOptions, PgStore, Store};

/// Installs the `tracing` subscriber: human lines with fields on stderr,
/// filtered by `RUST_LOG` (default `default_level`).
pub fn init_tracing(default_level: &str) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default_level));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
}
