//! `mesh-controller why CONSUMER[@MACHINE]`: one verdict on one consumer,
//! from the same read `status` makes (narrowed to its providers and to it)
//! and its history, joined by the engine (`mesh_status::report::why`).

use std::io::Write;
use std::time::Duration;

use mesh_protocol::{ModuleId, Name, Timestamp};
use mesh_status::model::ParsedDeclaration;
use mesh_status::render::why::{human, json};
use mesh_status::report::history::{entries, window_start};
use mesh_status::report::why::{why, WhyInput};
use mesh_status::report::{self, Clock, Scope};
use mesh_status::store::{HistoryFilter, Order};

use super::error::CliError;
use super::Cli;
use mesh_pg_store::PgStore;

/// The module the declaration names `consumer` (on `machine` when given).
///
/// # Errors
/// [`CliError::UnknownConsumer`] when it names none, or several and no
/// machine was given.
pub(super) fn resolve(
    declaration: &ParsedDeclaration,
    consumer: &Name,
    machine: Option<&Name>,
) -> Result<ModuleId, CliError> {
    let found: Vec<&ModuleId> = declaration
        .declaration
        .modules
        .iter()
        .map(|m| &m.id)
        .filter(|id| id.module == *consumer && machine.is_none_or(|m| id.machine == *m))
        .collect();
    match found.as_slice() {
        [one] => Ok((*one).clone()),
        [] => Err(CliError::UnknownConsumer(format!(
            "the declaration names no module {consumer}{}",
            machine.map(|m| format!(" on {m}")).unwrap_or_default()
        ))),
        many => Err(CliError::UnknownConsumer(format!(
            "the declaration names {consumer} on {} machines ({}): say which, as {consumer}@MACHINE",
            many.len(),
            many.iter()
                .map(|id| id.machine.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ))),
    }
}

/// Prints the verdict on `consumer` (`json` or for a person).
///
/// # Errors
/// [`CliError::NotServed`] (exit 1) once the verdict is printed when the
/// consumer is not served; [`CliError::UnknownConsumer`], [`CliError::Read`]
/// when the store cannot be read (exit 2), [`CliError::Output`] when
/// printing fails.
pub(super) async fn run(
    cli: &Cli,
    out: &mut dyn Write,
    now: Timestamp,
    (consumer, machine): (&Name, Option<&Name>),
    window: Duration,
    as_json: bool,
) -> Result<(), CliError> {
    let declaration = cli.load_declaration()?;
    let id = resolve(&declaration, consumer, machine)?;
    let requires = declaration.declaration.requirements(&id);
    let providers: Vec<&ModuleId> = requires.iter().map(|(_, p)| p).collect();
    let clock = Clock {
        now,
        silent_after: report::DEFAULT_SILENT_AFTER,
    };
    let mut filter = report::filter(&declaration, &Scope::All, &clock, Order::Key);
    filter.choose_providers(|p| providers.contains(&p));
    filter.required.retain(|(_, c)| c == id.module.as_str());
    filter.consumer = Some(id.module.to_string());
    let mut store = PgStore::new(cli.database_options()?);
    let mut read = store.read_status(&filter).await.map_err(CliError::Read)?;
    read.count_repairs(now, window)
        .await
        .map_err(CliError::Read)?;
    let head = report::head(&declaration, &Scope::All, read.facts(), &clock);
    let recurrences = read
        .recurrences(now, window)
        .await
        .map_err(CliError::Read)?;
    let mut standings = Vec::new();
    while let Some(row) = read.next().await.map_err(CliError::Read)? {
        standings.push(report::recurring_standing(row, &clock, &recurrences));
    }
    read.finish().await.map_err(CliError::Read)?;
    let history_filter = HistoryFilter {
        consumer: Some((id.module.clone(), Some(id.machine.clone()))),
        provider: None,
        machine: None,
        since: window_start(now, window),
    };
    let (rows, store_now) = store
        .read_history(&history_filter)
        .await
        .map_err(CliError::Read)?;
    let history = entries(&rows, store_now);
    let verdict = why(&WhyInput {
        consumer: &id,
        requires: &requires,
        head: &head,
        standings: &standings,
        history: &history,
    });
    if as_json {
        json(out, &verdict)
    } else {
        human(out, &verdict, now)
    }
    .map_err(CliError::Output)?;
    // Exit 1 once the verdict is printed when the consumer is not served.
    match verdict.well() {
        true => Ok(()),
        false => Err(CliError::NotServed(id.to_string())),
    }
}
