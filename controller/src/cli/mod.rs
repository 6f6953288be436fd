//! The command line of `mesh-controller`: [`Cli`] only parses and
//! validates; [`run`] does the work and returns `Ok` or a [`CliError`],
//! whose [`CliError::exit_code`] is the one place exit codes are decided.
//!
//! Exit codes: 0 done (for `status` / `node show`: the report was printed,
//! whatever it says); 1 `approve` refused or unanswered; 2 the command could
//! not be done (store, declaration, credentials or bus unusable), the reason
//! on stderr. Usage errors also exit 2 (clap).

mod contributions;
mod error;
mod permissions;
mod run;

use std::path::PathBuf;
use std::time::Duration;

use clap::{Parser, Subcommand, ValueEnum};
use mesh_protocol::{ModuleId, Name};
use mesh_runtime::endpoints::EndpointArgs;
use mesh_runtime::log::LogArgs;
use mesh_runtime::program::Flags;
use mesh_runtime::LogFormat;

use crate::bus::NatsOptions;
use crate::link::{DEFAULT_BATCH, DEFAULT_REPLICAS, MAX_REPLICAS};
use crate::model::declaration::{self, DeclarationError};
use crate::model::Parsed;
use crate::store::{DatabaseOptions, DatabaseOptionsError};

pub use contributions::ContributionsArgs;
pub use error::{CliError, EXIT_CANNOT, EXIT_NOT_DONE, EXIT_OK};
pub use run::{exit, outcome, run, Io};

/// The program's name, as its messages say it.
pub const NAME: &str = "mesh-controller";

/// The command line of `mesh-controller`, as clap sees it: for its man
/// pages and shell completions.
pub fn command() -> clap::Command {
    <Cli as clap::CommandFactory>::command()
}

/// Follows provider events into a store and reports them.
///
/// Secrets never go on the command line: the database password comes from
/// `--database-password-file` (or a URL in MESH_DATABASE_URL), the NATS
/// password from `--nats-password-file` (or an nkey seed from
/// `--nats-nkey-file`, a `.creds` file from `--nats-creds`).
#[derive(Parser, Debug, Clone, PartialEq, Eq)]
#[command(name = "mesh-controller", version)]
pub struct Cli {
    /// The store: a PostgreSQL URL (postgres://user@host:port/db) or key-value string.
    /// TLS as libpq: ?sslmode=disable, prefer (default), require, verify-ca or
    /// verify-full, and &sslrootcert=PATH (the CA's PEM file; required by
    /// verify-ca and verify-full, or sslrootcert=system).
    #[arg(long, env = "MESH_DATABASE_URL", hide_env_values = true, global = true)]
    pub database: Option<String>,

    /// File holding the store user's password.
    #[arg(long, env = "MESH_DATABASE_PASSWORD_FILE", global = true)]
    pub database_password_file: Option<PathBuf>,

    /// The declaration (JSON).
    #[arg(long, env = "MESH_DECLARATION", global = true)]
    pub declaration: Option<PathBuf>,

    /// How to reach NATS: servers, credentials, TLS (the same flags as every provider's).
    #[command(flatten)]
    pub nats: NatsOptions,

