//! A private Redis server, for the hooks that provision Redis ACL users.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

use tempfile::TempDir;

use crate::{find_in_path_or, free_port, random_hex, read_lossy, tail, wait_ready, START_ATTEMPTS};

/// The ACL user the hooks act as.
pub const REDIS_ADMIN: &str = "mesh-admin";

/// A private `redis-server` (the installed binary, Debian `redis-server`):
/// listening on 127.0.0.1 on a free port, nothing saved to disk, its
/// `default` user off and one administrator, [`REDIS_ADMIN`], with a random
/// password kept in a file ([`RedisServer::admin_password_file`]), as a
/// hook is given it. Dropping it kills the server and removes its folder.
///
/// ```no_run
/// let redis = mesh_test_support::RedisServer::start();
/// let users = redis.cli("ACL USERS");
/// assert!(users.contains("mesh-admin"));
/// ```
pub struct RedisServer {
    binary: PathBuf,
    cli: PathBuf,
    dir: TempDir,
    port: u16,
    password: String,
    child: Option<Child>,
}

impl RedisServer {
    /// Starts a server; blocks until it accepts connections (panics with
    /// its log tail when it does not within 30 s).
    pub fn start() -> RedisServer {
        let binary =
            find_in_path_or("redis-server", &["/usr/bin/redis-server"]).unwrap_or_else(|| {
                panic!("redis-server not found: install the Debian package `redis-server`")
            });
        let cli = find_in_path_or("redis-cli", &["/usr/bin/redis-cli"]).unwrap_or_else(|| {
            panic!("redis-cli not found: install the Debian package `redis-tools`")
        });
        let dir = crate::scratch::private_dir("redis");
        let password = random_hex(16);
        std::fs::write(dir.path().join("admin-password"), format!("{password}\n"))
            .expect("writing the admin password file");
        let mut server = RedisServer {
            binary,
            cli,
            dir,
            port: 0,
            password,
            child: None,
        };
        for attempt in 1..=START_ATTEMPTS {
            server.port = free_port();
            match server.spawn_and_wait() {
                Ok(()) => return server,
                Err(true) if attempt < START_ATTEMPTS => continue,
                Err(_) => server.fail("redis-server did not start"),
            }
        }
        unreachable!("the loop above returns or panics")
    }

    /// Its port on 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The file holding [`REDIS_ADMIN`]'s password (a final newline after it).
    pub fn admin_password_file(&self) -> PathBuf {
        self.dir.path().join("admin-password")
    }

    /// [`REDIS_ADMIN`]'s password.
    pub fn admin_password(&self) -> &str {
        &self.password
    }

    /// The environment `examples/hooks/redis-acl.sh` reads its server and
    /// administrator from.
    pub fn hook_env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("REDIS_ACL_HOST", "127.0.0.1".to_owned()),
            ("REDIS_ACL_PORT", self.port.to_string()),
            ("REDIS_ACL_ADMIN_USER", REDIS_ADMIN.to_owned()),
            (
                "REDIS_ACL_ADMIN_PASSWORD_FILE",
                self.admin_password_file().display().to_string(),
            ),
        ]
    }

    /// Runs `commands` (one a line) as the administrator, as a person at
    /// `redis-cli` would; returns what redis-cli printed (one reply a line,
    /// the login's first).
    ///
    /// # Panics
    /// When redis-cli cannot be run.
    pub fn cli(&self, commands: &str) -> String {
        self.cli_as(REDIS_ADMIN, &self.password, commands)
    }

    /// Its ACL users, sorted.
    pub fn acl_users(&self) -> Vec<String> {
        let mut users: Vec<String> = self
            .cli("ACL USERS")
            .lines()
            .skip(1)
            .map(str::to_owned)
            .collect();
        users.sort();
        users
    }

    /// Runs `commands` logged in as `user` with `password` (both passed
    /// on redis-cli's stdin, never its arguments).
    ///
    /// # Panics
    /// When redis-cli cannot be run.
    pub fn cli_as(&self, user: &str, password: &str, commands: &str) -> String {
        let mut child = Command::new(&self.cli)
            .args(["-h", "127.0.0.1", "-p", &self.port.to_string()])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-cli runs");
        let input = format!("AUTH {user} {password}\n{commands}\n");
        child
            .stdin
            .take()
            .expect("redis-cli's stdin")
            .write_all(input.as_bytes())
            .expect("writing to redis-cli");
        let out = child.wait_with_output().expect("redis-cli ends");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// The server's log.
    pub fn log(&self) -> String {
        read_lossy(&self.dir.path().join("redis.log"))
    }

    fn config(&self) -> String {
        let dir = self.dir.path().display();
        format!(
            "bind 127.0.0.1\nport {port}\ndir {dir}\nlogfile {dir}/redis.log\nsave \"\"\nappendonly no\n\
             protected-mode yes\nuser default off\nuser {REDIS_ADMIN} on >{pw} ~* &* +@all\n",
            port = self.port,
            pw = self.password,
        )
    }

    /// Spawns it on `self.port`; `Err(true)` when the port was taken.
    fn spawn_and_wait(&mut self) -> Result<(), bool> {
        let config = self.dir.path().join("redis.conf");
        std::fs::write(&config, self.config()).expect("writing redis.conf");
        let log = self.dir.path().join("redis.log");
        let _ = std::fs::remove_file(&log);
        let child = Command::new(&self.binary)
            .arg(&config)
            .current_dir(self.dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("could not run {}: {e}", self.binary.display()));
        self.child = Some(wait_ready(child, &log, "Ready to accept connections")?);
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

impl Drop for RedisServer {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl std::fmt::Debug for RedisServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisServer")
            .field("port", &self.port)
            .field("dir", &self.dir.path())
            .finish_non_exhaustive()
    }
}
