//! The `mesh-postgres` command line: the SDK's shared provider flags plus
//! how to reach PostgreSQL ([`PostgresFlags`]), run by the SDK's [`MAIN`].
//!
//! ```text
//! mesh-postgres --contributions PATH --admin-url postgres://postgres@127.0.0.1:5432/postgres
//!               --admin-password-file PATH [--consumer-host HOST] [--consumer-port PORT]
//!               [--connect-timeout 10s] [--statement-timeout 20s] [--admin-sessions 4] [SDK flags]
//! ```
//!
//! Exit codes: 0 after a graceful stop (SIGINT/SIGTERM), 1 when the provider
//! cannot run (bad configuration, unreadable password file, an
//! administrator lacking `CREATEROLE`, `CREATEDB` or `INHERIT`, bus setup),
//! 2 for a bad command line, 130 or 143 when a stop had to be forced (not
//! ended 10 s after SIGINT or SIGTERM, or a second signal: docs/contracts/command-lines.md#stopping).
//!
//! At start the binary logs in as the administrator once and checks its
//! attributes ([`PostgresProvisioner::check_admin`]): one lacking a
//! privilege stops the program with an error naming it, rather than every
//! consumer failing. A server that cannot be reached or refuses the login
//! at start does not stop it: the loop says so for each consumer until it
//! answers, and checks the attributes again at every login.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use mesh_sdk::{ProviderMain, Secret, StandIn};

use crate::config::{PostgresConfig, PostgresConfigError};
use crate::error::PostgresError;
use crate::provisioner::PostgresProvisioner;

/// The binary: what `--help` says first, for an operator.
pub const MAIN: ProviderMain = ProviderMain::new(
    "mesh-postgres",
    "Makes a PostgreSQL role and database for each consumer the mesh lists \
     (the role owning the database, its password the consumer's minted secret), \
     checks each works by logging in as the consumer, retires the ones no \
     longer listed, and says on the mesh's bus when it keeps failing one.",
)
.version(env!("CARGO_PKG_VERSION"))
.credentials(&[ADMIN_PASSWORD]);

/// The unit's credential `admin-password` stands in for an unset
/// `MESH_POSTGRES_ADMIN_PASSWORD_FILE` (`mesh_runtime::credentials`).
pub const ADMIN_PASSWORD: StandIn = StandIn {
    variable: "MESH_POSTGRES_ADMIN_PASSWORD_FILE",
    credential: "admin-password",
    with: None,
    unless: None,
};

/// The whole command line of `mesh-postgres` (the SDK's shared flags and
/// [`PostgresFlags`]), as clap sees it: for its man page and shell completions.
pub fn command() -> clap::Command {
    MAIN.command::<PostgresFlags>()
}

/// The flags of `mesh-postgres` beyond the SDK's shared ones.
///
/// Not `Debug`: the admin URL may hold a password.
#[derive(Args)]
pub struct PostgresFlags {
    /// The administrator's connection, e.g. postgres://postgres@127.0.0.1:5432/postgres.
    /// Keep the password out of it (use --admin-password-file); one given
    /// here is accepted and never shown. TLS as libpq: ?sslmode=disable,
    /// prefer (default), require, verify-ca or verify-full, and
    /// &sslrootcert=PATH (the CA's PEM file; required by verify-ca and
    /// verify-full, or sslrootcert=system). The login check as each consumer
    /// uses the same settings.
    #[arg(long, env = "MESH_POSTGRES_ADMIN_URL", hide_env_values = true)]
    pub admin_url: String,

    /// File holding the administrator's password (surrounding whitespace
    /// trimmed), read again for each new administrator session: write the
    /// new password here after changing it, no restart needed.
    #[arg(long, env = "MESH_POSTGRES_ADMIN_PASSWORD_FILE")]
    pub admin_password_file: Option<PathBuf>,

    /// Host consumers connect to, where each provision is checked over TCP
    /// [default: the admin URL's host].
    #[arg(long, env = "MESH_POSTGRES_CONSUMER_HOST")]
    pub consumer_host: Option<String>,

    /// Port consumers connect to [default: the admin URL's port].
    #[arg(long, env = "MESH_POSTGRES_CONSUMER_PORT")]
    pub consumer_port: Option<u16>,

    /// Bound of every login (administrator and checks).
    #[arg(long, env = "MESH_POSTGRES_CONNECT_TIMEOUT", default_value = "10s", value_parser = humantime::parse_duration)]
    pub connect_timeout: Duration,

    /// Administrator sessions used at once: missing roles and databases are
    /// made this many at a time.
    #[arg(long, env = "MESH_POSTGRES_ADMIN_SESSIONS", default_value_t = 4, value_parser = clap::value_parser!(u16).range(1..=64))]
    pub admin_sessions: u16,

