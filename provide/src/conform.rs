//! `mesh-provide conform`: the SDK's conformance suite ([`mesh_sdk::conform`])
//! against a hook and its real backend: a start line (what an earlier run
//! left, removed), one line per rule on stdout, then `N passed, N failed`
//! (and `, N skipped`); exit 0 only when no rule failed. The `by-hand`
//! verb is its oracle and a hook's kill its interrupt ([`crate::by_hand`]).
//! `--list` prints the rules.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::Parser;
use mesh_runtime::log::LogArgs;
use mesh_runtime::program::{Flags, Program, ProgramFailure};
use mesh_runtime::LogFormat;
use mesh_sdk::conform::{conform, list, Suite};

use crate::by_hand::HookByHand;
use crate::hook::{Hook, HookSettings, Mode};
use crate::provisioner::HookProvisioner;

/// Exit code when a rule failed (or the hook could not be started).
pub const EXIT_FAILED: u8 = 1;

/// Runs mesh's conformance suite against a hook and its real backend (`--list` prints its rules): ensure, check, rotation, held, retire, re-enable and delete do what they say; a change by hand is mended; a provision it did not make is untouched; names with `_`, `-`, digits and 63 bytes side by side are each their own; a call cut off mid-way (the hook killed) leaves nothing that breaks the next ensure. Rules needing the `by-hand` verb are skipped when the hook answers it unsupported. One line per rule, then `N passed, N failed`; exit 0 only when none failed. It makes consumers named `conform-<random>-…`, removes what an earlier run left at its start, and fails if any of its own (`conform-<8 hex digits>-…`) is left at its end.
#[derive(Parser, Debug)]
#[command(
    name = "mesh-provide conform",
    version = mesh_runtime::endpoints::BuildInfo::version_text(env!("CARGO_PKG_VERSION"))
)]
pub struct ConformArgs {
    /// The hook to try.
    #[arg(long, env = "MESH_HOOK", required_unless_present = "list")]
    pub hook: Option<PathBuf>,

    /// Print the rules, one a line, and exit (no hook is run).
    #[arg(long)]
    pub list: bool,

    /// How the hook runs (as for `mesh-provide`).
    #[arg(long, env = "MESH_HOOK_MODE", value_enum, default_value_t = Mode::Exec)]
    pub hook_mode: Mode,

    /// Bound of each call to the hook.
    #[arg(long, env = "MESH_HOOK_TIMEOUT", default_value = "30s", value_parser = humantime::parse_duration)]
    pub hook_timeout: Duration,

    /// How long a hook may take to ensure and check again after a call cut
    /// off mid-way (in serve mode, started again behind its brake) before
    /// the cut rule fails.
    #[arg(long, default_value = "20s", value_parser = humantime::parse_duration)]
    pub recover_within: Duration,

    /// Consumers made at once by the parallel rule.
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub consumers: u32,

    /// The provision the suite's consumers ask for (a hook may refuse others).
    #[arg(long, default_value = "conform")]
    pub provision: String,

    #[command(flatten)]
    log: LogArgs,
}

impl Flags for ConformArgs {
    fn log_format(&self) -> LogFormat {
        self.log.format
    }

    /// The report is on stdout; the log says only what went wrong.
    fn log_level(&self) -> &'static str {
        "warn"
    }

    fn is_service(&self) -> bool {
        false
    }
}

/// Runs the suite; the report goes to stdout.
///
/// # Errors
/// A [`ProgramFailure`] ([`EXIT_FAILED`]) when the hook cannot be started or a rule failed.
pub async fn run(args: ConformArgs) -> Result<(), ProgramFailure> {
    let Some(path) = args.hook.clone().filter(|_| !args.list) else {
        print!("{}", list());
        return Ok(());
    };
    let consumers = usize::try_from(args.consumers).unwrap_or(16);
    let suite = Suite::new(args.provision);
    let settings = HookSettings {
        provider: suite.provider.clone(),
        path: path.clone(),
        mode: args.hook_mode,
        timeout: args.hook_timeout,
        concurrency: consumers,
        hello_every: Duration::from_secs(5),
    };
    let (hook, hello) = Hook::start(settings)
        .await
        .map_err(|error| ProgramFailure::new(EXIT_FAILED, error.to_string()))?;
    let provisioner = Arc::new(HookProvisioner::new(hook, &hello));
    let oracle = Arc::new(HookByHand::new(Arc::clone(&provisioner)));
    let mut suite = suite.with_by_hand(oracle.clone()).with_interrupt(oracle);
    suite.consumers = consumers;
    suite.timeout = args.hook_timeout;
    suite.recovery = args.recover_within;
    let report = conform(&*provisioner, &suite).await;
    println!("{report}");
    match report.all_passed() {
        true => Ok(()),
        false => Err(ProgramFailure::new(
            EXIT_FAILED,
            format!(
                "{} of {} rules failed for hook {}: {}",
                report.failed(),
                report.verdicts.len(),
                path.display(),
                report.failures().join("; ")
            ),
        )),
    }
}

/// The arguments from `conform` on, with usage and errors naming the
/// program `mesh-provide conform` (not `conform`).
fn parse(args: impl IntoIterator<Item = OsString>) -> Result<ConformArgs, clap::Error> {
    let args =
        std::iter::once(OsString::from("mesh-provide conform")).chain(args.into_iter().skip(1));
    ConformArgs::try_parse_from(args)
}

/// `mesh-provide conform ARGS` (`args` from `conform` on).
pub fn main(args: impl IntoIterator<Item = OsString>) -> ExitCode {
    Program::new("mesh-provide conform").run_parsed(parse(args), |args, _| run(args))
}
