//! The administrator's sessions: up to `admin_sessions` connections, each
//! kept and used by one call at a time (PostgreSQL runs one statement at a
//! time on a connection, so more sessions make more roles and databases at
//! once), made again when closed or a statement finds one gone, every login
//! and every statement bounded by a timeout. Every login reads the
//! administrator's password file again (a rotation needs no restart), and
//! listing what the provider holds logs in afresh once a pass: a kept
//! session outlives a changed password, a new login does not. A failed login is repeated to
//! the callers that come after it for as long as it took, so a server that
//! does not answer costs a pass one connect timeout, not one per consumer.

use std::future::Future;
use std::sync::Arc;

use mesh_sdk::{Class, ModuleId, Secret, SecretFile};
use tokio::sync::{Mutex, Semaphore};
use tokio::time::{timeout, Instant};
use tokio_postgres::error::SqlState;
use tokio_postgres::{Client, Row, Statement};

use crate::classify::{self, SessionStep};
use crate::config::PostgresConfig;
use crate::error::PostgresError;
use crate::plan::{self, AdminRights, DatabaseFound, Found, RoleFound};
use crate::sql;

/// The administrator's kept sessions.
pub(crate) struct Admin {
    config: Arc<PostgresConfig>,
    /// The administrator's password, read again for each new session.
    password: SecretFile,
    /// One kept session per lane; a lane is used by one call at a time.
    lanes: Vec<Mutex<Option<Arc<Session>>>>,
    /// Lanes no call is using.
    free: std::sync::Mutex<Vec<usize>>,
    /// As many permits as lanes: a call holding one finds a free lane.
    permits: Semaphore,
    /// The last failed login, shared by every lane.
    failed: std::sync::Mutex<Option<Failed>>,
    /// The instances' marker roles this process made or found.
    markers: Mutex<std::collections::HashSet<String>>,
}

/// A failed login, repeated to callers until `until` (as long after the
/// failure as the login took): callers that queued behind a login to a
/// server that does not answer fail at once instead of each waiting for the
/// connect timeout in turn, and a server that refuses at once is asked again
/// at once.
#[derive(Clone)]
struct Failed {
    until: Instant,
    class: Class,
    message: String,
}

/// One administrator session and the lookup prepared on it (parsed and
/// planned once per session, not once per consumer and pass).
pub(crate) struct Session {
    client: Client,
    find: Statement,
}

/// A lane taken by one call, given back when dropped.
struct Lane<'a> {
    admin: &'a Admin,
    index: usize,
}

impl Drop for Lane<'_> {
    fn drop(&mut self) {
        self.admin.free_lanes().push(self.index);
    }
}

impl Admin {
    /// No session yet: the first calls log in, up to `admin_sessions` of them.
    pub(crate) fn new(config: Arc<PostgresConfig>) -> Admin {
        let lanes = config.admin_sessions().max(1);
        Admin {
            lanes: (0..lanes).map(|_| Mutex::new(None)).collect(),
            free: std::sync::Mutex::new((0..lanes).rev().collect()),
            permits: Semaphore::new(lanes),
            failed: std::sync::Mutex::new(None),
            markers: Mutex::default(),
            password: SecretFile::new(
                config.admin_password().cloned(),
                config.admin_password_file().map(Into::into),
                "admin password",
            ),
            config,
        }
    }

    fn free_lanes(&self) -> std::sync::MutexGuard<'_, Vec<usize>> {
        self.free
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn last_failure(&self) -> std::sync::MutexGuard<'_, Option<Failed>> {
        self.failed
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The kept session of `lane`, logging in again when it is closed.
    async fn session(&self, lane: usize) -> Result<Arc<Session>, PostgresError> {
        let mut slot = self.lanes[lane].lock().await;
        if let Some(session) = slot.as_ref() {
            if !session.client.is_closed() {
                return Ok(Arc::clone(session));
            }
        }
        *slot = None;
        let failed = self.last_failure().clone();
        if let Some(failed) = failed.filter(|f| Instant::now() < f.until) {
            return Err(PostgresError::AdminUnavailable {
                message: failed.message,
                class: failed.class,
            });
        }
        let started = Instant::now();
        match self.connect().await {
            Ok(session) => {
                tracing::info!(admin = %self.config.admin_shown(), "logged in as the administrator");
                let session = Arc::new(session);
                *slot = Some(Arc::clone(&session));
                *self.last_failure() = None;
                Ok(session)
            }
            Err(error) => {
                self.failed_since(&error, started);
                Err(error)
            }
        }
    }

