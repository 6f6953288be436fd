//! A complete provider on mesh-sdk (copy it, swap the backend): for each
//! consumer, a folder under `--root` holding a credentials file (mode 0600)
//! made from its minted secret.
//!
//! `cargo run --example quickstart -- --root /srv/folders --contributions contributions.json`
use mesh_sdk::{async_trait, Class, Consumer, Held, Name, ProviderMain, Provisioner, Secret};
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::{fs, path::PathBuf, process::ExitCode};

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
    /// Someone changed the credentials file: the consumer would be refused.
    #[error("the credentials of {0} are not its minted secret")]
    Differs(Name),
    /// The folder or file cannot be used.
    #[error(transparent)]
    Io(#[from] io::Error),
}

/// The backend: one folder per consumer under a root folder.
pub struct Folders(pub PathBuf);

impl Folders {
    fn file(&self, consumer: &Name, name: &str) -> PathBuf {
        self.0.join(consumer.as_str()).join(name)
    }
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

    async fn ensure(&self, consumer: &Consumer, secret: &Secret) -> Result<(), FolderError> {
        let (dir, file) = (
            self.0.join(consumer.name.as_str()),
            self.file(&consumer.name, "credentials"),
        );
        let secret = secret.clone();
        Ok(blocking(move || {
            fs::create_dir_all(&dir)?;
            // Its owner alone reads it.
            match fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&file)
            {
                Ok(mut file) => file.write_all(secret.expose().as_bytes()),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(()), // made before
                Err(e) => Err(e),
            }
        })
        .await?)
    }

    async fn check(&self, consumer: &Consumer, secret: &Secret) -> Result<(), FolderError> {
        let file = self.file(&consumer.name, "credentials");
        let kept = blocking(move || fs::read_to_string(file)).await?;
        let same = kept == secret.expose();
        same.then_some(())
            .ok_or(FolderError::Differs(consumer.name.clone()))
    }

    async fn held(&self) -> Result<Vec<Held>, FolderError> {
        let root = self.0.clone();
        Ok(blocking(move || {
            let mut held = Vec::new();
            for dir in fs::read_dir(&root)? {
                if let Ok(name) = Name::parse(&dir?.file_name().to_string_lossy()) {
                    let retired = root.join(name.as_str()).join("disabled").exists();
                    held.push(Held { name, retired });
                }
            }
            Ok(held)
        })
        .await?)
    }

    async fn retire(&self, consumer: &Name) -> Result<(), FolderError> {
        let file = self.file(consumer, "disabled");
        Ok(blocking(move || fs::write(file, "")).await?)
    }

    async fn re_enable(&self, consumer: &Name) -> Result<(), FolderError> {
        let file = self.file(consumer, "disabled");
        Ok(blocking(move || match fs::remove_file(file) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        })
        .await?)
    }

    async fn delete(&self, consumer: &Name) -> Result<(), FolderError> {
        let dir = self.0.join(consumer.as_str());
        Ok(blocking(move || fs::remove_dir_all(dir)).await?)
    }

    /// Our own facts decide the class; the loop reads the words of the rest.
    fn classify(&self, error: &FolderError) -> Option<Class> {
        match error {
            FolderError::Differs(_) => Some(Class::CredentialsRejected),
            FolderError::Io(_) => None,
        }
    }
}

/// Flags, logs, the loop until SIGTERM, the exit code and a redacted error: the SDK's.
#[allow(dead_code)] // its test uses the provider, not `main`
fn main() -> ExitCode {
    let about = "Keeps a credentials folder for each consumer the mesh lists, and says on the bus when it cannot";
    ProviderMain::new("quickstart", about).run(|own: Own| Ok::<_, io::Error>(Folders(own.root)))
}
