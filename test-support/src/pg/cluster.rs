//! Making, starting and stopping a [`PgCluster`]: its private dir, `initdb`,
//! the settings that depend on the port, `pg_ctl` with a hard deadline, and
//! the stop on drop.

use std::io::{Read, Seek};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::host::{chown, pg_bin_dir, postgres_ids, runuser_binary, write_password};
use super::{PgCluster, HOST, MAX_SOCKET_PATH, SUPERUSER};
use crate::{free_port, poll_until, random_hex, read_lossy, tail, START_ATTEMPTS, START_DEADLINE};

impl PgCluster {
    /// Creates and starts a cluster: `initdb --auth=scram-sha-256` with the
    /// superuser `postgres` and a random password (also written to
    /// [`PgCluster::superuser_password_file`]), then `pg_ctl start -w` on a
    /// free port (`listen_addresses = 127.0.0.1`, `unix_socket_directories`
    /// = the private dir, `log_statement = all`, log file via `pg_ctl -l`).
    ///
    /// Blocks until the server accepts connections; panics with the log tail
    /// if it does not within 30 s.
    pub fn start() -> PgCluster {
        PgCluster::create().start_on_free_port()
    }

    /// Like [`PgCluster::start`], listening on `address` (another address
    /// of this machine, such as the machine's side of a
    /// [`netns::Bed`](crate::netns::Bed)) as well as on 127.0.0.1, on the
    /// same port: a client in a network namespace reaches it there.
    /// `pg_hba.conf` still admits 127.0.0.1 only, so a connection from
    /// elsewhere is accepted and then refused a session.
    pub fn start_also_on(address: &str) -> PgCluster {
        let mut cluster = PgCluster::create();
        cluster.also_on = Some(address.to_owned());
        cluster.start_on_free_port()
    }

    /// Like [`PgCluster::start`], with TLS on (`ssl = on`) and `server` as
    /// its certificate and key (copied into the private dir). Plain
    /// sessions are still accepted (`pg_hba.conf` says `host`, not
    /// `hostssl`), so a client chooses with its `sslmode`.
    ///
    /// ```no_run
    /// let ca = mesh_test_support::TestCa::new("test ca");
    /// let pg = mesh_test_support::PgCluster::start_with_tls(
    ///     &ca.server("pg", &["localhost", "127.0.0.1"]),
    /// );
    /// ```
    pub fn start_with_tls(server: &crate::CertFiles) -> PgCluster {
        let mut cluster = PgCluster::create();
        cluster.copy_server_cert(server);
        cluster.tls = true;
        cluster.start_on_free_port()
    }

    /// Makes `server` the certificate of a cluster started with
    /// [`PgCluster::start_with_tls`] and reloads the server: sessions
    /// opened from now on see it.
    ///
    /// # Panics
    /// When the cluster was started without TLS or the reload fails.
    pub fn use_server_cert(&mut self, server: &crate::CertFiles) {
        assert!(self.tls, "the cluster was started without TLS");
        self.copy_server_cert(server);
        let args = ["-D", &self.data_dir_str(), "reload"];
        if let Err(output) = self.run("pg_ctl", &args, START_DEADLINE) {
            self.fail("pg_ctl reload failed", &output);
        }
        // The postmaster rereads its files when it gets to the signal.
        std::thread::sleep(Duration::from_millis(500));
    }

    fn create() -> PgCluster {
        let bin_dir = pg_bin_dir();
        let root = crate::is_root();
        let runuser = root.then(runuser_binary);
        let owner = root.then(postgres_ids);
        // The postgres user must be able to reach the dir: as root, use /tmp
        // (world-traversable) rather than a TMPDIR that may be private. The
        // unix socket path must also stay short. In memory (data_base) when
        // the machine has room: it is both.
        let base = match crate::scratch::memory_base() {
            Some(memory) => memory,
            None if root || crate::data_base().as_os_str().len() > 60 => Path::new("/tmp"),
            None => crate::data_base(),
        };
        let dir = crate::scratch::private_dir_in("pg", base);
        let socket_len = dir.path().join(".s.PGSQL.65535.lock").as_os_str().len();
        assert!(
            socket_len < MAX_SOCKET_PATH,
            "the PostgreSQL socket path in {} would be too long for a unix socket",
            dir.path().display()
        );
        let cluster = PgCluster {
            bin_dir,
            runuser,
            dir,
            port: 0,
            password: random_hex(16),
            owner,
            tls: false,
            also_on: None,
        };
        if let Some((uid, gid)) = owner {
            chown(cluster.dir.path(), uid, gid);
        }
        cluster.write_password_file();
        cluster.make_data();
        cluster
    }

