//! [`PostgresProvisioner`]: the [`Provisioner`] the loop drives.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use mesh_sdk::{async_trait, Class, Consumer, Held, ModuleId, Name, Provisioner, Secret, Served};
use tokio::time::timeout;

use crate::admin::Admin;
use crate::config::PostgresConfig;
use crate::error::PostgresError;
use crate::plan::{self, DeletePlan};
use crate::sql;

/// A database and a role per consumer, both named after it, the role owning
/// the database and logging in with the minted secret.
///
/// # What it touches
/// Only what its instance made: every role it makes is a member of the
/// NOLOGIN role `mesh_provisioned` and of its instance's NOLOGIN marker
/// role `mesh_provisioned:<module>@<machine>` (both granted in the same
/// transaction as the role, so a role is never made without them), and
/// its database is owned by that role and commented. It lists, alters,
/// retires and deletes only the roles and databases its own instance made
/// (another instance's are refused, class `refused`, naming it); a role an
/// older version made (`mesh_provisioned` alone) is adopted by the first
/// `ensure` of an instance that lists it; a consumer named like any other role (`postgres`, an
/// application's own role) or database is refused with class `refused` and
/// the other is never altered. Superusers are never managed, even if marked.
///
/// # Per consumer, every pass
/// - `ensure`: one lookup as the administrator; makes the role (password set
///   as a SCRAM verifier computed here, so the plaintext never reaches the
///   server or its logs), then the database, only when missing. A retired
///   role stays retired: re-enabling it is the loop's call. A consumer whose
///   last check passed is not looked up again: the check is the proof.
/// - `check`: logs in *as the consumer* with its minted secret, over TCP to
///   the address consumers use, runs `SELECT 1` and closes. When the login
///   fails and `ensure` skipped its lookup on the strength of an earlier
///   check, the lookup and make-if-missing run now, then a new login. A
///   refused password (28P01) leads to one reset of the role's password to
///   the minted secret, then a new login whose failure is the result. This
///   is how a rotated secret reaches the role; a reset is said in the
///   result, [`Served::Mended`] (the loop counts it a mend, in
///   `mesh_provisions_mended_total`, unless the minted secret rotated).
///
/// A consumer's `options` are not read; a consumer asking for another
/// provision than `postgres-database` is refused.
///
/// # The administrator
/// A superuser, or (the least privilege) a role with `LOGIN CREATEROLE
/// CREATEDB INHERIT`: such an administrator makes itself a member of each
/// role it makes (in the role's own transaction), and of a role it finds
/// made without it before acting as its database's owner, and of no other
/// role. One lacking an attribute is refused with [`PostgresError::AdminLacks`].
///
/// # Retirement
/// `retire` = `NOLOGIN` and the role's sessions ended; `re_enable` =
/// `LOGIN`; `delete` = `DROP DATABASE ... WITH (FORCE)` then `DROP ROLE`.
///
/// ```no_run
/// use mesh_provider_postgres::{PostgresConfig, PostgresProvisioner};
///
/// # async fn example(args: mesh_sdk::ProviderArgs) -> Result<(), Box<dyn std::error::Error>> {
/// let password = mesh_sdk::Secret::from_file("/etc/mesh/pg-admin".as_ref(), "admin password")?;
/// let config = PostgresConfig::new("postgres://postgres@127.0.0.1:5432/postgres", Some(password))?
///     .with_consumer_address(None, None)?;
/// mesh_sdk::run(PostgresProvisioner::new(config), &args).await?;
/// # Ok(())
/// # }
/// ```
pub struct PostgresProvisioner {
    config: Arc<PostgresConfig>,
    admin: Admin,
    /// Consumers whose last check passed, by the instance that found them
    /// its own: that instance's `ensure` does not look them up again (the
    /// check is the proof); any failed check forgets one.
    proven: Mutex<HashSet<(ModuleId, Name)>>,
}

