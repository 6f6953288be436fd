//! The store on PostgreSQL (tokio-postgres), schema by refinery migrations.

use std::path::Path;
use std::time::{Duration, SystemTime};

use async_trait::async_trait;
use futures::future::try_join_all;
use futures::TryStreamExt;
use mesh_sdk::Timestamp;
use tokio_postgres::config::Host;
use tokio_postgres::error::SqlState;
use tokio_postgres::types::ToSql;
use tokio_postgres::{Client, Config, NoTls, Row, Statement};

use super::pages::{self, PageRow};
use super::reduce::reduce;
use super::{FailingRow, PagedSnapshot, RepairRow, Snapshot, Store, StoreError, Word};

mod embedded {
    refinery::embed_migrations!("migrations");
}

/// How long a connection attempt (socket, authentication, preparing) may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// How long one transaction or read may take before the store counts as away.
const STATEMENT_TIMEOUT: Duration = Duration::from_secs(30);

/// Where the store is: a connection URL or key-value string, and optionally
/// a password file (so no password needs to be on a command line).
///
/// Its `Display` (and [`DatabaseOptions::shown`]) never holds the password.
#[derive(Clone)]
pub struct DatabaseOptions {
    config: Config,
    shown: String,
}

impl std::fmt::Debug for DatabaseOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DatabaseOptions")
            .field("target", &self.shown)
            .finish_non_exhaustive()
    }
}

impl std::fmt::Display for DatabaseOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.shown)
    }
}

