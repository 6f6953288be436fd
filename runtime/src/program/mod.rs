//! The one program shell of every mesh binary: the command line (clap, with
//! env fallbacks), the log subscriber (`RUST_LOG`, `--log-format`), the
//! tokio runtime, the stop signals, the exit code, and the reason a program
//! could not run, written once on stderr as `<name>: <message>`.
//!
//! A program hands [`Program::run`] its `main`: an async function of its
//! parsed flags and a [`Stop`]. What it returns becomes the exit code:
//!
//! | end | exit code |
//! | --- | --- |
//! | `main` returned `Ok` (for a service: after a stop it obeyed) | 0 |
//! | `main` returned a [`ProgramFailure`] | the failure's code, its message on stderr (1, [`EXIT_CANNOT_RUN`], for any error turned into one with `?`) |
//! | the command line is bad | 2 ([`EXIT_USAGE`], clap's message on stderr); `--help` and `--version` exit 0 |
//! | a service not ended [`STOP_WITHIN`] after the first SIGINT/SIGTERM, or a second signal | 128 + the signal's number: 130 (SIGINT), 143 (SIGTERM), logged |
//!
//! Signals: a program whose flags say it is a *service* (it runs until
//! stopped: [`Flags::is_service`]) gets a multi-threaded runtime, and the
//! first SIGINT or SIGTERM requests its [`Stop`]; it ends its work
//! cancel-safely and returns. A one-shot command runs on one thread, and a
//! signal ends it at once, as it ends any command.
//!
//! ```no_run
//! use std::process::ExitCode;
//!
//! use clap::Parser;
//! use mesh_runtime::log::LogArgs;
//! use mesh_runtime::program::{Flags, Program};
//! use mesh_runtime::{LogFormat, Stop};
//!
//! /// Says hello every second until stopped.
//! #[derive(Parser)]
//! struct Cli {
//!     /// Whom to greet.
//!     #[arg(long, env = "HELLO_NAME")]
//!     name: String,
//!     #[command(flatten)]
//!     log: LogArgs,
//! }
//!
//! impl Flags for Cli {
//!     fn log_format(&self) -> LogFormat {
//!         self.log.format
//!     }
//! }
//!
//! fn main() -> ExitCode {
//!     Program::new("hello").run(|cli: Cli, stop: Stop| async move {
//!         while stop
//!             .run_until_stopped(tokio::time::sleep(std::time::Duration::from_secs(1)))
//!             .await
//!             .is_some()
//!         {
//!             tracing::info!(name = %cli.name, "hello");
//!         }
//!         Ok::<(), std::io::Error>(())
//!     })
//! }
//! ```

mod failure;
mod service;
mod signals;

use std::future::Future;
use std::process::ExitCode;
use std::time::Duration;

pub use failure::{ProgramFailure, EXIT_CANNOT_RUN};
pub use service::ServiceArgs;
pub use signals::{watch_signals, Signal, SignalWatch, STOP_WITHIN};

use crate::log::{init_tracing, LogFormat};
use crate::stop::Stop;

/// Exit code of a bad command line (clap's).
pub const EXIT_USAGE: u8 = 2;

/// What the shell reads of a program's parsed command line.
pub trait Flags {
    /// How log lines are written (`--log-format`, see [`crate::log::LogArgs`]).
    fn log_format(&self) -> LogFormat;

    /// The log level when `RUST_LOG` is not set: `info` unless overridden
    /// (a report on stdout may prefer `warn`).
    fn log_level(&self) -> &'static str {
        "info"
    }

    /// Whether the program runs until stopped (a service, the default):
    /// SIGINT and SIGTERM then request its [`Stop`], on a multi-threaded
    /// runtime. `false`: a one-shot command, on one thread, that a signal
    /// ends at once.
    fn is_service(&self) -> bool {
        true
    }
}

/// A mesh binary: its name (as its messages name it) and how it ends.
#[derive(Clone, Copy, Debug)]
pub struct Program {
    name: &'static str,
    version: Option<&'static str>,
    cannot_run: u8,
    stop_within: Duration,
}

