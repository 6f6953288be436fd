//! The `mesh-identity` command line: the SDK's shared provider flags plus
//! how to reach Keycloak and where its bootstrap command runs ([`IdentityFlags`]),
//! run by the SDK's [`MAIN`].
//!
//! ```text
//! mesh-identity --contributions PATH --keycloak-url URL --realm REALM
//!               --admin-password-file PATH [--admin-user admin]
//!               [--container NAME [--container-cli docker|podman|/ABSOLUTE/PATH]
//!                | --kc-sh /ABSOLUTE/PATH/kc.sh [--kc-config-file PATH]]
//!               [--keycloak-timeout 10s] [--bootstrap-timeout 90s] [SDK flags]
//! ```
//!
//! `--container-cli` takes `docker` or `podman` (found on `PATH`), or an
//! absolute path to an executable taking the same `exec` arguments (a
//! wrapper, or the fake runtime of the tests).
//!
//! Exit codes: 0 after a graceful stop (SIGINT/SIGTERM), 1 when the provider
//! cannot run (bad configuration, unreadable password file, bus setup), 2
//! for a bad command line, 130 or 143 when a stop had to be forced (not
//! ended 10 s after SIGINT or SIGTERM, or a second signal: docs/contracts/command-lines.md#stopping).

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use mesh_sdk::{ProviderMain, Secret, StandIn};

use crate::bootstrap::ContainerCli;
use crate::config::{AdminLogin, IdentityConfig, IdentityConfigError};
use crate::login_backoff::LoginBackoff;
use crate::provisioner::IdentityProvisioner;

/// The binary: what `--help` says first, for an operator.
pub const MAIN: ProviderMain = ProviderMain::new(
    "mesh-identity",
    "Makes a confidential Keycloak client for each consumer the mesh lists \
     (its secret the consumer's minted secret), checks each works by logging \
     in as the consumer, retires the ones no longer listed, repairs a refused \
     administrator login with Keycloak's own kc.sh bootstrap-admin (in its \
     container or on this host), and says on the mesh's bus when it keeps \
     failing one.",
)
.version(env!("CARGO_PKG_VERSION"))
.credentials(&[ADMIN_PASSWORD, ADMIN_CLIENT_SECRET]);

/// The unit's credential `admin-password` stands in for an unset
/// `MESH_KEYCLOAK_ADMIN_PASSWORD_FILE`, unless the provider logs in as a
/// client (`MESH_KEYCLOAK_ADMIN_CLIENT_ID`; `mesh_runtime::credentials`).
pub const ADMIN_PASSWORD: StandIn = StandIn {
    variable: "MESH_KEYCLOAK_ADMIN_PASSWORD_FILE",
    credential: "admin-password",
    with: None,
    unless: Some("MESH_KEYCLOAK_ADMIN_CLIENT_ID"),
};

/// The unit's credential `admin-client-secret` stands in for an unset
/// `MESH_KEYCLOAK_ADMIN_CLIENT_SECRET_FILE` when the provider logs in as a
/// client (`MESH_KEYCLOAK_ADMIN_CLIENT_ID`).
pub const ADMIN_CLIENT_SECRET: StandIn = StandIn {
    variable: "MESH_KEYCLOAK_ADMIN_CLIENT_SECRET_FILE",
    credential: "admin-client-secret",
    with: Some("MESH_KEYCLOAK_ADMIN_CLIENT_ID"),
    unless: None,
};

/// The whole command line of `mesh-identity` (the SDK's shared flags and
/// [`IdentityFlags`]), as clap sees it: for its man page and shell completions.
pub fn command() -> clap::Command {
    MAIN.command::<IdentityFlags>()
}

