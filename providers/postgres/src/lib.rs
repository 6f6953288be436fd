//! # mesh-provider-postgres
//!
//! The PostgreSQL provider of the mesh (`mesh-postgres`, provision
//! `postgres-database`): for each consumer, a role and a database both named
//! after it, the role owning the database, its password the consumer's
//! minted secret. Built on the [`mesh_sdk`] loop: a [`PostgresProvisioner`]
//! makes what is missing, proves each provision by logging in as the
//! consumer, and retires, re-enables or (on approval) deletes what it made,
//! and only what it made.
//!
//! Layout: [`config`] (how PostgreSQL is reached), [`sql`] (every statement,
//! built from quoted names), [`plan`] (what to do about a name, decided
//! without I/O), [`classify`] (classes from SQLSTATEs and io error kinds),
//! [`provisioner`] (the [`mesh_sdk::Provisioner`]), [`cli`] (the binary's
//! flags and its main).

// Nothing public by accident: what this crate offers is chosen.
#![warn(unreachable_pub)]

mod admin;
pub mod classify;
pub mod cli;
pub mod config;
pub mod error;
pub mod plan;
pub mod provisioner;
pub mod sql;

pub use cli::PostgresFlags;
pub use config::{PostgresConfig, PostgresConfigError};
pub use error::PostgresError;
pub use plan::PROVISION;
pub use provisioner::PostgresProvisioner;
