//! `status --json` time with 100,000 standings (target < 50 ms): in process
//! (connect, read, compose, serialize) and through the binary (process start
//! included), the output thrown away.
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
use mesh_sdk::Timestamp;

const PROVIDERS: u64 = 100;
const RUNS: usize = 15;

fn median(mut times: Vec<Duration>) -> (Duration, Duration) {
    times.sort();
    (times[times.len() / 2], times[0])
}

fn main() {
    mesh_controller::init_tracing("warn");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let standings = env_number("MESH_BENCH_STANDINGS", 100_000);
        let (pg, _options, client) = store("status").await;
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

        // In process.
        let cli = <Cli as clap::Parser>::try_parse_from(
            std::iter::once("mesh-controller".to_owned()).chain(args.iter().cloned()),
        )
        .expect("command line");
        let mut bytes = 0usize;
        let mut in_process = Vec::new();
        for _ in 0..RUNS {
            let mut out = Vec::with_capacity(64 << 20);
            let mut err = Vec::new();
            let mut io = Io {
                out: &mut out,
                err: &mut err,
                now: Timestamp(std::time::SystemTime::now()),
            };
            let started = Instant::now();
            let code = run(&cli, &mut io).await;
            in_process.push(started.elapsed());
            assert_eq!(code, EXIT_OK, "{}", String::from_utf8_lossy(&err));
            bytes = out.len();
        }

        // The binary.
        let binary = env!("CARGO_BIN_EXE_mesh-controller");
        let mut whole = Vec::new();
        for _ in 0..RUNS {
            let started = Instant::now();
            let status = Command::new(binary)
                .args(&args)
                .stdout(Stdio::null())
                .status()
                .expect("running mesh-controller");
            whole.push(started.elapsed());
            assert!(status.success());
        }

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

        let (median_in, best_in) = median(in_process);
        let (median_bin, best_bin) = median(whole);
        println!(
            "status --json with {standings} standings ({:.1} MB of JSON), {RUNS} runs",
            bytes as f64 / 1e6
        );
        println!(
            "  in process (connect, read, compose, write): median {:>6.1} ms, best {:>6.1} ms",
            median_in.as_secs_f64() * 1e3,
            best_in.as_secs_f64() * 1e3
        );
        println!(
            "  binary (process start included):            median {:>6.1} ms, best {:>6.1} ms   (target < 50 ms)",
            median_bin.as_secs_f64() * 1e3,
            best_bin.as_secs_f64() * 1e3
        );
        let (one, _) = median(floor_one);
        let (all, _) = median(floor_all);
        println!(
            "  for scale, on the same server: SELECT 1 over the rows {:>6.1} ms, the standings' columns {:>6.1} ms",
            one.as_secs_f64() * 1e3,
            all.as_secs_f64() * 1e3
        );
    });
}
