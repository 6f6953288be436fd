//! The command line of `mesh-controller` (DESIGN.md "Command lines"):
//! [`Cli`] only parses and validates; [`run`] does the work and returns the
//! exit code, writing to the given outputs at the given wall time (tests fix
//! both).
//!
//! Exit codes: 0 done (for `status` / `node show`: the report was printed,
//! whatever it says); 1 `approve` refused or unanswered; 2 the command could
//! not be done (store, declaration, credentials or bus unusable), the reason
//! on stderr. Usage errors also exit 2 (clap).

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Parser, Subcommand, ValueEnum};
use mesh_sdk::{Name, Timestamp};

use crate::approve::approve;
use crate::bus::{connect, NatsOptions, Reconnect};
use crate::declaration::{self, DeclarationError, ModuleId, Parsed};
use crate::link::{self, LinkSettings, DEFAULT_BATCH};
use crate::permissions;
use crate::status::{compose, compose_paged, Clock, Scope};
use crate::store::{migrate, DatabaseOptions, DatabaseOptionsError, PgStore, Store};

/// Exit code: done.
pub const EXIT_OK: u8 = 0;
/// Exit code: `approve` refused or unanswered.
pub const EXIT_NOT_DONE: u8 = 1;
/// Exit code: the command could not be done (reason on stderr).
pub const EXIT_CANNOT: u8 = 2;

/// Follows provider events into a store and reports them.
///
/// Secrets never go on the command line: the database password comes from
/// `--database-password-file` (or a URL in MESH_DATABASE_URL), the NATS
/// password from `--nats-password-file`.
#[derive(Parser, Debug, Clone, PartialEq, Eq)]
#[command(name = "mesh-controller", version)]
pub struct Cli {
    /// The store: a PostgreSQL URL (postgres://user@host:port/db) or key-value string.
    #[arg(long, env = "MESH_DATABASE_URL", hide_env_values = true, global = true)]
    pub database: Option<String>,

    /// File holding the store user's password.
    #[arg(long, env = "MESH_DATABASE_PASSWORD_FILE", global = true)]
    pub database_password_file: Option<PathBuf>,

    /// The declaration (JSON).
    #[arg(long, env = "MESH_DECLARATION", global = true)]
    pub declaration: Option<PathBuf>,

    /// NATS server URL.
    #[arg(
        long,
        env = "MESH_NATS_URL",
        default_value = "nats://127.0.0.1:4222",
        global = true
    )]
    pub nats: String,

    /// NATS user name (the controller's is `controller`).
    #[arg(long, env = "MESH_NATS_USER", global = true)]
    pub nats_user: Option<String>,

    /// File holding the NATS user's password.
    #[arg(long, env = "MESH_NATS_PASSWORD_FILE", global = true)]
    pub nats_password_file: Option<PathBuf>,

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
        /// How often the status pages of changed failing words are written.
        #[arg(long, env = "MESH_PAGES_EVERY", default_value = "1s", value_parser = humantime::parse_duration)]
        pages_every: Duration,
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

impl Cli {
    /// The default log level of the command: `info` for the long-running
    /// ones, `warn` for reports (their output is on stdout).
    pub fn default_log_level(&self) -> &'static str {
        match self.command {
            Command::Serve { .. } | Command::Migrate => "info",
            _ => "warn",
        }
    }

    fn nats_options(&self) -> NatsOptions {
        NatsOptions {
            url: self.nats.clone(),
            user: self.nats_user.clone(),
            password_file: self.nats_password_file.clone(),
        }
    }

    fn database_options(&self) -> Result<DatabaseOptions, DatabaseOptionsError> {
        let url = self
            .database
            .as_deref()
            .ok_or(DatabaseOptionsError::Missing)?;
        DatabaseOptions::new(url, self.database_password_file.as_deref())
    }

    fn load_declaration(&self) -> Result<Parsed, DeclarationError> {
        let path = self
            .declaration
            .as_deref()
            .ok_or(DeclarationError::Missing)?;
        declaration::load(path)
    }
}

