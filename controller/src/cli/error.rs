//! Why a command was not done, and the exit code each reason gives.

use crate::approve::UnknownProvider;
use crate::bus::BusError;
use crate::link::LinkError;
use crate::permissions::CredentialsError;
use mesh_pg_store::{DatabaseOptionsError, PgError};
use mesh_runtime::nats::ApproveError;
use mesh_status::model::declaration::UnknownMachine;
use mesh_status::model::DeclarationError;

/// Exit code: done.
pub const EXIT_OK: u8 = 0;
/// Exit code: `approve` refused or unanswered; `status --check` not all well.
pub const EXIT_NOT_DONE: u8 = 1;
/// Exit code: the command could not be done (reason on stderr).
pub const EXIT_CANNOT: u8 = 2;

/// A command that was not done. Its `Display` is the reason said on stderr
/// (never a password: every part shows its target without one).
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// The declaration could not be used.
    #[error(transparent)]
    Declaration(#[from] DeclarationError),
    /// The database options are unusable.
    #[error(transparent)]
    Database(#[from] DatabaseOptionsError),
    /// The store could not be migrated.
    #[error(transparent)]
    Migrate(PgError),
    /// `migrate --reader-password-file` could not be read.
    #[error(transparent)]
    ReaderPassword(mesh_runtime::secret::SecretFileError),
    /// `migrate --reader`: the role could not be made the store's reader.
    #[error(transparent)]
    Reader(mesh_pg_store::ReaderError),
    /// The store could not be read.
    #[error("cannot read the store: {0}")]
    Read(#[source] PgError),
    /// `note`: the note cannot be taken as given (empty, too long, no
    /// provider to attach it to, no author).
    #[error("{0}")]
    NoteRefused(String),
    /// `note`: the store did not take the note.
    #[error("cannot add the note: {error}{}", note_hint(.error))]
    Note {
        /// Why.
        #[source]
        error: PgError,
    },
    /// `serve` could not run.
    #[error(transparent)]
    Link(#[from] LinkError),
    /// The bus could not be reached or its credentials read.
    #[error(transparent)]
    Bus(#[from] BusError),
    /// The approval could not be sent.
    #[error(transparent)]
    Approve(#[from] ApproveError),
    /// The declaration says no such provider answers approvals: nothing
    /// was sent.
    #[error(transparent)]
    UnknownProvider(#[from] UnknownProvider),
    /// `approve --delete` of a consumer the declaration still requires from
    /// that provider, without `--force`: nothing was sent.
    #[error(transparent)]
    RequiredDeletion(#[from] crate::approve::RequiredDeletion),
    /// The provider refused the approval, or did not answer.
    #[error("{0}")]
    NotDone(String),
    /// `permissions --format nats` needs the users' passwords.
    #[error("--format nats needs --credentials DIR")]
    NoCredentials,
    /// A `permissions --watcher` name cannot be used.
    #[error(transparent)]
    Watcher(#[from] crate::permissions::WatcherRefused),
    /// The users' password files could not be read.
    #[error(transparent)]
    Credentials(#[from] CredentialsError),
    /// A contributions file or secret could not be written.
    #[error("cannot write the contributions: {0}")]
    Contributions(#[source] crate::contributions::write::WriteError),
    /// `--metrics-listen` could not be listened on.
    #[error(transparent)]
    Listen(#[from] mesh_runtime::endpoints::ListenError),
    /// `console`: the console is its own program now.
    #[error(
        "the console is its own program now: run `mesh-console` with the same flags and \
         variables (its unit is mesh-console.service, its settings /etc/mesh/mesh-console.env, \
         its credentials in /etc/mesh/credentials/mesh-console/); `mesh-console` \
         goes in the next release"
    )]
    ConsoleMoved,
    /// `status --check` / `node show --check`: the report was printed and
    /// is not all well.
    #[error("not all well (--check)")]
    NotAllWell,
    /// `plan`: the new declaration withdraws consumers (the plan was printed).
    #[error("the new declaration withdraws {0} consumer(s): each is retired by its provider once its contributions file no longer lists it")]
    Withdraws(usize),
    /// `node show` of a machine the declaration does not name.
    #[error(transparent)]
    UnknownMachine(#[from] UnknownMachine),
    /// `why`: the declaration names no such consumer, or it on several
    /// machines and none was given.
    #[error("{0}")]
    UnknownConsumer(String),
    /// `why`: the verdict was printed and the consumer is not served
    /// (failing, or a problem concerns it).
    #[error("{0} is not served (the verdict above says why)")]
    NotServed(String),
    /// The report could not be written.
    #[error("cannot write the output: {0}")]
    Output(#[source] std::io::Error),
}

/// What to do when the store refuses a note for the role's rights.
fn note_hint(error: &PgError) -> &'static str {
    if error.to_string().contains("permission denied") {
        " (a note is a row of history: log in as a role that may write it, the store's owner, \
         not its reader)"
    } else {
        ""
    }
}

impl CliError {
    /// The exit code this error ends the command with. A closed output pipe
    /// (`status | head -1`) is not an error of the command.
    pub fn exit_code(&self) -> u8 {
        match self {
            CliError::NotDone(_)
            | CliError::NotAllWell
            | CliError::Withdraws(_)
            | CliError::NotServed(_) => EXIT_NOT_DONE,
            CliError::Output(error) if error.kind() == std::io::ErrorKind::BrokenPipe => EXIT_OK,
            _ => EXIT_CANNOT,
        }
    }

    /// Whether the reason is worth saying on stderr.
    pub fn is_said(&self) -> bool {
        self.exit_code() != EXIT_OK
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes() {
        let pipe = std::io::Error::from(std::io::ErrorKind::BrokenPipe);
        let full = std::io::Error::from(std::io::ErrorKind::StorageFull);
        let cases = [
            (CliError::NotDone("refused".into()), EXIT_NOT_DONE),
            (CliError::Output(pipe), EXIT_OK),
            (CliError::Output(full), EXIT_CANNOT),
            (CliError::NoCredentials, EXIT_CANNOT),
            (CliError::NotAllWell, EXIT_NOT_DONE),
            (
                CliError::Declaration(DeclarationError::Missing),
                EXIT_CANNOT,
            ),
            (
                CliError::Database(DatabaseOptionsError::Missing),
                EXIT_CANNOT,
            ),
        ];
        for (error, code) in cases {
            assert_eq!(error.exit_code(), code, "{error}");
            assert_eq!(error.is_said(), code != EXIT_OK, "{error}");
        }
    }
}
