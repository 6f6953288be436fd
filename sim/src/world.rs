//! One simulation: N providers on the real mesh-sdk loop, the bus, the
//! controller's real link rounds into the in-memory store, and the real
//! report, driven second by second on tokio's paused clock from a [`Plan`].
//! After every second the invariants are checked ([`crate::check`]).

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use mesh_protocol::{ModuleId, Name, Timestamp};
use mesh_runtime::Stop;
use mesh_sdk::internals::FakeError;
use mesh_sdk::testing::{Outbox, Runner, WallClock};
use mesh_status::model::ParsedDeclaration;
use tokio::task::JoinHandle;
use tokio::time::Instant;

pub use crate::backend::{secret_of, SECRET_PREFIX, SECRET_SUFFIX};
use crate::backend::{SimBackend, SimSecrets};
use crate::bus::{drain, Bus, SimSink};
use crate::cost::{Costs, Timer};
use crate::plan::{Break, Plan, PlanAction, PlanStep};
use crate::rng::Rng;
use crate::status::{self, consumer_name, controller, declaration, Status};
use crate::store::MemStore;
pub use crate::timings::{Timings, SLACK};

/// The wall time at the simulation's start.
pub const T0: &str = "2026-10-05T00:00:00Z";

/// A consumer as the world knows it (the ground truth).
#[derive(Clone, Debug, Default)]
pub struct Truth {
    /// Since when its backend fails it, and how.
    pub broken: Option<(Instant, Break)>,
    /// Since when the contributions file lists it (None: not listed).
    pub listed_since: Option<Instant>,
    /// The last second it was in trouble: listed and broken, or withdrawn
    /// but still held (its standing stands until it is retired).
    pub trouble_at: Option<Instant>,
}

/// A provider process's life.
struct Run {
    runner: Runner<SimBackend>,
    outbox: Arc<Outbox>,
    sink: Arc<SimSink>,
    next_pass: Instant,
    next_try: Instant,
    /// Approval requests to answer while the next pass's attempts run.
    approvals: Vec<Vec<u8>>,
}

/// A provider of the world.
pub struct Provider {
    /// Who it is.
    pub id: ModuleId,
    dir: tempfile::TempDir,
    backend: SimBackend,
    secrets: SimSecrets,
    run: Option<Run>,
    /// Since when it runs (its newest start), or since when it is down.
    pub since: Instant,
    /// Whether it runs.
    pub running: bool,
    /// Its consumers.
    pub truth: Vec<Truth>,
    /// Its consumers broken or withdrawn: the others are in no trouble.
    unsettled: std::collections::BTreeSet<usize>,
    /// When its own way to the bus (cut off, acks lost) was last back.
    pub path_back: Instant,
    /// Until when its way to the bus is cut or lossy.
    pub path_until: Instant,
}

/// The world.
pub struct World {
    /// The plan.
    pub plan: Plan,
    /// The timings.
    pub timings: Timings,
    /// The start.
    pub t0: Instant,
    /// The bus.
    pub bus: Bus,
    /// The store.
    pub store: MemStore,
    /// The providers.
    pub providers: Vec<Provider>,
    controller: Option<(JoinHandle<()>, Stop)>,
    declaration: ParsedDeclaration,
    bus_until: Option<Instant>,
    store_until: Option<Instant>,
    controller_until: Option<Instant>,
    ack_loss_until: Option<Instant>,
    /// When the shared path (bus, store, controller, its acks) was last back.
    pub path_back: Instant,
    /// The next step of the plan to act on.
    next: usize,
    /// Since when the controller follows nothing (serve down, the bus or
    /// the store away), while it does.
    pub follow_lost_at: Option<Instant>,
    /// When the bus, the store and the controller were last all back (the
    /// controller's run of catch-ups begins again then).
    pub hard_back: Instant,
    /// Since when the bus, the store or the controller is away, while one is.
    pub unfollowed: Option<Instant>,
    /// When the controller could last have stopped following: `hard_back`,
    /// or the last second its acks were being lost (enough lost acks fill
    /// its `max_ack_pending`, and delivery waits on them).
    pub follow_back: Instant,
    /// Approvals answered while a pass's attempts ran, and how many were acted on.
    pub mid_pass_approvals: (u64, u64),
    /// The wall time its seconds took, by phase.
    pub costs: Costs,
}

fn name(s: &str) -> Name {
    Name::parse(s).expect("a valid name")
}

