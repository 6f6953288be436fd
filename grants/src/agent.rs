//! The agent: every `check_every`, the grants file re-read and each grant
//! checked from its consumer's position, its standing fed, events put on the
//! outbox (pending and sent again until JetStream acknowledges them).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use futures::stream::{self, StreamExt};
use mesh_protocol::event::{
    ContributionsRead, Event, GrantReachable, GrantUnchecked, GrantUnreachable, GrantsRead,
    ReachableReason, VERSION,
};
use mesh_protocol::subject::{event_subject, grants_read_subject};
use mesh_protocol::Name;
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
    /// What this round's read refused, when it was said (`grant.read`).
    pub read_said: Option<GrantsRead>,
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
    /// The machine it was told it is on (`--machine`), if any.
    machine: Option<Name>,
    /// What it last said of its reads, and when.
    said_read: Option<(ContributionsRead, Instant)>,
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
            machine: None,
            said_read: None,
            settings,
            standings: HashMap::new(),
            outbox,
            clock: WallClock::system(),
            metrics: Arc::new(Metrics::new()),
        }
    }

    /// Tells the agent which machine it is on (`--machine`): then it says
    /// a grants file it cannot take even before a good one named the
    /// machine, and checks nothing of a file that names another machine.
    pub fn on_machine(mut self, machine: Name) -> Agent {
        self.machine = Some(machine);
        self
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
        let mut grants = self.source.load().map(|loaded| loaded.list.clone());
        let mut file_errors = self.source.problems().to_vec();
        self.metrics.refused(self.source.refused());
        let mut file_problem = self.source.file_problem().map(str::to_owned);
        if let (Some(me), Some(list)) = (&self.machine, &grants) {
            if list.machine != *me {
                let problem = format!(
                    "grants file {} names machine {}, and this agent is on {me}: nothing is \
                     checked until it names {me}",
                    self.source.path().display(),
                    list.machine
                );
                // Logged once, when it is first said (what is said is cut).
                let said = self
                    .said_read
                    .as_ref()
                    .and_then(|(r, _)| r.problem.as_ref());
                if said != Some(&cut(&problem, MAX_TEXT_CHARS)) {
                    tracing::error!(grants = %self.source.path().display(), names = %list.machine, machine = %me, "the grants file names another machine; nothing is checked until it names this one");
                }
                file_errors.push(problem.clone());
                file_problem = Some(problem);
                grants = None;
            }
        }
        let read_said = self.say_read(file_problem, grants.as_deref());
        let Some(grants) = grants else {
            return Round {
                file_errors,
                read_said,
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
            read_said,
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

    /// Says what this read refused (`grant.read`): at the first read, when
    /// it changed since it was last said, and every `repeat_every` while it
    /// refuses anything. `served` is the list checked (none: nothing).
    /// Nothing is said while the machine is unknown (no `--machine` and no
    /// good file yet): there is no subject to say it on.
    fn say_read(
        &mut self,
        file_problem: Option<String>,
        served: Option<&crate::file::MachineGrants>,
    ) -> Option<GrantsRead> {
        let machine = self
            .machine
            .clone()
            .or_else(|| self.source.last_good().map(|g| g.machine.clone()))?;
        let read = read_of(file_problem, served);
        let now = Instant::now();
        let due = match &self.said_read {
            None => true,
            Some((said, at)) => {
                *said != read
                    || (read.refuses_anything()
                        && now.duration_since(*at) >= self.settings.rules.repeat_every)
            }
        };
        if !due {
            return None;
        }
        let body = GrantsRead {
            v: VERSION,
            file: self.source.path().display().to_string(),
            read: read.clone(),
            said_at: self.clock.at(now),
        };
        if read.refuses_anything() {
            tracing::warn!(%machine, readable = read.readable, problem = read.problem.as_deref().unwrap_or(""), refused = read.refused.len() as u64 + read.more, "publishing grants read: input refused");
        } else {
            tracing::info!(%machine, "publishing grants read: nothing refused");
        }
        self.outbox.put(
            grants_read_subject(&machine),
            &Event::GrantsRead(body.clone()),
        );
        self.said_read = Some((read, now));
        Some(body)
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

/// What a read refused, as `grant.read` says it: the file's problem (its
/// last good list is checked, if any), and the entries refused in the list
/// checked, each text cut.
fn read_of(
    file_problem: Option<String>,
    served: Option<&crate::file::MachineGrants>,
) -> ContributionsRead {
    let refused = served
        .map(|g| g.refused_entries.as_slice())
        .unwrap_or_default()
        .iter()
        .map(|r| mesh_protocol::event::RefusedContribution {
            reason: cut(&r.reason, MAX_TEXT_CHARS),
            ..r.clone()
        })
        .collect();
    ContributionsRead {
        readable: file_problem.is_none(),
        problem: file_problem.map(|p| cut(&p, MAX_TEXT_CHARS)),
        refused,
        more: 0,
    }
    .capped()
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

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"{"machine":"app-1","grants":[
        {"consumer":"forge","provision":"secret","from":"vault@db-1","address":"db-1",
         "port":null,"netns":"/run/netns/forge"}]}"#;
    const BAD_ENTRY: &str = r#"{"machine":"app-1","grants":[
        {"consumer":"forge","provision":"secret","from":"vault@db-1","address":"db-1",
         "port":null,"netns":"/run/netns/forge"},
        {"consumer":"wiki","provision":"secret","from":"vault@db-1","address":"db-1",
         "port":"x","netns":"/run/netns/wiki"}]}"#;
    const OTHER_MACHINE: &str = r#"{"machine":"app-2","grants":[]}"#;

    struct Setup {
        dir: tempfile::TempDir,
        outbox: Arc<Outbox>,
    }

    impl Setup {
        fn new() -> Setup {
            Setup {
                dir: tempfile::tempdir().unwrap(),
                outbox: Arc::new(Outbox::new()),
            }
        }

        fn path(&self) -> std::path::PathBuf {
            self.dir.path().join("grants.json")
        }

        fn write(&self, text: &str) {
            std::fs::write(self.path(), text).unwrap();
        }

        fn agent(&self) -> Agent {
            let settings = GrantsSettings {
                rules: GrantRules {
                    unreachable_after: 3,
                    repeat_every: Duration::from_secs(15 * 60),
                },
                ..GrantsSettings::default()
            };
            Agent::new(self.path(), settings, Arc::clone(&self.outbox))
        }

        /// The subjects of the `grant.read` words pending.
        fn read_subjects(&self) -> Vec<String> {
            self.outbox
                .snapshot()
                .into_iter()
                .filter(|(_, p)| p.kind == mesh_protocol::EventKind::GrantsRead)
                .map(|(_, p)| p.subject)
                .collect()
        }
    }

    /// A read said: readable, its problem, its refused entries (index, consumer).
    type Said = (bool, String, Vec<(u64, Option<String>)>);

    /// What `round` said of its read, if it said it.
    fn said(round: &Round) -> Option<Said> {
        round.read_said.as_ref().map(|b| {
            (
                b.read.readable,
                b.read.problem.clone().unwrap_or_default(),
                b.read
                    .refused
                    .iter()
                    .map(|r| (r.index, r.consumer.as_ref().map(|c| c.to_string())))
                    .collect(),
            )
        })
    }

    #[tokio::test(start_paused = true)]
    async fn a_read_is_said_when_it_changes_and_again_while_it_refuses_anything() {
        let s = Setup::new();
        s.write(GOOD);
        let mut agent = s.agent();
        // The first read is said, even good: a restart clears what an
        // earlier run said.
        assert_eq!(
            said(&agent.check().await),
            Some((true, String::new(), vec![]))
        );
        assert_eq!(s.read_subjects(), ["mesh.event.app-1._grants.grant.read"]);
        assert_eq!(
            said(&agent.check().await),
            None,
            "unchanged: not said again"
        );

        // An entry refused: said at once, naming it; its consumer is named.
        s.write(BAD_ENTRY);
        assert_eq!(
            said(&agent.check().await),
            Some((true, String::new(), vec![(1, Some("wiki".to_owned()))]))
        );
        assert_eq!(said(&agent.check().await), None);
        // Again every repeat_every while it lasts.
        tokio::time::advance(Duration::from_secs(15 * 60)).await;
        assert!(
            said(&agent.check().await).is_some(),
            "said again after 15 min"
        );

        // The file broken: its problem, the last good list's refused entry kept.
        s.write("{ not json");
        let (readable, problem, refused) = said(&agent.check().await).unwrap();
        assert!(!readable);
        assert!(problem.contains("grants.json"), "names the file: {problem}");
        assert_eq!(refused, [(1, Some("wiki".to_owned()))]);

        // Mended: said at once, and then no more.
        s.write(GOOD);
        assert_eq!(
            said(&agent.check().await),
            Some((true, String::new(), vec![]))
        );
        tokio::time::advance(Duration::from_secs(60 * 60)).await;
        assert_eq!(
            said(&agent.check().await),
            None,
            "nothing refused: not repeated"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_broken_file_at_start_is_said_only_by_an_agent_told_its_machine() {
        let s = Setup::new();
        s.write("{ not json");
        // No machine known: no subject to say it on.
        let mut untold = s.agent();
        let round = untold.check().await;
        assert_eq!(said(&round), None);
        assert_eq!(round.file_errors.len(), 1, "{:?}", round.file_errors);
        assert!(s.read_subjects().is_empty());

        let mut told = s.agent().on_machine(Name::parse("app-1").unwrap());
        let (readable, problem, _) = said(&told.check().await).unwrap();
        assert!(
            !readable && problem.contains("cannot be parsed"),
            "{problem}"
        );
        assert_eq!(s.read_subjects(), ["mesh.event.app-1._grants.grant.read"]);

        // A file of another machine: not checked, and said.
        s.write(OTHER_MACHINE);
        let round = told.check().await;
        let (readable, problem, _) = said(&round).unwrap();
        assert!(!readable, "{problem}");
        assert!(
            problem.contains("names machine app-2, and this agent is on app-1"),
            "{problem}"
        );
        assert_eq!(round.grants, 0);
    }
}
