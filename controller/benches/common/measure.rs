//! How the controller's and the console's benchmarks read their timings:
//! the median of a run's times, in milliseconds, and the reference they
//! set them beside (PostgreSQL's own rate of writing the standings as
//! JSON, which a slower or busier hour scales alike). It uses nothing of
//! `mesh-controller`: the console's benchmark includes this file by its
//! path.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The standings' columns [`psql_copy`] writes (and status's benchmark
/// reads in process).
#[allow(dead_code)] // the status benchmark's, not the console's
pub const COLUMNS: &str = "provider_module, provider_machine, consumer, consumer_machine, \
                           provision, class, error, since, attempts, said_at";

/// psql writing the standings of `db` (`filter`: a `WHERE` clause, or
/// nothing) as JSON, in order, to /dev/null; its time.
#[allow(dead_code)] // the status and console benchmarks'
pub fn psql_copy(port: u16, password: &str, db: &str, filter: &str) -> Duration {
    let sql = format!(
        "COPY (SELECT row_to_json(f) FROM (SELECT {COLUMNS} FROM failing {filter} \
         ORDER BY provider_module, provider_machine, consumer) f) TO STDOUT"
    );
    let started = Instant::now();
    let status = Command::new("psql")
        .args(["-X", "-q", "-h", "127.0.0.1", "-p", &port.to_string()])
        .args(["-U", "postgres", "-d", db, "-c", &sql])
        .env("PGPASSWORD", password)
        .stdout(Stdio::null())
        .status()
        .expect("running psql");
    assert!(status.success(), "psql failed");
    started.elapsed()
}

/// The median of `times` (the upper one of an even count).
#[allow(dead_code)] // the status, history and console benchmarks'
pub fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

/// `d` in milliseconds.
#[allow(dead_code)] // the status, history and console benchmarks'
pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}
