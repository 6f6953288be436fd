//! `mesh-controller`: parses the command line and runs it (see
//! [`mesh_controller::run`]) on mesh-runtime's program shell.

use std::process::ExitCode;

use mesh_controller::{outcome, run, Cli, Io, EXIT_CANNOT, NAME};
use mesh_runtime::Program;

fn main() -> ExitCode {
    // The unit's store and bus passwords (systemd credentials), before the
    // command line is read and before any thread starts.
    mesh_runtime::credentials::into_environment(&mesh_controller::CREDENTIALS);
    Program::new(NAME)
        .version(env!("CARGO_PKG_VERSION"))
        .cannot_run(EXIT_CANNOT)
        .run_parsed(
            Cli::parse_args(std::env::args_os()),
            |cli: Cli, stop| async move {
                let stdout = std::io::stdout();
                let mut out = std::io::BufWriter::with_capacity(1 << 16, stdout.lock());
                let mut err = std::io::stderr();
                let mut io = Io {
                    out: &mut out,
                    err: &mut err,
                    now: mesh_protocol::Timestamp::now(),
                };
                let result = run(&cli, &mut io, &stop).await;
                outcome(result, &mut io)
            },
        )
}
