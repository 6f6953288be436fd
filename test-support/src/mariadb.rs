//! A private MariaDB server, for the hook that provisions MariaDB databases
//! and users (`examples/hooks/mariadb`).

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use tempfile::TempDir;

use crate::{
    find_in_path_or, free_port, is_root, random_hex, read_lossy, tail, wait_ready, START_ATTEMPTS,
};

/// The account the hook acts as (`'mesh-admin'@'127.0.0.1'`, all privileges
/// with grant option).
pub const MARIADB_ADMIN: &str = "mesh-admin";

/// A private `mariadbd` (the installed binary, Debian `mariadb-server`):
/// its own data directory made by `mariadb-install-db`, listening on
/// 127.0.0.1 on a free port and on a socket in its folder, names not
/// resolved (a user's host is its address). Its `root@localhost` (socket
/// only, no password) is the server's own administrator, for
/// [`MariaDbServer::sql`]; the other `root` accounts are dropped. One
/// administrator for the hook, [`MARIADB_ADMIN`], with a random password in
/// a 0600 file ([`MariaDbServer::admin_password_file`]). Dropping it kills
/// the server and removes its folder.
///
/// ```no_run
/// let db = mesh_test_support::MariaDbServer::start();
/// assert!(db.sql("SELECT User FROM mysql.user").contains("mesh-admin"));
/// ```
pub struct MariaDbServer {
    server: PathBuf,
    client: PathBuf,
    dir: TempDir,
    port: u16,
    password: String,
    child: Option<Child>,
}

impl MariaDbServer {
    /// Makes its data directory and starts it; blocks until it accepts
    /// connections and its administrator is made (panics with its log tail
    /// when that does not happen within 30 s).
    pub fn start() -> MariaDbServer {
        let server = find_in_path_or("mariadbd", &["/usr/sbin/mariadbd"]).unwrap_or_else(|| {
            panic!("mariadbd not found: install the Debian package `mariadb-server`")
        });
        let install = find_in_path_or("mariadb-install-db", &["/usr/bin/mariadb-install-db"])
            .unwrap_or_else(|| {
                panic!("mariadb-install-db not found: install the Debian package `mariadb-server`")
            });
        let client = find_in_path_or("mariadb", &["/usr/bin/mariadb"]).unwrap_or_else(|| {
            panic!("mariadb (the client) not found: install the Debian package `mariadb-client`")
        });
        let dir = crate::scratch::private_dir("mariadb");
        let password = random_hex(16);
        write_private(&dir.path().join("admin-password"), &format!("{password}\n"));
        let mut db = MariaDbServer {
            server,
            client,
            dir,
            port: 0,
            password,
            child: None,
        };
        db.install(&install);
        for attempt in 1..=START_ATTEMPTS {
            db.port = free_port();
            match db.spawn_and_wait() {
                Ok(()) => {
                    db.make_admin();
                    return db;
                }
                Err(true) if attempt < START_ATTEMPTS => continue,
                Err(_) => db.fail("mariadbd did not start"),
            }
        }
        unreachable!("the loop above returns or panics")
    }

    /// Its port on 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The file holding [`MARIADB_ADMIN`]'s password (0600, a final newline after it).
    pub fn admin_password_file(&self) -> PathBuf {
        self.dir.path().join("admin-password")
    }

    /// [`MARIADB_ADMIN`]'s password.
    pub fn admin_password(&self) -> &str {
        &self.password
    }

    /// The environment `examples/hooks/mariadb` reads its server and
    /// administrator from.
    pub fn hook_env(&self) -> Vec<(String, String)> {
        vec![
            ("MARIADB_HOOK_HOST".to_owned(), "127.0.0.1".to_owned()),
            ("MARIADB_HOOK_PORT".to_owned(), self.port.to_string()),
            (
                "MARIADB_HOOK_ADMIN_USER".to_owned(),
                MARIADB_ADMIN.to_owned(),
            ),
            (
                "MARIADB_HOOK_ADMIN_PASSWORD_FILE".to_owned(),
                self.admin_password_file().display().to_string(),
            ),
        ]
    }

    /// Runs `sql` as the server's own administrator (`root` on its socket),
    /// as a person at the `mariadb` client would; returns what it printed
    /// (tab-separated rows, no column names).
    ///
    /// # Panics
    /// When the client cannot be run or the SQL fails (with its error).
    pub fn sql(&self, sql: &str) -> String {
        let socket = format!("--socket={}", self.socket().display());
        match self.client(&["--no-defaults", &socket, "--user=root"], sql) {
            Ok(out) => out,
            Err(error) => panic!("SQL as root failed: {error}\n{sql}"),
        }
    }

    /// Runs `sql` logged in as `user` with `password` over TCP (both in a
    /// 0600 option file, never the client's arguments); what it printed, or
    /// the client's error (`Access denied ...`).
    pub fn sql_as(&self, user: &str, password: &str, sql: &str) -> Result<String, String> {
        let file = self
            .dir
            .path()
            .join(format!("client-{}.cnf", random_hex(4)));
        write_private(
            &file,
            &format!(
                "[client]\nuser={user}\npassword={password}\nhost=127.0.0.1\nport={}\n",
                self.port
            ),
        );
        let option = format!("--defaults-file={}", file.display());
        let out = self.client(&[&option], sql);
        let _ = std::fs::remove_file(&file);
        out
    }

