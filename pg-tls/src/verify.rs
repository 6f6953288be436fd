//! How the server's certificate is checked for each `sslmode`, and the
//! plain message of a refusal ([`CertificateRefused`]).

use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::server::ParsedCertificate;
use rustls::{CertificateError, DigitallySignedStruct, RootCertStore, SignatureScheme};

/// The server's certificate was refused. Carried inside the connection
/// error (tokio-postgres' "error performing TLS handshake", then rustls'
/// "invalid peer certificate"); found again by [`crate::is_tls_refusal`].
/// Waiting does not end it: the server's certificate or the client's
/// settings must change.
#[derive(Clone, Debug, thiserror::Error)]
pub enum CertificateRefused {
    /// The chain does not lead to a trusted authority.
    #[error("unknown authority: the server's certificate is not signed by {roots}")]
    UnknownAuthority {
        /// The authorities trusted, e.g. `the authority in /etc/mesh/ca.pem`.
        roots: String,
    },
    /// The certificate is valid, but not for the host connected to (verify-full).
    #[error("name mismatch: the server's certificate is not for {expected}{}", valid_for(.presented))]
    NameMismatch {
        /// The host name or address connected to.
        expected: String,
        /// The names the certificate is valid for, when known.
        presented: Vec<String>,
    },
    /// Any other fault of the certificate (expired, not yet valid, wrong purpose, ...).
    #[error("the server's certificate is refused: {reason}")]
    Other {
        /// rustls' message.
        reason: String,
    },
}

fn valid_for(presented: &[String]) -> String {
    if presented.is_empty() {
        String::new()
    } else {
        format!(" (only for {})", presented.join(", "))
    }
}

/// `db.example` from webpki's `DnsName("db.example")`, `10.0.0.1` from
/// `IpAddress(10.0.0.1)`; other forms as they are.
fn bare_name(presented: &str) -> String {
    presented
        .strip_prefix("DnsName(\"")
        .and_then(|rest| rest.strip_suffix("\")"))
        .or_else(|| {
            presented
                .strip_prefix("IpAddress(")
                .and_then(|rest| rest.strip_suffix(')'))
        })
        .unwrap_or(presented)
        .to_owned()
}

/// What is checked of the server's certificate.
#[derive(Debug)]
pub(crate) enum Check {
    /// Nothing (`prefer`, `require` without `sslrootcert`): encrypted, not authenticated.
    Nothing,
    /// The chain up to the roots, not the name (`verify-ca`, `require` with `sslrootcert`).
    Chain(Arc<RootCertStore>),
    /// The chain and the host name or address (`verify-full`).
    Full(Arc<WebPkiServerVerifier>),
}

/// rustls' verifier for one [`Check`]; refusals come out in plain messages.
#[derive(Debug)]
pub(crate) struct Verifier {
    pub(crate) check: Check,
    /// The authorities trusted, for the message of a refusal.
    pub(crate) roots: String,
    pub(crate) provider: Arc<CryptoProvider>,
}

impl Verifier {
    /// A rustls error in a plain message: certificate faults become [`CertificateRefused`].
    fn plain(&self, error: rustls::Error, server_name: &ServerName<'_>) -> rustls::Error {
        let rustls::Error::InvalidCertificate(fault) = error else {
            return error;
        };
        let refused = match fault {
            CertificateError::UnknownIssuer => CertificateRefused::UnknownAuthority {
                roots: self.roots.clone(),
            },
            CertificateError::NotValidForName => CertificateRefused::NameMismatch {
                expected: server_name.to_str().into_owned(),
                presented: Vec::new(),
            },
            CertificateError::NotValidForNameContext {
                expected,
                presented,
            } => CertificateRefused::NameMismatch {
                expected: expected.to_str().into_owned(),
                presented: presented.iter().map(|name| bare_name(name)).collect(),
            },
            other => CertificateRefused::Other {
                reason: other.to_string(),
            },
        };
        rustls::Error::InvalidCertificate(CertificateError::Other(rustls::OtherError(Arc::new(
            refused,
        ))))
    }
}

