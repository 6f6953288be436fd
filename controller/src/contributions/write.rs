//! Writing the derived contributions files into a folder, and minting the
//! secrets they name where missing.
//!
//! Layout: `OUT/<module>@<machine>/contributions.json` and
//! `OUT/<module>@<machine>/secrets/<consumer>`. Folders this makes are
//! 0700, files 0600. A secret is 32 random bytes from the operating
//! system's generator, written as 64 hex digits; it is never overwritten,
//! never printed, and never part of an error. A contributions file is
//! written only when its text changed, atomically (a temporary file in the
//! same folder, synced, renamed over it), and after the secrets it names
//! exist, so a provider never reads a file naming a secret not yet there.
//! A second run with the same declaration changes nothing.

use std::fs::{DirBuilder, OpenOptions};
use std::io::{ErrorKind, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use mesh_protocol::{ModuleId, Name};

use super::ProviderFile;

/// The name of the contributions file in a provider's folder.
pub(crate) const FILE_NAME: &str = "contributions.json";

/// How many random bytes a minted secret holds (256 bits).
pub(crate) const SECRET_BYTES: usize = 32;

/// What happened to a provider's contributions file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FileChange {
    /// There was none: it was written.
    Created,
    /// Its text changed: it was replaced.
    Updated,
    /// Its text was the same: it was left as it was.
    Unchanged,
}

/// What was done for one provider.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ProviderOutcome {
    /// The provider.
    pub provider: ModuleId,
    /// Its folder, `OUT/<module>@<machine>`.
    pub folder: PathBuf,
    /// Its contributions file.
    pub file: FileChange,
    /// How many consumer entries it lists.
    pub consumers: usize,
    /// Consumers whose secret was minted now.
    pub minted: Vec<Name>,
    /// Files in `secrets/` that no entry names any more (a consumer taken
    /// out of the declaration): left alone.
    pub unlisted: Vec<String>,
    /// Secret files of listed consumers that the group or others may read
    /// (left as they are).
    pub exposed: Vec<PathBuf>,
}

/// What a run did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct WriteReport {
    /// One outcome per provider, in order.
    pub providers: Vec<ProviderOutcome>,
    /// Folders of `OUT` holding a contributions file for a module that is
    /// no provider of the declaration any more: left alone.
    pub stale: Vec<PathBuf>,
}

/// A file or folder could not be made, read or written; what was done
/// before stays done. No variant holds a secret.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    /// A file or folder could not be made, read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file or folder.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The operating system gave no random bytes.
    #[error("cannot mint the secret {path}: no random bytes from the operating system: {reason}")]
    Random {
        /// The secret file.
        path: PathBuf,
        /// Why (getrandom's message).
        reason: String,
    },
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> WriteError + '_ {
    move |source| WriteError::Io {
        path: path.to_owned(),
        source,
    }
}

/// Writes every provider's file of `files` under `out` (made 0700 if
/// missing), minting the secrets they name where missing.
///
/// # Errors
/// [`WriteError`] naming the first file or folder that could not be made,
/// read or written.
pub(crate) fn write_all(out: &Path, files: &[ProviderFile]) -> Result<WriteReport, WriteError> {
    make_folder(out, true)?;
    let mut report = WriteReport::default();
    for file in files {
        report.providers.push(write_provider(out, file)?);
    }
    report.stale = stale_folders(out, files)?;
    Ok(report)
}

fn write_provider(out: &Path, file: &ProviderFile) -> Result<ProviderOutcome, WriteError> {
    let provider = file.id();
    let folder = out.join(provider.to_string());
    let secrets = folder.join("secrets");
    make_folder(&folder, false)?;
    make_folder(&secrets, false)?;
    let mut minted = Vec::new();
    let mut exposed = Vec::new();
    let names = file.consumer_names();
    for name in &names {
        let path = secrets.join(name.as_str());
        if mint_secret(&path)? {
            minted.push((*name).clone());
        } else {
            let mode = std::fs::metadata(&path)
                .map_err(io(&path))?
                .permissions()
                .mode();
            if mode & 0o077 != 0 {
                exposed.push(path);
            }
        }
    }
    let path = folder.join(FILE_NAME);
    let text = file.text();
    let change = match std::fs::read(&path) {
        Ok(old) if old == text.as_bytes() => FileChange::Unchanged,
        Ok(_) => FileChange::Updated,
        Err(error) if error.kind() == ErrorKind::NotFound => FileChange::Created,
        Err(error) => return Err(io(&path)(error)),
    };
    if change != FileChange::Unchanged {
        write_atomically(&path, text.as_bytes())?;
    }
    let mut unlisted = Vec::new();
    for entry in std::fs::read_dir(&secrets).map_err(io(&secrets))? {
        let entry = entry.map_err(io(&secrets))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if !name.starts_with('.') && !names.iter().any(|n| n.as_str() == name) {
            unlisted.push(name);
        }
    }
    unlisted.sort();
    Ok(ProviderOutcome {
        provider,
        folder,
        file: change,
        consumers: file.consumers.len(),
        minted,
        unlisted,
        exposed,
    })
}