/// The database options are unusable; ends the command (exit 2).
#[derive(Debug, thiserror::Error)]
pub enum DatabaseOptionsError {
    /// No database was given.
    #[error("no database given (--database URL or MESH_DATABASE_URL)")]
    Missing,
    /// The URL does not parse. The URL itself is not repeated: it may hold a password.
    #[error("the database URL is invalid: {0}")]
    Invalid(#[source] tokio_postgres::Error),
    /// The password file could not be read.
    #[error("database password file {path} cannot be read: {source}")]
    PasswordFile {
        /// The file.
        path: std::path::PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

impl DatabaseOptions {
    /// Parses `url` (`postgres://user@host:port/db` or `host=.. user=..`);
    /// the password, if any, comes from `password_file` (trimmed), which wins
    /// over one in the URL.
    ///
    /// # Errors
    /// [`DatabaseOptionsError`] when the URL does not parse or the file
    /// cannot be read.
    pub fn new(
        url: &str,
        password_file: Option<&Path>,
    ) -> Result<DatabaseOptions, DatabaseOptionsError> {
        let mut config: Config = url.parse().map_err(DatabaseOptionsError::Invalid)?;
        if let Some(path) = password_file {
            let password = std::fs::read_to_string(path).map_err(|source| {
                DatabaseOptionsError::PasswordFile {
                    path: path.to_owned(),
                    source,
                }
            })?;
            config.password(password.trim());
        }
        config.application_name("mesh-controller");
        let shown = shown(&config);
        Ok(DatabaseOptions { config, shown })
    }

    /// `postgres://user@host:port/dbname`, never the password.
    pub fn shown(&self) -> &str {
        &self.shown
    }
}

/// The target of a configuration without its password.
fn shown(config: &Config) -> String {
    let user = config.get_user().unwrap_or("");
    let host = config
        .get_hosts()
        .iter()
        .map(|h| match h {
            Host::Tcp(name) => name.clone(),
            Host::Unix(path) => path.display().to_string(),
        })
        .collect::<Vec<_>>()
        .join(",");
    let port = config
        .get_ports()
        .iter()
        .map(|p| p.to_string())
        .collect::<Vec<_>>()
        .join(",");
    let db = config.get_dbname().unwrap_or(user);
    let at = if user.is_empty() {
        String::new()
    } else {
        format!("{user}@")
    };
    let port = if port.is_empty() {
        String::new()
    } else {
        format!(":{port}")
    };
    format!("postgres://{at}{host}{port}/{db}")
}

/// Applies the numbered migrations of `controller/migrations/` that are not
/// applied yet; returns how many were applied.
///
/// # Errors
/// [`StoreError`] when the store cannot be reached or a migration fails.
pub async fn migrate(options: &DatabaseOptions) -> Result<usize, StoreError> {
    let mut client = connect_client(options).await?;
    let report = embedded::migrations::runner()
        .run_async(&mut client)
        .await
        .map_err(|source| StoreError::Migrate {
            target: options.shown.clone(),
            source,
        })?;
    Ok(report.applied_migrations().len())
}

async fn connect_client(options: &DatabaseOptions) -> Result<Client, StoreError> {
    let target = options.shown.clone();
    let connecting = options.config.connect(NoTls);
    let (client, connection) = match tokio::time::timeout(CONNECT_TIMEOUT, connecting).await {
        Ok(Ok(pair)) => pair,
        Ok(Err(source)) => return Err(StoreError::Unavailable { target, source }),
        Err(_) => {
            return Err(StoreError::Timeout {
                target,
                after: CONNECT_TIMEOUT,
            })
        }
    };
    tokio::spawn(async move {
        if let Err(error) = connection.await {
            tracing::warn!(error = %error, "store connection ended");
        }
    });
    Ok(client)
}

/// The statement that applies a round's `failing` words (the newest per
/// key): parallel arrays `$1`..`$11` of provider module, provider machine,
/// consumer, consumer machine, provision, class, error, since, attempts,
/// said_at, stream sequence. A word is kept unless a newer `recovered` of its
/// key is stored, and replaces only an older failing word. Public for the
/// ingest benchmark, which runs it through pgbench.
pub const UPSERT_FAILING: &str = "
INSERT INTO failing AS f (provider_module, provider_machine, consumer, consumer_machine,
                          provision, class, error, since, attempts, said_at, stream_seq)
SELECT w.* FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[],
                       $7::text[], $8::timestamptz[], $9::int8[], $10::timestamptz[], $11::int8[])
    AS w(provider_module, provider_machine, consumer, consumer_machine, provision, class,
         error, since, attempts, said_at, stream_seq)
WHERE NOT EXISTS (
    SELECT 1 FROM recovered r
    WHERE r.provider_module = w.provider_module AND r.provider_machine = w.provider_machine
      AND r.consumer = w.consumer AND (r.said_at, r.stream_seq) > (w.said_at, w.stream_seq))
ON CONFLICT (provider_module, provider_machine, consumer) DO UPDATE SET
    consumer_machine = EXCLUDED.consumer_machine, provision = EXCLUDED.provision,
    class = EXCLUDED.class, error = EXCLUDED.error, since = EXCLUDED.since,
    attempts = EXCLUDED.attempts, said_at = EXCLUDED.said_at, stream_seq = EXCLUDED.stream_seq
WHERE (f.said_at, f.stream_seq) < (EXCLUDED.said_at, EXCLUDED.stream_seq)";

/// Applies a round's `recovered` words: each deletes its key's failing word
/// when older than itself, and is kept as its key's newest recovered word.
const RECOVERED: &str = "
WITH w AS (
    SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[],
                         $6::text[], $7::timestamptz[], $8::int8[])
        AS w(provider_module, provider_machine, consumer, consumer_machine, provision,
             reason, said_at, stream_seq)
), gone AS (
    DELETE FROM failing f USING w
    WHERE f.provider_module = w.provider_module AND f.provider_machine = w.provider_machine
      AND f.consumer = w.consumer AND (f.said_at, f.stream_seq) < (w.said_at, w.stream_seq)
)
INSERT INTO recovered AS r (provider_module, provider_machine, consumer, consumer_machine,
                            provision, reason, said_at, stream_seq)
SELECT * FROM w
ON CONFLICT (provider_module, provider_machine, consumer) DO UPDATE SET
    consumer_machine = EXCLUDED.consumer_machine, provision = EXCLUDED.provision,
    reason = EXCLUDED.reason, said_at = EXCLUDED.said_at, stream_seq = EXCLUDED.stream_seq
WHERE (r.said_at, r.stream_seq) < (EXCLUDED.said_at, EXCLUDED.stream_seq)";

/// Applies a round's `repair` words (the newest per provider and fault).
const UPSERT_REPAIR: &str = "
INSERT INTO repair AS p (provider_module, provider_machine, fault, outcome, detail,
                         next_attempt_at, said_at, stream_seq)
SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[],
                     $6::timestamptz[], $7::timestamptz[], $8::int8[])
