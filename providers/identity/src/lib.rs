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
//! clients it last saw (from the realm's listing, its lookups and what it
//! made), so a healthy pass asks Keycloak only for each consumer's login,
//! and the realm is listed at most once a minute (`--list-every`); a
//! refused check, a failed listing or a 404 makes it look again
//! ([`provisioner`] says how).
//!
//! Its known fault is `admin-refused` ([`AdminRepair`]): when Keycloak
//! refuses the mesh's administrator (a user's password, or a
//! service-account client's secret with `--admin-client-id`), the loop
//! stops calling Keycloak for consumers, and the repair sets the password
//! (or secret) to the mesh's through a temporary administrator made by
//! Keycloak's own `kc.sh bootstrap-admin`, removed afterwards.
//!
//! ## Operating it
//! - Where Keycloak runs decides how the repair reaches `kc.sh`: in a
//!   container (`--container`, the provider needs the right to run
//!   `<runtime> exec` on it: the `docker` group, or podman's socket), or on
//!   this host from its distribution, by hand or under systemd (`--kc-sh`,
//!   the provider runs as a user who may run it). Without either a refused
//!   administrator is said on `provisioner.repair`, but not repaired.
//! - `kc.sh bootstrap-admin` runs beside the live server (nothing is
//!   stopped) and must reach the same database: in a container `exec`
//!   hands it the container's `KC_DB*` variables and `keycloak.conf`; on
//!   the host give the provider the server's `KC_DB*` variables, or
//!   `--kc-config-file`. The server must use a real database (not
//!   start-dev's H2 file) and an image built for it (`--optimized` is
//!   passed); see [`bootstrap`].
//! - A temporary administrator is named `mesh-repair-<random>`; one that
//!   could not be removed is named in the repair's message (and logged).
//! - After the administrator is refused, its credentials are not tried
//!   again for 5 minutes, doubling to 2 hours ([`login_backoff`]): with brute-force
//!   protection on, the provider never locks the administrator out; the
//!   repair ends a lockout someone else caused.
//!
//! Layout: [`config`] (how Keycloak is reached, where the repair runs),
//! [`keycloak`] (the token endpoint and admin REST API), [`login_backoff`] (when
//! refused credentials are tried again), [`bootstrap`] (the bootstrap
//! command, in a container or on this host), [`classify`] (classes from
//! HTTP statuses and Keycloak's error codes), [`provisioner`] (the
//! [`mesh_sdk::Provisioner`]), [`repair`] (the [`mesh_sdk::Repair`]),
//! [`cli`] (the binary's flags and its main).

// Nothing public by accident: what this crate offers is chosen.
#![warn(unreachable_pub)]

pub mod bootstrap;
pub mod classify;
pub mod cli;
pub mod config;
pub mod error;
pub mod keycloak;
mod known;
pub mod login_backoff;
pub mod provisioner;
pub mod repair;

pub use bootstrap::{ContainerCli, Runtime};
pub use cli::IdentityFlags;
pub use config::{AdminLogin, IdentityConfig, IdentityConfigError};
pub use error::{IdentityError, MARK, PROVISION};
pub use provisioner::IdentityProvisioner;
pub use repair::{AdminRepair, RepairError, FAULT};
