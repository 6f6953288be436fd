//! The hook's own metrics, beside the loop's at `/metrics`
//! (`--metrics-listen`); docs/hooks.md, "Metrics", is the contract.
//!
//! | metric | type | what |
//! | --- | --- | --- |
//! | `mesh_hook_calls_total{verb, outcome}` | counter | calls to the hook, by verb and outcome: `ok`, `failed` (the hook said no), `unsupported`, `bad-reply`, `timed-out` (the hook timeout, or the loop's call timeout cutting the call off), `lost` (serve: it went down with the call in flight), `down` (serve: braked, not started), `spawn-failed` |
//! | `mesh_hook_call_duration_seconds{verb}` | histogram | how long a call took, whatever its outcome |
//! | `mesh_hook_restarts_total{cause}` | counter | serve: processes of the hook that went down, by cause (`exited`, `bad-line`, `stuck`, `hello`, `spawn`, `pipe`, `killed`); each is started again behind the brake |
//! | `mesh_hook_up` | gauge | 1 while the hook answers: serve, a process of it runs; exec, its last call could be started |
//! | `mesh_hook_braked` | gauge | serve: 1 from a process going down until the next one started (its start waits on the brake) |

use std::time::Duration;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::{Registry, Unit};

use crate::down::DownCause;
use crate::error::HookError;
use crate::wire::{Answer, Verb};

type Labels<const N: usize> = [(&'static str, &'static str); N];

fn duration_histogram() -> Histogram {
    // 1 ms to about 65 s.
    Histogram::new(exponential_buckets(0.001, 2.0, 17))
}

/// The hook's metrics; clones share their series.
#[derive(Clone, Debug)]
pub struct HookMetrics {
    calls: Family<Labels<2>, Counter>,
    durations: Family<Labels<1>, Histogram, fn() -> Histogram>,
    restarts: Family<Labels<1>, Counter>,
    up: Gauge,
    braked: Gauge,
}

impl Default for HookMetrics {
    fn default() -> Self {
        let metrics = HookMetrics {
            calls: Family::default(),
            durations: Family::new_with_constructor(duration_histogram),
            restarts: Family::default(),
            up: Gauge::default(),
            braked: Gauge::default(),
        };
        // Every cause's series exists from the start, so a rule's
        // `increase` never meets a missing one.
        for cause in DownCause::ALL {
            let _ = metrics.restarts.get_or_create(&[("cause", cause.as_str())]);
        }
        metrics
    }
}

/// The outcome label of a call's result.
pub fn outcome(result: &Result<Answer, HookError>) -> &'static str {
    match result {
        Ok(Answer::Unsupported) | Err(HookError::Unsupported { .. }) => "unsupported",
        Ok(Answer::Refused { .. }) | Err(HookError::Refused { .. }) => "failed",
        Ok(_) => "ok",
        Err(HookError::BadReply { .. }) => "bad-reply",
        Err(HookError::TimedOut { .. }) => "timed-out",
        Err(HookError::Lost { .. }) => "lost",
        Err(HookError::Down { .. }) => "down",
        Err(HookError::Spawn { .. }) => "spawn-failed",
    }
}

impl HookMetrics {
    /// Registers every series in `registry` (which adds the `mesh_` prefix).
    pub fn register(&self, registry: &mut Registry) {
        registry.register(
            "hook_calls",
            "Calls to the hook, by verb and outcome",
            self.calls.clone(),
        );
        registry.register_with_unit(
            "hook_call_duration",
            "How long a call to the hook took, by verb",
            Unit::Seconds,
            self.durations.clone(),
        );
        registry.register(
            "hook_restarts",
            "Processes of a serve-mode hook that went down (each started again behind the brake), by cause",
            self.restarts.clone(),
        );
        registry.register(
            "hook_up",
            "Whether the hook answers: a process of it runs (serve), its last call could be started (exec)",
            self.up.clone(),
        );
        registry.register(
            "hook_braked",
            "Whether the hook is down and its next start waits on the restart brake (serve)",
            self.braked.clone(),
        );
    }

    /// A call to `verb` ended with `result` after `took`.
    pub fn call(&self, verb: Verb, result: &Result<Answer, HookError>, took: Duration) {
        self.calls
            .get_or_create(&[("verb", verb.as_str()), ("outcome", outcome(result))])
            .inc();
        self.durations
            .get_or_create(&[("verb", verb.as_str())])
            .observe(took.as_secs_f64());
    }

    /// A call to `verb` was cut off after `took` by the loop's own bound
    /// (the call timeout): counted as `timed-out`.
    pub fn cut_off(&self, verb: Verb, took: Duration) {
        self.calls
            .get_or_create(&[("verb", verb.as_str()), ("outcome", "timed-out")])
            .inc();
        self.durations
            .get_or_create(&[("verb", verb.as_str())])
            .observe(took.as_secs_f64());
    }

    /// A process of the hook went down of `cause`: it is braked.
    pub fn went_down(&self, cause: DownCause) {
        self.restarts
            .get_or_create(&[("cause", cause.as_str())])
            .inc();
        self.up.set(0);
        self.braked.set(1);
    }

    /// A process of the hook started and answered its hello.
    pub fn started(&self) {
        self.up.set(1);
        self.braked.set(0);
    }

    /// Exec mode: whether the last call's process could be started.
    pub fn could_start(&self, yes: bool) {
        self.up.set(i64::from(yes));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use prometheus_client::encoding::text::encode;

    fn text(metrics: &HookMetrics) -> String {
        let mut registry = Registry::with_prefix("mesh");
        metrics.register(&mut registry);
        let mut text = String::new();
        encode(&mut text, &registry).unwrap();
        text
    }

    #[test]
    fn calls_restarts_and_the_hooks_state_are_counted_under_their_names() {
        let metrics = HookMetrics::default();
        let before = text(&metrics);
        assert!(
            before.contains("mesh_hook_restarts_total{cause=\"hello\"} 0"),
            "every cause from the start: {before}"
        );
        metrics.call(
            Verb::Check,
            &Ok(Answer::Unsupported),
            Duration::from_millis(3),
        );
        metrics.call(
            Verb::Check,
            &Err(HookError::TimedOut {
                hook: "h".into(),
                verb: Verb::Check,
                after: "1s".into(),
            }),
            Duration::from_secs(1),
        );
        metrics.went_down(DownCause::Hello);
        let after = text(&metrics);
        for line in [
            "mesh_hook_calls_total{verb=\"check\",outcome=\"unsupported\"} 1",
            "mesh_hook_calls_total{verb=\"check\",outcome=\"timed-out\"} 1",
            "mesh_hook_call_duration_seconds_count{verb=\"check\"} 2",
            "mesh_hook_restarts_total{cause=\"hello\"} 1",
            "mesh_hook_up 0",
            "mesh_hook_braked 1",
        ] {
            assert!(after.contains(line), "{line} in {after}");
        }
        metrics.started();
        let started = text(&metrics);
        assert!(started.contains("mesh_hook_up 1") && started.contains("mesh_hook_braked 0"));
    }
}