    /// Copies a certificate and key to where the server reads them, owned
    /// by the server's user (PostgreSQL refuses a key others can read).
    fn copy_server_cert(&self, server: &crate::CertFiles) {
        use std::os::unix::fs::PermissionsExt;
        for (from, to) in [(&server.cert, "server.crt"), (&server.key, "server.key")] {
            let to = self.dir.path().join(to);
            std::fs::copy(from, &to).unwrap_or_else(|error| {
                panic!("copying {} for PostgreSQL: {error}", from.display())
            });
            std::fs::set_permissions(&to, std::fs::Permissions::from_mode(0o600))
                .expect("restricting the server's certificate files");
            if let Some((uid, gid)) = self.owner {
                chown(&to, uid, gid);
            }
        }
    }

    /// Stops the server (`pg_ctl stop -m fast`), keeping the data. Does
    /// nothing if the server is not running; panics if it does not stop.
    pub fn stop(&mut self) {
        if !self.data_dir().join("postmaster.pid").exists() {
            return;
        }
        let args = [
            "-D",
            &self.data_dir_str(),
            "-m",
            "fast",
            "-w",
            "-t",
            "30",
            "stop",
        ];
        if let Err(output) = self.run("pg_ctl", &args, START_DEADLINE + Duration::from_secs(5)) {
            self.fail("pg_ctl stop -m fast failed", &output);
        }
    }

    /// Starts the server again after [`PgCluster::stop`]: same port, same
    /// data. Blocks until it accepts connections.
    ///
    /// Panics if it cannot start (for example when another process took the
    /// port meanwhile).
    pub fn start_again(&mut self) {
        let log_before = crate::file_len(&self.log_path());
        if let Err(output) = self.pg_ctl_start() {
            let fresh = crate::read_lossy_from(&self.log_path(), log_before);
            let why = if port_taken(&fresh) {
                format!(
                    "PostgreSQL could not restart: port {} was taken by another process meanwhile",
                    self.port
                )
            } else {
                "pg_ctl start failed (is the server already running?)".to_string()
            };
            self.fail(&why, &output);
        }
    }

    /// Whether the server is running (`pg_ctl status`).
    pub fn is_running(&self) -> bool {
        self.run(
            "pg_ctl",
            &["-D", &self.data_dir_str(), "status"],
            START_DEADLINE,
        )
        .is_ok()
    }

    fn write_password_file(&self) {
        write_password(&self.superuser_password_file(), &self.password, self.owner);
    }

    /// `initdb` of a new data folder `data` (in a folder the server's user
    /// may write), the superuser's password read from `pwfile`, with the
    /// include of the settings [`PgCluster::write_settings`] writes.
    pub(super) fn initdb(&self, data: &Path, pwfile: &Path) {
        let data_text = data.to_string_lossy();
        let pwfile = format!("--pwfile={}", pwfile.display());
        let args = [
            "-D",
            &data_text,
            "--auth=scram-sha-256",
            "--username",
            SUPERUSER,
            &pwfile,
            "--encoding=UTF8",
            "--locale=C",
            "--no-sync",
        ];
        if let Err(output) = self.run("initdb", &args, Duration::from_secs(120)) {
            self.fail("initdb failed", &output);
        }
        let conf = data.join("postgresql.conf");
        let mut text = std::fs::read_to_string(&conf).expect("reading postgresql.conf");
        text.push_str("\n# mesh-test-support\ninclude 'mesh_test.conf'\n");
        std::fs::write(&conf, text).expect("writing postgresql.conf");
        let include = data.join("mesh_test.conf");
        std::fs::write(&include, "").expect("writing mesh_test.conf");
        if let Some((uid, gid)) = self.owner {
            chown(&include, uid, gid);
        }
    }

    /// Writes the settings that depend on the port (and TLS, when on).
    fn write_settings(&self) {
        let socket_dir = self.dir.path().to_string_lossy().into_owned();
        let listen = match &self.also_on {
            Some(address) => conf_string(&format!("{HOST},{address}")),
            None => conf_string(HOST),
        };
        let mut text = format!(
            "port = {}\n\
             listen_addresses = {listen}\n\
             unix_socket_directories = {}\n\
             logging_collector = off\n\
             log_destination = 'stderr'\n\
             log_statement = 'all'\n\
             log_line_prefix = '%m [%p] %q%u@%d '\n\
             fsync = off\n\
             shared_buffers = '32MB'\n",
            self.port,
            conf_string(&socket_dir)
        );
        if self.tls {
            let file = |name: &str| conf_string(&self.dir.path().join(name).to_string_lossy());
            text.push_str(&format!(
                "ssl = on\nssl_cert_file = {}\nssl_key_file = {}\n",
                file("server.crt"),
                file("server.key")
            ));
        }
        std::fs::write(self.data_dir().join("mesh_test.conf"), text)
            .expect("writing mesh_test.conf");
    }

    fn start_on_free_port(mut self) -> PgCluster {
        for attempt in 1..=START_ATTEMPTS {
            self.port = free_port();
            self.write_settings();
            let log_before = crate::file_len(&self.log_path());
            match self.pg_ctl_start() {
                Ok(()) => return self,
                Err(output) => {
                    let fresh = crate::read_lossy_from(&self.log_path(), log_before);
                    if port_taken(&fresh) && attempt < START_ATTEMPTS {
                        continue;
                    }
                    self.fail("pg_ctl start failed", &output);
                }
            }
        }
        unreachable!("the loop above returns or panics")
    }

