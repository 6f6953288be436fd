//! The command line of `mesh-controller`: [`Cli`] only parses and
//! validates; [`run`] does the work and returns `Ok` or a [`CliError`],
//! whose [`CliError::exit_code`] is the one place exit codes are decided.
//!
//! Exit codes: 0 done (for `status` / `node show`: the report was printed,
//! whatever it says, unless `--check`); 1 `approve` refused or unanswered,
//! or with `--check` a report printed that is not all well; 2 the command
//! could not be done (store, declaration, credentials or bus unusable, a
//! machine the declaration does not name), the reason on stderr. Usage
//! errors also exit 2 (clap).

mod contributions;
mod error;
mod history;
mod note;
mod permissions;
mod plan;
mod run;
mod why;

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand, ValueEnum};
use mesh_protocol::{ModuleId, Name};
use mesh_runtime::credentials::{self, StandIn};
use mesh_runtime::endpoints::EndpointArgs;
use mesh_runtime::log::LogArgs;
use mesh_runtime::program::Flags;
use mesh_runtime::LogFormat;

use crate::bus::NatsOptions;
use mesh_pg_store::{DatabaseOptions, DatabaseOptionsError, RoleName};
use mesh_status::link::{DEFAULT_BATCH, DEFAULT_REPLICAS, MAX_REPLICAS};
use mesh_status::model::declaration::{self, DeclarationError};
use mesh_status::model::ParsedDeclaration;

pub(crate) use contributions::ContributionsArgs;
pub use error::{CliError, EXIT_CANNOT, EXIT_NOT_DONE, EXIT_OK};
pub use run::{exit, outcome, run, Io};

/// The program's name, as its messages say it.
pub const NAME: &str = "mesh-controller";

/// The `*_FILE` variables a unit's systemd credentials stand in for
/// (`mesh_runtime::credentials`): the store user's password
/// (`database-password`) and the bus user's password (`nats-password`).
pub const CREDENTIALS: [StandIn; 2] = [credentials::DATABASE_PASSWORD, credentials::NATS_PASSWORD];

