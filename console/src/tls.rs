//! HTTPS for the console (`--tls-cert`, `--tls-key`, PEM): rustls with
//! ring's provider, HTTP/1.1. Handshakes run beside the accept loop, each
//! bounded, so a client that never finishes one holds up nobody.

use std::io;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio_rustls::server::TlsStream;
use tokio_rustls::TlsAcceptor;

/// How long a client may take over its handshake.
const HANDSHAKE_WITHIN: Duration = Duration::from_secs(10);

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

/// A listener whose connections are TLS: what `axum::serve` takes.
pub(crate) struct TlsListener {
    local: SocketAddr,
    ready: mpsc::Receiver<(TlsStream<TcpStream>, SocketAddr)>,
    _accepting: tokio_util::task::AbortOnDropHandle<()>,
}

impl TlsListener {
    /// Accepts on `listener`, handshaking with `config`.
    ///
    /// # Errors
    /// When the listener has no local address.
    pub(crate) fn new(
        listener: TcpListener,
        config: Arc<rustls::ServerConfig>,
    ) -> io::Result<TlsListener> {
        let local = listener.local_addr()?;
        let acceptor = TlsAcceptor::from(config);
        let (done, ready) = mpsc::channel(64);
        let accepting = tokio::spawn(async move {
            loop {
                let (tcp, peer) = match listener.accept().await {
                    Ok(accepted) => accepted,
                    Err(error) => {
                        tracing::debug!(error = %error, "the console cannot accept a connection");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                let (acceptor, done) = (acceptor.clone(), done.clone());
                tokio::spawn(async move {
                    match tokio::time::timeout(HANDSHAKE_WITHIN, acceptor.accept(tcp)).await {
                        Ok(Ok(tls)) => {
                            let _ = done.send((tls, peer)).await;
                        }
                        Ok(Err(error)) => {
                            tracing::debug!(peer = %peer, error = %error, "a TLS handshake with the console failed");
                        }
                        Err(_) => {
                            tracing::debug!(peer = %peer, "a TLS handshake with the console timed out")
                        }
                    }
                });
            }
        });
        Ok(TlsListener {
            local,
            ready,
            _accepting: tokio_util::task::AbortOnDropHandle::new(accepting),
        })
    }
}

impl axum::serve::Listener for TlsListener {
    type Io = TlsStream<TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.ready.recv().await {
            Some(accepted) => accepted,
            // The accept loop ends only with this listener.
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> io::Result<Self::Addr> {
        Ok(self.local)
    }
}
