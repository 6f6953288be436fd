//! `mesh-provide bench`: what a pass of the loop costs over any hook and
//! its real backend, measured as the kit docs' figures are: at N consumers,
//! `ensure` then `check` each, at most `--concurrency` at once, through
//! the same [`HookProvisioner`] the loop calls, in exec mode, serve mode or
//! both. It prints, per mode and size, the pass time (the median of
//! `--runs` passes after an uncounted first one, which makes what is
//! missing) and the latency of each call (median and 99th percentile).
//!
//! Its consumers are named `bench-<random>-NNNN` and made as the instance
//! `bench@bench`; it retires and deletes them at its end (and what an
//! earlier run of its left, at its start).

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Parser;
use mesh_runtime::log::LogArgs;
use mesh_runtime::program::{Flags, Program, ProgramFailure};
use mesh_runtime::LogFormat;
use mesh_sdk::{Consumer, ModuleId, Name, Provisioner, Secret};
use tokio::sync::Semaphore;

use crate::hook::{Hook, HookSettings, Mode};
use crate::provisioner::HookProvisioner;

/// Exit code when the hook could not be started or a call failed.
pub const EXIT_FAILED: u8 = 1;

/// The instance the bench acts as.
pub const PROVIDER: &str = "bench@bench";

/// Measures a loop pass over a hook and its real backend: at each size (--consumers), ensure then check every consumer, at most --concurrency at once, through the same calls the loop makes, in exec mode, serve mode or both (--hook-mode). Prints each pass's time (median of --runs, after an uncounted first pass that makes what is missing) and each call's latency (median and 99th percentile). Its consumers are `bench-<random>-NNNN`, made as the provider instance bench@bench and retired and deleted at its end.
#[derive(Parser, Debug)]
#[command(
    name = "mesh-provide bench",
    version = mesh_runtime::endpoints::BuildInfo::version_text(env!("CARGO_PKG_VERSION"))
)]
pub struct BenchArgs {
    /// The hook to measure.
    #[arg(long, env = "MESH_HOOK")]
    pub hook: PathBuf,

    /// `exec`, `serve`, or `both` (default: both, exec first).
    #[arg(long, default_value = "both", value_parser = ["exec", "serve", "both"])]
    pub hook_mode: String,

    /// Sizes of a pass, comma-separated.
    #[arg(long, default_value = "50,200", value_delimiter = ',', value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub consumers: Vec<u32>,

    /// Passes counted at each size.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub runs: u32,

    /// Calls at once, as the loop's --concurrency.
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub concurrency: u32,

    /// Bound of each call to the hook.
    #[arg(long, default_value = "30s", value_parser = humantime::parse_duration)]
    pub hook_timeout: Duration,

    /// The provision its consumers ask for (a hook may refuse others).
    #[arg(long, default_value = "bench")]
    pub provision: String,

    #[command(flatten)]
    log: LogArgs,
}

impl Flags for BenchArgs {
    fn log_format(&self) -> LogFormat {
        self.log.format
    }

    /// The figures are on stdout; the log says only what went wrong.
    fn log_level(&self) -> &'static str {
        "warn"
    }

    fn is_service(&self) -> bool {
        false
    }
}

/// What one size measured in one mode.
#[derive(Clone, Debug, PartialEq)]
pub struct Measured {
    /// Consumers a pass.
    pub consumers: usize,
    /// The pass time, the median of the counted passes.
    pub pass: Duration,
    /// `ensure`'s latency: median, 99th percentile.
    pub ensure: (Duration, Duration),
    /// `check`'s latency: median, 99th percentile.
    pub check: (Duration, Duration),
}

impl Measured {
    /// The line it prints.
    pub fn line(&self, mode: &str) -> String {
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        format!(
            "{mode:<5} {:>6} consumers: a pass {:.1} ms ({:.3} ms a consumer); ensure {:.2} ms median, {:.2} ms p99; check {:.2} ms median, {:.2} ms p99",
            self.consumers,
            ms(self.pass),
            ms(self.pass) / self.consumers as f64,
            ms(self.ensure.0),
            ms(self.ensure.1),
            ms(self.check.0),
            ms(self.check.1),
        )
    }
}

