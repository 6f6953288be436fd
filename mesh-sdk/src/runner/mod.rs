//! The provisioner loop: a pass every `pass_every`, each listed consumer
//! attempted with bounded concurrency, standings and retirement fed, events
//! put on the outbox.
//!
//! [`Runner`] is the loop's state; [`Runner::pass`] runs one pass and
//! [`Runner::approve`] answers a person's approval, so tests drive them on
//! tokio's paused clock. [`run`] wires a runner to the bus, the approve
//! subject and the stop signals for a provider binary.
//!
//! Beside the pass itself (here): `attempt` (one consumer's secret, make,
//! check), `repairing` (the repair hook), `retiring` (withdrawn consumers,
//! retirement, approvals), `herald` (`alive`), `admin` (the provider
//! fault), `input` (the file's refusals), `serve` (the binary's loop).

mod admin;
mod attempt;
mod entries;
mod herald;
mod input;
mod repairing;
mod retiring;
mod serve;

use std::sync::Arc;

use mesh_protocol::event::{Event, EventKind, Failing, Recovered, VERSION};
use mesh_protocol::subject::event_subject;
use mesh_protocol::{Class, ModuleId, Name};
use mesh_runtime::{Outbox, Progress, WallClock};
use tokio::time::Instant;

use crate::contributions::{Consumer, Contributions, Source};
use crate::fault::{AdminSeen, FaultWatch};
use crate::metrics::{ConsumerStates, LoopMetrics};
use crate::provisioner::Provisioner;
use crate::repair::{FaultState, KnownFault};
use crate::retire::RetirementState;
use crate::secret::{FileSecrets, SecretSource};
use crate::settings::Settings;
use crate::standing::{AttemptOutcome, Publish, Standing};

use entries::Entry;
pub use serve::{run, run_until, RunError};

/// What one pass did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PassReport {
    /// Whether the contributions file was read this pass (else the last good list was used).
    pub fresh: bool,
    /// Consumers attempted.
    pub attempted: usize,
    /// Consumers that failed.
    pub failed: usize,
    /// Events put on the outbox.
    pub published: usize,
    /// Whether a known fault kept the backend from being called for consumers.
    pub gated: bool,
}

/// The loop's state for one provider.
pub struct Runner<P: Provisioner> {
    provisioner: Arc<P>,
    settings: Settings,
    source: Source,
    entries: entries::Entries<Entry>,
    retirement: RetirementState,
    /// Consumers re-enabled since their entry was forgotten (at their
    /// retirement): their next entry starts as after a success.
    re_enabled: std::collections::HashSet<Name>,
    outbox: Arc<Outbox>,
    clock: WallClock,
    /// The last "cannot list held provisions" message logged (logged once per change).
    held_error: Option<String>,
    /// The provider's known faults and their gates.
    faults: Vec<(KnownFault, FaultState)>,
    /// Whether the provider can work as its administrator (the provider fault).
    admin: FaultWatch,
    /// Where minted secrets come from.
    secrets: Arc<dyn SecretSource>,
    /// Says `alive`.
    herald: Arc<herald::Herald>,
    /// What `/metrics` shows.
    metrics: Arc<LoopMetrics>,
    /// When the loop last moved (`/healthz`).
    progress: Arc<Progress>,
    /// The contributions of the pass whose attempts are running, if one is:
    /// an approval answered meanwhile counts a consumer listed there as listed.
    in_flight: Option<Arc<Contributions>>,
    /// The contributions the last pass served: while they are the same,
    /// each entry's machine and provision are known to match them.
    served: Option<Arc<Contributions>>,
    /// Keys of the secrets' fingerprints (random per runner).
    fingerprints: foldhash::fast::RandomState,
    /// The names the list being served lists.
    listed: retiring::Listed,
    /// Who it is, when told (`--provider`): known before a good file
    /// named it, and no file naming another is taken.
    told_provider: Option<ModuleId>,
    /// The provider a contributions file named instead, last logged.
    misnamed: Option<ModuleId>,
}

