//! A hook's own secret rotated while `mesh-provide` runs it, in both modes,
//! end to end over the built binaries: the hook re-reads its administrator
//! password file on every call, announces the password (serve: a secrets
//! line of its own; exec: in each reply) and then writes it everywhere it
//! can — its stderr, and the error of a consumer that keeps failing, which
//! becomes a `failing` event, a row of the store and a line of `status`.
//! Before the rotation and after it, no log line, status output or row of
//! the store holds either password.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use mesh_test_support::mesh::{failing, wait_hook_log, Mesh, Options};

/// The hook: a shell script over nothing but its password file. Every
/// consumer but `wiki` works; `wiki` fails with a message holding the
/// administrator's password.
const HOOK: &str = r#"#!/bin/sh
pw() { tr -d '\n' < "$NOISY_ADMIN_PASSWORD_FILE"; }
answer() { # VERB ID PASSWORD EXTRA
  case "$1" in
    hello) printf '{%s"name":"noisy","secrets":["%s"]}\n' "$2" "$3" ;;
    held) printf '{%s"held":[]%s}\n' "$2" "$4" ;;
    ensure|check)
      case "$line" in
        *'"name":"wiki"'*) printf '{%s"ok":false,"class":"refused","error":"admin %s cannot reach wiki"%s}\n' "$2" "$3" "$4" ;;
        *) printf '{%s"ok":true%s}\n' "$2" "$4" ;;
      esac ;;
    *) printf '{%s"ok":true%s}\n' "$2" "$4" ;;
  esac
}
if [ "$1" = serve ]; then
  announced=
  while IFS= read -r line; do
    id=$(printf '%s' "$line" | sed -n 's/.*"id":\([0-9]*\).*/\1/p')
    verb=$(printf '%s' "$line" | sed -n 's/.*"verb":"\([a-z-]*\)".*/\1/p')
    p=$(pw)
    if [ "$p" != "$announced" ] && [ "$verb" != hello ]; then
      printf '{"secrets":["%s"]}\n' "$p"
    fi
    announced=$p
    echo "noisy: $verb as the administrator with password $p" >&2
    answer "$verb" "\"id\":$id," "$p" ""
  done
else
  line=$(cat)
  p=$(pw)
  echo "noisy: $1 as the administrator with password $p" >&2
  answer "$1" "" "$p" ",\"secrets\":[\"$p\"]"
  case "$line" in *'"name":"wiki"'*) [ "$1" = check ] || [ "$1" = ensure ] && exit 1 ;; esac
  exit 0
fi
"#;

fn noisy_hook(dir: &Path) -> PathBuf {
    let path = dir.join("noisy-hook.sh");
    std::fs::write(&path, HOOK).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// Every row of the store, as `pg_dump --data-only` writes them.
fn store_rows(mesh: &Mesh) -> String {
    let store = &mesh.store;
    let out = Command::new(pg_bin("pg_dump"))
        .args(["--data-only", "-h", store.host(), "-p"])
        .arg(store.port().to_string())
        .args(["-U", store.superuser(), "mesh_store"])
        .env(
            "PGPASSWORD",
            std::fs::read_to_string(store.superuser_password_file())
                .unwrap()
                .trim(),
        )
        .output()
        .expect("pg_dump runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A PostgreSQL client program: the newest version's.
fn pg_bin(name: &str) -> PathBuf {
    let mut versions: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path().join("bin").join(name))
        .filter(|p| p.exists())
        .collect();
    versions.sort();
    versions.pop().unwrap_or_else(|| PathBuf::from(name))
}

fn rotated_secret_never_printed(mode: &str) {
    let mut mesh = Mesh::with(Options {
        consumers: Vec::new(),
        hook: vec![("forge", "app-1"), ("wiki", "app-1")],
        alive_every: "1s",
        repeat_every: "1s",
        log_level: "info,mesh_provide=debug,mesh_sdk=debug",
        ..Options::default()
    });
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("admin-password");
    std::fs::write(&file, "first-admin-pw-31\n").unwrap();
    let env = [(
        "NOISY_ADMIN_PASSWORD_FILE".to_owned(),
        file.display().to_string(),
    )];
    mesh.start_controller();
    mesh.start_hook(&noisy_hook(dir.path()), mode, "1h", &env);
    let status = mesh.wait_status("wiki failing", |s| failing(s) == ["wiki"]);
    assert!(
        status
            .to_string()
            .contains("admin [redacted] cannot reach wiki"),
        "{status:#}"
    );
    // The administrator's password is rotated: the file holds the new one.
    mesh_test_support::write_whole(&file, "rotated-by-dba-2-77\n");
    let used = mesh.hook_log().matches("[redacted]").count();
    wait_hook_log(&mesh, "[redacted]", used + 20);
    // A failing event said again (every second) since the rotation.
    std::thread::sleep(Duration::from_secs(3));
    let status = mesh.wait_status("wiki still failing", |s| failing(s) == ["wiki"]);
    let (_, human, _) = mesh.controller(&["status"]);
    let seen = [
        ("the logs", mesh.logs(usize::MAX)),
        ("status --json", status.to_string()),
        ("status", human),
        ("the store's rows", store_rows(&mesh)),
    ];
    for (where_, text) in &seen {
        for secret in ["first-admin-pw-31", "rotated-by-dba-2-77"] {
            assert!(
                !text.contains(secret),
                "{mode}: {secret} in {where_}:\n{text}"
            );
        }
    }
    let log = mesh.hook_log();
    assert!(
        log.contains("as the administrator with password [redacted]"),
        "{mode}: the hook's stderr is logged, redacted:\n{log}"
    );
    assert!(
        seen[3].1.contains("admin [redacted] cannot reach wiki"),
        "{mode}: the failing event's row, redacted"
    );
}

#[test]
fn a_rotated_hook_secret_is_never_printed_in_serve_mode() {
    rotated_secret_never_printed("serve");
}

#[test]
fn a_rotated_hook_secret_is_never_printed_in_exec_mode() {
    rotated_secret_never_printed("exec");
}
