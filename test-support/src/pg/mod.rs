//! A private PostgreSQL cluster: the type and what it knows of itself.
//! Making, starting and stopping it (initdb, ports, `pg_ctl`) is
//! `cluster.rs`; its data folder (`initdb`'s, or a copy of the run's
//! template) `template.rs`; reaching it over SQL (connection strings, the
//! superuser's session, databases) `sql.rs`.

use std::path::{Path, PathBuf};

use tempfile::TempDir;

mod cluster;
mod host;
mod sql;
mod template;

use crate::read_lossy;

/// The superuser the cluster is created with.
const SUPERUSER: &str = "postgres";

/// The address the cluster listens on.
const HOST: &str = "127.0.0.1";

/// Longest path of a unix socket (sun_path holds 108 bytes with the NUL).
const MAX_SOCKET_PATH: usize = 107;

/// A private PostgreSQL cluster (the installed binaries): its own data
/// directory in a temp dir, SCRAM authentication (a wrong password is
/// refused), a superuser `postgres` with a random password, listening on
/// 127.0.0.1 on a free port, its unix socket in the private dir, every
/// statement logged (`log_statement = all`) to a log file read by
/// [`PgCluster::log`].
///
/// Run as root, the cluster belongs to the `postgres` OS user (`initdb`
/// refuses root): the binaries are run through `runuser -u postgres --`.
///
/// For speed the cluster runs with `fsync = off`: data survives
/// [`PgCluster::stop`] / [`PgCluster::start_again`] and even an immediate
/// stop, but not a crash of the machine.
///
/// Dropping it stops the server (`pg_ctl stop -m immediate`) and removes the
/// directory.
///
/// ```no_run
/// # async fn example() {
/// let pg = mesh_test_support::PgCluster::start();
/// let admin = pg.connect_admin().await;
/// admin.batch_execute("CREATE TABLE t (x int)").await.unwrap();
/// let conninfo = pg.create_database("store_test").await;
/// let (client, connection) = tokio_postgres::connect(&conninfo, tokio_postgres::NoTls)
///     .await
///     .unwrap();
/// tokio::spawn(connection);
/// # }
/// ```
pub struct PgCluster {
    bin_dir: PathBuf,
    /// `runuser` when running as root.
    runuser: Option<PathBuf>,
    dir: TempDir,
    port: u16,
    password: String,
    /// `(uid, gid)` of the `postgres` OS user when running as root.
    owner: Option<(u32, u32)>,
    /// Whether the server speaks TLS (its certificate in the private dir).
    tls: bool,
    /// Another address it listens on, beside 127.0.0.1.
    also_on: Option<String>,
}

impl PgCluster {
    /// The TCP port the server listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The host the server listens on: `127.0.0.1`.
    pub fn host(&self) -> &str {
        HOST
    }

    /// The superuser's name: `postgres`.
    pub fn superuser(&self) -> &str {
        SUPERUSER
    }

    /// The superuser's password (random, hex).
    pub fn superuser_password(&self) -> &str {
        &self.password
    }

    /// A file holding only the superuser password (no trailing newline), for
    /// `--admin-password-file` style flags.
    pub fn superuser_password_file(&self) -> PathBuf {
        self.dir.path().join("superuser.password")
    }

    /// The server log (all starts of this cluster).
    pub fn log(&self) -> String {
        read_lossy(&self.log_path())
    }

    /// The private dir holding the cluster (its data dir, log, socket).
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// The cluster's data directory (its `postmaster.pid` names the server).
    pub fn data_dir(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    fn data_dir_str(&self) -> String {
        self.data_dir().to_string_lossy().into_owned()
    }

    fn log_path(&self) -> PathBuf {
        self.dir.path().join("postgres.log")
    }
}

impl std::fmt::Debug for PgCluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgCluster")
            .field("port", &self.port)
            .field("dir", &self.dir.path())
            .finish_non_exhaustive()
    }
}
