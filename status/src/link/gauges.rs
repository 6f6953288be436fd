//! The gauges of what `status` would say, as `serve` exports them
//! (`render::series` sets them from the report; needs `--declaration`).
//!
//! | metric | type | what |
//! | --- | --- | --- |
//! | `mesh_status_all_well` | gauge | 1 when the report `status` prints is all well, else 0 (0 until the first report) |
//! | `mesh_status_clauses{clause}` | gauge | for every clause that makes the report not all well, its count (0 when it does not hold) |
//! | `mesh_status_problems{clause,provider,cause}` | gauge | the same counts by provider and cause; only those that hold |
//! | `mesh_status_reported_timestamp_seconds` | gauge | when the report was last made (Unix seconds; 0: not yet) |
//! | `mesh_standings_failing` | gauge | deprecated alias of `mesh_status_clauses{clause="consumers_failing"}` |
//! | `mesh_providers_unheard` | gauge | deprecated alias of `mesh_status_clauses{clause="providers_unheard"}` |

use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

/// The labels of `mesh_status_problems`: clause, provider, cause.
pub type ProblemLabels = [(&'static str, String); 3];

/// What `status` would say, as gauges.
#[derive(Debug, Default)]
pub struct StatusGauges {
    /// 1 when all well.
    pub all_well: Gauge,
    /// The count of each clause, by `clause`.
    pub clauses: Family<[(&'static str, &'static str); 1], Gauge>,
    /// The counts by clause, provider and cause.
    pub problems: Family<ProblemLabels, Gauge>,
    /// When the report was last made (Unix seconds).
    pub reported_at: Gauge,
    /// Standings `status` lists (the alias kept from before).
    pub standings_failing: Gauge,
    /// Providers not heard from (likewise).
    pub providers_unheard: Gauge,
}

impl StatusGauges {
    /// Every gauge registered in `registry`, at zero.
    pub(crate) fn register(registry: &mut Registry) -> StatusGauges {
        let gauges = StatusGauges::default();
        registry.register(
            "status_all_well",
            "1 when the report status prints is all well, else 0 (with --declaration; 0 until \
             the first report)",
            gauges.all_well.clone(),
        );
        registry.register(
            "status_clauses",
            "For every clause that makes the status report not all well, its count (0 when it \
             does not hold)",
            gauges.clauses.clone(),
        );
        registry.register(
            "status_problems",
            "The counts of the clauses that make the status report not all well, by provider \
             and cause",
            gauges.problems.clone(),
        );
        registry.register(
            "status_reported_timestamp_seconds",
            "When serve last made the status report for these gauges (Unix seconds; 0: not yet)",
            gauges.reported_at.clone(),
        );
        registry.register(
            "standings_failing",
            "Standings status lists (with --declaration; deprecated: \
             mesh_status_clauses{clause=\"consumers_failing\"})",
            gauges.standings_failing.clone(),
        );
        registry.register(
            "providers_unheard",
            "Providers status names not heard from (with --declaration; deprecated: \
             mesh_status_clauses{clause=\"providers_unheard\"})",
            gauges.providers_unheard.clone(),
        );
        gauges
    }
}
