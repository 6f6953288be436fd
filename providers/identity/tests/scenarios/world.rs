//! What the scenarios share: a fake Keycloak with its runtime, the
//! provider's configuration, a loop driven pass by pass, and the secret
//! checks.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use mesh_provider_identity::{IdentityConfig, IdentityProvisioner};

use mesh_sdk::testing::{self, Outbox, Runner, Settings, WallClock};
use mesh_sdk::{Consumer, Name, Secret, Timestamp};
use serde_json::{json, Value};
use tokio::time::Instant;

use crate::fake_keycloak::{FakeKeycloak, REALM};
use crate::fake_runtime::FakeRuntime;

/// The mesh's administrator password (in the provider's password file).
pub const MESH_ADMIN_PASSWORD: &str = "mesh-admin-pw-Qx7vT2";
/// The password the administrator kept when the mesh's moved on.
pub const OLD_ADMIN_PASSWORD: &str = "old-admin-pw-Zk29wL";
/// Wall-clock time of the first pass.
pub const T0: &str = "2026-10-05T00:00:00Z";

/// A fake Keycloak, a fake runtime beside it, and a folder for files.
pub struct Setup {
    pub dir: tempfile::TempDir,
    pub kc: FakeKeycloak,
    pub runtime: FakeRuntime,
}

impl Setup {
    /// A fake whose administrator has `admin_password` and refuses a wrong
    /// one with `invalid_grant_status` (400 or 401).
    pub fn new(admin_password: &str, invalid_grant_status: u16) -> Setup {
        let dir = tempfile::tempdir().unwrap();
        let kc = FakeKeycloak::start(admin_password, invalid_grant_status);
        let runtime = FakeRuntime::new(dir.path(), &kc.url);
        Setup { dir, kc, runtime }
    }

    /// The provider's configuration: realm [`REALM`], container `keycloak` through the fake runtime.
    pub fn config(&self) -> IdentityConfig {
        IdentityConfig::new(
            &self.kc.url,
            REALM,
            "admin",
            Secret::new(MESH_ADMIN_PASSWORD),
        )
        .unwrap()
        .with_container(Some("keycloak".into()), self.runtime.cli())
        .unwrap()
        .with_http_timeout(Duration::from_secs(10))
        .with_bootstrap_timeout(Duration::from_secs(30))
    }

    pub fn provisioner(&self) -> IdentityProvisioner {
        IdentityProvisioner::new(self.config()).unwrap()
    }

    /// A provisioner whose `held()` lists the realm every time.
    pub fn provisioner_listing_every_pass(&self) -> IdentityProvisioner {
        IdentityProvisioner::new(self.config().with_list_every(Duration::ZERO)).unwrap()
    }

    /// Every secret in play, to be found nowhere it must not be: the
    /// administrators' passwords, the minted secrets, and the temporary
    /// administrators' passwords the runtime was handed.
    pub fn secrets(&self) -> Vec<String> {
        let mut all = vec![
            MESH_ADMIN_PASSWORD.to_owned(),
            OLD_ADMIN_PASSWORD.to_owned(),
        ];
        all.extend(
            ["forge", "wiki", "chat"]
                .iter()
                .flat_map(|c| [minted(c, 1), minted(c, 2)]),
        );
        all.extend(temp_passwords(&self.runtime));
        all
    }
}

/// The temporary administrators' passwords the runtime was handed (through its environment).
pub fn temp_passwords(runtime: &FakeRuntime) -> Vec<String> {
    runtime
        .env()
        .iter()
        .filter_map(|e| {
            e.strip_prefix("MESH_BOOTSTRAP_ADMIN_PASSWORD=")
                .map(str::to_owned)
        })
        .collect()
}

/// The `n`th secret minted for `consumer`.
pub fn minted(consumer: &str, n: u32) -> String {
    format!("minted-{consumer}-{n}-Hq4sPe")
}

/// The provider instance these scenarios act as.
pub fn provider() -> mesh_sdk::ModuleId {
    "identity@id-1".parse().unwrap()
}

