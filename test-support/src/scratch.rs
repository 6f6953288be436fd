//! Where the servers' private data directories are made.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use tempfile::TempDir;

/// The shared memory filesystem, when the machine has one.
const MEMORY: &str = "/dev/shm";

/// How much room the memory filesystem must have to be used: about twenty
/// PostgreSQL clusters (40 MB each after `initdb`) with their stores.
const MEMORY_ROOM: u64 = 2 << 30;

/// The folder the servers' data directories are made in (each its own
/// folder under it, removed on drop): `/dev/shm` when it is a memory
/// filesystem with room, else the system's temp dir.
///
/// The suite makes and removes tens of thousands of files (an `initdb` is
/// a thousand). On the CI machines' ext4, perf over a whole run found
/// PostgreSQL's processes spending 6 % of the tests' CPU in the kernel's
/// search for a free inode, nearly as much as in PostgreSQL's own code
/// (8 %); in memory a file costs what its pages do.
pub fn data_base() -> &'static Path {
    static BASE: OnceLock<PathBuf> = OnceLock::new();
    BASE.get_or_init(|| {
        let memory = Path::new(MEMORY);
        match has_room(memory) {
            true => memory.to_owned(),
            false => std::env::temp_dir(),
        }
    })
}

/// A new private folder `mesh-WHAT-…` under [`data_base`] for a server's
/// data, removed when dropped.
///
/// Panics when it cannot be made.
pub(crate) fn private_dir(what: &str) -> TempDir {
    private_dir_in(what, data_base())
}

/// [`private_dir`] under `base`.
pub(crate) fn private_dir_in(what: &str, base: &Path) -> TempDir {
    tempfile::Builder::new()
        .prefix(&format!("mesh-{what}-"))
        .tempdir_in(base)
        .unwrap_or_else(|error| {
            panic!(
                "creating a folder for {what} in {}: {error}",
                base.display()
            )
        })
}

/// [`data_base`] when it is the memory filesystem.
pub(crate) fn memory_base() -> Option<&'static Path> {
    Some(data_base()).filter(|base| *base == Path::new(MEMORY))
}

/// Whether `dir` is a folder others may write to (sticky, as `/dev/shm`
/// and `/tmp` are: the `postgres` user's cluster goes there when the tests
/// run as root) with [`MEMORY_ROOM`] free.
fn has_room(dir: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    let Ok(meta) = std::fs::metadata(dir) else {
        return false;
    };
    if !meta.is_dir() || meta.permissions().mode() & 0o1777 != 0o1777 {
        return false;
    }
    rustix::fs::statvfs(dir).is_ok_and(|s| s.f_bavail.saturating_mul(s.f_frsize) >= MEMORY_ROOM)
}
