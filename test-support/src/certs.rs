//! Certificates made by the test: a private certificate authority and the
//! server and client certificates it signs, written as PEM files into a
//! private directory (removed on drop).

use std::path::{Path, PathBuf};

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use tempfile::TempDir;

/// A certificate and its private key, as PEM files.
#[derive(Clone, Debug)]
pub struct CertFiles {
    /// The certificate (PEM).
    pub cert: PathBuf,
    /// Its private key (PEM, PKCS#8), readable only by its owner.
    pub key: PathBuf,
}

/// A private certificate authority whose certificate is written to
/// [`TestCa::ca_file`]; it signs server and client certificates on demand.
pub struct TestCa {
    dir: TempDir,
    issuer: Issuer<'static, KeyPair>,
    ca_file: PathBuf,
}

impl std::fmt::Debug for TestCa {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestCa")
            .field("ca_file", &self.ca_file)
            .finish_non_exhaustive()
    }
}

impl TestCa {
    /// A new authority named `name` (its common name).
    ///
    /// # Panics
    /// When the key cannot be made or the files cannot be written.
    pub fn new(name: &str) -> TestCa {
        let dir = tempfile::Builder::new()
            .prefix("mesh-certs-")
            .tempdir()
            .expect("certificate directory");
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("ca params");
        params.distinguished_name.push(DnType::CommonName, name);
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let key = KeyPair::generate().expect("ca key");
        let cert = params.self_signed(&key).expect("ca certificate");
        let ca_file = dir.path().join("ca.pem");
        std::fs::write(&ca_file, cert.pem()).expect("write ca.pem");
        TestCa {
            dir,
            issuer: Issuer::new(params, key),
            ca_file,
        }
    }

    /// The authority's certificate (PEM): what a client or server trusts.
    pub fn ca_file(&self) -> &Path {
        &self.ca_file
    }

    /// A server certificate for `names` (DNS names or IP addresses, e.g.
    /// `["localhost", "127.0.0.1"]`), written as `<file>.pem` and
    /// `<file>.key`.
    ///
    /// # Panics
    /// When the certificate cannot be made or written.
    pub fn server(&self, file: &str, names: &[&str]) -> CertFiles {
        self.leaf(file, names, ExtendedKeyUsagePurpose::ServerAuth)
    }

    /// A client certificate whose common name (and only name) is `name`,
    /// written as `<file>.pem` and `<file>.key`.
    ///
    /// # Panics
    /// When the certificate cannot be made or written.
    pub fn client(&self, file: &str, name: &str) -> CertFiles {
        self.leaf(file, &[name], ExtendedKeyUsagePurpose::ClientAuth)
    }

    fn leaf(&self, file: &str, names: &[&str], usage: ExtendedKeyUsagePurpose) -> CertFiles {
        let names: Vec<String> = names.iter().map(|n| (*n).to_owned()).collect();
        let mut params = CertificateParams::new(names.clone()).expect("leaf params");
        if let Some(first) = names.first() {
            params.distinguished_name.push(DnType::CommonName, first);
        }
        params.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        params.extended_key_usages = vec![usage];
        let key = KeyPair::generate().expect("leaf key");
        let cert = params
            .signed_by(&key, &self.issuer)
            .expect("leaf certificate");
        let files = CertFiles {
            cert: self.dir.path().join(format!("{file}.pem")),
            key: self.dir.path().join(format!("{file}.key")),
        };
        std::fs::write(&files.cert, cert.pem()).expect("write certificate");
        write_private(&files.key, &key.serialize_pem());
        files
    }
}

/// Writes `text` to `path` readable by its owner only (PostgreSQL refuses a
/// key file others can read).
fn write_private(path: &Path, text: &str) {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .expect("open key file");
    file.write_all(text.as_bytes()).expect("write key file");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_are_pem_and_the_key_is_private() {
        use std::os::unix::fs::PermissionsExt;
        let ca = TestCa::new("mesh test ca");
        let server = ca.server("server", &["localhost", "127.0.0.1"]);
        let client = ca.client("client", "forge");
        for path in [ca.ca_file(), &server.cert, &client.cert] {
            let text = std::fs::read_to_string(path).unwrap();
            assert!(text.starts_with("-----BEGIN CERTIFICATE-----"), "{path:?}");
        }
        let key = std::fs::read_to_string(&server.key).unwrap();
        assert!(key.starts_with("-----BEGIN PRIVATE KEY-----"));
        let mode = std::fs::metadata(&client.key).unwrap().permissions().mode();
        assert_eq!(mode & 0o077, 0, "key readable by others: {mode:o}");
    }
}
