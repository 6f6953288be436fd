//! Minted secrets: read per consumer, every pass.

use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use mesh_runtime::secret::{read_trimmed, ReadFailure};
use mesh_runtime::Secret;

use crate::contributions::Consumer;

/// A minted secret that could not be had; class `secret-unreadable`.
/// Retried on the next pass.
#[derive(Debug, thiserror::Error)]
pub enum SecretError {
    /// The file does not exist.
    #[error("minted secret file {path} is missing")]
    Missing {
        /// The file.
        path: PathBuf,
    },
    /// The file could not be read.
    #[error("minted secret file {path} is unreadable: {source}")]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The file holds nothing but whitespace.
    #[error("minted secret file {path} is empty")]
    Empty {
        /// The file.
        path: PathBuf,
    },
}

/// Reads a minted secret file by the one rule of every secret file
/// ([`mesh_runtime::secret::read_trimmed`]: whole, trimmed, refused empty).
///
/// # Errors
/// [`SecretError`] when the file is missing, unreadable, not UTF-8 or empty.
pub(crate) fn read_secret(path: &Path) -> Result<Secret, SecretError> {
    read_trimmed(path).map_err(|failure| match failure {
        ReadFailure::Unreadable(source) if source.kind() == ErrorKind::NotFound => {
            SecretError::Missing { path: path.into() }
        }
        ReadFailure::Unreadable(source) => SecretError::Unreadable {
            path: path.into(),
            source,
        },
        ReadFailure::Empty => SecretError::Empty { path: path.into() },
    })
}

/// Where the loop gets each consumer's minted secret, every pass.
///
/// The default reads the consumer's `secret_file` (its whitespace trimmed). An
/// implementation must be cheap and must not block for long: it is called
/// once per consumer per pass, from the attempt's task.
pub trait SecretSource: Send + Sync + 'static {
    /// The consumer's minted secret now.
    ///
    /// # Errors
    /// [`SecretError`] when it is missing, unreadable or empty (class
    /// `secret-unreadable`).
    fn read(&self, consumer: &Consumer) -> Result<Secret, SecretError>;
}

/// Reads each consumer's `secret_file` (`read_secret`).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct FileSecrets;

impl SecretSource for FileSecrets {
    fn read(&self, consumer: &Consumer) -> Result<Secret, SecretError> {
        read_secret(&consumer.secret_file)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_and_trims() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s");
        std::fs::write(&path, "  pw-1\n").unwrap();
        assert_eq!(read_secret(&path).unwrap().expose(), "pw-1");
        let long = "x".repeat(1000);
        std::fs::write(&path, &long).unwrap();
        assert_eq!(read_secret(&path).unwrap().expose(), long);
    }

    #[test]
    fn missing_empty_unreadable() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("none");
        assert!(matches!(
            read_secret(&missing),
            Err(SecretError::Missing { .. })
        ));
        let empty = dir.path().join("empty");
        std::fs::write(&empty, " \n\t").unwrap();
        assert!(matches!(
            read_secret(&empty),
            Err(SecretError::Empty { .. })
        ));
        // A directory cannot be read as a file.
        assert!(matches!(
            read_secret(dir.path()),
            Err(SecretError::Unreadable { .. })
        ));
        let binary = dir.path().join("bin");
        std::fs::write(&binary, [0xff, 0xfe]).unwrap();
        assert!(matches!(
            read_secret(&binary),
            Err(SecretError::Unreadable { .. })
        ));
    }
}
