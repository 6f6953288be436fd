//! The command line of `mesh-console`: [`ConsoleCli`] only parses; [`run`]
//! serves until stopped or returns a [`ConsoleRunError`].
//!
//! Exit codes: 0 stopped by SIGINT or SIGTERM; 2 the console could not
//! start (store options, declaration, address, token, certificate), the
//! reason on stderr. Usage errors also exit 2 (clap).

use std::path::PathBuf;
use std::time::Duration;

use clap::{CommandFactory, Parser};
use mesh_pg_store::{DatabaseOptions, DatabaseOptionsError};
use mesh_runtime::credentials::StandIn;
use mesh_runtime::endpoints::EndpointArgs;
use mesh_runtime::log::LogArgs;
use mesh_runtime::program::Flags;
use mesh_runtime::{LogFormat, NatsArgs, Stop};
use mesh_status::model::declaration::{self, DeclarationError};

use crate::conns::Limits;
use crate::pages::ReportSettings;
use crate::server::{self, ConsoleArgs, ConsoleError, DEFAULT_LISTEN};

/// The program's name, as its messages say it.
pub const NAME: &str = "mesh-console";

/// Exit code when the console could not start.
pub const EXIT_CANNOT: u8 = 2;

/// The `*_FILE` variables a unit's systemd credentials stand in for
/// (`mesh_runtime::credentials`): the store reader's password
/// (`database-password`), the console's token (`console-token`) and, with
/// `--approvals` and `MESH_NATS_USER`, its bus password (`nats-password`).
pub const CREDENTIALS: [StandIn; 3] = [
    mesh_runtime::credentials::DATABASE_PASSWORD,
    mesh_runtime::credentials::NATS_PASSWORD,
    StandIn {
        variable: "MESH_CONSOLE_TOKEN_FILE",
        credential: "console-token",
        with: None,
        unless: None,
    },
];

/// Serves the mesh as web pages: what `mesh-controller status`, `node show` and `history` say,
/// kept current in open pages (server-sent events; the pages work without JavaScript). With
/// named tokens a person logged in may also note what was learnt and, with --approvals,
/// approve retirements; each is recorded in history under the token's name.
///
/// Log in to the store as its reader role (`mesh-controller migrate --reader`; add
/// --reader-records for notes and approvals). Secrets never go on the command line: the store
/// password comes from `--database-password-file`, the tokens from `--token-file`.
#[derive(Parser, Debug, Clone, PartialEq, Eq)]
#[command(
    name = "mesh-console",
    version = mesh_runtime::endpoints::BuildInfo::version_text(env!("CARGO_PKG_VERSION"))
)]
pub struct ConsoleCli {
    /// The store: a PostgreSQL URL (postgres://user@host:port/db) or key-value string.
    /// TLS as libpq: ?sslmode=disable, prefer (default), require, verify-ca or
    /// verify-full, and &sslrootcert=PATH (the CA's PEM file; required by
    /// verify-ca and verify-full, or sslrootcert=system).
    #[arg(long, env = "MESH_DATABASE_URL", hide_env_values = true)]
    pub database: String,

    /// File holding the store user's password (the reader role's).
    #[arg(long, env = "MESH_DATABASE_PASSWORD_FILE")]
    pub database_password_file: Option<PathBuf>,

    /// The declaration (JSON): the machines, providers and consumers the pages name.
    #[arg(long, env = "MESH_DECLARATION")]
    pub declaration: PathBuf,

    /// The address to listen on; the default serves this machine only. Put it behind a
    /// proxy (or give --token-file and --tls-cert) before listening elsewhere.
    #[arg(long, env = "MESH_CONSOLE_LISTEN", default_value = DEFAULT_LISTEN)]
    pub listen: String,

    /// File of the console's tokens, a line each: TOKEN (named `console`), NAME:TOKEN, or
    /// NAME:TOKEN:read-only (may only look). Every page and the event stream then need one, as
    /// `Authorization: Bearer TOKEN` (reads) or through the login form at /login (a session
    /// cookie; a session may act unless read-only). Read at start; restart to change it.
    #[arg(long, env = "MESH_CONSOLE_TOKEN_FILE")]
    pub token_file: Option<PathBuf>,

    /// Serve HTTPS with this certificate chain (PEM); needs --tls-key.
    #[arg(long, env = "MESH_CONSOLE_TLS_CERT", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,

    /// The private key (PEM) of --tls-cert.
    #[arg(long, env = "MESH_CONSOLE_TLS_KEY", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,

    /// Mark a standing not published again for this long as silent (as `status`).
    #[arg(long, default_value = "30m", value_parser = humantime::parse_duration)]
    pub silent_after: Duration,

    /// Say on a failing consumer that it failed before within this window (as `status`).
    #[arg(long, default_value = "7d", value_parser = humantime::parse_duration)]
    pub recurrence_window: Duration,

    /// How long a client may take to send a request's headers (or its TLS handshake); a
    /// connection idle that long between requests is closed too.
    #[arg(long, env = "MESH_CONSOLE_HEADER_READ_TIMEOUT", default_value = "10s", value_parser = humantime::parse_duration)]
    pub header_read_timeout: Duration,

