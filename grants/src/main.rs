//! `mesh-grants`: checks each grant from its consumer's own network position.

use std::process::ExitCode;

use clap::Parser;
use mesh_grants::cli::{run, Cli};
use mesh_sdk::internal::{error_words, init_tracing};

fn main() -> ExitCode {
    let cli = Cli::parse();
    init_tracing("info", cli.log_format);
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("mesh-grants: {}", error_words(&error));
            return ExitCode::from(mesh_sdk::EXIT_CANNOT_RUN);
        }
    };
    match runtime.block_on(run(cli)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("mesh-grants: {}", error_words(&error));
            ExitCode::from(mesh_sdk::EXIT_CANNOT_RUN)
        }
    }
}
