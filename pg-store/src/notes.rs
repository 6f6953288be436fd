//! A person's rows of history, written at the store's clock:
//! - a note on a consumer's failing interval: kind `note` (its text in
//!   `detail`, who wrote it in `by_name`, migration V17). `status` quotes
//!   the newest note of a standing's earlier intervals on its recurrence;
//!   `history` lists it.
//! - an action from the console: kind `action` (what was asked in
//!   `reason`, who in `by_name`, the provider's answer in `detail`, whether
//!   it was done in `done`, V18). `history` lists it.

use std::time::Duration;

use mesh_protocol::{ModuleId, Name, Timestamp};
use mesh_status::model::history::ActionChange;
use tokio_postgres::types::ToSql;

use super::connection::PgStore;
use super::rows::time;
use super::PgError;

/// How long writing a note may take.
const NOTE_TIMEOUT: Duration = Duration::from_secs(10);

/// The longest note kept, in characters (a longer one is refused).
pub const MAX_NOTE_CHARS: usize = 500;

/// A note's text that cannot be kept.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum NoteTextError {
    /// Nothing is left once trimmed.
    #[error("the note is empty")]
    Empty,
    /// It is longer than [`MAX_NOTE_CHARS`] (its length given).
    #[error("the note is {0} characters long; at most {MAX_NOTE_CHARS} are kept: say it shorter")]
    TooLong(usize),
}

/// `raw` as a note keeps it: control characters (a newline among them)
/// made spaces, trimmed.
///
/// # Errors
/// [`NoteTextError`] when nothing is left or it is too long.
pub fn note_text(raw: &str) -> Result<String, NoteTextError> {
    let text: String = raw
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let text = text.trim();
    match text.chars().count() {
        0 => Err(NoteTextError::Empty),
        n if n > MAX_NOTE_CHARS => Err(NoteTextError::TooLong(n)),
        _ => Ok(text.to_owned()),
    }
}

const INSERT_NOTE: &str = "INSERT INTO history (kind, at, provider_module, provider_machine, \
     consumer, consumer_machine, detail, by_name) VALUES ('note', now(), $1, $2, $3, $4, $5, $6) \
     RETURNING at";

const INSERT_ACTION: &str = "INSERT INTO history (kind, at, provider_module, provider_machine, \
     consumer, consumer_machine, reason, detail, by_name, done, until) \
     VALUES ('action', now(), $1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING at";

/// A note to attach: the provider whose failing interval of `consumer`
/// it is about, the text, and who writes it.
#[derive(Clone, Copy, Debug)]
pub struct Note<'a> {
    /// The provider of the interval.
    pub provider: &'a ModuleId,
    /// The consumer (`module@machine`).
    pub consumer: &'a ModuleId,
    /// What was learnt, one line.
    pub text: &'a str,
    /// Who writes it.
    pub by: &'a str,
}

impl PgStore {
    /// Writes `note` into history; returns when (the store's clock).
    ///
    /// # Errors
    /// [`PgError`] when the store is away, does not answer in time, or
    /// refuses the row (a role that may only read: `permission denied`).
    pub async fn add_note(&mut self, note: &Note<'_>) -> Result<Timestamp, PgError> {
        let client = &self.connected().await?.client;
        let params: [&(dyn ToSql + Sync); 6] = [
            &note.provider.module.as_str(),
            &note.provider.machine.as_str(),
            &note.consumer.module.as_str(),
            &note.consumer.machine.as_str(),
            &note.text,
            &note.by,
        ];
        let outcome =
            tokio::time::timeout(NOTE_TIMEOUT, client.query_one(INSERT_NOTE, &params)).await;
        let row = self.settle(outcome, NOTE_TIMEOUT)?;
        let target = self.options.shown.clone();
        time(&row, 0).map_err(|e| e.into_store_error(target))
    }

    /// Writes a person's `action` and the provider's answer into history;
    /// returns when (the store's clock).
    ///
    /// # Errors
    /// As [`PgStore::add_note`].
    pub async fn add_action(&mut self, action: &ActionChange) -> Result<Timestamp, PgError> {
        let client = &self.connected().await?.client;
        let clean = |s: &str| s.replace('\0', "\u{FFFD}");
        let (answer, by) = (clean(&action.answer), clean(&action.by));
        let machine = action.consumer_machine.as_ref().map(Name::as_str);
        let until = action.until.map(Timestamp::system_time);
        let params: [&(dyn ToSql + Sync); 9] = [
            &action.provider.module.as_str(),
            &action.provider.machine.as_str(),
            &action.consumer.as_str(),
            &machine,
            &action.action.as_str(),
            &answer,
            &by,
            &action.ok,
            &until,
        ];
        let outcome =
            tokio::time::timeout(NOTE_TIMEOUT, client.query_one(INSERT_ACTION, &params)).await;
        let row = self.settle(outcome, NOTE_TIMEOUT)?;
        let target = self.options.shown.clone();
        time(&row, 0).map_err(|e| e.into_store_error(target))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_note_is_one_trimmed_line_of_at_most_500_characters() {
        assert_eq!(
            note_text("  reset\nfrom the vault\t").unwrap(),
            "reset from the vault"
        );
        assert_eq!(note_text(" \n "), Err(NoteTextError::Empty));
        assert_eq!(
            note_text(&"x".repeat(MAX_NOTE_CHARS)).unwrap().len(),
            MAX_NOTE_CHARS
        );
        assert_eq!(
            note_text(&"é".repeat(MAX_NOTE_CHARS + 1)),
            Err(NoteTextError::TooLong(MAX_NOTE_CHARS + 1))
        );
    }
}
