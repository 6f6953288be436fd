//! `mesh-console` over a big store: 100,000 standings (100
//! providers on 10 machines, as the status benchmark's) and 1,000,000
//! history rows (20,000 of the failing consumers, each failing and
//! recovering 25 times over 90 days, in random order of consumer as rounds
//! write them). The console binary runs as an operator would start it;
//! the benchmark is its client.
//!
//! - A page's first byte: `GET /` (the mesh page), `GET
//!   /consumer/c42@app-0` (a consumer's page: its standing, its 30 days of
//!   history) and `GET /consumers` (the consumer table's first page, over
//!   every standing), a new connection each, time to the first byte of the answer
//!   and to its last, median of 11 after one warm-up.
//! - 100 open pages following live: 100 `/events` streams (50 on the mesh
//!   page, one on each of the 10 machine pages, 10 provider pages, 30
//!   consumer pages) while the store changes once a second (a consumer
//!   begins failing, then recovers, as a round commits it): the console
//!   process's CPU (utime + stime from `/proc/PID/stat`) and resident memory
//!   (`VmRSS` from `/proc/PID/status`, sampled every second) over the run,
//!   and how long after each commit the mesh page's streams got the page
//!   that shows it.
//!
//! ```text
//! cargo bench -p mesh-console --bench console
//! MESH_BENCH_STANDINGS=10000 MESH_BENCH_HISTORY_ROWS=100000 MESH_BENCH_LIVE_SECONDS=10 \
//!     cargo bench -p mesh-console --bench console
//! MESH_BENCH_STATEMENTS=1 cargo bench -p mesh-console --bench console   # the server's statements
//! ```

// The controller benchmarks' store setup (a private cluster, a migrated
// store, standings filled in by SQL, the providers' declaration) and their
// median of timings, shared rather than copied.
#[path = "../../controller/benches/common/store.rs"]
mod common;
#[path = "../../controller/benches/common/measure.rs"]
mod measure;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{
    env_number, fill_history, fill_standings, print_statements, provider_modules,
    statements_if_asked, store, write_declaration,
};
use measure::{median, ms, psql_copy};
use mesh_pg_store::PgStore;
use mesh_protocol::{Name, Timestamp};
use mesh_status::store::HistoryFilter;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const RUNS: usize = 11;
const PROVIDERS: u64 = 100;
const PER_CONSUMER: u64 = 50;
/// The consumer whose page is timed and whose standing comes and goes.
const CONSUMER: &str = "c42@app-0";

/// The console binary over the store, stopped on drop.
struct Console {
    child: Child,
    port: u16,
    /// `/proc/PID/stat`'s clock ticks a second.
    ticks: u64,
}

impl Drop for Console {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Console {
    fn start(args: &[String]) -> Console {
        let port = mesh_test_support::free_port();
        let child = Command::new(env!("CARGO_BIN_EXE_mesh-console"))
            .env_remove("RUST_LOG")
            // `MESH_BENCH_CONSOLE_LOG=mesh_console=debug` shows the
            // console's rounds of reads for its open pages.
            .envs(std::env::var("MESH_BENCH_CONSOLE_LOG").map(|v| ("RUST_LOG", v)))
            .args(args)
            .args(["--listen", &format!("127.0.0.1:{port}")])
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("starting mesh-console");
        let deadline = Instant::now() + Duration::from_secs(20);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "the console did not listen within 20 s"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        Console {
            child,
            port,
            ticks: clock_ticks(),
        }
    }

    /// CPU time so far (user + system), from `/proc/PID/stat`.
    fn cpu(&self) -> Duration {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.child.id()))
            .expect("reading the console's stat");
        // Fields after the command's closing parenthesis; utime and stime
        // are fields 14 and 15 of the whole line (11 and 12 after it).
        let rest = &stat[stat.rfind(')').expect("a stat line") + 2..];
        let fields: Vec<&str> = rest.split_whitespace().collect();
        let ticks: u64 =
            fields[11].parse::<u64>().expect("utime") + fields[12].parse::<u64>().expect("stime");
        Duration::from_secs_f64(ticks as f64 / self.ticks as f64)
    }

    /// Resident memory now, in KiB (`VmRSS`).
    fn rss_kib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .expect("reading the console's status");
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .expect("VmRSS in /proc/PID/status")
    }
}