    /// A login begun at `started` failed with `error`: repeated to the
    /// callers that come for as long as it took.
    fn failed_since(&self, error: &PostgresError, started: Instant) {
        *self.last_failure() = Some(Failed {
            until: Instant::now() + started.elapsed(),
            class: classify::classify(error),
            message: mesh_sdk::redact::error_text(error),
        });
    }

    /// Drops the kept session of `lane` if it is still `session`.
    async fn forget(&self, lane: usize, session: &Arc<Session>) {
        let mut slot = self.lanes[lane].lock().await;
        if slot.as_ref().is_some_and(|kept| Arc::ptr_eq(kept, session)) {
            *slot = None;
        }
    }

    /// Every administrator's password held lately (the current one among
    /// them): removed from every error text.
    pub(crate) fn secrets(&self) -> Vec<Secret> {
        self.password.known()
    }

    /// A new administrator session: a login, the administrator's
    /// attributes and the marker role checked, the lookup prepared.
    async fn connect(&self) -> Result<Session, PostgresError> {
        let client = self.login().await?;
        self.check_rights(&client).await?;
        self.ensure_marker(&client).await?;
        let find = self
            .bounded("preparing the lookup of roles and databases", async {
                client.prepare(sql::FIND).await
            })
            .await?;
        Ok(Session { client, find })
    }

    /// Logs in as the administrator, the password read again from its file.
    async fn login(&self) -> Result<Client, PostgresError> {
        let admin = self.config.admin_shown();
        let after = self.config.connect_timeout();
        let mut settings = self.config.admin().clone();
        if let (Some(password), _) = self.password.current() {
            settings.password(password.expose());
        }
        let (client, connection) = match timeout(after, settings.connect(self.config.tls())).await {
            Ok(Ok(pair)) => pair,
            Ok(Err(source)) => {
                let refused =
                    source.code() == Some(&tokio_postgres::error::SqlState::INVALID_PASSWORD);
                let restart = match self.password.restart_hint() {
                    Some(hint) if refused => format!("{hint}; "),
                    _ => String::new(),
                };
                return Err(PostgresError::AdminConnect {
                    restart,
                    admin: admin.to_owned(),
                    source,
                });
            }
            Err(_) => {
                return Err(PostgresError::AdminTimeout {
                    admin: admin.to_owned(),
                    after: humantime::format_duration(after).to_string(),
                })
            }
        };
        tokio::spawn(async move {
            if let Err(error) = connection.await {
                let message = mesh_sdk::redact::error_text(&error);
                tracing::warn!(error = %message, "the administrator's session ended");
            }
        });
        Ok(client)
    }

    /// Logs in once, checks the administrator's attributes and the marker
    /// role, and logs out: what the binary does at start, so an
    /// administrator lacking a privilege is named before any consumer fails.
    pub(crate) async fn check(&self) -> Result<(), PostgresError> {
        let session = self.connect().await?;
        drop(session);
        Ok(())
    }

    /// Refuses an administrator that is no superuser and lacks `CREATEROLE`,
    /// `CREATEDB` or `INHERIT` (see [`plan::admin`]).
    async fn check_rights(&self, client: &Client) -> Result<(), PostgresError> {
        let what = "reading the administrator's attributes";
        let row = self
            .bounded(what, async {
                client.query_one(sql::ADMIN_RIGHTS, &[]).await
            })
            .await?;
        let name: String = get(&row, 0, what)?;
        let rights = AdminRights {
            superuser: get(&row, 1, what)?,
            create_role: get(&row, 2, what)?,
            create_db: get(&row, 3, what)?,
            inherit: get(&row, 4, what)?,
        };
        plan::admin(&name, &rights)
    }