impl std::fmt::Debug for PostgresProvisioner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresProvisioner")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl PostgresProvisioner {
    /// A provisioner for `config`. Nothing is connected until the first call.
    pub fn new(config: PostgresConfig) -> PostgresProvisioner {
        let config = Arc::new(config);
        PostgresProvisioner {
            admin: Admin::new(Arc::clone(&config)),
            config,
            proven: Mutex::new(HashSet::new()),
        }
    }

    /// How it reaches PostgreSQL.
    pub fn config(&self) -> &PostgresConfig {
        &self.config
    }

    /// Logs in as `name` to the database `name` with `secret`, over TCP at
    /// the consumers' address with the admin URL's TLS settings, runs
    /// `SELECT 1` and closes: what a consumer does, and the only proof that
    /// the provision works.
    ///
    /// # Errors
    /// [`PostgresError::Login`] with the server's message, or
    /// [`PostgresError::LoginTimeout`] when login and query take longer than the
    /// connect timeout and the statement timeout.
    pub async fn login(&self, name: &str, secret: &Secret) -> Result<(), PostgresError> {
        let mut config = self.config.consumer_base();
        config.user(name).password(secret.expose()).dbname(name);
        let failed = |source| PostgresError::Login {
            consumer: name.to_owned(),
            address: self.config.consumer_address(),
            source,
        };
        let timed_out = |after| PostgresError::LoginTimeout {
            consumer: name.to_owned(),
            address: self.config.consumer_address(),
            after: humantime::format_duration(after).to_string(),
        };
        let connect_timeout = self.config.connect_timeout();
        let (client, connection) = timeout(connect_timeout, config.connect(self.config.tls()))
            .await
            .map_err(|_| timed_out(connect_timeout))?
            .map_err(failed)?;
        let session = tokio::spawn(connection);
        let statement_timeout = self.config.statement_timeout();
        let answered = timeout(statement_timeout, client.simple_query("SELECT 1")).await;
        // Dropping the client ends the session (Terminate, then close).
        drop(client);
        match answered {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(source)) => Err(failed(source)),
            Err(_) => {
                session.abort();
                Err(timed_out(statement_timeout))
            }
        }
    }

    /// Looks up what the backend holds under `name` and makes what is
    /// missing: the role (with its password and mark, in one transaction),
    /// then the database; refuses what the provider did not make.
    async fn make(
        &self,
        provider: &ModuleId,
        name: &str,
        secret: &Secret,
    ) -> Result<(), PostgresError> {
        let found = self.admin.find(name, provider).await?;
        let plan = plan::ensure(name, &found)?;
        if plan.create_role || plan.adopt {
            self.admin.instance_marker(provider).await?;
        }
        if plan.adopt {
            self.admin
                .batch(
                    &format!("adopting role \"{name}\" as {provider}'s"),
                    &sql::adopt(name, provider)?,
                )
                .await?;
            tracing::info!(consumer = %name, provider = %provider, "adopted the role an older version made (marked mesh_provisioned alone): this instance lists it");
        }
        if plan.create_role {
            let statement = sql::create_role(name, &verifier(secret), plan.admin_joins, provider)?;
            self.admin
                .batch(&format!("creating role \"{name}\""), &statement)
                .await?;
            tracing::info!(consumer = %name, marker = %sql::instance_marker(provider), "made the role, marked mesh_provisioned and with the instance's marker");
        } else if plan.admin_joins {
            self.join(name).await?;
        }
        if plan.create_database {
            let statement = sql::create_database(name)?;
            self.admin
                .batch(&format!("creating database \"{name}\""), &statement)
                .await?;
            tracing::info!(consumer = %name, "made the database, owned by the role");
        }
        if plan.finish_database {
            let statement = sql::finish_database(name)?;
            self.admin
                .batch(
                    &format!("closing database \"{name}\" to other roles and commenting it"),
                    &statement,
                )
                .await?;
        }
        Ok(())
    }

    /// Logs in; a refused password leads to one reset and a new login.
    async fn login_or_reset(
        &self,
        provider: &ModuleId,
        name: &str,
        secret: &Secret,
    ) -> Result<Served, PostgresError> {
        match self.login(name, secret).await {
            Ok(()) => Ok(Served::AsIs),
            Err(error) => self.after_refusal(provider, name, secret, error).await,
        }
    }

    /// After a failed login: a refused password (28P01) is reset to the
    /// minted secret once and the login tried again (a mend, said in the
    /// result); anything else is the result.
    async fn after_refusal(
        &self,
        provider: &ModuleId,
        name: &str,
        secret: &Secret,
        error: PostgresError,
    ) -> Result<Served, PostgresError> {
        if !error.is_invalid_password() {
            return Err(error);
        }
        tracing::info!(consumer = %name, "login refused; resetting the role's password to the minted secret once");
        self.reset_password(provider, name, secret).await?;
        self.login(name, secret)
            .await
            .map_err(|error| PostgresError::AfterReset(Box::new(error)))?;
        Ok(Served::mended(
            "the role's password was refused and set to the minted secret",
        ))
    }

    fn proven(&self) -> std::sync::MutexGuard<'_, HashSet<(ModuleId, Name)>> {
        self.proven
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn is_proven(&self, provider: &ModuleId, name: &Name) -> bool {
        self.proven().contains(&(provider.clone(), name.clone()))
    }

    fn prove(&self, provider: &ModuleId, name: &Name) {
        if !self.is_proven(provider, name) {
            self.proven().insert((provider.clone(), name.clone()));
        }
    }

    /// Forgets `provider`'s proof of `name`; whether there was one.
    fn forget(&self, provider: &ModuleId, name: &Name) -> bool {
        self.proven().remove(&(provider.clone(), name.clone()))
    }

    /// Makes the administrator a member of the role `name` (which the
    /// caller found is one the provider made): an administrator that is no
    /// superuser acts as the owner of the role's database through it.
    async fn join(&self, name: &str) -> Result<(), PostgresError> {
        self.admin
            .batch(
                &format!("making the administrator a member of role \"{name}\""),
                &sql::grant_to_admin(name)?,
            )
            .await?;
        tracing::info!(consumer = %name, "made the administrator a member of the role");
        Ok(())
    }

    /// Logs in as the administrator once and checks it may make
    /// provisions: a superuser, or `CREATEROLE CREATEDB INHERIT`. The
    /// binary runs it at start.
    ///
    /// # Errors
    /// [`PostgresError::AdminLacks`] naming what the administrator lacks; the
    /// login's own errors ([`PostgresError::AdminConnect`], [`PostgresError::AdminTimeout`])
    /// when it cannot log in; [`PostgresError::MarkerUnusable`].
    pub async fn check_admin(&self) -> Result<(), PostgresError> {
        self.admin.check().await
    }

    /// Sets the role's password to the minted secret (a verifier computed
    /// here), after making sure the role is one the provider made.
    async fn reset_password(
        &self,
        provider: &ModuleId,
        name: &str,
        secret: &Secret,
    ) -> Result<(), PostgresError> {
        let found = self.admin.find(name, provider).await?;
        plan::alter(name, &found)?;
        let statement = sql::set_password(name, &verifier(secret))?;
        self.admin
            .batch(
                &format!("setting the password of role \"{name}\""),
                &statement,
            )
            .await?;
        tracing::info!(consumer = %name, "set the role's password to the minted secret");
        Ok(())
    }
}