ON CONFLICT (provider_module, provider_machine, fault) DO UPDATE SET
    outcome = EXCLUDED.outcome, detail = EXCLUDED.detail,
    next_attempt_at = EXCLUDED.next_attempt_at, said_at = EXCLUDED.said_at,
    stream_seq = EXCLUDED.stream_seq
WHERE (p.said_at, p.stream_seq) < (EXCLUDED.said_at, EXCLUDED.stream_seq)";

/// Applies a round's `retirement` words (the newest per provider, consumer, action).
const UPSERT_RETIREMENT: &str = "
INSERT INTO retirement AS t (provider_module, provider_machine, consumer, action, detail,
                             said_at, stream_seq)
SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[],
                     $6::timestamptz[], $7::int8[])
ON CONFLICT (provider_module, provider_machine, consumer, action) DO UPDATE SET
    detail = EXCLUDED.detail, said_at = EXCLUDED.said_at, stream_seq = EXCLUDED.stream_seq
WHERE (t.said_at, t.stream_seq) < (EXCLUDED.said_at, EXCLUDED.stream_seq)";

/// Unordered: sorting 100,000 rows costs the server more than the client
/// (`status` sorts what it lists).
const READ_FAILING: &str = "
SELECT provider_module, provider_machine, consumer, consumer_machine, provision, class, error,
       since, attempts, said_at
FROM failing";

/// The clean status pages (see migration V2 and [`pages`]).
const READ_PAGES: &str = "
SELECT provider_module, provider_machine, page, standings, said_at, body
FROM status_page
WHERE NOT stale";

/// The failing words of the stale pages, looked up page by page (never a
/// scan of every word, whatever the planner's statistics say).
const READ_STALE: &str = "
SELECT f.provider_module, f.provider_machine, f.consumer, f.consumer_machine, f.provision,
       f.class, f.error, f.since, f.attempts, f.said_at
FROM status_page p CROSS JOIN LATERAL (
    SELECT * FROM failing f
    WHERE f.provider_module = p.provider_module AND f.provider_machine = p.provider_machine
      AND f.page = p.page) f
WHERE p.stale";

/// The failing words of the pages `$1`/`$2`/`$3` (provider module, machine, page).
const READ_PAGE_ROWS: &str = "
SELECT f.provider_module, f.provider_machine, f.consumer, f.consumer_machine, f.provision,
       f.class, f.error, f.since, f.attempts, f.said_at, f.page
FROM unnest($1::text[], $2::text[], $3::int[]) AS p(provider_module, provider_machine, page)
JOIN failing f USING (provider_module, provider_machine, page)";

/// Up to `$1` stale pages, with the version each had when read.
const STALE_PAGES: &str = "
SELECT provider_module, provider_machine, page, version
FROM status_page
WHERE stale
ORDER BY provider_module, provider_machine, page
LIMIT $1";

/// Writes a page, unless its words changed since `$7` was read.
const WRITE_PAGE: &str = "
UPDATE status_page SET stale = false, standings = $4, said_at = $5, body = $6
WHERE provider_module = $1 AND provider_machine = $2 AND page = $3 AND version = $7 AND stale";

/// Drops a page that has no failing word left, unless one came since `$4` was read.
const DROP_PAGE: &str = "
DELETE FROM status_page
WHERE provider_module = $1 AND provider_machine = $2 AND page = $3 AND version = $4 AND stale";

const READ_OPEN_REPAIRS: &str = "
SELECT provider_module, provider_machine, fault, outcome, detail, next_attempt_at, said_at
FROM repair
WHERE outcome <> 'repaired'
ORDER BY provider_module, provider_machine, fault";

/// A live connection, and its write statements once prepared.
struct Connected {
    client: Client,
    statements: Option<Statements>,
}

/// The prepared write statements (reads need none).
struct Statements {
    failing: Statement,
    recovered: Statement,
    repair: Statement,
    retirement: Statement,
}

/// The store on PostgreSQL. Connects lazily, and again after the
/// connection broke; every call is bounded in time.
pub struct PgStore {
    options: DatabaseOptions,
    connected: Option<Connected>,
}

impl std::fmt::Debug for PgStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgStore")
            .field("target", &self.options.shown)
            .field("connected", &self.connected.is_some())
            .finish()
    }
}

