//! # mesh-pg-tls
//!
//! libpq's `sslmode` and `sslrootcert` for tokio-postgres, spoken through
//! rustls (ring): one implementation for every PostgreSQL connection of the
//! mesh (a provider's admin URL and its consumers' login check, the
//! controller's store).
//!
//! [`parse`] reads a `postgres://` URL or a libpq key-value string, takes
//! `sslmode` and `sslrootcert` out (tokio-postgres' own parser knows
//! `sslmode` only up to `require` and refuses `sslrootcert`), hands the rest
//! to tokio-postgres, and returns its [`tokio_postgres::Config`] (with the
//! matching `ssl_mode`) and the [`Tls`] to connect with.
//!
//! | `sslmode` | encrypted | certificate checked |
//! |---|---|---|
//! | `disable` | never | – |
//! | `prefer` (the default) | when the server speaks TLS, else plain | no |
//! | `require` | always | no; with `sslrootcert`, the chain (as `verify-ca`), as libpq does |
//! | `verify-ca` | always | the chain, up to `sslrootcert` (not the host name) |
//! | `verify-full` | always | the chain and the host name or IP address connected to |
//!
//! `sslrootcert=PATH` names a PEM file of the trusted authorities; it is
//! read when the URL is parsed (a missing or empty file is an error then),
//! and only for the modes that check. `sslrootcert=system` trusts the
//! system's roots (as libpq 16 does; `verify-full` only, and the default
//! mode with it). libpq's fallback of `~/.postgresql/root.crt` is not
//! followed: `verify-ca` and `verify-full` without `sslrootcert` are refused,
//! so what is trusted is always written where the URL is.
//!
//! [`shown`] prints a configuration without its password, the one way every
//! part of the mesh shows where it connects.
//!
//! SCRAM channel binding (`SCRAM-SHA-256-PLUS`, `tls-server-end-point`)
//! works over the encrypted session, and `channel_binding=require` is handed
//! to tokio-postgres as given.
//!
//! ```no_run
//! # async fn example() -> Result<(), Box<dyn std::error::Error>> {
//! let (config, tls) = mesh_pg_tls::parse(
//!     "postgres://mesh@db.example:5432/mesh?sslmode=verify-full&sslrootcert=/etc/mesh/pg-ca.pem",
//! )?;
//! let (client, connection) = config.connect(tls.connector()).await?;
//! tokio::spawn(connection);
//! client.simple_query("SELECT 1").await?;
//! # Ok(())
//! # }
//! ```

// Nothing public by accident: what this crate offers is chosen.
#![warn(unreachable_pub)]

mod connect;
mod params;
mod shown;
mod verify;

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::CertificateDer;
use rustls::RootCertStore;

pub use connect::{Connect, MakeTls, TlsStream};
pub use shown::{shown, DEFAULT_PORT};
pub use verify::{is_tls_refusal, CertificateRefused};

use verify::{Check, Verifier};

/// libpq's `sslmode` values this crate speaks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SslMode {
    /// Plain text only.
    Disable,
    /// TLS when the server speaks it, else plain; the certificate is not checked.
    #[default]
    Prefer,
    /// TLS always; the certificate is checked only when `sslrootcert` is given.
    Require,
    /// TLS always; the chain is checked against `sslrootcert`.
    VerifyCa,
    /// TLS always; the chain and the host name are checked.
    VerifyFull,
}

impl SslMode {
    /// Every mode, weakest first.
    pub const ALL: [SslMode; 5] = [
        SslMode::Disable,
        SslMode::Prefer,
        SslMode::Require,
        SslMode::VerifyCa,
        SslMode::VerifyFull,
    ];

    /// The mode as libpq writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            SslMode::Disable => "disable",
            SslMode::Prefer => "prefer",
            SslMode::Require => "require",
            SslMode::VerifyCa => "verify-ca",
            SslMode::VerifyFull => "verify-full",
        }
    }

    /// What tokio-postgres does before the handshake.
    fn negotiation(self) -> tokio_postgres::config::SslMode {
        match self {
            SslMode::Disable => tokio_postgres::config::SslMode::Disable,
            SslMode::Prefer => tokio_postgres::config::SslMode::Prefer,
            SslMode::Require | SslMode::VerifyCa | SslMode::VerifyFull => {
                tokio_postgres::config::SslMode::Require
            }
        }
    }
}

impl fmt::Display for SslMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for SslMode {
    type Err = TlsError;

    fn from_str(value: &str) -> Result<SslMode, TlsError> {
        SslMode::ALL
            .into_iter()
            .find(|mode| mode.as_str() == value)
            .ok_or_else(|| TlsError::UnknownSslMode {
                value: value.chars().take(40).collect(),
            })
    }
}

