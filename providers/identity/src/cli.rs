//! The `mesh-identity` command line: the SDK's shared provider flags plus
//! how to reach Keycloak and its container, and [`run`].
//!
//! ```text
//! mesh-identity --contributions PATH --keycloak-url URL --realm REALM
//!               --admin-password-file PATH [--admin-user admin]
//!               [--container NAME] [--container-cli docker|podman|/ABSOLUTE/PATH]
//!               [--keycloak-timeout 10s] [--bootstrap-timeout 90s] [SDK flags]
//! ```
//!
//! `--container-cli` takes `docker` or `podman` (found on `PATH`), or an
//! absolute path to an executable taking the same `exec` arguments (a
//! wrapper, or the fake runtime of the tests).
//!
//! Exit codes: 0 after a graceful stop (SIGINT/SIGTERM), 1 when the provider
//! cannot run (bad configuration, unreadable password file, bus setup), 2
//! for a bad command line.

use std::path::PathBuf;
use std::time::Duration;

use clap::Parser;

use crate::config::{ConfigError, IdentityConfig};
use crate::container::ContainerCli;
use crate::provisioner::IdentityProvisioner;
use mesh_sdk::internal::read_admin_password;

/// Exit code when the provider cannot run.
pub const EXIT_CANNOT_RUN: u8 = 1;

/// The flags of `mesh-identity`.
#[derive(Parser, Debug)]
#[command(
    name = "mesh-identity",
    version,
    about = "The mesh's identity provider: a confidential Keycloak client per consumer"
)]
pub struct Cli {
    /// The SDK's shared provider flags.
    #[command(flatten)]
    pub provider: mesh_sdk::ProviderArgs,

    /// Keycloak's base URL, e.g. `https://id.example.org` (a path such as `/auth` is kept).
    #[arg(long, env = "MESH_KEYCLOAK_URL")]
    pub keycloak_url: String,

    /// The realm the consumers' clients are made in.
    #[arg(long, env = "MESH_KEYCLOAK_REALM")]
    pub realm: String,

    /// The administrator of realm master the provider logs in as.
    #[arg(long, env = "MESH_KEYCLOAK_ADMIN_USER", default_value = "admin")]
    pub admin_user: String,

    /// File holding the mesh's administrator password (surrounding whitespace trimmed).
    #[arg(long, env = "MESH_KEYCLOAK_ADMIN_PASSWORD_FILE")]
    pub admin_password_file: PathBuf,

    /// The container Keycloak runs in; without it a refused administrator is
    /// said but not repaired.
    #[arg(long, env = "MESH_KEYCLOAK_CONTAINER")]
    pub container: Option<String>,

    /// The container runtime: docker, podman, or an absolute path to an
    /// executable that takes the same `exec` arguments.
    #[arg(long, env = "MESH_CONTAINER_CLI", default_value = "docker")]
    pub container_cli: ContainerCli,

    /// Bound of one HTTP request to Keycloak.
    #[arg(long, env = "MESH_KEYCLOAK_TIMEOUT", default_value = "10s", value_parser = humantime::parse_duration)]
    pub keycloak_timeout: Duration,

    /// Bound of `kc.sh bootstrap-admin` in the container (keep it under --repair-timeout).
    #[arg(long, env = "MESH_BOOTSTRAP_TIMEOUT", default_value = "90s", value_parser = humantime::parse_duration)]
    pub bootstrap_timeout: Duration,
}

impl Cli {
    /// The Keycloak configuration these flags ask for (reads the password file).
    ///
    /// # Errors
    /// [`ConfigError`] when a value or the password file cannot be used.
    pub fn config(&self) -> Result<IdentityConfig, ConfigError> {
        let password = read_admin_password(&self.admin_password_file)?;
        Ok(
            IdentityConfig::new(&self.keycloak_url, &self.realm, &self.admin_user, password)?
                .with_container(self.container.clone(), self.container_cli.clone())?
                .with_http_timeout(self.keycloak_timeout)
                .with_bootstrap_timeout(self.bootstrap_timeout),
        )
    }
}

/// The provider could not run; ends the binary with [`EXIT_CANNOT_RUN`].
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The configuration cannot be used.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The HTTP client cannot be built.
    #[error("cannot build the HTTP client")]
    Http(#[from] reqwest::Error),
    /// The loop could not run (bus, signals).
    #[error(transparent)]
    Loop(#[from] mesh_sdk::RunError),
}

/// Runs the provider until SIGINT or SIGTERM: logs its setup, then hands an
/// [`IdentityProvisioner`] to the SDK's loop.
///
/// # Errors
/// [`RunError`] when the configuration or the loop's setup fails.
pub async fn run(cli: Cli) -> Result<(), RunError> {
    mesh_sdk::internal::init_tracing("info");
    let config = cli.config()?;
    tracing::info!(
        keycloak = %config.url(),
        realm = %config.realm(),
        admin = %config.admin_user(),
        container = config.container().unwrap_or("(none: a refused administrator is said, not repaired)"),
        runtime = %config.container_cli(),
        contributions = %cli.provider.contributions.display(),
        "mesh-identity starting"
    );
    mesh_sdk::run(IdentityProvisioner::new(config)?, &cli.provider).await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_build_the_configuration() {
        let dir = tempfile::tempdir().unwrap();
        let pw = dir.path().join("pw");
        std::fs::write(&pw, "admin-secret\n").unwrap();
        let cli = Cli::try_parse_from([
            "mesh-identity",
            "--contributions",
            "c.json",
            "--keycloak-url",
            "http://127.0.0.1:8080",
            "--realm",
            "mesh",
            "--admin-password-file",
            pw.to_str().unwrap(),
            "--container",
            "keycloak",
            "--container-cli",
            "/opt/bin/runtime",
            "--bootstrap-timeout",
            "1m",
        ])
        .unwrap();
        let config = cli.config().unwrap();
        assert_eq!(config.admin_user(), "admin");
        assert_eq!(config.admin_password().expose(), "admin-secret");
        assert_eq!(config.container(), Some("keycloak"));
        assert_eq!(
            config.container_cli(),
            &ContainerCli::Path("/opt/bin/runtime".into())
        );
        assert_eq!(config.bootstrap_timeout(), Duration::from_secs(60));
        assert_eq!(config.http_timeout(), Duration::from_secs(10));
        assert!(!format!("{config:?}").contains("admin-secret"));
    }

    #[test]
    fn a_relative_runtime_is_refused() {
        let result = Cli::try_parse_from([
            "mesh-identity",
            "--contributions",
            "c.json",
            "--keycloak-url",
            "http://k",
            "--realm",
            "mesh",
            "--admin-password-file",
            "pw",
            "--container-cli",
            "bin/docker",
        ]);
        let error = result.unwrap_err().to_string();
        assert!(error.contains("absolute path"), "{error}");
    }
}
