//! Keycloak's own bootstrap command, run where Keycloak runs ([`Runtime`]):
//! inside its container,
//!
//! ```text
//! <cli> exec -e MESH_BOOTSTRAP_ADMIN_USER -e MESH_BOOTSTRAP_ADMIN_PASSWORD
//!       -e KC_HTTP_MANAGEMENT_PORT=<port> <container>
//!       /opt/keycloak/bin/kc.sh bootstrap-admin user
//!       --username:env MESH_BOOTSTRAP_ADMIN_USER --password:env MESH_BOOTSTRAP_ADMIN_PASSWORD
//!       --no-prompt --optimized
//! ```
//!
//! or on this host, for a server run from the distribution (by hand or
//! under systemd):
//!
//! ```text
//! <kc.sh> [--config-file <file>] bootstrap-admin user
//!       --username:env MESH_BOOTSTRAP_ADMIN_USER --password:env MESH_BOOTSTRAP_ADMIN_PASSWORD
//!       --no-prompt --optimized
//! ```
//!
//! with `KC_HTTP_MANAGEMENT_PORT` set to a free port in its environment.
//!
//! # Beside a live server
//! Tried on Keycloak 26.5 (`start --optimized` on PostgreSQL): the command
//! runs beside the live server (about 8 s on two cores), adds the user to
//! the shared database, and the live server lets it log in at once; nothing
//! is stopped or restarted. It needs:
//! - the server's database settings: in a container, `exec` hands the
//!   command the container's environment (`KC_DB*`) and its
//!   `keycloak.conf`; on the host, the command inherits the provider's
//!   environment (give it the server's `KC_DB*` variables) or reads
//!   `--kc-config-file`. A server on start-dev's H2 file cannot be repaired
//!   so: the live server holds the file's lock and the command fails.
//! - `--optimized`: without it the command rebuilds the server's optimized
//!   image in the distribution the live server runs from. With it, the
//!   distribution must have been built (`kc.sh build`, or a `start` that
//!   built it) with the server's build options, else the command fails and
//!   says so in its output.
//! - a free management port: it opens Keycloak's management interface
//!   (default 9000, the live server's) while it runs.
//!
//! # Secrets
//! The temporary administrator's name and password reach the command only
//! through the environment: the child process gets them as variables (and
//! `-e NAME`, without a value, forwards them into a container), so they are
//! never on a command line. The management port is no secret. Nothing the
//! command prints is logged or returned: only its exit status and how many
//! bytes it printed.

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

/// Where the bootstrap command runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Runtime {
    /// Inside Keycloak's container, through `<cli> exec`.
    Container {
        /// The container runtime.
        cli: ContainerCli,
        /// The container's name or id.
        container: String,
    },
    /// On this host: the `kc.sh` of the distribution the server runs from.
    Process {
        /// Absolute path of `kc.sh`.
        kc_sh: PathBuf,
        /// A `keycloak.conf` holding the server's settings (its database),
        /// given to the command as `--config-file`.
        config_file: Option<PathBuf>,
    },
}

impl fmt::Display for Runtime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Runtime::Container { container, .. } => write!(f, "in container {container}"),
            Runtime::Process { .. } => f.write_str("on this host"),
        }
    }
}

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

/// A free-enough port for the management interface of a bootstrap run
/// inside a container (whose ports this process cannot see), in the
/// dynamic range, away from the server's own 9000.
fn container_management_port() -> u16 {
    rand::rng().random_range(49152..=65535)
}

/// A port free on this host now (the kernel's pick), for a bootstrap run
/// here; a random one of the dynamic range when none can be had.
fn host_management_port() -> u16 {
    std::net::TcpListener::bind((std::net::Ipv4Addr::UNSPECIFIED, 0))
        .and_then(|listener| listener.local_addr())
        .map(|address| address.port())
        .unwrap_or_else(|_| container_management_port())
}