impl<P: Provisioner> Runner<P> {
    /// A runner reading the contributions file at `contributions`, publishing its events on `outbox`.
    pub fn new(
        provisioner: P,
        contributions: impl Into<std::path::PathBuf>,
        settings: Settings,
        outbox: Arc<Outbox>,
    ) -> Self {
        let faults = provisioner
            .repairs()
            .into_iter()
            .map(|repair| (repair, FaultState::new(&settings.repair)))
            .collect();
        let metrics = Arc::new(LoopMetrics::with_provider(|registry| {
            provisioner.register_metrics(registry)
        }));
        let herald = Arc::new(herald::Herald::new(
            Instant::now(),
            WallClock::system(),
            settings,
            Arc::clone(&outbox),
            Arc::clone(&metrics),
        ));
        Runner {
            faults,
            secrets: Arc::new(FileSecrets),
            provisioner: Arc::new(provisioner),
            settings,
            source: Source::new(contributions),
            entries: entries::Entries::default(),
            retirement: RetirementState::new(),
            re_enabled: std::collections::HashSet::new(),
            outbox,
            clock: WallClock::system(),
            held_error: None,
            admin: FaultWatch::default(),
            herald,
            metrics,
            progress: Arc::new(Progress::new()),
            in_flight: None,
            served: None,
            fingerprints: foldhash::fast::RandomState::default(),
            listed: retiring::Listed::default(),
            told_provider: None,
            misnamed: None,
        }
    }

    /// The loop's metrics (shared with the `/metrics` endpoint).
    pub fn metrics(&self) -> Arc<LoopMetrics> {
        Arc::clone(&self.metrics)
    }

    /// When the loop last moved (shared with the `/healthz` endpoint).
    pub fn progress(&self) -> Arc<Progress> {
        Arc::clone(&self.progress)
    }

    #[cfg(any(test, feature = "testing"))]
    /// Reads minted secrets from `secrets` instead of each consumer's `secret_file`.
    pub fn with_secrets(mut self, secrets: Arc<dyn SecretSource>) -> Self {
        self.secrets = secrets;
        self
    }

    #[cfg(any(test, feature = "testing"))]
    /// Uses `clock` for the times in event bodies (tests fix it).
    pub fn with_clock(mut self, clock: WallClock) -> Self {
        self.clock = clock;
        self.herald = Arc::new(herald::Herald::new(
            Instant::now(),
            clock,
            self.settings,
            Arc::clone(&self.outbox),
            Arc::clone(&self.metrics),
        ));
        self
    }

    #[cfg(any(test, feature = "testing"))]
    /// The provisioner.
    pub fn provisioner(&self) -> &P {
        &self.provisioner
    }

    #[cfg(any(test, feature = "testing"))]
    /// The settings.
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    #[cfg(any(test, feature = "testing"))]
    /// The standing of `consumer`, if it was attempted since start.
    pub fn standing(&self, consumer: &Name) -> Option<&Standing> {
        self.entries.get(consumer).map(|e| &e.standing)
    }

    #[cfg(any(test, feature = "testing"))]
    /// Number of consumers with a standing.
    pub fn standings(&self) -> usize {
        self.entries.len()
    }

    /// Runs one pass now (the binary's loop answers approvals while a
    /// pass's attempts run; tests drive passes one by one).
    #[cfg(any(test, feature = "testing"))]
    pub async fn pass(&mut self) -> PassReport {
        let Some(mut begun) = self.begin_pass().await else {
            return PassReport::default();
        };
        let outcomes = (&mut begun.outcomes).await;
        self.finish_pass(begun, outcomes).await
    }

    /// Runs one pass now and answers `approvals` (raw request bodies) while
    /// its attempts run, as the binary's loop does: each request after the
    /// attempts began (or ended, if they were quick), before the pass's
    /// events are published. Returns the pass's report and the replies in order.
    #[cfg(any(test, feature = "testing"))]
    pub async fn pass_answering(
        &mut self,
        approvals: &[Vec<u8>],
    ) -> (PassReport, Vec<mesh_protocol::ApproveReply>) {
        let Some(mut begun) = self.begin_pass().await else {
            let mut replies = Vec::with_capacity(approvals.len());
            for body in approvals {
                replies.push(self.approve(body).await);
            }
            return (PassReport::default(), replies);
        };
        let mut ended = None;
        let mut replies = Vec::with_capacity(approvals.len());
        for body in approvals {
            if ended.is_none() {
                // The attempts run on while the request travels.
                tokio::select! {
                    biased;
                    outcomes = &mut begun.outcomes => ended = Some(outcomes),
                    () = tokio::task::yield_now() => {}
                }
            }
            replies.push(self.approve(body).await);
        }
        let outcomes = match ended {
            Some(outcomes) => outcomes,
            None => (&mut begun.outcomes).await,
        };
        (self.finish_pass(begun, outcomes).await, replies)
    }