    /// `--log-format` (before or after the command).
    #[command(flatten)]
    pub log: LogArgs,

    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The commands.
#[derive(Subcommand, Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// Apply the numbered migrations.
    Migrate,
    /// Follow the events into the store (migrates first).
    Serve {
        /// Messages applied per transaction (and the consumer's max_ack_pending); 1 takes one at a time.
        #[arg(long, env = "MESH_BATCH", default_value_t = DEFAULT_BATCH, value_parser = parse_batch)]
        batch: usize,
        /// How long the event stream keeps a word nobody took (it drops a word as soon as the controller stored it).
        #[arg(long, env = "MESH_STREAM_MAX_AGE", default_value = "7d", value_parser = humantime::parse_duration)]
        stream_max_age: Duration,
        /// How many servers of a NATS cluster keep the event stream and the consumer (1-5);
        /// an existing stream with fewer is raised in place, never lowered.
        #[arg(long, env = "MESH_STREAM_REPLICAS", default_value_t = DEFAULT_REPLICAS, value_parser = parse_replicas)]
        stream_replicas: usize,
        /// `--metrics-listen`.
        #[command(flatten)]
        endpoints: EndpointArgs,
    },
    /// Show what providers say they keep failing.
    Status {
        /// Print one JSON object.
        #[arg(long)]
        json: bool,
        /// Mark a standing not said again for this long as silent.
        #[arg(long, default_value = "30m", value_parser = humantime::parse_duration)]
        silent_after: Duration,
    },
    /// Per machine.
    Node {
        /// What to do with the machine.
        #[command(subcommand)]
        command: NodeCommand,
    },
    /// Print the bus permissions derived from the declaration.
    Permissions {
        /// `json`: the permission sets; `nats`: a nats-server configuration (needs --credentials).
        #[arg(long, value_enum, default_value_t = Format::Json)]
        format: Format,
        /// Folder holding one password file per user (`DIR/<user>`).
        #[arg(long)]
        credentials: Option<PathBuf>,
    },
    /// Write each provider's contributions file from the declaration, minting missing secrets.
    Contributions(ContributionsArgs),
    /// Approve retiring (or, with --delete, deleting) a withdrawn consumer.
    Approve {
        /// The provider, `module@machine`.
        #[arg(value_parser = ModuleId::parse)]
        provider: ModuleId,
        /// The consumer.
        consumer: Name,
        /// Delete the retired consumer's data.
        #[arg(long)]
        delete: bool,
        /// How long to wait for the provider's answer.
        #[arg(long, default_value = "30s", value_parser = humantime::parse_duration)]
        timeout: Duration,
    },
}

/// `node` commands.
#[derive(Subcommand, Debug, Clone, PartialEq, Eq)]
pub enum NodeCommand {
    /// The standings whose provider or consumer is on MACHINE.
    Show {
        /// The machine.
        machine: Name,
        /// Print one JSON object.
        #[arg(long)]
        json: bool,
        /// Mark a standing not said again for this long as silent.
        #[arg(long, default_value = "30m", value_parser = humantime::parse_duration)]
        silent_after: Duration,
    },
}

/// `permissions --format`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// The permission sets as JSON.
    Json,
    /// A nats-server JSON configuration with users and passwords.
    Nats,
}

fn parse_batch(text: &str) -> Result<usize, String> {
    let n: usize = text.parse().map_err(|e| format!("{e}"))?;
    if (1..=4096).contains(&n) {
        Ok(n)
    } else {
        Err("must be 1 to 4096".to_owned())
    }
}

fn parse_replicas(text: &str) -> Result<usize, String> {
    let n: usize = text.parse().map_err(|e| format!("{e}"))?;
    if (1..=MAX_REPLICAS).contains(&n) {
        Ok(n)
    } else {
        Err(format!("must be 1 to {MAX_REPLICAS}"))
    }
}

impl Flags for Cli {
    fn log_format(&self) -> LogFormat {
        self.log.format
    }

    /// `info` for `serve` and `migrate`, `warn` for the others (their
    /// output is on stdout).
    fn log_level(&self) -> &'static str {
        match self.command {
            Command::Serve { .. } | Command::Migrate => "info",
            _ => "warn",
        }
    }

    /// `serve` runs until stopped; every other command does one thing.
    fn is_service(&self) -> bool {
        matches!(self.command, Command::Serve { .. })
    }
}

impl Cli {
    pub(crate) fn nats_options(&self) -> NatsOptions {
        self.nats.clone()
    }

    pub(crate) fn database_options(&self) -> Result<DatabaseOptions, DatabaseOptionsError> {
        let url = self
            .database
            .as_deref()
            .ok_or(DatabaseOptionsError::Missing)?;
        DatabaseOptions::new(url, self.database_password_file.as_deref())
    }