/// `bootstrap-admin user` and its options, after `kc.sh`.
const BOOTSTRAP_ARGS: [&str; 8] = [
    "bootstrap-admin",
    "user",
    "--username:env",
    USER_VAR,
    "--password:env",
    PASSWORD_VAR,
    "--no-prompt",
    "--optimized",
];

/// The bootstrap command, ready to run.
pub struct Bootstrap {
    runtime: Runtime,
    program: PathBuf,
    args: Vec<String>,
    env: Vec<(&'static str, Secret)>,
}

impl fmt::Debug for Bootstrap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self.env.iter().map(|(name, _)| *name).collect();
        f.debug_struct("Bootstrap")
            .field("program", &self.program)
            .field("args", &self.args)
            .field("env", &names)
            .finish()
    }
}

impl Bootstrap {
    /// `kc.sh bootstrap-admin user` for `temp`, run by `runtime`.
    pub fn new(runtime: &Runtime, temp: &TempAdmin) -> Bootstrap {
        let mut env = vec![
            (USER_VAR, Secret::new(temp.username.clone())),
            (PASSWORD_VAR, temp.password.clone()),
        ];
        let (program, mut args) = match runtime {
            Runtime::Container { cli, container } => {
                let port = format!("KC_HTTP_MANAGEMENT_PORT={}", container_management_port());
                let args = [
                    "exec",
                    "-e",
                    USER_VAR,
                    "-e",
                    PASSWORD_VAR,
                    "-e",
                    &port,
                    container,
                    KC_SH,
                ]
                .map(str::to_owned)
                .to_vec();
                (PathBuf::from(cli.program()), args)
            }
            Runtime::Process { kc_sh, config_file } => {
                env.push((
                    "KC_HTTP_MANAGEMENT_PORT",
                    Secret::new(host_management_port().to_string()),
                ));
                let args = match config_file {
                    Some(file) => vec!["--config-file".to_owned(), file.display().to_string()],
                    None => Vec::new(),
                };
                (kc_sh.clone(), args)
            }
        };
        args.extend(BOOTSTRAP_ARGS.map(str::to_owned));
        Bootstrap {
            runtime: runtime.clone(),
            program,
            args,
            env,
        }
    }