    fn pg_ctl_start(&self) -> Result<(), String> {
        let log = self.log_path().to_string_lossy().into_owned();
        let args = [
            "-D",
            &self.data_dir_str(),
            "-l",
            &log,
            "-w",
            "-t",
            "30",
            "start",
        ];
        self.run("pg_ctl", &args, START_DEADLINE + Duration::from_secs(5))
            .map(|_| ())
    }

    /// Runs a PostgreSQL binary (as `postgres` when root) with a hard
    /// deadline; returns its output, as `Err` if it failed.
    fn run(&self, program: &str, args: &[&str], limit: Duration) -> Result<String, String> {
        self.run_fed(program, args, None, limit)
    }

    /// [`PgCluster::run`] with `input` on the program's stdin (from an
    /// anonymous file: it is never on a command line or a named file).
    pub(super) fn run_fed(
        &self,
        program: &str,
        args: &[&str],
        input: Option<&str>,
        limit: Duration,
    ) -> Result<String, String> {
        let binary = self.bin_dir.join(program);
        let mut command = match &self.runuser {
            Some(runuser) => {
                let mut command = Command::new(runuser);
                command.args(["-u", SUPERUSER, "--"]).arg(&binary);
                command
            }
            None => Command::new(&binary),
        };
        // Output goes to an anonymous file, not a pipe: a daemonized child
        // holding a pipe open would block the read.
        let mut output = tempfile::tempfile().expect("creating a temp file for command output");
        command
            .args(args)
            .current_dir(self.dir.path())
            .env_remove("PGDATA")
            .env_remove("PGPORT")
            .env_remove("PGHOST")
            .env_remove("PGUSER")
            .env_remove("PGPASSWORD")
            .env_remove("PGOPTIONS")
            .stdin(match input {
                Some(text) => {
                    use std::io::Write;
                    let mut file = tempfile::tempfile().expect("creating a temp file for input");
                    file.write_all(text.as_bytes()).expect("writing the input");
                    file.rewind().expect("rewinding the input");
                    Stdio::from(file)
                }
                None => Stdio::null(),
            })
            .stdout(output.try_clone().expect("cloning the output file"))
            .stderr(output.try_clone().expect("cloning the output file"));
        let mut child = command.spawn().unwrap_or_else(|error| {
            panic!(
                "could not run {}: {error}; install the Debian package `postgresql`",
                binary.display()
            )
        });
        let status = poll_until(Instant::now() + limit, || child.try_wait().ok().flatten());
        let status = match status {
            Some(status) => Some(status),
            None => {
                let _ = child.kill();
                let _ = child.wait();
                None
            }
        };
        let mut text = String::new();
        let _ = output.rewind();
        let _ = output.read_to_string(&mut text);
        let shown = format!("$ {} {}\n{text}", binary.display(), args.join(" "));
        match status {
            Some(status) if status.success() => Ok(text),
            Some(status) => Err(format!("{shown}\n({status})")),
            None => Err(format!("{shown}\n(killed after {limit:?})")),
        }
    }

    /// Panics with `why`, the command output and the log tail.
    pub(super) fn fail(&self, why: &str, output: &str) -> ! {
        panic!(
            "{why}\nbin dir: {}\nport: {}\ndir: {}\n--- command output ---\n{}\n--- log tail ---\n{}",
            self.bin_dir.display(),
            self.port,
            self.dir.path().display(),
            tail(output, 30),
            tail(&self.log(), 40)
        )
    }
}

impl Drop for PgCluster {
    fn drop(&mut self) {
        let data = self.data_dir();
        if !data.join("postmaster.pid").exists() {
            return;
        }
        let args = [
            "-D",
            &self.data_dir_str(),
            "-m",
            "immediate",
            "-w",
            "-t",
            "10",
            "stop",
        ];
        let _ = self.run("pg_ctl", &args, Duration::from_secs(15));
        // Last resort: kill the postmaster if it is still there.
        let pid_file = read_lossy(&data.join("postmaster.pid"));
        let pid = pid_file
            .lines()
            .next()
            .and_then(|line| line.trim().parse::<i32>().ok());
        if let Some(pid) = pid {
            let cmdline = read_lossy(Path::new(&format!("/proc/{pid}/cmdline")));
            if cmdline.contains("postgres") {
                if let Some(pid) = rustix::process::Pid::from_raw(pid) {
                    let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
                }
            }
        }
    }
}

/// Whether a server log says the port was taken.
fn port_taken(log: &str) -> bool {
    log.contains("Address already in use") || log.contains("could not create any TCP/IP sockets")
}

/// A single-quoted postgresql.conf string.
fn conf_string(value: &str) -> String {
    format!("'{}'", value.replace('\\', "\\\\").replace('\'', "''"))
}
