//! Why a program ended without doing its work: an exit code and the words
//! said on stderr.

use std::io::Write;

use crate::redact::{error_words, redact};

/// Exit code of a service that cannot run (bad configuration, an
/// unreadable password file, bus setup): what any error turned into a
/// [`Failure`] with `?` exits with.
pub const EXIT_CANNOT_RUN: u8 = 1;

/// A program that did not do its work: the exit code and the reason, said
/// once on stderr as `<name>: <words>` by the program shell.
///
/// Any error converts into one (with `?`): code [`EXIT_CANNOT_RUN`], words
/// [`error_words`] (the error's and its sources', never its `Debug`).
///
/// ```
/// use mesh_runtime::program::Failure;
///
/// let error = std::io::Error::other("password authentication failed for hunter2");
/// let failure = Failure::from(error).redacted(&["hunter2"]);
/// assert_eq!(failure.code(), 1);
/// assert_eq!(failure.words(), "password authentication failed for [redacted]");
/// let mut stderr = Vec::new();
/// failure.report("mesh-postgres", &mut stderr);
/// assert_eq!(stderr, b"mesh-postgres: password authentication failed for [redacted]\n");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Failure {
    code: u8,
    words: String,
}

impl Failure {
    /// A failure with its exit code and words (said as they are).
    pub fn new(code: u8, words: impl Into<String>) -> Failure {
        Failure {
            code,
            words: words.into(),
        }
    }

    /// The program could not run because of `error`: code
    /// [`EXIT_CANNOT_RUN`], its words with its sources'.
    pub fn cannot_run(error: &(dyn std::error::Error + 'static)) -> Failure {
        Failure::new(EXIT_CANNOT_RUN, error_words(error))
    }

    /// The same failure with every secret of `secrets` removed from its
    /// words, then cut as every error a provider says is ([`redact`]).
    pub fn redacted<S: AsRef<str>>(self, secrets: &[S]) -> Failure {
        Failure {
            words: redact(&self.words, secrets),
            ..self
        }
    }

    /// The exit code.
    pub fn code(&self) -> u8 {
        self.code
    }

    /// The words said.
    pub fn words(&self) -> &str {
        &self.words
    }

    /// Says it on `to` as `<program>: <words>` (the shell says it on stderr).
    pub fn report(&self, program: &str, to: &mut dyn Write) {
        let _ = writeln!(to, "{program}: {}", self.words);
    }
}

impl<E: std::error::Error + Send + Sync + 'static> From<E> for Failure {
    fn from(error: E) -> Failure {
        Failure::cannot_run(&error)
    }
}
