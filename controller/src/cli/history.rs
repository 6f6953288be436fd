//! `mesh-controller history`: the transitions the store kept, read through
//! the engine's history report (`mesh_status::report::history`) and
//! printed by its renderers (`mesh_status::render::history`).

use std::io::Write;
use std::time::Duration;

use mesh_protocol::Timestamp;
use mesh_status::render::history::{human, json, HistoryReport};
use mesh_status::report::history::{entries, summaries, window_start};
use mesh_status::store::HistoryFilter;

use super::error::CliError;
use super::Cli;
use mesh_pg_store::PgStore;

/// Reads the history `filter` selects from `since` before now (`now`,
/// then the store's clock) and prints it on `out` (`json` or for a person). `filter.since` is
/// replaced by that start.
///
/// # Errors
/// [`CliError::Read`] when the store cannot be read (exit 2),
/// [`CliError::Output`] when printing fails.
pub(super) async fn run(
    cli: &Cli,
    out: &mut dyn Write,
    now: Timestamp,
    mut filter: HistoryFilter,
    since: Duration,
    as_json: bool,
) -> Result<(), CliError> {
    let mut store = PgStore::new(cli.database_options()?);
    filter.since = window_start(now, since);
    let (rows, now) = store.read_history(&filter).await.map_err(CliError::Read)?;
    let entries = entries(&rows, now);
    let start = window_start(now, since);
    let report = HistoryReport {
        since: start,
        now,
        consumers: summaries(&entries, start, now),
        entries,
    };
    let write = if as_json { json } else { human };
    write(out, &report).map_err(CliError::Output)
}
