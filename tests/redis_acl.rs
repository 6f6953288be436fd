//! `examples/hooks/redis-acl.sh` on a private Redis: it passes `mesh-provide
//! conform` (the built binary), and never touches a user it did not make:
//! a person's, or another provider instance's on the same Redis; a user it
//! marked before marks named their instance is adopted by ensure.

mod hooks_support;

use std::path::PathBuf;
use std::process::Command;

use mesh_test_support::mesh::binary;
use mesh_test_support::RedisServer;

fn hook() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples/hooks/redis-acl.sh")
}

/// `mesh-provide conform` on the hook over `redis`; (exit code, stdout, stderr).
fn conform(redis: &RedisServer, consumers: &str) -> (i32, String, String) {
    let out = Command::new(binary("mesh-provide"))
        .args(["conform", "--hook"])
        .arg(hook())
        .args(["--consumers", consumers, "--provision", "redis-acl"])
        .envs(redis.hook_env())
        .output()
        .expect("mesh-provide runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn redis_acl_passes_conform_and_leaves_only_what_it_did_not_make() {
    let redis = RedisServer::start();
    // A user a person made: never listed, changed or removed.
    redis.cli("ACL SETUSER app-cache on >theirs ~app:* +@all");
    let (code, out, err) = conform(&redis, "8");
    assert_eq!(code, 0, "{out}\n{err}\n{}", redis.log());
    assert!(out.ends_with("18 passed, 0 failed\n"), "{out}");
    assert_eq!(
        out.lines().filter(|l| l.starts_with("ok   ")).count(),
        18,
        "every rule, the by-hand ones too: {out}"
    );
    assert_eq!(
        redis.acl_users(),
        ["app-cache", "default", "mesh-admin"],
        "nothing of the suite's is left"
    );
    assert!(
        redis.cli_as("app-cache", "theirs", "PING").contains("PONG"),
        "the person's user still works"
    );
    assert!(!out.contains(redis.admin_password()) && !err.contains(redis.admin_password()));
}

#[test]
fn two_instances_on_one_redis_keep_to_their_own() {
    hooks_support::two_instances_on_one_redis(&hook());
}

#[test]
fn a_user_marked_before_instances_is_adopted_by_ensure() {
    hooks_support::an_old_mark_is_adopted_by_ensure(&hook());
}