    /// The first part of a pass: the contributions file read, the repair
    /// hook run, and the consumers' attempts started. The attempts run on
    /// their own tasks and borrow nothing of the runner, so it can answer
    /// approvals until they end ([`Begun::outcomes`]). `None` when no good
    /// contributions file was ever read.
    pub(crate) async fn begin_pass(&mut self) -> Option<Begun> {
        let began = Instant::now();
        let loaded = self.load();
        self.metrics.contributions(self.source.refused());
        let said = self.file_read_said();
        let (fresh, contributions) = loaded?;
        let gate = self.repair_pass(&contributions.provider).await;
        let mut report = PassReport {
            fresh,
            attempted: contributions.consumers.len(),
            gated: gate.is_some(),
            published: said,
            ..PassReport::default()
        };
        // Retirement first: a consumer listed again is enabled before it is
        // checked. Not while a known fault keeps the backend from being called.
        let (held, listed) = match gate {
            Some(_) => (None, AdminSeen::Unknown),
            None => {
                let (held, seen) = self.held_for_pass(&contributions.provider, fresh).await;
                report.published += self
                    .retirement_actions(&contributions, fresh, held.as_deref())
                    .await;
                (held, seen)
            }
        };
        let admin = self.admin_seen(gate.as_ref(), listed);
        let outcomes: Outcomes = match gate {
            // The gate is closed: the backend is not called for consumers;
            // they fail with the fault's class and message.
            Some(failure) => {
                let failed = (0..contributions.consumers.len())
                    .map(|i| (i, Err(failure.clone())))
                    .collect();
                Box::pin(std::future::ready(failed))
            }
            None => {
                let attempts = attempt::Attempts {
                    provisioner: Arc::clone(&self.provisioner),
                    secrets: Arc::clone(&self.secrets),
                    provider_secrets: self.provisioner.secrets().into(),
                    call_timeout: self.settings.call_timeout,
                    progress: Arc::clone(&self.progress),
                    fingerprints: self.fingerprints.clone(),
                };
                Box::pin(attempt::all(
                    attempts,
                    Arc::clone(&contributions),
                    self.settings.concurrency,
                ))
            }
        };
        self.in_flight = Some(Arc::clone(&contributions));
        Some(Begun {
            began,
            contributions,
            report,
            held,
            admin,
            outcomes,
        })
    }

    /// The rest of a pass, once its attempts ended: standings fed, events
    /// published, retirement, `alive` and the metrics.
    pub(crate) async fn finish_pass(
        &mut self,
        begun: Begun,
        outcomes: Vec<(usize, Result<attempt::Served, attempt::Failed>)>,
    ) -> PassReport {
        self.in_flight = None;
        let Begun {
            began,
            contributions,
            mut report,
            held,
            admin,
            ..
        } = begun;
        let now = Instant::now();
        let change = self.admin.observe(admin, now);
        let mut rejected = false;
        let mut states = ConsumerStates::default();
        // Every listed consumer is observed on every pass, so when the list
        // is the one the last pass served, every entry already matches it.
        let synced = self
            .served
            .as_ref()
            .is_some_and(|served| Arc::ptr_eq(served, &contributions));
        for (index, result) in outcomes {
            let consumer = &contributions.consumers[index];
            if let Err((class, _)) = &result {
                report.failed += 1;
                rejected |= *class == Class::CredentialsRejected;
            }
            let (published, state) = self.observe(
                &contributions.provider,
                (index, consumer),
                result,
                synced,
                now,
            );
            report.published += published;
            match state {
                State::Ok => states.ok += 1,
                State::FailingUnpublished => states.failing_unpublished += 1,
                State::Failing => states.failing += 1,
            }
        }
        if !synced {
            self.entries
                .arrange(contributions.consumers.iter().map(|c| &c.name));
        }
        self.served = Some(Arc::clone(&contributions));
        if rejected && !report.gated {
            self.faults
                .iter_mut()
                .for_each(|(_, state)| state.trigger());
        }
        if let Some(held) = &held {
            report.published += self.withdrawn_after(&contributions, held);
        }
        states.retiring = count(self.retirement.retiring());
        let ended = Instant::now();
        self.herald.pass_ended(
            &contributions.provider,
            began,
            ended,
            count(contributions.consumers.len()),
            states.failing + states.failing_unpublished,
            self.admin.current(),
        );
        let took = ended.saturating_duration_since(began);
        self.metrics.pass(took, states, self.clock.at(ended));
        report.published += self.fault_after_pass(change);
        self.progress.tick();
        report
    }

