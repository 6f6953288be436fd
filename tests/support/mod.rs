//! A whole mesh on one machine for the end-to-end tests: a private
//! nats-server configured with the permissions `mesh-controller
//! permissions` derives, a PostgreSQL cluster for the provider's consumers,
//! another for the controller's store, and the built binaries
//! (`mesh-controller serve`, `mesh-postgres`, `mesh-grants`) as real
//! processes.
//!
//! The binaries are found next to the test executable (`target/debug`):
//! `scripts/test` builds them before the tests (`cargo build --workspace
//! --bins`); a test started without them says so.

#![allow(dead_code, missing_docs)]

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use mesh_test_support::{CertFiles, NatsServer, PgCluster, TestCa};
use serde_json::{json, Value};

/// Consumers of the mesh: (consumer, its machine).
pub const CONSUMERS: [(&str, &str); 3] = [("forge", "app-1"), ("wiki", "app-1"), ("docs", "app-2")];

/// How long a test waits for the mesh to reach a state.
pub const WAIT: Duration = Duration::from_secs(60);

/// How the provider's `failing_after` is set (`--failing-after`).
pub const FAILING_AFTER: Duration = Duration::from_secs(2);

/// What a mesh is made of, beyond its defaults.
#[derive(Clone, Debug)]
pub struct Options {
    /// The consumers of `postgres@db-1` in the declaration, each with a
    /// minted secret: (consumer, its machine).
    pub consumers: Vec<(&'static str, &'static str)>,
    /// Providers (module, machine) the declaration also assigns, which no
    /// test ever runs.
    pub never_run: Vec<(&'static str, &'static str)>,
    /// The provider's `--alive-every`.
    pub alive_every: &'static str,
    /// How the bus users prove who they are.
    pub bus_auth: BusAuth,
    /// `RUST_LOG` of the long-running binaries (`serve`, the providers,
    /// `mesh-grants`).
    pub log_level: &'static str,
    /// Whether the nats-server requires TLS and verifies client
    /// certificates (`verify: true`); every binary then gets
    /// `--nats-ca-file`, `--nats-cert-file` and `--nats-key-file`.
    pub tls: bool,
    /// The consumers of `identity@id-1` (provision `oidc-client`) in the
    /// declaration: (consumer, its machine). With none, the declaration has
    /// no identity provider.
    pub identity: Vec<(&'static str, &'static str)>,
}

/// How the bus users prove who they are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BusAuth {
    /// `credentials/<user>` holds a password (the server gets its bcrypt
    /// hash); binaries get `--nats-user` and `--nats-password-file`.
    Password,
    /// `credentials/<user>.pub` holds a public nkey made by the test; the
    /// seed is in `nkeys/<user>.nk`, given with `--nats-nkey-file`.
    Nkey,
    /// A password as for [`BusAuth::Password`], given inside the `--nats`
    /// URL (`nats://user:pw@host`, the user's `@` written `%40`).
    UrlPassword,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            consumers: CONSUMERS.to_vec(),
            never_run: Vec::new(),
            alive_every: "1m",
            bus_auth: BusAuth::Password,
            log_level: "info",
            tls: false,
            identity: Vec::new(),
        }
    }
}

/// A built binary of the workspace.
pub fn binary(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    let dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("target/<profile>");
    let path = dir.join(name);
    assert!(
        path.exists(),
        "{} is not built: run `cargo build --workspace --bins` first (scripts/test does)",
        path.display()
    );
    path
}

/// The bus users of the grant agents (`_grants@<machine>`) of the machines
/// consumers run on: `permissions` derives one for each, and wants its
/// credentials.
pub fn grant_agents<'a>(machines: impl Iterator<Item = &'a str>) -> Vec<String> {
    let mut machines: Vec<&str> = machines.collect();
    machines.sort_unstable();
    machines.dedup();
    machines.iter().map(|m| format!("_grants@{m}")).collect()
}

/// A running child process, killed (SIGTERM, then SIGKILL) on drop.
pub struct Process {
    pub name: &'static str,
    child: Child,
    pub log: PathBuf,
}

