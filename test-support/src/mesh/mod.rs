//! A whole mesh on one machine, over the built binaries: a private
//! nats-server configured with the permissions `mesh-controller
//! permissions` derives, a PostgreSQL cluster for the provider's consumers,
//! another for the controller's store, and the binaries (`mesh-controller
//! serve`, `mesh-postgres`, `mesh-identity`, `mesh-grants`) as real
//! processes. The end-to-end tests in `tests/` and the demo (`scripts/demo`)
//! drive it.
//!
//! The binaries are found beside the running executable ([`binary`]):
//! `scripts/test` and `scripts/demo` build them first (`cargo build
//! --workspace --bins`); a run started without them says so.
//!
//! * [`Mesh`]: the declaration, the bus users and their credentials, the
//!   servers, and the processes of one mesh; its methods start and stop the
//!   binaries with short timings (and kills them, or drops the store), and
//!   read and wait for `mesh-controller status --json` ([`all_well`],
//!   [`failing`], [`unheard`]);
//! * [`Process`]: one child process, stopped on drop.

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use serde_json::{json, Value};

use crate::{CertFiles, NatsServer, PgCluster, TestCa};

mod hook;
mod metrics;
mod process;
mod run;
mod status;

pub use hook::{
    conform, example_hook, node_hooks_missing, HOOK_MACHINE, HOOK_MODULE, HOOK_PASS_EVERY,
    HOOK_PROVISION,
};
pub use metrics::clauses_of;
pub use process::{binary, Process, SERVED};
pub use status::{all_well, failing, healthy_mesh_with, time, unheard, wait_hook_log, wait_log};

/// Consumers of the mesh: (consumer, its machine).
pub const CONSUMERS: [(&str, &str); 3] = [("forge", "app-1"), ("wiki", "app-1"), ("docs", "app-2")];

/// How long [`Mesh::wait_status`] waits for the mesh to reach a state.
pub const WAIT: Duration = Duration::from_secs(60);

/// How the providers' `failing_after` is set (`--failing-after`).
pub const FAILING_AFTER: Duration = Duration::from_secs(2);

/// `mesh-postgres`'s `--pass-every`.
pub const POSTGRES_PASS_EVERY: &str = "250ms";

/// `serve`'s `--status-every` in these runs (its `mesh_status_*` gauges).
pub const SERVE_STATUS_EVERY: &str = "200ms";

/// `mesh-identity`'s `--pass-every`.
pub const IDENTITY_PASS_EVERY: &str = "500ms";

/// `mesh-identity`'s `--repair-check-every` ([`Mesh::identity_flags`]).
pub const IDENTITY_REPAIR_CHECK_EVERY: &str = "1s";

/// `mesh-grants`' `--check-every`.
pub const GRANTS_CHECK_EVERY: &str = "200ms";

/// `mesh-grants`' `--unreachable-after` (failed checks in a row).
pub const GRANTS_UNREACHABLE_AFTER: &str = "3";

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
    /// The provider's `--repeat-every` (how often it says a failing event
    /// again).
    pub repeat_every: &'static str,
    /// `mesh-postgres`'s `--retire-after` (a withdrawn consumer is retired
    /// after 3 passes and this long).
    pub retire_after: &'static str,
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
    /// The consumers of the hook provider `redis@cache-1` (provision
    /// `redis-acl`, run by `mesh-provide`: [`Mesh::start_hook`]) in the
    /// declaration: (consumer, its machine). With none, the declaration has
    /// no hook provider.
    pub hook: Vec<(&'static str, &'static str)>,
    /// Another address of this machine the provider's PostgreSQL also
    /// listens on ([`PgCluster::start_also_on`]), such as the machine's
    /// side of a [`Bed`](crate::netns::Bed).
    pub backend_also_on: Option<String>,
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
            repeat_every: "1m",
            retire_after: "1h",
            bus_auth: BusAuth::Password,
            log_level: "info",
            tls: false,
            identity: Vec::new(),
            hook: Vec::new(),
            backend_also_on: None,
        }
    }
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

/// The whole mesh: its files, its servers, and its processes once started.
///
/// The files sit in [`Mesh::dir`]: `declaration.json`, `credentials/` (and
/// `nkeys/`), `secrets/<consumer>` (each consumer's minted secret),
/// `contributions.json` (the PostgreSQL provider's), `identity.json` (the
/// identity provider's), `hook.json` (the hook provider's), and a log per
/// The console's bus user (`permissions --console`), for its approvals.
pub const CONSOLE_USER: &str = "console";

