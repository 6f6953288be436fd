//! Printing a report as it is read: the [`Head`] first (so a reader has the
//! sentence at once), then each standing as it arrives (for a person, the
//! standings of one cause as one line once the cause is whole), then what
//! follows them. [`human`] writes lines for a person, [`json`] one JSON object;
//! [`series`] makes the report Prometheus series (what `serve` exports).

pub mod history;
pub mod html;
pub mod human;
pub mod json;
pub mod series;

use std::io::{self, Write};

use crate::report::{Head, Listed};

/// A report printed piece by piece.
///
/// # Expected flow
/// [`Listing::head`] once, [`Listing::standing`] per standing in order,
/// [`Listing::finish`] once. The head is flushed to the output at once.
pub trait Listing {
    /// Writes what comes before the standings, and flushes it.
    ///
    /// # Errors
    /// When writing fails.
    fn head(&mut self, out: &mut dyn Write, head: &Head) -> io::Result<()>;

    /// Takes one standing (the human listing writes a cause's line once the
    /// cause is whole).
    ///
    /// # Errors
    /// When writing fails.
    fn standing(&mut self, out: &mut dyn Write, standing: Listed) -> io::Result<()>;

    /// Writes what comes after the standings, and flushes.
    ///
    /// # Errors
    /// When writing fails.
    fn finish(&mut self, out: &mut dyn Write, head: &Head) -> io::Result<()>;
}

/// The listing for `--json` or not.
pub fn listing(json: bool) -> Box<dyn Listing> {
    if json {
        Box::new(json::Json::default())
    } else {
        Box::new(human::Human::default())
    }
}

/// Writes a whole report at once (tests and small reports).
///
/// # Errors
/// When writing fails.
pub fn write_all(
    listing: &mut dyn Listing,
    out: &mut dyn Write,
    head: &Head,
    standings: &[Listed],
) -> io::Result<()> {
    listing.head(out, head)?;
    for standing in standings {
        listing.standing(out, standing.clone())?;
    }
    listing.finish(out, head)
}