impl Process {
    pub fn spawn(name: &'static str, mut command: Command, log: PathBuf) -> Process {
        let file = std::fs::File::create(&log).expect("process log file");
        if !command.get_envs().any(|(key, _)| key == "RUST_LOG") {
            command.env("RUST_LOG", "info");
        }
        command.stdout(Stdio::null()).stderr(file);
        let child = command
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {name}: {e}"));
        Process { name, child, log }
    }

    /// Kills it with SIGKILL (no last word, no cleanup) and waits for it to end.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Stops it with SIGTERM and waits for it to end.
    pub fn stop(&mut self) {
        let pid = self.child.id().to_string();
        let _ = Command::new("kill").args(["-TERM", &pid]).status();
        let deadline = Instant::now() + Duration::from_secs(15);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Whether it has ended.
    pub fn is_dead(&mut self) -> bool {
        !matches!(self.child.try_wait(), Ok(None))
    }

    /// Its log so far.
    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            self.stop();
        }
    }
}

/// The whole mesh.
pub struct Mesh {
    pub dir: tempfile::TempDir,
    pub nats: NatsServer,
    pub backend: PgCluster,
    pub store: PgCluster,
    pub controller: Option<Process>,
    pub provider: Option<Process>,
    /// The machine agent `mesh-grants`, once started.
    pub grants: Option<Process>,
    /// `mesh-identity` (`identity@id-1`), once started.
    pub identity: Option<Process>,
    /// The consumers the declaration lists for `identity@id-1`.
    pub identity_consumers: Vec<(&'static str, &'static str)>,
    /// The consumers the declaration lists for `postgres@db-1`.
    pub consumers: Vec<(&'static str, &'static str)>,
    alive_every: &'static str,
    store_url: String,
    bus_auth: BusAuth,
    log_level: &'static str,
    /// The CA of a TLS bus and a client certificate for each binary.
    pub tls: Option<Tls>,
}

/// The certificates of a TLS bus.
pub struct Tls {
    pub ca: TestCa,
    pub controller: CertFiles,
    pub provider: CertFiles,
}

impl Mesh {
    /// Starts everything but the two processes.
    pub fn new() -> Mesh {
        Mesh::with(Options::default())
    }

