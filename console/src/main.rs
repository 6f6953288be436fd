//! `mesh-console`: parses the command line and serves (see
//! [`mesh_console::run`]) on mesh-runtime's program shell.

use std::process::ExitCode;

use mesh_console::{run, ConsoleCli, EXIT_CANNOT, NAME};
use mesh_runtime::{Program, ProgramFailure};

fn main() -> ExitCode {
    // The unit's store password and token (systemd credentials), before
    // the command line is read and before any thread starts.
    mesh_runtime::credentials::into_environment(&mesh_console::CREDENTIALS);
    Program::new(NAME)
        .version(env!("CARGO_PKG_VERSION"))
        .cannot_run(EXIT_CANNOT)
        .run(|cli: ConsoleCli, stop| async move {
            run(cli, stop).await.map_err(|error| {
                ProgramFailure::new(EXIT_CANNOT, mesh_runtime::redact::error_text(&error))
            })
        })
}