/// process.
pub struct Mesh {
    /// The folder holding the mesh's files and the processes' logs.
    pub dir: tempfile::TempDir,
    /// The bus, configured with the derived permissions.
    pub nats: NatsServer,
    /// The PostgreSQL the provider makes its consumers' databases in.
    pub backend: PgCluster,
    /// The PostgreSQL holding the controller's store (database `mesh_store`).
    pub store: PgCluster,
    /// `mesh-controller serve`, once started.
    pub controller: Option<Process>,
    /// `mesh-postgres` (`postgres@db-1`), once started.
    pub provider: Option<Process>,
    /// The machine agent `mesh-grants`, once started.
    pub grants: Option<Process>,
    /// `mesh-identity` (`identity@id-1`), once started.
    pub identity: Option<Process>,
    /// `mesh-provide` (`redis@cache-1`), once started.
    pub hook: Option<Process>,
    /// The consumers the declaration lists for `redis@cache-1`.
    pub hook_consumers: Vec<(&'static str, &'static str)>,
    /// The consumers the declaration lists for `identity@id-1`.
    pub identity_consumers: Vec<(&'static str, &'static str)>,
    /// The consumers the declaration lists for `postgres@db-1`.
    pub consumers: Vec<(&'static str, &'static str)>,
    alive_every: &'static str,
    repeat_every: &'static str,
    retire_after: &'static str,
    store_url: String,
    bus_auth: BusAuth,
    log_level: &'static str,
    /// The CA of a TLS bus and a client certificate for each binary.
    pub tls: Option<BusTls>,
    /// The port of `serve`'s `--metrics-listen` (the same across restarts).
    pub serve_metrics_port: u16,
}

/// The certificates of a TLS bus.
pub struct BusTls {
    /// The CA the server and every binary trust.
    pub ca: TestCa,
    /// The controller's client certificate.
    pub controller: CertFiles,
    /// The client certificate of every other binary.
    pub provider: CertFiles,
}

impl Mesh {
    /// Writes the files of a mesh made of `options` and starts its servers
    /// (none of its processes).
    ///
    /// # Panics
    /// When a server does not start or `mesh-controller permissions` fails.
    pub fn with(options: Options) -> Mesh {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let mut modules = Vec::new();
        if !options.consumers.is_empty() || (options.identity.is_empty() && options.hook.is_empty())
        {
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
        if !options.hook.is_empty() {
            modules.push(json!({"module": HOOK_MODULE, "machine": HOOK_MACHINE,
                "provides": [HOOK_PROVISION]}));
        }
        for &(consumer, machine) in &options.hook {
            modules.push(json!({"module": consumer, "machine": machine,
                "requires": [{"provision": HOOK_PROVISION, "from": format!("{HOOK_MODULE}@{HOOK_MACHINE}")}]}));
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
        users.extend([
            "postgres@db-1".to_owned(),
            "controller".to_owned(),
            CONSOLE_USER.to_owned(),
        ]);
        users.extend(
            options
                .identity
                .iter()
                .map(|(c, m)| format!("{c}@{m}"))
                .chain((!options.identity.is_empty()).then(|| "identity@id-1".to_owned())),
        );
        users.extend(
            options
                .hook
                .iter()
                .map(|(c, m)| format!("{c}@{m}"))
                .chain((!options.hook.is_empty()).then(|| format!("{HOOK_MODULE}@{HOOK_MACHINE}"))),
        );
        users.extend(grant_agents(
            options
                .consumers
                .iter()
                .chain(&options.identity)
                .chain(&options.hook)
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
            .args(["permissions", "--format", "nats", "--console", CONSOLE_USER])
            .arg("--credentials")
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
            BusTls {
                ca,
                controller,
                provider,
            }
        });
        let nats = match &tls {
            Some(tls) => NatsServer::start_with_tls(&tls.ca, Some(config)),
            None => NatsServer::start_with_config(config),
        };

        let backend = match &options.backend_also_on {
            Some(address) => PgCluster::start_also_on(address),
            None => PgCluster::start(),
        };
        let store = PgCluster::start();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(store.create_database("mesh_store"));
        let store_url = format!("postgres://postgres@127.0.0.1:{}/mesh_store", store.port());

        std::fs::create_dir(d.join("secrets")).unwrap();
        for &(consumer, _) in options
            .consumers
            .iter()
            .chain(&options.identity)
            .chain(&options.hook)
        {
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
            hook: None,
            hook_consumers: options.hook.clone(),
            identity_consumers: options.identity.clone(),
            consumers: options.consumers.clone(),
            alive_every: options.alive_every,
            repeat_every: options.repeat_every,
            retire_after: options.retire_after,
            store_url,
            bus_auth: options.bus_auth,
            log_level: options.log_level,
            tls,
            serve_metrics_port: crate::free_port(),
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
        let hooked: Vec<&str> = options.hook.iter().map(|(c, _)| *c).collect();
        mesh.list_hook(&hooked);
        mesh
    }

    /// The file or folder `name` of the mesh's folder.
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
        crate::write_whole(&self.path("contributions.json"), file.to_string());
    }

    /// Replaces (or with `None` removes) a consumer's minted secret.
    pub fn secret(&self, consumer: &str, value: Option<&str>) {
        let path = self.path("secrets").join(consumer);
        match value {
            Some(v) => crate::write_whole(&path, v),
            None => std::fs::remove_file(path).unwrap(),
        }
    }
}

impl Drop for Mesh {
    /// Stops the processes before the servers go (the fields' own drops):
    /// each stops while the bus and the store are still there.
    fn drop(&mut self) {
        self.stop_grants();
        for process in [&mut self.hook, &mut self.identity, &mut self.provider] {
            if let Some(mut p) = process.take() {
                p.stop();
            }
        }
        self.stop_controller();
    }
}
