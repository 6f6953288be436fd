//! [`Secret`]: a value whose `Debug` never shows it, read with
//! [`Secret::expose`] by the one call that needs it; and
//! [`Secret::from_file`], how an operator's secret file (an administrator's
//! password, a client secret) is read by every mesh binary: trimmed, an
//! empty one refused.

use std::fmt;
use std::path::{Path, PathBuf};

/// A secret. Its `Debug` never shows it; read it with [`Secret::expose`].
///
/// ```
/// use mesh_runtime::Secret;
///
/// let secret = Secret::new("hunter2");
/// assert_eq!(format!("{secret:?}"), "Secret([redacted])");
/// assert_eq!(secret.expose(), "hunter2");
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wraps a secret value.
    pub fn new(value: impl Into<String>) -> Secret {
        Secret(value.into())
    }

    /// The secret's value, for the call that needs it and nothing else.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// Reads the secret kept in the file at `path`, surrounding whitespace
    /// (a final newline) trimmed. `what` names it in errors, as an operator
    /// knows it (`"admin password"`: "the admin password file … cannot be
    /// read").
    ///
    /// ```no_run
    /// use mesh_runtime::Secret;
    ///
    /// let password = Secret::from_file("/etc/mesh/pg-admin".as_ref(), "admin password")?;
    /// # Ok::<(), mesh_runtime::secret::SecretFileError>(())
    /// ```
    ///
    /// # Errors
    /// [`SecretFileError`] when the file cannot be read (or is not UTF-8)
    /// or holds nothing but whitespace. The error names the file, never
    /// its content.
    pub fn from_file(path: &Path, what: &'static str) -> Result<Secret, SecretFileError> {
        read_trimmed(path).map_err(|failure| match failure {
            ReadFailure::Unreadable(source) => SecretFileError::Unreadable {
                what,
                path: path.into(),
                source,
            },
            ReadFailure::Empty => SecretFileError::Empty {
                what,
                path: path.into(),
            },
        })
    }
}

/// Why a secret file gave no secret ([`read_trimmed`]).
#[derive(Debug)]
pub enum ReadFailure {
    /// It could not be opened or read, or is not UTF-8 (`NotFound` when
    /// it is missing).
    Unreadable(std::io::Error),
    /// It holds nothing but whitespace.
    Empty,
}

/// The one rule every secret file is read by, an operator's and a
/// consumer's minted one alike: read whole as UTF-8, surrounding
/// whitespace (a trailing newline) trimmed, refused when nothing is left.
/// A small local file is read with blocking calls and as few of them as it
/// takes (open, read until end, close: no size query), which costs a few
/// microseconds and keeps a pass over 100,000 consumers cheap.
///
/// # Errors
/// [`ReadFailure`] when the file cannot be read or is empty.
pub fn read_trimmed(path: &Path) -> Result<Secret, ReadFailure> {
    let text = read_small(path).map_err(ReadFailure::Unreadable)?;
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Err(ReadFailure::Empty);
    }
    Ok(Secret::new(if trimmed.len() == text.len() {
        text
    } else {
        trimmed.to_owned()
    }))
}

/// Reads a small file as UTF-8 (open, read until end, close).
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
    String::from_utf8(bytes).map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret([redacted])")
    }
}

/// An operator's secret file cannot be used ([`Secret::from_file`]); a
/// program's start-up configuration, so it ends the start.
#[derive(Debug, thiserror::Error)]
pub enum SecretFileError {
    /// The file could not be read.
    #[error("the {what} file {path} cannot be read")]
    Unreadable {
        /// What the file holds, as the operator knows it.
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The file holds nothing but whitespace.
    #[error("the {what} file {path} is empty")]
    Empty {
        /// What the file holds, as the operator knows it.
        what: &'static str,
        /// The file.
        path: PathBuf,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_files_are_trimmed_and_must_hold_something() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pw");
        std::fs::write(&path, "  admin-pw\n").unwrap();
        let read = |path: &Path| Secret::from_file(path, "admin password");
        assert_eq!(read(&path).unwrap().expose(), "admin-pw");
        std::fs::write(&path, " \n").unwrap();
        let empty = read(&path).unwrap_err();
        assert!(matches!(empty, SecretFileError::Empty { .. }));
        assert_eq!(
            empty.to_string(),
            format!("the admin password file {} is empty", path.display())
        );
        let none = dir.path().join("none");
        let missing = read(&none).unwrap_err();
        assert!(matches!(missing, SecretFileError::Unreadable { .. }));
        assert_eq!(
            missing.to_string(),
            format!("the admin password file {} cannot be read", none.display())
        );
    }

    #[test]
    fn debug_never_shows_the_value() {
        let s = Secret::new("hunter2");
        assert!(!format!("{s:?}").contains("hunter2"));
    }
}