impl Provider {
    fn write_contributions(&self) {
        let listed: Vec<String> = self
            .truth
            .iter()
            .enumerate()
            .filter(|(_, t)| t.listed_since.is_some())
            .map(|(c, _)| consumer_name(c))
            .collect();
        let listed: Vec<&str> = listed.iter().map(String::as_str).collect();
        mesh_sdk::testing::write_contributions(
            &self.dir.path().join("contributions.json"),
            ("pg", self.id.machine.as_str()),
            "postgres-database",
            &listed,
        );
    }
}

impl World {
    /// A world for `plan`, every provider started, every consumer listed.
    pub fn new(plan: Plan, timings: Timings) -> World {
        let t0 = Instant::now();
        let bus = Bus::new(
            timings.link.batch,
            timings.link.ack_wait,
            Rng::derive(plan.seed, 2),
            (t0, Timestamp::parse(T0).expect("T0").system_time()),
        );
        let names = crate::backend::names(plan.consumers);
        let providers = (0..plan.providers)
            .map(|p| {
                let provider = Provider {
                    id: ModuleId::new(name("pg"), name(&format!("db-{p}"))),
                    dir: tempfile::tempdir().expect("a temporary directory"),
                    backend: SimBackend::new(names.clone()),
                    secrets: SimSecrets::new(p, plan.consumers),
                    run: None,
                    since: t0,
                    running: false,
                    truth: vec![
                        Truth {
                            listed_since: Some(t0),
                            ..Truth::default()
                        };
                        plan.consumers
                    ],
                    path_back: t0,
                    path_until: t0,
                    unsettled: Default::default(),
                };
                provider.write_contributions();
                provider
            })
            .collect();
        let mut world = World {
            declaration: declaration(plan.providers, plan.consumers),
            plan,
            timings,
            t0,
            bus,
            store: MemStore::new(t0, Timestamp::parse(T0).expect("T0").system_time()),
            providers,
            controller: None,
            bus_until: None,
            store_until: None,
            controller_until: None,
            ack_loss_until: None,
            path_back: t0,
            next: 0,
            follow_lost_at: None,
            hard_back: t0,
            unfollowed: None,
            follow_back: t0,
            mid_pass_approvals: (0, 0),
            costs: Costs::default(),
        };
        for p in 0..world.providers.len() {
            world.start(p, 0);
        }
        world.start_controller();
        world
    }

    /// The wall time of `at` on a clock `offset` seconds off.
    fn wall(&self, at: Instant, offset: i64) -> SystemTime {
        let base = Timestamp::parse(T0).expect("T0").system_time() + (at - self.t0);
        match offset >= 0 {
            true => base + Duration::from_secs(offset.unsigned_abs()),
            false => base - Duration::from_secs(offset.unsigned_abs()),
        }
    }

    fn start(&mut self, p: usize, offset: i64) {
        let now = Instant::now();
        let clock = WallClock::fixed(self.wall(now, offset), now);
        let outbox = Arc::new(Outbox::new());
        let provider = &mut self.providers[p];
        let runner = Runner::new(
            provider.backend.clone(),
            provider.dir.path().join("contributions.json"),
            self.timings.settings,
            Arc::clone(&outbox),
        )
        .with_clock(clock)
        .with_secrets(Arc::new(provider.secrets.clone()));
        provider.run = Some(Run {
            runner,
            outbox,
            sink: Arc::new(self.bus.sink(p)),
            next_pass: now,
            next_try: now,
            approvals: Vec::new(),
        });
        provider.running = true;
        provider.since = now;
    }

    fn kill(&mut self, p: usize) {
        let provider = &mut self.providers[p];
        if provider.running {
            provider.run = None;
            provider.running = false;
            provider.since = Instant::now();
        }
    }

    fn start_controller(&mut self) {
        let stop = Stop::new();
        let task = tokio::spawn(controller(
            self.bus.clone(),
            self.store.clone(),
            self.timings.link,
            stop.clone(),
        ));
        self.controller = Some((task, stop));
    }

    /// Whether the shared path is away now.
    pub fn path_away(&self) -> bool {
        self.bus_until.is_some()
            || self.store_until.is_some()
            || self.controller_until.is_some()
            || self.ack_loss_until.is_some()
    }

    /// Whether the store is away now.
    pub fn store_away(&self) -> bool {
        self.store_until.is_some()
    }

    /// Whether the controller runs now.
    pub fn controller_up(&self) -> bool {
        self.controller_until.is_none()
    }

