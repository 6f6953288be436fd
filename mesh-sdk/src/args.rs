//! `ProviderArgs`: the flags every provider binary shares (docs/contracts/command-lines.md#provider-flags).

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use mesh_protocol::ModuleId;
use mesh_runtime::ServiceArgs;

use crate::brake::BrakeRules;
use crate::repair::RepairRules;
use crate::retire::RetireRules;
use crate::settings::Settings;
use crate::standing::StandingRules;

/// The shared provider flags, with env fallbacks and humantime durations.
///
/// Flatten it into a binary's own arguments:
///
/// ```no_run
/// use clap::Parser;
///
/// #[derive(Parser)]
/// struct Cli {
///     #[command(flatten)]
///     provider: mesh_sdk::ProviderArgs,
///     /// The provider's own flag.
///     #[arg(long)]
///     root: std::path::PathBuf,
/// }
///
/// let cli = Cli::parse();
/// println!("reading {}", cli.provider.contributions.display());
/// ```
#[derive(Args, Clone, Debug, PartialEq, Eq)]
pub struct ProviderArgs {
    /// The contributions file (JSON), re-read every pass.
    #[arg(long, env = "MESH_CONTRIBUTIONS")]
    pub contributions: PathBuf,

    /// Which provider instance this is, MODULE@MACHINE; the contributions file must name it in its `provider` block. Default: whatever that block names. Given, the provider joins the bus and says what is wrong even when its file cannot be read at start.
    #[arg(long, env = "MESH_PROVIDER", value_name = "MODULE@MACHINE")]
    pub provider: Option<ModuleId>,

    /// Time between passes.
    #[arg(long, env = "MESH_PASS_EVERY", default_value = "5s", value_parser = humantime::parse_duration)]
    pub pass_every: Duration,

    /// How long a consumer fails without one success before `failing` is published.
    #[arg(long, env = "MESH_FAILING_AFTER", default_value = "5m", value_parser = humantime::parse_duration)]
    pub failing_after: Duration,

    /// How often `failing` is published again while it lasts.
    #[arg(long, env = "MESH_REPEAT_EVERY", default_value = "15m", value_parser = humantime::parse_duration)]
    pub repeat_every: Duration,

    /// Passes a withdrawn consumer must be missing for before it is retired.
    #[arg(long, env = "MESH_RETIRE_AFTER_PASSES", default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..))]
    pub retire_after_passes: u32,

    /// Time a withdrawn consumer must be missing for before it is retired.
    #[arg(long, env = "MESH_RETIRE_AFTER", default_value = "10m", value_parser = humantime::parse_duration)]
    pub retire_after: Duration,

    /// How often the provider publishes `alive` (after its first pass, then this often), so a provider that is down is told apart from one that is well.
    #[arg(long, env = "MESH_ALIVE_EVERY", default_value = "1m", value_parser = humantime::parse_duration)]
    pub alive_every: Duration,

    /// Consumers attempted at once.
    #[arg(long, env = "MESH_CONCURRENCY", default_value_t = 16, value_parser = clap::value_parser!(u32).range(1..))]
    pub concurrency: u32,

    /// Bound of each call to the backend.
    #[arg(long, env = "MESH_CALL_TIMEOUT", default_value = "30s", value_parser = humantime::parse_duration)]
    pub call_timeout: Duration,

    /// How often a known fault (repair hook) is probed.
    #[arg(long, env = "MESH_REPAIR_CHECK_EVERY", default_value = "5m", value_parser = humantime::parse_duration)]
    pub repair_check_every: Duration,

    /// Wait after a first failed repair (doubling after each failure).
    #[arg(long, env = "MESH_REPAIR_BRAKE", default_value = "10m", value_parser = humantime::parse_duration)]
    pub repair_brake: Duration,

    /// Longest wait between failed repairs.
    #[arg(long, env = "MESH_REPAIR_BRAKE_MAX", default_value = "6h", value_parser = humantime::parse_duration)]
    pub repair_brake_max: Duration,

