//! The simulation's timings: the loop's and the link's settings, shorter
//! than the defaults in the same proportions, and the delivery bound the
//! invariants allow.

use std::time::Duration;

use mesh_sdk::testing::Settings;
use mesh_status::link::LinkSettings;

/// The simulation's timings (shorter than the defaults, in the same
/// proportions, so a simulated half hour holds many failures and restarts).
#[derive(Clone, Copy, Debug)]
pub struct Timings {
    /// The providers' loop settings.
    pub settings: Settings,
    /// The link's settings.
    pub link: LinkSettings,
    /// How often a provider's outbox tries its pending events again.
    pub retry_every: Duration,
}

impl Default for Timings {
    fn default() -> Self {
        let mut settings = Settings {
            pass_every: Duration::from_secs(5),
            alive_every: Duration::from_secs(20),
            concurrency: 4,
            ..Settings::default()
        };
        settings.standing.failing_after = Duration::from_secs(60);
        settings.standing.repeat_every = Duration::from_secs(150);
        settings.retire.after = Duration::from_secs(60);
        Timings {
            settings,
            link: LinkSettings {
                batch: 16,
                wait: Duration::from_secs(2),
                nak_first: Duration::from_millis(500),
                nak_max: Duration::from_secs(8),
                ack_wait: Duration::from_secs(10),
                ..LinkSettings::default()
            },
            retry_every: Duration::from_secs(2),
        }
    }
}

impl Timings {
    /// The delivery bound: how long an event may wait once the bus, the store
    /// and the controller are all there (an ack wait, the longest NAK delay,
    /// two pulls, an outbox retry, and a second of slack each side).
    pub fn delivery(&self) -> Duration {
        self.link.ack_wait + self.link.nak_max + 2 * self.link.wait + self.retry_every + SLACK
    }
}

/// Slack for whole-second steps.
pub const SLACK: Duration = Duration::from_secs(2);