/// The SCRAM-SHA-256 verifier of a secret, with a fresh random salt.
fn verifier(secret: &Secret) -> String {
    postgres_protocol::password::scram_sha_256(secret.expose().as_bytes())
}

#[async_trait]
impl Provisioner for PostgresProvisioner {
    type Error = PostgresError;

    async fn ensure(&self, consumer: &Consumer, secret: &Secret) -> Result<Served, PostgresError> {
        let name = consumer.name.as_str();
        plan::refuse_other_provision(name, &consumer.provision)?;
        plan::refuse_reserved(name)?;
        sql::ident(name)?;
        if !self.is_proven(&consumer.provider, &consumer.name) {
            self.make(&consumer.provider, name, secret).await?;
        }
        Ok(Served::AsIs)
    }

    async fn check(&self, consumer: &Consumer, secret: &Secret) -> Result<Served, PostgresError> {
        let name = consumer.name.as_str();
        let result = match self.login(name, secret).await {
            Ok(()) => Ok(Served::AsIs),
            Err(error) => {
                if self.forget(&consumer.provider, &consumer.name) {
                    // `ensure` trusted an earlier check: look and make what is missing now.
                    match self.make(&consumer.provider, name, secret).await {
                        Ok(()) => self.login_or_reset(&consumer.provider, name, secret).await,
                        Err(error) => Err(error),
                    }
                } else {
                    self.after_refusal(&consumer.provider, name, secret, error)
                        .await
                }
            }
        };
        if result.is_ok() {
            self.prove(&consumer.provider, &consumer.name);
        }
        result
    }

