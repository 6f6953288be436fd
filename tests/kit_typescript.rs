//! The TypeScript hook kit (kits/typescript) and its example,
//! examples/hooks/mariadb, over the built binary: the example passes
//! `mesh-provide conform` on a private MariaDB, leaves nothing of the suite
//! behind and never touches a user a person made; the kit's types refuse
//! what mesh-provide would read as a bad reply (`tsc --strict`), and type a
//! hook written on its build.
//!
//! This test builds nothing: `bash -c '. scripts/lib.sh;
//! ensure_kit_typescript'` (which scripts/test runs) installs and builds the
//! kit and the example. Without them, or without MariaDB, the tests say
//! SKIPPED and what is missing, unless `MESH_REQUIRE_KITS` is set (CI),
//! where they fail.

mod hooks_support;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use mesh_test_support::mesh::binary;
use mesh_test_support::{in_slow_tier, MariaDbServer};

/// How long one conform run may take before the test gives up on it.
const CONFORM_DEADLINE: Duration = Duration::from_secs(300);

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn kit() -> PathBuf {
    repo().join("kits/typescript")
}

fn hook() -> PathBuf {
    repo().join("examples/hooks/mariadb/dist/mariadb.js")
}

fn tsc() -> PathBuf {
    kit().join("node_modules/.bin/tsc")
}

/// What is missing for these tests, or `None`.
///
/// # Panics
/// When something is missing and `MESH_REQUIRE_KITS` is set.
fn missing(needs_mariadb: bool) -> Option<String> {
    let mut needed = vec![
        (tsc(), "the kit's typescript (npm ci in kits/typescript)"),
        (
            kit().join("dist/index.js"),
            "the kit's build (npm run build in kits/typescript)",
        ),
    ];
    if needs_mariadb {
        needed.extend([
            (
                repo().join("examples/hooks/mariadb/node_modules/mysql2/package.json"),
                "the example's mysql2 (npm ci in examples/hooks/mariadb)",
            ),
            (
                hook(),
                "the example's build (npm run build in examples/hooks/mariadb)",
            ),
            (
                PathBuf::from("/usr/sbin/mariadbd"),
                "mariadbd (the Debian package mariadb-server)",
            ),
        ]);
    }
    let absent: Vec<String> = needed
        .iter()
        .filter(|(path, _)| !path.exists())
        .map(|(path, what)| format!("{what}: {} is missing", path.display()))
        .collect();
    if absent.is_empty() {
        return None;
    }
    let why = format!(
        "{}; bash -c '. scripts/lib.sh; ensure_kit_typescript' makes them",
        absent.join("; ")
    );
    assert!(
        std::env::var_os("MESH_REQUIRE_KITS").is_none(),
        "{why}, and MESH_REQUIRE_KITS is set"
    );
    Some(why)
}

/// Whether the test can run; says SKIPPED when it cannot.
fn ready(test: &str, needs_mariadb: bool) -> bool {
    match missing(needs_mariadb) {
        None => true,
        Some(why) => {
            eprintln!("SKIPPED {test}: {why}");
            false
        }
    }
}

/// Runs `command` to its end within `deadline`; (exit code, stdout, stderr).
fn run(mut command: Command, deadline: Duration, what: &str) -> (i32, String, String) {
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{what} does not start: {e}"));
    let drain = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut text = String::new();
            let _ = pipe.read_to_string(&mut text);
            text
        })
    };
    let out = drain(Box::new(child.stdout.take().unwrap()));
    let err = drain(Box::new(child.stderr.take().unwrap()));
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("waiting on the child") {
            break status;
        }
        if started.elapsed() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "{what} did not end within {deadline:?}: a hook call likely hangs (a MariaDB \
                 query waiting on a lock, or the hook not answering)\n{}",
                err.join().unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    (
        status.code().unwrap_or(-1),
        out.join().unwrap_or_default(),
        err.join().unwrap_or_default(),
    )
}

/// `mesh-provide conform` over the example in `mode` on `db`.
fn conform(db: &MariaDbServer, mode: &str, consumers: &str) -> (i32, String, String) {
    let mut command = Command::new(binary("mesh-provide"));
    command
        .arg("conform")
        .arg("--hook")
        .arg(hook())
        .args(["--hook-mode", mode, "--consumers", consumers])
        .envs(db.hook_env());
    run(command, CONFORM_DEADLINE, "mesh-provide conform")
}

/// A person's database and user, made at the server as a person would.
const THEIRS: &str =
    "CREATE DATABASE `app`; CREATE USER 'app-db'@'%' IDENTIFIED BY 'their-password'; \
     GRANT ALL PRIVILEGES ON `app`.* TO 'app-db'@'%'; CREATE TABLE `app`.`notes` (n INT); \
     INSERT INTO `app`.`notes` VALUES (7);";

