//! The administrator's session: one connection, kept and shared by every
//! call (tokio-postgres pipelines concurrent statements on it), made again
//! when it is closed or a statement finds it gone, every login and every
//! statement bounded by a timeout. A failed login is repeated to the callers
//! queued behind it for as long as it took, so a server that does not answer
//! costs a pass one connect timeout, not one per consumer.

use std::future::Future;
use std::sync::Arc;

use mesh_sdk::Class;
use tokio::sync::Mutex;
use tokio::time::{timeout, Instant};
use tokio_postgres::error::SqlState;
use tokio_postgres::{Client, NoTls, Row, Statement};

use crate::classify::{self, Step};
use crate::config::PostgresConfig;
use crate::error::PgError;
use crate::plan::{DatabaseFound, Found, RoleFound};
use crate::sql;

/// The kept administrator session.
pub(crate) struct Admin {
    config: Arc<PostgresConfig>,
    slot: Mutex<Slot>,
}

/// The kept session, or the last failed login.
#[derive(Default)]
struct Slot {
    session: Option<Arc<Session>>,
    failed: Option<Failed>,
}

/// A failed login, repeated to callers until `until` (as long after the
/// failure as the login took): callers that queued behind a login to a
/// server that does not answer fail at once instead of each waiting for the
/// connect timeout in turn, and a server that refuses at once is asked again
/// at once.
struct Failed {
    until: Instant,
    class: Class,
    words: String,
}

/// One administrator session and the lookup prepared on it (parsed and
/// planned once per session, not once per consumer and pass).
pub(crate) struct Session {
    client: Client,
    find: Statement,
}

impl Admin {
    /// No session yet: the first call logs in.
    pub(crate) fn new(config: Arc<PostgresConfig>) -> Admin {
        Admin {
            config,
            slot: Mutex::new(Slot::default()),
        }
    }

    /// The kept session, logging in again when it is closed. Callers wait
    /// for one login rather than each making their own.
    async fn session(&self) -> Result<Arc<Session>, PgError> {
        let mut slot = self.slot.lock().await;
        if let Some(session) = slot.session.as_ref() {
            if !session.client.is_closed() {
                return Ok(Arc::clone(session));
            }
        }
        slot.session = None;
        if let Some(failed) = slot.failed.as_ref().filter(|f| Instant::now() < f.until) {
            return Err(PgError::AdminUnavailable {
                words: failed.words.clone(),
                class: failed.class,
            });
        }
        let started = Instant::now();
        match self.connect().await {
            Ok(session) => {
                let session = Arc::new(session);
                slot.session = Some(Arc::clone(&session));
                slot.failed = None;
                Ok(session)
            }
            Err(error) => {
                slot.failed = Some(Failed {
                    until: Instant::now() + started.elapsed(),
                    class: classify::classify(&error),
                    words: mesh_sdk::internal::error_words(&error),
                });
                Err(error)
            }
        }
    }

    /// Drops the kept session if it is still `session`.
    async fn forget(&self, session: &Arc<Session>) {
        let mut slot = self.slot.lock().await;
        if slot
            .session
            .as_ref()
            .is_some_and(|kept| Arc::ptr_eq(kept, session))
        {
            slot.session = None;
        }
    }

    async fn connect(&self) -> Result<Session, PgError> {
        let admin = self.config.admin_shown();
        let after = self.config.connect_timeout();
        let (client, connection) = match timeout(after, self.config.admin().connect(NoTls)).await {
            Ok(Ok(pair)) => pair,
            Ok(Err(source)) => {
                return Err(PgError::AdminConnect {
                    admin: admin.to_owned(),
                    source,
                })
            }
            Err(_) => {
                return Err(PgError::AdminTimeout {
                    admin: admin.to_owned(),
                    after: humantime::format_duration(after).to_string(),
                })
            }
        };
        tokio::spawn(async move {
            if let Err(error) = connection.await {
                let words = mesh_sdk::internal::error_words(&error);
                tracing::warn!(error = %words, "the administrator's session ended");
            }
        });
        self.ensure_marker(&client).await?;
        let find = self
            .bounded("preparing the lookup of roles and databases", async {
                client.prepare(sql::FIND).await
            })
            .await?;
        tracing::info!(admin = %admin, "logged in as the administrator");
        Ok(Session { client, find })
    }

