//! The identity provider against a fake Keycloak 26 and a fake container
//! runtime: provisioning, classification, the repair of a refused
//! administrator, the loop's gate and brake on tokio's paused clock, and
//! the binary's flags and exit codes.

mod binary;
mod fake_keycloak;
mod fake_runtime;
mod in_loop;
mod provisioning;
mod repair;
mod world;
