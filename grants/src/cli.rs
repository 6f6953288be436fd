//! The command line of `mesh-grants` and the run it starts.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::Parser;
use mesh_protocol::subject::grants_inbox_prefix;
use mesh_protocol::Name;
use mesh_runtime::endpoints::{listen, serve as serve_endpoints, Checked, Endpoints, ListenError};
use mesh_runtime::nats::connect_as;
use mesh_runtime::outbox::{publish_loop, JetStreamSink};
use mesh_runtime::program::Flags;
use mesh_runtime::{BusError, LogFormat, Outbox, ServiceArgs, Stop};
use tokio::time::{interval, MissedTickBehavior};

use crate::agent::{Agent, GrantsSettings};
use crate::dial::ContainerRuntime;
use crate::file::GrantsSource;
use crate::standing::GrantRules;

/// What `--help` opens with.
pub const ABOUT: &str = "Checks, from each consumer's own network position, that it can reach \
the provider each of its grants names, and says on the bus when it cannot.

Run it on every machine that has consumers. Every --check-every it re-reads the grants file and, \
for each grant with a port, opens a TCP connection to the grant's address and port from inside \
the consumer's network namespace (nothing is sent). A grant is reported unreachable only after \
--unreachable-after failed checks in a row; a consumer that is not running, or a grant with no \
port, is reported unchecked, never unreachable.";

/// The command line of `mesh-grants`, as clap sees it: for its man page
/// and shell completions.
pub fn command() -> clap::Command {
    <GrantsCli as clap::CommandFactory>::command()
}

/// `mesh-grants` flags.
#[derive(Parser, Clone, Debug, PartialEq, Eq)]
#[command(
    name = "mesh-grants",
    about = ABOUT,
    version = mesh_runtime::endpoints::BuildInfo::version_text(env!("CARGO_PKG_VERSION"))
)]
pub struct GrantsCli {
    /// The grants file (JSON) the mesh writes on this machine, re-read every check.
    #[arg(long, env = "MESH_GRANTS")]
    pub grants: PathBuf,

    /// This machine's name. With it the agent starts even when no good
    /// grants file can be read, and says on the bus what is wrong with the
    /// file (status names it); a file naming another machine is not
    /// checked. Without it the machine is taken from the file, and a file
    /// that cannot be read at start stops the agent (exit 1).
    #[arg(long, env = "MESH_MACHINE", value_parser = parse_name)]
    pub machine: Option<Name>,

    /// Time between checks.
    #[arg(long, env = "MESH_CHECK_EVERY", default_value = "30s", value_parser = humantime::parse_duration)]
    pub check_every: Duration,

    /// Failed checks in a row before a grant is reported unreachable.
    #[arg(long, env = "MESH_UNREACHABLE_AFTER", default_value_t = 3, value_parser = clap::value_parser!(u64).range(1..))]
    pub unreachable_after: u64,

    /// How often unreachable or unchecked is published again while it lasts.
    #[arg(long, env = "MESH_REPEAT_EVERY", default_value = "15m", value_parser = humantime::parse_duration)]
    pub repeat_every: Duration,

    /// Bound of one connection attempt.
    #[arg(long, env = "MESH_CONNECT_TIMEOUT", default_value = "3s", value_parser = humantime::parse_duration)]
    pub connect_timeout: Duration,

    /// The container runtime that finds the namespace of a `container` grant.
    #[arg(long, env = "MESH_RUNTIME", value_enum, default_value_t = ContainerRuntime::Docker)]
    pub runtime: ContainerRuntime,

    /// The flags every mesh service shares: the bus (servers, credentials
    /// (the agent's user is `_grants@<machine>`), TLS, `--ack-timeout`),
    /// `--metrics-listen` and `--log-format`.
    #[command(flatten)]
    pub service: ServiceArgs,
}

impl Flags for GrantsCli {
    fn log_format(&self) -> LogFormat {
        self.service.log.format
    }
}

impl GrantsCli {
    /// The agent's settings.
    pub fn settings(&self) -> GrantsSettings {
        GrantsSettings {
            check_every: self.check_every,
            rules: GrantRules {
                unreachable_after: self.unreachable_after,
                repeat_every: self.repeat_every,
            },
            connect_timeout: self.connect_timeout,
            runtime: self.runtime,
            ..GrantsSettings::default()
        }
    }
}

/// How long a round of checks in progress at a stop may still take.
const STOP_GRACE: Duration = Duration::from_secs(1);

