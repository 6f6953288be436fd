//! What the provider's benchmarks share: how rounds are summed up.

use std::time::Duration;

/// The median of some rounds.
pub fn median(values: &[Duration]) -> Duration {
    let mut sorted = values.to_vec();
    sorted.sort();
    sorted[sorted.len() / 2]
}

/// Each round in seconds, for the record: `1.234 1.301 …`.
pub fn rounds(values: &[Duration]) -> String {
    values
        .iter()
        .map(|d| format!("{:.3}", d.as_secs_f64()))
        .collect::<Vec<_>>()
        .join(" ")
}
