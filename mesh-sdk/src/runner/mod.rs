//! The provisioner loop: a pass every `pass_every`, each listed consumer
//! attempted with bounded concurrency, standings and retirement fed, words
//! put on the outbox.
//!
//! [`Runner`] is the loop's state; [`Runner::pass`] runs one pass and
//! [`Runner::approve`] answers a person's approval, so tests drive them on
//! tokio's paused clock. [`run`] wires a runner to the bus, the approve
//! subject and the stop signals for a provider binary.

mod attempt;
mod herald;
mod serve;

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use crate::bus::Outbox;
use crate::classify::Class;
use crate::clock::WallClock;
use crate::contributions::{Consumer, Contributions, ProviderId, Source};
use crate::event::{
    event_subject, ApproveReply, ApproveRequest, Event, EventKind, Failing, Recovered,
    Repair as RepairBody, RepairOutcome, Retirement as RetirementBody, RetirementAction, VERSION,
};
use crate::health::Progress;
use crate::metrics::{ConsumerStates, LoopMetrics};
use crate::name::Name;
use crate::provisioner::{Held, Provisioner};
use crate::redact::{error_words, redact};
use crate::repair::{AnyRepair, FaultState, KnownFault, Probe, RepairRules, Step};
use crate::retire::{Action, Approval, RetireRules, Retirement};
use crate::secret::{FileSecrets, SecretSource};
use crate::standing::{Outcome, Standing, StandingRules, Word};

pub use serve::{run, run_until, RunError};

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
    /// How often `alive` is said (after the first pass, then this often).
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

/// What one pass did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PassReport {
    /// Whether the contributions file was read this pass (else the last good list was used).
    pub fresh: bool,
    /// Consumers attempted.
    pub attempted: usize,
    /// Consumers that failed.
    pub failed: usize,
    /// Words put on the outbox.
    pub said: usize,
    /// Whether a known fault kept the backend from being called for consumers.
    pub gated: bool,
}

/// What the loop remembers of one consumer since start.
#[derive(Debug)]
struct Entry {
    standing: Standing,
    machine: Name,
    provision: String,
}

/// The loop's state for one provider.
pub struct Runner<P: Provisioner> {
    provisioner: Arc<P>,
    settings: Settings,
    source: Source,
    entries: HashMap<Name, Entry>,
    retirement: Retirement,
    outbox: Arc<Outbox>,
    clock: WallClock,
    /// The last "cannot list held provisions" words logged (logged once per change).
    held_error: Option<String>,
    /// The provider's known faults and their gates.
    faults: Vec<(KnownFault, FaultState)>,
    /// Where minted secrets come from.
    secrets: Arc<dyn SecretSource>,
    /// Says `alive`.
    herald: Arc<herald::Herald>,
    /// What `/metrics` shows.
    metrics: Arc<LoopMetrics>,
    /// When the loop last moved (`/healthz`).
    progress: Arc<Progress>,
}

impl<P: Provisioner> Runner<P> {
    /// A runner reading the contributions file at `contributions`, saying its words on `outbox`.
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
        let metrics = Arc::new(LoopMetrics::new());
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
            entries: HashMap::new(),
            retirement: Retirement::new(),
            outbox,
            clock: WallClock::system(),
            held_error: None,
            herald,
            metrics,
            progress: Arc::new(Progress::new()),
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

