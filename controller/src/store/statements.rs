//! The write statements, prepared once on each connection and kept with it;
//! a round runs them. Below both the connection and the round, so the two
//! import it and not each other.

use tokio_postgres::{Client, Statement};

use super::columns::{
    RECOVERED, UPSERT_ALIVE, UPSERT_FAILING, UPSERT_GRANT, UPSERT_REPAIR, UPSERT_RETIREMENT,
};
use super::history::HistoryStatements;
use super::locks::LOCK_KEYS;

/// The prepared write statements.
pub(super) struct Statements {
    pub(super) lock: Statement,
    pub(super) failing: Statement,
    pub(super) recovered: Statement,
    pub(super) repair: Statement,
    pub(super) retirement: Statement,
    pub(super) alive: Statement,
    pub(super) grant: Statement,
    pub(super) history: HistoryStatements,
}

impl Statements {
    /// Prepares them on `client`.
    pub(super) async fn prepare(client: &Client) -> Result<Statements, tokio_postgres::Error> {
        Ok(Statements {
            lock: client.prepare(LOCK_KEYS).await?,
            failing: client.prepare(&UPSERT_FAILING).await?,
            recovered: client.prepare(&RECOVERED).await?,
            repair: client.prepare(&UPSERT_REPAIR).await?,
            retirement: client.prepare(&UPSERT_RETIREMENT).await?,
            alive: client.prepare(&UPSERT_ALIVE).await?,
            grant: client.prepare(&UPSERT_GRANT).await?,
            history: HistoryStatements::prepare(client).await?,
        })
    }
}
