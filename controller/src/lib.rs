//! # mesh-controller
//!
//! Derives who may publish what on the bus, follows every provider's events into
//! a store that survives it, and makes `status` stop printing "all well"
//! while a provider says it keeps failing a consumer.
//!
//! Layers, bottom to top; a module imports only from layers below it
//! (checked, as in every crate of the workspace, by the root package's
//! `tests/layers.rs`):
//! - [`model`]: plain types: the declaration, the events received and the rows,
//!   the pure reduction of a round of events.
//! - [`store`] (PostgreSQL, numbered migrations) and [`bus`] (NATS names and
//!   connection): I/O.
//! - [`link`] (`serve`: the JetStream stream into the store), [`approve`]
//!   (a person's approval sent to a provider), [`permissions`] (bus
//!   permissions derived from the declaration, rendered as a nats-server
//!   configuration), [`contributions`] (each provider's contributions file
//!   derived from the declaration, its secrets minted).
//! - [`report`]: what `status` and `node show` say (pure).
//! - [`render`]: the report printed for a person or as JSON, as it is read.
//! - [`cli`]: the command line; the binary only calls [`cli::run`] and
//!   [`cli::exit`].

pub mod model;

pub mod bus;
pub mod store;

pub mod approve;
pub mod contributions;
pub mod link;
pub mod permissions;

pub mod report;

pub mod render;

pub mod cli;

pub use link::LinkSettings;
pub use model::Declaration;
pub use report::{Clock, Scope};
pub use store::{DatabaseOptions, PgStore, Store};

/// Installs the `tracing` subscriber (the one every mesh binary uses).
pub use mesh_runtime::log::init_tracing;
