//! The example hooks in node and Python, end to end over the built
//! binaries: each passes `mesh-provide conform` against a real Redis; the
//! node hook, run by `mesh-provide` in serve mode as `redis@cache-1`, says
//! failing, recovered and retirement through the one Rust loop, and they
//! show in `mesh-controller status`; the consumers' secrets and the Redis
//! administrator's password never appear on a command line or in an
//! environment while passes run.
//!
//! The node hook's tests need its npm dependency (`npm ci` in
//! examples/hooks): without it they say SKIPPED, unless
//! `MESH_REQUIRE_NODE_HOOKS` is set (CI), where they fail.

mod hooks_support;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use hooks_support::{password_is, redis_env, redis_env_at, user_on, ProcScan};
use mesh_test_support::mesh::{
    all_well, conform, example_hook, failing, node_hooks_missing, Mesh, Options, HOOK_MACHINE,
    HOOK_MODULE, WAIT,
};
use mesh_test_support::{in_slow_tier, RedisServer, TcpProxy, REDIS_ADMIN};
use serde_json::Value;

/// The consumers of the hook provider in these tests.
const CONSUMERS: [(&str, &str); 3] = [("forge", "app-1"), ("wiki", "app-1"), ("docs", "app-2")];

/// Whether the node hook can run here; says SKIPPED when it cannot.
fn node_ready(test: &str) -> bool {
    match node_hooks_missing() {
        None => true,
        Some(why) => {
            eprintln!("SKIPPED {test}: {why}");
            false
        }
    }
}

/// Runs conform for the example `hook` in `mode`; asserts every rule passed.
fn conforms(hook: &str, mode: &str) {
    let redis = RedisServer::start();
    // Exec mode starts a process a call: 8 in parallel prove the same as 20.
    let consumers = if mode == "exec" { "8" } else { "20" };
    let (code, out, err) = conform(
        &example_hook(hook),
        mode,
        &["--consumers", consumers],
        &redis_env(&redis),
    );
    assert_eq!(
        code, 0,
        "{hook} --hook-mode {mode} fails conform:\n{out}\n{err}"
    );
    let passed = hooks_support::conform_passed(&out);
    assert!(passed >= 10, "conform ran {passed} rules: {out}");
    assert_eq!(
        redis.acl_users(),
        ["default", REDIS_ADMIN],
        "conform leaves no user of its own behind"
    );
}

#[test]
fn the_node_hook_passes_conform_in_serve_mode() {
    if node_ready("the_node_hook_passes_conform_in_serve_mode") {
        conforms("redis-acl.mjs", "serve");
    }
}

/// Slow tier: node starts with its Redis client at every call, about a
/// minute of CPU for the suite; serve mode above runs the same hook.
#[test]
fn the_node_hook_passes_conform_in_exec_mode() {
    let test = "the_node_hook_passes_conform_in_exec_mode";
    if in_slow_tier(
        test,
        "a node process a call, a minute of CPU; serve mode runs in CI",
    ) && node_ready(test)
    {
        conforms("redis-acl.mjs", "exec");
    }
}

/// A mesh whose hook provider `redis@cache-1` runs the example `hook` in
/// `mode` with the settings `env`, its consumers served and heard from:
/// all well.
fn hook_mesh(hook: &str, mode: &str, env: &[(String, String)], retire_after: &str) -> Mesh {
    let mut mesh = Mesh::with(Options {
        consumers: Vec::new(),
        hook: CONSUMERS.to_vec(),
        alive_every: "1s",
        ..Options::default()
    });
    mesh.start_controller();
    mesh.start_hook(&example_hook(hook), mode, retire_after, env);
    mesh.wait_status("all well, the hook provider heard from", all_well);
    mesh
}

/// The class `status --json` says `consumer` fails with.
fn class_of(status: &Value, consumer: &str) -> String {
    status["failing"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|f| f["consumer"] == consumer)
        .map(|f| f["class"].as_str().unwrap_or("?").to_owned())
        .unwrap_or_default()
}

#[test]
fn two_instances_of_the_node_hook_on_one_redis_keep_to_their_own() {
    if node_ready("two_instances_of_the_node_hook_on_one_redis_keep_to_their_own") {
        hooks_support::two_instances_on_one_redis(&example_hook("redis-acl.mjs"));
    }
}

#[test]
fn a_user_the_node_hook_marked_before_instances_is_adopted_by_ensure() {
    if node_ready("a_user_the_node_hook_marked_before_instances_is_adopted_by_ensure") {
        hooks_support::an_old_mark_is_adopted_by_ensure(&example_hook("redis-acl.mjs"));
    }
}

#[test]
fn the_node_provider_says_failing_recovered_and_retirement_in_status() {
    if !node_ready("the_node_provider_says_failing_recovered_and_retirement_in_status") {
        return;
    }
    failing_recovered_and_retirement("redis-acl.mjs", "serve");
}

