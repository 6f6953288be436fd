//! `mesh-grants`: checks each grant from its consumer's own network
//! position, on mesh-runtime's program shell (see [`mesh_grants::cli`]).

use std::process::ExitCode;

use mesh_grants::cli::{run, Cli};
use mesh_runtime::Program;

fn main() -> ExitCode {
    Program::new("mesh-grants")
        .version(env!("CARGO_PKG_VERSION"))
        .run(|cli: Cli, stop| run(cli, stop))
}
