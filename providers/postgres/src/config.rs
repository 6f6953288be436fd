//! How the provider reaches PostgreSQL: the administrator's connection, the
//! address consumers use, and the timeouts.

use std::time::Duration;

use mesh_pg_tls::{MakeTls, Tls, TlsError};
use mesh_sdk::Secret;
use mesh_sdk::SecretFileError as PasswordFileError;
use tokio_postgres::config::Host;

/// Port PostgreSQL listens on when the URL names none.
pub const DEFAULT_PORT: u16 = mesh_pg_tls::DEFAULT_PORT;

/// Default bound of a login (admin or check), connect and authentication included.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Default bound of one statement sent as the administrator.
pub const DEFAULT_STATEMENT_TIMEOUT: Duration = Duration::from_secs(20);

/// Administrator sessions used at once unless configured.
pub const DEFAULT_ADMIN_SESSIONS: usize = 4;

/// The configuration could not be used; ends the binary before the loop starts.
#[derive(Debug, thiserror::Error)]
pub enum PostgresConfigError {
    /// The admin URL could not be parsed. Its parser's message is not shown: it may hold a password.
    #[error(
        "the admin URL cannot be parsed as a postgres:// URL (not shown: it may hold a password)"
    )]
    AdminUrl,
    /// The admin URL names no host, or more than one.
    #[error("the admin URL must name exactly one host, not {count}")]
    Hosts {
        /// How many it names.
        count: usize,
    },
    /// The admin URL names more than one port.
    #[error("the admin URL must name at most one port, not {count}")]
    Ports {
        /// How many it names.
        count: usize,
    },
    /// The admin URL names no user.
    #[error("the admin URL must name the administrator (postgres://USER@HOST:PORT/DATABASE)")]
    NoUser,
    /// The admin URL's `sslmode` or `sslrootcert` cannot be used (unknown
    /// mode, a checking mode without `sslrootcert`, an unreadable file).
    #[error("the admin URL's TLS settings cannot be used: {0}")]
    Tls(#[source] TlsError),
    /// The password is given both in the URL and in a file.
    #[error("the admin password is given both in the admin URL and in --admin-password-file; give it in the file only")]
    TwoPasswords,
    /// The admin password file cannot be used.
    #[error(transparent)]
    PasswordFile(#[from] PasswordFileError),
    /// The administrator connects over a unix socket, so the address
    /// consumers use must be given.
    #[error("the admin URL connects over a unix socket; give --consumer-host (the address consumers use, checked over TCP)")]
    NoConsumerHost,
}

/// How the provider reaches PostgreSQL.
///
/// ```no_run
/// use mesh_provider_postgres::PostgresConfig;
///
/// let config = PostgresConfig::new(
///     "postgres://postgres@127.0.0.1:5432/postgres",
///     Some(mesh_sdk::Secret::new("admin-password")),
/// )?
/// .with_consumer_address(None, None)?;
/// assert_eq!(config.consumer_address(), "127.0.0.1:5432");
/// # Ok::<(), mesh_provider_postgres::PostgresConfigError>(())
/// ```
#[derive(Clone)]
pub struct PostgresConfig {
    admin: tokio_postgres::Config,
    tls: Tls,
    admin_password: Option<Secret>,
    admin_password_file: Option<std::path::PathBuf>,
    shown: String,
    consumer_host: Option<String>,
    consumer_port: u16,
    connect_timeout: Duration,
    statement_timeout: Duration,
    admin_sessions: usize,
}

impl std::fmt::Debug for PostgresConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresConfig")
            .field("admin", &self.shown)
            .field("tls", &self.tls.to_string())
            .field("consumer_address", &self.consumer_address())
            .field("connect_timeout", &self.connect_timeout)
            .field("statement_timeout", &self.statement_timeout)
            .field("admin_sessions", &self.admin_sessions)
            .finish_non_exhaustive()
    }
}