/// Where a command writes, and its wall time.
pub struct Io<'a> {
    /// Standard output.
    pub out: &'a mut dyn Write,
    /// Standard error.
    pub err: &'a mut dyn Write,
    /// Now.
    pub now: Timestamp,
}

/// Says `reason` on stderr and returns [`EXIT_CANNOT`].
fn cannot(io: &mut Io<'_>, reason: impl std::fmt::Display) -> u8 {
    let _ = writeln!(io.err, "mesh-controller: {reason}");
    EXIT_CANNOT
}

/// A write to stdout failed: a closed pipe is not worth a word.
fn output_failed(io: &mut Io<'_>, error: std::io::Error) -> u8 {
    if error.kind() == std::io::ErrorKind::BrokenPipe {
        EXIT_OK
    } else {
        cannot(io, format!("cannot write the output: {error}"))
    }
}

/// Runs the command; returns the exit code.
pub async fn run(cli: &Cli, io: &mut Io<'_>) -> u8 {
    match &cli.command {
        Command::Migrate => {
            let options = match cli.database_options() {
                Ok(options) => options,
                Err(error) => return cannot(io, error),
            };
            match migrate(&options).await {
                Ok(applied) => {
                    let _ = writeln!(io.out, "store {options}: {applied} migrations applied");
                    EXIT_OK
                }
                Err(error) => cannot(io, error),
            }
        }
        Command::Serve { batch, pages_every } => {
            let options = match cli.database_options() {
                Ok(options) => options,
                Err(error) => return cannot(io, error),
            };
            let settings = LinkSettings {
                batch: *batch,
                pages_every: *pages_every,
                ..LinkSettings::default()
            };
            match link::serve(&options, &cli.nats_options(), settings).await {
                Ok(()) => EXIT_OK,
                Err(error) => cannot(io, error),
            }
        }
        Command::Status { json, silent_after } => {
            report(cli, io, Scope::All, *json, *silent_after).await
        }
        Command::Node {
            command:
                NodeCommand::Show {
                    machine,
                    json,
                    silent_after,
                },
        } => {
            let scope = Scope::Machine(machine.to_string());
            report(cli, io, scope, *json, *silent_after).await
        }
        Command::Permissions {
            format,
            credentials,
        } => permissions_command(cli, io, *format, credentials.as_deref()),
        Command::Approve {
            provider,
            consumer,
            delete,
            timeout,
        } => {
            let client = match connect(&cli.nats_options(), Reconnect::FailFast).await {
                Ok(client) => client,
                Err(error) => return cannot(io, error),
            };
            let answer = match approve(&client, provider, consumer, *delete, *timeout).await {
                Ok(answer) => answer,
                Err(error) => return cannot(io, error),
            };
            let text = answer.describe(provider);
            if answer.is_done() {
                let _ = writeln!(io.out, "{text}");
                EXIT_OK
            } else {
                let _ = writeln!(io.err, "mesh-controller: {text}");
                EXIT_NOT_DONE
            }
        }
    }
}

async fn report(
    cli: &Cli,
    io: &mut Io<'_>,
    scope: Scope,
    json: bool,
    silent_after: Duration,
) -> u8 {
    let declaration = match cli.load_declaration() {
        Ok(parsed) => parsed,
        Err(error) => return cannot(io, error),
    };
    let options = match cli.database_options() {
        Ok(options) => options,
        Err(error) => return cannot(io, error),
    };
    let clock = Clock {
        now: io.now,
        silent_after,
    };
    let mut store = PgStore::new(options);
    if json && scope == Scope::All {
        // The status pages: tens of MB of JSON without handling every
        // standing. A store without them yet is read row by row below.
        match store.paged_snapshot().await {
            Ok(Some(snapshot)) => {
                let report = compose_paged(&declaration, snapshot, &clock);
                return match report.write_json(io.out).and_then(|()| io.out.flush()) {
                    Ok(()) => EXIT_OK,
                    Err(error) => output_failed(io, error),
                };
            }
            Ok(None) => {}
            Err(error) => return cannot(io, format!("cannot read the store: {error}")),
        }
    }
    let snapshot = match store.snapshot().await {
        Ok(snapshot) => snapshot,
        Err(error) => return cannot(io, format!("cannot read the store: {error}")),
    };
    let report = compose(&declaration, snapshot, &clock, &scope);
    let written = if json {
        report.write_json(io.out)
    } else {
        report.write_human(io.out)
    };
    match written.and_then(|()| io.out.flush()) {
        Ok(()) => EXIT_OK,
        Err(error) => output_failed(io, error),
    }
}

