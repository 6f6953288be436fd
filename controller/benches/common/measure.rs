//! How the controller's and the console's benchmarks read their timings:
//! the median of a run's times, in milliseconds. It uses nothing of
//! `mesh-controller`: the console's benchmark includes this file by its
//! path.

use std::time::Duration;

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
