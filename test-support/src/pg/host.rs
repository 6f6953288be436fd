//! PostgreSQL on this host: where its server binaries are, and, when the
//! tests run as root, the `postgres` OS user the clusters run as and owns
//! their files.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::SUPERUSER;
use crate::{find_in_path_or, is_executable};

/// The directory holding `initdb`, `pg_ctl` and `postgres`: the one of
/// `pg_ctl` in `PATH` (symlinks resolved), else the highest version in
/// /usr/lib/postgresql/*/bin.
pub(super) fn pg_bin_dir() -> PathBuf {
    let complete = |dir: &Path| {
        ["initdb", "pg_ctl", "postgres"]
            .iter()
            .all(|binary| is_executable(&dir.join(binary)))
    };
    let from_path = find_in_path_or("pg_ctl", &[])
        .and_then(|pg_ctl| pg_ctl.canonicalize().ok())
        .and_then(|pg_ctl| pg_ctl.parent().map(Path::to_path_buf))
        .filter(|dir| complete(dir));
    if let Some(dir) = from_path {
        return dir;
    }
    let mut versions: Vec<(Vec<u32>, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let name = entry.file_name().to_string_lossy().into_owned();
            let version: Option<Vec<u32>> = name.split('.').map(|part| part.parse().ok()).collect();
            let bin = entry.path().join("bin");
            version
                .filter(|_| complete(&bin))
                .map(|version| (version, bin))
        })
        .collect();
    versions.sort();
    versions.pop().map(|(_, bin)| bin).unwrap_or_else(|| {
        panic!(
            "PostgreSQL server binaries (initdb, pg_ctl, postgres) not found in PATH nor in \
             /usr/lib/postgresql/*/bin: install the Debian package `postgresql`"
        )
    })
}

/// `runuser`, needed to run PostgreSQL as `postgres` when root.
pub(super) fn runuser_binary() -> PathBuf {
    find_in_path_or(
        "runuser",
        &["/usr/sbin/runuser", "/sbin/runuser", "/usr/bin/runuser"],
    )
    .unwrap_or_else(|| {
        panic!(
            "running as root, PostgreSQL must run as the `postgres` user, but `runuser` was \
                 not found: install the Debian package `util-linux`"
        )
    })
}

/// The uid and gid of the `postgres` OS user.
pub(super) fn postgres_ids() -> (u32, u32) {
    let id = |flag: &str| -> Option<u32> {
        let output = Command::new("id").args([flag, SUPERUSER]).output().ok()?;
        if !output.status.success() {
            return None;
        }
        String::from_utf8_lossy(&output.stdout).trim().parse().ok()
    };
    match (id("-u"), id("-g")) {
        (Some(uid), Some(gid)) => (uid, gid),
        _ => panic!(
            "running as root, PostgreSQL must run as the `postgres` OS user, which does not \
             exist: install the Debian package `postgresql` (it creates the user)"
        ),
    }
}

pub(super) fn chown(path: &Path, uid: u32, gid: u32) {
    std::os::unix::fs::chown(path, Some(uid), Some(gid))
        .unwrap_or_else(|error| panic!("chown {} to the postgres user: {error}", path.display()));
}

/// Writes `password` to `path`, readable by its owner alone: the server's
/// user (`owner`) when root.
pub(super) fn write_password(path: &Path, password: &str, owner: Option<(u32, u32)>) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, password).expect("writing the PostgreSQL password file");
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
        .expect("restricting the PostgreSQL password file");
    if let Some((uid, gid)) = owner {
        chown(path, uid, gid);
    }
}