/// The clock ticks a second of `/proc/PID/stat` (`getconf CLK_TCK`).
fn clock_ticks() -> u64 {
    let out = Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .expect("running getconf");
    String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .expect("a number from getconf CLK_TCK")
}

/// `GET path` on a new connection: (time to the first byte of the answer,
/// time to its end, status code, bytes).
fn get(port: u16, path: &str) -> (Duration, Duration, u16, usize) {
    let started = Instant::now();
    let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("connecting to the console");
    stream.set_nodelay(true).expect("nodelay");
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    )
    .expect("sending the request");
    let mut buf = vec![0u8; 1 << 16];
    let mut answer = Vec::new();
    let mut first = None;
    loop {
        let n = stream.read(&mut buf).expect("reading the answer");
        if n == 0 {
            break;
        }
        first.get_or_insert_with(|| started.elapsed());
        answer.extend_from_slice(&buf[..n]);
    }
    let whole = started.elapsed();
    let code = std::str::from_utf8(&answer[..answer.len().min(12)])
        .ok()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    (first.expect("an answer"), whole, code, answer.len())
}

/// Times `GET path` [`RUNS`] times after one warm-up and prints the
/// medians; returns the first byte's, in milliseconds.
fn time_page(port: u16, path: &str, what: &str, target_ms: f64) -> f64 {
    let (_, _, code, _) = get(port, path);
    assert_eq!(code, 200, "{what}: GET {path} answered {code}");
    let mut firsts = Vec::new();
    let mut wholes = Vec::new();
    let mut bytes = 0;
    for _ in 0..RUNS {
        let (first, whole, code, n) = get(port, path);
        assert_eq!(code, 200, "{what}: GET {path} answered {code}");
        firsts.push(first);
        wholes.push(whole);
        bytes = n;
    }
    let (first, whole) = (median(firsts), median(wholes));
    println!(
        "  {what} (GET {path}, {:.1} kB): first byte {:>6.1} ms (target < {target_ms} ms, \
         ratio {:.2}), whole {:>6.1} ms",
        bytes as f64 / 1e3,
        ms(first),
        ms(first) / target_ms,
        ms(whole),
    );
    ms(first)
}

/// One `/events` stream: the times its `main` events came.
async fn follow(port: u16, page: String, events: Arc<Mutex<Vec<Instant>>>) {
    let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .expect("connecting a stream");
    let request = format!(
        "GET /events?page={page} HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n"
    );
    stream
        .write_all(request.as_bytes())
        .await
        .expect("asking for the stream");
    let mut buf = vec![0u8; 1 << 16];
    // The tail of what came before, so a marker cut in two is still seen.
    let mut carry: Vec<u8> = Vec::new();
    const MARK: &[u8] = b"event: main";
    loop {
        let n = match stream.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        let now = Instant::now();
        carry.extend_from_slice(&buf[..n]);
        let found = carry.windows(MARK.len()).filter(|w| *w == MARK).count();
        if found > 0 {
            let mut e = events.lock().expect("not poisoned");
            e.extend(std::iter::repeat_n(now, found));
        }
        let keep = carry.len().min(MARK.len() - 1);
        carry.drain(..carry.len() - keep);
    }
}

/// Toggles `c42@app-0`'s standing from p42@db-2 as a round would commit it.
async fn change(client: &tokio_postgres::Client, n: u64) {
    if n % 2 == 0 {
        client
            .execute(
                "DELETE FROM failing WHERE provider_module = 'p42' AND provider_machine = 'db-2'
                   AND consumer = 'c42'",
                &[],
            )
            .await
            .expect("a recovery");
    } else {
        client
            .execute(
                "INSERT INTO failing (provider_module, provider_machine, consumer, consumer_machine,
                     provision, class, error, since, attempts, said_at, stream_seq, stream_epoch)
                 VALUES ('p42', 'db-2', 'c42', 'app-0', 'postgres-database', 'unreachable',
                     'connection refused', now(), 1, now(), 10000000 + $1::int8, 1)",
                &[&(n as i64)],
            )
            .await
            .expect("a failure");
    }
}

