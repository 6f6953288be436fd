//! A complete provider on mesh-sdk (copy it, swap the backend): for each
//! consumer, a folder under `--root/<module@machine>/` holding a
//! credentials file (mode 0600) made from its minted secret. Each provider
//! instance keeps its consumers in a folder of its own, so two instances
//! sharing one root never list, retire or delete each other's. Its
//! `ensure` makes what is missing and brings the minted secret to a file
//! that holds another (a rotated secret, or one changed by hand: a mend,
//! said in its result; the loop tells which).
//!
//! `cargo run --example quickstart -- --root /srv/folders --contributions contributions.json`
use mesh_sdk::{
    async_trait, Class, Consumer, Held, ModuleId, Name, ProviderMain, Provisioner, Secret, Served,
};
use std::io::{self, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::{fs, path::Path, path::PathBuf, process::ExitCode};

/// The provider's own flags (the SDK adds the shared ones: --contributions, --nats, …).
#[derive(clap::Args)]
pub struct Own {
    /// Folder holding one folder per consumer.
    #[arg(long, env = "QUICKSTART_ROOT")]
    pub root: PathBuf,
}

/// What goes wrong at this backend; [`Provisioner::classify`] gives its class.
#[derive(Debug, thiserror::Error)]
pub enum FolderError {
    /// The credentials file is not the minted secret: the consumer would be refused.
    #[error("the credentials of {0} are not its minted secret")]
    Differs(Name),
    /// The consumer is retired (its folder holds a `disabled` file).
    #[error("the folder of {0} is retired")]
    Retired(Name),
    /// The folder or file cannot be used.
    #[error(transparent)]
    Io(#[from] io::Error),
}

/// The backend: one folder per consumer under a root folder.
pub struct Folders {
    root: PathBuf,
}

impl Folders {
    /// The folders under `root`.
    pub fn new(root: PathBuf) -> Folders {
        Folders { root }
    }

    /// The folder of `provider`'s consumers: its mark.
    fn instance(&self, provider: &ModuleId) -> PathBuf {
        self.root.join(provider.to_string())
    }

    fn dir(&self, provider: &ModuleId, consumer: &Name) -> PathBuf {
        self.instance(provider).join(consumer.as_str())
    }

    fn file(&self, provider: &ModuleId, consumer: &Name, name: &str) -> PathBuf {
        self.dir(provider, consumer).join(name)
    }
}

/// Writes `secret` to `file`, which its owner alone reads (mode 0600).
fn write_private(file: &Path, secret: &Secret) -> io::Result<()> {
    let mut out = fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(file)?;
    // An existing file keeps its mode when opened: set it.
    out.set_permissions(fs::Permissions::from_mode(0o600))?;
    out.write_all(secret.expose().as_bytes())
}

/// Runs plain file calls on tokio's blocking threads, as one step: a call
/// never holds up the loop, and each bounded call waits on one thing.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> io::Result<T> + Send + 'static,
) -> io::Result<T> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(io::Error::other)?
}

#[async_trait]
impl Provisioner for Folders {
    type Error = FolderError;

    async fn ensure(&self, consumer: &Consumer, secret: &Secret) -> Result<Served, FolderError> {
        let (dir, file) = (
            self.dir(&consumer.provider, &consumer.name),
            self.file(&consumer.provider, &consumer.name, "credentials"),
        );
        let secret = secret.clone();
        // Made if missing, and the minted secret brought when the file holds
        // another: a rotated secret reaches the backend only this way.
        let brought = blocking(move || {
            fs::create_dir_all(&dir)?;
            let brought = match fs::read_to_string(&file) {
                Ok(kept) if kept == secret.expose() => return Ok(false),
                Ok(_) => true,
                Err(e) if e.kind() == io::ErrorKind::NotFound => false,
                Err(e) => return Err(e),
            };
            write_private(&file, &secret)?;
            Ok(brought)
        })
        .await?;
        // The loop tells a rotation from a hand edit; we say what we did.
        Ok(match brought {
            true => Served::mended("credentials set to the minted secret"),
            false => Served::AsIs,
        })
    }

    async fn check(&self, consumer: &Consumer, secret: &Secret) -> Result<Served, FolderError> {
        let (file, disabled) = (
            self.file(&consumer.provider, &consumer.name, "credentials"),
            self.file(&consumer.provider, &consumer.name, "disabled"),
        );
        let (kept, retired) =
            blocking(move || Ok((fs::read_to_string(file)?, disabled.exists()))).await?;
        match (retired, kept == secret.expose()) {
            (true, _) => Err(FolderError::Retired(consumer.name.clone())),
            (false, true) => Ok(Served::AsIs),
            (false, false) => Err(FolderError::Differs(consumer.name.clone())),
        }
    }

    /// Only this instance's folder: another instance's are not its own.
    async fn held(&self, provider: &ModuleId) -> Result<Vec<Held>, FolderError> {
        let root = self.instance(provider);
        Ok(blocking(move || {
            let mut held = Vec::new();
            let dirs = match fs::read_dir(&root) {
                Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(held),
                dirs => dirs?,
            };
            for dir in dirs {
                if let Ok(name) = Name::parse(&dir?.file_name().to_string_lossy()) {
                    let retired = root.join(name.as_str()).join("disabled").exists();
                    held.push(Held { name, retired });
                }
            }
            Ok(held)
        })
        .await?)
    }

    async fn retire(&self, provider: &ModuleId, consumer: &Name) -> Result<(), FolderError> {
        let file = self.file(provider, consumer, "disabled");
        // Only a folder this instance made: writing into a missing one fails.
        Ok(blocking(move || fs::write(file, "")).await?)
    }

    async fn re_enable(&self, provider: &ModuleId, consumer: &Name) -> Result<(), FolderError> {
        let file = self.file(provider, consumer, "disabled");
        Ok(blocking(move || match fs::remove_file(file) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        })
        .await?)
    }

    async fn delete(&self, provider: &ModuleId, consumer: &Name) -> Result<(), FolderError> {
        let dir = self.dir(provider, consumer);
        Ok(blocking(move || match fs::remove_dir_all(dir) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
            _ => Ok(()), // deleted, or deleted before
        })
        .await?)
    }

    /// Our own facts decide the class; the loop reads the message of the rest.
    fn classify(&self, error: &FolderError) -> Option<Class> {
        match error {
            FolderError::Differs(_) => Some(Class::CredentialsRejected),
            FolderError::Retired(_) => Some(Class::Refused),
            FolderError::Io(_) => None,
        }
    }
}

/// Flags, logs, the loop until SIGTERM, the exit code and a redacted error: the SDK's.
#[allow(dead_code)] // its test uses the provider, not `main`
fn main() -> ExitCode {
    let about = "Keeps a credentials folder for each consumer the mesh lists, and says on the bus when it cannot";
    ProviderMain::new("quickstart", about)
        .run(|own: Own| Ok::<_, io::Error>(Folders::new(own.root)))
}
