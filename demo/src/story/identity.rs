//! The identity story, on a real Keycloak (`kc.sh start --optimized` from
//! its distribution, on a private PostgreSQL of its own): `mesh-identity`
//! serves three consumers (a confidential client each in realm `mesh`):
//! all well. The mesh's administrator password is changed behind its back;
//! the provider, started without `--kc-sh`, can say the refused
//! administrator but not repair it: status names the three consumers
//! failing (`credentials-rejected`) and the open repair fault
//! `admin-refused`. Restarted with `--kc-sh`, it repairs the administrator
//! with Keycloak's own `kc.sh bootstrap-admin` beside the live server (a
//! temporary administrator, removed afterwards): all well, and realm
//! `master` holds no `mesh-repair-*` user. Keycloak is stopped at the end.

use std::ffi::OsString;
use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use mesh_test_support::mesh::{
    Mesh, Options, FAILING_AFTER, IDENTITY_PASS_EVERY, IDENTITY_REPAIR_CHECK_EVERY,
};
use mesh_test_support::{KeycloakDist, KeycloakServer};
use serde_json::{json, Value};

use super::{served, servers, ALIVE_EVERY, CONSUMERS};
use crate::expect;
use crate::interrupt;
use crate::narrate::{Demo, StoryStop};

/// How long the repair may take after the restart: a `kc.sh
/// bootstrap-admin` is a JVM start (about 8 s alone, much more on a loaded
/// machine).
const REPAIR_WITHIN: Duration = Duration::from_secs(240);

/// How long a step waits for what goes through Keycloak (clients made and
/// checked, a refused administrator said).
const KEYCLOAK_WITHIN: Duration = Duration::from_secs(60);

/// What a line of the provider's log says for it to be shown as the log of
/// the repair.
const REPAIR_PHRASES: [&str; 5] = [
    "repairing a refused",
    "set to the mesh",
    "temporary administrator removed",
    "publishing repair",
    "publishing recovered",
];