/// Follows provider events into a store and reports them.
///
/// Secrets never go on the command line: the database password comes from
/// `--database-password-file` (or a URL in MESH_DATABASE_URL), the NATS
/// password from `--nats-password-file` (or an nkey seed from
/// `--nats-nkey-file`, a `.creds` file from `--nats-creds`).
#[derive(Parser, Debug, Clone, PartialEq, Eq)]
#[command(
    name = "mesh-controller",
    version = mesh_runtime::endpoints::BuildInfo::version_text(env!("CARGO_PKG_VERSION"))
)]
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
    /// Apply the numbered migrations (and, with --reader, give a role read-only access).
    Migrate {
        /// Give this role read-only access to the store: SELECT on every table (and on those of
        /// later migrations), nothing else; `status`, `node show` and `history` log in as it.
        /// Run as the store's owner.
        #[arg(long, env = "MESH_READER_ROLE", value_parser = RoleName::parse)]
        reader: Option<RoleName>,
        /// File holding the reader's password: a missing role is made with it (LOGIN, no other
        /// attribute; the password is sent as a SCRAM verifier), which needs CREATEROLE.
        #[arg(long, env = "MESH_READER_PASSWORD_FILE", requires = "reader")]
        reader_password_file: Option<PathBuf>,
        /// With --reader: the role may also add rows to history (a person's notes and actions
        /// from mesh-console), and change or remove none. Give it to the console's role only.
        #[arg(long, requires = "reader")]
        reader_records: bool,
    },
    /// Follow the events into the store (migrates first).
    Serve {
        /// Messages applied per transaction (and the consumer's max_ack_pending); 1 takes one at a time.
        #[arg(long, env = "MESH_BATCH", default_value_t = DEFAULT_BATCH, value_parser = parse_batch)]
        batch: usize,
        /// How long the event stream keeps an event nobody took (it drops an event as soon as the controller stored it).
        #[arg(long, env = "MESH_STREAM_MAX_AGE", default_value = "7d", value_parser = humantime::parse_duration)]
        stream_max_age: Duration,
        /// How many servers of a NATS cluster keep the event stream and the consumer (1-5);
        /// an existing stream with fewer is raised in place, never lowered.
        #[arg(long, env = "MESH_STREAM_REPLICAS", default_value_t = DEFAULT_REPLICAS, value_parser = parse_replicas)]
        stream_replicas: usize,
        /// How long history (every transition applied) is kept; older rows are removed
        /// between rounds, at most 1,000 at a time.
        #[arg(long, env = "MESH_KEEP_HISTORY", default_value = "90d", value_parser = humantime::parse_duration)]
        keep_history: Duration,
        /// How often, with --metrics-listen and --declaration, serve makes the report `status`
        /// prints for its mesh_status_* gauges (each report reads the store once).
        #[arg(long, env = "MESH_STATUS_EVERY", default_value = "5s", value_parser = humantime::parse_duration)]
        status_every: Duration,
        /// `--metrics-listen`.
        #[command(flatten)]
        endpoints: EndpointArgs,
    },
    /// Show what providers say they keep failing.
    Status {
        /// How to report.
        #[command(flatten)]
        report: ReportArgs,
    },
    /// Say why one consumer is failing, or that it is not: its standings, its providers
    /// (heard, a fault, a repair), the controller, its grants, its retirements, how its
    /// last failing interval ended, and the next step from the runbook. Exit 0 when it is
    /// served, 1 when it is not, 2 on error.
    Why {
        /// The consumer: CONSUMER, or CONSUMER@MACHINE when the declaration has it on
        /// several machines.
        #[arg(value_parser = parse_consumer)]
        consumer: (Name, Option<Name>),
        /// Read history and recurrences this far back.
        #[arg(long, default_value = "7d", value_parser = humantime::parse_duration)]
        recurrence_window: Duration,
        /// Print one JSON object.
        #[arg(long)]
        json: bool,
    },
    /// List what changed and for how long: failing intervals, recoveries, retirements,
    /// repairs, silences, newest first, then per consumer how often and how long it failed.
    History {
        /// Only this consumer's history: CONSUMER or CONSUMER@MACHINE.
        #[arg(value_parser = parse_consumer, conflicts_with_all = ["provider", "machine"])]
        consumer: Option<(Name, Option<Name>)>,
        /// Only this provider's history (its consumers, silences and repairs): PROVIDER@MACHINE.
        #[arg(long, value_parser = ModuleId::parse, conflicts_with = "machine")]
        provider: Option<ModuleId>,
        /// Only what concerns providers or consumers on MACHINE.
        #[arg(long)]
        machine: Option<Name>,
        /// How far back to look (e.g. 7d, 24h); an interval still lasting that began before is shown whole.
        #[arg(long, default_value = "7d", value_parser = humantime::parse_duration)]
        since: Duration,
        /// Print one JSON object.
        #[arg(long)]
        json: bool,
    },
    /// Moved: the console is its own program, `mesh-console` (this says so, and exits 2).
    #[command(hide = true, disable_help_flag = true)]
    Console {
        /// Whatever followed (the old console's flags), ignored.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        rest: Vec<String>,
    },
    /// Attach a note to a consumer's failing interval: what was learnt ("admin password
    /// reset from the vault"). When the consumer fails again, its status line quotes it
    /// (`last time: "…" — NAME`); `history` lists it. Needs a role that may write the store.
    Note {
        /// The consumer: CONSUMER, or CONSUMER@MACHINE when the declaration has it on
        /// several machines.
        #[arg(value_parser = parse_consumer)]
        consumer: (Name, Option<Name>),
        /// The note: one line, at most 500 characters.
        text: String,
        /// The provider whose failing interval it is about (MODULE@MACHINE); needed when
        /// the consumer requires from several.
        #[arg(long, value_parser = ModuleId::parse)]
        provider: Option<ModuleId>,
        /// Who writes it (default: the login name, $USER).
        #[arg(long)]
        by: Option<String>,
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
        #[arg(long, value_enum, default_value_t = PermissionsFormat::Json)]
        format: PermissionsFormat,
        /// Folder holding one password file per user (`DIR/<user>`).
        #[arg(long)]
        credentials: Option<PathBuf>,
        /// Also a read-only user NAME, who may subscribe to every provider's and grant agent's events and publish nothing (a dashboard, `nats sub`, a test); repeatable. With --format nats, its password file is DIR/NAME.
        #[arg(long = "watcher", value_name = "NAME")]
        watchers: Vec<Name>,
        /// Also the console's user NAME, who may ask any provider for an approval (mesh-console's approvals) and do nothing else on the bus; repeatable. With --format nats, its password file is DIR/NAME.
        #[arg(long = "console", value_name = "NAME")]
        consoles: Vec<Name>,
    },
    /// What a new declaration would change for each provider before it is deployed: consumers added and withdrawn (and when each would be retired), against the current one (--declaration). Exit 0 when nothing is withdrawn, 1 when something is, 2 on error.
    Plan {
        /// The new declaration (JSON).
        new: PathBuf,
        /// Print one JSON object instead of lines.
        #[arg(long)]
        json: bool,
        /// The providers' --retire-after-passes, for when a withdrawn consumer is retired.
        #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..))]
        retire_after_passes: u32,
        /// The providers' --pass-every.
        #[arg(long, default_value = "5s", value_parser = humantime::parse_duration)]
        pass_every: Duration,
        /// The providers' --retire-after.
        #[arg(long, default_value = "10m", value_parser = humantime::parse_duration)]
        retire_after: Duration,
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
        /// With --delete: delete even a consumer the declaration (--declaration)
        /// still requires from that provider.
        #[arg(long, requires = "delete")]
        force: bool,
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
        /// The machine (one the declaration names).
        machine: Name,
        /// How to report.
        #[command(flatten)]
        report: ReportArgs,
    },
}