fn permissions_command(
    cli: &Cli,
    io: &mut Io<'_>,
    format: Format,
    credentials: Option<&std::path::Path>,
) -> u8 {
    let parsed = match cli.load_declaration() {
        Ok(parsed) => parsed,
        Err(error) => return cannot(io, error),
    };
    for refused in &parsed.refused {
        let _ = writeln!(
            io.err,
            "mesh-controller: declaration entry refused (it gets no permissions): {refused}"
        );
    }
    let users = permissions::derive(&parsed.declaration);
    let value = match (format, credentials) {
        (Format::Json, _) => permissions::render_json(&users),
        (Format::Nats, None) => return cannot(io, "--format nats needs --credentials DIR"),
        (Format::Nats, Some(dir)) => match permissions::read_credentials(dir, &users) {
            Ok(passwords) => permissions::render_nats(&users, &passwords),
            Err(error) => return cannot(io, error),
        },
    };
    let text = serde_json::to_string_pretty(&value).expect("JSON values serialize");
    match writeln!(io.out, "{text}").and_then(|()| io.out.flush()) {
        Ok(()) => EXIT_OK,
        Err(error) => output_failed(io, error),
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
            &["status", "--silent-after", "soon"],
            &["permissions", "--format", "yaml"],
            &[],
        ];
        for args in bad {
            assert!(parse(args).is_err(), "{args:?}");
        }
    }

    #[test]
    fn defaults() {
        let cli = parse(&["status"]).unwrap();
        assert_eq!(cli.nats, "nats://127.0.0.1:4222");
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
        assert_eq!(cli.default_log_level(), "warn");
    }

    #[tokio::test]
    async fn missing_inputs_exit_2_with_the_reason() {
        // The cases need these unset (clap reads them as fallbacks).
        if ["MESH_DATABASE_URL", "MESH_DECLARATION"]
            .iter()
            .any(|v| std::env::var_os(v).is_some())
        {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let declaration = dir.path().join("d.json");
        std::fs::write(&declaration, r#"{"modules":[]}"#).unwrap();
        let decl = declaration.to_str().unwrap();
        let cases: &[(&[&str], &str)] = &[
            (&["status"], "no declaration given"),
            (&["--declaration", "/nope.json", "status"], "/nope.json"),
            (&["--declaration", decl, "status"], "no database given"),
            (
                &["--declaration", decl, "node", "show", "m"],
                "no database given",
            ),
            (&["permissions"], "no declaration given"),
            (
                &["--declaration", decl, "permissions", "--format", "nats"],
                "needs --credentials",
            ),
            (&["migrate"], "no database given"),
        ];
        for (args, reason) in cases {
            let cli = parse(args).unwrap();
            let (mut out, mut err) = (Vec::new(), Vec::new());
            let mut io = Io {
                out: &mut out,
                err: &mut err,
                now: Timestamp::parse("2026-10-05T00:00:00Z").unwrap(),
            };
            assert_eq!(run(&cli, &mut io).await, EXIT_CANNOT, "{args:?}");
            let err = String::from_utf8(err).unwrap();
            assert!(err.contains(reason), "{args:?}: {err}");
            assert!(out.is_empty(), "{args:?}");
        }
    }
}