impl Program {
    /// A binary called `name`.
    pub const fn new(name: &'static str) -> Program {
        Program {
            name,
            version: None,
            cannot_run: EXIT_CANNOT_RUN,
            stop_within: STOP_WITHIN,
        }
    }

    /// The exit code when the shell itself cannot run the program (no
    /// runtime, no signal handlers): [`EXIT_CANNOT_RUN`] unless the
    /// binary's documentation says another (the controller's is 2).
    pub const fn cannot_run(self, code: u8) -> Program {
        Program {
            cannot_run: code,
            ..self
        }
    }

    /// The program's version (its crate's `env!("CARGO_PKG_VERSION")`),
    /// which `/metrics` exports as `mesh_build_info{binary, version}`
    /// ([`crate::endpoints::BuildInfo`]); `unknown` when not given.
    pub const fn version(self, version: &'static str) -> Program {
        Program {
            version: Some(version),
            ..self
        }
    }

    /// The program's name.
    pub const fn name(&self) -> &'static str {
        self.name
    }

    /// Parses the process's arguments as `F` and runs `main` with them and
    /// the program's [`Stop`]; see the [module docs](self) for what it
    /// does and the exit codes.
    pub fn run<F, M, Fut, E>(self, main: M) -> ExitCode
    where
        F: clap::Parser + Flags,
        M: FnOnce(F, Stop) -> Fut,
        Fut: Future<Output = Result<(), E>>,
        E: Into<ProgramFailure>,
    {
        self.run_parsed(F::try_parse(), main)
    }

    /// Like [`run`](Program::run), for a command line the caller parsed
    /// (one built at run time, such as a provider's shared and own flags).
    pub fn run_parsed<F, M, Fut, E>(self, parsed: Result<F, clap::Error>, main: M) -> ExitCode
    where
        F: Flags,
        M: FnOnce(F, Stop) -> Fut,
        Fut: Future<Output = Result<(), E>>,
        E: Into<ProgramFailure>,
    {
        let flags = match parsed {
            Ok(flags) => flags,
            Err(error) => {
                let _ = error.print();
                return ExitCode::from(u8::try_from(error.exit_code()).unwrap_or(EXIT_USAGE));
            }
        };
        init_tracing(flags.log_level(), flags.log_format());
        crate::endpoints::BuildInfo::set(self.name, self.version.unwrap_or("unknown"));
        let service = flags.is_service();
        let mut builder = match service {
            true => tokio::runtime::Builder::new_multi_thread(),
            false => tokio::runtime::Builder::new_current_thread(),
        };
        let runtime = match builder.enable_all().build() {
            Ok(runtime) => runtime,
            Err(error) => {
                let message = format!(
                    "cannot start the async runtime: {}",
                    crate::redact::error_text(&error)
                );
                return self.end(Err(ProgramFailure::new(self.cannot_run, message)));
            }
        };
        let stop = Stop::new();
        let result = runtime.block_on(async {
            let _watch = match service {
                true => match watch_signals(&stop, self.stop_within) {
                    Ok(watch) => Some(watch),
                    Err(error) => {
                        let message = format!(
                            "cannot install the stop signal handlers: {}",
                            crate::redact::error_text(&error)
                        );
                        return Err(ProgramFailure::new(self.cannot_run, message));
                    }
                },
                false => None,
            };
            main(flags, stop.clone()).await.map_err(Into::into)
        });
        // A task still blocking (a read of stdin, a call the program gave
        // up on) does not hold the end back.
        runtime.shutdown_timeout(Duration::from_secs(1));
        self.end(result)
    }

    /// The exit code of `result`, its failure written on stderr.
    fn end(&self, result: Result<(), ProgramFailure>) -> ExitCode {
        match result {
            Ok(()) => ExitCode::SUCCESS,
            Err(failure) => {
                failure.report(self.name, &mut std::io::stderr());
                ExitCode::from(failure.code())
            }
        }
    }
}
