//! What tests/hooks.rs needs beside the harness: a private Redis on a free
//! port (its administrator `default` with a password in a file), read over
//! Redis's own protocol (no `redis-cli`, whose `-a` would put the password
//! on a command line the scan reads), and a scan of every process's command
//! line and environment.

use std::collections::HashSet;
use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// A private `redis-server` on 127.0.0.1 (free port, no persistence),
/// stopped on drop.
pub struct Redis {
    child: Child,
    port: u16,
    dir: tempfile::TempDir,
    password: String,
}

impl Redis {
    /// Starts one and waits until it answers.
    ///
    /// # Panics
    /// When `redis-server` is not installed or does not answer within 10 s.
    pub fn start() -> Redis {
        let dir = tempfile::tempdir().unwrap();
        let password = format!("redis-admin-{}", std::process::id());
        std::fs::write(dir.path().join("admin.password"), &password).unwrap();
        // The password reaches the server in its configuration file, not
        // its command line.
        let port = mesh_test_support::free_port();
        let config = format!(
            "port {port}\nbind 127.0.0.1\nsave \"\"\nappendonly no\ndir {}\nrequirepass {password}\n",
            dir.path().display()
        );
        std::fs::write(dir.path().join("redis.conf"), config).unwrap();
        let child = Command::new("redis-server")
            .arg(dir.path().join("redis.conf"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server runs (apt-get install redis-server; scripts/test installs it)");
        let redis = Redis {
            child,
            port,
            dir,
            password,
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        while redis.try_call(&["PING"]).is_err() {
            assert!(
                Instant::now() < deadline,
                "redis-server never answered on {port}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        redis
    }

    /// Its port on 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The administrator's password.
    pub fn admin_password(&self) -> &str {
        &self.password
    }

    /// The file holding it.
    pub fn admin_password_file(&self) -> PathBuf {
        self.dir.path().join("admin.password")
    }

    /// One command as the administrator; its reply.
    ///
    /// # Panics
    /// When Redis cannot be reached or answers an error.
    pub fn call(&self, args: &[&str]) -> Reply {
        self.try_call(args)
            .unwrap_or_else(|e| panic!("redis {args:?}: {e}"))
    }

    fn try_call(&self, args: &[&str]) -> Result<Reply, String> {
        let stream = TcpStream::connect(("127.0.0.1", self.port)).map_err(|e| e.to_string())?;
        stream
            .set_read_timeout(Some(Duration::from_secs(5)))
            .map_err(|e| e.to_string())?;
        let mut out = stream.try_clone().map_err(|e| e.to_string())?;
        let mut input = BufReader::new(stream);
        let mut last = Reply::Bulk(None);
        for command in [&["AUTH", self.password.as_str()][..], args] {
            let mut bytes = format!("*{}\r\n", command.len()).into_bytes();
            for arg in command {
                bytes.extend(format!("${}\r\n{arg}\r\n", arg.len()).into_bytes());
            }
            out.write_all(&bytes).map_err(|e| e.to_string())?;
            last = match read(&mut input)? {
                Reply::Error(e) => return Err(e),
                reply => reply,
            };
        }
        Ok(last)
    }

    /// The ACL users, sorted.
    pub fn acl_users(&self) -> Vec<String> {
        let mut users = self.call(&["ACL", "USERS"]).strings();
        users.sort();
        users
    }

    /// Whether the ACL user `name` is on (`None`: no such user).
    pub fn user_on(&self, name: &str) -> Option<bool> {
        self.call(&["ACL", "LIST"])
            .strings()
            .iter()
            .map(|line| line.split(' ').collect::<Vec<_>>())
            .find(|words| words.get(1) == Some(&name))
            .map(|words| words.contains(&"on"))
    }

    /// Whether `name` logs in with `password`.
    pub fn password_is(&self, name: &str, password: &str) -> bool {
        let Ok(stream) = TcpStream::connect(("127.0.0.1", self.port)) else {
            return false;
        };
        let mut out = stream.try_clone().unwrap();
        let mut input = BufReader::new(stream);
        let command = format!(
            "*3\r\n$4\r\nAUTH\r\n${}\r\n{name}\r\n${}\r\n{password}\r\n",
            name.len(),
            password.len()
        );
        out.write_all(command.as_bytes()).is_ok()
            && matches!(read(&mut input), Ok(Reply::Simple(_)))
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A reply of Redis's protocol (RESP2).
#[derive(Debug)]
pub enum Reply {
    /// `+OK`.
    Simple(String),
    /// `-ERR ...`.
    Error(String),
    /// `:3` (the number is not needed here).
    Integer,
    /// `$...`, or `None` for a nil.
    Bulk(Option<String>),
    /// `*...`.
    Array(Vec<Reply>),
}

impl Reply {
    /// The strings of an array reply.
    pub fn strings(&self) -> Vec<String> {
        match self {
            Reply::Array(items) => items
                .iter()
                .filter_map(|item| match item {
                    Reply::Bulk(Some(s)) | Reply::Simple(s) => Some(s.clone()),
                    _ => None,
                })
                .collect(),
            _ => Vec::new(),
        }
    }
}

fn read(input: &mut BufReader<TcpStream>) -> Result<Reply, String> {
    let mut line = String::new();
    input.read_line(&mut line).map_err(|e| e.to_string())?;
    let line = line.trim_end_matches("\r\n");
    let (kind, rest) = line.split_at(1.min(line.len()));
    let number = || rest.parse::<i64>().map_err(|e| format!("{line:?}: {e}"));
    Ok(match kind {
        "+" => Reply::Simple(rest.to_owned()),
        "-" => Reply::Error(rest.to_owned()),
        ":" => {
            number()?;
            Reply::Integer
        }
        "$" => match usize::try_from(number()?) {
            Ok(size) => {
                let mut data = vec![0; size + 2];
                std::io::Read::read_exact(input, &mut data).map_err(|e| e.to_string())?;
                data.truncate(size);
                Reply::Bulk(Some(String::from_utf8_lossy(&data).into_owned()))
            }
            Err(_) => Reply::Bulk(None),
        },
        "*" => {
            let size = number()?;
            let mut items = Vec::new();
            for _ in 0..size.max(0) {
                items.push(read(input)?);
            }
            Reply::Array(items)
        }
        _ => return Err(format!("not RESP2: {line:?}")),
    })
}

/// The example hooks' settings for the Redis on `port`, its administrator's
/// password in `redis`'s file.
pub fn redis_env_at(redis: &Redis, port: u16) -> Vec<(String, String)> {
    vec![
        ("REDIS_URL".into(), format!("redis://127.0.0.1:{port}")),
        (
            "REDIS_ADMIN_PASSWORD_FILE".into(),
            redis.admin_password_file().display().to_string(),
        ),
    ]
}

/// The example hooks' settings for `redis`.
pub fn redis_env(redis: &Redis) -> Vec<(String, String)> {
    redis_env_at(redis, redis.port())
}

/// How often the scan reads `/proc`.
const EVERY: Duration = Duration::from_millis(10);

/// What a [`ProcScan`] saw.
#[derive(Debug, Default)]
pub struct Seen {
    /// Scans that found a process whose command line holds the word.
    pub hook_scans: usize,
    /// Such processes.
    pub hook_processes: HashSet<String>,
    /// Where a secret was found (`secret #i in the environ of pid N`).
    pub leaks: Vec<String>,
}

/// A thread reading every process's `/proc/PID/cmdline` and
/// `/proc/PID/environ` every 10 ms until [`finish`](Self::finish): it
/// notes every one holding a watched secret, and counts the scans that saw
/// a process whose command line holds a given word (the hook's file name).
pub struct ProcScan {
    stop: Arc<AtomicBool>,
    secrets: Arc<Mutex<Vec<String>>>,
    seen: Arc<Mutex<Seen>>,
    thread: Option<JoinHandle<()>>,
}

impl ProcScan {
    /// Starts scanning for processes whose command line holds `word`.
    pub fn start(word: &str) -> ProcScan {
        let stop = Arc::new(AtomicBool::new(false));
        let secrets = Arc::new(Mutex::new(Vec::<String>::new()));
        let seen = Arc::new(Mutex::new(Seen::default()));
        let thread = std::thread::spawn({
            let (stop, secrets, seen) = (stop.clone(), secrets.clone(), seen.clone());
            let word = word.to_owned();
            move || {
                while !stop.load(Ordering::SeqCst) {
                    let secrets = secrets.lock().unwrap().clone();
                    let mut saw_hook = false;
                    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
                        let pid = entry.file_name().to_string_lossy().into_owned();
                        if !pid.bytes().all(|b| b.is_ascii_digit()) {
                            continue;
                        }
                        let mut seen = seen.lock().unwrap();
                        for what in ["cmdline", "environ"] {
                            let Ok(raw) = std::fs::read(entry.path().join(what)) else {
                                continue;
                            };
                            let text = String::from_utf8_lossy(&raw).replace('\0', " ");
                            if what == "cmdline" && text.contains(&word) {
                                saw_hook = true;
                                seen.hook_processes.insert(pid.clone());
                            }
                            for (i, secret) in secrets.iter().enumerate() {
                                if !secret.is_empty() && text.contains(secret.as_str()) {
                                    seen.leaks.push(format!(
                                        "secret #{i} in the {what} of pid {pid}: {text}"
                                    ));
                                }
                            }
                        }
                    }
                    if saw_hook {
                        seen.lock().unwrap().hook_scans += 1;
                    }
                    std::thread::sleep(EVERY);
                }
            }
        });
        ProcScan {
            stop,
            secrets,
            seen,
            thread: Some(thread),
        }
    }

    /// Adds secrets to look for.
    pub fn watch(&self, more: impl IntoIterator<Item = String>) {
        self.secrets.lock().unwrap().extend(more);
    }

    /// Stops; what it saw, after asserting that no secret was found.
    pub fn finish(mut self) -> Seen {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(thread) = self.thread.take() {
            thread.join().expect("the /proc scan panicked");
        }
        let seen = std::mem::take(&mut *self.seen.lock().unwrap());
        assert!(seen.leaks.is_empty(), "{:#?}", seen.leaks);
        seen
    }
}

impl Drop for ProcScan {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}