impl PgStore {
    /// A store at `options`; nothing is connected yet.
    pub fn new(options: DatabaseOptions) -> PgStore {
        PgStore {
            options,
            connected: None,
        }
    }

    /// Where the store is (no password).
    pub fn target(&self) -> &str {
        &self.options.shown
    }

    async fn connected(&mut self) -> Result<&Connected, StoreError> {
        if self
            .connected
            .as_ref()
            .is_some_and(|c| c.client.is_closed())
        {
            self.connected = None;
        }
        if self.connected.is_none() {
            let client = connect_client(&self.options).await?;
            self.connected = Some(Connected {
                client,
                statements: None,
            });
        }
        Ok(self.connected.as_ref().expect("connected just above"))
    }

    /// The connection with its write statements prepared.
    async fn prepared(&mut self) -> Result<(&Client, &Statements), StoreError> {
        self.connected().await?;
        if self
            .connected
            .as_ref()
            .is_some_and(|c| c.statements.is_none())
        {
            let client = &self.connected.as_ref().expect("connected above").client;
            let prepare = async {
                Ok::<_, tokio_postgres::Error>(Statements {
                    failing: client.prepare(UPSERT_FAILING).await?,
                    recovered: client.prepare(RECOVERED).await?,
                    repair: client.prepare(UPSERT_REPAIR).await?,
                    retirement: client.prepare(UPSERT_RETIREMENT).await?,
                })
            };
            let outcome = tokio::time::timeout(CONNECT_TIMEOUT, prepare).await;
            let statements = self.settle(outcome)?;
            if let Some(connected) = self.connected.as_mut() {
                connected.statements = Some(statements);
            }
        }
        let connected = self.connected.as_ref().expect("connected above");
        let statements = connected.statements.as_ref().expect("prepared above");
        Ok((&connected.client, statements))
    }

    /// Runs `work` bounded by [`STATEMENT_TIMEOUT`]; on any failure but a
    /// refusal of the words, the connection is dropped (the next call
    /// reconnects).
    fn settle<T>(
        &mut self,
        outcome: Result<Result<T, tokio_postgres::Error>, tokio::time::error::Elapsed>,
    ) -> Result<T, StoreError> {
        let target = self.options.shown.clone();
        let result = match outcome {
            Ok(Ok(value)) => return Ok(value),
            Ok(Err(source)) => classify(target, source),
            Err(_) => StoreError::Timeout {
                target,
                after: STATEMENT_TIMEOUT,
            },
        };
        if result.is_transient() {
            self.connected = None;
        }
        Err(result)
    }

    /// Reads the failing words and open repairs with a fresh connection.
    async fn read(&mut self) -> Result<Snapshot, StoreError> {
        let connected = self.connected().await?;
        let client = &connected.client;
        let work = async {
            let repairs = client.query(READ_OPEN_REPAIRS, &[]).await?;
            // Rows are decoded as they arrive, while the server still sends.
            let rows = client
                .query_raw(READ_FAILING, std::iter::empty::<&(dyn ToSql + Sync)>())
                .await?;
            futures::pin_mut!(rows);
            let mut failing = Vec::new();
            while let Some(row) = rows.try_next().await? {
                failing.push(failing_row(&row)?);
            }
            Ok(Snapshot {
                failing,
                open_repairs: repairs.iter().map(repair_row).collect::<Result<_, _>>()?,
            })
        };
        let outcome = tokio::time::timeout(STATEMENT_TIMEOUT, work).await;
        self.settle(outcome)
    }
}

