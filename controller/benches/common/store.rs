//! The store setup the controller's and the console's benchmarks share: a
//! private PostgreSQL cluster (statement logging off, as on a production
//! server) with a migrated store, standings filled in by SQL, the
//! providers' declaration, and where the server's time went. It uses nothing of `mesh-controller`: the console's
//! benchmark includes this file by its path.

use mesh_pg_store::{migrate, DatabaseOptions};
use mesh_test_support::PgCluster;

/// A cluster, its store database `db` migrated, and the options to reach it.
pub async fn store(db: &str) -> (PgCluster, DatabaseOptions, tokio_postgres::Client) {
    let pg = PgCluster::start();
    let admin = pg.connect_admin().await;
    // The test cluster logs every statement; a benchmark measures the server,
    // not its log file (pgbench and the controller alike).
    for statement in [
        "ALTER SYSTEM SET log_statement = 'none'",
        "SELECT pg_reload_conf()",
    ] {
        admin
            .batch_execute(statement)
            .await
            .expect("turning statement logging off");
    }
    let conninfo = pg.create_database(db).await;
    let options = DatabaseOptions::new(&pg.database(db), Some(&pg.superuser_password_file()))
        .expect("database options");
    migrate(&options).await.expect("migrating the store");
    let (client, connection) = tokio_postgres::connect(&conninfo, tokio_postgres::NoTls)
        .await
        .expect("connecting to the store");
    tokio::spawn(connection);
    (pg, options, client)
}

/// A number from the environment, or `default`.
pub fn env_number(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Fills `failing` with `standings` rows of `providers` providers on 10
/// machines (`p<n>@db-<n % 10>`), consumers `c1`… on 7 machines, a third
/// of them said 40 or 80 minutes ago; the rows go in unsorted.
#[allow(dead_code)] // the status, console and history benchmarks', not ingest's
pub async fn fill_standings(client: &tokio_postgres::Client, providers: u64, standings: u64) {
    client
        .execute(
            "INSERT INTO failing (provider_module, provider_machine, consumer, consumer_machine,
                 provision, class, error, since, attempts, said_at, stream_seq, stream_epoch)
             SELECT 'p' || (i % $1), 'db-' || (i % $1 % 10), 'c' || i, 'app-' || (i % 7),
                 'postgres-database', 'credentials-rejected',
                 'password authentication failed for user \"c' || i || '\"',
                 now() - interval '2 hours', 61 + i % 100,
                 now() - (i % 3) * interval '40 minutes', i, 1
             FROM generate_series(1, $2) AS i",
            &[&(providers as i32), &(standings as i32)],
        )
        .await
        .expect("filling the standings");
}

/// Fills `history` with `rows` rows of `consumers` consumers, 90 days back
/// to now. Row i is consumer c = 1 + (i * 7919) % `consumers` (rounds of
/// many consumers interleave) of provider `p<c % providers>` on
/// `db-<c % providers % 10>`, its n-th row a recovery (even n) or a
/// beginning (odd: the last, as it fails now). Then vacuums and analyses
/// it ([`history_analysed`]); returns how many rows it holds.
#[allow(dead_code)] // the history and console benchmarks'
pub async fn fill_history(
    client: &tokio_postgres::Client,
    rows: u64,
    consumers: u64,
    providers: u64,
) -> i64 {
    client
        .execute(
            "INSERT INTO history (kind, at, provider_module, provider_machine, consumer,
                 consumer_machine, provision, class, error, since, attempts, reason,
                 stream_epoch, stream_seq)
             SELECT CASE WHEN n % 2 = 1 THEN 'failing-began' ELSE 'recovered' END,
                 now() - interval '90 days' + (i::float8 / $1) * interval '90 days',
                 'p' || (c % $4), 'db-' || (c % $4 % 10), 'c' || c, 'app-' || (c % 7),
                 'postgres-database',
                 CASE WHEN n % 2 = 1 THEN 'credentials-rejected' END,
                 CASE WHEN n % 2 = 1 THEN 'password authentication failed for user \"c' || c || '\"' END,
                 now() - interval '90 days' + (i::float8 / $1) * interval '90 days'
                     - interval '1 hour',
                 CASE WHEN n % 2 = 1 THEN 61 END,
                 CASE WHEN n % 2 = 0 THEN 'success' END,
                 1, i
             FROM generate_series(0, $2::int8 - 1) AS i,
                  LATERAL (SELECT 1 + (i * 7919) % $3 AS c, i / $3 AS n) AS k",
            &[
                &(rows as f64),
                &(rows as i64),
                &(consumers as i64),
                &(providers as i64),
            ],
        )
        .await
        .expect("filling history");
    history_analysed(client).await
}