impl PostgresConfig {
    /// The administrator's connection from a `postgres://` URL (or a
    /// `key=value` connection string) and the password from a file, if any.
    /// A password inside the URL is accepted (the file is better: a URL may
    /// end up on a command line); it is never shown.
    ///
    /// Consumers are checked at the URL's host and port unless
    /// [`with_consumer_address`](Self::with_consumer_address) says otherwise.
    ///
    /// The URL's `sslmode` (disable, prefer, require, verify-ca,
    /// verify-full; libpq's default prefer) and `sslrootcert=PATH` (the
    /// authorities' PEM file, read now) apply to the administrator's
    /// sessions and to the check's logins as each consumer alike; with
    /// `verify-full` the check verifies the consumers' host name. See
    /// [`mesh_pg_tls`].
    ///
    /// # Errors
    /// [`PostgresConfigError`] when the URL cannot be parsed, names no or several
    /// hosts, no user, TLS settings that cannot be used, or a password is
    /// given twice.
    pub fn new(
        admin_url: &str,
        password: Option<Secret>,
    ) -> Result<PostgresConfig, PostgresConfigError> {
        let (mut admin, tls) = mesh_pg_tls::parse(admin_url).map_err(|error| match error {
            TlsError::Url(_) => PostgresConfigError::AdminUrl,
            other => PostgresConfigError::Tls(other),
        })?;
        let hosts = admin.get_hosts().len();
        if hosts != 1 {
            return Err(PostgresConfigError::Hosts { count: hosts });
        }
        let ports = admin.get_ports().len();
        if ports > 1 {
            return Err(PostgresConfigError::Ports { count: ports });
        }
        if admin.get_user().is_none() {
            return Err(PostgresConfigError::NoUser);
        }
        let admin_password = match (admin.get_password(), password) {
            (Some(_), Some(_)) => return Err(PostgresConfigError::TwoPasswords),
            (Some(in_url), None) => Some(Secret::new(String::from_utf8_lossy(in_url))),
            (None, Some(from_file)) => {
                admin.password(from_file.expose());
                Some(from_file)
            }
            (None, None) => None,
        };
        if admin.get_application_name().is_none() {
            admin.application_name("mesh-postgres");
        }
        let port = admin.get_ports().first().copied().unwrap_or(DEFAULT_PORT);
        let consumer_host = match &admin.get_hosts()[0] {
            Host::Tcp(host) => Some(host.clone()),
            Host::Unix(_) => None,
        };
        let shown = mesh_pg_tls::shown(&admin);
        let mut config = PostgresConfig {
            admin,
            tls,
            admin_password,
            admin_password_file: None,
            shown,
            consumer_host,
            consumer_port: port,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            statement_timeout: DEFAULT_STATEMENT_TIMEOUT,
            admin_sessions: DEFAULT_ADMIN_SESSIONS,
        };
        config.admin.connect_timeout(config.connect_timeout);
        Ok(config)
    }

    /// The address consumers connect to, where the check logs in over TCP:
    /// `host` and `port` when given, else the admin URL's.
    ///
    /// # Errors
    /// [`PostgresConfigError::NoConsumerHost`] when no host is given and the admin
    /// URL connects over a unix socket.
    pub fn with_consumer_address(
        mut self,
        host: Option<String>,
        port: Option<u16>,
    ) -> Result<PostgresConfig, PostgresConfigError> {
        if let Some(host) = host {
            self.consumer_host = Some(host);
        }
        if let Some(port) = port {
            self.consumer_port = port;
        }
        if self.consumer_host.is_none() {
            return Err(PostgresConfigError::NoConsumerHost);
        }
        Ok(self)
    }

    /// Bounds every login (admin and check: socket, startup and SCRAM).
    pub fn with_connect_timeout(mut self, timeout: Duration) -> PostgresConfig {
        self.connect_timeout = timeout;
        self.admin.connect_timeout(timeout);
        self
    }

    /// Bounds every statement sent as the administrator, and the check's `SELECT 1`.
    pub fn with_statement_timeout(mut self, timeout: Duration) -> PostgresConfig {
        self.statement_timeout = timeout;
        self
    }

