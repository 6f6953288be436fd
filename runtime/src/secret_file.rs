//! [`SecretFile`]: an operator's secret (an administrator's password) read
//! again from its file at each use, so a rotation needs no restart.
//!
//! The file is read at every [`SecretFile::current`] (a new session, a
//! login refused): a changed password is used at once and logged once (at
//! INFO, without its value). A file that cannot be read then, or holds
//! nothing, keeps the last good secret (logged once per change, at WARN):
//! a half-written file during a rotation does not stop the provider. Every
//! secret it has held is kept for redaction ([`SecretFile::known`]), so an
//! error that echoes the old password is still scrubbed.

use std::path::PathBuf;
use std::sync::Mutex;

use crate::secret::{Secret, SecretFileError};

/// Passwords kept for redaction, the newest last (a few rotations' worth).
const KNOWN_KEPT: usize = 4;

/// A secret read again from its file at each use, keeping the last good one.
#[derive(Debug)]
pub struct SecretFile {
    path: Option<PathBuf>,
    what: &'static str,
    state: Mutex<State>,
}

#[derive(Debug)]
struct State {
    current: Option<Secret>,
    known: Vec<Secret>,
    /// The last read error logged (logged once per change).
    failed: Option<String>,
}

impl SecretFile {
    /// The secret `first` (read at start), read again from `path` at each
    /// use when a path is given; `what` names it in log lines (`"admin password"`).
    pub fn new(first: Option<Secret>, path: Option<PathBuf>, what: &'static str) -> SecretFile {
        SecretFile {
            path,
            what,
            state: Mutex::new(State {
                known: first.iter().cloned().collect(),
                current: first,
                failed: None,
            }),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The secret to use now: the file read again (when there is one), else
    /// the last good secret. Returns it and whether it changed since the
    /// last use.
    pub fn current(&self) -> (Option<Secret>, bool) {
        let Some(path) = &self.path else {
            return (self.state().current.clone(), false);
        };
        let read = Secret::from_file(path, self.what);
        let mut state = self.state();
        match read {
            Ok(secret) => {
                state.failed = None;
                if state.current.as_ref() == Some(&secret) {
                    return (Some(secret), false);
                }
                tracing::info!(file = %path.display(), what = self.what, "read a new secret from its file; using it from now on");
                if !state.known.contains(&secret) {
                    state.known.push(secret.clone());
                    if state.known.len() > KNOWN_KEPT {
                        state.known.remove(0);
                    }
                }
                state.current = Some(secret.clone());
                (Some(secret), true)
            }
            Err(error) => {
                let text = error_text(&error);
                if state.failed.as_ref() != Some(&text) {
                    tracing::warn!(error = %text, "cannot read the secret's file again; the last good one is used");
                    state.failed = Some(text);
                }
                (state.current.clone(), false)
            }
        }
    }

    /// When its file is a systemd credential (the copy a unit gets at its
    /// start), what a person must do for a new secret to be read: `restart
    /// mesh-postgres@db-1 to read the new admin password (the systemd
    /// credential admin-password, copied at the unit's start from its
    /// LoadCredential= file)`. `None` for a file read afresh at each use.
    pub fn restart_hint(&self) -> Option<String> {
        let (unit, credential) = crate::credentials::credential_of(self.path.as_deref()?)?;
        Some(format!(
            "restart {unit} to read the new {} (the systemd credential {credential}, copied at \
             the unit's start from its LoadCredential= file)",
            self.what
        ))
    }

    /// Every secret it has held lately (the current one among them), to
    /// remove from error texts.
    pub fn known(&self) -> Vec<Secret> {
        self.state().known.clone()
    }
}

fn error_text(error: &SecretFileError) -> String {
    crate::redact::error_text(error)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rotation_is_read_at_the_next_use_and_a_broken_file_keeps_the_last_good() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pw");
        std::fs::write(&path, "first\n").unwrap();
        let file = SecretFile::new(
            Some(Secret::from_file(&path, "admin password").unwrap()),
            Some(path.clone()),
            "admin password",
        );
        let expose =
            |(s, changed): (Option<Secret>, bool)| (s.unwrap().expose().to_owned(), changed);
        // (file content, or None for no file; secret used, changed)
        let steps: [(Option<&str>, &str, bool); 6] = [
            (Some("first\n"), "first", false),
            (Some("second\n"), "second", true),
            (Some("second"), "second", false),
            (None, "second", false),
            (Some("  \n"), "second", false),
            (Some("third"), "third", true),
        ];
        for (content, used, changed) in steps {
            match content {
                Some(text) => std::fs::write(&path, text).unwrap(),
                None => std::fs::remove_file(&path).unwrap(),
            }
            assert_eq!(
                expose(file.current()),
                (used.to_owned(), changed),
                "{content:?}"
            );
        }
        let known: Vec<String> = file.known().iter().map(|s| s.expose().to_owned()).collect();
        assert_eq!(known, ["first", "second", "third"]);
    }

    #[test]
    fn without_a_file_the_first_secret_stays() {
        let file = SecretFile::new(Some(Secret::new("in-url")), None, "admin password");
        assert_eq!(file.current().0.unwrap().expose(), "in-url");
        let none = SecretFile::new(None, None, "admin password");
        assert_eq!(none.current(), (None, false));
        assert!(none.known().is_empty());
    }

    #[test]
    fn only_a_few_secrets_are_kept_for_redaction() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pw");
        let file = SecretFile::new(None, Some(path.clone()), "admin password");
        for i in 0..10 {
            std::fs::write(&path, format!("pw-{i}")).unwrap();
            file.current();
        }
        let known: Vec<String> = file.known().iter().map(|s| s.expose().to_owned()).collect();
        assert_eq!(known, ["pw-6", "pw-7", "pw-8", "pw-9"]);
    }
}
