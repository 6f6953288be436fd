//! tokio-postgres' TLS hooks on rustls: [`MakeTls`] makes a connector per
//! host, the stream reports `tls-server-end-point` channel binding so that
//! SCRAM-SHA-256-PLUS works.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use rustls::pki_types::ServerName;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio_postgres::tls::{ChannelBinding, MakeTlsConnect, TlsConnect};

/// What tokio-postgres connects with (`config.connect(tls.connector())`):
/// rustls with the checks the `sslmode` asks for. Cheap to clone.
#[derive(Clone, Debug)]
pub struct MakeTls {
    config: Arc<rustls::ClientConfig>,
}

impl MakeTls {
    pub(crate) fn new(config: rustls::ClientConfig) -> MakeTls {
        MakeTls {
            config: Arc::new(config),
        }
    }
}

impl<S> MakeTlsConnect<S> for MakeTls
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    type Stream = TlsStream<S>;
    type TlsConnect = Connect;
    type Error = io::Error;

    fn make_tls_connect(&mut self, domain: &str) -> Result<Connect, io::Error> {
        // A unix socket has no host name: the server refuses TLS there, and
        // tokio-postgres fails before the handshake if it did not.
        let name = ServerName::try_from(domain.to_owned()).ok();
        Ok(Connect {
            config: Arc::clone(&self.config),
            name,
        })
    }
}

/// One handshake with one host.
#[derive(Debug)]
pub struct Connect {
    config: Arc<rustls::ClientConfig>,
    name: Option<ServerName<'static>>,
}

impl<S> TlsConnect<S> for Connect
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    type Stream = TlsStream<S>;
    type Error = io::Error;
    type Future = Pin<Box<dyn Future<Output = io::Result<TlsStream<S>>> + Send>>;

    fn connect(self, stream: S) -> Self::Future {
        Box::pin(async move {
            let name = self.name.ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "no host name to check the server's certificate against",
                )
            })?;
            let stream = tokio_rustls::TlsConnector::from(self.config)
                .connect(name, stream)
                .await
                .map_err(crate::verify::plain_io)?;
            Ok(TlsStream(stream))
        })
    }
}

/// A session encrypted by rustls.
#[derive(Debug)]
pub struct TlsStream<S>(tokio_rustls::client::TlsStream<S>);

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncRead for TlsStream<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_read(cx, buf)
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncWrite for TlsStream<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.0).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_shutdown(cx)
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> tokio_postgres::tls::TlsStream for TlsStream<S> {
    fn channel_binding(&self) -> ChannelBinding {
        let (_, session) = self.0.get_ref();
        session
            .peer_certificates()
            .and_then(|chain| chain.first())
            .and_then(|cert| server_end_point(cert))
            .map_or_else(ChannelBinding::none, ChannelBinding::tls_server_end_point)
    }
}

/// RFC 5929 `tls-server-end-point`: the certificate hashed with the hash of
/// its signature algorithm (SHA-256 for MD5 and SHA-1). `None` for an
/// algorithm without one (e.g. Ed25519): SCRAM then runs without channel
/// binding, as with libpq.
pub(crate) fn server_end_point(der: &[u8]) -> Option<Vec<u8>> {
    let algorithm = signature_hash(der)?;
    Some(ring::digest::digest(algorithm, der).as_ref().to_vec())
}