    async fn act(&mut self, step: &PlanStep) {
        let now = Instant::now();
        let secs = |s: u64| now + Duration::from_secs(s);
        match step.action {
            PlanAction::Break { p, c, how } => {
                let provider = &mut self.providers[p];
                let consumer = consumer_name(c);
                match how {
                    Break::Check => provider.backend.fail(
                        c,
                        false,
                        FakeError::message(format!(
                            "password authentication failed for user \"{consumer}\" with password \"{}\"",
                            secret_of(p, &consumer)
                        )),
                    ),
                    Break::Ensure => provider.backend.fail(
                        c,
                        true,
                        FakeError::message("could not connect to server: Connection refused"),
                    ),
                }
                let truth = &mut provider.truth[c];
                if truth.broken.is_none() {
                    truth.broken = Some((now, how));
                }
                provider.unsettled.insert(c);
            }
            PlanAction::Heal { p, c } => {
                let provider = &mut self.providers[p];
                provider.backend.heal(c);
                provider.truth[c].broken = None;
                if provider.truth[c].listed_since.is_some() {
                    provider.unsettled.remove(&c);
                }
            }
            PlanAction::Unlist { p, c } => {
                let provider = &mut self.providers[p];
                if provider.truth[c].listed_since.take().is_some() {
                    provider.write_contributions();
                }
                provider.unsettled.insert(c);
            }
            PlanAction::Relist { p, c } => {
                let provider = &mut self.providers[p];
                if provider.truth[c].listed_since.is_none() {
                    provider.truth[c].listed_since = Some(now);
                    provider.write_contributions();
                }
                if provider.truth[c].broken.is_none() {
                    provider.unsettled.remove(&c);
                }
            }
            PlanAction::Approve {
                p,
                c,
                delete,
                mid_pass,
            } => {
                if let Some(run) = self.providers[p].run.as_mut() {
                    let body =
                        serde_json::json!({"v": 1, "consumer": consumer_name(c), "delete": delete})
                            .to_string()
                            .into_bytes();
                    match mid_pass {
                        // Answered while the next pass's attempts run (lost
                        // with the process if it is killed first).
                        true => run.approvals.push(body),
                        false => {
                            let _ = run.runner.approve(&body).await;
                        }
                    }
                }
            }
            PlanAction::Kill { p } => self.kill(p),
            PlanAction::Start { p, offset } => {
                self.kill(p);
                let offset = if self.plan.clock_steps { offset } else { 0 };
                self.start(p, offset);
            }
            PlanAction::BusDown { secs: s } => {
                self.bus.set_up(false);
                self.bus_until = Some(self.bus_until.map_or(secs(s), |u| u.max(secs(s))));
            }
            PlanAction::StoreDown { secs: s } => {
                self.store.set_down(true);
                self.store_until = Some(self.store_until.map_or(secs(s), |u| u.max(secs(s))));
            }
            PlanAction::ControllerDown { secs: s } => {
                if let Some((task, _stop)) = self.controller.take() {
                    // Killed: a round in progress is cut where it waits.
                    task.abort();
                    let _ = task.await;
                }
                self.controller_until =
                    Some(self.controller_until.map_or(secs(s), |u| u.max(secs(s))));
            }
            PlanAction::AckLoss { secs: s, per_mille } => {
                self.bus.lose_acks(secs(s), per_mille);
                self.ack_loss_until = Some(self.ack_loss_until.map_or(secs(s), |u| u.max(secs(s))));
            }
            PlanAction::PublishAckLoss {
                p,
                secs: s,
                per_mille,
            } => {
                self.bus.lose_publish_acks(p, secs(s), per_mille);
                let provider = &mut self.providers[p];
                provider.path_until = provider.path_until.max(secs(s));
            }
            PlanAction::PublishDelay { p, secs: s } => {
                self.bus.cut(p, secs(s));
                let provider = &mut self.providers[p];
                provider.path_until = provider.path_until.max(secs(s));
            }
        }
    }

