//! # mesh-controller
//!
//! Derives who may publish what on the bus, follows every provider's events into
//! a store that survives it, and makes `status` stop printing "all well"
//! while a provider says it keeps failing a consumer. What `status` says and
//! how the link's rounds bring the events there is the status engine,
//! `mesh-status`; this crate runs it over PostgreSQL and JetStream.
//!
//! Layers, bottom to top; a module imports only from layers below it
//! (checked, as in every crate of the workspace, by the root package's
//! `tests/layers.rs`):
//! - `bus` (NATS names and connection): I/O. The store (PostgreSQL,
//!   numbered migrations: the engine's `Store`) is its own crate,
//!   `mesh-pg-store`, which `mesh-console` reads too.
//! - `link` (`serve`: the JetStream stream into the store, by the engine's
//!   rounds), `approve` (a person's approval sent to a provider),
//!   `permissions` (bus permissions derived from the declaration, rendered
//!   as a nats-server configuration), `contributions` (each provider's
//!   contributions file derived from the declaration, its secrets minted),
//!   `plan` (what a new declaration would change).
//! - `cli`: the command line; the binary only calls [`run`] and [`outcome`].
//!
//! Every module is private to the crate: the library exists for the binary
//! and for this crate's integration tests and benches, which reach only
//! what is re-exported below.

// Nothing public by accident: what this crate offers is chosen.
#![warn(unreachable_pub)]

pub(crate) mod bus;

pub(crate) mod approve;
pub(crate) mod contributions;
pub(crate) mod link;
pub(crate) mod permissions;
pub(crate) mod plan;

pub(crate) mod cli;

/// The command line (the binary's [`run`] and [`outcome`]; the tests
/// drive the commands through [`run`] and [`exit`]; `xtask` writes the man
/// page and completions from [`command`]).
pub use cli::{
    command, exit, outcome, run, Cli, CliError, Io, CREDENTIALS, EXIT_CANNOT, EXIT_NOT_DONE,
    EXIT_OK, NAME,
};

/// The bus names `serve` uses and how it connects (the link's tests set up
/// a nats-server with them).
pub use bus::{NatsOptions, DURABLE, GRANT_SUBJECTS, STREAM, STREAM_SUBJECTS};

/// `serve` and its pieces over JetStream (the link's tests and the
/// ingest and cluster benches).
pub use link::{consumer_config, ensure_consumer, follow, serve, Following, LinkError, SetupError};

/// Bus permissions derived from the declaration (the permission tests).
pub use permissions::{
    derive, read_credentials, render_nats, Credential, CredentialNeed, Credentials,
    CredentialsError, LeftOut, Role, Rules, UserPermissions,
};

/// Installs the `tracing` subscriber (the one every mesh binary uses).
pub use mesh_runtime::log::init_tracing;
