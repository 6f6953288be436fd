//! How a mesh client reaches NATS (docs/contracts/bus.md#connections-and-inbox-prefixes): the
//! servers of one cluster, how the client proves who it is (a user and
//! password, a `.creds` file, an nkey seed, or a user and password inside
//! the URLs), and TLS (a CA to check the server, a client certificate for
//! mutual TLS).
//!
//! [`NatsArgs`] are the flags, the same on every mesh binary;
//! [`NatsArgs::servers`] and [`connect_options`] check them and read every
//! file before a connection is tried, so a wrong flag ends the start with a
//! clear error instead of a connection retried forever. Neither a secret
//! (password, seed) nor a password inside a URL is ever part of an error or
//! a log line, and a URL's user and password never reach the NATS client
//! inside the URL. Every connection logs what the server refuses (a refused
//! publish is otherwise silent) and its disconnects and reconnects.
//!
//! ```no_run
//! use mesh_protocol::ModuleId;
//! use mesh_runtime::nats::{connect, NatsArgs};
//!
//! # async fn run() -> Result<(), mesh_runtime::BusError> {
//! let nats = NatsArgs {
//!     url: "nats://127.0.0.1:4222".into(),
//!     ..NatsArgs::default()
//! };
//! let provider = ModuleId::parse("postgres@db-1").expect("a module id");
//! let client = connect(&nats, &provider).await?;
//! # drop(client);
//! # Ok(())
//! # }
//! ```

mod approve;
mod args;
mod callback;
mod connect;
mod error;
mod outage;
mod servers;

pub use approve::{approve, ApproveAnswer, ApproveError};
pub use args::{connect_options, NatsArgs};
pub use connect::{connect, connect_as};
pub use error::BusError;
pub use servers::ServerListError;
