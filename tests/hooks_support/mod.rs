//! What tests/hooks.rs needs beside the harness: the example hooks'
//! settings for a private Redis (test-support's [`RedisServer`]), what its
//! users are (through redis-cli, passwords on its stdin, never a command
//! line the scan reads), and a scan of every process's command line and
//! environment.

// Each test binary that includes this module uses part of it.
#![allow(dead_code)]

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

/// The reply of the Redis example hook `hook` (run in exec mode: `hook
/// VERB`, the request on stdin) to `request` as the instance `provider`.
pub fn ask_exec(
    hook: &std::path::Path,
    env: &[(String, String)],
    provider: &str,
    mut request: serde_json::Value,
) -> serde_json::Value {
    use std::io::Write;
    use std::process::{Command, Stdio};
    request["v"] = 1.into();
    request["id"] = 1.into();
    request["deadline_ms"] = 20_000.into();
    request["provider"] = provider.into();
    let verb = request["verb"].as_str().unwrap().to_owned();
    let mut child = Command::new(hook)
        .arg(&verb)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .env("MESH_PROVIDER", provider)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the hook runs");
    let line = serde_json::to_vec(&request).unwrap();
    child.stdin.take().unwrap().write_all(&line).unwrap();
    let out = child.wait_with_output().unwrap();
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{verb}: no JSON reply ({e}): {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

/// The consumer `name`'s `ensure` request with `secret`.
pub fn ensure_of(name: &str, secret: &str) -> serde_json::Value {
    serde_json::json!({"verb": "ensure", "secret": secret,
        "consumer": {"name": name, "machine": "app-1", "provision": "redis-acl", "options": {}}})
}

/// The consumers `held` lists for `provider`, sorted.
pub fn held_names(hook: &std::path::Path, env: &[(String, String)], provider: &str) -> Vec<String> {
    let reply = ask_exec(hook, env, provider, serde_json::json!({"verb": "held"}));
    let mut names: Vec<String> = reply["held"]
        .as_array()
        .unwrap_or_else(|| panic!("held as {provider}: {reply}"))
        .iter()
        .map(|h| h["consumer"].as_str().unwrap().to_owned())
        .collect();
    names.sort();
    names
}

/// Two instances of the Redis example `hook` on one Redis: what
/// `redis@db-1` makes, `redis@db-2`'s held lists none of, its ensure is
/// refused naming db-1, and its retire, re-enable and delete leave working.
pub fn two_instances_on_one_redis(hook: &std::path::Path) {
    let redis = RedisServer::start();
    let env = redis_env(&redis);
    let (a, b) = ("redis@db-1", "redis@db-2");
    for name in ["forge", "wiki"] {
        let reply = ask_exec(hook, &env, a, ensure_of(name, &format!("{name}-pw")));
        assert_eq!(reply["ok"], true, "{reply}");
    }
    let reply = ask_exec(hook, &env, b, ensure_of("docs", "docs-pw"));
    assert_eq!(reply["ok"], true, "{reply}");
    assert_eq!(held_names(hook, &env, a), ["forge", "wiki"]);
    assert_eq!(held_names(hook, &env, b), ["docs"]);
    let refused = ask_exec(hook, &env, b, ensure_of("forge", "taken-pw"));
    assert_eq!(refused["ok"], false, "{refused}");
    assert_eq!(refused["class"], "refused", "{refused}");
    assert!(
        refused["error"]
            .as_str()
            .unwrap()
            .contains("made by redis@db-1"),
        "{refused}"
    );
    for verb in ["retire", "re-enable", "delete"] {
        for name in ["forge", "wiki"] {
            let _ = ask_exec(
                hook,
                &env,
                b,
                serde_json::json!({"verb": verb, "consumer": name}),
            );
            assert!(
                password_is(&redis, name, &format!("{name}-pw")),
                "{name} works after {verb} as {b}"
            );
            assert_eq!(user_on(&redis, name), Some(true), "{verb} as {b}");
        }
    }
    assert_eq!(held_names(hook, &env, a), ["forge", "wiki"]);
    // Its own instance retires and deletes it.
    for verb in ["retire", "delete"] {
        let reply = ask_exec(
            hook,
            &env,
            a,
            serde_json::json!({"verb": verb, "consumer": "forge"}),
        );
        assert_eq!(reply["ok"], true, "{reply}");
    }
    assert_eq!(user_on(&redis, "forge"), None, "deleted by its maker");
    assert_eq!(held_names(hook, &env, a), ["wiki"]);
}

/// A user the Redis example `hook` marked before marks named an instance
/// (`%R~_mesh-provide`): listed by no instance's held, left by retire and
/// delete, adopted by an ensure (its consumer listed), then listed by that
/// instance's held only, and refused to another's ensure.
pub fn an_old_mark_is_adopted_by_ensure(hook: &std::path::Path) {
    let redis = RedisServer::start();
    let env = redis_env(&redis);
    redis.cli("ACL SETUSER forge reset on >forge-pw ~forge:* %R~_mesh-provide resetchannels +@all -@dangerous");
    let (a, b) = ("redis@db-1", "redis@db-2");
    assert!(
        held_names(hook, &env, a).is_empty(),
        "an old mark is no instance's"
    );
    for verb in ["retire", "delete"] {
        let _ = ask_exec(
            hook,
            &env,
            a,
            serde_json::json!({"verb": verb, "consumer": "forge"}),
        );
        assert_eq!(user_on(&redis, "forge"), Some(true), "left by {verb}");
    }
    let reply = ask_exec(hook, &env, a, ensure_of("forge", "forge-pw"));
    assert_eq!(reply["ok"], true, "{reply}");
    assert_eq!(reply.get("mended"), None, "adopting is no mending: {reply}");
    assert_eq!(held_names(hook, &env, a), ["forge"]);
    assert!(held_names(hook, &env, b).is_empty());
    assert!(password_is(&redis, "forge", "forge-pw"));
    let acl = redis.cli("ACL GETUSER forge");
    assert!(acl.contains("%R~_mesh-provide:redis@db-1"), "{acl}");
    let refused = ask_exec(hook, &env, b, ensure_of("forge", "other-pw"));
    assert_eq!(refused["class"], "refused", "{refused}");
}

/// How many rules a conform report passed. Its last line must be `N
/// passed, 0 failed`, or `N passed, 0 failed, 1 skipped` when the one rule
/// skipped is the cut, which says it cut nothing (a serve hook on a fast
/// backend answers in under the 2 ms a cut needs); no rule may fail.
pub fn conform_passed(out: &str) -> usize {
    assert!(!out.contains("FAIL"), "{out}");
    let last = out.lines().last().unwrap_or_default();
    let counts = match last.strip_suffix(", 1 skipped") {
        Some(counts) => {
            let skipped: Vec<&str> = out.lines().filter(|l| l.starts_with("skip ")).collect();
            assert!(
                skipped.len() == 1
                    && skipped[0].starts_with(
                        "skip a call cut off mid-way leaves nothing that breaks the next ensure: "
                    )
                    && skipped[0].contains("nothing was cut, so nothing was tested"),
                "only the cut may be skipped, for a call too quick to cut:\n{out}"
            );
            counts
        }
        None => last,
    };
    counts
        .strip_suffix(" passed, 0 failed")
        .unwrap_or_else(|| panic!("no `N passed, 0 failed` line:\n{out}"))
        .parse()
        .unwrap_or_else(|_| panic!("no count of rules passed:\n{out}"))
}
