//! `mesh-postgres`: parses the command line and runs the provider (see
//! [`mesh_provider_postgres::cli`]).

use std::process::ExitCode;

use clap::Parser;
use mesh_provider_postgres::{cli, Cli};

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    match mesh_provider_postgres::run(cli).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("mesh-postgres: {}", mesh_sdk::internal::error_words(&error));
            ExitCode::from(cli::EXIT_CANNOT_RUN)
        }
    }
}
