//! `mesh-provide`: the SDK's provider main around a hook (see [`mesh_provide::cli`]).

use std::process::ExitCode;

fn main() -> ExitCode {
    mesh_provide::cli::main()
}
