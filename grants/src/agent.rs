//! The agent: every `check_every`, the grants file re-read and each grant
//! checked from its consumer's position, its standing fed, events put on the
//! outbox (pending and sent again until JetStream acknowledges them).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use futures::stream::{self, StreamExt};
use mesh_protocol::event::{
    Event, GrantReachable, GrantUnchecked, GrantUnreachable, ReachableReason, VERSION,
};
use mesh_protocol::subject::event_subject;
use mesh_runtime::redact::cut;
use mesh_runtime::streak::Recovery;
use mesh_runtime::{Outbox, WallClock};
use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use tokio::time::Instant;

use crate::dial::{dial, namespace, ContainerRuntime};
use crate::file::{Grant, GrantKey, GrantsSource};
use crate::standing::{GrantCheck, GrantPublish, GrantRules, GrantStanding};

/// Free text of an event is cut to this many characters (as a provider's errors are).
const MAX_TEXT_CHARS: usize = 200;

/// Everything configurable about the agent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GrantsSettings {
    /// Time between checks.
    pub check_every: Duration,
    /// Standing timings.
    pub rules: GrantRules,
    /// Bound of one connect.
    pub connect_timeout: Duration,
    /// The container runtime for `container` grants.
    pub runtime: ContainerRuntime,
    /// Grants dialled at once.
    pub concurrency: usize,
}

impl Default for GrantsSettings {
    fn default() -> Self {
        GrantsSettings {
            check_every: Duration::from_secs(30),
            rules: GrantRules::default(),
            connect_timeout: Duration::from_secs(3),
            runtime: ContainerRuntime::Docker,
            concurrency: 16,
        }
    }
}

/// What one round of checks found.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Round {
    /// Grants looked at.
    pub grants: usize,
    /// Of which reached this round.
    pub reached: usize,
    /// Of which failed this round.
    pub failed: usize,
    /// Of which not checked (no port, not running).
    pub unchecked: usize,
    /// Events put on the outbox.
    pub published: Vec<Event>,
    /// Errors of the grants file this round.
    pub file_errors: Vec<String>,
}

/// What `/metrics` shows.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    grants: Family<Vec<(String, String)>, Gauge>,
    file_refused: Gauge,
    entries_refused: Gauge,
    checks: Arc<AtomicU64>,
}

impl Metrics {
    fn new() -> Metrics {
        let mut registry = Registry::with_prefix("mesh_grants");
        let grants = Family::<Vec<(String, String)>, Gauge>::default();
        registry.register(
            "grants",
            "Grants by their standing: reachable, failing (not yet said), unreachable, unchecked",
            grants.clone(),
        );
        let file_refused = Gauge::default();
        registry.register(
            "file_refused",
            "1 while the grants file cannot be read, parsed or taken (its last good list is checked)",
            file_refused.clone(),
        );
        let entries_refused = Gauge::default();
        registry.register(
            "entries_refused",
            "Entries of the grants file refused at the last read (checked from their last good entry, or not at all)",
            entries_refused.clone(),
        );
        Metrics {
            registry,
            grants,
            file_refused,
            entries_refused,
            checks: Arc::new(AtomicU64::new(0)),
        }
    }

    /// The Prometheus text.
    pub fn encode(&self) -> String {
        let mut text = String::new();
        encode(&mut text, &self.registry).expect("writing to a String cannot fail");
        text
    }

    /// What the last read of the grants file refused.
    fn refused(&self, refused: mesh_listfile::Refused) {
        self.file_refused.set(i64::from(refused.file));
        self.entries_refused
            .set(i64::try_from(refused.entries).unwrap_or(i64::MAX));
    }

    /// Rounds of checks done.
    pub fn rounds(&self) -> u64 {
        self.checks.load(Ordering::Relaxed)
    }
}

/// The agent's state.
pub struct Agent {
    source: GrantsSource,
    settings: GrantsSettings,
    standings: HashMap<GrantKey, GrantStanding>,
    outbox: Arc<Outbox>,
    clock: WallClock,
    metrics: Arc<Metrics>,
}

impl Agent {
    /// An agent reading the grants file at `path`, publishing its events on `outbox`.
    pub fn new(
        path: impl Into<std::path::PathBuf>,
        settings: GrantsSettings,
        outbox: Arc<Outbox>,
    ) -> Agent {
        Agent {
            source: GrantsSource::new(path),
            settings,
            standings: HashMap::new(),
            outbox,
            clock: WallClock::system(),
            metrics: Arc::new(Metrics::new()),
        }
    }

    /// Uses `clock` for the times in event bodies (tests fix it).
    pub fn with_clock(mut self, clock: WallClock) -> Agent {
        self.clock = clock;
        self
    }

    /// The metrics (shared with `/metrics`).
    pub fn metrics(&self) -> Arc<Metrics> {
        Arc::clone(&self.metrics)
    }

    /// The standing of a grant, if it was checked since start.
    pub fn standing(&self, key: &GrantKey) -> Option<&GrantStanding> {
        self.standings.get(key)
    }