impl PgStore {
    /// What `status --json` reads, in one snapshot of the store: the clean
    /// status pages, the failing words of the stale ones, the open repairs.
    /// A page that does not read whole is logged and its words are read
    /// from the rows instead. `None` when the store has no status pages
    /// (not migrated to them yet: `serve` migrates at start).
    ///
    /// # Errors
    /// [`StoreError`] when the store is away or refuses.
    pub async fn paged_snapshot(&mut self) -> Result<Option<PagedSnapshot>, StoreError> {
        let connected = self.connected().await?;
        let client = &connected.client;
        let work = async {
            let begin = client.batch_execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
            let read_pages = async {
                let rows = client
                    .query_raw(READ_PAGES, std::iter::empty::<&(dyn ToSql + Sync)>())
                    .await?;
                futures::pin_mut!(rows);
                let mut pages = Vec::new();
                while let Some(row) = rows.try_next().await? {
                    pages.push(page_row(&row)?);
                }
                Ok::<_, tokio_postgres::Error>(pages)
            };
            let (begun, pages, stale, repairs) = tokio::join!(
                begin,
                read_pages,
                client.query(READ_STALE, &[]),
                client.query(READ_OPEN_REPAIRS, &[])
            );
            begun?;
            let (mut pages, stale, repairs) = (pages?, stale?, repairs?);
            let mut failing: Vec<FailingRow> =
                stale.iter().map(failing_row).collect::<Result<_, _>>()?;
            let broken = unreadable(&mut pages);
            if !broken.is_empty() {
                let modules: Vec<&str> =
                    broken.iter().map(|p| p.provider_module.as_str()).collect();
                let machines: Vec<&str> =
                    broken.iter().map(|p| p.provider_machine.as_str()).collect();
                let numbers: Vec<i32> = broken.iter().map(|p| p.page).collect();
                for row in client
                    .query(READ_PAGE_ROWS, &[&modules, &machines, &numbers])
                    .await?
                {
                    failing.push(failing_row(&row)?);
                }
            }
            client.batch_execute("COMMIT").await?;
            Ok::<_, tokio_postgres::Error>(PagedSnapshot {
                pages,
                stale: failing,
                open_repairs: repairs.iter().map(repair_row).collect::<Result<_, _>>()?,
            })
        };
        let outcome = tokio::time::timeout(STATEMENT_TIMEOUT, work).await;
        if let Ok(Err(error)) = &outcome {
            if error.code() == Some(&SqlState::UNDEFINED_TABLE) {
                self.connected = None;
                return Ok(None);
            }
        }
        self.settle(outcome).map(Some)
    }

    /// Writes up to `limit` stale status pages from the failing words. A
    /// page whose words changed meanwhile stays stale for the next call.
    ///
    /// # Errors
    /// [`StoreError`] when the store is away or refuses.
    pub async fn build_pages(&mut self, limit: usize) -> Result<PagesBuilt, StoreError> {
        let connected = self.connected().await?;
        let client = &connected.client;
        let work = async {
            let limit = i64::try_from(limit).unwrap_or(i64::MAX);
            let stale = client.query(STALE_PAGES, &[&limit]).await?;
            let mut built = PagesBuilt {
                taken: stale.len(),
                written: 0,
            };
            for provider in stale.chunk_by(|a, b| {
                a.get::<_, &str>(0) == b.get::<_, &str>(0)
                    && a.get::<_, &str>(1) == b.get::<_, &str>(1)
            }) {
                built.written += build_provider_pages(client, provider).await?;
            }
            Ok(built)
        };
        let outcome = tokio::time::timeout(STATEMENT_TIMEOUT, work).await;
        self.settle(outcome)
    }
}

/// What one [`PgStore::build_pages`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PagesBuilt {
    /// Stale pages taken (the limit when more may be waiting).
    pub taken: usize,
    /// Of which written (or dropped, having no word left); the others
    /// changed meanwhile and stay stale.
    pub written: usize,
}

/// Writes one provider's stale pages (`stale`: module, machine, page, version).
async fn build_provider_pages(
    client: &Client,
    stale: &[Row],
) -> Result<usize, tokio_postgres::Error> {
    let module: &str = stale[0].get(0);
    let machine: &str = stale[0].get(1);
    let numbers: Vec<i32> = stale.iter().map(|r| r.get(2)).collect();
    let modules = vec![module; numbers.len()];
    let machines = vec![machine; numbers.len()];
    let mut by_page: std::collections::HashMap<i32, Vec<FailingRow>> =
        std::collections::HashMap::new();
    for row in client
        .query(READ_PAGE_ROWS, &[&modules, &machines, &numbers])
        .await?
    {
        by_page
            .entry(row.try_get(10)?)
            .or_default()
            .push(failing_row(&row)?);
    }
    let writes = stale.iter().map(|r| {
        let page: i32 = r.get(2);
        let version: i64 = r.get(3);
        let rows = by_page.remove(&page).unwrap_or_default();
        async move {
            if rows.is_empty() {
                return client
                    .execute(DROP_PAGE, &[&module, &machine, &page, &version])
                    .await;
            }
            let mut rows = rows;
            let encoded = pages::encode(&mut rows);
            let standings = i32::try_from(encoded.standings).unwrap_or(i32::MAX);
            client
                .execute(
                    WRITE_PAGE,
                    &[
                        &module,
                        &machine,
                        &page,
                        &standings,
                        &encoded.said_at,
                        &encoded.body,
                        &version,
                    ],
                )
                .await
        }
    });
    let written = try_join_all(writes).await?;
    Ok(written.iter().filter(|&&n| n > 0).count())
}