    /// Publishes `alive` when it is due: after the first pass (before any,
    /// only while it knows its provider and cannot take its file), then
    /// every `alive_every`. Returns whether it was published.
    pub fn publish_alive_if_due(&self) -> bool {
        self.herald.publish_if_due()
    }

    /// The herald, for a task that publishes `alive` while a pass runs.
    pub(crate) fn herald(&self) -> Arc<herald::Herald> {
        Arc::clone(&self.herald)
    }

    /// Feeds the outcome of the list's `index`th consumer to its standing;
    /// returns events published and the consumer's state after it.
    /// `synced`: the consumer's entry, if it has one, was made or updated
    /// from this very list (and is at its place in the list's order).
    fn observe(
        &mut self,
        provider: &ModuleId,
        (index, consumer): (usize, &Consumer),
        result: Result<attempt::Served, (Class, String)>,
        synced: bool,
        now: Instant,
    ) -> (usize, State) {
        let entry = match self.entries.at_mut(index, &consumer.name) {
            Some(entry) if synced => entry,
            Some(entry) => {
                if entry.machine != consumer.machine {
                    entry.machine = consumer.machine.clone();
                }
                if entry.provision != consumer.provision {
                    entry.provision.clone_from(&consumer.provision);
                }
                entry
            }
            None => self.entries.insert(
                consumer.name.clone(),
                Entry {
                    standing: match self.re_enabled.remove(&consumer.name) {
                        true => Standing::re_enabled(),
                        false => Standing::new(),
                    },
                    machine: consumer.machine.clone(),
                    provision: consumer.provision.clone(),
                    secret: None,
                },
            ),
        };
        let due = match &result {
            Ok(served) => {
                if let Some(what) = &served.mended {
                    // A provider also brings a rotated secret to its backend:
                    // that is no mend. Since start the loop cannot tell a
                    // secret rotated while it was down from a hand edit.
                    match entry.secret {
                        Some(last) if last != served.secret => {
                            tracing::info!(consumer = %consumer.name, what = %what, "brought the rotated secret to the backend")
                        }
                        _ => {
                            tracing::warn!(consumer = %consumer.name, what = %what, "mended");
                            self.metrics.mended();
                        }
                    }
                }
                entry.secret = Some(served.secret);
                entry
                    .standing
                    .observe(AttemptOutcome::Success, now, &self.settings.standing)
            }
            Err((class, error)) => {
                let changed = entry
                    .standing
                    .failure()
                    .is_none_or(|f| f.detail.class != *class || f.detail.error != *error);
                if changed {
                    tracing::warn!(consumer = %consumer.name, class = %class, error = %error, "provision failed");
                } else {
                    tracing::debug!(consumer = %consumer.name, class = %class, "provision still failing");
                }
                entry.standing.observe(
                    AttemptOutcome::Failure {
                        class: *class,
                        error,
                    },
                    now,
                    &self.settings.standing,
                )
            }
        };
        let state = match entry.standing.failure() {
            None => State::Ok,
            Some(f) if f.said_at.is_none() => State::FailingUnpublished,
            Some(_) => State::Failing,
        };
        let Some(due) = due else {
            return (0, state);
        };
        let event = standing_event(
            &consumer.name,
            Some(&consumer.machine),
            Some(&consumer.provision),
            due,
            &self.clock,
            now,
        );
        publish(&self.outbox, &self.metrics, provider, &event);
        (1, state)
    }
}

