//! # mesh-grants
//!
//! A grant is what the mesh writes on a consumer's machine so it can reach a
//! provider: an address, a port, a role. The mesh composed it, so it can
//! check it — from where the consumer stands. `mesh-grants` runs on each
//! consumer's machine and, every check, opens a TCP connection to each
//! grant's address and port from inside that consumer's own network
//! namespace (record 143: a check run from the machine's own position can
//! pass while every container on it is refused).
//!
//! - [`file`](mod@file): the grants file, re-read every check, last good list kept.
//! - [`dial`]: one connection from inside a network namespace (`setns` on a
//!   dedicated thread), or a container's, found through its runtime.
//! - [`standing`]: what to publish about one grant (pure, on mesh-runtime's
//!   streak machinery).
//! - [`agent`]: a round of checks and the events it puts on the outbox.
//! - [`cli`]: the command line and the run.

// Nothing public by accident: what this crate offers is chosen.
#![warn(unreachable_pub)]

pub mod agent;
pub mod cli;
pub mod dial;
pub mod file;
pub mod standing;

pub use agent::{Agent, GrantsSettings, Round};
pub use file::{Grant, MachineGrants, Position};
pub use standing::{GrantCheck, GrantRules, GrantStanding};