    /// Ends the faults whose time is up.
    fn expire(&mut self) {
        let now = Instant::now();
        let over = |until: &mut Option<Instant>| match *until {
            Some(u) if u <= now => {
                *until = None;
                true
            }
            _ => false,
        };
        if over(&mut self.bus_until) {
            self.bus.set_up(true);
        }
        if over(&mut self.store_until) {
            self.store.set_down(false);
        }
        over(&mut self.ack_loss_until);
        if over(&mut self.controller_until) {
            self.start_controller();
        }
        if self.path_away() {
            self.path_back = now;
        }
        // The store away stops the catch-ups too (nothing taken is stored).
        let unfollowed = self.bus_until.is_some()
            || self.controller_until.is_some()
            || self.store_until.is_some();
        // Once all are back the controller may still wait out a NAK delay
        // and a pull before it catches up: until then it has not followed
        // again (an outage in that time continues the one before).
        let grace = self.timings.link.nak_max + 2 * self.timings.link.wait + SLACK;
        self.unfollowed = match unfollowed {
            true => Some(self.unfollowed.unwrap_or(now)),
            false => None,
        };
        if unfollowed {
            self.hard_back = now;
            self.follow_lost_at.get_or_insert(now);
        } else if now >= self.hard_back + grace {
            self.follow_lost_at = None;
        }
        if unfollowed || self.ack_loss_until.is_some() {
            self.follow_back = now;
        }
        for provider in &mut self.providers {
            if provider.path_until > now {
                provider.path_back = now;
            }
        }
    }

    /// The providers' passes, `alive` and outboxes for this second.
    async fn providers_step(&mut self) {
        let now = Instant::now();
        let pass_every = self.timings.settings.pass_every;
        let retry_every = self.timings.retry_every;
        for provider in &mut self.providers {
            let Some(run) = provider.run.as_mut() else {
                continue;
            };
            while run.next_pass <= now {
                let timer = Timer::start("passes");
                let approvals = std::mem::take(&mut run.approvals);
                let (_, replies) = run.runner.pass_answering(&approvals).await;
                self.mid_pass_approvals.0 += replies.len() as u64;
                self.mid_pass_approvals.1 += replies.iter().filter(|r| r.ok).count() as u64;
                run.next_pass += pass_every;
                timer.stop(&mut self.costs);
            }
            let timer = Timer::start("alive");
            run.runner.publish_alive_if_due();
            timer.stop(&mut self.costs);
            if run.next_try <= now && !run.outbox.is_empty() {
                let timer = Timer::start("outbox to bus");
                let left = drain(&run.outbox, run.sink.as_ref()).await;
                run.next_try = match left {
                    0 => now,
                    _ => now + retry_every,
                };
                timer.stop(&mut self.costs);
            }
        }
    }

    /// Who is in trouble now (the ground truth I2 reads).
    fn note_trouble(&mut self) {
        let now = Instant::now();
        for provider in &mut self.providers {
            let truths = &mut provider.truth;
            let unsettled = &provider.unsettled;
            provider.backend.with(|b| {
                for &c in unsettled {
                    let truth = &mut truths[c];
                    let trouble = match truth.listed_since {
                        Some(_) => truth.broken.is_some(),
                        // Withdrawn: in trouble while the backend still holds it.
                        None => b.active(c),
                    };
                    if trouble {
                        truth.trouble_at = Some(now);
                    }
                }
            });
        }
    }

    /// How many consumers fail now: listed at a running provider, broken.
    pub fn failing(&self) -> usize {
        self.providers
            .iter()
            .filter(|p| p.running)
            .flat_map(|p| &p.truth)
            .filter(|t| t.listed_since.is_some() && t.broken.is_some())
            .count()
    }

    /// What status says now: the real report and rendering over the store's
    /// read; `None` while the store is away (status fails, saying so).
    pub fn status(&self) -> Option<Status> {
        status::read(&self.store, &self.declaration, self.wall(Instant::now(), 0))
    }

    /// Runs simulated second `second` (call them in order from 0): the
    /// plan's actions due, the providers' passes and outboxes, and a chance
    /// for the controller to take what arrived.
    pub async fn step(&mut self, second: u64) {
        // The controller's task runs while this one waits.
        let timer = Timer::start("controller");
        tokio::time::sleep_until(self.t0 + Duration::from_secs(second)).await;
        timer.stop(&mut self.costs);
        let timer = Timer::start("actions");
        self.expire();
        while let Some(step) = self.plan.steps.get(self.next).copied() {
            if step.at > second {
                break;
            }
            self.act(&step).await;
            self.next += 1;
        }
        self.expire();
        timer.stop(&mut self.costs);
        self.providers_step().await;
        // Let the controller take what just arrived.
        let timer = Timer::start("controller");
        tokio::task::yield_now().await;
        timer.stop(&mut self.costs);
        let timer = Timer::start("ground truth");
        self.note_trouble();
        timer.stop(&mut self.costs);
    }

    /// Stops the controller.
    pub async fn end(mut self) {
        if let Some((task, _)) = self.controller.take() {
            task.abort();
            let _ = task.await;
        }
    }
}