/// A consumer of the identity provider.
pub fn consumer(name: &str) -> Consumer {
    Consumer {
        provider: provider(),
        name: Name::parse(name).unwrap(),
        machine: Name::parse("app-1").unwrap(),
        provision: "oidc-client".into(),
        secret_file: PathBuf::new(),
        options: json!({}),
    }
}

/// Fails when any of `secrets` occurs in `text`.
pub fn assert_no_secret(text: &str, secrets: &[String], what: &str) {
    for (i, secret) in secrets.iter().enumerate() {
        assert!(
            !text.contains(secret.as_str()),
            "secret #{i} of {} leaked into {what}",
            secrets.len()
        );
    }
}

/// The SDK's held paused clock (real I/O in flight; see its docs).
pub use mesh_sdk::testing::hold_clock;

/// Ends the test process, saying why, when a test on the held paused clock
/// (where no tokio timeout can fire) runs longer than `limit` of real time.
pub struct Watchdog(Arc<std::sync::atomic::AtomicBool>);

impl Watchdog {
    pub fn start(limit: Duration, likely: &'static str) -> Watchdog {
        let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let seen = Arc::clone(&done);
        std::thread::spawn(move || {
            let end = std::time::Instant::now() + limit;
            while std::time::Instant::now() < end {
                if seen.load(std::sync::atomic::Ordering::SeqCst) {
                    return;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            eprintln!("test hung for {limit:?}: {likely}");
            std::process::abort();
        });
        Watchdog(done)
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        self.0.store(true, std::sync::atomic::Ordering::SeqCst);
    }
}

/// A loop over the fake, serving `consumers`, driven pass by pass.
pub struct World {
    _watchdog: Watchdog,
    pub setup: Setup,
    pub outbox: Arc<Outbox>,
    pub runner: Runner<IdentityProvisioner>,
}

impl World {
    pub fn new(setup: Setup, consumers: &[&str]) -> World {
        let provisioner = setup.provisioner();
        World::with(setup, provisioner, consumers)
    }

    /// A world whose loop runs `provisioner` (made from `setup`).
    pub fn with(setup: Setup, provisioner: IdentityProvisioner, consumers: &[&str]) -> World {
        let dir = setup.dir.path();
        let entries: Vec<Value> = consumers
            .iter()
            .map(|c| {
                std::fs::write(
                    dir.join(format!("secret-{c}")),
                    format!("{}\n", minted(c, 1)),
                )
                .unwrap();
                json!({"consumer": c, "machine": "app-1", "provision": "oidc-client",
                       "secret_file": format!("secret-{c}")})
            })
            .collect();
        let file =
            json!({"provider": {"module": "identity", "machine": "id-1"}, "consumers": entries});
        std::fs::write(dir.join("contributions.json"), file.to_string()).unwrap();
        let outbox = Arc::new(Outbox::new());
        let clock = WallClock::fixed(Timestamp::parse(T0).unwrap(), Instant::now());
        let runner = Runner::new(
            provisioner,
            dir.join("contributions.json"),
            Settings::default(),
            Arc::clone(&outbox),
        )
        .with_clock(clock);
        World {
            _watchdog: Watchdog::start(
                Duration::from_secs(180),
                "a pass never ended: the fake Keycloak or the fake runtime did not answer",
            ),
            setup,
            outbox,
            runner,
        }
    }

    /// Runs `n` passes, the clock advancing `every` after each.
    pub async fn passes(&mut self, n: usize, every: Duration) {
        mesh_sdk::testing::passes(&mut self.runner, n, every).await;
    }

    /// Every event published since the last call: (kind, body), oldest first.
    pub fn published(&self) -> Vec<(String, Value)> {
        testing::drain(&self.outbox)
    }
}

/// Minutes between `T0` and the time in `field` of `body`.
pub fn minutes(body: &Value, field: &str) -> u64 {
    mesh_sdk::internals::minutes_since(Timestamp::parse(T0).unwrap(), body, field)
}