/// Takes out of `pages` those that do not read whole (logged); returns them.
fn unreadable(pages: &mut Vec<PageRow>) -> Vec<PageRow> {
    let mut scratch = Vec::new();
    let mut broken = Vec::new();
    pages.retain(|page| match pages::check(page, &mut scratch) {
        Ok(()) => true,
        Err(error) => {
            tracing::warn!(
                provider = %format_args!("{}@{}", page.provider_module, page.provider_machine),
                page = page.page,
                error = %error,
                "status page unreadable; its failing words are read from the rows"
            );
            broken.push(page.clone());
            false
        }
    });
    broken
}

fn page_row(row: &Row) -> Result<PageRow, tokio_postgres::Error> {
    let standings: i32 = row.try_get(3)?;
    Ok(PageRow {
        provider_module: row.try_get(0)?,
        provider_machine: row.try_get(1)?,
        page: row.try_get(2)?,
        standings: usize::try_from(standings).unwrap_or(0),
        said_at: bytes::Bytes::copy_from_slice(
            row.try_get::<_, Option<&[u8]>>(4)?.unwrap_or_default(),
        ),
        body: bytes::Bytes::copy_from_slice(
            row.try_get::<_, Option<&[u8]>>(5)?.unwrap_or_default(),
        ),
    })
}

fn failing_row(row: &Row) -> Result<FailingRow, tokio_postgres::Error> {
    Ok(FailingRow {
        provider_module: row.try_get(0)?,
        provider_machine: row.try_get(1)?,
        consumer: row.try_get(2)?,
        consumer_machine: row.try_get(3)?,
        provision: row.try_get(4)?,
        class: row.try_get(5)?,
        error: row.try_get(6)?,
        since: Timestamp::from_system(row.try_get::<_, SystemTime>(7)?),
        attempts: row.try_get(8)?,
        said_at: Timestamp::from_system(row.try_get::<_, SystemTime>(9)?),
    })
}

fn repair_row(row: &Row) -> Result<RepairRow, tokio_postgres::Error> {
    Ok(RepairRow {
        provider_module: row.try_get(0)?,
        provider_machine: row.try_get(1)?,
        fault: row.try_get(2)?,
        outcome: row.try_get(3)?,
        detail: row.try_get(4)?,
        next_attempt_at: row
            .try_get::<_, Option<SystemTime>>(5)?
            .map(Timestamp::from_system),
        said_at: Timestamp::from_system(row.try_get::<_, SystemTime>(6)?),
    })
}

/// Sorts a database error: the words' own fault (data, constraint), a
/// broken or refused connection, or anything else (which may pass).
fn classify(target: String, source: tokio_postgres::Error) -> StoreError {
    let Some(code) = source.code() else {
        // No SQLSTATE: the connection is closed, or an io or protocol error.
        return StoreError::Unavailable { target, source };
    };
    match code.code().get(..2).unwrap_or("") {
        // Data exception, integrity constraint violation: these words, as such.
        "22" | "23" => StoreError::Refused { target, source },
        // Connection exception, operator intervention (shutting down),
        // insufficient resources, invalid authorization.
        "08" | "57" | "53" | "28" => StoreError::Unavailable { target, source },
        // Anything else (locks, serialization, a missing table, ...) may pass.
        _ => StoreError::Failed { target, source },
    }
}

/// PostgreSQL text holds no NUL character: replace it rather than refuse the word.
fn text(value: &str) -> String {
    if value.contains('\0') {
        value.replace('\0', "\u{FFFD}")
    } else {
        value.to_owned()
    }
}