    /// The program run: the container runtime, or `kc.sh`.
    pub fn program(&self) -> &std::path::Path {
        &self.program
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
        let mut command = tokio::process::Command::new(&self.program);
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
            program: self.program.display().to_string(),
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
            runtime = %self.runtime,
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
    #[error("cannot wait for kc.sh bootstrap-admin")]
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
    use mesh_test_support::write_script;

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

    fn container(cli: ContainerCli) -> Runtime {
        Runtime::Container {
            cli,
            container: "kc".into(),
        }
    }

    fn process(path: PathBuf, config_file: Option<PathBuf>) -> Runtime {
        Runtime::Process {
            kc_sh: path,
            config_file,
        }
    }

    #[test]
    fn the_command_names_variables_never_values() {
        let temp = TempAdmin::random();
        let command = Bootstrap::new(&container(ContainerCli::Podman), &temp);
        assert_eq!(command.program(), std::path::Path::new("podman"));
        let line = command.args().join(" ");
        assert!(!line.contains(temp.password.expose()));
        assert!(!line.contains(&temp.username));
        assert!(line.starts_with(
            "exec -e MESH_BOOTSTRAP_ADMIN_USER -e MESH_BOOTSTRAP_ADMIN_PASSWORD -e KC_HTTP_MANAGEMENT_PORT="
        ));
        assert!(line.ends_with(
            " kc /opt/keycloak/bin/kc.sh bootstrap-admin user --username:env MESH_BOOTSTRAP_ADMIN_USER --password:env MESH_BOOTSTRAP_ADMIN_PASSWORD --no-prompt --optimized"
        ));
        assert!(!format!("{command:?}").contains(temp.password.expose()));
    }

    #[test]
    fn on_the_host_kc_sh_runs_itself_with_its_config_file() {
        let temp = TempAdmin::random();
        let kc_sh = PathBuf::from("/opt/keycloak/bin/kc.sh");
        let bare = Bootstrap::new(&process(kc_sh.clone(), None), &temp);
        assert_eq!(bare.program(), kc_sh.as_path());
        assert_eq!(
            bare.args().join(" "),
            "bootstrap-admin user --username:env MESH_BOOTSTRAP_ADMIN_USER --password:env MESH_BOOTSTRAP_ADMIN_PASSWORD --no-prompt --optimized"
        );
        let conf = Bootstrap::new(
            &process(kc_sh, Some("/etc/keycloak/keycloak.conf".into())),
            &temp,
        );
        assert!(conf
            .args()
            .join(" ")
            .starts_with("--config-file /etc/keycloak/keycloak.conf bootstrap-admin user "));
        let debug = format!("{conf:?}");
        assert!(debug.contains("KC_HTTP_MANAGEMENT_PORT"), "{debug}");
        assert!(!debug.contains(temp.password.expose()), "{debug}");
        assert_eq!(process("/k/kc.sh".into(), None).to_string(), "on this host");
        assert_eq!(
            container(ContainerCli::Docker).to_string(),
            "in container kc"
        );
    }

    #[tokio::test]
    async fn on_the_host_the_command_gets_the_secrets_and_a_free_port_in_its_environment() {
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("kc.sh");
        let out = dir.path().join("seen");
        write_script(&script, &format!(
                "#!/bin/sh\nprintf '%s %s %s %s' \"$MESH_BOOTSTRAP_ADMIN_USER\" \"$MESH_BOOTSTRAP_ADMIN_PASSWORD\" \"$KC_HTTP_MANAGEMENT_PORT\" \"$PATH\" > {}\n",
                out.display()
            ));
        let temp = TempAdmin::random();
        Bootstrap::new(&process(script, None), &temp)
            .run(Duration::from_secs(20))
            .await
            .unwrap();
        let seen = std::fs::read_to_string(&out).unwrap();
        let fields: Vec<&str> = seen.split(' ').collect();
        assert_eq!(fields[0], temp.username);
        assert_eq!(fields[1], temp.password.expose());
        assert!(
            fields[2].parse::<u16>().is_ok_and(|port| port > 0),
            "{seen}"
        );
        // The provider's own environment (where the server's KC_DB* settings go) is inherited.
        assert_eq!(fields[3], std::env::var("PATH").unwrap());
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
        write_script(&script, "#!/bin/sh\necho \"password is $MESH_BOOTSTRAP_ADMIN_PASSWORD\"\necho oops >&2\nexit 3\n");
        let temp = TempAdmin::random();
        let command = Bootstrap::new(&container(ContainerCli::Path(script)), &temp);
        let error = command.run(Duration::from_secs(20)).await.unwrap_err();
        let message = error.to_string();
        assert_eq!(
            message,
            "kc.sh bootstrap-admin ended with status 3 (50 bytes of output, not shown)"
        );
    }

    #[tokio::test]
    async fn a_runtime_that_hangs_is_killed() {
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("runtime");
        write_script(&script, "#!/bin/sh\nexec sleep 30\n");
        let command = Bootstrap::new(&container(ContainerCli::Path(script)), &TempAdmin::random());
        let error = command.run(Duration::from_millis(300)).await.unwrap_err();
        assert!(
            matches!(error, BootstrapError::TimedOut { .. }),
            "{error:?}"
        );
        let missing = Bootstrap::new(
            &process(dir.path().join("none"), None),
            &TempAdmin::random(),
        );
        let error = missing.run(Duration::from_secs(5)).await.unwrap_err();
        assert!(matches!(error, BootstrapError::Spawn { .. }), "{error}");
    }
}