/// The flags of `status` and `node show`.
#[derive(Args, Debug, Clone, PartialEq, Eq)]
pub struct ReportArgs {
    /// Print one JSON object.
    #[arg(long)]
    pub json: bool,
    /// Mark a standing not published again for this long as silent.
    #[arg(long, default_value = "30m", value_parser = humantime::parse_duration)]
    pub silent_after: Duration,
    /// Exit 1 when the report is not all well (0: all well; 2: no report).
    #[arg(long)]
    pub check: bool,
    /// Say on a failing consumer's line that it failed before within this window
    /// (`2nd time in 7 days; ...`), and on an open repair how often it was repaired.
    #[arg(long, default_value = "7d", value_parser = humantime::parse_duration)]
    pub recurrence_window: Duration,
    /// After the report, say what to do about each problem: its runbook entry's next step
    /// (the JSON carries it on every problem anyway).
    #[arg(long)]
    pub explain: bool,
}

/// `CONSUMER` or `CONSUMER@MACHINE`, each a valid name.
fn parse_consumer(text: &str) -> Result<(Name, Option<Name>), String> {
    let (consumer, machine) = match text.split_once('@') {
        Some((c, m)) => (c, Some(m)),
        None => (text, None),
    };
    let consumer = Name::parse(consumer).map_err(|e| e.to_string())?;
    let machine = machine
        .map(Name::parse)
        .transpose()
        .map_err(|e| e.to_string())?;
    Ok((consumer, machine))
}

/// `permissions --format`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum PermissionsFormat {
    /// The permission sets as JSON.
    Json,
    /// A nats-server JSON configuration with users and passwords.
    Nats,
}

/// The bus flags: global (a command line may give them anywhere, and every
/// command line accepted before still is), but hidden from the help of the
/// commands that never touch the bus.
const BUS_FLAGS: [&str; 8] = [
    "nats",
    "nats_user",
    "nats_password_file",
    "nats_creds",
    "nats_nkey_file",
    "nats_ca_file",
    "nats_cert_file",
    "nats_key_file",
];

/// The commands that never touch the bus, by their path of subcommands.
const OFF_THE_BUS: [&[&str]; 8] = [
    &["migrate"],
    &["note"],
    &["status"],
    &["history"],
    &["node", "show"],
    &["permissions"],
    &["contributions"],
    &["plan"],
];

