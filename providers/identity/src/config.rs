//! How the provider reaches Keycloak, and where Keycloak's bootstrap
//! command runs for the repair.

use std::path::PathBuf;
use std::time::Duration;

use mesh_sdk::Secret;
use mesh_sdk::SecretFileError as PasswordFileError;
use reqwest::Url;

use crate::bootstrap::{ContainerCli, Runtime};
use crate::login_backoff::LoginBackoff;

/// Default bound of one HTTP request to Keycloak.
pub const DEFAULT_HTTP_TIMEOUT: Duration = Duration::from_secs(10);

/// Default longest time between two listings of the realm's clients.
pub const DEFAULT_LIST_EVERY: Duration = Duration::from_secs(60);

/// Default bound of `kc.sh bootstrap-admin` (a JVM start):
/// under the loop's default repair bound of 2 minutes, leaving time for the
/// HTTP steps after it.
pub const DEFAULT_BOOTSTRAP_TIMEOUT: Duration = Duration::from_secs(90);

/// The configuration could not be used; ends the binary before the loop starts.
#[derive(Debug, thiserror::Error)]
pub enum IdentityConfigError {
    /// The Keycloak URL cannot be used.
    #[error("the keycloak URL {shown} cannot be used: {reason}")]
    Url {
        /// The URL as given (cut), or nothing when it holds a `@` (it may hold a password).
        shown: String,
        /// Why.
        reason: &'static str,
    },
    /// The realm name is empty.
    #[error("the realm name is empty")]
    Realm,
    /// The administrator's name is empty.
    #[error("the administrator's user name is empty")]
    AdminUser,
    /// The container name is not a container name or id.
    #[error(
        "{shown:?} is not a container name or id (a letter or digit, then letters, digits, _ . -)"
    )]
    Container {
        /// The name as given, cut to 64 characters.
        shown: String,
    },
    /// The `kc.sh` path is not absolute.
    #[error("--kc-sh must be an absolute path to Keycloak's kc.sh, not {shown:?}")]
    KcSh {
        /// The path as given, cut to 120 characters.
        shown: String,
    },
    /// Neither a password file nor a client secret file is given.
    #[error("give --admin-password-file, or --admin-client-id with --admin-client-secret-file")]
    AdminLogin,
    /// The admin password file cannot be used.
    #[error(transparent)]
    PasswordFile(#[from] PasswordFileError),
}

/// How the provider reaches Keycloak and its administrator, and where the
/// repair runs Keycloak's bootstrap command (its container, or this host).
///
/// ```no_run
/// use mesh_provider_identity::{ContainerCli, IdentityConfig};
///
/// let config = IdentityConfig::new(
///     "https://id.example.org",
///     "mesh",
///     "admin",
///     mesh_sdk::Secret::new("the-mesh-admin-password"),
/// )?
/// .with_container(Some("keycloak".into()), ContainerCli::Podman)?;
/// assert_eq!(config.realm(), "mesh");
/// # Ok::<(), mesh_provider_identity::IdentityConfigError>(())
/// ```
#[derive(Clone, Debug)]
pub struct IdentityConfig {
    url: Url,
    realm: String,
    admin_user: String,
    admin_password: Secret,
    admin_password_file: Option<std::path::PathBuf>,
    admin_login: AdminLogin,
    runtime: Option<Runtime>,
    login_backoff: LoginBackoff,
    list_every: Duration,
    http_timeout: Duration,
    bootstrap_timeout: Duration,
}

