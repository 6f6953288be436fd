//! A private RabbitMQ node, for the hooks that provision RabbitMQ vhosts
//! and users (examples/hooks/rabbitmq).

use std::io::{Read, Write};
use std::net::{Ipv4Addr, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use tempfile::TempDir;

use crate::{find_in_path_or, free_port, poll_until, random_hex, read_lossy, tail, terminate};

/// The administrator the hooks act as (tag `administrator`).
pub const RABBITMQ_ADMIN: &str = "mesh-admin";

/// How long a node may take to answer its management API before the start
/// panics. It takes about 7 s on an idle 2-core machine (most of it the
/// boot steps' module scan); the bound leaves room for a loaded one.
pub const RABBITMQ_START_DEADLINE: Duration = Duration::from_secs(60);

/// How long `rabbitmqctl stop` may take on drop before the node is killed.
const STOP_GRACE: Duration = Duration::from_secs(15);

/// Where Debian's `rabbitmq-server` keeps the scripts that run a node as the
/// calling user (`/usr/sbin/rabbitmq-server` switches to the `rabbitmq`
/// user and its system-wide node).
const SCRIPTS: &str = "/usr/lib/rabbitmq/bin";

/// The ports a node uses, all on 127.0.0.1.
#[derive(Clone, Copy, Debug)]
struct Ports {
    amqp: u16,
    dist: u16,
    epmd: u16,
    api: u16,
    ctl: u16,
}

impl Ports {
    fn free() -> Ports {
        Ports {
            amqp: free_port(),
            dist: free_port(),
            epmd: free_port(),
            api: free_port(),
            ctl: free_port(),
        }
    }
}

/// A private RabbitMQ node (Debian `rabbitmq-server`, 3.10): its own node
/// name, its own epmd on a free port (sharing none with the system or
/// another test), AMQP, distribution and the management plugin's HTTP API
/// on free 127.0.0.1 ports, its database, logs, config, enabled plugins and
/// Erlang cookie (`HOME`) in a private folder, and one administrator,
/// [`RABBITMQ_ADMIN`], with a random password kept in a 0600 file
/// ([`RabbitServer::admin_password_file`]), as a hook is given it.
/// Dropping it stops the node (`rabbitmqctl stop`, then a kill of its
/// process group), kills its epmd and removes its folder.
///
/// It takes seconds to start: share one among the tests of a binary.
///
/// ```no_run
/// let rabbit = mesh_test_support::RabbitServer::start();
/// let (status, body) = rabbit.api("GET", "/api/whoami", None);
/// assert_eq!(status, 200, "{body}");
/// ```
pub struct RabbitServer {
    dir: TempDir,
    node: String,
    ports: Ports,
    password: String,
    child: Option<Child>,
    epmd: Option<Child>,
}

impl RabbitServer {
    /// Starts a node; blocks until its management API answers the
    /// administrator (panics with its log tail when it does not within
    /// [`RABBITMQ_START_DEADLINE`]).
    pub fn start() -> RabbitServer {
        let server_script = Path::new(SCRIPTS).join("rabbitmq-server");
        assert!(
            server_script.exists(),
            "{} not found: install the Debian package `rabbitmq-server`",
            server_script.display()
        );
        let dir = crate::scratch::private_dir("rabbitmq");
        let password = random_hex(16);
        let mut server = RabbitServer {
            dir,
            node: format!("mesh-{}@localhost", random_hex(6)),
            ports: Ports::free(),
            password,
            child: None,
            epmd: None,
        };
        write_private(
            &server.admin_password_file(),
            &format!("{}\n", server.password),
        );
        std::fs::write(server.path("enabled_plugins"), "[rabbitmq_management].\n")
            .expect("writing enabled_plugins");
        for attempt in 1..=crate::START_ATTEMPTS {
            match server.spawn_and_wait() {
                Ok(()) => return server,
                Err(true) if attempt < crate::START_ATTEMPTS => {
                    server.stop();
                    server.ports = Ports::free();
                }
                Err(_) => server.fail("rabbitmq-server did not start"),
            }
        }
        unreachable!("the loop above returns or panics")
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// The management API's port on 127.0.0.1.
    pub fn api_port(&self) -> u16 {
        self.ports.api
    }

    /// The management API's base URL (`http://127.0.0.1:PORT`).
    pub fn api_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.ports.api)
    }

    /// The AMQP port on 127.0.0.1.
    pub fn amqp_port(&self) -> u16 {
        self.ports.amqp
    }

    /// The node's name (`mesh-<hex>@localhost`).
    pub fn node(&self) -> &str {
        &self.node
    }

    /// The file holding [`RABBITMQ_ADMIN`]'s password (0600, a final
    /// newline after it).
    pub fn admin_password_file(&self) -> PathBuf {
        self.path("admin-password")
    }

    /// [`RABBITMQ_ADMIN`]'s password.
    pub fn admin_password(&self) -> &str {
        &self.password
    }

    /// The environment `examples/hooks/rabbitmq` reads its API and
    /// administrator from.
    pub fn hook_env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("RABBITMQ_HOOK_API", self.api_url()),
            ("RABBITMQ_HOOK_ADMIN_USER", RABBITMQ_ADMIN.to_owned()),
            (
                "RABBITMQ_HOOK_ADMIN_PASSWORD_FILE",
                self.admin_password_file().display().to_string(),
            ),
        ]
    }

    /// One request to the management API as the administrator, as a person
    /// would make it: `path` from `/api`, `body` JSON. Returns the status
    /// and the body.
    ///
    /// # Panics
    /// When the API cannot be reached.
    pub fn api(&self, method: &str, path: &str, body: Option<&str>) -> (u16, String) {
        self.api_as(RABBITMQ_ADMIN, &self.password, method, path, body)
    }

    /// The same logged in as `user` with `password` (in the request's
    /// Authorization header, never a command line).
    ///
    /// # Panics
    /// When the API cannot be reached.
    pub fn api_as(
        &self,
        user: &str,
        password: &str,
        method: &str,
        path: &str,
        body: Option<&str>,
    ) -> (u16, String) {
        http(self.ports.api, user, password, method, path, body).unwrap_or_else(|e| {
            panic!(
                "{method} {path} to RabbitMQ's API on port {}: {e}",
                self.ports.api
            )
        })
    }

    /// The node's log.
    pub fn log(&self) -> String {
        let mut text = read_lossy(&self.path("log").join(format!("{}.log", self.node)));
        text.push_str(&read_lossy(&self.path("startup.log")));
        text
    }

    fn config(&self) -> String {
        format!(
            "listeners.tcp.1 = 127.0.0.1:{amqp}\nmanagement.tcp.ip = 127.0.0.1\nmanagement.tcp.port = {api}\n\
             default_user = {RABBITMQ_ADMIN}\ndefault_pass = {pw}\ndefault_user_tags.administrator = true\n\
             default_permissions.configure = .*\ndefault_permissions.read = .*\ndefault_permissions.write = .*\n\
             log.console = false\nlog.file.level = info\n",
            amqp = self.ports.amqp,
            api = self.ports.api,
            pw = self.password,
        )
    }

    /// The environment every rabbitmq script of this node runs with.
    fn env(&self) -> Vec<(&'static str, String)> {
        let dir = self.dir.path().display().to_string();
        vec![
            ("HOME", dir.clone()),
            ("RABBITMQ_NODENAME", self.node.clone()),
            ("RABBITMQ_NODE_IP_ADDRESS", "127.0.0.1".to_owned()),
            ("RABBITMQ_NODE_PORT", self.ports.amqp.to_string()),
            ("RABBITMQ_DIST_PORT", self.ports.dist.to_string()),
            ("ERL_EPMD_PORT", self.ports.epmd.to_string()),
            ("ERL_EPMD_ADDRESS", "127.0.0.1".to_owned()),
            ("RABBITMQ_CTL_DIST_PORT_MIN", self.ports.ctl.to_string()),
            ("RABBITMQ_CTL_DIST_PORT_MAX", self.ports.ctl.to_string()),
            ("RABBITMQ_MNESIA_BASE", format!("{dir}/mnesia")),
            ("RABBITMQ_LOG_BASE", format!("{dir}/log")),
            ("RABBITMQ_PID_FILE", format!("{dir}/rabbitmq.pid")),
            ("RABBITMQ_CONFIG_FILE", format!("{dir}/rabbitmq.conf")),
            (
                "RABBITMQ_ADVANCED_CONFIG_FILE",
                format!("{dir}/advanced.config"),
            ),
            ("RABBITMQ_CONF_ENV_FILE", format!("{dir}/rabbitmq-env.conf")),
            (
                "RABBITMQ_ENABLED_PLUGINS_FILE",
                format!("{dir}/enabled_plugins"),
            ),
            // The distribution listener too on 127.0.0.1 only.
            (
                "RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS",
                "-kernel inet_dist_use_interface {127,0,0,1}".to_owned(),
            ),
        ]
    }

    /// Spawns epmd and the node on `self.ports`; `Err(true)` when a port
    /// was taken.
    fn spawn_and_wait(&mut self) -> Result<(), bool> {
        write_private(&self.path("rabbitmq.conf"), &self.config());
        let epmd = find_in_path_or("epmd", &["/usr/bin/epmd"])
            .unwrap_or_else(|| panic!("epmd not found: install the Debian package `erlang-base`"));
        let mut epmd = Command::new(epmd)
            .args([
                "-port",
                &self.ports.epmd.to_string(),
                "-address",
                "127.0.0.1",
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("epmd runs");
        let deadline = Instant::now() + RABBITMQ_START_DEADLINE;
        let listening = poll_until(Instant::now() + Duration::from_secs(5), || {
            if let Ok(Some(_)) = epmd.try_wait() {
                return Some(false);
            }
            TcpStream::connect((Ipv4Addr::LOCALHOST, self.ports.epmd))
                .ok()
                .map(|_| true)
        });
        self.epmd = Some(epmd);
        if listening != Some(true) {
            return Err(true);
        }
        let startup = std::fs::File::create(self.path("startup.log")).expect("startup.log");
        let child = Command::new(Path::new(SCRIPTS).join("rabbitmq-server"))
            .envs(self.env())
            .current_dir(self.dir.path())
            .process_group(0)
            .stdin(Stdio::null())
            .stdout(startup.try_clone().expect("startup.log"))
            .stderr(startup)
            .spawn()
            .expect("rabbitmq-server runs");
        self.child = Some(child);
        let outcome = poll_until(deadline, || {
            let child = self.child.as_mut().expect("the node");
            if let Ok(Some(_)) = child.try_wait() {
                let log = self.log();
                return Some(Err(log.contains("eaddrinuse") || log.contains("in use")));
            }
            match http(
                self.ports.api,
                RABBITMQ_ADMIN,
                &self.password,
                "GET",
                "/api/whoami",
                None,
            ) {
                Ok((200, _)) => Some(Ok(())),
                _ => None,
            }
        });
        outcome.unwrap_or(Err(false))
    }

    /// Stops the node (`rabbitmqctl stop`, then a kill of its process
    /// group) and its epmd.
    fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            if let Ok(None) = child.try_wait() {
                let ctl = Command::new(Path::new(SCRIPTS).join("rabbitmqctl"))
                    .arg("stop")
                    .envs(self.env())
                    .current_dir(self.dir.path())
                    .stdin(Stdio::null())
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .spawn();
                if let Ok(mut ctl) = ctl {
                    let deadline = Instant::now() + STOP_GRACE;
                    let _ = poll_until(deadline, || child.try_wait().ok().flatten());
                    terminate(&mut ctl, Duration::ZERO);
                }
            }
            let group = rustix::process::Pid::from_child(&child);
            let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
            let _ = child.wait();
        }
        if let Some(mut epmd) = self.epmd.take() {
            terminate(&mut epmd, Duration::ZERO);
        }
    }

    fn fail(&mut self, why: &str) -> ! {
        let log = tail(&self.log(), 40);
        let (ports, dir) = (self.ports, self.dir.path().display().to_string());
        self.stop();
        panic!("{why} within {RABBITMQ_START_DEADLINE:?}\nports: {ports:?}\ndir: {dir}\n--- log tail ---\n{log}")
    }
}