    /// One round: the file read, every grant checked, standings fed, events published.
    pub async fn check(&mut self) -> Round {
        let grants = self.source.load().map(|loaded| loaded.list.clone());
        let file_errors = self.source.problems().to_vec();
        self.metrics.refused(self.source.refused());
        let Some(grants) = grants else {
            return Round {
                file_errors,
                ..Round::default()
            };
        };
        let settings = self.settings;
        let checks: Vec<(usize, GrantCheck)> = stream::iter(grants.grants.iter().enumerate())
            .map(|(i, grant)| async move { (i, check_one(grant, &settings).await) })
            .buffer_unordered(settings.concurrency.max(1))
            .collect()
            .await;
        let mut checks: Vec<Option<GrantCheck>> = {
            let mut ordered = vec![None; grants.grants.len()];
            for (i, c) in checks {
                ordered[i] = Some(c);
            }
            ordered
        };
        let now = Instant::now();
        let mut round = Round {
            grants: grants.grants.len(),
            file_errors,
            ..Round::default()
        };
        let listed: Vec<GrantKey> = grants.grants.iter().map(Grant::key).collect();
        self.standings.retain(|k, _| listed.contains(k));
        for (grant, check) in grants.grants.iter().zip(checks.iter_mut()) {
            let check = check.take().expect("every grant was checked");
            match &check {
                GrantCheck::Reached => round.reached += 1,
                GrantCheck::Failed(error) => {
                    round.failed += 1;
                    tracing::debug!(consumer = %grant.consumer, from = %grant.from, address = %grant.address, error = %error, "grant check failed");
                }
                GrantCheck::Unchecked(_) => round.unchecked += 1,
            }
            let standing = self.standings.entry(grant.key()).or_default();
            let Some(due) = standing.observe(check, now, &settings.rules) else {
                continue;
            };
            let event = self.event(grant, due, now);
            log(grant, &event);
            self.outbox.put(
                event_subject(&grants.machine, &grant.consumer, event.kind()),
                &event,
            );
            round.published.push(event);
        }
        self.update_metrics();
        self.metrics.checks.fetch_add(1, Ordering::Relaxed);
        round
    }

    fn update_metrics(&self) {
        let mut counts: HashMap<&str, i64> = HashMap::new();
        for s in self.standings.values() {
            let state = if s.is_unchecked() {
                "unchecked"
            } else if s.is_unreachable() {
                "unreachable"
            } else if s.failures() > 0 {
                "failing"
            } else {
                "reachable"
            };
            *counts.entry(state).or_default() += 1;
        }
        for state in ["reachable", "failing", "unreachable", "unchecked"] {
            self.metrics
                .grants
                .get_or_create(&vec![("state".to_owned(), state.to_owned())])
                .set(counts.get(state).copied().unwrap_or(0));
        }
    }

    fn event(&self, grant: &Grant, due: GrantPublish, now: Instant) -> Event {
        let said_at = self.clock.at(now);
        match due {
            GrantPublish::Unreachable {
                failures,
                failing_since,
                last_reachable_at,
                error,
            } => Event::Unreachable(GrantUnreachable {
                v: VERSION,
                provision: grant.provision.clone(),
                from: grant.from.clone(),
                address: grant.address.clone(),
                port: grant.port.unwrap_or_default(),
                failures,
                failing_since: self.clock.at(failing_since),
                last_reachable_at: last_reachable_at.map(|t| self.clock.at(t)),
                error: cut(&error, MAX_TEXT_CHARS),
                said_at,
            }),
            GrantPublish::Reachable(recovery) => Event::Reachable(GrantReachable {
                v: VERSION,
                provision: grant.provision.clone(),
                from: grant.from.clone(),
                address: grant.address.clone(),
                port: grant.port.unwrap_or_default(),
                reason: match recovery {
                    Recovery::Success => ReachableReason::Success,
                    Recovery::FirstSuccessAfterStart => ReachableReason::FirstSuccessAfterStart,
                },
                said_at,
            }),
            GrantPublish::Unchecked(reason) => Event::Unchecked(GrantUnchecked {
                v: VERSION,
                provision: grant.provision.clone(),
                from: grant.from.clone(),
                reason: cut(&reason, MAX_TEXT_CHARS),
                said_at,
            }),
        }
    }
}

/// Checks one grant: no port is never dialled; else its consumer's
/// namespace is found and the address dialled from inside it.
async fn check_one(grant: &Grant, settings: &GrantsSettings) -> GrantCheck {
    let Some(port) = grant.port else {
        return GrantCheck::Unchecked("no port".into());
    };
    match namespace(&grant.position, settings.runtime).await {
        Ok(netns) => dial(&netns, &grant.address, port, settings.connect_timeout).await,
        Err(check) => check,
    }
}

fn log(grant: &Grant, event: &Event) {
    let (consumer, from) = (&grant.consumer, &grant.from);
    match event {
        Event::Unreachable(b) => {
            tracing::warn!(%consumer, %from, address = %b.address, port = b.port, failures = b.failures, error = %b.error, "publishing grant unreachable")
        }
        Event::Reachable(b) => {
            tracing::info!(%consumer, %from, reason = b.reason.as_str(), "publishing grant reachable")
        }
        Event::Unchecked(b) => {
            tracing::info!(%consumer, %from, reason = %b.reason, "publishing grant unchecked")
        }
        _ => {}
    }
}