    /// Makes the marker role if it is missing; refuses one that can log in
    /// or is a superuser (it would not be the provider's).
    async fn ensure_marker(&self, client: &Client) -> Result<(), PostgresError> {
        for _ in 0..2 {
            let rows = self
                .bounded("looking up the marker role mesh_provisioned", async {
                    client.query(sql::FIND_MARKER, &[]).await
                })
                .await?;
            let what = "reading the marker role mesh_provisioned";
            if let Some(row) = rows.first() {
                let can_login: bool = get(row, 0, what)?;
                let superuser: bool = get(row, 1, what)?;
                return match (can_login, superuser) {
                    (_, true) => Err(PostgresError::MarkerUnusable {
                        why: "it is a superuser",
                    }),
                    (true, _) => Err(PostgresError::MarkerUnusable {
                        why: "it can log in",
                    }),
                    (false, false) => Ok(()),
                };
            }
            let made = self
                .bounded("creating the marker role mesh_provisioned", async {
                    client.batch_execute(&sql::create_marker()).await
                })
                .await;
            match made {
                Ok(()) => {
                    tracing::info!("made the marker role mesh_provisioned");
                    return Ok(());
                }
                // Another session or provider made it meanwhile (two
                // concurrent CREATE ROLE may also meet on the unique index): look again.
                Err(PostgresError::Statement { source, .. })
                    if source.code() == Some(&SqlState::DUPLICATE_OBJECT)
                        || source.code() == Some(&SqlState::UNIQUE_VIOLATION) => {}
                Err(error) => return Err(error),
            }
        }
        Err(PostgresError::MarkerUnusable {
            why: "it keeps appearing and disappearing",
        })
    }