/// Parallel arrays, one per column, of the words of one kind.
#[derive(Default)]
struct Columns {
    text: Vec<Vec<Option<String>>>,
    times: Vec<Vec<Option<SystemTime>>>,
    ints: Vec<Vec<i64>>,
}

impl Columns {
    fn new(texts: usize, times: usize, ints: usize) -> Columns {
        Columns {
            text: vec![Vec::new(); texts],
            times: vec![Vec::new(); times],
            ints: vec![Vec::new(); ints],
        }
    }

    fn is_empty(&self) -> bool {
        self.ints.first().is_none_or(Vec::is_empty)
    }

    fn row(
        &mut self,
        text: [Option<String>; N_MAX_TEXT],
        times: &[Option<SystemTime>],
        ints: &[i64],
    ) {
        for (column, value) in self.text.iter_mut().zip(text) {
            column.push(value);
        }
        for (column, value) in self.times.iter_mut().zip(times) {
            column.push(*value);
        }
        for (column, value) in self.ints.iter_mut().zip(ints) {
            column.push(*value);
        }
    }

    /// The statement's parameters: the text columns, then times, then ints,
    /// in the order `order` gives (indices into that concatenation).
    fn params<'a>(&'a self, order: &[usize]) -> Vec<&'a (dyn ToSql + Sync)> {
        let all: Vec<&'a (dyn ToSql + Sync)> = self
            .text
            .iter()
            .map(|c| c as &(dyn ToSql + Sync))
            .chain(self.times.iter().map(|c| c as &(dyn ToSql + Sync)))
            .chain(self.ints.iter().map(|c| c as &(dyn ToSql + Sync)))
            .collect();
        order.iter().map(|&i| all[i]).collect()
    }
}

/// The most text columns of a kind.
const N_MAX_TEXT: usize = 7;

fn seq(seq: u64) -> i64 {
    i64::try_from(seq).unwrap_or(i64::MAX)
}

fn some(value: &str) -> Option<String> {
    Some(text(value))
}

/// A round as the parameters of the four statements.
struct Round {
    failing: Columns,
    recovered: Columns,
    repairs: Columns,
    retirements: Columns,
}

impl Round {
    fn of(words: &[Word]) -> Round {
        let reduced = reduce(words);
        let mut failing = Columns::new(7, 2, 2);
        for k in &reduced.failing {
            let b = k.body;
            failing.row(
                [
                    some(k.emitter.module.as_str()),
                    some(k.emitter.machine.as_str()),
                    some(b.consumer.as_str()),
                    b.consumer_machine.as_ref().map(|m| m.to_string()),
                    b.provision.as_deref().map(text),
                    some(b.class.as_str()),
                    some(&b.error),
                ],
                &[Some(b.since.system_time()), Some(b.said_at.system_time())],
                &[i64::try_from(b.attempts).unwrap_or(i64::MAX), seq(k.seq)],
            );
        }
        let mut recovered = Columns::new(6, 1, 1);
        for k in &reduced.recovered {
            let b = k.body;
            recovered.row(
                [
                    some(k.emitter.module.as_str()),
                    some(k.emitter.machine.as_str()),
                    some(b.consumer.as_str()),
                    b.consumer_machine.as_ref().map(|m| m.to_string()),
                    b.provision.as_deref().map(text),
                    some(b.reason.as_str()),
                    None,
                ],
                &[Some(b.said_at.system_time())],
                &[seq(k.seq)],
            );
        }
        let mut repairs = Columns::new(5, 2, 1);
        for k in &reduced.repairs {
            let b = k.body;
            repairs.row(
                [
                    some(k.emitter.module.as_str()),
                    some(k.emitter.machine.as_str()),
                    some(b.fault.as_str()),
                    some(repair_outcome(b.outcome)),
                    some(&b.detail),
                    None,
                    None,
                ],
                &[
                    b.next_attempt_at.map(Timestamp::system_time),
                    Some(b.said_at.system_time()),
                ],
                &[seq(k.seq)],
            );
        }
        let mut retirements = Columns::new(5, 1, 1);
        for k in &reduced.retirements {
            let b = k.body;
            retirements.row(
                [
                    some(k.emitter.module.as_str()),
                    some(k.emitter.machine.as_str()),
                    some(b.consumer.as_str()),
                    some(b.action.as_str()),
                    some(&b.detail),
                    None,
                    None,
                ],
                &[Some(b.said_at.system_time())],
                &[seq(k.seq)],
            );
        }
        Round {
            failing,
            recovered,
            repairs,
            retirements,
        }
    }
}