    /// The provider named by the last good contributions file, if one was read.
    pub fn provider(&self) -> Option<&ProviderId> {
        self.source.last_good().map(|c| &c.provider)
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

    /// Runs one pass now.
    pub async fn pass(&mut self) -> PassReport {
        let began = Instant::now();
        let Some(loaded) = self.source.load() else {
            return PassReport::default();
        };
        let fresh = loaded.fresh;
        let contributions = Arc::clone(loaded.contributions);
        let mut report = PassReport {
            fresh,
            attempted: contributions.consumers.len(),
            ..PassReport::default()
        };
        let gate = self.repair_pass(&contributions.provider).await;
        report.gated = gate.is_some();
        let outcomes = match gate {
            // The gate is closed: the backend is not called for consumers;
            // they fail with the fault's class and words.
            Some(failure) => (0..contributions.consumers.len())
                .map(|i| (i, Err(failure.clone())))
                .collect(),
            None => {
                let attempts = attempt::Attempts {
                    provisioner: Arc::clone(&self.provisioner),
                    secrets: Arc::clone(&self.secrets),
                    provider_secrets: self.provisioner.secrets().into(),
                    call_timeout: self.settings.call_timeout,
                    progress: Arc::clone(&self.progress),
                };
                attempt::all(&attempts, &contributions, self.settings.concurrency).await
            }
        };
        let now = Instant::now();
        let mut rejected = false;
        let mut states = ConsumerStates::default();
        for (index, result) in outcomes {
            let consumer = &contributions.consumers[index];
            if let Err((class, _)) = &result {
                report.failed += 1;
                rejected |= *class == Class::CredentialsRejected;
            }
            let (said, state) = self.observe(&contributions.provider, consumer, result, now);
            report.said += said;
            match state {
                State::Ok => states.ok += 1,
                State::FailingUnsaid => states.failing_unsaid += 1,
                State::Failing => states.failing += 1,
            }
        }
        if rejected && !report.gated {
            self.faults
                .iter_mut()
                .for_each(|(_, state)| state.trigger());
        }
        if !report.gated {
            report.said += self.retirement_pass(&contributions, fresh).await;
        }
        states.retiring = count(self.retirement.retiring());
        let ended = Instant::now();
        self.herald.pass_ended(
            &contributions.provider,
            began,
            ended,
            count(contributions.consumers.len()),
            states.failing + states.failing_unsaid,
        );
        self.metrics
            .pass(ended.saturating_duration_since(began), states);
        self.progress.tick();
        report
    }

    /// Says `alive` when it is due: after the first pass, then every
    /// `alive_every`. Returns whether it was said.
    pub fn say_alive_if_due(&self) -> bool {
        self.herald.say_if_due()
    }

    /// The herald, for a task that says `alive` while a pass runs.
    pub(crate) fn herald(&self) -> Arc<herald::Herald> {
        Arc::clone(&self.herald)
    }

    /// Probes the known faults that are due, repairs what it may, says what
    /// it did; returns the failure consumers get while a fault is present.
    async fn repair_pass(&mut self, provider: &ProviderId) -> Option<(Class, String)> {
        let rules = self.settings.repair;
        let call_timeout = self.settings.call_timeout;
        let provider_secrets: Vec<String> = self
            .provisioner
            .secrets()
            .iter()
            .map(|s| s.expose().to_owned())
            .collect();
        let mut words = Vec::new();
        let mut gate = None;
        for (known, state) in &mut self.faults {
            let repair = known.hook();
            let fault = repair.fault();
            // The hook's secrets are asked for again after a repair, which
            // may have minted new ones (a temporary administrator's password).
            let secrets_now = || {
                let mut all = provider_secrets.clone();
                all.extend(repair.secrets().iter().map(|s| s.expose().to_owned()));
                all
            };
            let secrets = secrets_now();
            let scrub = |text: &str| redact(text, &secrets);
            if state.probe_due(Instant::now(), &rules) {
                let found = probe(repair, call_timeout, &scrub).await;
                match state.probed(found, Instant::now()) {
                    Step::Nothing => {}
                    Step::SayCleared => words.push((
                        fault.clone(),
                        RepairOutcome::Repaired,
                        "the fault is gone without a repair by this provider".to_owned(),
                        None,
                    )),
                    Step::SayBraked(next) => {
                        let detail = format!(
                            "{}; repair held back by the brake after {} failed attempts",
                            state.present().unwrap_or_default(),
                            state.brake().failures()
                        );
                        words.push((fault.clone(), RepairOutcome::Braked, detail, Some(next)));
                    }
                    Step::Repair => {
                        tracing::warn!(fault = %fault, error = state.present().unwrap_or_default(), "known fault found; repairing");
                        let did = match tokio::time::timeout(rules.repair_timeout, repair.repair())
                            .await
                        {
                            Ok(Ok(did)) => Ok(did),
                            Ok(Err(why)) => Err(why),
                            Err(_) => Err(format!(
                                "repair timed out after {}",
                                humantime::format_duration(rules.repair_timeout)
                            )),
                        };
                        let after = secrets_now();
                        let scrub = |text: &str| redact(text, &after);
                        let verified = probe(repair, call_timeout, &scrub).await;
                        let verify_words = match &verified {
                            Probe::Healthy => String::new(),
                            Probe::Fault(w) | Probe::Unknown(w) => w.clone(),
                        };
                        match (state.repaired(verified, Instant::now()), did) {
                            (Ok(()), Ok(did)) => words.push((
                                fault.clone(),
                                RepairOutcome::Repaired,
                                scrub(&format!("{did}; verified")),
                                None,
                            )),
                            (Ok(()), Err(why)) => words.push((
                                fault.clone(),
                                RepairOutcome::Repaired,
                                scrub(&format!(
                                    "verified healthy although the repair reported: {why}"
                                )),
                                None,
                            )),
                            (Err(next), Ok(did)) => words.push((
                                fault.clone(),
                                RepairOutcome::Failed,
                                scrub(&format!("{did}, but the fault remains: {verify_words}")),
                                Some(next),
                            )),
                            (Err(next), Err(why)) => words.push((
                                fault.clone(),
                                RepairOutcome::Failed,
                                scrub(&format!("repair failed: {why}")),
                                Some(next),
                            )),
                        }
                    }
                }
            }
            if gate.is_none() {
                if let Some(present) = state.present() {
                    gate = Some((repair.class(), scrub(&format!("{fault}: {present}"))));
                }
            }
        }
        let now = Instant::now();
        for (fault, outcome, detail, next) in words {
            let event = Event::Repair(RepairBody {
                v: VERSION,
                fault,
                outcome,
                detail,
                next_attempt_at: next.map(|n| self.clock.at(n)),
                said_at: self.clock.at(now),
            });
            say(&self.outbox, &self.metrics, provider, &event);
        }
        gate
    }

    /// Feeds one consumer's outcome to its standing; returns words said and
    /// the consumer's state after it.
    fn observe(
        &mut self,
        provider: &ProviderId,
        consumer: &Consumer,
        result: Result<(), (Class, String)>,
        now: Instant,
    ) -> (usize, State) {
        let entry = match self.entries.get_mut(&consumer.name) {
            Some(entry) => {
                if entry.machine != consumer.machine {
                    entry.machine = consumer.machine.clone();
                }
                if entry.provision != consumer.provision {
                    entry.provision.clone_from(&consumer.provision);
                }
                entry
            }
            None => self
                .entries
                .entry(consumer.name.clone())
                .or_insert_with(|| Entry {
                    standing: Standing::new(),
                    machine: consumer.machine.clone(),
                    provision: consumer.provision.clone(),
                }),
        };
        let word = match &result {
            Ok(()) => entry
                .standing
                .observe(Outcome::Success, now, &self.settings.standing),
            Err((class, error)) => {
                let changed = entry
                    .standing
                    .failure()
                    .is_none_or(|f| f.class != *class || f.error != *error);
                if changed {
                    tracing::warn!(consumer = %consumer.name, class = %class, error = %error, "provision failed");
                } else {
                    tracing::debug!(consumer = %consumer.name, class = %class, "provision still failing");
                }
                entry.standing.observe(
                    Outcome::Failure {
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
            Some(f) if f.said_at.is_none() => State::FailingUnsaid,
            Some(_) => State::Failing,
        };
        let Some(word) = word else {
            return (0, state);
        };
        let event = standing_event(
            &consumer.name,
            Some(&consumer.machine),
            Some(&consumer.provision),
            word,
            &self.clock,
            now,
        );
        say(&self.outbox, &self.metrics, provider, &event);
        (1, state)
    }

    /// Retirement for this pass: fetch what the backend holds, act on it.
    async fn retirement_pass(&mut self, contributions: &Contributions, fresh: bool) -> usize {
        let held = if fresh { self.fetch_held().await } else { None };
        let listed: HashSet<&Name> = contributions.listed().collect();
        let actions = self.retirement.pass(
            fresh.then_some(&listed),
            held.as_deref(),
            Instant::now(),
            &self.settings.retire,
        );
        let mut said = 0;
        for action in actions {
            said += match action {
                Action::Retire(name) => {
                    self.retire_now(
                        &contributions.provider,
                        &name,
                        "withdrawn from the contributions file long enough",
                    )
                    .await
                }
                Action::ReEnable(name) => self.re_enable(&contributions.provider, &name).await,
            };
        }
        if let Some(held) = &held {
            said += self.withdrawn(
                &contributions.provider,
                &listed,
                contributions.consumers.len(),
                held,
            );
        }
        said
    }

    /// Consumers no longer listed that the backend does not hold (never
    /// made, or removed by a person): nothing to retire. A `failing` said
    /// for one is answered by `recovered` (`withdrawn`); its standing is
    /// forgotten either way. Only on a pass whose file and held list were read.
    fn withdrawn(
        &mut self,
        provider: &ProviderId,
        listed: &HashSet<&Name>,
        served: usize,
        held: &[Held],
    ) -> usize {
        // Every served consumer has a standing (each is observed every
        // pass), so a standing of a consumer not listed exists only when
        // there are more standings than served consumers.
        if self.entries.len() <= served {
            return 0;
        }
        let held: HashSet<&Name> = held.iter().map(|h| &h.name).collect();
        let gone: Vec<Name> = self
            .entries
            .keys()
            .filter(|name| !listed.contains(name) && !held.contains(name))
            .cloned()
            .collect();
        let now = Instant::now();
        let mut said = 0;
        for name in gone {
            let Some(entry) = self.entries.remove(&name) else {
                continue;
            };
            let Some(word) = entry.standing.withdraw() else {
                continue;
            };
            tracing::info!(consumer = %name, "withdrawn and not held: its failing is over");
            let event = standing_event(
                &name,
                Some(&entry.machine),
                Some(&entry.provision),
                word,
                &self.clock,
                now,
            );
            say(&self.outbox, &self.metrics, provider, &event);
            said += 1;
        }
        said
    }

    async fn fetch_held(&mut self) -> Option<Vec<Held>> {
        let timeout = self.settings.call_timeout;
        let error = match tokio::time::timeout(timeout, self.provisioner.held()).await {
            Ok(Ok(held)) => {
                if self.held_error.take().is_some() {
                    tracing::info!("held provisions can be listed again");
                }
                return Some(held);
            }
            Ok(Err(error)) => self.redacted(&error_words(&error)),
            Err(_) => format!(
                "listing held provisions timed out after {}",
                humantime::format_duration(timeout)
            ),
        };
        if self.held_error.as_ref() != Some(&error) {
            tracing::warn!(error = %error, "cannot list held provisions; passes do not count towards retirement until it can");
            self.held_error = Some(error);
        }
        None
    }

    fn redacted(&self, text: &str) -> String {
        let secrets = self.provisioner.secrets();
        let values: Vec<&str> = secrets.iter().map(|s| s.expose()).collect();
        redact(text, &values)
    }

    /// Calls one retirement method with the call timeout; errors are logged and returned redacted.
    async fn call<F>(&self, what: &str, name: &Name, call: F) -> Result<(), String>
    where
        F: std::future::Future<Output = Result<(), P::Error>>,
    {
        let result = match tokio::time::timeout(self.settings.call_timeout, call).await {
            Ok(Ok(())) => return Ok(()),
            Ok(Err(error)) => self.redacted(&error_words(&error)),
            Err(_) => format!(
                "{what} timed out after {}",
                humantime::format_duration(self.settings.call_timeout)
            ),
        };
        tracing::warn!(consumer = %name, error = %result, "{what} failed; tried again on a later pass");
        Err(result)
    }

    async fn retire_now(&mut self, provider: &ProviderId, name: &Name, why: &str) -> usize {
        let provisioner = Arc::clone(&self.provisioner);
        if self
            .call("retire", name, provisioner.retire(name))
            .await
            .is_err()
        {
            return 0;
        }
        self.retirement.retired(name);
        tracing::info!(consumer = %name, why, "retired");
        let now = Instant::now();
        let detail = format!("disabled, nothing deleted: {why}");
        self.say_retirement(provider, name, RetirementAction::Retired, detail, now);
        let (machine, provision, word) = match self.entries.get_mut(name) {
            Some(entry) => (
                Some(entry.machine.clone()),
                Some(entry.provision.clone()),
                entry.standing.retire(),
            ),
            None => (None, None, Standing::new().retire()),
        };
        self.entries.remove(name);
        let event = standing_event(
            name,
            machine.as_ref(),
            provision.as_deref(),
            word,
            &self.clock,
            now,
        );
        say(&self.outbox, &self.metrics, provider, &event);
        2
    }

    async fn re_enable(&mut self, provider: &ProviderId, name: &Name) -> usize {
        let provisioner = Arc::clone(&self.provisioner);
        if self
            .call("re-enable", name, provisioner.re_enable(name))
            .await
            .is_err()
        {
            return 0;
        }
        tracing::info!(consumer = %name, "re-enabled");
        self.say_retirement(
            provider,
            name,
            RetirementAction::ReEnabled,
            "listed again: enabled again".into(),
            Instant::now(),
        );
        1
    }

    fn say_retirement(
        &self,
        provider: &ProviderId,
        name: &Name,
        action: RetirementAction,
        detail: String,
        now: Instant,
    ) {
        let event = Event::Retirement(RetirementBody {
            v: VERSION,
            consumer: name.clone(),
            action,
            detail,
            said_at: self.clock.at(now),
        });
        say(&self.outbox, &self.metrics, provider, &event);
    }

    /// Why `request` must not be acted on now, if its deadline passed.
    fn expired(&self, request: &ApproveRequest) -> Option<String> {
        let deadline = request.expires_at?;
        let now = self.clock.at(Instant::now());
        (now > deadline).then(|| {
            tracing::warn!(consumer = %request.consumer, expires_at = %deadline, "approval came after its deadline; not acted on");
            format!("the request expired at {deadline} (the asker stopped waiting); nothing was done")
        })
    }

    /// Answers a person's approval request (its raw JSON body).
    /// A malformed request is answered `ok: false`, never a crash.
    pub async fn approve(&mut self, body: &[u8]) -> ApproveReply {
        let refuse = |detail: String| ApproveReply { ok: false, detail };
        let request: ApproveRequest = match serde_json::from_slice(body) {
            Ok(request) => request,
            Err(error) => return refuse(format!("malformed approve request: {error}")),
        };
        if request.v != VERSION {
            return refuse(format!("unsupported approve request version {}", request.v));
        }
        if let Some(expired) = self.expired(&request) {
            return refuse(expired);
        }
        let Some(loaded) = self.source.load() else {
            return refuse("no contributions file was read yet".into());
        };
        let (contributions, fresh) = (Arc::clone(loaded.contributions), loaded.fresh);
        if !fresh {
            return refuse("the contributions file cannot be read now, so whether the consumer is withdrawn is unknown; try again later".into());
        }
        let Some(held) = self.fetch_held().await else {
            return refuse(
                "the provisions held at the backend cannot be listed now; try again later".into(),
            );
        };
        let name = &request.consumer;
        let listed = contributions.lists(name);
        let entry = held.iter().find(|h| &h.name == name);
        let provider = &contributions.provider;
        // Listing what the backend holds took time: the deadline again,
        // right before acting.
        if let Some(expired) = self.expired(&request) {
            return refuse(expired);
        }
        match self.retirement.approve(name, request.delete, listed, entry) {
            Approval::Refused(detail) => {
                tracing::info!(consumer = %name, delete = request.delete, reason = %detail, "approval refused");
                refuse(detail)
            }
            Approval::RetireNow(name) => {
                self.say_retirement(
                    provider,
                    &name,
                    RetirementAction::Approved,
                    "a person approved retiring it now".into(),
                    Instant::now(),
                );
                if self
                    .retire_now(provider, &name, "a person approved it")
                    .await
                    == 0
                {
                    return refuse(format!("retiring {name} failed; see the provider's log"));
                }
                ApproveReply {
                    ok: true,
                    detail: format!("{name} retired: disabled, nothing deleted"),
                }
            }
            Approval::Delete(name) => {
                self.say_retirement(
                    provider,
                    &name,
                    RetirementAction::Approved,
                    "a person approved deleting its data".into(),
                    Instant::now(),
                );
                let provisioner = Arc::clone(&self.provisioner);
                if let Err(error) = self.call("delete", &name, provisioner.delete(&name)).await {
                    return refuse(format!("deleting {name} failed: {error}"));
                }
                tracing::info!(consumer = %name, "deleted on approval");
                self.say_retirement(
                    provider,
                    &name,
                    RetirementAction::Deleted,
                    "its provision and data were deleted".into(),
                    Instant::now(),
                );
                ApproveReply {
                    ok: true,
                    detail: format!("{name} deleted"),
                }
            }
        }
    }
}

/// A listed consumer's state after a pass (for the metrics).
enum State {
    Ok,
    FailingUnsaid,
    Failing,
}

fn count(n: usize) -> u64 {
    u64::try_from(n).unwrap_or(u64::MAX)
}

/// Probes a fault, bounded by the call timeout; its words are scrubbed.
async fn probe(
    repair: &dyn AnyRepair,
    timeout: Duration,
    scrub: &impl Fn(&str) -> String,
) -> Probe {
    match tokio::time::timeout(timeout, repair.probe()).await {
        Ok(Probe::Healthy) => Probe::Healthy,
        Ok(Probe::Fault(words)) => Probe::Fault(scrub(&words)),
        Ok(Probe::Unknown(words)) => Probe::Unknown(scrub(&words)),
        Err(_) => Probe::Unknown(format!(
            "probe timed out after {}",
            humantime::format_duration(timeout)
        )),
    }
}

/// The event for a standing word.
fn standing_event(
    consumer: &Name,
    machine: Option<&Name>,
    provision: Option<&str>,
    word: Word,
    clock: &WallClock,
    now: Instant,
) -> Event {
    match word {
        Word::Failing {
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
        Word::Recovered(reason) => Event::Recovered(Recovered {
            v: VERSION,
            consumer: consumer.clone(),
            consumer_machine: machine.cloned(),
            provision: provision.map(str::to_owned),
            reason,
            said_at: clock.at(now),
        }),
    }
}

/// Logs a word and holds it on the outbox.
fn say(outbox: &Outbox, metrics: &LoopMetrics, provider: &ProviderId, event: &Event) {
    metrics.said(event);
    let kind: EventKind = event.kind();
    match event {
        Event::Failing(b) => {
            tracing::warn!(consumer = %b.consumer, class = %b.class, attempts = b.attempts, since = %b.since, error = %b.error, "saying failing")
        }
        Event::Recovered(b) => {
            tracing::info!(consumer = %b.consumer, reason = %b.reason.as_str(), "saying recovered")
        }
        Event::Retirement(b) => {
            tracing::info!(consumer = %b.consumer, action = %b.action.as_str(), "saying retirement")
        }
        Event::Repair(b) => {
            tracing::warn!(fault = %b.fault, outcome = ?b.outcome, detail = %b.detail, next_attempt_at = ?b.next_attempt_at.map(|t| t.to_string()), "saying repair")
        }
        Event::Alive(b) => {
            tracing::debug!(consumers = b.consumers, failing = b.failing, settled_at = ?b.settled_at.map(|t| t.to_string()), "saying alive")
        }
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
    use crate::testing::FakeProvisioner;

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