    /// Makes the marker role if it is missing; refuses one that can log in
    /// or is a superuser (it would not be the provider's).
    async fn ensure_marker(&self, client: &Client) -> Result<(), PgError> {
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
                    (_, true) => Err(PgError::MarkerUnusable {
                        why: "it is a superuser",
                    }),
                    (true, _) => Err(PgError::MarkerUnusable {
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
                // Another provider made it meanwhile: look again.
                Err(PgError::Statement { source, .. })
                    if source.code() == Some(&SqlState::DUPLICATE_OBJECT) => {}
                Err(error) => return Err(error),
            }
        }
        Err(PgError::MarkerUnusable {
            why: "it keeps appearing and disappearing",
        })
    }

    /// Runs one statement on a given session, bounded by the statement timeout.
    async fn bounded<T>(
        &self,
        what: &str,
        call: impl Future<Output = Result<T, tokio_postgres::Error>>,
    ) -> Result<T, PgError> {
        let after = self.config.statement_timeout();
        match timeout(after, call).await {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(source)) => Err(PgError::Statement {
                what: what.to_owned(),
                source,
            }),
            Err(_) => Err(PgError::StatementTimeout {
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
    async fn call<T, F, Fut>(&self, what: &str, op: F) -> Result<T, PgError>
    where
        F: Fn(Arc<Session>) -> Fut,
        Fut: Future<Output = Result<T, tokio_postgres::Error>>,
    {
        let mut tried_again = false;
        loop {
            let session = self.session().await?;
            match self.bounded(what, op(Arc::clone(&session))).await {
                Ok(value) => return Ok(value),
                Err(PgError::Statement { source, what })
                    if classify::postgres(&source, Step::Statement) == Class::Unreachable =>
                {
                    self.forget(&session).await;
                    if tried_again {
                        return Err(PgError::Statement { source, what });
                    }
                    tracing::info!(error = %mesh_sdk::internal::error_words(&source), "the administrator's session is gone; logging in again");
                    tried_again = true;
                }
                Err(error @ PgError::StatementTimeout { .. }) => {
                    // A session that does not answer may be wedged: the next call makes a new one.
                    self.forget(&session).await;
                    return Err(error);
                }
                Err(error) => return Err(error),
            }
        }
    }

    /// Runs statements (simple protocol, one implicit transaction).
    pub(crate) async fn batch(&self, what: &str, statements: &str) -> Result<(), PgError> {
        self.call(what, |session| async move {
            session.client.batch_execute(statements).await
        })
        .await
    }

    /// What the backend holds under `name`.
    pub(crate) async fn find(&self, name: &str) -> Result<Found, PgError> {
        let what = format!("looking up role and database \"{name}\"");
        let rows = self
            .call(&what, |session| async move {
                session.client.query(&session.find, &[&name]).await
            })
            .await?;
        let Some(row) = rows.first() else {
            return Ok(Found::default());
        };
        let role = get::<bool>(row, 0, &what)?.then(|| -> Result<RoleFound, PgError> {
            Ok(RoleFound {
                can_login: get(row, 1, &what)?,
                superuser: get(row, 2, &what)?,
                marked: get(row, 3, &what)?,
            })
        });
        let database = get::<bool>(row, 4, &what)?.then(|| -> Result<DatabaseFound, PgError> {
            Ok(DatabaseFound {
                owned_by_role: get(row, 5, &what)?,
                comment: get(row, 6, &what)?,
            })
        });
        Ok(Found {
            role: role.transpose()?,
            database: database.transpose()?,
        })
    }

    /// Every role marked as the provider's: (name, can log in).
    pub(crate) async fn held(&self) -> Result<Vec<(String, bool)>, PgError> {
        let what = "listing the roles marked mesh_provisioned";
        let rows = self
            .call(what, |session| async move {
                session.client.query(sql::HELD, &[]).await
            })
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
) -> Result<T, PgError> {
    row.try_get(index).map_err(|source| PgError::Statement {
        what: what.to_owned(),
        source,
    })
}
