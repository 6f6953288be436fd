//! Keycloak's own bootstrap command, run inside its container:
//!
//! ```text
//! <cli> exec -e MESH_BOOTSTRAP_ADMIN_USER -e MESH_BOOTSTRAP_ADMIN_PASSWORD
//!       -e KC_HTTP_MANAGEMENT_PORT=<port> <container>
//!       /opt/keycloak/bin/kc.sh bootstrap-admin user
//!       --username:env MESH_BOOTSTRAP_ADMIN_USER --password:env MESH_BOOTSTRAP_ADMIN_PASSWORD --no-prompt
//! ```
//!
//! The temporary administrator's name and password reach the container only
//! through the environment: the runtime's child process gets them as
//! variables and `-e NAME` (no value) forwards them, so they are never on a
//! command line. The management port is no secret; it is set because
//! `bootstrap-admin` run beside a live server needs a free one. `docker exec`
//! hands the command the container's own environment, so the database
//! options given to the server as `KC_DB*` variables (or in `keycloak.conf`)
//! reach it too, as they must. Nothing the command prints is logged or
//! returned: only its exit status and how many bytes it printed.

use std::ffi::OsStr;
use std::fmt;
use std::path::PathBuf;
use std::process::Stdio;
use std::str::FromStr;
use std::time::Duration;

use mesh_sdk::Secret;
use rand::RngExt;

/// Variable carrying the temporary administrator's name into the container.
pub const USER_VAR: &str = "MESH_BOOTSTRAP_ADMIN_USER";

/// Variable carrying the temporary administrator's password into the container.
pub const PASSWORD_VAR: &str = "MESH_BOOTSTRAP_ADMIN_PASSWORD";

/// Keycloak's launcher inside the official image.
pub const KC_SH: &str = "/opt/keycloak/bin/kc.sh";

/// Prefix of every temporary administrator's name, so one left behind is recognisable.
pub const TEMP_ADMIN_PREFIX: &str = "mesh-repair-";

/// The container runtime: `docker`, `podman` (found on `PATH`), or an
/// absolute path to an executable that takes the same `exec` arguments
/// (a wrapper script, or a fake runtime in tests).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ContainerCli {
    /// `docker`.
    Docker,
    /// `podman`.
    Podman,
    /// An executable at an absolute path.
    Path(PathBuf),
}

impl ContainerCli {
    /// The program to run.
    pub fn program(&self) -> &OsStr {
        match self {
            ContainerCli::Docker => OsStr::new("docker"),
            ContainerCli::Podman => OsStr::new("podman"),
            ContainerCli::Path(path) => path.as_os_str(),
        }
    }
}

impl fmt::Display for ContainerCli {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ContainerCli::Docker => f.write_str("docker"),
            ContainerCli::Podman => f.write_str("podman"),
            ContainerCli::Path(path) => write!(f, "{}", path.display()),
        }
    }
}

/// A `--container-cli` that is neither `docker`, `podman` nor an absolute path.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("expected docker, podman or an absolute path to an executable, not {0:?}")]
pub struct ContainerCliError(String);

impl FromStr for ContainerCli {
    type Err = ContainerCliError;

    fn from_str(text: &str) -> Result<ContainerCli, ContainerCliError> {
        match text {
            "docker" => Ok(ContainerCli::Docker),
            "podman" => Ok(ContainerCli::Podman),
            path if std::path::Path::new(path).is_absolute() => {
                Ok(ContainerCli::Path(PathBuf::from(path)))
            }
            other => Err(ContainerCliError(other.chars().take(80).collect())),
        }
    }
}

/// A temporary administrator: a random name (with [`TEMP_ADMIN_PREFIX`])
/// and a random password. `Debug` never shows the password.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TempAdmin {
    /// Its user name in realm `master`.
    pub username: String,
    /// Its password.
    pub password: Secret,
}