/// The agent could not run (exit 1).
#[derive(Debug, thiserror::Error)]
pub enum GrantsRunError {
    /// No good grants file could be read at start: the machine is not known.
    #[error("{0}")]
    Grants(String),
    /// The bus could not be set up.
    #[error(transparent)]
    Bus(#[from] BusError),
    /// The metrics address could not be listened on.
    #[error(transparent)]
    Listen(#[from] ListenError),
}

/// Runs the agent until `stop` is requested (the program shell requests it
/// on SIGINT or SIGTERM).
///
/// # Errors
/// [`GrantsRunError`] when it cannot start.
pub async fn run(cli: GrantsCli, stop: Stop) -> Result<(), GrantsRunError> {
    // The machine names the inbox prefix: it is told, or comes from the file.
    let machine = match &cli.machine {
        Some(machine) => machine.clone(),
        None => {
            let mut source = GrantsSource::new(&cli.grants);
            match source.load() {
                Some(loaded) => loaded.list.machine.clone(),
                None => {
                    return Err(GrantsRunError::Grants(format!(
                        "{} (give --machine to start anyway and say so on the bus)",
                        source.problems().join("; ")
                    )))
                }
            }
        }
    };
    let listener = match &cli.service.endpoints.metrics_listen {
        Some(addr) => Some(listen(addr).await?),
        None => None,
    };
    tracing::info!(grants = %cli.grants.display(), %machine, nats = %cli.service.nats.shown_servers(), "mesh-grants starting");
    let client = connect_as(
        &cli.service.nats,
        &format!("mesh-grants {machine}"),
        &grants_inbox_prefix(&machine),
    )
    .await?;
    let outbox = Arc::new(Outbox::new());
    let sink = Arc::new(JetStreamSink::new(client.clone(), cli.service.ack_timeout));
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let publisher = tokio::spawn(publish_loop(
        Arc::clone(&outbox),
        sink,
        Duration::from_secs(1),
        async move {
            let _ = stop_rx.await;
        },
    ));
    let settings = cli.settings();
    let mut agent = Agent::new(&cli.grants, settings, Arc::clone(&outbox));
    if let Some(machine) = &cli.machine {
        agent = agent.on_machine(machine.clone());
    }
    let metrics = agent.metrics();
    let endpoints = listener.map(|listener| {
        let (m, h, c) = (Arc::clone(&metrics), Arc::clone(&metrics), client.clone());
        let bound = settings.check_every * 3 + settings.connect_timeout * 4;
        let started = tokio::time::Instant::now();
        let seen = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let last = Arc::new(std::sync::Mutex::new(started));
        serve_endpoints(
            listener,
            Endpoints {
                metrics: Arc::new(move || m.encode()),
                health: Arc::new(move || {
                    let rounds = h.rounds();
                    let mut at = last.lock().expect("health lock");
                    if rounds != seen.swap(rounds, std::sync::atomic::Ordering::Relaxed) {
                        *at = tokio::time::Instant::now();
                    }
                    match at.elapsed() <= bound {
                        true => Checked::Passing(format!("{rounds} rounds of checks")),
                        false => Checked::Failing(format!(
                            "no round of checks for {}",
                            humantime::format_duration(Duration::from_secs(at.elapsed().as_secs()))
                        )),
                    }
                }),
                ready: Arc::new(move || match c.connection_state() {
                    async_nats::connection::State::Connected => {
                        Checked::Passing("connected to the bus".into())
                    }
                    other => Checked::Failing(format!("bus: {other:?}")),
                }),
            },
        )
        .1
    });
    let mut ticks = interval(settings.check_every);
    ticks.set_missed_tick_behavior(MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = ticks.tick() => {
                // A round waits on connects bounded by --connect-timeout; a
                // stop gives it a moment, then drops it (nothing half-said).
                if stop.run_with_grace(agent.check(), STOP_GRACE).await.is_none() {
                    break;
                }
            }
            () = stop.requested() => break,
        }
    }
    tracing::info!("mesh-grants stopping");
    let _ = stop_tx.send(());
    let _ = publisher.await;
    if let Some(task) = endpoints {
        task.abort();
    }
    Ok(())
}

/// A `--machine` value: a valid name.
fn parse_name(text: &str) -> Result<Name, String> {
    Name::parse(text).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn defaults_are_the_design() {
        let cli = GrantsCli::try_parse_from(["mesh-grants", "--grants", "g.json"]).unwrap();
        let s = cli.settings();
        assert_eq!(s.check_every, Duration::from_secs(30));
        assert_eq!(s.rules, GrantRules::default());
        assert_eq!(s.rules.unreachable_after, 3);
        assert_eq!(s.runtime, ContainerRuntime::Docker);
        assert_eq!(cli.service.nats.url, "nats://127.0.0.1:4222");
        let cli = GrantsCli::try_parse_from([
            "mesh-grants",
            "--grants",
            "g",
            "--check-every",
            "200ms",
            "--unreachable-after",
            "2",
            "--runtime",
            "podman",
            "--repeat-every",
            "1m",
        ])
        .unwrap();
        assert_eq!(cli.settings().check_every, Duration::from_millis(200));
        assert_eq!(cli.settings().runtime, ContainerRuntime::Podman);
        assert_eq!(cli.machine, None);
        let told =
            GrantsCli::try_parse_from(["mesh-grants", "--grants", "g", "--machine", "app-1"])
                .unwrap();
        assert_eq!(told.machine.unwrap().as_str(), "app-1");
        for bad in [
            vec!["mesh-grants"],
            vec!["mesh-grants", "--grants", "g", "--unreachable-after", "0"],
            vec!["mesh-grants", "--grants", "g", "--runtime", "lxc"],
            vec!["mesh-grants", "--grants", "g", "--nats-user", "u"],
            vec!["mesh-grants", "--grants", "g", "--machine", "App 1"],
        ] {
            assert!(GrantsCli::try_parse_from(&bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn help_opens_with_what_the_program_does() {
        let help = GrantsCli::command().render_help().to_string();
        assert!(
            help.starts_with("Checks, from each consumer's own network position"),
            "{help}"
        );
        for flag in [
            "--grants",
            "MESH_GRANTS",
            "--check-every",
            "--unreachable-after",
            "--runtime",
            "--metrics-listen",
            "--log-format",
            "--nats",
        ] {
            assert!(help.contains(flag), "{flag} missing:\n{help}");
        }
    }
}
