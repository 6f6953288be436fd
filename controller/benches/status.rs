//! `status --json` time with 100,000 standings (target < 50 ms): in process
//! (connect, read, compose, serialize) and through the binary (process start
//! included), the output thrown away (counted). Measured with the status pages written
//! (as a running `serve` keeps them) and, for comparison, with every page
//! stale (no `serve` ran since the words were stored: every row is read).
//!
//! ```text
//! cargo bench -p mesh-controller --bench status
//! MESH_BENCH_STANDINGS=200000 cargo bench -p mesh-controller --bench status
//! ```

mod common;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{env_number, store};
use mesh_controller::cli::{run, Cli, Io, EXIT_OK};
use mesh_controller::PgStore;
use mesh_sdk::Timestamp;

const PROVIDERS: u64 = 100;
const RUNS: usize = 15;

/// Counts what is written and throws it away, as `> /dev/null` does.
struct Counted(usize);

impl std::io::Write for Counted {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len();
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn median(mut times: Vec<Duration>) -> (Duration, Duration) {
    times.sort();
    (times[times.len() / 2], times[0])
}

/// `status --json` timed in process and through the binary; the output's size.
async fn measure(cli: &Cli, args: &[String]) -> (Vec<Duration>, Vec<Duration>, usize) {
    // In process.
    let mut bytes = 0usize;
    let mut in_process = Vec::new();
    for _ in 0..RUNS {
        let mut out = Counted(0);
        let mut err = Vec::new();
        let mut io = Io {
            out: &mut out,
            err: &mut err,
            now: Timestamp::now(),
        };
        let started = Instant::now();
        let code = run(cli, &mut io).await;
        in_process.push(started.elapsed());
        assert_eq!(code, EXIT_OK, "{}", String::from_utf8_lossy(&err));
        bytes = out.0;
    }

    // The binary.
    let binary = env!("CARGO_BIN_EXE_mesh-controller");
    let mut whole = Vec::new();
    for _ in 0..RUNS {
        let started = Instant::now();
        let status = Command::new(binary)
            .args(args)
            .stdout(Stdio::null())
            .status()
            .expect("running mesh-controller");
        whole.push(started.elapsed());
        assert!(status.success());
    }

    (in_process, whole, bytes)
}

fn main() {
    mesh_controller::init_tracing("warn");
    // One thread, as the binary runs `status`.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let standings = env_number("MESH_BENCH_STANDINGS", 100_000);
        let (pg, options, client) = store("status").await;
        // 100 providers on 10 machines, each failing standings/100 consumers;
        // a third of the words are silent.
        client
            .execute(
                "INSERT INTO failing (provider_module, provider_machine, consumer, consumer_machine,
                     provision, class, error, since, attempts, said_at, stream_seq)
                 SELECT 'p' || (i % $1), 'db-' || (i % $1 % 10), 'c' || i, 'app-' || (i % 7),
                     'postgres-database', 'credentials-rejected',
                     'password authentication failed for user \"c' || i || '\"',
                     now() - interval '2 hours', 61 + i % 100,
                     now() - (i % 3) * interval '40 minutes', i
                 FROM generate_series(1, $2) AS i",
                &[&(PROVIDERS as i32), &(standings as i32)],
            )
            .await
            .expect("filling the store");
        client
            .batch_execute("VACUUM ANALYZE failing")
            .await
            .expect("vacuum");

        let dir = tempfile::tempdir().expect("temp dir");
        let modules: Vec<String> = (0..PROVIDERS)
            .map(|p| {
                format!(
                    r#"{{"module":"p{p}","machine":"db-{}","provides":["postgres-database"]}}"#,
                    p % 10
                )
            })
            .collect();
        let declaration = dir.path().join("declaration.json");
        std::fs::write(
            &declaration,
            format!(r#"{{"modules":[{}]}}"#, modules.join(",")),
        )
        .expect("writing the declaration");
        let args = vec![
            "--database".to_owned(),
            format!("host=127.0.0.1 port={} user=postgres dbname=status", pg.port()),
            "--database-password-file".to_owned(),
            pg.superuser_password_file().display().to_string(),
            "--declaration".to_owned(),
            declaration.display().to_string(),
            "status".to_owned(),
            "--json".to_owned(),
        ];

        let cli = <Cli as clap::Parser>::try_parse_from(
            std::iter::once("mesh-controller".to_owned()).chain(args.iter().cloned()),
        )
        .expect("command line");
        let (stale_in, stale_bin, _) = measure(&cli, &args).await;

        // The pages written, as a running `serve` keeps them.
        let mut writer = PgStore::new(options);
        let started = Instant::now();
        let mut pages = 0;
        loop {
            let built = writer.build_pages(256).await.expect("writing pages");
            pages += built.written;
            if built.taken < 256 {
                break;
            }
        }
        let building = started.elapsed();
        let (paged_in, paged_bin, bytes) = measure(&cli, &args).await;

        // The floor: the server alone, returning as many rows.
        let mut floor_one = Vec::new();
        let mut floor_all = Vec::new();
        for _ in 0..RUNS {
            let started = Instant::now();
            client
                .query("SELECT 1 FROM failing", &[])
                .await
                .expect("floor query");
            floor_one.push(started.elapsed());
            let started = Instant::now();
            client
                .query(
                    "SELECT provider_module, provider_machine, consumer, consumer_machine, \
                     provision, class, error, since, attempts, said_at FROM failing",
                    &[],
                )
                .await
                .expect("floor query");
            floor_all.push(started.elapsed());
        }

        println!(
            "status --json with {standings} standings ({:.1} MB of JSON), {RUNS} runs each",
            bytes as f64 / 1e6
        );
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        let line = |what: &str, times: Vec<Duration>, target: &str| {
            let (median, best) = median(times);
            println!(
                "  {what:<52} median {:>6.1} ms, best {:>6.1} ms{target}",
                ms(median),
                ms(best)
            );
        };
        println!("  pages written ({pages} pages in {:.1} s, as serve keeps them):", building.as_secs_f64());
        line("in process (connect, read, compose, write)", paged_in, "");
        let (paged_median, _) = median(paged_bin.clone());
        line("binary (process start included)", paged_bin, "   (target < 50 ms)");
        println!(
            "    ratio to the target: {:.2}",
            ms(paged_median) / 50.0
        );
        println!("  every page stale (no serve since the words came: rows read):");
        line("in process", stale_in, "");
        line("binary", stale_bin, "");
        let (one, _) = median(floor_one);
        let (all, _) = median(floor_all);
        println!(
            "  for scale, on the same server: SELECT 1 over the rows {:>6.1} ms, the standings' columns {:>6.1} ms",
            one.as_secs_f64() * 1e3,
            all.as_secs_f64() * 1e3
        );
    });
}