    /// Runs one statement on a given session, bounded by the statement timeout.
    async fn bounded<T>(
        &self,
        what: &str,
        call: impl Future<Output = Result<T, tokio_postgres::Error>>,
    ) -> Result<T, PostgresError> {
        let after = self.config.statement_timeout();
        match timeout(after, call).await {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(source)) => Err(PostgresError::Statement {
                what: what.to_owned(),
                source,
            }),
            Err(_) => Err(PostgresError::StatementTimeout {
                what: what.to_owned(),
                after: humantime::format_duration(after).to_string(),
            }),
        }
    }

    /// Runs `op` on the kept session, bounded by the statement timeout. When
    /// the session turns out to be gone (closed, shut down, reset), it is
    /// dropped and `op` is tried once more on a new one. Every statement the
    /// provider sends is safe to send again: at worst one that did commit
    /// before the session went fails as a duplicate, and the next lookup
    /// finds it made.
    async fn call<T, F, Fut>(&self, what: &str, op: F) -> Result<T, PostgresError>
    where
        F: Fn(Arc<Session>) -> Fut,
        Fut: Future<Output = Result<T, tokio_postgres::Error>>,
    {
        let _permit = self
            .permits
            .acquire()
            .await
            .expect("the permits are never closed");
        let index = self
            .free_lanes()
            .pop()
            .expect("a call holding a permit finds a free lane");
        let lane = Lane { admin: self, index };
        let mut tried_again = false;
        loop {
            let session = self.session(lane.index).await?;
            match self.bounded(what, op(Arc::clone(&session))).await {
                Ok(value) => return Ok(value),
                Err(PostgresError::Statement { source, what })
                    if classify::postgres(&source, SessionStep::Statement)
                        == Class::Unreachable =>
                {
                    self.forget(lane.index, &session).await;
                    if tried_again {
                        return Err(PostgresError::Statement { source, what });
                    }
                    tracing::info!(error = %mesh_sdk::redact::error_text(&source), "the administrator's session is gone; logging in again");
                    tried_again = true;
                }
                Err(error @ PostgresError::StatementTimeout { .. }) => {
                    // A session that does not answer may be wedged: the next call makes a new one.
                    self.forget(lane.index, &session).await;
                    return Err(error);
                }
                Err(error) => return Err(error),
            }
        }
    }

    /// Makes the marker role of `provider` unless this process made or
    /// found it already: once per instance, the first caller making it and
    /// the others waiting, so concurrent first ensures never race on it.
    pub(crate) async fn instance_marker(&self, provider: &ModuleId) -> Result<(), PostgresError> {
        let marker = sql::instance_marker(provider);
        let mut made = self.markers.lock().await;
        if made.contains(&marker) {
            return Ok(());
        }
        let what = format!("making the marker role \"{marker}\" of instance {provider}");
        match self
            .batch(&what, &sql::create_instance_marker(provider))
            .await
        {
            Ok(()) => {}
            // Another process made it meanwhile.
            Err(PostgresError::Statement { source, .. })
                if source.code() == Some(&SqlState::DUPLICATE_OBJECT)
                    || source.code() == Some(&SqlState::UNIQUE_VIOLATION) => {}
            Err(error) => return Err(error),
        }
        made.insert(marker);
        Ok(())
    }

    /// Runs statements (simple protocol, one implicit transaction).
    pub(crate) async fn batch(&self, what: &str, statements: &str) -> Result<(), PostgresError> {
        self.call(what, |session| async move {
            session.client.batch_execute(statements).await
        })
        .await
    }

    /// What the backend holds under `name`, as the instance `provider` sees it.
    pub(crate) async fn find(
        &self,
        name: &str,
        provider: &ModuleId,
    ) -> Result<Found, PostgresError> {
        let what = format!("looking up role and database \"{name}\"");
        let marker = sql::instance_marker(provider);
        let marker = marker.as_str();
        let rows = self
            .call(&what, |session| async move {
                session.client.query(&session.find, &[&name, &marker]).await
            })
            .await?;
        let Some(row) = rows.first() else {
            return Ok(Found::default());
        };
        let role = get::<bool>(row, 0, &what)?.then(|| -> Result<RoleFound, PostgresError> {
            Ok(RoleFound {
                can_login: get(row, 1, &what)?,
                superuser: get(row, 2, &what)?,
                marked: get(row, 3, &what)?,
                own: get(row, 9, &what)?,
                admin_member: get(row, 7, &what)?,
            })
        });
        let database =
            get::<bool>(row, 4, &what)?.then(|| -> Result<DatabaseFound, PostgresError> {
                Ok(DatabaseFound {
                    owned_by_role: get(row, 5, &what)?,
                    comment: get(row, 6, &what)?,
                })
            });
        Ok(Found {
            role: role.transpose()?,
            database: database.transpose()?,
            admin_superuser: get(row, 8, &what)?,
            others: get(row, 10, &what)?,
        })
    }

    /// Every role marked as the provider's: (name, can log in), listed on
    /// a session logged in afresh (and logged out after), the password
    /// read again. A kept session outlives a changed password, so this
    /// one login a pass is what proves the administrator can still log in:
    /// a refused login is noticed within a pass (the loop's provider
    /// fault), and the first that works again clears it and lets the
    /// kept sessions' next logins be tried at once.
    pub(crate) async fn held(
        &self,
        provider: &ModuleId,
    ) -> Result<Vec<(String, bool)>, PostgresError> {
        let what = "listing the roles this instance made";
        let marker = sql::instance_marker(provider);
        let started = Instant::now();
        let client = match self.login().await {
            Ok(client) => client,
            Err(error) => {
                self.failed_since(&error, started);
                return Err(error);
            }
        };
        *self.last_failure() = None;
        let rows = self
            .bounded(what, client.query(sql::HELD, &[&marker]))
            .await?;
        rows.iter()
            .map(|row| Ok((get(row, 0, what)?, get(row, 1, what)?)))
            .collect()
    }
}

/// A column of a row, a decoding failure being the statement's failure.
fn get<'a, T: tokio_postgres::types::FromSql<'a>>(
    row: &'a Row,
    index: usize,
    what: &str,
) -> Result<T, PostgresError> {
    row.try_get(index)
        .map_err(|source| PostgresError::Statement {
            what: what.to_owned(),
            source,
        })
}
