//! `status` with 100,000 standings, through the binary (process start
//! included): the time to the sentence (the first line; for `--json` the
//! object up to the opening of its `failing` list), and the whole
//! listing's time against PostgreSQL's own rate of producing the same rows
//! as JSON (`psql -c "COPY (SELECT row_to_json(...) ... ORDER BY ...) TO
//! STDOUT" > /dev/null`, same server, same run); the sentence's time is
//! also given as a share of that COPY, which a slower or busier hour
//! scales alike (at d3560ae, the day of the 28.2 ms reference, `status
//! --json`'s was 28.2 / 338 = 0.083). For `status --json`,
//! human `status`, `node show` (one machine of ten) and `why` of one
//! consumer (target < 50 ms for its whole verdict), over a store of 100
//! providers; and for `status` and `node show db-1` over a second store where
//! one provider on db-1 fails all the standings (a machine with 100,000).
//!
//! Also, in process: the rows read with `query_raw` (what `status` does)
//! against `COPY ... TO STDOUT (FORMAT binary)` read whole, without
//! rendering, to show what the read path itself costs.
//!
//! ```text
//! cargo bench -p mesh-controller --bench status
//! MESH_BENCH_STANDINGS=200000 cargo bench -p mesh-controller --bench status
//! ```

mod common;

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::measure::{median, ms, psql_copy, COLUMNS};
use common::{env_number, fill_standings, provider_modules, store, write_declaration};
use futures::{pin_mut, TryStreamExt};
use mesh_pg_store::{migrate, DatabaseOptions};
use tokio_postgres::types::ToSql;

const PROVIDERS: u64 = 100;
const RUNS: usize = 11;

/// Runs the binary; returns (time to the end of the head, whole time, bytes).
fn timed(binary: &str, args: &[String], head_ends: &[u8]) -> (Duration, Duration, usize) {
    let started = Instant::now();
    let mut child = Command::new(binary)
        .args(args)
        .stdout(Stdio::piped())
        .spawn()
        .expect("running mesh-controller");
    let mut stdout = child.stdout.take().expect("piped");
    let mut seen = Vec::new();
    let mut buf = vec![0u8; 1 << 16];
    let mut first = None;
    let mut bytes = 0;
    loop {
        let n = stdout.read(&mut buf).expect("reading the output");
        if n == 0 {
            break;
        }
        bytes += n;
        if first.is_none() {
            seen.extend_from_slice(&buf[..n]);
            if seen.windows(head_ends.len()).any(|w| w == head_ends) {
                first = Some(started.elapsed());
            }
        }
    }
    let status = child.wait().expect("waiting for mesh-controller");
    let whole = started.elapsed();
    // 0, or for `why` of a consumer that is not served, 1 (every consumer
    // here fails); 2 is an error.
    let served_or_said_not =
        status.success() || (args.contains(&"why".to_owned()) && status.code() == Some(1));
    assert!(served_or_said_not, "mesh-controller failed: {status}");
    (first.expect("the head was printed"), whole, bytes)
}