/// The authorities trusted (`sslrootcert`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RootCert {
    /// A PEM file of authority certificates.
    File(PathBuf),
    /// The system's roots (`sslrootcert=system`).
    System,
}

impl fmt::Display for RootCert {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RootCert::File(path) => write!(f, "{}", path.display()),
            RootCert::System => f.write_str("system"),
        }
    }
}

/// The TLS settings of a connection string are unusable. Ends the program
/// before it connects (a person must change the settings or the files).
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// `sslmode` names no mode this crate speaks.
    #[error("unknown sslmode \"{value}\": use disable, prefer, require, verify-ca or verify-full")]
    UnknownSslMode {
        /// The value given (its first 40 characters).
        value: String,
    },
    /// `verify-ca` or `verify-full` without `sslrootcert`.
    #[error("sslmode={mode} checks the server's certificate and needs sslrootcert=PATH (a PEM file of the authorities to trust) or sslrootcert=system")]
    NoRootCert {
        /// The mode.
        mode: SslMode,
    },
    /// `sslrootcert=system` with a mode other than `verify-full`.
    #[error("sslrootcert=system is only allowed with sslmode=verify-full, not sslmode={mode}")]
    SystemNeedsVerifyFull {
        /// The mode.
        mode: SslMode,
    },
    /// The `sslrootcert` file cannot be read.
    #[error("sslrootcert {path} cannot be read: {source}")]
    RootCertRead {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The `sslrootcert` file holds no usable certificate.
    #[error("sslrootcert {path} holds no usable certificate: {reason}")]
    RootCertInvalid {
        /// The file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// The system's roots cannot be loaded (`sslrootcert=system`).
    #[error("the system's root certificates cannot be loaded: {reason}")]
    SystemRoots {
        /// Why.
        reason: String,
    },
    /// The rest of the connection string does not parse. tokio-postgres'
    /// message names the option, never its value.
    #[error("the connection string is invalid: {0}")]
    Url(#[source] tokio_postgres::Error),
}

/// How to speak TLS to one server: the mode, the authorities, and the
/// connector built from them. Cheap to clone.
#[derive(Clone)]
pub struct Tls {
    mode: SslMode,
    root_cert: Option<RootCert>,
    connector: MakeTls,
}

impl fmt::Debug for Tls {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tls")
            .field("mode", &self.mode)
            .field("root_cert", &self.root_cert)
            .finish_non_exhaustive()
    }
}

/// `sslmode=verify-full sslrootcert=/etc/ca.pem`, as an operator wrote it.
impl fmt::Display for Tls {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "sslmode={}", self.mode)?;
        if let Some(root) = &self.root_cert {
            write!(f, " sslrootcert={root}")?;
        }
        Ok(())
    }
}

impl Tls {
    /// The settings for `sslmode` and `sslrootcert` as given (each `None`
    /// when absent); reads the authorities' file when the mode checks.
    ///
    /// # Errors
    /// [`TlsError`] for an unknown mode, a checking mode without
    /// `sslrootcert`, or a file that cannot be read or holds no certificate.
    pub fn new(sslmode: Option<&str>, sslrootcert: Option<&str>) -> Result<Tls, TlsError> {
        let root_cert = sslrootcert.map(|value| match value {
            "system" => RootCert::System,
            path => RootCert::File(PathBuf::from(path)),
        });
        let mode = match (sslmode, &root_cert) {
            (Some(mode), _) => mode.parse()?,
            (None, Some(RootCert::System)) => SslMode::VerifyFull,
            (None, _) => SslMode::default(),
        };
        if root_cert == Some(RootCert::System) && mode != SslMode::VerifyFull {
            return Err(TlsError::SystemNeedsVerifyFull { mode });
        }
        let check = match (mode, &root_cert) {
            (SslMode::Disable | SslMode::Prefer, _) | (SslMode::Require, None) => None,
            (SslMode::VerifyCa | SslMode::VerifyFull, None) => {
                return Err(TlsError::NoRootCert { mode })
            }
            (_, Some(root)) => Some((load_roots(root)?, root, mode == SslMode::VerifyFull)),
        };
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let (check, roots) = match check {
            None => (Check::Nothing, String::new()),
            Some((store, root, full)) => {
                let roots = match root {
                    RootCert::File(path) => format!("the authority in {}", path.display()),
                    RootCert::System => "an authority among the system's roots".to_owned(),
                };
                let store = Arc::new(store);
                let check = if full {
                    let verifier = rustls::client::WebPkiServerVerifier::builder_with_provider(
                        store,
                        Arc::clone(&provider),
                    )
                    .build()
                    .map_err(|error| invalid(root, error.to_string()))?;
                    Check::Full(verifier)
                } else {
                    Check::Chain(store)
                };
                (check, roots)
            }
        };
        let verifier = Verifier {
            check,
            roots,
            provider: Arc::clone(&provider),
        };
        let mut config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("ring speaks TLS 1.2 and 1.3")
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(verifier))
            .with_no_client_auth();
        // PostgreSQL 17's direct TLS negotiation requires it; older servers ignore it.
        config.alpn_protocols = vec![b"postgresql".to_vec()];
        Ok(Tls {
            mode,
            root_cert,
            connector: MakeTls::new(config),
        })
    }

    /// The mode.
    pub fn mode(&self) -> SslMode {
        self.mode
    }

    /// The authorities trusted, when given.
    pub fn root_cert(&self) -> Option<&RootCert> {
        self.root_cert.as_ref()
    }

    /// What tokio-postgres connects with: `config.connect(tls.connector())`.
    pub fn connector(&self) -> MakeTls {
        self.connector.clone()
    }

    /// Sets tokio-postgres' `ssl_mode` to match (for a configuration built
    /// by hand, such as a login to the same server as another user).
    pub fn apply(&self, config: &mut tokio_postgres::Config) {
        config.ssl_mode(self.mode.negotiation());
    }
}

