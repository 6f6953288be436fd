//! Shared by the provider's tests: a loop world (contributions file, secret
//! files, outbox, runner) over a real private PostgreSQL.
//!
//! These tests run on real time, not tokio's paused clock: with a timer
//! pending (the loop bounds every call with one), a paused runtime that
//! waits on real I/O jumps its clock to that timer, so every call to a real
//! server would time out at once.
#![allow(dead_code)] // each test binary uses its own part

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use mesh_provider_postgres::{PostgresConfig, PostgresProvisioner, PROVISION};
use mesh_sdk::testing::Outbox;
use mesh_sdk::testing::{self, PassReport, Runner, Settings};
use mesh_sdk::Name;
use mesh_test_support::PgCluster;
use serde_json::{json, Value};

/// A valid name.
pub fn name(text: &str) -> Name {
    Name::parse(text).unwrap()
}

/// The configuration the binary would build for this cluster: the admin URL
/// without password, the password from the cluster's password file.
pub fn config(pg: &PgCluster) -> PostgresConfig {
    let password =
        mesh_sdk::Secret::from_file(&pg.superuser_password_file(), "admin password").unwrap();
    PostgresConfig::new(&pg.admin_url(), Some(password))
        .unwrap()
        .with_consumer_address(None, None)
        .unwrap()
        .with_connect_timeout(Duration::from_secs(5))
        .with_statement_timeout(Duration::from_secs(10))
}

/// A provisioner for this cluster as its superuser.
pub fn provisioner(pg: &PgCluster) -> PostgresProvisioner {
    PostgresProvisioner::new(config(pg))
}

/// Awaits `future`, failing the test with `what` if it takes over a minute.
pub async fn within<T>(what: &str, future: impl Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(60), future)
        .await
        .unwrap_or_else(|_| panic!("{what} took over a minute: is the test PostgreSQL stuck?"))
}

/// The provider instance the tests' [`World`] is: `postgres@db-1`.
pub fn provider() -> mesh_sdk::ModuleId {
    "postgres@db-1".parse().unwrap()
}

/// A provider `postgres@db-1` over a real cluster, driven pass by pass.
pub struct World {
    /// The instance it is, `(module, machine)`.
    pub instance: (&'static str, &'static str),
    pub dir: tempfile::TempDir,
    pub outbox: Arc<Outbox>,
    pub runner: Runner<PostgresProvisioner>,
}

impl World {
    /// A world listing `consumers` (name, minted secret).
    pub fn new(
        provisioner: PostgresProvisioner,
        consumers: &[(&str, &str)],
        settings: Settings,
    ) -> World {
        World::of(("postgres", "db-1"), provisioner, consumers, settings)
    }

    /// The world of the instance `module@machine` listing `consumers`.
    pub fn of(
        instance: (&'static str, &'static str),
        provisioner: PostgresProvisioner,
        consumers: &[(&str, &str)],
        settings: Settings,
    ) -> World {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("secrets")).unwrap();
        let outbox = Arc::new(Outbox::new());
        let runner = Runner::new(
            provisioner,
            dir.path().join("contributions.json"),
            settings,
            Arc::clone(&outbox),
        );
        let world = World {
            instance,
            dir,
            outbox,
            runner,
        };
        for (consumer, secret) in consumers {
            world.secret(consumer, secret);
        }
        let names: Vec<&str> = consumers.iter().map(|(c, _)| *c).collect();
        world.list(&names);
        world
    }

    /// Writes the minted secret of `consumer` (with a trailing newline, as minted files have).
    pub fn secret(&self, consumer: &str, secret: &str) {
        let path = self.dir.path().join("secrets").join(consumer);
        std::fs::write(path, format!("{secret}\n")).unwrap();
    }

    /// Writes the contributions file listing `consumers` (secret files `secrets/<name>`).
    pub fn list(&self, consumers: &[&str]) {
        let path = self.dir.path().join("contributions.json");
        testing::write_contributions(&path, self.instance, PROVISION, consumers);
    }

    /// Writes the contributions file with these raw consumer entries.
    pub fn list_entries(&self, entries: Vec<Value>) {
        let (module, machine) = self.instance;
        let file =
            json!({"provider": {"module": module, "machine": machine}, "consumers": entries});
        std::fs::write(self.dir.path().join("contributions.json"), file.to_string()).unwrap();
    }

    /// Runs one pass.
    pub async fn pass(&mut self) -> PassReport {
        within("a pass", self.runner.pass()).await
    }

    /// Takes every event published so far: (kind, body).
    pub fn published(&self) -> Vec<(String, Value)> {
        testing::drain(&self.outbox)
    }

    /// The failure class and message of a consumer's standing, if failing.
    pub fn failure(&self, consumer: &str) -> Option<(String, String)> {
        let standing = self.runner.standing(&name(consumer))?;
        standing
            .failure()
            .map(|f| (f.detail.class.to_string(), f.detail.error.clone()))
    }

    /// `mesh_provisions_mended_total` as the runner's `/metrics` shows it.
    pub fn mended(&self) -> u64 {
        testing::mended_total(&self.runner, &self.outbox)
    }
}

/// `kind:consumer:reason|action|class` of each event, sorted.
pub fn kinds(published: &[(String, Value)]) -> Vec<String> {
    let mut out = testing::kinds(published);
    out.sort();
    out
}

/// Logs in over TCP as `user` to `dbname` with `password`, as a consumer would.
pub async fn login(
    pg: &PgCluster,
    user: &str,
    password: &str,
    dbname: &str,
) -> Result<tokio_postgres::Client, tokio_postgres::Error> {
    let mut config = tokio_postgres::Config::new();
    config
        .host(pg.host())
        .port(pg.port())
        .user(user)
        .password(password)
        .dbname(dbname)
        .connect_timeout(Duration::from_secs(5));
    let (client, connection) = within("a login", config.connect(tokio_postgres::NoTls)).await?;
    tokio::spawn(async move {
        let _ = connection.await;
    });
    Ok(client)
}

/// The part of the server log written after `from` bytes.
pub fn log_since(pg: &PgCluster, from: usize) -> String {
    let log = pg.log();
    log.get(from..).unwrap_or_default().to_owned()
}

/// Whether a role `name` can log in (`None`: no such role), and whether a
/// database `name` exists, as the superuser `admin` sees them.
pub async fn role_and_database(admin: &tokio_postgres::Client, name: &str) -> (Option<bool>, bool) {
    let row = admin
        .query_one(
            "SELECT (SELECT rolcanlogin FROM pg_roles WHERE rolname = $1),
                    EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)",
            &[&name],
        )
        .await
        .unwrap();
    (row.get(0), row.get(1))
}

/// Waits (within a minute) until the server has ended `session`.
pub async fn session_ended(session: &tokio_postgres::Client) {
    within("the session to be ended", async {
        while session.simple_query("SELECT 1").await.is_ok() {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
}