fn main() {
    mesh_controller::init_tracing("warn", mesh_runtime::LogFormat::Text);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let standings = env_number("MESH_BENCH_STANDINGS", 100_000);
        let (pg, _options, client) = store("status").await;
        // 100 providers on 10 machines, each failing standings/100
        // consumers on 7 machines; a third of the events are silent. The
        // rows go in unsorted, as events arrive.
        fill_standings(&client, PROVIDERS, standings).await;
        client
            .batch_execute("VACUUM ANALYZE failing")
            .await
            .expect("vacuum");

        // The second store: one provider on db-1 failing every consumer, on
        // 7 machines.
        let conninfo = pg.create_database("one_provider").await;
        let one = DatabaseOptions::new(
            &pg.database("one_provider"),
            Some(&pg.superuser_password_file()),
        )
        .expect("database options");
        migrate(&one).await.expect("migrating the second store");
        let (one_client, connection) = tokio_postgres::connect(&conninfo, tokio_postgres::NoTls)
            .await
            .expect("connecting to the second store");
        tokio::spawn(connection);
        one_client
            .execute(
                "INSERT INTO failing (provider_module, provider_machine, consumer, consumer_machine,
                     provision, class, error, since, attempts, said_at, stream_seq, stream_epoch)
                 SELECT 'postgres', 'db-1', 'c' || i, 'app-' || (i % 7),
                     'postgres-database', 'credentials-rejected',
                     'password authentication failed for user \"c' || i || '\"',
                     now() - interval '2 hours', 61 + i % 100,
                     now() - (i % 3) * interval '40 minutes', i, 1
                 FROM generate_series(1, $1) AS i",
                &[&(standings as i32)],
            )
            .await
            .expect("filling the second store");
        one_client
            .batch_execute("VACUUM ANALYZE failing")
            .await
            .expect("vacuum");

        let dir = tempfile::tempdir().expect("temp dir");
        let mut modules = provider_modules(PROVIDERS);
        // One consumer declared, for `why`: c42, which p42@db-2 fails.
        modules.push(
            r#"{"module":"c42","machine":"app-0","requires":[
                {"provision":"postgres-database","from":"p42@db-2"}]}"#
                .to_owned(),
        );
        let declaration = write_declaration(dir.path(), &modules);
        let one_declaration = dir.path().join("one_provider.json");
        std::fs::write(
            &one_declaration,
            r#"{"modules":[{"module":"postgres","machine":"db-1","provides":["postgres-database"]}]}"#,
        )
        .expect("writing the second declaration");
        let base = |db: &str, declaration: &std::path::Path| {
            let mut args = pg.database_flags(db).to_vec();
            args.extend(["--declaration".to_owned(), declaration.display().to_string()]);
            args
        };
        let binary = env!("CARGO_BIN_EXE_mesh-controller");
        let password = pg.superuser_password();
        println!("status with {standings} standings, through the binary, median of {RUNS} runs");
        let (many, single) = (("status", &declaration), ("one_provider", &one_declaration));
        type Case<'a> = (&'a str, (&'a str, &'a std::path::PathBuf), &'a [&'a str], &'a [u8], &'a str);
        let cases: [Case; 6] = [
            ("status --json", many, &["status", "--json"], b"\"failing\":[", ""),
            ("status", many, &["status"], b"\n", ""),
            (
                "node show db-3 (a tenth of the standings)",
                many,
                &["node", "show", "db-3"],
                b"\n",
                "WHERE provider_machine = 'db-3' OR consumer_machine = 'db-3'",
            ),
            (
                "why c42 (one consumer of the 100,000: its standing, its provider, history)",
                many,
                &["why", "c42"],
                b"\n",
                "WHERE consumer = 'c42'",
            ),
            ("one provider: status", single, &["status"], b"\n", ""),
            (
                "one provider: node show db-1 (its machine: every standing)",
                single,
                &["node", "show", "db-1"],
                b"\n",
                "WHERE provider_machine = 'db-1' OR consumer_machine = 'db-1'",
            ),
        ];
        for (what, (db, declaration), command, head_ends, filter) in cases {
            let args: Vec<String> = base(db, declaration)
                .iter()
                .cloned()
                .chain(command.iter().map(|s| (*s).to_owned()))
                .collect();
            let mut heads = Vec::new();
            let mut wholes = Vec::new();
            let mut refs = Vec::new();
            let mut bytes = 0;
            for _ in 0..RUNS {
                let (head, whole, n) = timed(binary, &args, head_ends);
                heads.push(head);
                wholes.push(whole);
                bytes = n;
                refs.push(psql_copy(pg.port(), password, db, filter));
            }
            let (head, whole, reference) = (median(heads), median(wholes), median(refs));
            println!("  {what} ({:.1} MB):", bytes as f64 / 1e6);
            // Its share of psql's COPY of the same rows, in the same run:
            // a figure that holds across quicker and slower hours.
            println!(
                "    sentence after {:>6.1} ms (target < 50 ms, ratio {:.2}); {:.3} of psql COPY",
                ms(head),
                ms(head) / 50.0,
                ms(head) / ms(reference)
            );
            println!(
                "    whole listing  {:>6.1} ms; psql COPY row_to_json {:>6.1} ms; ratio {:.2} (target <= 1.0)",
                ms(whole),
                ms(reference),
                ms(whole) / ms(reference)
            );
        }

        // The read alone, in process: query_raw (decoded rows) vs COPY binary.
        let ordered = format!(
            "SELECT {COLUMNS} FROM failing ORDER BY provider_module, provider_machine, consumer"
        );
        let mut raw = Vec::new();
        let mut copy = Vec::new();
        for _ in 0..RUNS {
            let started = Instant::now();
            let rows = client
                .query_raw(ordered.as_str(), std::iter::empty::<&(dyn ToSql + Sync)>())
                .await
                .expect("query_raw");
            pin_mut!(rows);
            let mut n = 0usize;
            while let Some(row) = rows.try_next().await.expect("a row") {
                n += row.get::<_, &str>(2).len();
            }
            assert!(n > 0);
            raw.push(started.elapsed());
            let started = Instant::now();
            let out = client
                .copy_out(&format!("COPY ({ordered}) TO STDOUT (FORMAT binary)"))
                .await
                .expect("copy out");
            pin_mut!(out);
            let mut n = 0usize;
            while let Some(chunk) = out.try_next().await.expect("a chunk") {
                n += chunk.len();
            }
            assert!(n > 0);
            copy.push(started.elapsed());
        }
        println!(
            "  the read alone, in process: query_raw {:.1} ms, COPY (FORMAT binary) {:.1} ms",
            ms(median(raw)),
            ms(median(copy))
        );
    });
}