/// The flags of `mesh-identity` beyond the SDK's shared ones.
#[derive(Args, Debug)]
pub struct IdentityFlags {
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
    #[arg(
        long,
        env = "MESH_KEYCLOAK_ADMIN_PASSWORD_FILE",
        required_unless_present = "admin_client_id",
        conflicts_with = "admin_client_id"
    )]
    pub admin_password_file: Option<PathBuf>,

    /// Log in as this service-account client of realm master (its service
    /// account holding the admin role) instead of a user: the
    /// client-credentials grant, as Keycloak recommends for automation.
    #[arg(
        long,
        env = "MESH_KEYCLOAK_ADMIN_CLIENT_ID",
        requires = "admin_client_secret_file"
    )]
    pub admin_client_id: Option<String>,

    /// File holding that client's secret (surrounding whitespace trimmed).
    #[arg(
        long,
        env = "MESH_KEYCLOAK_ADMIN_CLIENT_SECRET_FILE",
        requires = "admin_client_id"
    )]
    pub admin_client_secret_file: Option<PathBuf>,

    /// The container Keycloak runs in: the repair runs kc.sh bootstrap-admin
    /// there. Without it or --kc-sh a refused administrator is reported but not
    /// repaired.
    #[arg(long, env = "MESH_KEYCLOAK_CONTAINER", conflicts_with = "kc_sh")]
    pub container: Option<String>,

    /// The container runtime: docker, podman, or an absolute path to an
    /// executable that takes the same `exec` arguments.
    #[arg(long, env = "MESH_CONTAINER_CLI", default_value = "docker")]
    pub container_cli: ContainerCli,

    /// Keycloak runs on this host from its distribution: the absolute path
    /// of its kc.sh, which the repair runs (with --optimized, beside the live
    /// server). The server's database settings reach it from this program's
    /// environment (KC_DB, KC_DB_URL, KC_DB_USERNAME, KC_DB_PASSWORD, ...)
    /// or from --kc-config-file.
    #[arg(long, env = "MESH_KEYCLOAK_KC_SH")]
    pub kc_sh: Option<PathBuf>,

    /// The server's keycloak.conf, given to kc.sh bootstrap-admin as --config-file.
    #[arg(long, env = "MESH_KEYCLOAK_CONFIG_FILE", requires = "kc_sh")]
    pub kc_config_file: Option<PathBuf>,

    /// Bound of one HTTP request to Keycloak.
    #[arg(long, env = "MESH_KEYCLOAK_TIMEOUT", default_value = "10s", value_parser = humantime::parse_duration)]
    pub keycloak_timeout: Duration,

    /// After Keycloak refuses the administrator's password, it is not tried
    /// again for this long, doubling after each refusal in a row up to
    /// --admin-login-hold-max: with brute-force protection on, the provider's
    /// own retries never lock the administrator out.
    #[arg(long, env = "MESH_ADMIN_LOGIN_HOLD", default_value = "5m", value_parser = humantime::parse_duration)]
    pub admin_login_hold: Duration,

    /// Longest hold of a refused administrator password.
    #[arg(long, env = "MESH_ADMIN_LOGIN_HOLD_MAX", default_value = "2h", value_parser = humantime::parse_duration)]
    pub admin_login_hold_max: Duration,

    /// The realm's clients are listed (for retirement: clients made by mesh
    /// that no consumer lists any more) at most this often; in between the
    /// provider answers from what it knows of its own clients, so a change
    /// made by hand in Keycloak is seen this much later. 0 lists every pass.
    #[arg(long, env = "MESH_KEYCLOAK_LIST_EVERY", default_value = "1m", value_parser = humantime::parse_duration)]
    pub list_every: Duration,

    /// Bound of `kc.sh bootstrap-admin` (keep it under --repair-timeout).
    #[arg(long, env = "MESH_BOOTSTRAP_TIMEOUT", default_value = "90s", value_parser = humantime::parse_duration)]
    pub bootstrap_timeout: Duration,
}

impl IdentityFlags {
    /// The Keycloak configuration these flags ask for (reads the password file).
    ///
    /// # Errors
    /// [`IdentityConfigError`] when a value or the password file cannot be used.
    pub fn config(&self) -> Result<IdentityConfig, IdentityConfigError> {
        let (name, file, login) = match (&self.admin_client_id, &self.admin_client_secret_file) {
            (Some(client), Some(file)) => (client, file, AdminLogin::ClientCredentials),
            _ => (
                &self.admin_user,
                self.admin_password_file
                    .as_ref()
                    .ok_or(IdentityConfigError::AdminLogin)?,
                AdminLogin::Password,
            ),
        };
        let secret = Secret::from_file(file, "admin password")?;
        let mut config = IdentityConfig::new(&self.keycloak_url, &self.realm, name, secret)?
            .with_admin_password_file(file)
            .with_admin_login(login)
            .with_container(self.container.clone(), self.container_cli.clone())?
            .with_http_timeout(self.keycloak_timeout)
            .with_bootstrap_timeout(self.bootstrap_timeout)
            .with_list_every(self.list_every)
            .with_login_backoff(LoginBackoff {
                first: self.admin_login_hold,
                max: self.admin_login_hold_max,
            });
        if let Some(kc_sh) = &self.kc_sh {
            config = config.with_kc_sh(kc_sh.clone(), self.kc_config_file.clone())?;
        }
        Ok(config)
    }
}

