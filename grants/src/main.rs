//! `mesh-grants`: checks each grant from its consumer's own network position.

use std::process::ExitCode;

use clap::Parser;
use mesh_grants::cli::{run, Cli};
use mesh_runtime::log::init_tracing;
use mesh_runtime::redact::error_words;

/// Exit code of an agent that cannot start.
const EXIT_CANNOT_RUN: u8 = 1;

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
            return ExitCode::from(EXIT_CANNOT_RUN);
        }
    };
    match runtime.block_on(run(cli)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("mesh-grants: {}", error_words(&error));
            ExitCode::from(EXIT_CANNOT_RUN)
        }
    }
}
