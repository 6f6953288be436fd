//! `mesh-identity`: the SDK's provider main around the Keycloak
//! provisioner (see [`mesh_provider_identity::cli`]).

use std::process::ExitCode;

use mesh_provider_identity::cli;

fn main() -> ExitCode {
    cli::MAIN.run(cli::provisioner)
}