/// Conform in `mode` passes every rule, leaves nothing of its own and the
/// person's user as it was; the admin password is in no output.
fn passes_conform(mode: &str, consumers: &str) {
    let db = MariaDbServer::start();
    db.sql(THEIRS);
    let users = db.users();
    let (code, out, err) = conform(&db, mode, consumers);
    assert_eq!(
        code,
        0,
        "the MariaDB hook fails conform in {mode} mode:\n{out}\n{err}\n{}",
        db.log()
    );
    assert!(!out.lines().any(|l| l.starts_with("left behind")), "{out}");
    let passed = hooks_support::conform_passed(&out);
    assert!(passed >= 10, "conform ran only {passed} rules: {out}");
    assert_eq!(
        db.users(),
        users,
        "conform leaves no user behind, and the person's is there"
    );
    let databases = db.databases();
    assert!(
        databases.iter().all(|d| !d.starts_with("conform")),
        "a database of the suite is left: {databases:?}"
    );
    assert_eq!(
        db.sql("SELECT COUNT(*) FROM `_mesh_provide`.`held`").trim(),
        "0",
        "the hook's own bookkeeping lists nothing left"
    );
    assert_eq!(
        db.sql_as("app-db", "their-password", "SELECT n FROM `app`.`notes`")
            .expect("the person's user still logs in")
            .trim(),
        "7",
        "the person's user and data are untouched"
    );
    for text in [&out, &err] {
        assert!(
            !text.contains(db.admin_password()),
            "the administrator's password is in conform's output"
        );
    }
}

#[test]
fn the_mariadb_hook_passes_conform_in_serve_mode_and_leaves_a_persons_user_alone() {
    if ready(
        "the_mariadb_hook_passes_conform_in_serve_mode_and_leaves_a_persons_user_alone",
        true,
    ) {
        passes_conform("serve", "20");
    }
}

/// Slow tier: node starts with mysql2 at every call, about a minute of CPU
/// for the suite; serve mode above runs the same hook and kit.
#[test]
fn the_mariadb_hook_passes_conform_in_exec_mode() {
    let test = "the_mariadb_hook_passes_conform_in_exec_mode";
    if in_slow_tier(
        test,
        "a node process a call, a minute of CPU; serve mode runs in CI",
    ) && ready(test, true)
    {
        passes_conform("exec", "4");
    }
}

/// `tsc --strict --noEmit` on `file`; (exit code, its output).
fn typecheck(file: &Path) -> (i32, String) {
    let mut command = Command::new(tsc());
    command
        .args([
            "--noEmit",
            "--strict",
            "--skipLibCheck",
            "--target",
            "es2022",
        ])
        .args(["--module", "nodenext", "--moduleResolution", "nodenext"])
        .arg(file);
    let (code, out, err) = run(command, Duration::from_secs(120), "tsc");
    (code, format!("{out}{err}"))
}

#[test]
fn the_kits_types_refuse_a_failure_without_error_and_a_hello_saying_ok() {
    if !ready(
        "the_kits_types_refuse_a_failure_without_error_and_a_hello_saying_ok",
        false,
    ) {
        return;
    }
    // The kit's own type test: every @ts-expect-error line must be an error.
    let mut command = Command::new(tsc());
    command.arg("-p").arg(kit().join("test"));
    let (code, out, err) = run(
        command,
        Duration::from_secs(120),
        "tsc -p kits/typescript/test",
    );
    assert_eq!(code, 0, "kits/typescript/test/types.ts:\n{out}{err}");

    let dir = tempfile::tempdir().unwrap();
    let protocol = kit().join("src/protocol.js");
    let cases = [
        ("good", "const r: Reply = { id: 1, ok: false, error: 'no' }; const h: ReplyOf<'hello'> = { name: 'x' };", None),
        ("no-error", "const r: Reply = { id: 1, ok: false };", Some("Property 'error' is missing")),
        ("hello-ok", "const h: ReplyOf<'hello'> = { ok: true, name: 'x' };", Some("TS2322")),
    ];
    for (name, body, refused) in cases {
        let file = dir.path().join(format!("{name}.ts"));
        std::fs::write(
            &file,
            format!(
                "import type {{ Reply, ReplyOf }} from '{}';\n{body}\nexport {{}};\n",
                protocol.display()
            ),
        )
        .unwrap();
        let (code, out) = typecheck(&file);
        match refused {
            None => assert_eq!(code, 0, "{name} must compile: {out}"),
            Some(error) => {
                assert_ne!(code, 0, "{name} compiles, but it is a bad reply: {body}");
                assert!(out.contains(error), "{name}: {out}");
            }
        }
    }
}

/// A hook as an author writes it on the kit's build (`dist/index.d.ts`, what
/// `import ... from 'mesh-hook-kit'` reads), `CLASS` its classify's answer.
const TYPED_HOOK: &str = r#"
import { HookError, announceSecrets, callOf, log, serve, type Handlers } from 'KIT';
const handlers: Handlers = {
  async ensure(request, call) {
    if (call.timeoutMs(1000) < 10) throw new HookError('unreachable', 'out of time');
    log(`made ${request.consumer.name} for ${call.provider}`);
    return request.secret === '' ? { ok: true, mended: 'its password' } : undefined;
  },
  held: () => ({ held: [{ consumer: 'forge', retired: false }] }),
  'by-hand': { works: (request) => ({ ok: true, works: request.secret !== '' }) },
};
announceSecrets(['admin-password']);
const asked = { v: 1, id: 1, verb: 'held', deadline_ms: 1000, provider: 'redis@cache-1' } as const;
await handlers.held?.(asked, callOf(asked));
await serve({ name: 'typed', handlers, classify: () => CLASS });
"#;