    /// Uses up to `sessions` administrator sessions at once (at least one):
    /// missing roles and databases are made that many at a time.
    pub fn with_admin_sessions(mut self, sessions: usize) -> PostgresConfig {
        self.admin_sessions = sessions.max(1);
        self
    }

    /// Reads the administrator's password again from `path` at each new
    /// administrator session (and so after a refused login), so a
    /// rotation needs no restart; the password given to [`new`](Self::new)
    /// is the one read at start. A file that cannot be read then keeps the
    /// last good password.
    pub fn with_admin_password_file(
        mut self,
        path: impl Into<std::path::PathBuf>,
    ) -> PostgresConfig {
        self.admin_password_file = Some(path.into());
        self
    }

    /// The file the administrator's password is read again from, if any.
    pub fn admin_password_file(&self) -> Option<&std::path::Path> {
        self.admin_password_file.as_deref()
    }

    /// Administrator sessions used at once.
    pub fn admin_sessions(&self) -> usize {
        self.admin_sessions
    }

    /// The admin URL as it may be shown: no password, ever.
    pub fn admin_shown(&self) -> &str {
        &self.shown
    }

    /// The TLS settings, as they may be shown (`sslmode=... sslrootcert=...`).
    pub fn tls_shown(&self) -> String {
        self.tls.to_string()
    }

    /// The administrator's password given at start, if one was.
    pub fn admin_password(&self) -> Option<&Secret> {
        self.admin_password.as_ref()
    }

    /// `host:port` consumers connect to.
    pub fn consumer_address(&self) -> String {
        format!(
            "{}:{}",
            self.consumer_host.as_deref().unwrap_or("?"),
            self.consumer_port
        )
    }

    /// The bound of a login.
    pub fn connect_timeout(&self) -> Duration {
        self.connect_timeout
    }

    /// The bound of a statement.
    pub fn statement_timeout(&self) -> Duration {
        self.statement_timeout
    }

    /// The administrator's connection settings (password included).
    pub(crate) fn admin(&self) -> &tokio_postgres::Config {
        &self.admin
    }

    /// What every login (administrator and check) speaks TLS with.
    pub(crate) fn tls(&self) -> MakeTls {
        self.tls.connector()
    }

    /// Connection settings for a consumer's login, without user or
    /// password, with the admin URL's TLS settings.
    pub(crate) fn consumer_base(&self) -> tokio_postgres::Config {
        let mut config = tokio_postgres::Config::new();
        config
            .host(self.consumer_host.as_deref().unwrap_or("localhost"))
            .port(self.consumer_port)
            .connect_timeout(self.connect_timeout)
            .channel_binding(self.admin.get_channel_binding())
            .application_name("mesh-postgres check");
        self.tls.apply(&mut config);
        config
    }
}

