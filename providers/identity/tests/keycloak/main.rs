//! Every test against a real Keycloak 26 (`kc.sh start --optimized` on a
//! private PostgreSQL, from the distribution `scripts/lib.sh`'s
//! `ensure_keycloak` fetched and built), in one binary so that one server
//! ([`KeycloakServer::shared`]) serves them all: a Keycloak boot is a JVM's
//! half-minute to a minute of a core, paid once instead of once a binary.
//! Without a distribution every test says `SKIPPED: no Keycloak (...)` and
//! passes.
//!
//! - [`clients`]: the provider's own code paths, a realm per test.
//! - [`repair`]: the `admin-refused` repair through the distribution's own
//!   `kc.sh bootstrap-admin`, beside the live server.
//! - [`end_to_end`]: the built binaries (`mesh-identity`, the controller)
//!   on the bus, status as the operator reads it.
//!
//! The tests that change realm `master` (its brute-force settings, its
//! administrators, the repair's temporary ones) take turns ([`TURN`]); the
//! others each work in a realm of their own and run beside them.

mod clients;
mod end_to_end;
mod repair;

#[allow(unused_imports)] // for the links above
use mesh_test_support::KeycloakServer;

/// One test at a time of those that change realm `master` for everyone.
static TURN: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