/// The value at `q` (0 to 1) of `times` (sorted here), nearest rank.
pub fn quantile(times: &mut [Duration], q: f64) -> Duration {
    if times.is_empty() {
        return Duration::ZERO;
    }
    times.sort_unstable();
    let rank = ((q * times.len() as f64).ceil() as usize).clamp(1, times.len());
    times[rank - 1]
}

/// One pass: each consumer's ensure then check, at most `concurrency` at
/// once; the pass time and every call's latency.
async fn pass(
    p: &Arc<HookProvisioner>,
    consumers: &Arc<Vec<(Consumer, Secret)>>,
    concurrency: usize,
) -> Result<(Duration, Vec<Duration>, Vec<Duration>), String> {
    let gate = Arc::new(Semaphore::new(concurrency.max(1)));
    let started = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..consumers.len() {
        let (p, consumers, gate) = (Arc::clone(p), Arc::clone(consumers), Arc::clone(&gate));
        tasks.spawn(async move {
            let _permit = gate.acquire().await.expect("never closed");
            let (consumer, secret) = &consumers[i];
            let at = Instant::now();
            p.ensure(consumer, secret)
                .await
                .map_err(|e| format!("ensure of {} failed: {e}", consumer.name))?;
            let ensured = at.elapsed();
            let at = Instant::now();
            p.check(consumer, secret)
                .await
                .map_err(|e| format!("check of {} failed: {e}", consumer.name))?;
            Ok::<_, String>((ensured, at.elapsed()))
        });
    }
    let (mut ensures, mut checks) = (Vec::new(), Vec::new());
    while let Some(done) = tasks.join_next().await {
        let (ensure, check) = done.map_err(|e| e.to_string())??;
        ensures.push(ensure);
        checks.push(check);
    }
    Ok((started.elapsed(), ensures, checks))
}

/// Retires and deletes every `bench-*` provision the bench's instance holds.
async fn clean(p: &HookProvisioner, provider: &ModuleId) -> Result<usize, String> {
    let held = p
        .held(provider)
        .await
        .map_err(|e| format!("held failed: {e}"))?;
    let mut removed = 0;
    for h in held
        .iter()
        .filter(|h| h.name.as_str().starts_with("bench-"))
    {
        if !h.retired {
            p.retire(provider, &h.name)
                .await
                .map_err(|e| format!("retire of {} failed: {e}", h.name))?;
        }
        p.delete(provider, &h.name)
            .await
            .map_err(|e| format!("delete of {} failed: {e}", h.name))?;
        removed += 1;
    }
    Ok(removed)
}

/// Measures `mode` at every size.
async fn measure(args: &BenchArgs, mode: Mode) -> Result<Vec<Measured>, String> {
    let provider: ModuleId = PROVIDER.parse().expect("a valid instance");
    let settings = HookSettings {
        path: args.hook.clone(),
        mode,
        timeout: args.hook_timeout,
        concurrency: args.concurrency as usize,
        hello_every: Duration::from_secs(3600),
        provider: provider.clone(),
    };
    let (hook, hello) = Hook::start(settings).await.map_err(|e| e.to_string())?;
    let p = Arc::new(HookProvisioner::new(hook, &hello));
    clean(&p, &provider).await?;
    let tag = &random_tag();
    let mut measured = Vec::new();
    for &n in &args.consumers {
        let consumers: Arc<Vec<(Consumer, Secret)>> = Arc::new(
            (0..n as usize)
                .map(|i| {
                    let name = Name::parse(&format!("bench-{tag}-{i:04}")).expect("a name");
                    let consumer = Consumer {
                        provider: provider.clone(),
                        name,
                        machine: Name::parse("bench").expect("a name"),
                        provision: args.provision.clone(),
                        secret_file: PathBuf::new(),
                        options: serde_json::json!({}),
                    };
                    (consumer, Secret::new(format!("bench-s-{tag}-{i:04}")))
                })
                .collect(),
        );
        let concurrency = args.concurrency as usize;
        pass(&p, &consumers, concurrency).await?; // makes what is missing
        let (mut passes, mut ensures, mut checks) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..args.runs {
            let (took, e, c) = pass(&p, &consumers, concurrency).await?;
            passes.push(took);
            ensures.extend(e);
            checks.extend(c);
        }
        let median = |v: &mut Vec<Duration>| quantile(v, 0.5);
        measured.push(Measured {
            consumers: n as usize,
            pass: median(&mut passes),
            ensure: (median(&mut ensures), quantile(&mut ensures, 0.99)),
            check: (median(&mut checks), quantile(&mut checks, 0.99)),
        });
        println!(
            "{}",
            measured.last().expect("just pushed").line(mode_name(mode))
        );
    }
    clean(&p, &provider).await?;
    Ok(measured)
}

