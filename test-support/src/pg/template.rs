//! A cluster's data folder: `initdb`'s, or a copy of the test run's
//! template. `scripts/test` names a folder for one in `MESH_PG_TEMPLATE`
//! (and removes it after the run): the first cluster of the run makes the
//! template there with `initdb`, every other one copies it and sets its
//! own superuser password. A CI run makes about 120 clusters; an `initdb`
//! costs 0.4-0.7 s of CPU where a copy and the password cost 0.06 s.
//! Unset (a developer's `cargo test`), each cluster runs `initdb`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use super::host::{chown, write_password};
use super::{PgCluster, SUPERUSER};
use crate::random_hex;

/// The environment variable naming the folder of the run's template.
const TEMPLATE_ENV: &str = "MESH_PG_TEMPLATE";

impl PgCluster {
    /// Makes this cluster's data folder, [`PgCluster::data_dir`]: a copy of
    /// the run's template when `MESH_PG_TEMPLATE` names a folder for one,
    /// else by `initdb`.
    pub(super) fn make_data(&self) {
        match std::env::var_os(TEMPLATE_ENV).filter(|folder| !folder.is_empty()) {
            Some(folder) => {
                let template = self.template_in(Path::new(&folder));
                self.copy_of(&template);
            }
            None => self.initdb(&self.data_dir(), &self.superuser_password_file()),
        }
    }

    /// The template's data folder in `folder`, made by `initdb` when it is
    /// not there yet. It is made aside and renamed into place, so a test
    /// binary never sees half of one: of two making it at once, the first
    /// renamed stays and the other is removed.
    fn template_in(&self, folder: &Path) -> PathBuf {
        let template = folder.join("data");
        if template.exists() {
            return template;
        }
        let aside = crate::scratch::private_dir_in("pg-template", folder);
        if let Some((uid, gid)) = self.owner {
            chown(aside.path(), uid, gid);
        }
        // The template's own password: no cluster keeps it (each sets its own).
        let pwfile = aside.path().join("password");
        write_password(&pwfile, &random_hex(16), self.owner);
        self.initdb(&aside.path().join("data"), &pwfile);
        match std::fs::rename(aside.path().join("data"), &template) {
            Ok(()) => {}
            Err(_) if template.exists() => {}
            Err(error) => panic!(
                "moving the PostgreSQL template into {}: {error}",
                template.display()
            ),
        }
        template
    }

    /// Copies `template` to this cluster's data folder (`cp -a`: the
    /// server's user keeps owning it) and gives the superuser this
    /// cluster's password, in single-user mode before the server first
    /// starts. The statement reaches the server on its stdin, and a failed
    /// one is not logged with its text.
    fn copy_of(&self, template: &Path) {
        let copied = Command::new("cp")
            .arg("-a")
            .arg(template)
            .arg(self.data_dir())
            .output()
            .unwrap_or_else(|error| panic!("running cp: {error}"));
        assert!(
            copied.status.success(),
            "copying the PostgreSQL template {} to {}: {}",
            template.display(),
            self.data_dir().display(),
            String::from_utf8_lossy(&copied.stderr)
        );
        let data = self.data_dir_str();
        let args = [
            "--single",
            "-D",
            &data,
            "-c",
            "fsync=off",
            "-c",
            "log_min_error_statement=panic",
            SUPERUSER,
        ];
        let statement = format!("ALTER ROLE {SUPERUSER} PASSWORD '{}'\n", self.password);
        // Single-user mode says a failed statement in its output and still
        // exits 0.
        match self.run_fed("postgres", &args, Some(&statement), Duration::from_secs(60)) {
            Ok(output) if !output.contains("ERROR:") => {}
            Ok(output) | Err(output) => self.fail(
                "setting the superuser's password in single-user mode failed",
                &output,
            ),
        }
    }
}
