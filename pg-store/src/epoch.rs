//! The epoch of each event stream the controller follows (table
//! `stream_epoch`): a stream made anew starts its sequence again at 1, so an
//! event's place in the stream is `(epoch, sequence)`.

use std::time::SystemTime;

use tokio_postgres::types::ToSql;

use super::connection::{PgStore, STATEMENT_TIMEOUT};
use super::PgError;

/// Registers the stream `stream` made at `created` (the server's creation
/// time, which tells two streams of one name apart) once, and returns its
/// epoch: the number of streams met before it, plus one.
const REGISTER: &str = "
INSERT INTO stream_epoch (stream, created) VALUES ($1, $2)
ON CONFLICT (stream, created) DO UPDATE SET stream = EXCLUDED.stream
RETURNING epoch";

impl PgStore {
    /// The epoch of the stream `stream` made at `created`, registered now
    /// when it is met for the first time.
    ///
    /// # Errors
    /// [`PgError`] when the store is away or refuses.
    pub async fn register_stream(
        &mut self,
        stream: &str,
        created: SystemTime,
    ) -> Result<u64, PgError> {
        let client = &self.connected().await?.client;
        let params: [&(dyn ToSql + Sync); 2] = [&stream, &created];
        let outcome =
            tokio::time::timeout(STATEMENT_TIMEOUT, client.query_one(REGISTER, &params)).await;
        let row = self.settle(outcome, STATEMENT_TIMEOUT)?;
        Ok(u64::try_from(row.get::<_, i64>(0)).unwrap_or(0))
    }
}