    /// Bound of every statement sent as the administrator, and of the check's SELECT 1.
    #[arg(long, env = "MESH_POSTGRES_STATEMENT_TIMEOUT", default_value = "20s", value_parser = humantime::parse_duration)]
    pub statement_timeout: Duration,
}

impl PostgresFlags {
    /// The PostgreSQL configuration these flags ask for (reads the password file).
    ///
    /// # Errors
    /// [`PostgresConfigError`] when the URL or the password file cannot be used.
    pub fn config(&self) -> Result<PostgresConfig, PostgresConfigError> {
        let password = self
            .admin_password_file
            .as_deref()
            .map(|file| Secret::from_file(file, "admin password"))
            .transpose()?;
        let mut config = PostgresConfig::new(&self.admin_url, password)?;
        if let Some(file) = &self.admin_password_file {
            config = config.with_admin_password_file(file);
        }
        Ok(config
            .with_consumer_address(self.consumer_host.clone(), self.consumer_port)?
            .with_connect_timeout(self.connect_timeout)
            .with_statement_timeout(self.statement_timeout)
            .with_admin_sessions(usize::from(self.admin_sessions)))
    }
}

/// Why the binary does not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The flags do not make a configuration.
    #[error(transparent)]
    Config(#[from] PostgresConfigError),
    /// The administrator logged in and lacks a privilege the provider needs.
    #[error(transparent)]
    Admin(PostgresError),
}

/// The provisioner these flags ask for; logs its setup (the admin URL
/// without its password) and checks the administrator (see the module's
/// docs on the start).
///
/// # Errors
/// [`StartError::Config`] when the URL or the password file cannot be
/// used; [`StartError::Admin`] when the administrator lacks `CREATEROLE`,
/// `CREATEDB` or `INHERIT`.
pub async fn provisioner(flags: PostgresFlags) -> Result<PostgresProvisioner, StartError> {
    let config = flags.config()?;
    tracing::info!(
        admin = %config.admin_shown(),
        tls = %config.tls_shown(),
        consumers_at = %config.consumer_address(),
        admin_sessions = config.admin_sessions(),
        "PostgreSQL provider configured"
    );
    let provisioner = PostgresProvisioner::new(config);
    match provisioner.check_admin().await {
        Ok(()) => tracing::info!("the administrator may make roles and databases"),
        Err(error @ PostgresError::AdminLacks { .. }) => return Err(StartError::Admin(error)),
        Err(error) => tracing::warn!(
            error = %mesh_sdk::redact::error_text(&error),
            "could not check the administrator's privileges at start; the loop will say what fails"
        ),
    }
    Ok(provisioner)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_flag_of_mesh_postgres_is_in_the_command_lines_contract() {
        let contract = include_str!("../../../docs/contracts/command-lines.md");
        let missing: Vec<String> = command()
            .get_arguments()
            .filter_map(|a| a.get_long())
            .filter(|long| !matches!(*long, "help" | "version"))
            .filter(|long| !contract.contains(&format!("`--{long}")))
            .map(|long| format!("--{long}"))
            .collect();
        assert!(
            missing.is_empty(),
            "docs/contracts/command-lines.md does not name {missing:?}: add them to the \
             mesh-postgres table"
        );
    }

    #[test]
    fn flags_build_the_configuration() {
        let dir = tempfile::tempdir().unwrap();
        let password = dir.path().join("pw");
        std::fs::write(&password, "admin-pw\n").unwrap();
        let password = password.to_str().unwrap();
        let (_, flags) = MAIN
            .parse_from::<PostgresFlags, _, _>([
                "mesh-postgres",
                "--contributions",
                "c.json",
                "--admin-url",
                "postgres://postgres@127.0.0.1:5433/postgres",
                "--admin-password-file",
                password,
                "--consumer-port",
                "6432",
                "--connect-timeout",
                "3s",
            ])
            .unwrap();
        let config = flags.config().unwrap();
        assert_eq!(config.admin_password().unwrap().expose(), "admin-pw");
        assert_eq!(config.consumer_address(), "127.0.0.1:6432");
        assert_eq!(config.connect_timeout(), Duration::from_secs(3));
        assert_eq!(config.statement_timeout(), Duration::from_secs(20));
        assert_eq!(config.admin_sessions(), 4);
    }

    #[test]
    fn the_admin_url_is_required_and_never_echoed() {
        assert!(MAIN
            .parse_from::<PostgresFlags, _, _>(["mesh-postgres", "--contributions", "c.json"])
            .is_err());
        let (_, flags) = MAIN
            .parse_from::<PostgresFlags, _, _>([
                "mesh-postgres",
                "--contributions",
                "c.json",
                "--admin-url",
                "postgres://postgres:hunter2@127.0.0.1:notaport/postgres",
            ])
            .unwrap();
        let error = flags.config().err().unwrap().to_string();
        assert!(!error.contains("hunter2"), "{error}");
    }
}