    pub(crate) fn load_declaration(&self) -> Result<Parsed, DeclarationError> {
        let path = self
            .declaration
            .as_deref()
            .ok_or(DeclarationError::Missing)?;
        declaration::load(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::approve::DEFAULT_TIMEOUT;

    fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(std::iter::once("mesh-controller").chain(args.iter().copied()))
    }

    #[test]
    fn the_design_command_lines_parse() {
        let ok: &[&[&str]] = &[
            &["--database", "postgres://u@h/db", "migrate"],
            &["serve", "--batch", "1"],
            &["serve", "--stream-replicas", "3"],
            &[
                "--declaration",
                "d.json",
                "status",
                "--json",
                "--silent-after",
                "1h",
            ],
            &["status", "--declaration", "d.json"],
            &["node", "show", "app-1", "--json"],
            &["permissions", "--format", "nats", "--credentials", "dir"],
            &["permissions"],
            &["contributions", "--out", "/etc/mesh/contributions"],
            &[
                "approve",
                "postgres@db-1",
                "forge",
                "--delete",
                "--timeout",
                "5s",
            ],
            &[
                "--nats",
                "nats://h:4222",
                "--nats-user",
                "controller",
                "--nats-password-file",
                "pw",
                "status",
            ],
            &[
                "--nats",
                "tls://a:4222,tls://b:4222",
                "--nats-nkey-file",
                "controller.nk",
                "--nats-ca-file",
                "ca.pem",
                "approve",
                "postgres@db-1",
                "forge",
                "--nats-cert-file",
                "c.pem",
                "--nats-key-file",
                "c.key",
            ],
            &["serve", "--nats-creds", "controller.creds"],
            &[
                "serve",
                "--metrics-listen",
                "127.0.0.1:0",
                "--log-format",
                "json",
            ],
            &["--log-format", "json", "status"],
            &["status", "--log-format", "text"],
        ];
        for args in ok {
            parse(args).unwrap_or_else(|e| panic!("{args:?}: {e}"));
        }
    }

    #[test]
    fn bad_command_lines_are_refused() {
        let bad: &[&[&str]] = &[
            &["approve", "postgres", "forge"],
            &["approve", "postgres@db-1", "Forge"],
            &["node", "show", "a.b"],
            &["serve", "--batch", "0"],
            &["serve", "--stream-replicas", "0"],
            &["serve", "--stream-replicas", "6"],
            &["status", "--silent-after", "soon"],
            &["permissions", "--format", "yaml"],
            &["contributions"],
            &[],
            &["--nats-creds", "c", "--nats-nkey-file", "k", "status"],
            &[
                "serve",
                "--nats-nkey-file",
                "k",
                "--nats-user",
                "controller",
            ],
            &["--nats-user", "controller", "serve"],
            &["approve", "p@m", "c", "--nats-cert-file", "c.pem"],
            &["--nats-key-file", "c.key", "migrate"],
        ];
        for args in bad {
            assert!(parse(args).is_err(), "{args:?}");
        }
    }

    #[test]
    fn defaults() {
        let cli = parse(&["status"]).unwrap();
        assert_eq!(cli.nats.url, "nats://127.0.0.1:4222");
        assert_eq!(
            cli.command,
            Command::Status {
                json: false,
                silent_after: Duration::from_secs(1800)
            }
        );
        let Command::Approve { timeout, .. } = parse(&["approve", "p@m", "c"]).unwrap().command
        else {
            panic!("approve")
        };
        assert_eq!(timeout, DEFAULT_TIMEOUT);
        assert_eq!(cli.log_level(), "warn");
        assert!(!cli.is_service());
        let serve = parse(&["serve"]).unwrap();
        assert_eq!((serve.log_level(), serve.is_service()), ("info", true));
    }
}