fn main() {
    mesh_runtime::log::init_tracing("warn", mesh_runtime::LogFormat::Text);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let standings = env_number("MESH_BENCH_STANDINGS", 100_000);
        let rows = env_number("MESH_BENCH_HISTORY_ROWS", 1_000_000);
        let live_seconds = env_number("MESH_BENCH_LIVE_SECONDS", 60);
        let consumers = rows / PER_CONSUMER;
        let (mut pg, options, client) = store("console").await;
        let (client, statements) = statements_if_asked(&mut pg, client, "console").await;
        fill_standings(&client, PROVIDERS, standings).await;
        client
            .batch_execute("VACUUM ANALYZE failing")
            .await
            .expect("vacuum");
        let count = fill_history(&client, rows, consumers, PROVIDERS).await;

        // The providers, and the consumers whose pages are opened (c1..c30
        // and c42), each requiring its provider.
        let dir = tempfile::tempdir().expect("temp dir");
        let mut modules = provider_modules(PROVIDERS);
        let paged: Vec<u64> = (1..=30).chain([42]).collect();
        for c in &paged {
            modules.push(format!(
                r#"{{"module":"c{c}","machine":"app-{}","requires":[{{"provision":"postgres-database","from":"p{}@db-{}"}}]}}"#,
                c % 7,
                c % PROVIDERS,
                c % PROVIDERS % 10
            ));
        }
        let declaration = write_declaration(dir.path(), &modules);
        let mut args = pg.database_flags("console").to_vec();
        args.extend(["--declaration".to_owned(), declaration.display().to_string()]);
        let console = Console::start(&args);
        println!(
            "console over {standings} standings and {count} history rows, median of {RUNS} runs"
        );
        let mesh_page = time_page(console.port, "/", "the mesh page", 50.0);
        // The machine's pace in the same run, which a slower or busier hour
        // scales alike: the reference of status's benchmark (at d3560ae,
        // the day of its 28.2 ms, it took 338 ms).
        let copy = median(
            (0..RUNS)
                .map(|_| psql_copy(pg.port(), pg.superuser_password(), "console", ""))
                .collect(),
        );
        println!(
            "    the machine's pace: psql COPY of the {standings} standings as JSON {:>6.1} ms \
             (as in status's benchmark); the mesh page's first byte is {:.3} of it",
            ms(copy),
            mesh_page / ms(copy)
        );
        time_page(
            console.port,
            &format!("/consumer/{CONSUMER}"),
            "a consumer's page",
            20.0,
        );
        time_page(
            console.port,
            "/consumers",
            "the consumer table's first page",
            100.0,
        );
        time_page(
            console.port,
            "/consumers?state=failing&machine=app-3&page=5",
            "a page of the consumer table, narrowed",
            100.0,
        );

        if statements {
            println!("  the server's statements for those pages:");
            print_statements(&client).await;
        }

        // The consumer page's history read alone, in process (what the
        // page adds to the mesh's read).
        let mut store = PgStore::new(options.clone());
        let (name, machine) = CONSUMER.split_once('@').expect("consumer@machine");
        let filter = HistoryFilter {
            consumer: Some((
                Name::parse(name).expect("a name"),
                Some(Name::parse(machine).expect("a name")),
            )),
            provider: None,
            machine: None,
            since: Timestamp::from_system(
                std::time::SystemTime::now() - Duration::from_secs(30 * 86_400),
            ),
        };
        let mut reads = Vec::new();
        let mut read = 0;
        for _ in 0..=RUNS {
            let started = Instant::now();
            let (transitions, _) = store.read_history(&filter).await.expect("reading history");
            reads.push(started.elapsed());
            read = transitions.len();
        }
        println!(
            "  the consumer page's history read alone, in process (30 days, {read} rows): \
             {:.1} ms (target < 20 ms, ratio {:.2})",
            ms(median(reads[1..].to_vec())),
            ms(median(reads[1..].to_vec())) / 20.0
        );

        // 100 open pages following live.
        let mut pages: Vec<String> = vec!["/".to_owned(); 50];
        pages.extend((0..10).map(|m| format!("/machine/db-{m}")));
        pages.extend((0..10).map(|p| format!("/provider/p{p}@db-{}", p % 10)));
        pages.extend(paged.iter().take(30).map(|c| format!("/consumer/c{c}@app-{}", c % 7)));
        let streams: Vec<Arc<Mutex<Vec<Instant>>>> =
            pages.iter().map(|_| Arc::default()).collect();
        let rss_before = console.rss_kib();
        let tasks: Vec<_> = pages
            .iter()
            .zip(&streams)
            .map(|(page, events)| tokio::spawn(follow(console.port, page.clone(), Arc::clone(events))))
            .collect();
        // Every stream has its first page before the minute starts.
        let deadline = Instant::now() + Duration::from_secs(60);
        while streams.iter().any(|s| s.lock().expect("not poisoned").is_empty()) {
            assert!(Instant::now() < deadline, "a stream got no page within 60 s");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let (cpu_start, started) = (console.cpu(), Instant::now());
        let mut rss = vec![console.rss_kib()];
        let mut commits = Vec::new();
        let mut tick = tokio::time::interval(Duration::from_secs(1));
        tick.tick().await;
        for n in 0..live_seconds {
            change(&client, n).await;
            commits.push(Instant::now());
            tick.tick().await;
            rss.push(console.rss_kib());
        }
        let (cpu, elapsed) = (console.cpu() - cpu_start, started.elapsed());
        if statements {
            println!("  the server's statements while the pages followed live:");
            print_statements(&client).await;
        }
        for task in tasks {
            task.abort();
        }
        // How long after each commit the mesh page's streams had a page
        // (the first after the commit, before the next change).
        let mut delays = Vec::new();
        let mut missed = 0;
        for events in &streams[..50] {
            let events = events.lock().expect("not poisoned");
            for (k, at) in commits.iter().enumerate() {
                let until = commits.get(k + 1).copied().unwrap_or(*at + Duration::from_secs(1));
                match events.iter().find(|e| *e >= at && *e < &until) {
                    Some(e) => delays.push(*e - *at),
                    None => missed += 1,
                }
            }
        }
        let events: usize = streams
            .iter()
            .map(|s| s.lock().expect("not poisoned").len())
            .sum();
        delays.sort();
        let max = delays.last().copied().unwrap_or_default();
        println!(
            "  100 open pages following live ({} distinct), the store changing once a second, \
             {:.0} s:",
            {
                let mut d = pages.clone();
                d.sort();
                d.dedup();
                d.len()
            },
            elapsed.as_secs_f64()
        );
        println!(
            "    console CPU {:.1} % of one core ({:.2} s), resident memory {} KiB before the \
             streams, {} KiB at the start, {} KiB at most, {} KiB at the end; {events} events sent",
            cpu.as_secs_f64() / elapsed.as_secs_f64() * 100.0,
            cpu.as_secs_f64(),
            rss_before,
            rss[0],
            rss.iter().max().copied().unwrap_or_default(),
            rss.last().copied().unwrap_or_default(),
        );
        println!(
            "    a change on the mesh page's 50 streams: median {:.0} ms, max {:.0} ms after the \
             commit (target < 1000 ms, ratio {:.2}); {missed} of {} (change, stream) pairs got \
             no page before the next change",
            ms(delays.get(delays.len() / 2).copied().unwrap_or_default()),
            ms(max),
            ms(max) / 1000.0,
            commits.len() * 50,
        );
        drop(console);
    });
}
