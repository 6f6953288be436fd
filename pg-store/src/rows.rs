//! The store's rows decoded into the model's: a standing, a repair, an
//! `alive`, a `serve` instance, a retirement, a grant, and the values they
//! hold (texts that must parse, times), each failure naming its column.

use std::fmt::Display;
use std::str::FromStr;
use std::time::{Duration, SystemTime};

use mesh_protocol::event::{ContributionsRead, Failing, ProviderFault, VERSION};
use mesh_protocol::{ModuleId, Name, Timestamp};
use tokio_postgres::Row;

use super::connection::classify;
use super::PgError;
use mesh_status::model::{
    AliveRow, FailingRow, GrantRow, GrantsReadRow, Instance, InstanceRow, RepairRow, RetiredRow,
};

/// A read that failed: the store failed, or a value it holds does not
/// decode into its type.
#[derive(Debug)]
pub(super) enum ReadError {
    /// The store failed.
    Store(tokio_postgres::Error),
    /// The value of `column` does not decode.
    Undecodable {
        column: &'static str,
        reason: String,
    },
}

impl From<tokio_postgres::Error> for ReadError {
    fn from(error: tokio_postgres::Error) -> ReadError {
        ReadError::Store(error)
    }
}

impl ReadError {
    pub(super) fn into_store_error(self, target: String) -> PgError {
        match self {
            // A table this release reads is missing: the store is older.
            ReadError::Store(source)
                if source.code() == Some(&tokio_postgres::error::SqlState::UNDEFINED_TABLE) =>
            {
                PgError::NotMigrated { target, source }
            }
            ReadError::Store(source) => classify(target, source),
            ReadError::Undecodable { column, reason } => PgError::Undecodable {
                target,
                column,
                reason,
            },
        }
    }
}