impl Drop for RabbitServer {
    fn drop(&mut self) {
        self.stop();
    }
}

impl std::fmt::Debug for RabbitServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RabbitServer")
            .field("node", &self.node)
            .field("ports", &self.ports)
            .field("dir", &self.dir.path())
            .finish_non_exhaustive()
    }
}

/// Writes `text` to a new file only its owner may read (0600).
fn write_private(path: &Path, text: &str) {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .and_then(|mut file| file.write_all(text.as_bytes()))
        .unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
}

/// One HTTP/1.0 request to 127.0.0.1:`port` with basic authentication;
/// the status and the body.
fn http(
    port: u16,
    user: &str,
    password: &str,
    method: &str,
    path: &str,
    body: Option<&str>,
) -> std::io::Result<(u16, String)> {
    let mut stream = TcpStream::connect((Ipv4Addr::LOCALHOST, port))?;
    stream.set_read_timeout(Some(Duration::from_secs(30)))?;
    stream.set_write_timeout(Some(Duration::from_secs(30)))?;
    let body = body.unwrap_or("");
    let auth = base64(format!("{user}:{password}").as_bytes());
    let request = format!(
        "{method} {path} HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Basic {auth}\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes())?;
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer)?;
    let text = String::from_utf8_lossy(&answer);
    let status = text
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .ok_or_else(|| std::io::Error::other(format!("not an HTTP answer: {:.80}", text)))?;
    let body = text
        .split_once("\r\n\r\n")
        .map(|(_, body)| body.to_owned())
        .unwrap_or_default();
    Ok((status, body))
}

/// Standard base64 with padding.
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, b)| n | (u32::from(*b) << (16 - 8 * i)));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i)) as usize & 63] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn base64_pads_as_the_standard_says() {
        assert_eq!(super::base64(b"mesh-admin:pw"), "bWVzaC1hZG1pbjpwdw==");
        assert_eq!(super::base64(b"abc"), "YWJj");
        assert_eq!(super::base64(b"ab"), "YWI=");
    }
}