#[test]
fn the_shell_provider_says_failing_recovered_and_retirement_in_status() {
    failing_recovered_and_retirement("redis-acl.sh", "exec");
}

/// The story of one hook provider in status: Redis cut off (every consumer
/// failing, unreachable), a consumer withdrawn meanwhile (not retired while
/// held cannot be read), Redis back (recovered, the withdrawn one retired),
/// then deleted on approval.
fn failing_recovered_and_retirement(hook: &str, mode: &str) {
    let redis = RedisServer::start();
    // The hook reaches Redis through a proxy that can refuse it.
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let target = SocketAddr::from(([127, 0, 0, 1], redis.port()));
    let proxy = rt.block_on(TcpProxy::start(target));
    let mesh = hook_mesh(hook, mode, &redis_env_at(&redis, proxy.port()), "1s");
    for (consumer, _) in CONSUMERS {
        assert_eq!(
            user_on(&redis, consumer),
            Some(true),
            "{consumer} made at Redis"
        );
    }

    // Redis cannot be reached: every consumer fails, unreachable, and
    // status says so.
    proxy.cut();
    let status = mesh.wait_status("all three failing", |s| failing(s).len() == 3);
    for (consumer, _) in CONSUMERS {
        assert_eq!(class_of(&status, consumer), "unreachable", "{status:#}");
    }
    let entry = &status["failing"][0];
    assert_eq!(entry["provider_module"], HOOK_MODULE);
    assert_eq!(entry["provider_machine"], HOOK_MACHINE);
    assert_eq!(entry["provision"], "redis-acl");
    assert!(
        !status.to_string().contains("minted-"),
        "no secret in status"
    );

    // docs is withdrawn while Redis cannot be reached: nothing is retired
    // then (held fails), so docs stays failing. Redis back, forge and wiki
    // recover, and docs, held and no longer listed, is retired (recovered,
    // reason retired): nothing fails, and status names docs retired, which
    // the declaration still requires.
    mesh.list_hook(&["forge", "wiki"]);
    std::thread::sleep(Duration::from_secs(2));
    let status = mesh.status().expect("status");
    assert!(failing(&status).contains(&"docs".to_owned()), "{status:#}");
    assert_eq!(
        user_on(&redis, "docs"),
        Some(true),
        "not retired while held cannot be read"
    );
    proxy.open();
    let status = mesh.wait_status("docs named retired, nothing failing", |s| {
        failing(s).is_empty() && retired(s) == [("docs".to_owned(), "retired".to_owned())]
    });
    assert_eq!(
        status["sentence"],
        "not all well: 0 consumers failing, 1 required consumer retired"
    );
    assert_eq!(
        user_on(&redis, "docs"),
        Some(false),
        "docs retired: off, not deleted"
    );
    assert_eq!(user_on(&redis, "forge"), Some(true));
    let log = mesh.hook_log();
    assert!(log.contains("reason=retired"), "{log}");

    // A person approves deleting the retired docs, which the declaration
    // still requires (so --force): the user goes.
    let provider = format!("{HOOK_MODULE}@{HOOK_MACHINE}");
    let (code, out, err) = mesh.controller(&["approve", &provider, "docs", "--delete", "--force"]);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(user_on(&redis, "docs"), None, "deleted on approval");
    mesh.wait_status("docs named deleted", |s| {
        failing(s).is_empty() && retired(s) == [("docs".to_owned(), "deleted".to_owned())]
    });
}

/// The required consumers status names retired or deleted, with the action.
fn retired(status: &Value) -> Vec<(String, String)> {
    status["retired"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|r| {
            let text = |key: &str| r[key].as_str().unwrap_or("?").to_owned();
            (text("consumer"), text("action"))
        })
        .collect()
}

#[test]
fn the_secrets_never_leave_the_hooks_stdin() {
    if !node_ready("the_secrets_never_leave_the_hooks_stdin") {
        return;
    }
    let redis = RedisServer::start();
    let scan = ProcScan::start("redis-acl.mjs");
    let mut secrets: Vec<String> = CONSUMERS
        .iter()
        .map(|(c, _)| format!("minted-{c}-secret"))
        .collect();
    secrets.push(redis.admin_password().to_owned());
    scan.watch(secrets);
    let mesh = hook_mesh("redis-acl.mjs", "serve", &redis_env(&redis), "1h");
    // A few passes, and a rotation (ensure carries the new secret).
    mesh.secret("wiki", Some("minted-wiki-secret-rotated"));
    scan.watch(["minted-wiki-secret-rotated".to_owned()]);
    let deadline = Instant::now() + WAIT;
    while !password_is(&redis, "wiki", "minted-wiki-secret-rotated") {
        assert!(
            Instant::now() < deadline,
            "the rotation never reached Redis"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(Duration::from_secs(1));
    mesh.wait_status("all well", all_well);
    drop(mesh);
    let seen = scan.finish();
    assert!(
        seen.hook_scans >= 20,
        "the scan saw the node hook {} times",
        seen.hook_scans
    );
}