/// Each attempted consumer's index with its result, as the attempts end.
type Outcomes =
    futures::future::BoxFuture<'static, Vec<(usize, Result<attempt::Served, attempt::Failed>)>>;

/// A pass whose consumers are being attempted (see [`Runner::begin_pass`]).
pub(crate) struct Begun {
    began: Instant,
    contributions: Arc<Contributions>,
    report: PassReport,
    /// What the backend held at the pass's start (`None`: not listed).
    held: Option<Vec<crate::provisioner::Held>>,
    /// What the pass's administrator work found (the provider fault).
    admin: AdminSeen,
    /// Ends when every attempt of the pass ended.
    pub(crate) outcomes: Outcomes,
}

/// A listed consumer's state after a pass (for the metrics).
enum State {
    Ok,
    FailingUnpublished,
    Failing,
}

fn count(n: usize) -> u64 {
    u64::try_from(n).unwrap_or(u64::MAX)
}

/// The event a standing publishes.
fn standing_event(
    consumer: &Name,
    machine: Option<&Name>,
    provision: Option<&str>,
    due: Publish,
    clock: &WallClock,
    now: Instant,
) -> Event {
    match due {
        Publish::Failing {
            since,
            attempts,
            class,
            error,
        } => Event::Failing(Failing {
            v: VERSION,
            consumer: consumer.clone(),
            consumer_machine: machine.cloned(),
            provision: provision.map(str::to_owned),
            class,
            error,
            since: clock.at(since),
            attempts,
            said_at: clock.at(now),
        }),
        Publish::Recovered(reason) => Event::Recovered(Recovered {
            v: VERSION,
            consumer: consumer.clone(),
            consumer_machine: machine.cloned(),
            provision: provision.map(str::to_owned),
            reason,
            said_at: clock.at(now),
        }),
    }
}

/// Logs an event and puts it on the outbox (pending until JetStream acknowledges it).
fn publish(outbox: &Outbox, metrics: &LoopMetrics, provider: &ModuleId, event: &Event) {
    metrics.published(event);
    let kind: EventKind = event.kind();
    match event {
        Event::Failing(b) => {
            tracing::warn!(consumer = %b.consumer, class = %b.class, attempts = b.attempts, since = %b.since, error = %b.error, "publishing failing")
        }
        Event::Recovered(b) => {
            tracing::info!(consumer = %b.consumer, reason = %b.reason.as_str(), "publishing recovered")
        }
        Event::Retirement(b) => {
            tracing::info!(consumer = %b.consumer, action = %b.action.as_str(), "publishing retirement")
        }
        Event::Repair(b) => {
            tracing::warn!(fault = %b.fault, outcome = ?b.outcome, detail = %b.detail, next_attempt_at = ?b.next_attempt_at.map(|t| t.to_string()), "publishing repair")
        }
        Event::Alive(b) => {
            tracing::debug!(consumers = b.consumers, failing = b.failing, settled_at = ?b.settled_at.map(|t| t.to_string()), "publishing alive")
        }
        // Published by mesh-grants, never by a provisioner loop.
        Event::Unreachable(_)
        | Event::Reachable(_)
        | Event::Unchecked(_)
        | Event::GrantsRead(_) => {}
    }
    outbox.put(
        event_subject(&provider.machine, &provider.module, kind),
        event,
    );
}

/// Compile-time checks: the loop's futures can be spawned.
#[cfg(test)]
mod send_checks {
    use super::*;
    use crate::internals::FakeProvisioner;

    fn is_send<T: Send>(_: T) {}

    #[allow(dead_code)]
    fn pass_is_send(r: &mut Runner<FakeProvisioner>) {
        is_send(r.pass());
    }
    #[allow(dead_code)]
    fn approve_is_send(r: &mut Runner<FakeProvisioner>) {
        is_send(r.approve(b""));
    }
    #[allow(dead_code)]
    fn run_is_send(args: &crate::ProviderArgs) {
        is_send(run_until(
            FakeProvisioner::new(),
            args,
            std::future::pending(),
        ));
    }
}
