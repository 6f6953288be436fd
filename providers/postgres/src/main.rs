//! `mesh-postgres`: the SDK's provider main around the PostgreSQL
//! provisioner (see [`mesh_provider_postgres::cli`]).

use std::process::ExitCode;

use mesh_provider_postgres::cli;

fn main() -> ExitCode {
    cli::MAIN.start(cli::provisioner)
}