    /// Bound of one repair.
    #[arg(long, env = "MESH_REPAIR_TIMEOUT", default_value = "2m", value_parser = humantime::parse_duration)]
    pub repair_timeout: Duration,

    /// The flags every mesh service shares: the bus (`--nats` and the
    /// other transport flags, `--ack-timeout`), `--metrics-listen` and
    /// `--log-format`.
    #[command(flatten)]
    pub service: ServiceArgs,
}

impl ProviderArgs {
    /// The flags' defaults, reading `contributions` (for embedders and
    /// tests; environment variables are not consulted).
    pub fn with_defaults(contributions: impl Into<PathBuf>) -> ProviderArgs {
        let defaults = Settings::default();
        ProviderArgs {
            contributions: contributions.into(),
            provider: None,
            pass_every: defaults.pass_every,
            failing_after: defaults.standing.failing_after,
            repeat_every: defaults.standing.repeat_every,
            retire_after_passes: defaults.retire.after_passes,
            retire_after: defaults.retire.after,
            alive_every: defaults.alive_every,
            concurrency: defaults.concurrency as u32,
            call_timeout: defaults.call_timeout,
            repair_check_every: defaults.repair.check_every,
            repair_brake: defaults.repair.brake.first,
            repair_brake_max: defaults.repair.brake.cap,
            repair_timeout: defaults.repair.repair_timeout,
            service: ServiceArgs::default(),
        }
    }

    /// The loop settings these flags ask for.
    pub(crate) fn settings(&self) -> Settings {
        Settings {
            pass_every: self.pass_every,
            standing: StandingRules {
                failing_after: self.failing_after,
                repeat_every: self.repeat_every,
            },
            retire: RetireRules {
                after_passes: self.retire_after_passes,
                after: self.retire_after,
            },
            concurrency: self.concurrency as usize,
            call_timeout: self.call_timeout,
            alive_every: self.alive_every,
            repair: RepairRules {
                check_every: self.repair_check_every,
                brake: BrakeRules {
                    first: self.repair_brake,
                    cap: self.repair_brake_max,
                },
                repair_timeout: self.repair_timeout,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        provider: ProviderArgs,
    }

    #[test]
    fn defaults_are_the_design() {
        let cli = Cli::try_parse_from(["p", "--contributions", "c.json"]).unwrap();
        let s = cli.provider.settings();
        assert_eq!(s, Settings::default());
        assert_eq!(cli.provider.service.nats.url, "nats://127.0.0.1:4222");
        assert_eq!(cli.provider, ProviderArgs::with_defaults("c.json"));
    }

    #[test]
    fn flags_take_humantime() {
        let cli = Cli::try_parse_from([
            "p",
            "--contributions",
            "c.json",
            "--pass-every",
            "1s",
            "--failing-after",
            "5s",
            "--repeat-every",
            "1m 30s",
            "--retire-after-passes",
            "2",
            "--retire-after",
            "500ms",
            "--nats-user",
            "u",
            "--nats-password-file",
            "pw",
        ])
        .unwrap();
        let s = cli.provider.settings();
        assert_eq!(s.pass_every, Duration::from_secs(1));
        assert_eq!(s.standing.failing_after, Duration::from_secs(5));
        assert_eq!(s.standing.repeat_every, Duration::from_secs(90));
        assert_eq!(s.retire.after_passes, 2);
        assert_eq!(s.retire.after, Duration::from_millis(500));
    }

    #[test]
    fn bad_values_are_refused() {
        for bad in [
            vec!["p", "--contributions", "c", "--pass-every", "soon"],
            vec!["p", "--contributions", "c", "--concurrency", "0"],
            vec!["p", "--contributions", "c", "--nats-user", "u"],
            vec!["p"],
        ] {
            assert!(Cli::try_parse_from(&bad).is_err(), "{bad:?}");
        }
    }
}