/// Reads `url` (a `postgres://` URL or a key-value string): tokio-postgres'
/// settings for everything but `sslmode` and `sslrootcert` (its `ssl_mode`
/// set to match), and the [`Tls`] they ask for.
///
/// # Errors
/// [`TlsError::Url`] when the rest does not parse; any other [`TlsError`]
/// from [`Tls::new`].
pub fn parse(url: &str) -> Result<(tokio_postgres::Config, Tls), TlsError> {
    let split = params::split(url);
    let mut config: tokio_postgres::Config = split.rest.parse().map_err(TlsError::Url)?;
    let tls = Tls::new(split.sslmode.as_deref(), split.sslrootcert.as_deref())?;
    tls.apply(&mut config);
    Ok((config, tls))
}

fn invalid(root: &RootCert, reason: String) -> TlsError {
    match root {
        RootCert::File(path) => TlsError::RootCertInvalid {
            path: path.clone(),
            reason,
        },
        RootCert::System => TlsError::SystemRoots { reason },
    }
}

fn load_roots(root: &RootCert) -> Result<RootCertStore, TlsError> {
    let mut store = RootCertStore::empty();
    match root {
        RootCert::File(path) => {
            let pem = std::fs::read(path).map_err(|source| TlsError::RootCertRead {
                path: path.clone(),
                source,
            })?;
            let certs = CertificateDer::pem_slice_iter(&pem)
                .collect::<Result<Vec<_>, _>>()
                .map_err(|error| invalid(root, format!("not PEM: {error}")))?;
            for cert in certs {
                store
                    .add(cert)
                    .map_err(|error| invalid(root, error.to_string()))?;
            }
            if store.is_empty() {
                return Err(invalid(root, "no CERTIFICATE block in it".to_owned()));
            }
        }
        RootCert::System => {
            let found = rustls_native_certs::load_native_certs();
            let (added, _ignored) = store.add_parsable_certificates(found.certs);
            if added == 0 {
                let reason = found
                    .errors
                    .first()
                    .map_or("none found".to_owned(), ToString::to_string);
                return Err(TlsError::SystemRoots { reason });
            }
        }
    }
    Ok(store)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio_postgres::config::SslMode as Negotiation;

    #[test]
    fn every_mode_parses_and_sets_the_negotiation() {
        let ca = mesh_test_support::TestCa::new("pg-tls unit");
        let ca = ca.ca_file().display().to_string();
        let cases = [
            ("", None, Negotiation::Prefer),
            (
                "?sslmode=disable",
                Some(SslMode::Disable),
                Negotiation::Disable,
            ),
            (
                "?sslmode=prefer",
                Some(SslMode::Prefer),
                Negotiation::Prefer,
            ),
            (
                "?sslmode=require",
                Some(SslMode::Require),
                Negotiation::Require,
            ),
            (
                &format!("?sslmode=require&sslrootcert={ca}"),
                Some(SslMode::Require),
                Negotiation::Require,
            ),
            (
                &format!("?sslmode=verify-ca&sslrootcert={ca}"),
                Some(SslMode::VerifyCa),
                Negotiation::Require,
            ),
            (
                &format!("?sslrootcert={ca}&sslmode=verify-full"),
                Some(SslMode::VerifyFull),
                Negotiation::Require,
            ),
        ];
        for (query, mode, negotiation) in cases {
            let url = format!("postgres://u:pw@127.0.0.1:5432/db{query}");
            let (config, tls) = parse(&url).unwrap_or_else(|e| panic!("{url}: {e}"));
            assert_eq!(tls.mode(), mode.unwrap_or_default(), "{url}");
            assert_eq!(config.get_ssl_mode(), negotiation, "{url}");
            assert_eq!(config.get_password(), Some(&b"pw"[..]));
            assert_eq!(config.get_dbname(), Some("db"));
        }
        let (config, tls) = parse(&format!(
            "host=127.0.0.1 user=u sslmode=verify-full sslrootcert='{ca}'"
        ))
        .unwrap();
        assert_eq!(tls.mode(), SslMode::VerifyFull);
        assert_eq!(tls.root_cert(), Some(&RootCert::File(ca.clone().into())));
        assert_eq!(config.get_ssl_mode(), Negotiation::Require);
        assert_eq!(
            tls.to_string(),
            format!("sslmode=verify-full sslrootcert={ca}")
        );
        assert!(!format!("{tls:?}").contains("pw"));
    }

    #[test]
    fn a_mode_that_checks_loads_the_roots_and_others_do_not() {
        // prefer and disable never read sslrootcert, as libpq.
        for mode in ["disable", "prefer"] {
            let tls = Tls::new(Some(mode), Some("/nonexistent/ca.pem")).unwrap();
            assert_eq!(tls.mode().as_str(), mode);
        }
        for mode in ["require", "verify-ca", "verify-full"] {
            let error = Tls::new(Some(mode), Some("/nonexistent/ca.pem"))
                .unwrap_err()
                .to_string();
            assert!(
                error.starts_with("sslrootcert /nonexistent/ca.pem cannot be read: "),
                "{mode}: {error}"
            );
        }
    }

    #[test]
    fn bad_settings_are_refused_plainly() {
        let dir = tempfile::tempdir().unwrap();
        let empty = dir.path().join("empty.pem");
        std::fs::write(&empty, "no certificate here\n").unwrap();
        let empty = empty.to_str().unwrap();
        let broken = dir.path().join("broken.pem");
        std::fs::write(
            &broken,
            "-----BEGIN CERTIFICATE-----\nnot base64!\n-----END CERTIFICATE-----\n",
        )
        .unwrap();
        let broken = broken.to_str().unwrap();
        let cases: [(Option<&str>, Option<&str>, &str); 9] = [
            (
                Some("allow"),
                None,
                "unknown sslmode \"allow\": use disable, prefer, require, verify-ca or verify-full",
            ),
            (Some("VERIFY-FULL"), None, "unknown sslmode \"VERIFY-FULL\""),
            (Some(""), None, "unknown sslmode \"\""),
            (
                Some("verify-ca"),
                None,
                "sslmode=verify-ca checks the server's certificate and needs sslrootcert=PATH",
            ),
            (
                Some("verify-full"),
                None,
                "sslmode=verify-full checks the server's certificate and needs sslrootcert=PATH",
            ),
            (
                Some("verify-ca"),
                Some("system"),
                "sslrootcert=system is only allowed with sslmode=verify-full, not sslmode=verify-ca",
            ),
            (
                Some("require"),
                Some("system"),
                "sslrootcert=system is only allowed with sslmode=verify-full, not sslmode=require",
            ),
            (
                Some("verify-full"),
                Some(empty),
                "holds no usable certificate: no CERTIFICATE block in it",
            ),
            (Some("verify-ca"), Some(broken), "holds no usable certificate"),
        ];
        for (mode, root, expected) in cases {
            let error = Tls::new(mode, root).unwrap_err().to_string();
            assert!(error.contains(expected), "{mode:?} {root:?}: {error}");
        }
        let long = "x".repeat(100);
        let error = Tls::new(Some(&long), None).unwrap_err().to_string();
        assert!(error.len() < 120, "{error}");
    }

    #[test]
    fn system_roots_default_to_verify_full() {
        match Tls::new(None, Some("system")) {
            Ok(tls) => {
                assert_eq!(tls.mode(), SslMode::VerifyFull);
                assert_eq!(tls.root_cert(), Some(&RootCert::System));
            }
            // A machine without a CA bundle says so.
            Err(error) => assert!(matches!(error, TlsError::SystemRoots { .. }), "{error}"),
        }
    }

    #[test]
    fn the_rest_of_the_url_is_still_checked_and_never_echoed() {
        let error = parse("postgres://u:hunter2@h:notaport/db?sslmode=require")
            .unwrap_err()
            .to_string();
        assert!(
            error.starts_with("the connection string is invalid"),
            "{error}"
        );
        assert!(!error.contains("hunter2"), "{error}");
        let error = parse("postgres://u:hunter2@h/db?sslcert=/x.pem")
            .unwrap_err()
            .to_string();
        assert!(!error.contains("hunter2"), "{error}");
    }
}
