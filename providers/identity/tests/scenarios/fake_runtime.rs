//! A fake container runtime: a bash script written into a temporary folder.
//!
//! Every run appends to a record file one `argv ...` line (its arguments)
//! and, for each `-e` it is given, one `env NAME=value` line (for a bare
//! `-e NAME`, the value of NAME in the script's own environment: what a
//! real runtime forwards into the container). On `kc.sh bootstrap-admin`
//! it resolves `--username:env` / `--password:env` as the container would
//! (only forwarded variables exist there), prints careless lines that echo
//! the password (which the provider must never log), and adds the temporary
//! administrator through the fake Keycloak's control endpoint (plain HTTP
//! over bash's `/dev/tcp`, so no HTTP client needs to be installed).
//!
//! The mode file chooses the outcome: `ok`, `fail` (exit 1, nothing made),
//! `add-then-fail` (the administrator is made, then exit 1), `add-refused`
//! (an administrator of that name is made whose login is refused: another
//! password, as when the command reached another database, then exit 0).

use std::path::{Path, PathBuf};

use mesh_provider_identity::ContainerCli;

const SCRIPT: &str = r#"#!/bin/bash
record='@RECORD@'
mode=$(cat '@MODE@' 2>/dev/null || echo ok)
args=("$@")
{
  printf 'argv'
  for a in "${args[@]}"; do printf ' %s' "$a"; done
  printf '\n'
} >> "$record"
forwarded=" "
for ((i = 0; i < ${#args[@]}; i++)); do
  if [ "${args[$i]}" = "-e" ]; then
    spec=${args[$((i + 1))]}
    case "$spec" in
      *=*) printf 'env %s\n' "$spec" >> "$record" ;;
      *) printf 'env %s=%s\n' "$spec" "${!spec}" >> "$record"; forwarded="$forwarded$spec " ;;
    esac
  fi
done
user=""
pass=""
for ((i = 0; i < ${#args[@]}; i++)); do
  name=${args[$((i + 1))]}
  case "${args[$i]}" in
    --username:env) [[ "$forwarded" == *" $name "* ]] && user=${!name} ;;
    --password:env) [[ "$forwarded" == *" $name "* ]] && pass=${!name} ;;
  esac
done
echo "Updating the configuration and installing your custom providers, if any. Please wait."
echo "Creating temporary admin user $user with password $pass"
add() {
  [ -n "$user" ] && [ -n "$pass" ] || { echo "no username or password in the container" >&2; exit 2; }
  [ "$1" = refused ] && pass="not-$pass"
  body=$(printf '{"username":"%s","password":"%s"}' "$user" "$pass")
  exec 3<>/dev/tcp/127.0.0.1/@PORT@ || { echo "cannot reach keycloak" >&2; exit 3; }
  printf 'POST /test/bootstrap-admin HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s' "${#body}" "$body" >&3
  read -r status <&3
  exec 3<&-
  case "$status" in
    *" 201"*) ;;
    *) echo "keycloak refused the administrator" >&2; exit 3 ;;
  esac
}
case "$mode" in
  fail) echo "ERROR: Failed to start server in (production) mode with password $pass" >&2; exit 1 ;;
  add-then-fail) add; echo "ERROR: something after the user was made" >&2; exit 1 ;;
  add-refused) add refused; exit 0 ;;
  *) add; exit 0 ;;
esac
"#;

/// The fake runtime in its folder.
pub struct FakeRuntime {
    pub script: PathBuf,
    record: PathBuf,
    mode: PathBuf,
}

impl FakeRuntime {
    /// Writes the script into `dir`; it adds administrators to the fake
    /// Keycloak at `url` (`http://127.0.0.1:PORT`).
    pub fn new(dir: &Path, url: &str) -> FakeRuntime {
        let record = dir.join("runtime-record");
        let mode = dir.join("runtime-mode");
        let script = dir.join("fake-runtime");
        let text = SCRIPT
            .replace("@RECORD@", record.to_str().unwrap())
            .replace("@MODE@", mode.to_str().unwrap())
            .replace("@PORT@", url.rsplit(':').next().unwrap());
        std::fs::write(&script, text).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        FakeRuntime {
            script,
            record,
            mode,
        }
    }

    /// The runtime as `--container-cli` takes it.
    pub fn cli(&self) -> ContainerCli {
        ContainerCli::Path(self.script.clone())
    }

    /// Chooses the outcome of the next runs: `ok`, `fail`, `add-then-fail` or `add-refused`.
    pub fn set_mode(&self, mode: &str) {
        std::fs::write(&self.mode, mode).unwrap();
    }

    /// Everything recorded so far.
    pub fn record(&self) -> String {
        std::fs::read_to_string(&self.record).unwrap_or_default()
    }

    /// The recorded command lines.
    pub fn argv(&self) -> Vec<String> {
        self.record()
            .lines()
            .filter_map(|l| l.strip_prefix("argv ").map(str::to_owned))
            .collect()
    }

    /// The recorded forwarded environment, `NAME=value`.
    pub fn env(&self) -> Vec<String> {
        self.record()
            .lines()
            .filter_map(|l| l.strip_prefix("env ").map(str::to_owned))
            .collect()
    }
}
