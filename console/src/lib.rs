//! # mesh-console
//!
//! The mesh as web pages, read-only: what `mesh-controller status`, `node
//! show` and `history` say, over the same reads of the store
//! (`mesh-pg-store`) and the same engine (`mesh-status`), kept current in
//! open pages by one shared reader and server-sent events. It logs in to
//! the store as its reader role and never writes; it does not touch the
//! bus.
//!
//! Layers, bottom to top; a module imports only from layers below it
//! (checked by the root package's `tests/layers.rs`):
//! - `auth` (the token and the session cookie), `limits` (what clients
//!   without the token may hold, pure), `tls` (HTTPS), `pages` (a page's
//!   reads and rendering), `watch` (its series, `/healthz`, `/readyz`).
//! - `conns` (each connection served with a header-read timeout, those
//!   without the token bounded), `live` (the shared reader that keeps open
//!   pages current).
//! - `server` (the routes, the headers every answer carries).
//! - `cli`: the command line; the binary only calls [`run`].

// Nothing public by accident: what this crate offers is chosen.
#![warn(unreachable_pub)]

mod auth;
mod limits;
mod pages;
mod sessions;
mod tls;
mod tokens;
mod watch;

mod act;
mod conns;
mod live;

mod server;

mod cli;

/// The command line: the binary parses [`ConsoleCli`] and calls [`run`]; `xtask`
/// writes the man page and completions from [`command`].
pub use cli::{command, run, ConsoleCli, ConsoleRunError, CREDENTIALS, EXIT_CANNOT, NAME};

/// Why the console could not start (a [`ConsoleRunError::Console`]).
pub use server::ConsoleError;
/// Why its certificate or key could not be used.
pub use tls::ConsoleTlsError;
/// Why its token file could not be taken.
pub use tokens::TokenFileError;
