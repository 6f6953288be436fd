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
