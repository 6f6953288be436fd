//! `mesh-grants`: checks each grant from its consumer's own network
//! position, on mesh-runtime's program shell (see [`mesh_grants::cli`]).

use std::process::ExitCode;

use mesh_grants::cli::{run, GrantsCli};
use mesh_runtime::Program;

fn main() -> ExitCode {
    // The unit's bus password (systemd credential `nats-password`), before
    // the command line is read and before any thread starts.
    mesh_runtime::credentials::into_environment(&[mesh_runtime::credentials::NATS_PASSWORD]);
    Program::new("mesh-grants")
        .version(env!("CARGO_PKG_VERSION"))
        .run(|cli: GrantsCli, stop| run(cli, stop))
}
