//! The hooks story: a provider in shell. `mesh-provide` runs the one loop
//! over `examples/hooks/redis-acl.sh` (exec mode: a process per call,
//! JSON on stdin and stdout) as `redis@cache-1` on a private Redis: it
//! makes a Redis ACL user for each of three consumers, all well.
//!
//! forge's password is changed behind the loop's back (`redis-cli ACL
//! SETUSER forge resetpass ...`): the next pass's `ensure` finds the
//! password is not the minted secret's and brings it back before any
//! check fails (said `mended`): forge logs in with its minted secret again,
//! status never stops being all well.
//!
//! Then the hook's own administrator's password is changed behind its
//! back: every call is refused at Redis, and status names the three
//! consumers failing `credentials-rejected` (their messages say the hook's
//! administrator was refused). The new password is put in the
//! administrator's password file; the hook's next `ensure` reads it, and
//! all is well again.

use mesh_test_support::mesh::{example_hook, Mesh, Options, FAILING_AFTER, HOOK_PASS_EVERY};
use mesh_test_support::{RedisServer, REDIS_ADMIN};

use super::{served, servers, ALIVE_EVERY, CONSUMERS, WITHIN};
use crate::expect;
use crate::narrate::{Demo, StoryStop};

/// Whether `user` logs in to `redis` with `password` (redis-cli, the
/// password on its stdin).
fn logs_in(redis: &RedisServer, user: &str, password: &str) -> bool {
    redis
        .cli_as(user, password, "PING")
        .lines()
        .any(|line| line == "PONG")
}

/// Runs `command` at Redis as its administrator, as a person would; checks
/// that Redis answered `OK`.
fn changed(demo: &Demo, mesh: &Mesh, redis: &RedisServer, command: &str) -> Result<(), StoryStop> {
    let said = redis.cli(command);
    demo.check(
        mesh,
        "Redis took the change",
        match said.lines().nth(1) {
            Some("OK") => Ok(()),
            other => Err(format!("ACL SETUSER answered {other:?}")),
        },
    )
}

/// Tells the story.
pub fn tell(demo: &mut Demo) -> Result<(), StoryStop> {
    let redis = RedisServer::start();
    demo.say(&format!(
        "private Redis at 127.0.0.1:{}: its `default` user off, the hook's administrator \
         {REDIS_ADMIN} (`~* &* +@all`, its password in a file)",
        redis.port()
    ));
    let mut mesh = Mesh::with(Options {
        consumers: Vec::new(),
        hook: CONSUMERS.to_vec(),
        alive_every: ALIVE_EVERY,
        ..Options::default()
    });
    servers(demo, &mesh, false);
    mesh.start_controller();
    let env: Vec<(String, String)> = redis
        .hook_env()
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect();
    let hook = example_hook("redis-acl.sh");
    mesh.start_hook(&hook, "exec", "1h", &env);
    demo.say(&format!(
        "mesh-controller serve and mesh-provide --hook examples/hooks/redis-acl.sh --hook-mode \
         exec (redis@cache-1, pass every {HOOK_PASS_EVERY}, failing after {FAILING_AFTER:?}) are \
         running"
    ));
    demo.detail("(a shell script: each call is `redis-acl.sh VERB`, the request on its stdin, the reply on its stdout)");
    served(demo, &mesh, mesh.hook.as_ref(), WITHIN)?;
    let users = redis.cli("ACL USERS");
    demo.detail(&format!(
        "redis-cli ACL USERS: {}",
        users.lines().skip(1).collect::<Vec<_>>().join(" ")
    ));
    for (consumer, _) in CONSUMERS {
        let minted = format!("minted-{consumer}-secret");
        demo.check(
            &mesh,
            &format!("{consumer} logs in to Redis with its minted secret"),
            match logs_in(&redis, consumer, &minted) {
                true => Ok(()),
                false => Err(format!("AUTH {consumer} with its minted secret is refused")),
            },
        )?;
    }
    demo.show(&mesh, &["status"], "three Redis users made by a shell hook")?;
    demo.pause();

    demo.say("forge's password is changed behind the loop's back");
    demo.detail("$ redis-cli ACL SETUSER forge resetpass '>changed-by-hand'");
    changed(
        demo,
        &mesh,
        &redis,
        "ACL SETUSER forge resetpass >changed-by-hand",
    )?;
    demo.until(
        "the next ensure brings forge's password back to its minted secret",
        WITHIN,
        || match logs_in(&redis, "forge", "minted-forge-secret") {
            true => Ok(()),
            false => Err("forge does not log in with its minted secret yet".to_owned()),
        },
    )
    .map_err(|stop| stop.with_logs(&mesh))?;
    demo.check(
        &mesh,
        "the password set by hand no longer works",
        match logs_in(&redis, "forge", "changed-by-hand") {
            false => Ok(()),
            true => Err("forge still logs in with the password set by hand".to_owned()),
        },
    )?;
    demo.detail("the next pass's `ensure` saw forge's password was not the minted secret's and set it again (its reply says `mended`), before any check failed");
    demo.expect(&mesh, "all well", WITHIN, expect::all_well)?;
    demo.show(&mesh, &["status"], "mended by the next ensure: all well")?;
    demo.pause();

    demo.say(&format!(
        "the hook's own administrator {REDIS_ADMIN}'s password is changed behind its back"
    ));
    let new_password = format!("rotated-{}", std::process::id());
    demo.detail(&format!(
        "$ redis-cli ACL SETUSER {REDIS_ADMIN} resetpass '>...'   # the new password is not shown"
    ));
    changed(
        demo,
        &mesh,
        &redis,
        &format!("ACL SETUSER {REDIS_ADMIN} resetpass >{new_password}"),
    )?;
    let names: Vec<&str> = CONSUMERS.iter().map(|(c, _)| *c).collect();
    let status = demo.expect(
        &mesh,
        "status names the three consumers failing credentials-rejected",
        WITHIN,
        |s| expect::failing(s, &names, "credentials-rejected"),
    )?;
    demo.check(
        &mesh,
        "the failures' messages say the hook's administrator was refused",
        match status
            .to_string()
            .contains("administrator mesh-admin was refused")
        {
            true => Ok(()),
            false => Err(format!("status --json says: {status}")),
        },
    )?;
    demo.check(
        &mesh,
        "no password in status",
        match status.to_string().contains(&new_password)
            || status.to_string().contains(redis.admin_password())
        {
            false => Ok(()),
            true => Err("status shows a password".to_owned()),
        },
    )?;
    let said = demo.show(
        &mesh,
        &["status"],
        &format!("about {FAILING_AFTER:?} later: every call refused at Redis"),
    )?;
    demo.check(
        &mesh,
        "status says three consumers failing",
        expect::opens_with(&said, "not all well: 3 consumers failing"),
    )?;
    demo.pause();

    demo.say("the new password is put in the administrator's password file");
    std::fs::write(redis.admin_password_file(), format!("{new_password}\n")).map_err(|e| {
        StoryStop::Cannot(format!("writing the administrator's password file: {e}"))
    })?;
    demo.expect(
        &mesh,
        "all well once the hook's next ensure logs in with it",
        WITHIN,
        expect::all_well,
    )?;
    demo.show(&mesh, &["status"], "recovered: all well again")?;
    demo.done();
    Ok(())
}