#[test]
fn a_typescript_hook_on_the_kits_build_type_checks_under_tsc_strict() {
    if !ready(
        "a_typescript_hook_on_the_kits_build_type_checks_under_tsc_strict",
        false,
    ) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("hook.mts");
    let source = TYPED_HOOK.replace("KIT", kit().join("dist/index.js").to_str().unwrap());
    std::fs::write(&file, source.replace("CLASS", "'refused'")).unwrap();
    let (code, out) = typecheck(&file);
    assert_eq!(code, 0, "a well-typed hook fails tsc --strict: {out}");
    std::fs::write(&file, source.replace("CLASS", "'oops'")).unwrap();
    let (code, out) = typecheck(&file);
    assert!(
        code != 0 && out.contains("oops"),
        "a class that is none passed tsc --strict: the built declarations type nothing ({out})"
    );
}

/// Two instances of the MariaDB hook on one server: what `mariadb@db-1`
/// makes, `mariadb@db-2`'s held lists none of, its ensure is refused naming
/// db-1, its retire, re-enable and delete leave working; a row from before
/// rows named their instance is listed by none until an ensure adopts it.
#[test]
fn two_instances_of_the_mariadb_hook_on_one_server_keep_to_their_own() {
    use hooks_support::{ask_exec, ensure_of, held_names};
    use serde_json::json;
    if !ready(
        "two_instances_of_the_mariadb_hook_on_one_server_keep_to_their_own",
        true,
    ) {
        return;
    }
    let db = MariaDbServer::start();
    let env = db.hook_env();
    let hook = hook();
    let (a, b) = ("mariadb@db-1", "mariadb@db-2");
    let works = |name: &str| db.sql_as(name, &format!("{name}-pw"), "SELECT 1").is_ok();
    for (provider, name) in [(a, "forge"), (a, "wiki"), (b, "docs")] {
        let reply = ask_exec(
            &hook,
            &env,
            provider,
            ensure_of(name, &format!("{name}-pw")),
        );
        assert_eq!(reply["ok"], true, "{reply}");
    }
    assert_eq!(held_names(&hook, &env, a), ["forge", "wiki"]);
    assert_eq!(held_names(&hook, &env, b), ["docs"]);
    let refused = ask_exec(&hook, &env, b, ensure_of("forge", "taken-pw"));
    assert_eq!(refused["class"], "refused", "{refused}");
    assert!(
        refused["error"]
            .as_str()
            .unwrap()
            .contains("made by mariadb@db-1"),
        "{refused}"
    );
    for verb in ["retire", "re-enable", "delete"] {
        let _ = ask_exec(&hook, &env, b, json!({"verb": verb, "consumer": "forge"}));
        assert!(works("forge"), "forge works after {verb} as {b}");
    }
    assert_eq!(held_names(&hook, &env, a), ["forge", "wiki"]);

    // A row from before instances (provider NULL): no instance's until adopted.
    db.sql("UPDATE `_mesh_provide`.`held` SET provider = NULL WHERE consumer = 'wiki'");
    assert_eq!(
        held_names(&hook, &env, a),
        ["forge"],
        "an old row is no instance's"
    );
    let _ = ask_exec(
        &hook,
        &env,
        a,
        json!({"verb": "retire", "consumer": "wiki"}),
    );
    assert!(
        works("wiki"),
        "an old row is not retired by an instance that did not adopt it"
    );
    let reply = ask_exec(&hook, &env, a, ensure_of("wiki", "wiki-pw"));
    assert_eq!(
        (&reply["ok"], reply.get("mended")),
        (&json!(true), None),
        "adopted, nothing mended: {reply}"
    );
    assert_eq!(held_names(&hook, &env, a), ["forge", "wiki"]);
    assert_eq!(held_names(&hook, &env, b), ["docs"]);
}

/// The kit's runtime tests on its build (`node --test`, as its `npm test`
/// runs them after the build): the provider fault in hello and probe
/// replies (`Hook.adminFault`) and `readSecretFile` (trimmed, announced,
/// re-read after a rotation, `secret-unreadable` naming file and variable).
#[test]
fn the_kits_runtime_tests_pass_the_fault_and_the_secret_file() {
    if !ready(
        "the_kits_runtime_tests_pass_the_fault_and_the_secret_file",
        false,
    ) {
        return;
    }
    let mut command = Command::new("node");
    command
        .args(["--test", "test/runtime.test.mjs"])
        .current_dir(kit());
    let (code, out, err) = run(command, Duration::from_secs(120), "node --test");
    assert_eq!(code, 0, "node --test in kits/typescript:\n{out}{err}");
    assert!(out.contains("# fail 0"), "{out}");
}