impl ServerCertVerifier for Verifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match &self.check {
            Check::Nothing => Ok(ServerCertVerified::assertion()),
            Check::Chain(roots) => {
                let cert = ParsedCertificate::try_from(end_entity)
                    .map_err(|error| self.plain(error, server_name))?;
                rustls::client::verify_server_cert_signed_by_trust_anchor(
                    &cert,
                    roots,
                    intermediates,
                    now,
                    self.provider.signature_verification_algorithms.all,
                )
                .map_err(|error| self.plain(error, server_name))?;
                Ok(ServerCertVerified::assertion())
            }
            Check::Full(full) => full
                .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
                .map_err(|error| self.plain(error, server_name)),
        }
    }

    // The handshake's own signatures are always checked, even when the
    // certificate is not: the key that signs is the certificate's.
    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

/// The handshake's io error with a refusal of [`Verifier`] taken out of
/// rustls' wrapping (whose message would be its `Debug`): tokio-postgres then
/// says "error performing TLS handshake: unknown authority: ...".
pub(crate) fn plain_io(error: std::io::Error) -> std::io::Error {
    let refused = error
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<rustls::Error>())
        .and_then(|inner| match inner {
            rustls::Error::InvalidCertificate(CertificateError::Other(other)) => {
                other.0.downcast_ref::<CertificateRefused>().cloned()
            }
            _ => None,
        });
    match refused {
        Some(refused) => std::io::Error::new(error.kind(), refused),
        None => error,
    }
}

/// Whether a failed connection was refused over TLS for a reason waiting
/// will not change: the server's certificate was refused, or the settings
/// require TLS and the server does not speak it.
pub fn is_tls_refusal(error: &tokio_postgres::Error) -> bool {
    let mut next: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(error) = next {
        if error.is::<CertificateRefused>()
            || error.to_string() == "server does not support TLS"
            || matches!(
                error.downcast_ref::<rustls::Error>(),
                Some(rustls::Error::InvalidCertificate(_))
            )
        {
            return true;
        }
        // An io error hides the error it wraps from `source()`.
        if let Some(inner) = error
            .downcast_ref::<std::io::Error>()
            .and_then(std::io::Error::get_ref)
        {
            if is_refused_inner(inner) {
                return true;
            }
        }
        next = error.source();
    }
    false
}

fn is_refused_inner(error: &(dyn std::error::Error + Send + Sync + 'static)) -> bool {
    match error.downcast_ref::<rustls::Error>() {
        Some(rustls::Error::InvalidCertificate(_)) => true,
        _ => error.is::<CertificateRefused>(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_say_what_is_wrong() {
        let verifier = Verifier {
            check: Check::Nothing,
            roots: "the authority in /ca.pem".into(),
            provider: Arc::new(rustls::crypto::ring::default_provider()),
        };
        let name = ServerName::try_from("127.0.0.1").unwrap();
        let cases = [
            (
                CertificateError::UnknownIssuer,
                "unknown authority: the server's certificate is not signed by the authority in /ca.pem",
            ),
            (
                CertificateError::NotValidForName,
                "name mismatch: the server's certificate is not for 127.0.0.1",
            ),
            (
                CertificateError::Expired,
                "the server's certificate is refused: Expired",
            ),
        ];
        for (fault, expected) in cases {
            let error = verifier.plain(rustls::Error::InvalidCertificate(fault), &name);
            let io = std::io::Error::new(std::io::ErrorKind::InvalidData, error);
            let io = plain_io(io);
            assert_eq!(io.to_string(), expected);
            assert_eq!(io.kind(), std::io::ErrorKind::InvalidData);
            assert!(is_refused_inner(io.get_ref().unwrap()));
        }
        let untouched = plain_io(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            rustls::Error::InvalidCertificate(CertificateError::UnknownIssuer),
        ));
        assert!(is_refused_inner(untouched.get_ref().unwrap()));
        let other = verifier.plain(rustls::Error::DecryptError, &name);
        assert!(matches!(other, rustls::Error::DecryptError));
    }

    #[test]
    fn name_mismatch_lists_the_valid_names() {
        let refused = CertificateRefused::NameMismatch {
            expected: "localhost".into(),
            presented: vec!["db.example".into(), "10.0.0.1".into()],
        };
        assert_eq!(
            refused.to_string(),
            "name mismatch: the server's certificate is not for localhost (only for db.example, 10.0.0.1)"
        );
        assert_eq!(bare_name("DnsName(\"db.example\")"), "db.example");
        assert_eq!(bare_name("IpAddress(10.0.0.1)"), "10.0.0.1");
        assert_eq!(bare_name("DirectoryName"), "DirectoryName");
    }
}
