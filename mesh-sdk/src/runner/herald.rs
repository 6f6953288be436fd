//! Publishing `alive`: the loop tells the herald how each pass went, and the
//! herald publishes `alive` when it is due, from the loop or from a task of its
//! own, so a long pass (many calls running into their timeout) does not
//! make a running provider look down.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use mesh_protocol::event::{Alive, ContributionsRead, Event, ProviderFault, VERSION};
use mesh_protocol::ModuleId;
use tokio::time::Instant;

use super::publish;
use crate::alive::AliveState;
use crate::fault::Fault;
use crate::metrics::LoopMetrics;
use crate::settings::Settings;
use mesh_runtime::Outbox;
use mesh_runtime::WallClock;

/// Whole seconds, rounded up (so `alive_every_seconds` is never shorter than the truth).
fn seconds_up(d: Duration) -> u64 {
    d.as_secs() + u64::from(d.subsec_nanos() > 0)
}

/// What the herald knows between two `alive`s.
struct Known {
    state: AliveState,
    /// The provider, once known (a good file, or the runner told).
    provider: Option<ModuleId>,
    fault: Option<ProviderFault>,
    /// What the last read of the contributions file refused; `None`
    /// before the first read.
    contributions: Option<ContributionsRead>,
    /// What the last `alive` published said of it.
    said_contributions: Option<ContributionsRead>,
}

/// Why `alive` may be published.
#[derive(Clone, Copy, PartialEq, Eq)]
enum When {
    /// It is due, or what the contributions file refuses changed since the
    /// last `alive`.
    Due,
    /// Only when what the contributions file refuses changed since the last `alive`.
    Changed,
    /// Due or not.
    Now,
}

/// What `alive` needs, shared between the loop and its task.
pub(crate) struct Herald {
    state: Mutex<Known>,
    clock: WallClock,
    settings: Settings,
    outbox: Arc<Outbox>,
    metrics: Arc<LoopMetrics>,
}

impl Herald {
    pub(crate) fn new(
        started: Instant,
        clock: WallClock,
        settings: Settings,
        outbox: Arc<Outbox>,
        metrics: Arc<LoopMetrics>,
    ) -> Herald {
        Herald {
            state: Mutex::new(Known {
                state: AliveState::new(started),
                provider: None,
                fault: None,
                contributions: None,
                said_contributions: None,
            }),
            clock,
            settings,
            outbox,
            metrics,
        }
    }

    /// A pass of `provider` ran from `began` to `ended`; after it the
    /// provider fault is `fault`.
    pub(crate) fn pass_ended(
        &self,
        provider: &ModuleId,
        began: Instant,
        ended: Instant,
        consumers: u64,
        failing: u64,
        fault: Option<&Fault>,
    ) {
        let mut guard = self.state.lock().expect("herald lock");
        let known = &mut *guard;
        known.fault = fault.map(|f| ProviderFault {
            class: f.class,
            error: f.error.clone(),
            since: self.clock.at(f.since),
        });
        known.state.pass_ended(
            began,
            ended,
            consumers,
            failing,
            self.settings.standing.failing_after,
        );
        if known.provider.as_ref() != Some(provider) {
            known.provider = Some(provider.clone());
        }
    }

    /// The contributions file was read: `read` is what it refused; the
    /// provider is `provider`, when known (a good file named it, or the
    /// runner was told).
    pub(crate) fn file_read(&self, provider: Option<&ModuleId>, read: ContributionsRead) {
        let mut guard = self.state.lock().expect("herald lock");
        let known = &mut *guard;
        if let Some(provider) = provider {
            if known.provider.as_ref() != Some(provider) {
                known.provider = Some(provider.clone());
            }
        }
        known.contributions = Some(read);
    }

    /// Publishes `alive` when it is due: after the first pass (or, before
    /// any, while the provider is known and its file cannot be taken), then
    /// every `alive_every`, and when what its contributions file refuses
    /// changed since the last one. Returns whether it was published.
    pub(crate) fn publish_if_due(&self) -> bool {
        self.publish(When::Due)
    }

    /// Publishes `alive` now, due or not (the provider fault began, changed or
    /// cleared), once it may publish at all. Returns whether it was published.
    pub(crate) fn publish_now(&self) -> bool {
        self.publish(When::Now)
    }

    /// Publishes `alive` when what the contributions file refuses changed
    /// since the last one, once it may publish at all. Returns whether it
    /// was published.
    pub(crate) fn publish_if_changed(&self) -> bool {
        self.publish(When::Changed)
    }

    fn publish(&self, when: When) -> bool {
        let now = Instant::now();
        let mut guard = self.state.lock().expect("herald lock");
        let Known {
            state,
            provider,
            fault,
            contributions,
            said_contributions,
        } = &mut *guard;
        // Before any pass ran: only to say that the file cannot be taken,
        // and only once the provider is known.
        let waiting =
            state.last_pass.is_none() && contributions.as_ref().is_some_and(|c| !c.readable);
        let (consumers, failing, took) = match state.last_pass {
            Some(pass) => pass,
            None if waiting => (0, 0, Duration::ZERO),
            None => return false,
        };
        let Some(provider) = provider.as_ref() else {
            return false;
        };
        let every = self.settings.alive_every;
        // Changed since the last `alive`; before any, the first one that
        // says the file cannot be taken is news too.
        let changed = match said_contributions {
            Some(said) => contributions.as_ref() != Some(said),
            None => waiting,
        };
        let due = match when {
            When::Now => true,
            When::Changed => changed,
            When::Due => {
                changed || state.due(now, every) || (waiting && state.due_every(now, every))
            }
        };
        if !due {
            return false;
        }
        let event = Event::Alive(Alive {
            v: VERSION,
            started_at: self.clock.at(state.started()),
            alive_every_seconds: seconds_up(self.settings.alive_every).max(1),
            failing_after_seconds: seconds_up(self.settings.standing.failing_after),
            repeat_every_seconds: Some(seconds_up(self.settings.standing.repeat_every)),
            settled_at: state.settled().map(|t| self.clock.at(t)),
            consumers,
            failing,
            pass_seconds: took.as_secs_f64(),
            said_at: self.clock.at(now),
            fault: fault.clone(),
            contributions: contributions.clone(),
        });
        publish(&self.outbox, &self.metrics, provider, &event);
        state.published(now);
        said_contributions.clone_from(contributions);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_round_up() {
        let cases = [(0, 0), (1_000, 1), (1_001, 2), (1_900, 2), (60_000, 60)];
        for (ms, s) in cases {
            assert_eq!(seconds_up(Duration::from_millis(ms)), s, "{ms} ms");
        }
    }
}