impl IdentityConfig {
    /// Keycloak at `url` (`http` or `https`, optionally under a path such as
    /// `/auth`), clients made in `realm`, the administrator `admin_user` of
    /// realm `master` logging in with `admin_password` (the mesh's).
    ///
    /// # Errors
    /// [`IdentityConfigError`] when the URL, the realm or the user cannot be used.
    pub fn new(
        url: &str,
        realm: &str,
        admin_user: &str,
        admin_password: Secret,
    ) -> Result<IdentityConfig, IdentityConfigError> {
        let refuse = |reason| IdentityConfigError::Url {
            shown: match url.contains('@') {
                true => "(not shown: it may hold a password)".to_owned(),
                false => url.chars().take(80).collect(),
            },
            reason,
        };
        let parsed = Url::parse(url).map_err(|_| refuse("not a URL"))?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(refuse("the scheme must be http or https"));
        }
        if !parsed.username().is_empty() || parsed.password().is_some() {
            return Err(refuse("it must not hold a user or a password"));
        }
        if parsed.query().is_some() || parsed.fragment().is_some() {
            return Err(refuse("it must not hold a query or a fragment"));
        }
        if parsed.cannot_be_a_base() || parsed.host().is_none() {
            return Err(refuse("it must name a host"));
        }
        if realm.trim().is_empty() {
            return Err(IdentityConfigError::Realm);
        }
        if admin_user.trim().is_empty() {
            return Err(IdentityConfigError::AdminUser);
        }
        Ok(IdentityConfig {
            url: parsed,
            realm: realm.to_owned(),
            admin_user: admin_user.to_owned(),
            admin_password,
            admin_password_file: None,
            admin_login: AdminLogin::Password,
            runtime: None,
            login_backoff: LoginBackoff::default(),
            list_every: DEFAULT_LIST_EVERY,
            http_timeout: DEFAULT_HTTP_TIMEOUT,
            bootstrap_timeout: DEFAULT_BOOTSTRAP_TIMEOUT,
        })
    }

    /// The container Keycloak runs in, and the runtime that reaches it: the
    /// repair runs the bootstrap command there (`None`: nowhere, until
    /// [`with_kc_sh`](Self::with_kc_sh) says where; without either the
    /// fault is still found and said, but not repaired).
    ///
    /// # Errors
    /// [`IdentityConfigError::Container`] when the name is not a container name or id.
    pub fn with_container(
        mut self,
        container: Option<String>,
        cli: ContainerCli,
    ) -> Result<IdentityConfig, IdentityConfigError> {
        let Some(container) = container else {
            self.runtime = None;
            return Ok(self);
        };
        if !is_container_name(&container) {
            return Err(IdentityConfigError::Container {
                shown: container.chars().take(64).collect(),
            });
        }
        self.runtime = Some(Runtime::Container { cli, container });
        Ok(self)
    }

    /// Keycloak runs on this host from its distribution: the repair runs
    /// that distribution's `kc_sh` (an absolute path) itself, with
    /// `config_file` as its `--config-file` when given, else with the
    /// server's settings from the provider's environment (`KC_DB*`).
    ///
    /// # Errors
    /// [`IdentityConfigError::KcSh`] when `kc_sh` is not absolute.
    pub fn with_kc_sh(
        mut self,
        kc_sh: PathBuf,
        config_file: Option<PathBuf>,
    ) -> Result<IdentityConfig, IdentityConfigError> {
        if !kc_sh.is_absolute() {
            return Err(IdentityConfigError::KcSh {
                shown: kc_sh.display().to_string().chars().take(120).collect(),
            });
        }
        self.runtime = Some(Runtime::Process { kc_sh, config_file });
        Ok(self)
    }

    /// How the administrator logs in: as a user with its password (the
    /// default), or as a service-account client of realm `master` with its
    /// secret ([`AdminLogin::ClientCredentials`]: `admin_user` is then the
    /// client's `clientId` and `admin_password` its secret).
    pub fn with_admin_login(mut self, login: AdminLogin) -> IdentityConfig {
        self.admin_login = login;
        self
    }

    /// How long the provider waits before it tries a refused administrator
    /// password again ([`crate::login_backoff`]).
    pub fn with_login_backoff(mut self, backoff: LoginBackoff) -> IdentityConfig {
        self.login_backoff = backoff;
        self
    }

    /// The longest time between two listings of the realm's clients
    /// (`held()` answers from what the provider knows in between; zero:
    /// every pass lists).
    pub fn with_list_every(mut self, every: Duration) -> IdentityConfig {
        self.list_every = every;
        self
    }

    /// Bound of one HTTP request to Keycloak.
    pub fn with_http_timeout(mut self, timeout: Duration) -> IdentityConfig {
        self.http_timeout = timeout;
        self
    }

    /// Bound of `kc.sh bootstrap-admin`.
    pub fn with_bootstrap_timeout(mut self, timeout: Duration) -> IdentityConfig {
        self.bootstrap_timeout = timeout;
        self
    }

    /// Keycloak's base URL.
    pub fn url(&self) -> &Url {
        &self.url
    }

    /// The realm clients are made in.
    pub fn realm(&self) -> &str {
        &self.realm
    }

    /// The administrator's user name, or its client's `clientId` (realm `master`).
    pub fn admin_user(&self) -> &str {
        &self.admin_user
    }

    /// The mesh's administrator password, or its client's secret, as read
    /// at start.
    pub fn admin_password(&self) -> &Secret {
        &self.admin_password
    }

    /// Reads the administrator's password (or its client's secret) again
    /// from `path` at each administrator login, and before a refused one
    /// is held back: a rotation needs no restart. A file that cannot be
    /// read then keeps the last good one.
    pub fn with_admin_password_file(
        mut self,
        path: impl Into<std::path::PathBuf>,
    ) -> IdentityConfig {
        self.admin_password_file = Some(path.into());
        self
    }

    /// The file the administrator's password is read again from, if any.
    pub fn admin_password_file(&self) -> Option<&std::path::Path> {
        self.admin_password_file.as_deref()
    }

    /// How the administrator logs in.
    pub fn admin_login(&self) -> AdminLogin {
        self.admin_login
    }

    /// Where the repair runs Keycloak's bootstrap command, if anywhere.
    pub fn runtime(&self) -> Option<&Runtime> {
        self.runtime.as_ref()
    }

    /// The login backoff of a refused administrator password.
    pub fn login_backoff(&self) -> LoginBackoff {
        self.login_backoff
    }

    /// The longest time between two listings of the realm's clients.
    pub fn list_every(&self) -> Duration {
        self.list_every
    }

    /// Bound of one HTTP request.
    pub fn http_timeout(&self) -> Duration {
        self.http_timeout
    }

    /// Bound of `kc.sh bootstrap-admin`.
    pub fn bootstrap_timeout(&self) -> Duration {
        self.bootstrap_timeout
    }
}