/// The hash of a DER certificate's `signatureAlgorithm`.
fn signature_hash(der: &[u8]) -> Option<&'static ring::digest::Algorithm> {
    const RSA: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01];
    const ECDSA_SHA2: &[u8] = &[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x04, 0x03];
    const ECDSA_SHA1: &[u8] = &[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x04, 0x01];
    let (0x30, certificate, _) = tlv(der)? else {
        return None;
    };
    let (0x30, _tbs, rest) = tlv(certificate)? else {
        return None;
    };
    let (0x30, algorithm, _) = tlv(rest)? else {
        return None;
    };
    let (0x06, oid, _) = tlv(algorithm)? else {
        return None;
    };
    use ring::digest::{SHA256, SHA384, SHA512};
    match oid.split_last()? {
        // md5, sha1, sha256, sha384, sha512 WithRSAEncryption
        (4 | 5 | 11, prefix) if prefix == RSA => Some(&SHA256),
        (12, prefix) if prefix == RSA => Some(&SHA384),
        (13, prefix) if prefix == RSA => Some(&SHA512),
        (2, prefix) if prefix == ECDSA_SHA2 => Some(&SHA256),
        (3, prefix) if prefix == ECDSA_SHA2 => Some(&SHA384),
        (4, prefix) if prefix == ECDSA_SHA2 => Some(&SHA512),
        _ if oid == ECDSA_SHA1 => Some(&SHA256),
        _ => None,
    }
}

/// One DER element: its tag, its contents and what follows it.
fn tlv(input: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let (&tag, rest) = input.split_first()?;
    let (&first, mut rest) = rest.split_first()?;
    let length = if first < 0x80 {
        usize::from(first)
    } else {
        let count = usize::from(first & 0x7f);
        if count == 0 || count > 4 {
            return None;
        }
        let (bytes, after) = rest.split_at_checked(count)?;
        rest = after;
        bytes
            .iter()
            .fold(0usize, |length, byte| (length << 8) | usize::from(*byte))
    };
    let (contents, rest) = rest.split_at_checked(length)?;
    Some((tag, contents, rest))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A certificate's outline: SEQUENCE { tbs SEQUENCE, alg SEQUENCE { OID }, BIT STRING }.
    fn certificate(oid: &[u8], tbs_len: usize) -> Vec<u8> {
        let mut tbs = vec![0x30, 0x82, (tbs_len >> 8) as u8, tbs_len as u8];
        tbs.extend(std::iter::repeat_n(0u8, tbs_len));
        let mut alg = vec![0x30, oid.len() as u8 + 2, 0x06, oid.len() as u8];
        alg.extend_from_slice(oid);
        let signature = [0x03, 0x02, 0x00, 0x00];
        let body_len = tbs.len() + alg.len() + signature.len();
        let mut der = vec![0x30, 0x82, (body_len >> 8) as u8, body_len as u8];
        der.extend(tbs);
        der.extend(alg);
        der.extend(signature);
        der
    }

    #[test]
    fn the_hash_follows_the_signature_algorithm() {
        let rsa = |last: u8| [0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, last].to_vec();
        let ecdsa = |last: u8| [0x2a, 0x86, 0x48, 0xce, 0x3d, 0x04, 0x03, last].to_vec();
        let cases: [(Vec<u8>, Option<usize>); 10] = [
            (rsa(4), Some(32)),
            (rsa(5), Some(32)),
            (rsa(11), Some(32)),
            (rsa(12), Some(48)),
            (rsa(13), Some(64)),
            (ecdsa(2), Some(32)),
            (ecdsa(3), Some(48)),
            (ecdsa(4), Some(64)),
            (vec![0x2a, 0x86, 0x48, 0xce, 0x3d, 0x04, 0x01], Some(32)),
            // Ed25519 (1.3.101.112): no hash of its own.
            (vec![0x2b, 0x65, 0x70], None),
        ];
        for (oid, length) in cases {
            let der = certificate(&oid, 300);
            let hash = server_end_point(&der);
            assert_eq!(hash.as_ref().map(Vec::len), length, "{oid:x?}");
        }
        let der = certificate(&rsa(11), 10);
        assert_eq!(
            server_end_point(&der).unwrap(),
            ring::digest::digest(&ring::digest::SHA256, &der).as_ref()
        );
    }

    #[test]
    fn broken_der_has_no_binding() {
        let der = certificate(&[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x04, 0x03, 0x02], 300);
        for cut in [0, 1, 3, 10, 305, der.len() - 5] {
            assert_eq!(server_end_point(&der[..cut]), None, "cut at {cut}");
        }
        assert_eq!(server_end_point(&[0x30, 0x85, 1, 1, 1, 1, 1]), None);
    }
}
