//! `mesh-controller`: parses the command line and runs it (see
//! [`mesh_controller::cli`]).

use std::process::ExitCode;

use clap::Parser;
use mesh_controller::cli::{exit, run, Cli, Command, Io, EXIT_CANNOT};

fn main() -> ExitCode {
    let cli = Cli::parse();
    mesh_controller::init_tracing(cli.default_log_level(), cli.log_format);
    // `serve` follows the stream for as long as it runs; the other commands
    // do one thing, and one thread does it without handing every database
    // message between threads.
    let mut builder = match cli.command {
        Command::Serve { .. } => tokio::runtime::Builder::new_multi_thread(),
        _ => tokio::runtime::Builder::new_current_thread(),
    };
    let runtime = match builder.enable_all().build() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("mesh-controller: cannot start the async runtime: {error}");
            return ExitCode::from(EXIT_CANNOT);
        }
    };
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::with_capacity(1 << 16, stdout.lock());
    let mut err = std::io::stderr();
    let mut io = Io {
        out: &mut out,
        err: &mut err,
        now: mesh_protocol::Timestamp::now(),
    };
    let result = runtime.block_on(run(&cli, &mut io));
    ExitCode::from(exit(result, &mut io))
}
