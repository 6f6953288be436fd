//! `mesh-identity`: parses the command line and runs the provider (see
//! [`mesh_provider_identity::cli`]).

use std::process::ExitCode;

use clap::Parser;
use mesh_provider_identity::{cli, Cli};

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    match mesh_provider_identity::run(cli).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("mesh-identity: {}", mesh_sdk::internal::error_words(&error));
            ExitCode::from(cli::EXIT_CANNOT_RUN)
        }
    }
}
