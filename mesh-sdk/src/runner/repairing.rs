//! The repair hook in a pass: probe the known faults that are due, repair
//! what may be repaired, verify, and publish what was done.

use std::time::Duration;

use mesh_protocol::event::{Event, RepairOutcome, RepairReport as RepairBody, VERSION};
use mesh_protocol::Class;
use mesh_protocol::ModuleId;
use tokio::time::Instant;

use super::{publish, Runner};
use crate::provisioner::Provisioner;
use crate::repair::{AnyRepair, Probe, Step};
use mesh_runtime::redact::redact;

impl<P: Provisioner> Runner<P> {
    /// Probes the known faults that are due, repairs what it may, publishes what
    /// it did; returns the failure consumers get while a fault is present.
    pub(super) async fn repair_pass(&mut self, provider: &ModuleId) -> Option<(Class, String)> {
        let rules = self.settings.repair;
        let call_timeout = self.settings.call_timeout;
        let provider_secrets: Vec<String> = self
            .provisioner
            .secrets()
            .iter()
            .map(|s| s.expose().to_owned())
            .collect();
        let mut repairs = Vec::new();
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
                    Step::PublishCleared => repairs.push((
                        fault.clone(),
                        RepairOutcome::Repaired,
                        "the fault is gone without a repair by this provider".to_owned(),
                        None,
                    )),
                    Step::PublishBraked(next) => {
                        let detail = format!(
                            "{}; repair held back by the brake after {} failed attempts",
                            state.present().unwrap_or_default(),
                            state.brake().failures()
                        );
                        repairs.push((fault.clone(), RepairOutcome::Braked, detail, Some(next)));
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
                        let verified_message = match &verified {
                            Probe::Healthy => String::new(),
                            Probe::Fault(w) | Probe::Unknown(w) => w.clone(),
                        };
                        match (state.repaired(verified, Instant::now()), did) {
                            (Ok(()), Ok(did)) => repairs.push((
                                fault.clone(),
                                RepairOutcome::Repaired,
                                scrub(&format!("{did}; verified")),
                                None,
                            )),
                            (Ok(()), Err(why)) => repairs.push((
                                fault.clone(),
                                RepairOutcome::Repaired,
                                scrub(&format!(
                                    "verified healthy although the repair reported: {why}"
                                )),
                                None,
                            )),
                            (Err(next), Ok(did)) => repairs.push((
                                fault.clone(),
                                RepairOutcome::Failed,
                                scrub(&format!("{did}, but the fault remains: {verified_message}")),
                                Some(next),
                            )),
                            (Err(next), Err(why)) => repairs.push((
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
        for (fault, outcome, detail, next) in repairs {
            let event = Event::Repair(RepairBody {
                v: VERSION,
                fault,
                outcome,
                detail,
                next_attempt_at: next.map(|n| self.clock.at(n)),
                said_at: self.clock.at(now),
            });
            publish(&self.outbox, &self.metrics, provider, &event);
        }
        gate
    }
}

/// Probes a fault, bounded by the call timeout; its message is scrubbed.
async fn probe(
    repair: &dyn AnyRepair,
    timeout: Duration,
    scrub: &impl Fn(&str) -> String,
) -> Probe {
    match tokio::time::timeout(timeout, repair.probe()).await {
        Ok(Probe::Healthy) => Probe::Healthy,
        Ok(Probe::Fault(message)) => Probe::Fault(scrub(&message)),
        Ok(Probe::Unknown(message)) => Probe::Unknown(scrub(&message)),
        Err(_) => Probe::Unknown(format!(
            "probe timed out after {}",
            humantime::format_duration(timeout)
        )),
    }
}