fn repair_outcome(outcome: mesh_sdk::event::RepairOutcome) -> &'static str {
    use mesh_sdk::event::RepairOutcome;
    match outcome {
        RepairOutcome::Repaired => "repaired",
        RepairOutcome::Failed => "failed",
        RepairOutcome::Braked => "braked",
    }
}

#[async_trait]
impl Store for PgStore {
    async fn apply(&mut self, words: &[Word]) -> Result<(), StoreError> {
        if words.is_empty() {
            return Ok(());
        }
        let round = Round::of(words);
        let (client, prepared) = self.prepared().await?;
        // One transaction, its statements pipelined (sent without waiting
        // for each answer): `recovered` before `failing` (see `reduce`).
        // Parameter order: texts, then times, then ints, as each statement lists them.
        let statements: Vec<(&Statement, Vec<&(dyn ToSql + Sync)>)> = [
            (
                &prepared.recovered,
                &round.recovered,
                &[0, 1, 2, 3, 4, 5, 6, 7][..],
            ),
            (
                &prepared.failing,
                &round.failing,
                &[0, 1, 2, 3, 4, 5, 6, 7, 9, 8, 10][..],
            ),
            (
                &prepared.repair,
                &round.repairs,
                &[0, 1, 2, 3, 4, 5, 6, 7][..],
            ),
            (
                &prepared.retirement,
                &round.retirements,
                &[0, 1, 2, 3, 4, 5, 6][..],
            ),
        ]
        .into_iter()
        .filter(|(_, columns, _)| !columns.is_empty())
        .map(|(statement, columns, order)| (statement, columns.params(order)))
        .collect();
        let work = async {
            let begin = client.batch_execute("BEGIN");
            let applied = try_join_all(
                statements
                    .iter()
                    .map(|(statement, params)| client.execute(*statement, params)),
            );
            let (begun, applied) = tokio::join!(begin, applied);
            match begun.and(applied) {
                Ok(_) => client.batch_execute("COMMIT").await,
                Err(error) => {
                    let _ = client.batch_execute("ROLLBACK").await;
                    Err(error)
                }
            }
        };
        let outcome = tokio::time::timeout(STATEMENT_TIMEOUT, work).await;
        self.settle(outcome)
    }

    async fn snapshot(&mut self) -> Result<Snapshot, StoreError> {
        self.read().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shown_target_never_holds_the_password() {
        let cases = [
            (
                "postgres://mesh:s3cret@db.example:5433/store",
                "postgres://mesh@db.example:5433/store",
            ),
            (
                "host=127.0.0.1 port=5432 user=mesh password=s3cret dbname=store",
                "postgres://mesh@127.0.0.1:5432/store",
            ),
            ("postgres://mesh@h/", "postgres://mesh@h:5432/mesh"),
        ];
        for (url, expected) in cases {
            let options = DatabaseOptions::new(url, None).unwrap();
            assert_eq!(options.shown(), expected);
            assert!(!format!("{options:?} {options}").contains("s3cret"));
        }
    }

    #[test]
    fn a_password_file_wins_and_an_invalid_url_is_not_repeated() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("pw");
        std::fs::write(&file, "from-file\n").unwrap();
        let options = DatabaseOptions::new("postgres://u:old@h/db", Some(&file)).unwrap();
        assert_eq!(options.config.get_password(), Some(&b"from-file"[..]));
        let error = DatabaseOptions::new("postgres://u:s3cret@h:notaport/db", None)
            .unwrap_err()
            .to_string();
        assert!(!error.contains("s3cret"), "{error}");
        let missing = DatabaseOptions::new("postgres://u@h/db", Some(Path::new("/nope/pw")))
            .unwrap_err()
            .to_string();
        assert!(missing.contains("/nope/pw"), "{missing}");
    }

    #[test]
    fn nul_characters_are_replaced() {
        assert_eq!(text("a\0b"), "a\u{FFFD}b");
        assert_eq!(text("plain"), "plain");
    }
}
