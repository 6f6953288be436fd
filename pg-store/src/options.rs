//! Where the store is: [`DatabaseOptions`], shown without the password.

use std::path::Path;

use mesh_pg_tls::{Tls, TlsError};
use tokio_postgres::Config;

/// Where the store is: a connection URL or key-value string, and optionally
/// a password file (so no password needs to be on a command line).
///
/// The URL's `sslmode` (disable, prefer, require, verify-ca, verify-full;
/// libpq's default prefer) and `sslrootcert=PATH` say how the store is
/// spoken to over TLS (see [`mesh_pg_tls`]).
///
/// Its `Display` (and [`DatabaseOptions::shown`]) never holds the password.
#[derive(Clone)]
pub struct DatabaseOptions {
    pub(super) config: Config,
    pub(super) tls: Tls,
    pub(super) shown: String,
}

impl std::fmt::Debug for DatabaseOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DatabaseOptions")
            .field("target", &self.shown)
            .field("tls", &self.tls.to_string())
            .finish_non_exhaustive()
    }
}

impl std::fmt::Display for DatabaseOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.shown)
    }
}

/// The database options are unusable; ends the command (exit 2).
#[derive(Debug, thiserror::Error)]
pub enum DatabaseOptionsError {
    /// No database was given.
    #[error("no database given (--database URL or MESH_DATABASE_URL)")]
    Missing,
    /// The URL does not parse. The URL itself is not repeated: it may hold a password.
    #[error("the database URL is invalid: {0}")]
    Invalid(#[source] tokio_postgres::Error),
    /// The URL's `sslmode` or `sslrootcert` cannot be used (unknown mode, a
    /// checking mode without `sslrootcert`, an unreadable file).
    #[error("the database URL's TLS settings cannot be used: {0}")]
    Tls(#[source] TlsError),
    /// The password file could not be read.
    #[error("database password file {path} cannot be read: {source}")]
    PasswordFile {
        /// The file.
        path: std::path::PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

impl DatabaseOptions {
    /// Parses `url` (`postgres://user@host:port/db` or `host=.. user=..`);
    /// the password, if any, comes from `password_file` (trimmed), which wins
    /// over one in the URL.
    ///
    /// # Errors
    /// [`DatabaseOptionsError`] when the URL does not parse, its TLS
    /// settings cannot be used, or the file cannot be read.
    pub fn new(
        url: &str,
        password_file: Option<&Path>,
    ) -> Result<DatabaseOptions, DatabaseOptionsError> {
        let (mut config, tls) = mesh_pg_tls::parse(url).map_err(|error| match error {
            TlsError::Url(source) => DatabaseOptionsError::Invalid(source),
            other => DatabaseOptionsError::Tls(other),
        })?;
        if let Some(path) = password_file {
            let password = std::fs::read_to_string(path).map_err(|source| {
                DatabaseOptionsError::PasswordFile {
                    path: path.to_owned(),
                    source,
                }
            })?;
            config.password(password.trim());
        }
        config.application_name("mesh-controller");
        let shown = mesh_pg_tls::shown(&config);
        Ok(DatabaseOptions { config, tls, shown })
    }

    /// `postgres://user@host:port/dbname`, never the password.
    pub fn shown(&self) -> &str {
        &self.shown
    }

    /// The TLS settings as they may be shown: `sslmode=... [sslrootcert=...]`.
    pub fn tls_shown(&self) -> String {
        self.tls.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shown_target_never_holds_the_password() {
        let cases = [
            (
                "postgres://mesh:s3cret@db.example:5433/store",
                "postgres://mesh@db.example:5433/store",
            ),
            (
                "host=127.0.0.1 port=5432 user=mesh password=s3cret dbname=store",
                "postgres://mesh@127.0.0.1:5432/store",
            ),
            ("postgres://mesh@h/", "postgres://mesh@h:5432/mesh"),
        ];
        for (url, expected) in cases {
            let options = DatabaseOptions::new(url, None).unwrap();
            assert_eq!(options.shown(), expected);
            assert!(!format!("{options:?} {options}").contains("s3cret"));
        }
    }

    #[test]
    fn the_tls_settings_are_read_and_shown_without_the_password() {
        use tokio_postgres::config::SslMode;
        let cases = [
            ("", SslMode::Prefer, "sslmode=prefer"),
            ("?sslmode=disable", SslMode::Disable, "sslmode=disable"),
            ("?sslmode=require", SslMode::Require, "sslmode=require"),
        ];
        for (query, mode, tls) in cases {
            let options =
                DatabaseOptions::new(&format!("postgres://u:s3cret@h/db{query}"), None).unwrap();
            assert_eq!(options.config.get_ssl_mode(), mode);
            assert_eq!(options.tls_shown(), tls);
            assert_eq!(options.shown(), "postgres://u@h:5432/db");
            assert!(!format!("{options:?}").contains("s3cret"));
        }
    }

    #[test]
    fn a_password_file_wins_and_an_invalid_url_is_not_repeated() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("pw");
        std::fs::write(&file, "from-file\n").unwrap();
        let options = DatabaseOptions::new("postgres://u:old@h/db", Some(&file)).unwrap();
        assert_eq!(options.config.get_password(), Some(&b"from-file"[..]));
        let error = DatabaseOptions::new("postgres://u:s3cret@h:notaport/db", None)
            .unwrap_err()
            .to_string();
        assert!(!error.contains("s3cret"), "{error}");
        let cases = [
            (
                "postgres://u:s3cret@h/db?sslmode=verify-full",
                "the database URL's TLS settings cannot be used: sslmode=verify-full checks the server's certificate and needs sslrootcert=PATH",
            ),
            (
                "postgres://u:s3cret@h/db?sslmode=on",
                "unknown sslmode \"on\"",
            ),
            (
                "host=h user=u password=s3cret sslmode=verify-ca sslrootcert=/nope/ca.pem",
                "sslrootcert /nope/ca.pem cannot be read",
            ),
        ];
        for (url, expected) in cases {
            let error = DatabaseOptions::new(url, None).unwrap_err().to_string();
            assert!(error.contains(expected), "{url}: {error}");
            assert!(!error.contains("s3cret"), "{error}");
        }
        let missing = DatabaseOptions::new("postgres://u@h/db", Some(Path::new("/nope/pw")))
            .unwrap_err()
            .to_string();
        assert!(missing.contains("/nope/pw"), "{missing}");
    }
}
