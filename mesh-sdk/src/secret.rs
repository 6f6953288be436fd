//! Minted secrets: read per consumer, every pass.

use std::io::ErrorKind;
use std::path::{Path, PathBuf};

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

/// Reads a secret file, trimming surrounding whitespace.
///
/// This is a small local file: it is read with a blocking call, which costs a
/// few microseconds and keeps the pass cheap at 100,000 consumers.
///
/// # Errors
/// [`SecretError`] when the file is missing, unreadable, not UTF-8 or empty.
pub fn read_secret(path: &Path) -> Result<Secret, SecretError> {
    let text = read_small(path).map_err(|source| match source.kind() {
        ErrorKind::NotFound => SecretError::Missing { path: path.into() },
        _ => SecretError::Unreadable {
            path: path.into(),
            source,
        },
    })?;
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Err(SecretError::Empty { path: path.into() });
    }
    Ok(Secret::new(if trimmed.len() == text.len() {
        text
    } else {
        trimmed.to_owned()
    }))
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
pub struct FileSecrets;

impl SecretSource for FileSecrets {
    fn read(&self, consumer: &Consumer) -> Result<Secret, SecretError> {
        read_secret(&consumer.secret_file)
    }
}

/// Reads a small file as UTF-8 with as few system calls as it takes
/// (open, read until end, close; no size query).
fn read_small(path: &Path) -> std::io::Result<String> {
    use std::io::Read;
    let mut file = std::fs::File::open(path)?;
    let mut buffer = [0u8; 256];
    let mut bytes = Vec::new();
    loop {
        match file.read(&mut buffer)? {
            0 => break,
            n => bytes.extend_from_slice(&buffer[..n]),
        }
    }
    String::from_utf8(bytes).map_err(|e| std::io::Error::new(ErrorKind::InvalidData, e))
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
