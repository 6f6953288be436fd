//! The store's schema: the numbered migrations of `controller/migrations/`,
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

/// Applies the migrations that are not applied yet; returns how many were.
/// A second controller migrating the same store at once waits for the first.
///
/// # Errors
/// [`PgError`] when the store cannot be reached or a migration fails.
pub async fn migrate(options: &DatabaseOptions) -> Result<usize, PgError> {
    let mut client = connect_client(options).await?;
    let target = || options.shown.clone();
    client
        .execute("SELECT pg_advisory_lock($1)", &[&MIGRATION_LOCK])
        .await
        .map_err(|source| classify(target(), source))?;
    let report = embedded::migrations::runner()
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