/// The provisioner these flags ask for; logs its setup.
///
/// # Errors
/// When the configuration ([`IdentityConfigError`]) or the HTTP client cannot be had.
pub fn provisioner(
    flags: IdentityFlags,
) -> Result<IdentityProvisioner, Box<dyn std::error::Error + Send + Sync>> {
    let config = flags.config()?;
    tracing::info!(
        keycloak = %config.url(),
        realm = %config.realm(),
        admin = %config.admin_user(),
        admin_login = ?config.admin_login(),
        repair = %config.runtime().map_or("(none: a refused administrator is said, not repaired)".to_owned(),
            |runtime| format!("kc.sh bootstrap-admin {runtime}")),
        "identity provider configured"
    );
    Ok(IdentityProvisioner::new(config)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_build_the_configuration() {
        let dir = tempfile::tempdir().unwrap();
        let pw = dir.path().join("pw");
        std::fs::write(&pw, "admin-secret\n").unwrap();
        let (_, flags) = MAIN
            .parse_from::<IdentityFlags, _, _>([
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
        let config = flags.config().unwrap();
        assert_eq!(config.admin_user(), "admin");
        assert_eq!(config.admin_password().expose(), "admin-secret");
        assert_eq!(
            config.runtime(),
            Some(&crate::bootstrap::Runtime::Container {
                cli: ContainerCli::Path("/opt/bin/runtime".into()),
                container: "keycloak".into()
            })
        );
        assert_eq!(config.bootstrap_timeout(), Duration::from_secs(60));
        assert_eq!(config.http_timeout(), Duration::from_secs(10));
        assert!(!format!("{config:?}").contains("admin-secret"));
    }

    #[test]
    fn a_relative_runtime_is_refused() {
        let result = parse(&[
            "--admin-password-file",
            "pw",
            "--container-cli",
            "bin/docker",
        ]);
        let error = result.unwrap_err().to_string();
        assert!(error.contains("absolute path"), "{error}");
    }

    /// The command line of a provider over realm `mesh` at `http://k`, and `more`.
    fn parse(more: &[&str]) -> Result<(mesh_sdk::ProviderArgs, IdentityFlags), clap::Error> {
        let base = [
            "mesh-identity",
            "--contributions",
            "c.json",
            "--keycloak-url",
            "http://k",
            "--realm",
            "mesh",
        ];
        MAIN.parse_from::<IdentityFlags, _, _>(base.iter().chain(more))
    }

    #[test]
    fn the_administrator_logs_in_by_password_or_as_a_service_account_client() {
        let dir = tempfile::tempdir().unwrap();
        let (pw, secret) = (dir.path().join("pw"), dir.path().join("secret"));
        std::fs::write(&pw, "admin-secret\n").unwrap();
        std::fs::write(&secret, " client-secret \n").unwrap();
        let with = |more: &[&str]| parse(more);
        let (_, flags) = with(&[
            "--admin-client-id",
            "mesh-automation",
            "--admin-client-secret-file",
            secret.to_str().unwrap(),
        ])
        .unwrap();
        let config = flags.config().unwrap();
        assert_eq!(config.admin_login(), AdminLogin::ClientCredentials);
        assert_eq!(config.admin_user(), "mesh-automation");
        assert_eq!(config.admin_password().expose(), "client-secret");
        let (_, flags) = with(&["--admin-password-file", pw.to_str().unwrap()]).unwrap();
        assert_eq!(flags.config().unwrap().admin_login(), AdminLogin::Password);

        let neither = with(&[]).unwrap_err().to_string();
        assert!(neither.contains("--admin-password-file"), "{neither}");
        let both = with(&[
            "--admin-password-file",
            pw.to_str().unwrap(),
            "--admin-client-id",
            "c",
            "--admin-client-secret-file",
            secret.to_str().unwrap(),
        ])
        .unwrap_err()
        .to_string();
        assert!(both.contains("cannot be used with"), "{both}");
        let no_secret = with(&["--admin-client-id", "c"]).unwrap_err().to_string();
        assert!(
            no_secret.contains("--admin-client-secret-file"),
            "{no_secret}"
        );
    }

    #[test]
    fn kc_sh_runs_on_this_host_and_excludes_a_container() {
        let dir = tempfile::tempdir().unwrap();
        let pw = dir.path().join("pw");
        std::fs::write(&pw, "admin-secret\n").unwrap();
        let with = |more: &[&str]| {
            let password = ["--admin-password-file", pw.to_str().unwrap()];
            parse(&[&password[..], more].concat())
        };
        let (_, flags) = with(&[
            "--kc-sh",
            "/opt/keycloak/bin/kc.sh",
            "--kc-config-file",
            "/etc/keycloak/keycloak.conf",
        ])
        .unwrap();
        assert_eq!(
            flags.config().unwrap().runtime(),
            Some(&crate::bootstrap::Runtime::Process {
                kc_sh: "/opt/keycloak/bin/kc.sh".into(),
                config_file: Some("/etc/keycloak/keycloak.conf".into()),
            })
        );
        let both = with(&["--kc-sh", "/k/kc.sh", "--container", "kc"]).unwrap_err();
        assert!(both.to_string().contains("cannot be used with"), "{both}");
        let conf_alone = with(&["--kc-config-file", "/etc/kc.conf"]).unwrap_err();
        assert!(conf_alone.to_string().contains("--kc-sh"), "{conf_alone}");
        let (_, relative) = with(&["--kc-sh", "bin/kc.sh"]).unwrap();
        let error = relative.config().unwrap_err().to_string();
        assert!(error.contains("absolute path"), "{error}");
    }
}