/// Tells the story.
pub fn tell(demo: &mut Demo) -> Result<(), StoryStop> {
    let dist = KeycloakDist::find()
        .map_err(|why| StoryStop::Cannot(format!("the identity story needs Keycloak: {why}")))?;
    demo.say(&format!(
        "Keycloak (kc.sh start --optimized, from {}) on a private PostgreSQL of its own: starting",
        dist.home.display()
    ));
    let kc = KeycloakServer::start_unless(dist, interrupt::asked).ok_or(StoryStop::Interrupted)?;
    demo.say(&format!(
        "Keycloak ready at {} in {}s (/health/ready on its management port)",
        kc.url(),
        kc.boot_time().as_secs()
    ));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| StoryStop::Cannot(format!("a runtime for Keycloak's admin API: {e}")))?;
    let (code, answer) =
        rt.block_on(kc.admin("POST", "", Some(&json!({"realm": "mesh", "enabled": true}))));
    answered("realm mesh made", code, 201, &answer)?;
    demo.say("realm mesh made (admin REST API)");
    let (admin, password, admin_id) = rt.block_on(kc.new_master_admin("mesh-admin"));
    demo.say(&format!(
        "the mesh's administrator: {admin} of realm master (role admin; its password is in a \
         file, not shown)"
    ));

    let mut mesh = Mesh::with(Options {
        consumers: Vec::new(),
        identity: CONSUMERS.to_vec(),
        alive_every: ALIVE_EVERY,
        ..Options::default()
    });
    servers(demo, &mesh, false);
    let password_file = mesh.path("admin-password");
    write_private(&password_file, &password)?;
    let keycloak = Mesh::identity_flags(&kc.url(), "mesh", &admin, &password_file);
    mesh.start_controller();
    mesh.start_identity(&keycloak, &[]);
    demo.say(
        "mesh-identity serves forge, wiki and docs (a confidential client each in realm mesh), \
         started without --kc-sh:",
    );
    demo.detail(&format!(
        "it can say a refused administrator, not repair it (pass every {IDENTITY_PASS_EVERY}, \
         failing after {FAILING_AFTER:?}, repair check every {IDENTITY_REPAIR_CHECK_EVERY})"
    ));
    served(demo, &mesh, mesh.identity.as_ref(), KEYCLOAK_WITHIN)?;
    demo.pause();
    demo.show(
        &mesh,
        &["status"],
        "three clients made and checked (client-credentials login): all well",
    )?;
    demo.pause();

    demo.say("the mesh's administrator password is changed behind the provider's back");
    demo.detail(
        "(admin REST API: PUT /admin/realms/master/users/{id}/reset-password; the new password \
         is not shown)",
    );
    let changed = json!({"type": "password", "value": random_hex(12)?, "temporary": false});
    let (code, answer) = rt.block_on(kc.admin(
        "PUT",
        &format!("master/users/{admin_id}/reset-password"),
        Some(&changed),
    ));
    answered("the administrator's password changed", code, 204, &answer)?;
    let status = demo.expect(
        &mesh,
        "status names the three consumers failing and the open repair fault",
        KEYCLOAK_WITHIN,
        |s| {
            expect::failing(s, &["docs", "forge", "wiki"], "credentials-rejected")?;
            expect::repair_open(s, "admin-refused", "failed")
        },
    )?;
    let detail = status["repairs"][0]["detail"].as_str().unwrap_or("");
    demo.check(
        &mesh,
        "the fault says this provider has no way to repair it",
        detail
            .contains("neither --container nor --kc-sh is given")
            .then_some(())
            .ok_or(format!("its detail is {detail:?}")),
    )?;
    demo.show(
        &mesh,
        &["status"],
        "the repair fault is open, and every consumer fails credentials-rejected behind it",
    )?;
    demo.pause();

    let bootstrap_log = mesh.path("bootstrap.log");
    let kc_sh = kc_sh_keeping_output(&kc, mesh.dir.path(), &bootstrap_log)?;
    demo.say(&format!(
        "mesh-identity is restarted with --kc-sh {} (runs {} on the server's JDK,",
        kc_sh.display(),
        kc.dist().home.join("bin/kc.sh").display()
    ));
    demo.detail(
        "its output kept in bootstrap.log) and the server's KC_DB_* settings in its environment",
    );
    if let Some(mut plain) = mesh.identity.take() {
        plain.stop();
    }
    let mut repairing = keycloak;
    repairing.extend([OsString::from("--kc-sh"), kc_sh.into()]);
    let restarted = Instant::now();
    mesh.start_identity(&repairing, &kc.db_env());
    demo.expect(
        &mesh,
        "repaired: the fault closed and the consumers recovered",
        REPAIR_WITHIN,
        expect::all_well,
    )
    .map_err(|stop| stop.with_file("kc.sh bootstrap-admin's output", &bootstrap_log))?;
    demo.say(&format!(
        "repaired {}s after the restart; the provider's log of it:",
        restarted.elapsed().as_secs()
    ));
    let log = mesh
        .identity
        .as_ref()
        .map(|p| p.log_text())
        .unwrap_or_default();
    for line in repair_lines(&log) {
        demo.detail(&line);
    }
    demo.pause();
    demo.show(
        &mesh,
        &["status"],
        "the repair closed the fault, the consumers recovered: all well",
    )?;
    demo.pause();

    let logs_in = rt.block_on(kc.logs_in(&admin, &password));
    demo.check(
        &mesh,
        "the mesh's administrator password logs in again",
        logs_in
            .then_some(())
            .ok_or(format!("{admin} is still refused")),
    )?;
    demo.say(
        "the mesh's administrator password logs in again; the users of realm master \
         (GET /admin/realms/master/users):",
    );
    let (code, users) = rt.block_on(kc.admin("GET", "master/users?briefRepresentation=true", None));
    answered("the users of realm master listed", code, 200, &users)?;
    let names: Vec<&str> = users
        .as_array()
        .map(|users| {
            users
                .iter()
                .filter_map(|u| u["username"].as_str())
                .collect()
        })
        .unwrap_or_default();
    for name in &names {
        demo.detail(name);
    }
    let left: Vec<&&str> = names
        .iter()
        .filter(|n| n.starts_with("mesh-repair-"))
        .collect();
    demo.check(
        &mesh,
        "no temporary administrator is left",
        left.is_empty()
            .then_some(())
            .ok_or(format!("left: {left:?}")),
    )?;
    demo.detail("no temporary administrator (mesh-repair-*) is left");
    demo.done();
    Ok(())
}

