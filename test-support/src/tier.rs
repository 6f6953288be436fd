//! The slow tier: tests that cost minutes of CPU on a 2-core machine for
//! what the lean ones already show another way. They run when
//! `MESH_TESTS_SLOW` is set (`scripts/test --slow` sets it) and otherwise
//! say `SKIPPED` and why, so a run says what it left out.

/// The variable that turns the slow tier on.
pub const SLOW_TIER: &str = "MESH_TESTS_SLOW";

/// Whether the slow-tier test `test` runs here; says `SKIPPED` (with
/// `why_slow`, what it costs and what covers it meanwhile) when it does not.
#[must_use]
pub fn in_slow_tier(test: &str, why_slow: &str) -> bool {
    let on = std::env::var_os(SLOW_TIER).is_some_and(|value| !value.is_empty() && value != "0");
    if !on {
        eprintln!("SKIPPED {test}: slow tier ({why_slow}); run it with {SLOW_TIER}=1 or scripts/test --slow");
    }
    on
}