    /// Every account, as `user@host`, sorted.
    pub fn users(&self) -> Vec<String> {
        self.rows("SELECT CONCAT(User, '@', Host) FROM mysql.user ORDER BY 1")
    }

    /// Every database, sorted.
    pub fn databases(&self) -> Vec<String> {
        self.rows("SELECT SCHEMA_NAME FROM information_schema.SCHEMATA ORDER BY 1")
    }

    /// The server's error log.
    pub fn log(&self) -> String {
        read_lossy(&self.dir.path().join("error.log"))
    }

    fn rows(&self, sql: &str) -> Vec<String> {
        self.sql(sql).lines().map(str::to_owned).collect()
    }

    fn socket(&self) -> PathBuf {
        self.dir.path().join("mariadbd.sock")
    }

    fn data(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// Runs the client with `args` and `sql` on its stdin.
    fn client(&self, args: &[&str], sql: &str) -> Result<String, String> {
        let mut child = Command::new(&self.client)
            .args(args)
            .args(["--batch", "--skip-column-names", "--connect-timeout=10"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the mariadb client runs");
        child
            .stdin
            .take()
            .expect("the client's stdin")
            .write_all(sql.as_bytes())
            .expect("writing to the mariadb client");
        let out = child.wait_with_output().expect("the mariadb client ends");
        if out.status.success() {
            Ok(String::from_utf8_lossy(&out.stdout).into_owned())
        } else {
            Err(String::from_utf8_lossy(&out.stderr).trim().to_owned())
        }
    }

    /// `mariadb-install-db` into the data directory.
    fn install(&self, install: &Path) {
        let mut command = Command::new(install);
        command
            .arg("--no-defaults")
            .arg(format!("--datadir={}", self.data().display()))
            .args(["--auth-root-authentication-method=normal", "--skip-test-db"]);
        if is_root() {
            command.arg("--user=root");
        }
        let out = command
            .stdin(Stdio::null())
            .output()
            .unwrap_or_else(|e| panic!("could not run {}: {e}", install.display()));
        assert!(
            out.status.success(),
            "mariadb-install-db failed:\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// The hook's administrator made; the passwordless TCP `root`s dropped.
    fn make_admin(&self) {
        self.sql(&format!(
            "DROP USER IF EXISTS 'root'@'127.0.0.1', 'root'@'::1';\n\
             DELETE FROM mysql.global_priv WHERE User = 'root' AND Host NOT IN ('localhost');\n\
             DELETE FROM mysql.global_priv WHERE User = '';\n\
             FLUSH PRIVILEGES;\n\
             CREATE USER '{MARIADB_ADMIN}'@'127.0.0.1' IDENTIFIED BY '{pw}';\n\
             GRANT ALL PRIVILEGES ON *.* TO '{MARIADB_ADMIN}'@'127.0.0.1' WITH GRANT OPTION;\n",
            pw = self.password
        ));
    }

    /// Spawns it on `self.port`; `Err(true)` when the port was taken.
    fn spawn_and_wait(&mut self) -> Result<(), bool> {
        let dir = self.dir.path();
        let log = dir.join("error.log");
        let _ = std::fs::remove_file(&log);
        let mut command = Command::new(&self.server);
        command
            .arg("--no-defaults")
            .arg(format!("--datadir={}", self.data().display()))
            .arg(format!("--port={}", self.port))
            .arg(format!("--socket={}", self.socket().display()))
            .arg(format!("--pid-file={}", dir.join("mariadbd.pid").display()))
            .arg(format!("--log-error={}", log.display()))
            .arg(format!("--tmpdir={}", dir.display()))
            .args([
                "--bind-address=127.0.0.1",
                "--skip-name-resolve",
                "--skip-log-bin",
                "--innodb-buffer-pool-size=32M",
                "--innodb-log-file-size=16M",
                "--innodb-flush-log-at-trx-commit=2",
                "--max-connections=400",
            ]);
        if is_root() {
            command.arg("--user=root");
        }
        let child = command
            .current_dir(dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("could not run {}: {e}", self.server.display()));
        self.child = Some(wait_ready(child, &log, "ready for connections")?);
        Ok(())
    }

    fn fail(&self, why: &str) -> ! {
        panic!(
            "{why}\nport: {}\ndir: {}\n--- log tail ---\n{}",
            self.port,
            self.dir.path().display(),
            tail(&self.log(), 30)
        )
    }
}

/// Writes `text` to a new file only its owner may read (0600).
fn write_private(path: &Path, text: &str) {
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .and_then(|mut file| file.write_all(text.as_bytes()))
        .unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
}

impl Drop for MariaDbServer {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl std::fmt::Debug for MariaDbServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MariaDbServer")
            .field("port", &self.port)
            .field("dir", &self.dir.path())
            .finish_non_exhaustive()
    }
}