/// The lines of the provider's `log` that tell the repair, each as its
/// time of day and what it says (the level and the module left out).
fn repair_lines(log: &str) -> Vec<String> {
    log.lines()
        .filter(|line| REPAIR_PHRASES.iter().any(|phrase| line.contains(phrase)))
        .map(|line| {
            let mut fields = line.split_whitespace();
            let time = fields.next().unwrap_or("");
            let time = time
                .split_once('T')
                .map_or(time, |(_, clock)| clock.split('.').next().unwrap_or(clock));
            let _level = fields.next();
            let _module = fields.next();
            format!("{time} {}", fields.collect::<Vec<_>>().join(" "))
        })
        .collect()
}

/// Checks that an admin REST call (`step`) answered `want`.
fn answered(step: &str, code: u16, want: u16, answer: &Value) -> Result<(), StoryStop> {
    if code == want {
        return Ok(());
    }
    Err(StoryStop::Unmet {
        step: step.to_owned(),
        why: format!("Keycloak answered {code}, not {want}: {answer}"),
        logs: String::new(),
    })
}

/// Writes an executable `kc.sh` into `dir` that runs the distribution's own
/// `kc.sh` on the server's JDK with its output appended to `log` (what
/// `mesh-identity` drops; it holds no password), and returns its path.
fn kc_sh_keeping_output(kc: &KeycloakServer, dir: &Path, log: &Path) -> Result<PathBuf, StoryStop> {
    let java = match &kc.dist().java_home {
        Some(java_home) => format!("JAVA_HOME='{}' ", java_home.display()),
        None => String::new(),
    };
    let text = format!(
        "#!/bin/sh\n{java}exec '{}' \"$@\" >>'{}' 2>&1\n",
        kc.dist().home.join("bin/kc.sh").display(),
        log.display()
    );
    let path = dir.join("kc.sh");
    std::fs::write(&path, text)
        .and_then(|()| std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o700)))
        .map_err(|e| StoryStop::Cannot(format!("writing {}: {e}", path.display())))?;
    Ok(path)
}

/// Writes `text` to `path`, readable by its owner only.
fn write_private(path: &Path, text: &str) -> Result<(), StoryStop> {
    std::fs::write(path, text)
        .and_then(|()| std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)))
        .map_err(|e| StoryStop::Cannot(format!("writing {}: {e}", path.display())))
}

/// `len` random bytes from the kernel, hex encoded.
fn random_hex(len: usize) -> Result<String, StoryStop> {
    let mut bytes = vec![0u8; len];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut file| file.read_exact(&mut bytes))
        .map_err(|e| StoryStop::Cannot(format!("reading /dev/urandom: {e}")))?;
    Ok(bytes.iter().map(|byte| format!("{byte:02x}")).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_repair_lines_keep_their_time_and_message_only() {
        let log = "2026-05-01T10:00:01.123456Z  INFO mesh_sdk::runner: publishing alive consumers=3\n\
                   2026-05-01T10:00:02.5Z  WARN mesh_identity::repair: repairing a refused administrator admin=mesh-admin-1a2b\n\
                   2026-05-01T10:00:09.5Z  INFO mesh_identity::repair: temporary administrator removed temporary_admin=mesh-repair-9f\n\
                   2026-05-01T10:00:10.5Z  INFO mesh_sdk::runner: publishing recovered consumer=wiki reason=first\n";
        assert_eq!(
            repair_lines(log),
            [
                "10:00:02 repairing a refused administrator admin=mesh-admin-1a2b",
                "10:00:09 temporary administrator removed temporary_admin=mesh-repair-9f",
                "10:00:10 publishing recovered consumer=wiki reason=first",
            ]
        );
    }
}