    /// The roles `provider` made: members of its marker role (and of
    /// `mesh_provisioned`), and of no other instance's.
    async fn held(&self, provider: &ModuleId) -> Result<Vec<Held>, PostgresError> {
        let roles = self.admin.held(provider).await?;
        let mut held = Vec::with_capacity(roles.len());
        for (role, can_login) in roles {
            match Name::parse(&role) {
                Ok(name) => held.push(Held {
                    name,
                    retired: !can_login,
                }),
                Err(error) => {
                    tracing::warn!(error = %error, "a role marked mesh_provisioned has a name mesh never gives; it is ignored")
                }
            }
        }
        Ok(held)
    }

    async fn retire(&self, provider: &ModuleId, consumer: &Name) -> Result<(), PostgresError> {
        self.forget(provider, consumer);
        let name = consumer.as_str();
        let statement = sql::retire(name)?;
        let found = self.admin.find(name, provider).await?;
        if plan::retire(name, &found)? {
            self.join(name).await?;
        }
        self.admin
            .batch(
                &format!("retiring role \"{name}\" (NOLOGIN, sessions ended)"),
                &statement,
            )
            .await?;
        tracing::info!(consumer = %name, "role set NOLOGIN and its sessions ended");
        Ok(())
    }

    async fn re_enable(&self, provider: &ModuleId, consumer: &Name) -> Result<(), PostgresError> {
        self.forget(provider, consumer);
        let name = consumer.as_str();
        let statement = sql::re_enable(name)?;
        let found = self.admin.find(name, provider).await?;
        plan::alter(name, &found)?;
        self.admin
            .batch(&format!("enabling role \"{name}\" again"), &statement)
            .await?;
        tracing::info!(consumer = %name, "role set LOGIN again");
        Ok(())
    }

    async fn delete(&self, provider: &ModuleId, consumer: &Name) -> Result<(), PostgresError> {
        self.forget(provider, consumer);
        let name = consumer.as_str();
        let (drop_database, drop_role) = (sql::drop_database(name)?, sql::drop_role(name)?);
        let found = self.admin.find(name, provider).await?;
        match plan::delete(name, &found)? {
            DeletePlan::Nothing => {
                tracing::info!(consumer = %name, "nothing to delete: no such role");
                return Ok(());
            }
            DeletePlan::DropBoth { admin_joins } => {
                if admin_joins {
                    self.join(name).await?;
                }
                self.admin
                    .batch(
                        &format!("dropping database \"{name}\" (its sessions ended)"),
                        &drop_database,
                    )
                    .await?;
                tracing::info!(consumer = %name, "dropped the database");
            }
            DeletePlan::DropRole => {}
        }
        self.admin
            .batch(&format!("dropping role \"{name}\""), &drop_role)
            .await?;
        tracing::info!(consumer = %name, "dropped the role");
        Ok(())
    }

    fn classify(&self, error: &PostgresError) -> Option<Class> {
        Some(crate::classify::classify(error))
    }

    fn secrets(&self) -> Vec<Secret> {
        self.admin.secrets()
    }
}