impl TempAdmin {
    /// A new one, from the operating system's randomness.
    pub fn random() -> TempAdmin {
        let mut rng = rand::rng();
        let lower: String = (0..12)
            .map(|_| {
                let alphabet = b"abcdefghijklmnopqrstuvwxyz0123456789";
                char::from(alphabet[rng.random_range(0..alphabet.len())])
            })
            .collect();
        let password: String = (&mut rng)
            .sample_iter(rand::distr::Alphanumeric)
            .take(32)
            .map(char::from)
            .collect();
        TempAdmin {
            username: format!("{TEMP_ADMIN_PREFIX}{lower}"),
            password: Secret::new(password),
        }
    }
}

/// A free-enough port for the management interface of the bootstrap run,
/// in the dynamic range, away from the server's own 9000.
fn management_port() -> u16 {
    rand::rng().random_range(49152..=65535)
}

/// The bootstrap command, ready to run.
pub struct Bootstrap {
    cli: ContainerCli,
    container: String,
    args: Vec<String>,
    env: [(&'static str, Secret); 2],
}

impl fmt::Debug for Bootstrap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Bootstrap")
            .field("program", &self.cli.to_string())
            .field("args", &self.args)
            .field("env", &[USER_VAR, PASSWORD_VAR])
            .finish()
    }
}

impl Bootstrap {
    /// `kc.sh bootstrap-admin user` for `temp`, in `container`, through `cli`.
    pub fn new(cli: &ContainerCli, container: &str, temp: &TempAdmin) -> Bootstrap {
        let args = [
            "exec",
            "-e",
            USER_VAR,
            "-e",
            PASSWORD_VAR,
            "-e",
            &format!("KC_HTTP_MANAGEMENT_PORT={}", management_port()),
            container,
            KC_SH,
            "bootstrap-admin",
            "user",
            "--username:env",
            USER_VAR,
            "--password:env",
            PASSWORD_VAR,
            "--no-prompt",
        ]
        .map(str::to_owned)
        .to_vec();
        Bootstrap {
            cli: cli.clone(),
            container: container.to_owned(),
            args,
            env: [
                (USER_VAR, Secret::new(temp.username.clone())),
                (PASSWORD_VAR, temp.password.clone()),
            ],
        }
    }

    /// The arguments after the program (never a secret).
    pub fn args(&self) -> &[String] {
        &self.args
    }

    /// Runs the command, bounded by `timeout` (the runtime is killed when the
    /// bound is reached or the future dropped). Its output is read and
    /// counted, never kept.
    ///
    /// # Errors
    /// [`BootstrapError`] when it cannot start, times out or exits non-zero.
    pub async fn run(self, timeout: Duration) -> Result<Ran, BootstrapError> {
        let mut command = tokio::process::Command::new(self.cli.program());
        command
            .args(&self.args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        for (name, value) in &self.env {
            command.env(name, value.expose());
        }
        let child = command.spawn().map_err(|source| BootstrapError::Spawn {
            program: self.cli.to_string(),
            source,
        })?;
        let output = match tokio::time::timeout(timeout, child.wait_with_output()).await {
            Ok(Ok(output)) => output,
            Ok(Err(source)) => return Err(BootstrapError::Wait { source }),
            Err(_) => return Err(BootstrapError::TimedOut { after: timeout }),
        };
        let ran = Ran {
            code: output.status.code(),
            stdout_bytes: output.stdout.len(),
            stderr_bytes: output.stderr.len(),
        };
        tracing::info!(
            container = %self.container,
            runtime = %self.cli,
            exit = %ran.exit(),
            stdout_bytes = ran.stdout_bytes,
            stderr_bytes = ran.stderr_bytes,
            "kc.sh bootstrap-admin finished (its output is not logged)"
        );
        if output.status.success() {
            Ok(ran)
        } else {
            Err(BootstrapError::Failed { ran })
        }
    }
}

/// What a finished bootstrap command left: its exit and how much it printed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ran {
    /// Exit code; `None` when a signal ended it.
    pub code: Option<i32>,
    /// Bytes printed on stdout (not kept).
    pub stdout_bytes: usize,
    /// Bytes printed on stderr (not kept).
    pub stderr_bytes: usize,
}

impl Ran {
    /// `status 1`, or `a signal` when a signal ended it.
    pub fn exit(&self) -> String {
        match self.code {
            Some(code) => format!("status {code}"),
            None => "a signal".to_owned(),
        }
    }
}

