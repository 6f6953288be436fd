//! A complete provider on mesh-sdk (copy it, swap the backend): per consumer a folder
//! under `--root` with a credentials file made from its minted secret.
use mesh_sdk::{async_trait, Consumer, Held, Name, ProviderMain, Provisioner, Secret};
use std::{io, path::PathBuf, process::ExitCode};
use tokio::fs;
/// The provider's own flags (the SDK adds the shared ones).
#[derive(clap::Args)]
struct Own {
    /// Folder holding one folder per consumer.
    #[arg(long)]
    root: PathBuf,
}
struct Folders(PathBuf);
#[async_trait]
impl Provisioner for Folders {
    type Error = io::Error;
    async fn ensure(&self, consumer: &Consumer, secret: &Secret) -> io::Result<()> {
        let dir = self.0.join(consumer.name.as_str());
        fs::create_dir_all(&dir).await?;
        match fs::metadata(dir.join("credentials")).await {
            Ok(_) => Ok(()),
            Err(_) => fs::write(dir.join("credentials"), secret.expose()).await,
        }
    }
    async fn check(&self, consumer: &Consumer, secret: &Secret) -> io::Result<()> {
        let path = self.0.join(consumer.name.as_str()).join("credentials");
        let same = fs::read_to_string(path).await? == secret.expose();
        let refused = io::Error::other("invalid credentials: not the minted secret");
        same.then_some(()).ok_or(refused)
    }
    async fn held(&self) -> io::Result<Vec<Held>> {
        let (mut held, mut dirs) = (Vec::new(), fs::read_dir(&self.0).await?);
        while let Some(dir) = dirs.next_entry().await? {
            if let Ok(name) = Name::parse(&dir.file_name().to_string_lossy()) {
                let retired = fs::metadata(dir.path().join("disabled")).await.is_ok();
                held.push(Held { name, retired });
            }
        }
        Ok(held)
    }
    async fn retire(&self, consumer: &Name) -> io::Result<()> {
        fs::write(self.0.join(consumer.as_str()).join("disabled"), "").await
    }
    async fn re_enable(&self, consumer: &Name) -> io::Result<()> {
        let removed = fs::remove_file(self.0.join(consumer.as_str()).join("disabled")).await;
        removed.or_else(|e| (e.kind() == io::ErrorKind::NotFound).then_some(()).ok_or(e))
    }
    async fn delete(&self, consumer: &Name) -> io::Result<()> {
        fs::remove_dir_all(self.0.join(consumer.as_str())).await
    }
}

fn main() -> ExitCode {
    let about = "Keeps a credentials folder for each consumer the mesh lists, and says on the bus when it cannot";
    ProviderMain::new("quickstart", about).run(|own: Own| Ok::<_, io::Error>(Folders(own.root)))
}