/// `postgres://user@host:port/dbname`, from the parsed settings: never the password.
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_password_is_kept_but_never_shown() {
        let config = PostgresConfig::new(
            "postgres://admin:s%40cret-pw@db.example:6543/postgres",
            None,
        )
        .unwrap();
        assert_eq!(
            config.admin_shown(),
            "postgres://admin@db.example:6543/postgres"
        );
        assert_eq!(config.admin_password().unwrap().expose(), "s@cret-pw");
        assert_eq!(config.consumer_address(), "db.example:6543");
        let debug = format!("{config:?}");
        assert!(!debug.contains("cret-pw"), "{debug}");
        assert!(debug.contains("postgres://admin@db.example:6543/postgres"));
    }

    #[test]
    fn the_file_password_is_used_and_defaults_apply() {
        let config = PostgresConfig::new(
            "postgres://postgres@127.0.0.1/postgres",
            Some(Secret::new("from-file")),
        )
        .unwrap();
        assert_eq!(config.admin().get_password(), Some(&b"from-file"[..]));
        assert_eq!(
            config.admin_shown(),
            "postgres://postgres@127.0.0.1:5432/postgres"
        );
        assert_eq!(config.connect_timeout(), DEFAULT_CONNECT_TIMEOUT);
        assert_eq!(
            config.admin().get_connect_timeout(),
            Some(&DEFAULT_CONNECT_TIMEOUT)
        );
        assert_eq!(config.admin().get_application_name(), Some("mesh-postgres"));
        let config = config
            .with_consumer_address(Some("10.0.0.5".into()), Some(6432))
            .unwrap()
            .with_connect_timeout(Duration::from_secs(3));
        assert_eq!(config.consumer_address(), "10.0.0.5:6432");
        assert_eq!(
            config.consumer_base().get_connect_timeout(),
            Some(&Duration::from_secs(3))
        );
    }

    #[test]
    fn bad_urls_are_refused_without_showing_them() {
        let cases = [
            (
                "postgres://admin:hunter2@host:notaport/db",
                "cannot be parsed",
            ),
            ("postgres://admin:hunter2@h1,h2/db", "exactly one host"),
            ("host=h1 port=1,2 user=x", "at most one port"),
            ("postgres://host/db", "must name the administrator"),
            (
                "postgres://u:hunter2@host/db?sslmode=verify-full",
                "the admin URL's TLS settings cannot be used: sslmode=verify-full checks the server's certificate and needs sslrootcert=PATH",
            ),
            (
                "postgres://u:hunter2@host/db?sslmode=verify",
                "unknown sslmode \"verify\"",
            ),
            (
                "postgres://u:hunter2@host/db?sslmode=verify-ca&sslrootcert=/nonexistent/ca.pem",
                "sslrootcert /nonexistent/ca.pem cannot be read",
            ),
        ];
        for (url, expected) in cases {
            let error = PostgresConfig::new(url, None).unwrap_err().to_string();
            assert!(error.contains(expected), "{url}: {error}");
            assert!(!error.contains("hunter2"), "{error}");
        }
        let error =
            PostgresConfig::new("postgres://u:pw@host/db", Some(Secret::new("pw2"))).unwrap_err();
        assert!(matches!(error, PostgresConfigError::TwoPasswords));
    }

    #[test]
    fn the_tls_settings_apply_to_the_admin_and_the_check() {
        use tokio_postgres::config::{ChannelBinding, SslMode};
        let cases = [
            ("", SslMode::Prefer, "sslmode=prefer"),
            ("?sslmode=disable", SslMode::Disable, "sslmode=disable"),
            ("?sslmode=prefer", SslMode::Prefer, "sslmode=prefer"),
            (
                "?sslmode=require&channel_binding=require",
                SslMode::Require,
                "sslmode=require",
            ),
        ];
        for (query, mode, shown) in cases {
            let url = format!("postgres://admin:pw@db.example/postgres{query}");
            let config = PostgresConfig::new(&url, None).unwrap();
            assert_eq!(config.admin().get_ssl_mode(), mode, "{url}");
            assert_eq!(config.consumer_base().get_ssl_mode(), mode, "{url}");
            assert_eq!(config.tls_shown(), shown);
            assert_eq!(
                config.consumer_base().get_channel_binding(),
                config.admin().get_channel_binding()
            );
            assert_eq!(
                config.admin_shown(),
                "postgres://admin@db.example:5432/postgres"
            );
            assert!(!format!("{config:?}").contains("pw@"));
        }
        let config = PostgresConfig::new(
            "postgres://a@h/db?sslmode=require&channel_binding=require",
            None,
        )
        .unwrap();
        assert_eq!(
            config.consumer_base().get_channel_binding(),
            ChannelBinding::Require
        );
    }

    #[test]
    fn a_unix_socket_admin_needs_the_consumer_host() {
        let config =
            PostgresConfig::new("host=/run/postgresql user=postgres dbname=postgres", None)
                .unwrap();
        assert_eq!(
            config.admin_shown(),
            "postgres://postgres@/postgres?host=/run/postgresql&port=5432"
        );
        assert!(matches!(
            config.clone().with_consumer_address(None, None),
            Err(PostgresConfigError::NoConsumerHost)
        ));
        let config = config
            .with_consumer_address(Some("127.0.0.1".into()), None)
            .unwrap();
        assert_eq!(config.consumer_address(), "127.0.0.1:5432");
    }
}