/// Makes `path` (0700) unless it is a folder already (whose mode is then
/// left as it is); `recursive` makes its parents too.
fn make_folder(path: &Path, recursive: bool) -> Result<(), WriteError> {
    if path.is_dir() {
        return Ok(());
    }
    DirBuilder::new()
        .recursive(recursive)
        .mode(0o700)
        .create(path)
        .map_err(io(path))
}

/// A temporary file beside `path`, named after it and this process.
fn temporary(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    path.with_file_name(format!(".{name}.tmp-{}", std::process::id()))
}

/// Writes `bytes` to a new 0600 temporary file beside `path` and syncs it.
fn write_temporary(path: &Path, bytes: &[u8]) -> Result<PathBuf, WriteError> {
    let tmp = temporary(path);
    // One left by a run that died: it is ours by its name.
    let _ = std::fs::remove_file(&tmp);
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&tmp)
        .map_err(io(&tmp))?;
    file.write_all(bytes)
        .and_then(|()| file.sync_all())
        .map_err(io(&tmp))?;
    Ok(tmp)
}

/// Replaces `path` with `bytes` atomically: a reader sees the old text or
/// the new one, never a part.
fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), WriteError> {
    let tmp = write_temporary(path, bytes)?;
    std::fs::rename(&tmp, path).map_err(io(path))?;
    sync_folder(path);
    Ok(())
}

/// Makes the secret file `path` if it does not exist; returns whether it
/// was minted. An existing file (or anything at that name) is never
/// touched: the temporary file is linked to the name, which fails if the
/// name exists.
fn mint_secret(path: &Path) -> Result<bool, WriteError> {
    if std::fs::symlink_metadata(path).is_ok() {
        return Ok(false);
    }
    let secret = mint(path)?;
    let tmp = write_temporary(path, format!("{secret}\n").as_bytes())?;
    let linked = std::fs::hard_link(&tmp, path);
    let _ = std::fs::remove_file(&tmp);
    match linked {
        Ok(()) => {
            sync_folder(path);
            Ok(true)
        }
        Err(error) if error.kind() == ErrorKind::AlreadyExists => Ok(false),
        Err(error) => Err(io(path)(error)),
    }
}

/// A new secret: [`SECRET_BYTES`] from the operating system's generator,
/// as hex digits.
fn mint(path: &Path) -> Result<String, WriteError> {
    let mut bytes = [0u8; SECRET_BYTES];
    getrandom::fill(&mut bytes).map_err(|e| WriteError::Random {
        path: path.to_owned(),
        reason: e.to_string(),
    })?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// Syncs the folder holding `path`, so a rename or link survives a crash
/// (best effort: not every file system can).
fn sync_folder(path: &Path) {
    if let Some(folder) = path.parent() {
        if let Ok(folder) = std::fs::File::open(folder) {
            let _ = folder.sync_all();
        }
    }
}

/// Folders of `out` named `<module>@<machine>` that hold a contributions
/// file but are no provider of `files`.
fn stale_folders(out: &Path, files: &[ProviderFile]) -> Result<Vec<PathBuf>, WriteError> {
    let providers: Vec<String> = files.iter().map(|f| f.id().to_string()).collect();
    let mut stale = Vec::new();
    for entry in std::fs::read_dir(out).map_err(io(out))? {
        let entry = entry.map_err(io(out))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let path = entry.path();
        if ModuleId::parse(&name).is_ok()
            && !providers.contains(&name)
            && path.join(FILE_NAME).is_file()
        {
            stale.push(path);
        }
    }
    stale.sort();
    Ok(stale)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_minted_secret_is_new_random_and_never_replaces_one() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        assert!(mint_secret(&a).unwrap());
        assert!(mint_secret(&b).unwrap());
        let (sa, sb) = (
            std::fs::read_to_string(&a).unwrap(),
            std::fs::read_to_string(&b).unwrap(),
        );
        assert_eq!(sa.trim().len(), 2 * SECRET_BYTES);
        assert!(sa.trim().chars().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(sa, sb);
        let mode = std::fs::metadata(&a).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        std::fs::write(&a, "kept").unwrap();
        assert!(!mint_secret(&a).unwrap());
        assert_eq!(std::fs::read_to_string(&a).unwrap(), "kept");
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(left.len(), 2, "no temporary file is left");
    }
}