/// Column `i` of `row` (named `column`, `table.column`), its text decoded.
pub(super) fn decoded<T>(row: &Row, i: usize, column: &'static str) -> Result<T, ReadError>
where
    T: FromStr,
    T::Err: Display,
{
    let text: &str = row.try_get(i)?;
    text.parse().map_err(|e: T::Err| ReadError::Undecodable {
        column,
        reason: e.to_string(),
    })
}

/// Column `i` of `row` decoded as [`decoded`] does, when not null.
pub(super) fn optional_decoded<T>(
    row: &Row,
    i: usize,
    column: &'static str,
) -> Result<Option<T>, ReadError>
where
    T: FromStr,
    T::Err: Display,
{
    match row.try_get::<_, Option<&str>>(i)? {
        Some(_) => decoded(row, i, column).map(Some),
        None => Ok(None),
    }
}

/// Where a table's provider is: the index of its module column (its machine
/// follows), and the two columns' names.
pub(super) type ProviderColumns = (usize, [&'static str; 2]);

pub(super) const FAILING_PROVIDER: ProviderColumns =
    (0, ["failing.provider_module", "failing.provider_machine"]);
pub(super) const REPAIR_PROVIDER: ProviderColumns =
    (0, ["repair.provider_module", "repair.provider_machine"]);
pub(super) const ALIVE_PROVIDER: ProviderColumns =
    (0, ["alive.provider_module", "alive.provider_machine"]);
pub(super) const RETIRED_PROVIDER: ProviderColumns = (
    0,
    ["retirement.provider_module", "retirement.provider_machine"],
);

/// The provider of `row`: `last` again when its columns name it, else decoded.
pub(super) fn provider(
    row: &Row,
    (i, [module, machine]): ProviderColumns,
    last: Option<&ModuleId>,
) -> Result<ModuleId, ReadError> {
    if let Some(last) = last {
        let (m, n): (&str, &str) = (row.try_get(i)?, row.try_get(i + 1)?);
        if last.module.as_str() == m && last.machine.as_str() == n {
            return Ok(last.clone());
        }
    }
    Ok(ModuleId::new(
        decoded::<Name>(row, i, module)?,
        decoded::<Name>(row, i + 1, machine)?,
    ))
}

pub(super) fn time(row: &Row, i: usize) -> Result<Timestamp, ReadError> {
    Ok(Timestamp::from_system(row.try_get::<_, SystemTime>(i)?))
}

pub(super) fn optional_time(row: &Row, i: usize) -> Result<Option<Timestamp>, ReadError> {
    Ok(row
        .try_get::<_, Option<SystemTime>>(i)?
        .map(Timestamp::from_system))
}

pub(super) fn failing_row(row: &Row, provider: ModuleId) -> Result<FailingRow, ReadError> {
    Ok(FailingRow {
        provider,
        said: Failing {
            v: VERSION,
            consumer: decoded(row, 2, "failing.consumer")?,
            consumer_machine: optional_decoded(row, 3, "failing.consumer_machine")?,
            provision: row.try_get(4)?,
            class: decoded(row, 5, "failing.class")?,
            error: row.try_get(6)?,
            since: time(row, 7)?,
            // Stored from a u64 (as bigint, capped): never below 0.
            attempts: u64::try_from(row.try_get::<_, i64>(8)?).unwrap_or(0),
            said_at: time(row, 9)?,
        },
        first_since: optional_time(row, 10)?,
    })
}

pub(super) fn repair_row(row: &Row) -> Result<RepairRow, ReadError> {
    Ok(RepairRow {
        provider: provider(row, REPAIR_PROVIDER, None)?,
        fault: decoded(row, 2, "repair.fault")?,
        outcome: decoded(row, 3, "repair.outcome")?,
        detail: row.try_get(4)?,
        next_attempt_at: optional_time(row, 5)?,
        said_at: time(row, 6)?,
        repaired: None,
    })
}

pub(super) fn alive_row(row: &Row) -> Result<AliveRow, ReadError> {
    Ok(AliveRow {
        provider: provider(row, ALIVE_PROVIDER, None)?,
        started_at: time(row, 2)?,
        alive_every_seconds: row.try_get(3)?,
        settled_at: optional_time(row, 4)?,
        said_at: time(row, 5)?,
        repeat_every_seconds: row.try_get(6)?,
        stored_at: optional_time(row, 7)?,
        fault: match row.try_get::<_, Option<&str>>(8)? {
            None => None,
            Some(_) => Some(ProviderFault {
                class: decoded(row, 8, "alive.fault_class")?,
                error: row.try_get::<_, Option<String>>(9)?.unwrap_or_default(),
                since: optional_time(row, 10)?.unwrap_or(time(row, 5)?),
            }),
        },
        contributions: match row.try_get::<_, Option<serde_json::Value>>(11)? {
            None => None,
            Some(value) => {
                Some(
                    serde_json::from_value(value).map_err(|e| ReadError::Undecodable {
                        column: "alive.contributions",
                        reason: e.to_string(),
                    })?,
                )
            }
        },
    })
}

pub(super) fn instance_row(row: &Row) -> Result<InstanceRow, ReadError> {
    let wait_ms: i64 = row.try_get(3)?;
    Ok(InstanceRow {
        instance: Instance {
            host: row.try_get(0)?,
            pid: row.try_get(1)?,
            started_at: time(row, 2)?,
            pull_wait: Duration::from_millis(u64::try_from(wait_ms).unwrap_or(0)),
        },
        pulled_at: optional_time(row, 4)?,
        applied_at: optional_time(row, 5)?,
        following_since: optional_time(row, 6)?,
    })
}

pub(super) fn retired_row(row: &Row) -> Result<RetiredRow, ReadError> {
    Ok(RetiredRow {
        provider: provider(row, RETIRED_PROVIDER, None)?,
        consumer: decoded(row, 2, "retirement.consumer")?,
        action: decoded(row, 3, "retirement.action")?,
        detail: row.try_get(4)?,
        said_at: time(row, 5)?,
        retire_at: optional_time(row, 6)?,
    })
}

pub(super) fn grant_row(row: &Row) -> Result<GrantRow, ReadError> {
    Ok(GrantRow {
        machine: decoded(row, 0, "grant_event.machine")?,
        consumer: decoded(row, 1, "grant_event.consumer")?,
        provision: row.try_get(2)?,
        from: row.try_get(3)?,
        state: decoded(row, 4, "grant_event.kind")?,
        address: row.try_get(5)?,
        port: row.try_get(6)?,
        failures: row.try_get(7)?,
        failing_since: optional_time(row, 8)?,
        last_reachable_at: optional_time(row, 9)?,
        error: row.try_get(10)?,
        reason: row.try_get(11)?,
        said_at: time(row, 12)?,
    })
}

pub(super) fn grants_read_row(row: &Row) -> Result<GrantsReadRow, ReadError> {
    let refused: serde_json::Value = row.try_get(4)?;
    Ok(GrantsReadRow {
        machine: decoded(row, 0, "grants_read.machine")?,
        file: row.try_get(1)?,
        read: ContributionsRead {
            readable: row.try_get(2)?,
            problem: row.try_get(3)?,
            refused: serde_json::from_value(refused).map_err(|e| ReadError::Undecodable {
                column: "grants_read.refused",
                reason: e.to_string(),
            })?,
            more: u64::try_from(row.try_get::<_, i64>(5)?).unwrap_or(0),
        },
        said_at: time(row, 6)?,
    })
}