/// How the provider's administrator logs in to realm `master`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum AdminLogin {
    /// A user and its password (the password grant through `admin-cli`).
    #[default]
    Password,
    /// A confidential client with a service account holding the admin
    /// role, and its secret (the client-credentials grant), as Keycloak
    /// recommends for automation.
    ClientCredentials,
}

/// A Docker/Podman container name (`[a-zA-Z0-9][a-zA-Z0-9_.-]*`) or id; never
/// something the runtime could read as an option.
fn is_container_name(name: &str) -> bool {
    let mut bytes = name.bytes();
    bytes.next().is_some_and(|b| b.is_ascii_alphanumeric())
        && bytes.all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
        && name.len() <= 255
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(url: &str) -> Result<IdentityConfig, IdentityConfigError> {
        IdentityConfig::new(url, "mesh", "admin", Secret::new("pw"))
    }

    #[test]
    fn urls() {
        assert!(config("http://127.0.0.1:8080").is_ok());
        assert!(config("https://id.example.org/auth").is_ok());
        for bad in [
            "id.example.org",
            "ftp://id.example.org",
            "http://admin:hunter2@id.example.org",
            "http://id.example.org/?x=1",
            "mailto:someone",
        ] {
            let error = config(bad).unwrap_err().to_string();
            assert!(!error.contains("hunter2"), "{error}");
            assert!(error.starts_with("the keycloak URL"), "{error}");
        }
    }

    #[test]
    fn names() {
        assert!(matches!(
            IdentityConfig::new("http://k", " ", "admin", Secret::new("pw")),
            Err(IdentityConfigError::Realm)
        ));
        assert!(matches!(
            IdentityConfig::new("http://k", "mesh", "", Secret::new("pw")),
            Err(IdentityConfigError::AdminUser)
        ));
        let base = config("http://k").unwrap();
        for good in ["keycloak", "kc-1", "a1b2c3d4e5f6", "my_kc.v2"] {
            assert!(base
                .clone()
                .with_container(Some(good.into()), ContainerCli::Docker)
                .is_ok());
        }
        for bad in ["", "-e", "--privileged", "kc 1", "kc;rm", "/kc"] {
            assert!(
                base.clone()
                    .with_container(Some(bad.into()), ContainerCli::Docker)
                    .is_err(),
                "{bad}"
            );
        }
        let host = base
            .clone()
            .with_kc_sh("/opt/keycloak/bin/kc.sh".into(), None)
            .unwrap();
        assert_eq!(
            host.runtime().map(ToString::to_string).as_deref(),
            Some("on this host")
        );
        let error = base.with_kc_sh("bin/kc.sh".into(), None).unwrap_err();
        assert!(matches!(error, IdentityConfigError::KcSh { .. }), "{error}");
    }
}
