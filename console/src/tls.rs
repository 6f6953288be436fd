//! HTTPS for the console (`--tls-cert`, `--tls-key`, PEM): rustls with
//! ring's provider, HTTP/1.1. Each connection's handshake runs in its own
//! task, bounded by the header-read timeout (`conns`), so a client that
//! never finishes one holds up nobody.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// The certificate or key cannot be used. Ends the command (exit 2).
#[derive(Debug, thiserror::Error)]
pub enum ConsoleTlsError {
    /// A PEM file could not be read or holds nothing usable.
    #[error("{what} {path} cannot be used: {reason}")]
    File {
        /// `--tls-cert` or `--tls-key`.
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// Why (no key material in it).
        reason: String,
    },
    /// rustls refused the pair (the key does not match, an unsupported key).
    #[error("the certificate and key cannot serve TLS: {0}")]
    Config(#[source] rustls::Error),
}

/// The server configuration of a certificate chain and its key.
///
/// # Errors
/// [`ConsoleTlsError`] when a file cannot be read, holds no certificate or key, or
/// rustls refuses the pair.
pub(crate) fn config(
    cert: &Path,
    key: &Path,
) -> Result<Arc<rustls::ServerConfig>, ConsoleTlsError> {
    let file = |what: &'static str, path: &Path, reason: String| ConsoleTlsError::File {
        what,
        path: path.to_owned(),
        reason,
    };
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert)
        .map_err(|e| file("--tls-cert", cert, e.to_string()))?
        .collect::<Result<_, _>>()
        .map_err(|e| file("--tls-cert", cert, e.to_string()))?;
    if certs.is_empty() {
        return Err(file("--tls-cert", cert, "no certificate in it".into()));
    }
    // The key file's content never goes into the error: only the reader's.
    let key =
        PrivateKeyDer::from_pem_file(key).map_err(|e| file("--tls-key", key, e.to_string()))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(ConsoleTlsError::Config)?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(ConsoleTlsError::Config)?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}
