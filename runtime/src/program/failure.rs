//! Why a program ended without doing its work: an exit code and the
//! message written on stderr.

use std::io::Write;

use crate::redact::{error_text, redact};

/// Exit code of a service that cannot run (bad configuration, an
/// unreadable password file, bus setup): what any error turned into a
/// [`ProgramFailure`] with `?` exits with.
pub const EXIT_CANNOT_RUN: u8 = 1;

/// A program that did not do its work: the exit code and the reason,
/// written once on stderr as `<name>: <message>` by the program shell.
///
/// Any error converts into one (with `?`): code [`EXIT_CANNOT_RUN`], message
/// [`error_text`] (the error's and its sources', never its `Debug`).
///
/// ```
/// use mesh_runtime::program::ProgramFailure;
///
/// let error = std::io::Error::other("password authentication failed for hunter2");
/// let failure = ProgramFailure::from(error).redacted(&["hunter2"]);
/// assert_eq!(failure.code(), 1);
/// assert_eq!(failure.message(), "password authentication failed for [redacted]");
/// let mut stderr = Vec::new();
/// failure.report("mesh-postgres", &mut stderr);
/// assert_eq!(stderr, b"mesh-postgres: password authentication failed for [redacted]\n");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProgramFailure {
    code: u8,
    message: String,
}

impl ProgramFailure {
    /// A failure with its exit code and message (written as it is).
    pub fn new(code: u8, message: impl Into<String>) -> ProgramFailure {
        ProgramFailure {
            code,
            message: message.into(),
        }
    }

    /// The program could not run because of `error`: code
    /// [`EXIT_CANNOT_RUN`], its message with its sources'.
    pub fn cannot_run(error: &(dyn std::error::Error + 'static)) -> ProgramFailure {
        ProgramFailure::new(EXIT_CANNOT_RUN, error_text(error))
    }

    /// The same failure with every secret of `secrets` removed from its
    /// message, then cut as every error a provider publishes is ([`redact`]).
    pub fn redacted<S: AsRef<str>>(self, secrets: &[S]) -> ProgramFailure {
        ProgramFailure {
            message: redact(&self.message, secrets),
            ..self
        }
    }

    /// The exit code.
    pub fn code(&self) -> u8 {
        self.code
    }

    /// The message.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// Writes it on `to` as `<program>: <message>` (the shell writes it on
    /// stderr).
    pub fn report(&self, program: &str, to: &mut dyn Write) {
        let _ = writeln!(to, "{program}: {}", self.message);
    }
}

impl<E: std::error::Error + Send + Sync + 'static> From<E> for ProgramFailure {
    fn from(error: E) -> ProgramFailure {
        ProgramFailure::cannot_run(&error)
    }
}