/// The command line's definition (for parsing, `--help`, the man pages and
/// the shell completions): [`Cli`]'s, with the bus flags hidden from the
/// help of the commands that do not use them. Those commands get
/// hidden copies of the global bus flags (same ids, same rules), which
/// clap then does not propagate over; their values still reach [`Cli::nats`].
pub fn command() -> clap::Command {
    fn hide(command: clap::Command, path: &[&str], hidden: &[clap::Arg]) -> clap::Command {
        let command = hidden.iter().cloned().fold(command, clap::Command::arg);
        match path.split_first() {
            Some((name, rest)) => command.mut_subcommand(*name, |sub| hide(sub, rest, hidden)),
            None => command,
        }
    }
    let root = Cli::command();
    let hidden: Vec<clap::Arg> = BUS_FLAGS
        .iter()
        .map(|id| {
            root.get_arguments()
                .find(|a| a.get_id() == id)
                .expect("every bus flag is an argument of the command line")
                .clone()
                .hide(true)
        })
        .collect();
    OFF_THE_BUS.iter().fold(root, |root, path| {
        let (first, rest) = path.split_first().expect("a command's path");
        root.mut_subcommand(*first, |sub| hide(sub, rest, &hidden))
    })
}

impl Cli {
    /// Parses `args` (the program's name first) with `command()`.
    ///
    /// # Errors
    /// A usage error, or `--help` / `--version` (clap prints them).
    pub fn parse_args<I, T>(args: I) -> Result<Cli, clap::Error>
    where
        I: IntoIterator<Item = T>,
        T: Into<std::ffi::OsString> + Clone,
    {
        let mut matches = command().try_get_matches_from(args)?;
        Cli::from_arg_matches_mut(&mut matches)
    }
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
            Command::Serve { .. } | Command::Migrate { .. } => "info",
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

    pub(crate) fn load_declaration(&self) -> Result<ParsedDeclaration, DeclarationError> {
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

    fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
        Cli::parse_args(std::iter::once("mesh-controller").chain(args.iter().copied()))
    }

    /// The help of a command line (`... --help`).
    fn help(args: &[&str]) -> String {
        let error = parse(args).expect_err("--help ends the parse");
        assert_eq!(error.kind(), clap::error::ErrorKind::DisplayHelp);
        error.render().to_string()
    }

    #[test]
    fn the_help_of_commands_off_the_bus_lists_no_bus_flag() {
        for args in [
            &["status", "--help"][..],
            &["node", "show", "--help"],
            &["migrate", "--help"],
            &["permissions", "--help"],
        ] {
            let text = help(args);
            assert!(!text.contains("--nats"), "{args:?}:\n{text}");
            for flag in ["--database", "--declaration", "--log-format"] {
                assert!(text.contains(flag), "{args:?} lacks {flag}:\n{text}");
            }
        }
        assert!(help(&["status", "--help"]).contains("--check"));
        assert!(help(&["node", "show", "--help"]).contains("--check"));
        for args in [
            &["serve", "--help"][..],
            &["approve", "--help"],
            &["--help"],
        ] {
            let text = help(args);
            for flag in ["--nats ", "--nats-user", "--nats-creds", "--nats-ca-file"] {
                assert!(text.contains(flag), "{args:?} lacks {flag}:\n{text}");
            }
        }
    }

    #[test]
    fn bus_flags_given_to_commands_off_the_bus_still_parse() {
        for args in [
            &["--nats", "nats://h:4222", "status", "--check"][..],
            &[
                "status",
                "--nats",
                "nats://h:4222",
                "--nats-creds",
                "c.creds",
            ],
            &[
                "node",
                "show",
                "app-1",
                "--nats-user",
                "u",
                "--nats-password-file",
                "pw",
            ],
            &["migrate", "--nats-ca-file", "ca.pem"],
            &["permissions", "--nats", "nats://h:4222"],
        ] {
            let cli = parse(args).unwrap_or_else(|e| panic!("{args:?}: {e}"));
            assert_eq!(
                cli.nats.url == "nats://h:4222",
                args.contains(&"nats://h:4222")
            );
        }
        assert!(
            parse(&["status", "--nats-user", "u"]).is_err(),
            "still checked"
        );
    }