    /// Like [`Mesh::new`], made of `options`.
    pub fn with(options: Options) -> Mesh {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let mut modules = Vec::new();
        if !options.consumers.is_empty() || options.identity.is_empty() {
            modules.push(
                json!({"module": "postgres", "machine": "db-1", "provides": ["postgres-database"]}),
            );
        }
        if !options.identity.is_empty() {
            modules.push(
                json!({"module": "identity", "machine": "id-1", "provides": ["oidc-client"]}),
            );
        }
        for &(consumer, machine) in &options.identity {
            modules.push(json!({"module": consumer, "machine": machine,
                "requires": [{"provision": "oidc-client", "from": "identity@id-1"}]}));
        }
        for (module, machine) in &options.never_run {
            modules.push(
                json!({"module": module, "machine": machine, "provides": ["postgres-database"]}),
            );
        }
        for &(consumer, machine) in &options.consumers {
            modules.push(json!({"module": consumer, "machine": machine,
                "requires": [{"provision": "postgres-database", "from": "postgres@db-1"}]}));
        }
        std::fs::write(
            d.join("declaration.json"),
            json!({ "modules": modules }).to_string(),
        )
        .unwrap();
        let creds = d.join("credentials");
        std::fs::create_dir(&creds).unwrap();
        let mut users: Vec<String> = options
            .consumers
            .iter()
            .chain(&options.never_run)
            .map(|(c, m)| format!("{c}@{m}"))
            .collect();
        users.extend(["postgres@db-1".to_owned(), "controller".to_owned()]);
        users.extend(
            options
                .identity
                .iter()
                .map(|(c, m)| format!("{c}@{m}"))
                .chain((!options.identity.is_empty()).then(|| "identity@id-1".to_owned())),
        );
        users.extend(grant_agents(
            options
                .consumers
                .iter()
                .chain(&options.identity)
                .map(|&(_, m)| m),
        ));
        std::fs::create_dir(d.join("nkeys")).unwrap();
        for user in &users {
            match options.bus_auth {
                BusAuth::Password | BusAuth::UrlPassword => std::fs::write(
                    creds.join(user),
                    format!("bus-pw-{}", user.replace('@', "-")),
                )
                .unwrap(),
                BusAuth::Nkey => {
                    let key = nkeys::KeyPair::new_user();
                    std::fs::write(creds.join(format!("{user}.pub")), key.public_key()).unwrap();
                    std::fs::write(
                        d.join("nkeys").join(format!("{user}.nk")),
                        key.seed().unwrap(),
                    )
                    .unwrap();
                }
            }
        }
        let rendered = Command::new(binary("mesh-controller"))
            .args(["--declaration"])
            .arg(d.join("declaration.json"))
            .args(["permissions", "--format", "nats", "--credentials"])
            .arg(&creds)
            .output()
            .expect("mesh-controller permissions");
        assert!(
            rendered.status.success(),
            "permissions: {}",
            String::from_utf8_lossy(&rendered.stderr)
        );
        let config: Value =
            serde_json::from_slice(&rendered.stdout).expect("permissions renders JSON");
        let text = config.to_string();
        for user in &users {
            let password = format!("bus-pw-{}", user.replace('@', "-"));
            assert!(
                !text.contains(&password),
                "a plain password rendered: {text}"
            );
        }
        let tls = options.tls.then(|| {
            let ca = TestCa::new("mesh e2e ca");
            let controller = ca.client("controller", "controller");
            let provider = ca.client("provider", "postgres-db-1");
            Tls {
                ca,
                controller,
                provider,
            }
        });
        let nats = match &tls {
            Some(tls) => NatsServer::start_with_tls(&tls.ca, Some(config)),
            None => NatsServer::start_with_config(config),
        };

        let backend = PgCluster::start();
        let store = PgCluster::start();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(store.create_database("mesh_store"));
        let store_url = format!("postgres://postgres@127.0.0.1:{}/mesh_store", store.port());

        std::fs::create_dir(d.join("secrets")).unwrap();
        for &(consumer, _) in options.consumers.iter().chain(&options.identity) {
            std::fs::write(
                d.join("secrets").join(consumer),
                format!("minted-{consumer}-secret"),
            )
            .unwrap();
        }
        let mesh = Mesh {
            dir,
            nats,
            backend,
            store,
            controller: None,
            provider: None,
            grants: None,
            identity: None,
            identity_consumers: options.identity.clone(),
            consumers: options.consumers.clone(),
            alive_every: options.alive_every,
            store_url,
            bus_auth: options.bus_auth,
            log_level: options.log_level,
            tls,
        };
        let all: Vec<&str> = options.consumers.iter().map(|(c, _)| *c).collect();
        mesh.list(&all);
        let entries: Vec<Value> = options
            .identity
            .iter()
            .map(|(c, m)| json!({"consumer": c, "machine": m, "provision": "oidc-client", "secret_file": format!("secrets/{c}")}))
            .collect();
        let file =
            json!({"provider": {"module": "identity", "machine": "id-1"}, "consumers": entries});
        std::fs::write(mesh.path("identity.json"), file.to_string()).unwrap();
        mesh
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// Writes the provider's contributions file listing `consumers`.
    pub fn list(&self, consumers: &[&str]) {
        let entries: Vec<Value> = self
            .consumers
            .iter()
            .filter(|(c, _)| consumers.contains(c))
            .map(|(c, m)| json!({"consumer": c, "machine": m, "provision": "postgres-database", "secret_file": format!("secrets/{c}")}))
            .collect();
        let file =
            json!({"provider": {"module": "postgres", "machine": "db-1"}, "consumers": entries});
        std::fs::write(self.path("contributions.json"), file.to_string()).unwrap();
    }

    /// Replaces (or with `None` removes) a consumer's minted secret.
    pub fn secret(&self, consumer: &str, value: Option<&str>) {
        let path = self.path("secrets").join(consumer);
        match value {
            Some(v) => std::fs::write(path, v).unwrap(),
            None => std::fs::remove_file(path).unwrap(),
        }
    }

    fn controller_command(&self) -> Command {
        let mut command = Command::new(binary("mesh-controller"));
        command
            .arg("--database")
            .arg(&self.store_url)
            .arg("--database-password-file")
            .arg(self.store.superuser_password_file())
            .arg("--declaration")
            .arg(self.path("declaration.json"))
            .args(self.bus_flags("controller"));
        command
    }

    /// The NATS flags of the binary connecting as `user` (`controller` or
    /// `postgres@db-1`): the server, its credential, and the TLS files.
    pub fn bus_flags(&self, user: &str) -> Vec<OsString> {
        let mut flags: Vec<OsString> = vec!["--nats".into(), self.nats.url().into()];
        match self.bus_auth {
            BusAuth::UrlPassword => {
                let password =
                    std::fs::read_to_string(self.path("credentials").join(user)).unwrap();
                let inside = format!("://{}:{password}@", user.replace('@', "%40"));
                flags[1] = self.nats.url().replacen("://", &inside, 1).into();
            }
            BusAuth::Password => {
                flags.extend(["--nats-user".into(), user.into()]);
                flags.push("--nats-password-file".into());
                flags.push(self.path("credentials").join(user).into());
            }
            BusAuth::Nkey => {
                flags.push("--nats-nkey-file".into());
                flags.push(self.path("nkeys").join(format!("{user}.nk")).into());
            }
        }
        if let Some(tls) = &self.tls {
            let files = if user == "controller" {
                &tls.controller
            } else {
                &tls.provider
            };
            flags.push("--nats-ca-file".into());
            flags.push(tls.ca.ca_file().into());
            flags.push("--nats-cert-file".into());
            flags.push(files.cert.clone().into());
            flags.push("--nats-key-file".into());
            flags.push(files.key.clone().into());
        }
        flags
    }

    pub fn start_controller(&mut self) {
        let mut command = self.controller_command();
        command.arg("serve").env("RUST_LOG", self.log_level);
        self.controller = Some(Process::spawn(
            "controller",
            command,
            self.path("controller.log"),
        ));
    }

    pub fn stop_controller(&mut self) {
        if let Some(mut p) = self.controller.take() {
            p.stop();
        }
    }

    /// The short timings every provider of these tests runs with, a pass
    /// every `pass_every`.
    fn provider_timings(&self, pass_every: &str) -> Vec<String> {
        [
            "--pass-every",
            pass_every,
            "--failing-after",
            &humantime::format_duration(FAILING_AFTER).to_string(),
            "--repeat-every",
            "1m",
            "--alive-every",
            self.alive_every,
            "--ack-timeout",
            "1s",
        ]
        .map(str::to_owned)
        .to_vec()
    }

    pub fn start_provider(&mut self) {
        let mut command = Command::new(binary("mesh-postgres"));
        command
            .arg("--admin-url")
            .arg(self.backend.admin_url())
            .arg("--admin-password-file")
            .arg(self.backend.superuser_password_file())
            .arg("--contributions")
            .arg(self.path("contributions.json"))
            .args(self.bus_flags("postgres@db-1"))
            .args(self.provider_timings("250ms"))
            .args(["--retire-after-passes", "3", "--retire-after", "1h"])
            .env("RUST_LOG", self.log_level);
        self.provider = Some(Process::spawn(
            "provider",
            command,
            self.path("provider.log"),
        ));
    }

    pub fn stop_provider(&mut self) {
        if let Some(mut p) = self.provider.take() {
            p.stop();
        }
    }

    /// Kills the provider with SIGKILL: it says nothing more.
    pub fn kill_provider(&mut self) {
        if let Some(mut p) = self.provider.take() {
            p.kill();
        }
    }

    /// Starts `mesh-grants` on the grants file `file` as the machine agent
    /// of `machine` (`_grants@<machine>`), checking every 200 ms and saying
    /// a grant unreachable after 3 failed checks.
    pub fn start_grants(&mut self, machine: &str, file: &Path) {
        let mut command = Command::new(binary("mesh-grants"));
        command
            .arg("--grants")
            .arg(file)
            .args(self.bus_flags(&format!("_grants@{machine}")))
            .args([
                "--check-every",
                "200ms",
                "--unreachable-after",
                "3",
                "--connect-timeout",
                "500ms",
                "--repeat-every",
                "1m",
                "--ack-timeout",
                "1s",
            ])
            .env("RUST_LOG", self.log_level);
        self.grants = Some(Process::spawn("grants", command, self.path("grants.log")));
    }

    /// Starts `mesh-identity` as `identity@id-1` on `identity.json`, with
    /// `args` (how it reaches Keycloak and repairs it) and `env` added to
    /// its environment; short timings.
    pub fn start_identity(&mut self, args: &[OsString], env: &[(String, String)]) {
        let mut command = Command::new(binary("mesh-identity"));
        command
            .arg("--contributions")
            .arg(self.path("identity.json"))
            .args(self.bus_flags("identity@id-1"))
            .args(args)
            .args(self.provider_timings("500ms"))
            .env("RUST_LOG", self.log_level)
            .envs(env.iter().map(|(k, v)| (k, v)));
        self.identity = Some(Process::spawn(
            "identity",
            command,
            self.path("identity.log"),
        ));
    }

    pub fn stop_grants(&mut self) {
        if let Some(mut p) = self.grants.take() {
            p.stop();
        }
    }

    /// Runs a controller command; returns (exit code, stdout, stderr).
    pub fn controller(&self, args: &[&str]) -> (i32, String, String) {
        let out = self
            .controller_command()
            .args(args)
            .output()
            .expect("mesh-controller runs");
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    /// `status --json`, or `None` while the store cannot be read.
    pub fn status(&self) -> Option<Value> {
        let (code, out, _) = self.controller(&["status", "--json"]);
        (code == 0).then(|| serde_json::from_str(&out).expect("status --json prints JSON"))
    }

    /// Waits until `status --json` satisfies `want`; panics with the logs otherwise.
    pub fn wait_status(&self, what: &str, want: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + WAIT;
        let mut last = None;
        while Instant::now() < deadline {
            if let Some(status) = self.status() {
                if want(&status) {
                    return status;
                }
                last = Some(status);
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        panic!(
            "status never showed {what}; last: {last:#?}\n--- provider log:\n{}\n--- identity log:\n{}\n--- grants log:\n{}\n--- controller log:\n{}",
            self.provider.as_ref().map(Process::log_text).unwrap_or_default(),
            self.identity.as_ref().map(Process::log_text).unwrap_or_default(),
            self.grants.as_ref().map(Process::log_text).unwrap_or_default(),
            self.controller.as_ref().map(Process::log_text).unwrap_or_default()
        );
    }

    /// Whether the provider's log says `words` (it is read, never trusted for state).
    pub fn provider_log(&self) -> String {
        self.provider
            .as_ref()
            .map(Process::log_text)
            .unwrap_or_default()
    }
}

/// Waits until the provider's log says `words` at least `times` times.
pub fn wait_log(mesh: &Mesh, words: &str, times: usize) {
    let deadline = Instant::now() + WAIT;
    while mesh.provider_log().matches(words).count() < times {
        assert!(
            Instant::now() < deadline,
            "the provider never said {words:?} {times} times:\n{}",
            mesh.provider_log()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A mesh made of `options` whose consumers have been served once, and
/// whose provider the controller has heard from (until then status rightly
/// says it is not).
pub fn healthy_mesh_with(options: Options) -> Mesh {
    let mut mesh = Mesh::with(options);
    mesh.start_controller();
    mesh.start_provider();
    wait_log(&mesh, "saying recovered", mesh.consumers.len());
    mesh.wait_status("postgres@db-1 heard from", |s| {
        !unheard(s).contains(&"postgres@db-1".to_owned())
    });
    mesh
}

/// The consumers `status --json` names as failing.
pub fn failing(status: &Value) -> Vec<String> {
    let mut names: Vec<String> = status["failing"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|f| f["consumer"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// The providers `status --json` names as not heard from, `module@machine`.
pub fn unheard(status: &Value) -> Vec<String> {
    let mut names: Vec<String> = status["unheard"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|u| {
                    format!(
                        "{}@{}",
                        u["provider_module"].as_str().unwrap_or("?"),
                        u["provider_machine"].as_str().unwrap_or("?")
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// An RFC 3339 time of `status --json`.
pub fn time(value: &Value) -> std::time::SystemTime {
    let text = value
        .as_str()
        .unwrap_or_else(|| panic!("not a time: {value}"));
    humantime::parse_rfc3339_weak(text).unwrap_or_else(|e| panic!("{text}: {e}"))
}

/// Whether `status` is all well.
pub fn all_well(status: &Value) -> bool {
    status["all_well"] == json!(true)
}
