//! `examples/hooks/redis-acl.py`, written on the Python kit
//! (`kits/python/mesh_hook.py`), on a private Redis: it passes every rule of
//! `mesh-provide conform` (the built binary) in serve mode and in exec
//! mode, leaves nothing of the suite's behind, never touches a user a
//! person made nor another provider instance's (two instances on one
//! Redis; an old mark adopted by ensure), and its administrator's password
//! is in no output.

mod hooks_support;

use std::fs::File;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use mesh_test_support::mesh::binary;
use mesh_test_support::{RedisServer, REDIS_ADMIN};

/// How long one conform run may take before the test says it hangs.
const CONFORM_DEADLINE: Duration = Duration::from_secs(300);

fn hook() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples/hooks/redis-acl.py")
}

/// Runs `mesh-provide ARGS` with `env`; (exit code, stdout, stderr). Kills
/// it and panics when it has not ended within [`CONFORM_DEADLINE`].
fn mesh_provide(args: &[&str], env: &[(&'static str, String)]) -> (i32, String, String) {
    let dir = tempfile::tempdir().expect("a temp dir for the output");
    let (out_path, err_path) = (dir.path().join("out"), dir.path().join("err"));
    let mut child = Command::new(binary("mesh-provide"))
        .args(args)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(File::create(&out_path).unwrap())
        .stderr(File::create(&err_path).unwrap())
        .spawn()
        .expect("mesh-provide runs");
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("waiting for mesh-provide") {
            break status;
        }
        if started.elapsed() > CONFORM_DEADLINE {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "mesh-provide {args:?} still ran after {CONFORM_DEADLINE:?}: the hook likely hangs on a call \
                 (a reply never written, or a wait not bounded by deadline_ms)\n{}\n{}",
                std::fs::read_to_string(&out_path).unwrap_or_default(),
                std::fs::read_to_string(&err_path).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    (
        status.code().unwrap_or(-1),
        std::fs::read_to_string(&out_path).unwrap_or_default(),
        std::fs::read_to_string(&err_path).unwrap_or_default(),
    )
}

/// How many rules `mesh-provide conform --list` prints (None when this
/// mesh-provide has no `--list`).
fn rules_listed(redis: &RedisServer) -> Option<usize> {
    let (code, out, _) = mesh_provide(&["conform", "--list"], &redis.hook_env());
    (code == 0).then(|| out.lines().filter(|l| !l.trim().is_empty()).count())
}

/// Conform over the Python hook in `mode` beside a user a person made.
fn conforms(mode: &str) {
    let redis = RedisServer::start();
    // A user a person made: never listed, changed or removed.
    redis.cli("ACL SETUSER app-cache on >theirs ~app:* +@all");
    let hook = hook();
    let (code, out, err) = mesh_provide(
        &[
            "conform",
            "--hook",
            hook.to_str().unwrap(),
            "--hook-mode",
            mode,
            "--consumers",
            // Exec mode starts a process a call: 8 in parallel prove the same as 16.
            if mode == "exec" { "8" } else { "16" },
            "--provision",
            "redis-acl",
        ],
        &redis.hook_env(),
    );
    assert_eq!(
        code, 0,
        "redis-acl.py --hook-mode {mode} fails conform:\n{out}\n{err}"
    );
    let passed = hooks_support::conform_passed(&out);
    assert_eq!(
        out.lines().filter(|l| l.starts_with("ok   ")).count(),
        passed,
        "one ok line a rule: {out}"
    );
    // The cut may say it cut nothing (a serve hook answering in under 2 ms).
    let skipped = usize::from(out.lines().any(|l| l.starts_with("skip ")));
    match rules_listed(&redis) {
        Some(rules) => assert_eq!(
            passed + skipped,
            rules,
            "every listed rule ran and passed: {out}"
        ),
        None => assert!(passed >= 10, "conform ran {passed} rules: {out}"),
    }
    assert!(!out.contains("left behind:"), "{out}");
    assert_eq!(
        redis.acl_users(),
        ["app-cache", "default", REDIS_ADMIN],
        "nothing of the suite's is left, the person's user is"
    );
    assert!(
        redis.cli_as("app-cache", "theirs", "PING").contains("PONG"),
        "the person's user still works with its own password"
    );
    let keys = redis.cli("KEYS conform-*");
    assert_eq!(
        keys.lines().skip(1).filter(|l| !l.is_empty()).count(),
        0,
        "no key of the suite's is left: {keys}"
    );
    let password = redis.admin_password();
    assert!(
        !out.contains(password) && !err.contains(password),
        "the administrator's password is in conform's output:\n{out}\n{err}"
    );
}

#[test]
fn the_python_hook_passes_every_conform_rule_in_serve_mode() {
    conforms("serve");
}

#[test]
fn the_python_hook_passes_every_conform_rule_in_exec_mode() {
    conforms("exec");
}

#[test]
fn two_instances_of_the_python_hook_on_one_redis_keep_to_their_own() {
    hooks_support::two_instances_on_one_redis(&hook());
}

#[test]
fn a_user_the_python_hook_marked_before_instances_is_adopted_by_ensure() {
    hooks_support::an_old_mark_is_adopted_by_ensure(&hook());
}

/// `redis-acl.py serve` with its stdout read line by line on a thread.
struct Served {
    child: std::process::Child,
    lines: std::sync::mpsc::Receiver<String>,
}

impl Served {
    fn start(env: &[(&'static str, String)]) -> Served {
        let mut child = Command::new(hook())
            .arg("serve")
            .envs(env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-acl.py runs");
        let stdout = child.stdout.take().unwrap();
        let (send, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            use std::io::BufRead;
            for line in std::io::BufReader::new(stdout)
                .lines()
                .map_while(Result::ok)
            {
                if send.send(line).is_err() {
                    break;
                }
            }
        });
        Served { child, lines }
    }

    /// Writes `request` (id `id`); every line up to its reply, the reply last.
    fn ask(&mut self, id: u64, request: serde_json::Value) -> Vec<serde_json::Value> {
        use std::io::Write;
        let stdin = self.child.stdin.as_mut().unwrap();
        writeln!(stdin, "{request}").unwrap();
        let mut seen = Vec::new();
        loop {
            let line = self.lines.recv_timeout(Duration::from_secs(20)).unwrap_or_else(|_| {
                panic!("redis-acl.py serve wrote no reply to request {id} in 20 s (seen: {seen:?}): it hangs on a call")
            });
            let value: serde_json::Value = serde_json::from_str(&line)
                .unwrap_or_else(|e| panic!("a line that is not JSON ({e}): {line}"));
            let done = value["id"] == id;
            seen.push(value);
            if done {
                return seen;
            }
        }
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn a_rotated_admin_password_is_announced_before_the_python_hook_uses_it() {
    let redis = RedisServer::start();
    let mut hook = Served::start(&redis.hook_env());
    let ask = |id: u64, verb: &str| serde_json::json!({"v": 1, "id": id, "verb": verb, "deadline_ms": 5000, "provider": "redis@db-1"});
    let hello = hook.ask(1, ask(1, "hello"));
    let old = redis.admin_password().to_owned();
    assert_eq!(
        hello.last().unwrap()["secrets"],
        serde_json::json!([old]),
        "{hello:?}"
    );
    let held = hook.ask(2, ask(2, "held"));
    assert_eq!(
        held.last().unwrap()["held"],
        serde_json::json!([]),
        "{held:?}"
    );

    // The administrator's password rotated at Redis and in its file, and
    // its connections ended: the next call reads the file again.
    let new = "rotated-admin-password-5d1f";
    redis.cli(&format!("ACL SETUSER {REDIS_ADMIN} resetpass >{new}"));
    std::fs::write(redis.admin_password_file(), format!("{new}\n")).unwrap();
    redis.cli_as(REDIS_ADMIN, new, &format!("CLIENT KILL USER {REDIS_ADMIN}"));
    let lines = hook.ask(3, ask(3, "held"));
    assert_eq!(
        lines.first(),
        Some(&serde_json::json!({"secrets": [new]})),
        "the new password is announced first: {lines:?}"
    );
    assert_eq!(
        lines.last().unwrap()["held"],
        serde_json::json!([]),
        "held works with the new password: {lines:?}"
    );
}

/// The Python kit's provider fault, end to end: `redis-acl.py` run by
/// `mesh-provide` (exec mode: hello once a pass) as `redis@cache-1`, its
/// administrator's password changed at Redis and not in its file: the
/// hook's hello says the fault (`Hook.admin_fault`), the loop publishes it
/// and `status` names the provider, with the hook's words (their fix at the
/// end: the loop's own reading of a failed held has none); the new password
/// written to the file clears it with no restart.
#[test]
fn the_python_hooks_hello_says_its_administrator_refused_and_status_names_the_provider() {
    use mesh_test_support::mesh::{
        all_well, example_hook, Mesh, Options, HOOK_MACHINE, HOOK_MODULE,
    };
    let redis = RedisServer::start();
    let mut mesh = Mesh::with(Options {
        consumers: Vec::new(),
        hook: vec![("forge", "app-1"), ("wiki", "app-1")],
        alive_every: "1s",
        ..Options::default()
    });
    mesh.start_controller();
    let env: Vec<(String, String)> = hooks_support::redis_env(&redis);
    mesh.start_hook(&example_hook("redis-acl.py"), "exec", "1h", &env);
    mesh.wait_status("all well, the hook provider heard from", all_well);

    const ROTATED: &str = "rotated-admin-pw-py-7d41";
    let old = redis.admin_password().to_owned();
    redis.cli(&format!("ACL SETUSER {REDIS_ADMIN} resetpass >{ROTATED}"));
    let status = mesh.wait_status("the provider fault", |s| {
        s["faults"].as_array().is_some_and(|f| !f.is_empty())
    });
    let fault = &status["faults"][0];
    assert_eq!(fault["provider_module"], HOOK_MODULE, "{status:#}");
    assert_eq!(fault["class"], "credentials-rejected", "{status:#}");
    let error = fault["error"].as_str().unwrap_or_default();
    assert!(
        error.contains(&format!(
            "the hook's administrator {REDIS_ADMIN} was refused"
        )) && error
            .ends_with("(write its password to the file REDIS_ACL_ADMIN_PASSWORD_FILE names)"),
        "the hook's own word, whole: {fault}"
    );
    let (code, human, _) = mesh.controller(&["status"]);
    assert_eq!(code, 0);
    assert!(
        human.contains(&format!(
            "{HOOK_MODULE}@{HOOK_MACHINE} cannot work as its administrator since"
        )),
        "{human}"
    );
    assert!(!status.to_string().contains(&old) && !human.contains(&old));

    mesh_test_support::write_whole(&redis.admin_password_file(), format!("{ROTATED}\n"));
    let status = mesh.wait_status("the fault cleared, all well", |s| {
        all_well(s) && s.get("faults").is_none()
    });
    assert!(!status.to_string().contains(ROTATED), "{status:#}");
    let log = mesh.hook_log();
    assert!(
        !log.contains(ROTATED) && !log.contains(&old),
        "an administrator's password in mesh-provide's log"
    );
}
