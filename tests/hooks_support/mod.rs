//! What tests/hooks.rs needs beside the harness: the example hooks'
//! settings for a private Redis (test-support's [`RedisServer`]), what its
//! users are (through redis-cli, passwords on its stdin, never a command
//! line the scan reads), and a scan of every process's command line and
//! environment.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use mesh_test_support::RedisServer;

/// The example hooks' settings for `redis`, reached on `port` (its own, or
/// a proxy's in front of it).
pub fn redis_env_at(redis: &RedisServer, port: u16) -> Vec<(String, String)> {
    redis
        .hook_env()
        .into_iter()
        .map(|(k, v)| match k {
            "REDIS_ACL_PORT" => (k.to_owned(), port.to_string()),
            _ => (k.to_owned(), v),
        })
        .collect()
}

/// The example hooks' settings for `redis`.
pub fn redis_env(redis: &RedisServer) -> Vec<(String, String)> {
    redis_env_at(redis, redis.port())
}

/// Whether the ACL user `name` of `redis` is on (`None`: no such user).
pub fn user_on(redis: &RedisServer, name: &str) -> Option<bool> {
    redis
        .cli("ACL LIST")
        .lines()
        .skip(1)
        .map(|line| line.split(' ').map(str::to_owned).collect::<Vec<_>>())
        .find(|fields| fields.get(1).map(String::as_str) == Some(name))
        .map(|fields| fields.get(2).map(String::as_str) == Some("on"))
}

/// Whether `name` logs in to `redis` with `password` (given on redis-cli's
/// stdin, never a command line).
pub fn password_is(redis: &RedisServer, name: &str, password: &str) -> bool {
    redis
        .cli_as(name, password, "PING")
        .lines()
        .any(|l| l == "PONG")
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
