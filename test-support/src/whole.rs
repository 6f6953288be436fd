//! Files a running process reads, written whole.

use std::path::Path;

/// Writes `text` to `path` as one change: to a sibling `.partial` file
/// first, then renamed over `path`. A process that reads `path` on its own
/// schedule (a provider its contributions file, the grants agent its grants)
/// sees the old text or the new, never the empty or half-written file that
/// `std::fs::write` leaves between truncating and writing, which it would
/// rightly call malformed.
///
/// Panics when the file cannot be written or renamed.
pub fn write_whole(path: &Path, text: impl AsRef<[u8]>) {
    let partial = path.with_extension("partial");
    std::fs::write(&partial, text).unwrap_or_else(|e| panic!("writing {partial:?}: {e}"));
    std::fs::rename(&partial, path).unwrap_or_else(|e| panic!("renaming to {path:?}: {e}"));
}