/// The bootstrap command failed.
#[derive(Debug, thiserror::Error)]
pub enum BootstrapError {
    /// The runtime could not be started.
    #[error("cannot run {program}")]
    Spawn {
        /// The runtime.
        program: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// Waiting for it failed.
    #[error("cannot wait for the container runtime")]
    Wait {
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// It did not finish in time, and was killed.
    #[error("kc.sh bootstrap-admin did not finish within {} and was killed", humantime::format_duration(*.after))]
    TimedOut {
        /// The bound.
        after: Duration,
    },
    /// It exited with a failure.
    #[error("kc.sh bootstrap-admin ended with {} ({} bytes of output, not shown)", .ran.exit(), .ran.stdout_bytes + .ran.stderr_bytes)]
    Failed {
        /// How it ended.
        ran: Ran,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runtimes() {
        assert_eq!("docker".parse(), Ok(ContainerCli::Docker));
        assert_eq!("podman".parse(), Ok(ContainerCli::Podman));
        assert_eq!(
            "/usr/local/bin/fake".parse(),
            Ok(ContainerCli::Path("/usr/local/bin/fake".into()))
        );
        assert!("nerdctl".parse::<ContainerCli>().is_err());
        assert!("./fake".parse::<ContainerCli>().is_err());
    }

    #[test]
    fn the_command_names_variables_never_values() {
        let temp = TempAdmin::random();
        let command = Bootstrap::new(&ContainerCli::Podman, "kc", &temp);
        let line = command.args().join(" ");
        assert!(!line.contains(temp.password.expose()));
        assert!(!line.contains(&temp.username));
        assert!(line.starts_with(
            "exec -e MESH_BOOTSTRAP_ADMIN_USER -e MESH_BOOTSTRAP_ADMIN_PASSWORD -e KC_HTTP_MANAGEMENT_PORT="
        ));
        assert!(line.ends_with(
            " kc /opt/keycloak/bin/kc.sh bootstrap-admin user --username:env MESH_BOOTSTRAP_ADMIN_USER --password:env MESH_BOOTSTRAP_ADMIN_PASSWORD --no-prompt"
        ));
        assert!(!format!("{command:?}").contains(temp.password.expose()));
    }

    #[test]
    fn temporary_administrators_are_random() {
        let (a, b) = (TempAdmin::random(), TempAdmin::random());
        assert_ne!(a.username, b.username);
        assert_ne!(a.password, b.password);
        assert!(a.username.starts_with(TEMP_ADMIN_PREFIX));
        assert_eq!(a.password.expose().len(), 32);
        assert!(!format!("{a:?}").contains(a.password.expose()));
    }

    #[tokio::test]
    async fn output_is_counted_not_kept() {
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("runtime");
        std::fs::write(
            &script,
            "#!/bin/sh\necho \"password is $MESH_BOOTSTRAP_ADMIN_PASSWORD\"\necho oops >&2\nexit 3\n",
        )
        .unwrap();
        set_executable(&script);
        let temp = TempAdmin::random();
        let command = Bootstrap::new(&ContainerCli::Path(script), "kc", &temp);
        let error = command.run(Duration::from_secs(20)).await.unwrap_err();
        let words = error.to_string();
        assert_eq!(
            words,
            "kc.sh bootstrap-admin ended with status 3 (50 bytes of output, not shown)"
        );
    }

    #[tokio::test]
    async fn a_runtime_that_hangs_is_killed() {
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("runtime");
        std::fs::write(&script, "#!/bin/sh\nexec sleep 30\n").unwrap();
        set_executable(&script);
        let command = Bootstrap::new(&ContainerCli::Path(script), "kc", &TempAdmin::random());
        let error = command.run(Duration::from_millis(300)).await.unwrap_err();
        assert!(matches!(error, BootstrapError::TimedOut { .. }), "{error}");
        let missing = Bootstrap::new(
            &ContainerCli::Path(dir.path().join("none")),
            "kc",
            &TempAdmin::random(),
        );
        let error = missing.run(Duration::from_secs(5)).await.unwrap_err();
        assert!(matches!(error, BootstrapError::Spawn { .. }), "{error}");
    }

    fn set_executable(path: &std::path::Path) {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
}
