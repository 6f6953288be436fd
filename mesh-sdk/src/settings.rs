//! The loop's settings ([`Settings`]): what the shared provider flags
//! (`ProviderArgs`) ask for, and what tests and embedders set directly.

use std::time::Duration;

use crate::repair::RepairRules;
use crate::retire::RetireRules;
use crate::standing::StandingRules;

/// Everything configurable about the loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Settings {
    /// Time between pass starts.
    pub pass_every: Duration,
    /// Standing timings.
    pub standing: StandingRules,
    /// Retirement timings.
    pub retire: RetireRules,
    /// Consumers attempted at once.
    pub concurrency: usize,
    /// Bound of each provisioner call.
    pub call_timeout: Duration,
    /// Repair hook timings.
    pub repair: RepairRules,
    /// How often `alive` is published (after the first pass, then this often).
    pub alive_every: Duration,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            pass_every: Duration::from_secs(5),
            standing: StandingRules::default(),
            retire: RetireRules::default(),
            concurrency: 16,
            call_timeout: Duration::from_secs(30),
            repair: RepairRules::default(),
            alive_every: Duration::from_secs(60),
        }
    }
}
