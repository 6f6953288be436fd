//! The loop as a provider binary runs it: passes on a timer, approvals from
//! the bus, events drained to JetStream, a graceful stop on SIGINT/SIGTERM.

use std::future::Future;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use futures::StreamExt;
use mesh_protocol::subject::approve_subject;
use mesh_protocol::ModuleId;
use mesh_runtime::endpoints::{listen, serve as serve_endpoints, Checked, Endpoints, ListenError};
use mesh_runtime::nats::connect;
use mesh_runtime::outbox::{publish_loop, JetStreamSink};
use mesh_runtime::program::{watch_signals, STOP_WITHIN};
use mesh_runtime::{BusError, Outbox, Stop};
use tokio::sync::oneshot;
use tokio::time::{interval, MissedTickBehavior};
use tokio_util::task::AbortOnDropHandle;

use super::Runner;
use crate::args::ProviderArgs;
use crate::provisioner::Provisioner;
use crate::settings::Settings;

/// The provider could not run: the bus could not be set up (refused
/// login, unreachable server, a refused subscription) or the stop signals
/// could not be installed. Its message, with its sources', says which.
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub struct RunError(Cause);

#[derive(Debug, thiserror::Error)]
enum Cause {
    #[error(transparent)]
    Bus(BusError),
    #[error(transparent)]
    Listen(ListenError),
    #[error("cannot install the stop signal handlers")]
    Signal(#[source] std::io::Error),
}

/// Runs the provider until SIGINT or SIGTERM, then stops as
/// [`run_until`] does; a second signal, or the stop taking longer than
/// 10 seconds, ends the process (mesh-runtime's signal rules, as
/// [`ProviderMain`](crate::ProviderMain) has them). Installs the standard
/// log subscriber unless the binary installed one.
///
/// # Errors
/// [`RunError`] when the bus or the signal handlers cannot be set up.
pub async fn run<P: Provisioner>(provisioner: P, args: &ProviderArgs) -> Result<(), RunError> {
    mesh_runtime::log::init_tracing("info", args.service.log.format);
    let stop = Stop::new();
    let _watch = watch_signals(&stop, STOP_WITHIN).map_err(|e| RunError(Cause::Signal(e)))?;
    run_until(provisioner, args, stop.into_requested()).await
}

/// Like [`run`], stopping when `stop` resolves (tests and embedders).
///
/// The contributions file names the provider; until a good one is read the
/// loop waits (logging why) and does not connect. Then it connects to the bus
/// as that provider, answers approvals on its approve subject and publishes
/// its events. On `stop`, a pass or an approval in progress gets
/// one second to end (its calls are cancel-safe, as the [`Provisioner`]
/// contract requires, and are dropped after it), then the pending events get
/// one last try when the bus is there.
///
/// # Errors
/// [`RunError`] when the bus cannot be set up.
pub async fn run_until<P: Provisioner>(
    provisioner: P,
    args: &ProviderArgs,
    stop: impl Future<Output = ()>,
) -> Result<(), RunError> {
    let settings = args.settings();
    let outbox = Arc::new(Outbox::new());
    let runner = Runner::new(
        provisioner,
        args.contributions.clone(),
        settings,
        Arc::clone(&outbox),
    );
    let mut runner = match &args.provider {
        Some(provider) => runner.for_provider(provider.clone()),
        None => runner,
    };
    let joined: Arc<OnceLock<async_nats::Client>> = Arc::new(OnceLock::new());
    let _endpoints = match &args.service.endpoints.metrics_listen {
        Some(addr) => {
            let listener = listen(addr).await.map_err(|e| RunError(Cause::Listen(e)))?;
            let endpoints = endpoints(&runner, &outbox, &joined, &settings);
            Some(AbortOnDropHandle::new(
                serve_endpoints(listener, endpoints).1,
            ))
        }
        None => None,
    };
    let mut ticker = interval(settings.pass_every);
    ticker.set_missed_tick_behavior(MissedTickBehavior::Delay);
    // `alive` from a task of its own, so a long pass does not make the
    // provider look down; it is due only once the first pass ended.
    let herald = runner.herald();
    let every = settings.alive_every.min(settings.pass_every);
    let _herald = AbortOnDropHandle::new(tokio::spawn(async move {
        let mut ticker = interval(every);
        ticker.set_missed_tick_behavior(MissedTickBehavior::Delay);
        loop {
            ticker.tick().await;
            herald.publish_if_due();
        }
    }));
    tokio::pin!(stop);

    let mut bus: Option<Bus> = None;
    loop {
        tokio::select! {
            biased;
            () = &mut stop => break,
            _ = ticker.tick() => {
                let report = {
                    let pass = pass(&mut runner, &mut bus);
                    tokio::pin!(pass);
                    tokio::select! {
                        biased;
                        report = &mut pass => report,
                        () = &mut stop => {
                            if tokio::time::timeout(STOP_GRACE, &mut pass).await.is_err() {
                                tracing::info!("stopping in the middle of a pass: its calls are dropped");
                            }
                            break;
                        }
                    }
                };
                runner.publish_alive_if_due();
                tracing::debug!(attempted = report.attempted, failed = report.failed, published = report.published, fresh = report.fresh, "pass done");
                if bus.is_none() {
                    match runner.provider().cloned() {
                        Some(provider) => {
                            let started = Bus::start(args, &provider, Arc::clone(&outbox)).await.map_err(|e| RunError(Cause::Bus(e)))?;
                            let _ = joined.set(started.client.clone());
                            bus = Some(started);
                        }
                        None => tracing::warn!(path = %args.contributions.display(), "no good contributions file yet; waiting for one before joining the bus"),
                    }
                }
            }
            Some(message) = next_approval(&mut bus) => {
                let answered = answer(&mut runner, bus.as_ref(), message);
                tokio::pin!(answered);
                tokio::select! {
                    biased;
                    () = &mut answered => {}
                    () = &mut stop => {
                        let _ = tokio::time::timeout(STOP_GRACE, &mut answered).await;
                        break;
                    }
                }
            }
        }
    }
    if let Some(bus) = bus {
        bus.stop().await;
    }
    tracing::info!("stopped");
    Ok(())
}

/// How long a pass or an approval in progress at a stop may still take
/// before it is dropped.
pub(crate) const STOP_GRACE: Duration = Duration::from_secs(1);

/// One pass: its consumers attempted while approvals are answered (never
/// queued behind the pass), then its events published.
async fn pass<P: Provisioner>(runner: &mut Runner<P>, bus: &mut Option<Bus>) -> super::PassReport {
    let Some(mut begun) = runner.begin_pass().await else {
        return super::PassReport::default();
    };
    let outcomes = loop {
        tokio::select! {
            biased;
            outcomes = &mut begun.outcomes => break outcomes,
            Some(message) = next_approval(bus) => {
                answer(runner, bus.as_ref(), message).await;
            }
        }
    };
    runner.finish_pass(begun, outcomes).await
}

/// The next approval request, once the provider is on the bus.
async fn next_approval(bus: &mut Option<Bus>) -> Option<async_nats::Message> {
    match bus.as_mut() {
        Some(bus) => bus.approvals.next().await,
        None => std::future::pending().await,
    }
}

/// Answers one approval request and sends the reply.
async fn answer<P: Provisioner>(
    runner: &mut Runner<P>,
    bus: Option<&Bus>,
    message: async_nats::Message,
) {
    let reply = runner.approve(&message.payload).await;
    if let (Some(bus), Some(to)) = (bus, message.reply) {
        let body = serde_json::to_vec(&reply).expect("reply serializes");
        if let Err(error) = bus.client.publish(to, body.into()).await {
            tracing::warn!(error = %error, "cannot send the approval reply");
        }
    }
}

/// How long the loop may go without finishing a pass or an attempt before
/// `/healthz` says it is stuck: 3 × `pass_every` + 2 × `call_timeout`
/// (a pass waits `pass_every`; a call, a listing of held provisions or a
/// retirement call takes at most `call_timeout`).
pub(crate) fn stuck_after(settings: &Settings) -> Duration {
    settings.pass_every * 3 + settings.call_timeout * 2
}

/// `/metrics` from the runner's metrics and the outbox; `/healthz` from
/// the runner's progress; `/readyz` from the bus connection.
fn endpoints<P: Provisioner>(
    runner: &Runner<P>,
    outbox: &Arc<Outbox>,
    joined: &Arc<OnceLock<async_nats::Client>>,
    settings: &Settings,
) -> Endpoints {
    let (metrics, outbox) = (runner.metrics(), Arc::clone(outbox));
    let progress = runner.progress();
    let bound = stuck_after(settings);
    let joined = Arc::clone(joined);
    Endpoints {
        metrics: Arc::new(move || metrics.encode(&outbox)),
        health: Arc::new(move || progress.check(bound)),
        ready: Arc::new(move || match joined.get() {
            None => Checked::Failing(
                "not on the bus yet: no good contributions file was read".to_owned(),
            ),
            Some(client) => match client.connection_state() {
                async_nats::connection::State::Connected => {
                    Checked::Passing("ready: connected to the bus".to_owned())
                }
                state => Checked::Failing(format!("not connected to the bus ({state})")),
            },
        }),
    }
}

/// The provider's bus: client, approve subscription, publisher task.
struct Bus {
    client: async_nats::Client,
    approvals: async_nats::Subscriber,
    publisher: tokio::task::JoinHandle<usize>,
    stop_publisher: oneshot::Sender<()>,
}

impl Bus {
    async fn start(
        args: &ProviderArgs,
        provider: &ModuleId,
        outbox: Arc<Outbox>,
    ) -> Result<Bus, BusError> {
        let client = connect(&args.service.nats, provider).await?;
        let subject = approve_subject(&provider.machine, &provider.module);
        let approvals = client
            .subscribe(subject.clone())
            .await
            .map_err(|source| BusError::Subscribe { subject, source })?;
        let sink = Arc::new(JetStreamSink::new(client.clone(), args.service.ack_timeout));
        let (stop_publisher, stopped) = oneshot::channel();
        let retry_every = args.pass_every.min(Duration::from_secs(2));
        let publisher = tokio::spawn(publish_loop(outbox, sink, retry_every, async {
            let _ = stopped.await;
        }));
        // The client connects in the background and says "connected to the
        // bus" when it does; the server may be down now.
        tracing::info!(provider = %provider, url = %args.service.nats.shown_servers(), "connecting to the bus (events are kept pending until it answers)");
        Ok(Bus {
            client,
            approvals,
            publisher,
            stop_publisher,
        })
    }

    async fn stop(self) {
        let _ = self.stop_publisher.send(());
        if let Err(error) = self.publisher.await {
            tracing::error!(error = %error, "event publisher ended abnormally");
        }
        // A flush waits for the server: only while it is there, bounded.
        if self.client.connection_state() == async_nats::connection::State::Connected {
            let _ = tokio::time::timeout(Duration::from_secs(2), self.client.flush()).await;
        }
    }
}