/// Eight hex digits from the standard library's per-process random keys:
/// this run's names.
fn random_tag() -> String {
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    format!("{:08x}", hasher.finish() as u32)
}

fn mode_name(mode: Mode) -> &'static str {
    match mode {
        Mode::Exec => "exec",
        Mode::Serve => "serve",
    }
}

/// Runs the bench; the figures go to stdout.
///
/// # Errors
/// A [`ProgramFailure`] ([`EXIT_FAILED`]) when the hook cannot be started
/// or a call fails.
pub async fn run(args: BenchArgs) -> Result<(), ProgramFailure> {
    let modes = match args.hook_mode.as_str() {
        "exec" => vec![Mode::Exec],
        "serve" => vec![Mode::Serve],
        _ => vec![Mode::Exec, Mode::Serve],
    };
    println!(
        "mesh-provide bench: {} ({} counted passes a size, {} calls at once)",
        args.hook.display(),
        args.runs,
        args.concurrency
    );
    for mode in modes {
        measure(&args, mode).await.map_err(|why| {
            ProgramFailure::new(EXIT_FAILED, format!("{} mode: {why}", mode_name(mode)))
        })?;
    }
    Ok(())
}

/// The arguments from `bench` on, with usage and errors naming the program
/// `mesh-provide bench`.
fn parse(args: impl IntoIterator<Item = OsString>) -> Result<BenchArgs, clap::Error> {
    let args =
        std::iter::once(OsString::from("mesh-provide bench")).chain(args.into_iter().skip(1));
    BenchArgs::try_parse_from(args)
}

/// `mesh-provide bench ARGS` (`args` from `bench` on).
pub fn main(args: impl IntoIterator<Item = OsString>) -> ExitCode {
    Program::new("mesh-provide bench").run_parsed(parse(args), |args, _| run(args))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_are_by_nearest_rank() {
        let ms = |n: u64| Duration::from_millis(n);
        let mut times: Vec<Duration> = (1..=100).rev().map(ms).collect();
        assert_eq!(quantile(&mut times, 0.5), ms(50));
        assert_eq!(quantile(&mut times, 0.99), ms(99));
        assert_eq!(quantile(&mut times, 1.0), ms(100));
        assert_eq!(quantile(&mut [ms(7)], 0.99), ms(7));
        assert_eq!(quantile(&mut [], 0.5), Duration::ZERO);
    }

    #[test]
    fn a_line_says_the_pass_and_each_calls_latency() {
        let ms = |n: u64| Duration::from_millis(n);
        let m = Measured {
            consumers: 50,
            pass: ms(100),
            ensure: (ms(2), ms(9)),
            check: (ms(3), ms(11)),
        };
        assert_eq!(
            m.line("serve"),
            "serve     50 consumers: a pass 100.0 ms (2.000 ms a consumer); ensure 2.00 ms median, 9.00 ms p99; check 3.00 ms median, 11.00 ms p99"
        );
    }
}
