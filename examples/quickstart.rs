//! A complete provider on mesh-sdk (copy it, swap the backend): for each
//! consumer, a folder under `--root` holding a credentials file (mode 0600)
//! made from its minted secret.
//!
//! `cargo run --example quickstart -- --root /srv/folders --contributions contributions.json`
use mesh_sdk::{async_trait, Class, Consumer, Held, Name, ProviderMain, Provisioner, Secret};
use std::{io, path::PathBuf, process::ExitCode};
use tokio::{fs, io::AsyncWriteExt};

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

#[async_trait]
impl Provisioner for Folders {
    type Error = FolderError;

    async fn ensure(&self, consumer: &Consumer, secret: &Secret) -> Result<(), FolderError> {
        fs::create_dir_all(self.0.join(consumer.name.as_str())).await?;
        let mut open = fs::OpenOptions::new();
        open.write(true).create_new(true).mode(0o600); // its owner alone reads it
        match open.open(self.file(&consumer.name, "credentials")).await {
            Ok(mut file) => Ok(file.write_all(secret.expose().as_bytes()).await?),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(()), // made before
            Err(e) => Err(e.into()),
        }
    }

    async fn check(&self, consumer: &Consumer, secret: &Secret) -> Result<(), FolderError> {
        let kept = fs::read_to_string(self.file(&consumer.name, "credentials")).await?;
        let same = kept == secret.expose();
        same.then_some(())
            .ok_or(FolderError::Differs(consumer.name.clone()))
    }

    async fn held(&self) -> Result<Vec<Held>, FolderError> {
        let (mut held, mut dirs) = (Vec::new(), fs::read_dir(&self.0).await?);
        while let Some(dir) = dirs.next_entry().await? {
            if let Ok(name) = Name::parse(&dir.file_name().to_string_lossy()) {
                let retired = fs::metadata(self.file(&name, "disabled")).await.is_ok();
                held.push(Held { name, retired });
            }
        }
        Ok(held)
    }

    async fn retire(&self, consumer: &Name) -> Result<(), FolderError> {
        Ok(fs::write(self.file(consumer, "disabled"), "").await?)
    }

    async fn re_enable(&self, consumer: &Name) -> Result<(), FolderError> {
        match fs::remove_file(self.file(consumer, "disabled")).await {
            Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e.into()),
            _ => Ok(()),
        }
    }

    async fn delete(&self, consumer: &Name) -> Result<(), FolderError> {
        Ok(fs::remove_dir_all(self.0.join(consumer.as_str())).await?)
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
