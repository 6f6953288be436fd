//! Publishing `alive`: the loop tells the herald how each pass went, and the
//! herald publishes `alive` when it is due, from the loop or from a task of its
//! own, so a long pass (many calls running into their timeout) does not
//! make a running provider look down.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use mesh_protocol::event::{Alive, Event, ProviderFault, VERSION};
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

/// What `alive` needs, shared between the loop and its task.
pub(crate) struct Herald {
    state: Mutex<(AliveState, Option<ModuleId>, Option<ProviderFault>)>,
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
            state: Mutex::new((AliveState::new(started), None, None)),
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
        let (state, known, said_fault) = &mut *guard;
        *said_fault = fault.map(|f| ProviderFault {
            class: f.class,
            error: f.error.clone(),
            since: self.clock.at(f.since),
        });
        state.pass_ended(
            began,
            ended,
            consumers,
            failing,
            self.settings.standing.failing_after,
        );
        if known.as_ref() != Some(provider) {
            *known = Some(provider.clone());
        }
    }

    /// Publishes `alive` when it is due: after the first pass, then every
    /// `alive_every`. Returns whether it was published.
    pub(crate) fn publish_if_due(&self) -> bool {
        self.publish(false)
    }

    /// Publishes `alive` now, due or not (the provider fault began, changed or
    /// cleared), once a pass has ended. Returns whether it was published.
    pub(crate) fn publish_now(&self) -> bool {
        self.publish(true)
    }

    fn publish(&self, now_anyway: bool) -> bool {
        let now = Instant::now();
        let mut guard = self.state.lock().expect("herald lock");
        let (state, provider, fault) = &mut *guard;
        let (Some(provider), Some((consumers, failing, took))) =
            (provider.as_ref(), state.last_pass)
        else {
            return false;
        };
        if !now_anyway && !state.due(now, self.settings.alive_every) {
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
        });
        publish(&self.outbox, &self.metrics, provider, &event);
        state.published(now);
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
