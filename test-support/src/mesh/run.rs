//! Starting and stopping the binaries of a [`Mesh`], each with its bus
//! flags and the short timings of these runs.

use std::ffi::OsString;
use std::path::Path;
use std::process::Command;

use super::{
    binary, BusAuth, Mesh, Process, FAILING_AFTER, GRANTS_CHECK_EVERY, GRANTS_UNREACHABLE_AFTER,
    IDENTITY_PASS_EVERY, IDENTITY_REPAIR_CHECK_EVERY, POSTGRES_PASS_EVERY, SERVE_STATUS_EVERY,
};

impl Mesh {
    /// `binary` with this mesh's store (as its owner) and declaration.
    fn store_command(&self, binary_name: &str) -> Command {
        let mut command = Command::new(binary(binary_name));
        command
            .arg("--database")
            .arg(&self.store_url)
            .arg("--database-password-file")
            .arg(self.store.superuser_password_file())
            .arg("--declaration")
            .arg(self.path("declaration.json"));
        command
    }

    fn controller_command(&self) -> Command {
        let mut command = self.store_command("mesh-controller");
        command.args(self.bus_flags("controller"));
        command
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

    /// Starts `mesh-controller serve` (log `controller.log`), its metrics
    /// at [`Mesh::serve_metrics_port`], its status gauges made every
    /// [`SERVE_STATUS_EVERY`].
    pub fn start_controller(&mut self) {
        let mut command = self.controller_command();
        command
            .arg("serve")
            .arg("--metrics-listen")
            .arg(format!("127.0.0.1:{}", self.serve_metrics_port))
            .args(["--status-every", SERVE_STATUS_EVERY])
            .env("RUST_LOG", self.log_level);
        self.controller = Some(Process::spawn(
            "controller",
            command,
            self.path("controller.log"),
        ));
    }

    /// Starts `mesh-console` on `127.0.0.1:port` over this mesh's store
    /// and declaration (log `console.log`); the caller keeps it (stopped
    /// on drop).
    pub fn start_console(&self, port: u16) -> Process {
        let mut command = self.store_command("mesh-console");
        command
            .arg("--listen")
            .arg(format!("127.0.0.1:{port}"))
            .env("RUST_LOG", self.log_level);
        Process::spawn("console", command, self.path("console.log"))
    }

    /// Starts `mesh-console` on `127.0.0.1:port` as [`Mesh::start_console`]
    /// does, asking for the tokens in `token_file` and asking providers
    /// for approvals on the bus as [`CONSOLE_USER`](super::CONSOLE_USER)
    /// (`--approvals`, each waiting at most 10 s).
    pub fn start_acting_console(&self, port: u16, token_file: &Path) -> Process {
        let mut command = self.store_command("mesh-console");
        command
            .arg("--listen")
            .arg(format!("127.0.0.1:{port}"))
            .arg("--token-file")
            .arg(token_file)
            .args(["--approvals", "--approve-timeout", "10s"])
            .args(self.bus_flags(super::CONSOLE_USER))
            .env("RUST_LOG", self.log_level);
        Process::spawn("console", command, self.path("console.log"))
    }

    /// Stops `mesh-controller serve` (SIGTERM), if it runs.
    pub fn stop_controller(&mut self) {
        if let Some(mut p) = self.controller.take() {
            p.stop();
        }
    }

    /// Kills `mesh-controller serve` with SIGKILL: it records nothing more.
    pub fn kill_controller(&mut self) {
        if let Some(mut p) = self.controller.take() {
            p.kill();
        }
    }

    /// Drops the controller's store (the database `mesh_store`, with every
    /// session in it) and makes it again, empty: as an operator who lost it
    /// would. `serve` migrates it when it starts.
    ///
    /// # Panics
    /// When the store's server does not answer.
    pub fn drop_store(&self) {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let admin = self.store.connect_admin().await;
            admin
                .batch_execute("DROP DATABASE mesh_store WITH (FORCE)")
                .await
                .expect("dropping the store");
            self.store.create_database("mesh_store").await;
        });
    }

    /// The short timings every provider of these tests runs with, a pass
    /// every `pass_every`.
    pub(super) fn provider_timings(&self, pass_every: &str) -> Vec<String> {
        [
            "--pass-every",
            pass_every,
            "--failing-after",
            &humantime::format_duration(FAILING_AFTER).to_string(),
            "--repeat-every",
            self.repeat_every,
            "--alive-every",
            self.alive_every,
            "--ack-timeout",
            "1s",
        ]
        .map(str::to_owned)
        .to_vec()
    }

    /// Starts `mesh-postgres` as `postgres@db-1` (`--provider`, as the
    /// shipped env file sets it) on `contributions.json`
    /// (log `provider.log`): a pass every [`POSTGRES_PASS_EVERY`], short
    /// timings, a consumer retired after 3 passes (and
    /// [`Options::retire_after`](super::Options::retire_after), an hour by default).
    pub fn start_provider(&mut self) {
        let mut command = Command::new(binary("mesh-postgres"));
        command
            .arg("--admin-url")
            .arg(self.backend.admin_url())
            .arg("--admin-password-file")
            .arg(self.backend.superuser_password_file())
            .arg("--contributions")
            .arg(self.path("contributions.json"))
            .args(["--provider", "postgres@db-1"])
            .args(self.bus_flags("postgres@db-1"))
            .args(self.provider_timings(POSTGRES_PASS_EVERY))
            .args([
                "--retire-after-passes",
                "3",
                "--retire-after",
                self.retire_after,
            ])
            .env("RUST_LOG", self.log_level);
        self.provider = Some(Process::spawn(
            "provider",
            command,
            self.path("provider.log"),
        ));
    }

    /// Stops `mesh-postgres` (SIGTERM), if it runs.
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
    /// of `machine` (`_grants@<machine>`, told `--machine`), checking every
    /// [`GRANTS_CHECK_EVERY`] and saying a grant unreachable after
    /// [`GRANTS_UNREACHABLE_AFTER`] failed checks.
    pub fn start_grants(&mut self, machine: &str, file: &Path) {
        let mut command = Command::new(binary("mesh-grants"));
        command
            .arg("--grants")
            .arg(file)
            .args(["--machine", machine])
            .args(self.bus_flags(&format!("_grants@{machine}")))
            .args([
                "--check-every",
                GRANTS_CHECK_EVERY,
                "--unreachable-after",
                GRANTS_UNREACHABLE_AFTER,
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

    /// `mesh-identity`'s flags for reaching the Keycloak at `url`, realm
    /// `realm`, as administrator `admin` of realm `master` whose password is
    /// in `password_file`, with short repair timings (a repair check every
    /// [`IDENTITY_REPAIR_CHECK_EVERY`], a login hold of 1 s to 2 s, a
    /// `kc.sh bootstrap-admin` given 200 s): what [`Mesh::start_identity`]
    /// gets, with `--kc-sh` or not.
    pub fn identity_flags(
        url: &str,
        realm: &str,
        admin: &str,
        password_file: &Path,
    ) -> Vec<OsString> {
        [
            "--keycloak-url",
            url,
            "--realm",
            realm,
            "--admin-user",
            admin,
            "--repair-check-every",
            IDENTITY_REPAIR_CHECK_EVERY,
            "--repair-brake",
            "1m",
            "--admin-login-hold",
            "1s",
            "--admin-login-hold-max",
            "2s",
            "--bootstrap-timeout",
            "200s",
            "--repair-timeout",
            "220s",
            "--call-timeout",
            "20s",
        ]
        .iter()
        .map(OsString::from)
        .chain(["--admin-password-file".into(), password_file.into()])
        .collect()
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
            .args(self.provider_timings(IDENTITY_PASS_EVERY))
            .env("RUST_LOG", self.log_level)
            .envs(env.iter().map(|(k, v)| (k, v)));
        self.identity = Some(Process::spawn(
            "identity",
            command,
            self.path("identity.log"),
        ));
    }

    /// Stops `mesh-grants` (SIGTERM), if it runs.
    pub fn stop_grants(&mut self) {
        if let Some(mut p) = self.grants.take() {
            p.stop();
        }
    }
}
