//! What a list file is: its parse, its refused entries, how a new read
//! takes the last good one's place.

use std::path::Path;

/// An entry of a list that was refused; the others go on.
///
/// Said as `<place><named>: <reason>`, e.g. `consumers[0] ("Bad Name"):
/// consumer: "Bad Name" is not a valid name`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{place}{named}: {reason}")]
pub struct EntryError {
    /// Where it is in the file: `consumers[0]`, `grants[1]`,
    /// `modules[1] (forge@app-1) requires[0]`.
    pub place: String,
    /// What could be read of it to name it, with its leading space
    /// (` ("forge")`, ` (consumer "forge")`), or empty.
    pub named: String,
    /// Why it was refused.
    pub reason: String,
}

impl EntryError {
    /// The entry at `index` of the list `list` (`consumers[3]`).
    pub fn at(list: &str, index: usize, named: String, reason: String) -> EntryError {
        EntryError {
            place: format!("{list}[{index}]"),
            named,
            reason,
        }
    }
}

/// A file's text parsed: the list to work with, and the entries refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParsedList<T> {
    /// The good entries (and whatever else the file holds).
    pub list: T,
    /// The entries refused, in file order.
    pub refused: Vec<EntryError>,
}

/// A kind of file [`LastGood`](crate::LastGood) reads.
pub trait ListFile: Sized {
    /// How a message names the kind of file, e.g. `contributions file`.
    const KIND: &'static str;

    /// Parses the text of the file read from `path`.
    ///
    /// # Errors
    /// Why the file as a whole cannot be used (it is not JSON of the
    /// file's shape, say), in a message that names the file.
    fn parse(path: &Path, text: &str) -> Result<ParsedList<Self>, String>;

    /// Serves in `self`, just parsed, the last good version of an entry it
    /// refused, where the list knows one.
    fn keep_last_good(&mut self, last_good: &Self);

    /// Why `self` may not take the last good list's place at all, in a message
    /// that follows the file's kind and path (`now names provider identity@db-1
    /// but this provider is postgres@db-1`). `None`: it may.
    fn refuses_to_replace(&self, last_good: &Self) -> Option<String> {
        let _ = last_good;
        None
    }
}