    /// Connections held that have not yet sent the token or the session cookie; the next
    /// one closes the oldest of them, so clients without the token cannot keep it out.
    #[arg(long, env = "MESH_CONSOLE_MAX_UNPROVEN", default_value_t = 256, value_parser = clap::value_parser!(u32).range(1..=65_536))]
    pub max_unproven_connections: u32,

    /// Ask providers for approvals from the console (a session whose token may act approves
    /// retiring or deleting a withdrawn consumer): connects to the bus with the --nats flags,
    /// as the user `mesh-controller permissions --console NAME` renders.
    #[arg(long, env = "MESH_CONSOLE_APPROVALS")]
    pub approvals: bool,

    /// How long an approval waits for the provider's answer; the request expires then.
    #[arg(long, env = "MESH_CONSOLE_APPROVE_TIMEOUT", default_value = "30s", value_parser = humantime::parse_duration)]
    pub approve_timeout: Duration,

    /// The bus (`--nats` and its credential and TLS flags), for --approvals only.
    #[command(flatten)]
    pub nats: NatsArgs,

    /// `--metrics-listen`: the console's own series, /healthz and /readyz.
    #[command(flatten)]
    pub endpoints: EndpointArgs,

    /// `--log-format`.
    #[command(flatten)]
    pub log: LogArgs,
}

/// The command line's definition (for parsing, `--help`, the man page and
/// the shell completions).
pub fn command() -> clap::Command {
    ConsoleCli::command()
}

impl Flags for ConsoleCli {
    fn log_format(&self) -> LogFormat {
        self.log.format
    }
}

/// The console could not start (exit [`EXIT_CANNOT`]).
#[derive(Debug, thiserror::Error)]
pub enum ConsoleRunError {
    /// The declaration cannot be read or is not valid.
    #[error(transparent)]
    Declaration(#[from] DeclarationError),
    /// The store options are not usable (the URL, the password file).
    #[error(transparent)]
    Database(#[from] DatabaseOptionsError),
    /// The console could not listen or serve.
    #[error(transparent)]
    Console(#[from] ConsoleError),
}

/// Serves the console until `stop` is requested.
///
/// # Errors
/// [`ConsoleRunError`] when it cannot start, or serving failed.
pub async fn run(cli: ConsoleCli, stop: Stop) -> Result<(), ConsoleRunError> {
    let declaration = declaration::load(&cli.declaration)?;
    let options = DatabaseOptions::new(&cli.database, cli.database_password_file.as_deref())?;
    let args = ConsoleArgs {
        listen: cli.listen,
        token_file: cli.token_file,
        tls: cli.tls_cert.zip(cli.tls_key),
        settings: ReportSettings {
            silent_after: cli.silent_after,
            recurrence_window: cli.recurrence_window,
        },
        metrics_listen: cli.endpoints.metrics_listen,
        limits: Limits {
            header_read: cli.header_read_timeout,
            unproven: usize::try_from(cli.max_unproven_connections).unwrap_or(usize::MAX),
        },
        approvals: cli.approvals.then_some(cli.nats),
        approve_timeout: cli.approve_timeout,
    };
    Ok(server::serve(options, declaration, &args, &stop).await?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<ConsoleCli, clap::Error> {
        ConsoleCli::try_parse_from(std::iter::once(NAME).chain(args.iter().copied()))
    }

    #[test]
    fn the_store_and_the_declaration_are_asked_for() {
        for args in [
            &["--declaration", "d.json"][..],
            &["--database", "host=/run/postgresql dbname=mesh"],
        ] {
            let error = parse(args).expect_err("a required flag is missing");
            assert_eq!(
                error.kind(),
                clap::error::ErrorKind::MissingRequiredArgument
            );
        }
    }

    #[test]
    fn defaults_serve_this_machine_only_over_plain_http() {
        let cli = parse(&["--database", "dbname=mesh", "--declaration", "d.json"]).unwrap();
        assert_eq!(cli.listen, "127.0.0.1:9480");
        assert_eq!(cli.token_file, None);
        assert_eq!((cli.tls_cert, cli.tls_key), (None, None));
        assert_eq!(cli.silent_after, Duration::from_secs(30 * 60));
        assert_eq!(cli.recurrence_window, Duration::from_secs(7 * 86_400));
        assert_eq!(cli.header_read_timeout, Duration::from_secs(10));
        assert_eq!(cli.max_unproven_connections, 256);
    }

    #[test]
    fn a_certificate_needs_its_key() {
        let base = ["--database", "dbname=mesh", "--declaration", "d.json"];
        let error = parse(&[&base[..], &["--tls-cert", "c.pem"]].concat()).unwrap_err();
        assert_eq!(
            error.kind(),
            clap::error::ErrorKind::MissingRequiredArgument
        );
        assert!(
            parse(&[&base[..], &["--tls-cert", "c.pem", "--tls-key", "k.pem"]].concat()).is_ok()
        );
    }

    #[test]
    fn help_opens_with_what_it_does() {
        let help = command().render_help().to_string();
        assert!(
            help.starts_with("Serves the mesh as web pages: what"),
            "{help}"
        );
    }
}
