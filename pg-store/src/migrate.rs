//! The store's schema: the numbered migrations of `pg-store/migrations/`,
//! applied under an advisory lock so that two controllers starting at once
//! take turns instead of racing.

use super::connection::{classify, connect_client};
use super::options::DatabaseOptions;
use super::PgError;

mod embedded {
    refinery::embed_migrations!("migrations");
}

/// The advisory lock key the migrations are applied under ("mesh" in ASCII).
const MIGRATION_LOCK: i64 = 0x6d65_7368;

/// How long one wait for the migration lock lasts before `serve` says
/// again who holds it.
const LOCK_WAIT: &str = "30s";

/// Applies the migrations that are not applied yet; returns how many were.
/// A store already up to date is left alone, without the lock: nothing
/// that holds it (another controller migrating, or any session of any role,
/// the reader's too) stalls a start that has nothing to apply. Else a second
/// controller migrating the same store at once waits for the first; while it
/// waits, it says every 30 s which session holds the lock.
///
/// # Errors
/// [`PgError`] when the store cannot be reached or a migration fails.
pub async fn migrate(options: &DatabaseOptions) -> Result<usize, PgError> {
    let mut client = connect_client(options).await?;
    let target = || options.shown.clone();
    let runner = embedded::migrations::runner();
    let latest = runner
        .get_migrations()
        .iter()
        .map(refinery::Migration::version)
        .max();
    let applied = applied_up_to(&client)
        .await
        .map_err(|source| classify(target(), source))?;
    if applied.is_some() && applied >= latest {
        return Ok(0);
    }
    take_lock(&client)
        .await
        .map_err(|source| classify(target(), source))?;
    let report = runner
        .run_async(&mut client)
        .await
        .map_err(|source| PgError::Migrate {
            target: target(),
            source,
        })?;
    // The session ends with the client, which releases the lock too.
    let _ = client
        .execute("SELECT pg_advisory_unlock($1)", &[&MIGRATION_LOCK])
        .await;
    Ok(report.applied_migrations().len())
}

/// The newest migration applied to the store, `None` for a store no
/// migration was applied to.
async fn applied_up_to(
    client: &tokio_postgres::Client,
) -> Result<Option<i32>, tokio_postgres::Error> {
    let kept = client
        .query_one(
            "SELECT to_regclass('refinery_schema_history') IS NOT NULL",
            &[],
        )
        .await?;
    if !kept.try_get::<_, bool>(0)? {
        return Ok(None);
    }
    client
        .query_one("SELECT max(version) FROM refinery_schema_history", &[])
        .await?
        .try_get(0)
}

/// Who holds the migration lock, as a person reads it (none: it was let go).
async fn lock_holder(client: &tokio_postgres::Client) -> Option<String> {
    let row = client
        .query_opt(
            "SELECT a.pid, coalesce(a.usename::text, '?'), coalesce(a.application_name, '')
             FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
             WHERE l.locktype = 'advisory' AND l.granted
               AND l.classid = ($1::int8 >> 32)::oid AND l.objid = ($1::int8 & 4294967295)::oid
               AND l.objsubid = 1
             LIMIT 1",
            &[&MIGRATION_LOCK],
        )
        .await
        .ok()??;
    let pid: i32 = row.try_get(0).ok()?;
    let user: String = row.try_get(1).ok()?;
    let application: String = row.try_get(2).ok()?;
    Some(match application.as_str() {
        "" => format!("the session of pid {pid} (user {user})"),
        a => format!("the session of pid {pid} (user {user}, application {a})"),
    })
}

/// Takes the migration lock, saying who holds it while it waits.
async fn take_lock(client: &tokio_postgres::Client) -> Result<(), tokio_postgres::Error> {
    let row = client
        .query_one("SELECT pg_try_advisory_lock($1)", &[&MIGRATION_LOCK])
        .await?;
    if row.try_get::<_, bool>(0)? {
        return Ok(());
    }
    let began = std::time::Instant::now();
    client
        .batch_execute(&format!("SET lock_timeout = '{LOCK_WAIT}'"))
        .await?;
    loop {
        let holder = lock_holder(client)
            .await
            .unwrap_or_else(|| "a session that just let go".to_owned());
        tracing::warn!(
            holder = %holder,
            "waiting for the store's migration lock (another mesh-controller migrating, or \
             any session holding advisory lock {MIGRATION_LOCK}): held by {holder}"
        );
        match client
            .execute("SELECT pg_advisory_lock($1)", &[&MIGRATION_LOCK])
            .await
        {
            Ok(_) => break,
            Err(e) if e.code() == Some(&tokio_postgres::error::SqlState::LOCK_NOT_AVAILABLE) => {}
            Err(e) => return Err(e),
        }
    }
    client.batch_execute("RESET lock_timeout").await?;
    tracing::info!(
        waited_seconds = began.elapsed().as_secs(),
        "took the store's migration lock"
    );
    Ok(())
}

/// The PostgreSQL error under a migration's failure, if it was one.
fn postgres_cause(error: &refinery::Error) -> Option<&tokio_postgres::Error> {
    let mut cause: Option<&(dyn std::error::Error + 'static)> =
        std::error::Error::source(error.kind());
    while let Some(now) = cause {
        if let Some(postgres) = now.downcast_ref::<tokio_postgres::Error>() {
            return Some(postgres);
        }
        cause = now.source();
    }
    None
}

/// A failed migration as a person reads it: which migration, and the
/// server's own message (refinery alone says `db error`).
pub(super) fn reason(error: &refinery::Error) -> String {
    match postgres_cause(error) {
        Some(postgres) => format!("{error}: {}", super::reason(postgres)),
        None => error.to_string(),
    }
}

/// Whether the migration may pass when tried again: it lost a deadlock,
/// a serialization conflict or a lock (40P01, 40001, 55P03), or the
/// connection broke (no answer of the server's at all).
pub(super) fn retryable(error: &refinery::Error) -> bool {
    let Some(postgres) = postgres_cause(error) else {
        return false;
    };
    match postgres.code() {
        Some(code) => {
            code == &tokio_postgres::error::SqlState::T_R_DEADLOCK_DETECTED
                || code == &tokio_postgres::error::SqlState::T_R_SERIALIZATION_FAILURE
                || code == &tokio_postgres::error::SqlState::LOCK_NOT_AVAILABLE
        }
        None => true,
    }
}
