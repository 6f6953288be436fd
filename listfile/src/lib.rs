//! The files mesh hands its parts, read as lists: a provider's
//! contributions file, the grant agent's grants file, the controller's
//! declaration.
//!
//! - [`entries`] parses a JSON list entry by entry: an entry that does not
//!   parse is refused alone, as an [`EntryError`] naming it, and the others
//!   go on.
//! - [`LastGood`] re-reads a file on every call and keeps the last good
//!   list while the file cannot be read or parsed; the list's own
//!   [`ListFile::keep_last_good`] serves a refused entry's last good
//!   version. What is wrong is logged once per change, and once more when
//!   the file is good again; an unchanged file is not parsed again.

// Nothing public by accident: what this crate offers is chosen.
#![warn(unreachable_pub)]

pub mod entries;
mod last_good;
mod list;

pub use self::last_good::{LastGood, Loaded, Refused};
pub use self::list::{EntryError, ListFile, ParsedList};
