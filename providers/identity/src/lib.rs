//! # mesh-provider-identity
//!
//! The identity provider of the mesh (`mesh-identity`, provision
//! `oidc-client`): for each consumer, a confidential client in a Keycloak
//! realm whose `clientId` is the consumer's name and whose secret is its
//! minted secret, with its service account enabled. Built on the
//! [`mesh_sdk`] loop: an [`IdentityProvisioner`] makes what is missing,
//! proves each client with a client-credentials login as the consumer
//! (setting the secret to the minted one once when it is refused), and
//! retires, re-enables or (on approval) deletes what it made, and only what
//! it made (clients marked with [`MARK`]). It remembers which of its
//! clients it last saw (from the listing it does once a pass, its lookups
//! and what it made), so a healthy pass asks Keycloak only for each
//! consumer's login and a few pages of the listing; a refused check, a
//! failed listing or a 404 makes it look again ([`provisioner`] says how).
//!
//! Its known fault is `admin-refused` ([`AdminRepair`]): when Keycloak
//! refuses the mesh's administrator password, the loop stops calling
//! Keycloak for consumers, and the repair sets the administrator's password
//! to the mesh's through Keycloak's own `kc.sh bootstrap-admin` in its
//! container and a temporary administrator that is removed afterwards.
//!
//! ## Operating it
//! - The provider needs the right to run `<runtime> exec` on Keycloak's
//!   container (membership of the `docker` group, or podman's socket);
//!   without `--container` a refused administrator is said on
//!   `provisioner.repair` every time, but not repaired.
//! - `kc.sh bootstrap-admin` must reach the same database as the server:
//!   give the database options as `KC_DB*` variables of the container (or
//!   in its `keycloak.conf`), which `exec` hands to the command.
//! - A temporary administrator is named `mesh-repair-<random>`; one that
//!   could not be removed is said in the repair's words (and logged) by name.
//! - After the administrator's login is refused, consumers do not log in
//!   again for 30 s ([`keycloak::REFUSED_HOLD`]): a pass with many consumers
//!   never becomes a burst of failed logins for brute-force protection to count.
//!
//! Layout: [`config`] (how Keycloak and its container are reached),
//! [`keycloak`] (the token endpoint and admin REST API), [`container`] (the
//! bootstrap command), [`classify`] (classes from HTTP statuses and
//! Keycloak's error codes), [`provisioner`] (the [`mesh_sdk::Provisioner`]),
//! [`repair`] (the [`mesh_sdk::Repair`]), [`cli`] (the binary's flags and
//! its main).

pub mod classify;
pub mod cli;
pub mod config;
pub mod container;
pub mod error;
pub mod keycloak;
mod known;
pub mod provisioner;
pub mod repair;

pub use cli::Flags;
pub use config::{ConfigError, IdentityConfig};
pub use container::ContainerCli;
pub use error::{IdentityError, MARK};
pub use provisioner::{IdentityProvisioner, PROVISION};
pub use repair::{AdminRepair, RepairError, FAULT};