    #[test]
    fn the_design_command_lines_parse() {
        let ok: &[&[&str]] = &[
            &["--database", "postgres://u@h/db", "migrate"],
            &["migrate", "--reader", "mesh_reader"],
            &[
                "migrate",
                "--reader",
                "mesh_reader",
                "--reader-password-file",
                "reader.pw",
            ],
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
            &["status", "--check", "--json"],
            &["console"],
            &[
                "console",
                "--listen",
                "0.0.0.0:8443",
                "--token-file",
                "token",
                "--tls-cert",
                "c.pem",
                "--tls-key",
                "c.key",
            ],
            &["node", "show", "app-1", "--json"],
            &["node", "show", "app-1", "--check"],
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
            &["migrate", "--reader-password-file", "reader.pw"],
            &["migrate", "--reader", "Mesh-Reader"],
            &["migrate", "--reader", "pg_monitor"],
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
    fn history_takes_one_scope_and_a_consumer_with_or_without_its_machine() {
        let scope = |args: &[&str]| match parse(args).map(|c| c.command) {
            Ok(Command::History {
                consumer,
                provider,
                machine,
                since,
                ..
            }) => Ok((
                consumer.map(|(c, m)| format!("{c}@{}", m.map_or("*".into(), |m| m.to_string()))),
                provider.map(|p| p.to_string()),
                machine.map(|m| m.to_string()),
                since,
            )),
            Ok(other) => panic!("{other:?}"),
            Err(error) => Err(error.kind()),
        };
        let week = Duration::from_secs(7 * 24 * 3600);
        assert_eq!(scope(&["history"]), Ok((None, None, None, week)));
        assert_eq!(
            scope(&["history", "wiki"]),
            Ok((Some("wiki@*".into()), None, None, week))
        );
        assert_eq!(
            scope(&["history", "wiki@app-1", "--since", "24h"]),
            Ok((
                Some("wiki@app-1".into()),
                None,
                None,
                Duration::from_secs(86_400)
            ))
        );
        assert_eq!(
            scope(&["history", "--provider", "postgres@db-1"]),
            Ok((None, Some("postgres@db-1".into()), None, week))
        );
        assert_eq!(
            scope(&["history", "--machine", "app-1"]),
            Ok((None, None, Some("app-1".into()), week))
        );
        use clap::error::ErrorKind;
        for args in [
            &["history", "wiki", "--provider", "postgres@db-1"][..],
            &["history", "wiki", "--machine", "app-1"],
            &[
                "history",
                "--provider",
                "postgres@db-1",
                "--machine",
                "app-1",
            ],
        ] {
            assert_eq!(scope(args), Err(ErrorKind::ArgumentConflict), "{args:?}");
        }
        assert_eq!(scope(&["history", "Wiki"]), Err(ErrorKind::ValueValidation));
    }

    #[test]
    fn defaults() {
        let cli = parse(&["status"]).unwrap();
        assert_eq!(cli.nats.url, "nats://127.0.0.1:4222");
        assert_eq!(
            cli.command,
            Command::Status {
                report: ReportArgs {
                    json: false,
                    silent_after: Duration::from_secs(1800),
                    check: false,
                    recurrence_window: Duration::from_secs(7 * 24 * 3600),
                    explain: false,
                }
            }
        );
        let Command::Approve { timeout, .. } = parse(&["approve", "p@m", "c"]).unwrap().command
        else {
            panic!("approve")
        };
        assert_eq!(timeout, Duration::from_secs(30));
        assert_eq!(cli.log_level(), "warn");
        assert!(!cli.is_service());
        let serve = parse(&["serve"]).unwrap();
        assert_eq!((serve.log_level(), serve.is_service()), ("info", true));
    }

    /// `console` moved to `mesh-console`: every old command line still
    /// parses, to be told where it went, and runs nothing for long.
    #[test]
    fn an_old_console_command_line_parses_to_be_told_where_it_went() {
        let cli = parse(&[
            "--database",
            "dbname=mesh",
            "console",
            "--listen",
            "0.0.0.0:8443",
            "--token-file",
            "token",
        ])
        .unwrap();
        let Command::Console { rest } = &cli.command else {
            panic!("console")
        };
        assert_eq!(rest, &["--listen", "0.0.0.0:8443", "--token-file", "token"]);
        assert!(!cli.is_service());
        assert!(
            !help(&["--help"]).contains("console"),
            "hidden from the help"
        );
        let moved = CliError::ConsoleMoved;
        assert_eq!(moved.exit_code(), EXIT_CANNOT);
        assert!(moved.to_string().contains("run `mesh-console`"), "{moved}");
    }
}