/// Vacuums and analyses `history` once it is filled (as autovacuum would
/// have by the time an operator reads it); returns how many rows it holds.
async fn history_analysed(client: &tokio_postgres::Client) -> i64 {
    client
        .batch_execute("VACUUM ANALYZE history")
        .await
        .expect("vacuum");
    client
        .query_one("SELECT count(*) FROM history", &[])
        .await
        .expect("counting")
        .get(0)
}

/// The declaration's modules of `providers` providers on 10 machines, as
/// [`fill_standings`] names them (`p<n>@db-<n % 10>`), each providing
/// `postgres-database`: one JSON object each.
#[allow(dead_code)] // the status and console benchmarks'
pub fn provider_modules(providers: u64) -> Vec<String> {
    (0..providers)
        .map(|p| {
            format!(
                r#"{{"module":"p{p}","machine":"db-{}","provides":["postgres-database"]}}"#,
                p % 10
            )
        })
        .collect()
}

/// Writes `dir/declaration.json` declaring `modules` (JSON objects);
/// returns its path.
#[allow(dead_code)] // the status and console benchmarks'
pub fn write_declaration(dir: &std::path::Path, modules: &[String]) -> std::path::PathBuf {
    let declaration = dir.join("declaration.json");
    std::fs::write(
        &declaration,
        format!(r#"{{"modules":[{}]}}"#, modules.join(",")),
    )
    .expect("writing the declaration");
    declaration
}

/// With `MESH_BENCH_STATEMENTS` set (where the time goes on the server),
/// [`with_statements`]; else `db` as it is. Returns the connection and
/// whether the statements are kept.
#[allow(dead_code)] // the ingest, console and prune benchmarks'
pub async fn statements_if_asked(
    pg: &mut PgCluster,
    db: tokio_postgres::Client,
    name: &str,
) -> (tokio_postgres::Client, bool) {
    match std::env::var_os("MESH_BENCH_STATEMENTS") {
        Some(_) => (with_statements(pg, db, name).await, true),
        None => (db, false),
    }
}

/// Restarts `pg` with pg_stat_statements loaded; returns a new connection
/// to the store `name`.
async fn with_statements(
    pg: &mut PgCluster,
    db: tokio_postgres::Client,
    name: &str,
) -> tokio_postgres::Client {
    // `MESH_BENCH_EXPLAIN=MS`: auto_explain logs the plan of every
    // statement slower than MS milliseconds, with its times and buffers.
    let explain = std::env::var("MESH_BENCH_EXPLAIN").ok();
    let libraries = match &explain {
        Some(_) => "'pg_stat_statements', 'auto_explain'",
        None => "'pg_stat_statements'",
    };
    db.batch_execute(&format!(
        "ALTER SYSTEM SET shared_preload_libraries = {libraries}"
    ))
    .await
    .expect("loading pg_stat_statements");
    drop(db);
    pg.stop();
    pg.start_again();
    let (db, connection) = tokio_postgres::connect(&pg.conninfo(name), tokio_postgres::NoTls)
        .await
        .expect("connecting to the store again");
    tokio::spawn(connection);
    db.batch_execute("CREATE EXTENSION pg_stat_statements")
        .await
        .expect("pg_stat_statements");
    if let Some(ms) = explain.as_deref() {
        for setting in [
            format!("auto_explain.log_min_duration = '{ms}ms'"),
            "auto_explain.log_analyze = on".to_owned(),
            "auto_explain.log_buffers = on".to_owned(),
            "log_autovacuum_min_duration = 0".to_owned(),
            "log_statement = 'none'".to_owned(),
        ] {
            db.batch_execute(&format!("ALTER SYSTEM SET {setting}"))
                .await
                .expect("setting auto_explain");
        }
        db.batch_execute("SELECT pg_reload_conf()")
            .await
            .expect("reloading the settings");
    }
    db
}

/// The statements that took most of the server's time since the last
/// call, then forgets them.
#[allow(dead_code)] // the ingest, console and prune benchmarks'
pub async fn print_statements(db: &tokio_postgres::Client) {
    let rows = db
        .query(
            "SELECT calls, total_exec_time, total_plan_time, rows,
                    left(regexp_replace(query, '\\s+', ' ', 'g'), 70)
             FROM pg_stat_statements ORDER BY total_exec_time DESC LIMIT 8",
            &[],
        )
        .await
        .expect("reading pg_stat_statements");
    for row in rows {
        let (calls, exec, plan, count, query): (i64, f64, f64, i64, String) =
            (row.get(0), row.get(1), row.get(2), row.get(3), row.get(4));
        println!(
            "    {calls:>7} calls {exec:>9.1} ms ({:>6.3} ms a call, planning {plan:.1} ms), \
             {count:>7} rows: {query}",
            exec / calls.max(1) as f64
        );
    }
    db.batch_execute("SELECT pg_stat_statements_reset()")
        .await
        .expect("resetting pg_stat_statements");
}
