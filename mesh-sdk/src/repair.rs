//! The repair hook: a known fault a provider can repair safely, and the
//! pure gate that decides when to probe it, when to repair, and whether
//! consumers may be attempted at all while it lasts.
//!
//! The loop probes each registered fault on start, every `check_every`, when
//! a pass saw a consumer's credentials rejected (at most once a minute), and
//! when the brake releases a deferred repair. While a fault is present the
//! gate is closed: the loop stops calling the backend for consumers, which
//! still count as failing with the fault's class and message. A repair is
//! verified by a new probe; a failed one is braked ([`crate::brake`]).

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use mesh_protocol::{Class, Name};
use tokio::time::Instant;

use crate::brake::{Brake, BrakeRules};
use mesh_runtime::redact::error_text;
use mesh_runtime::Secret;

/// What a probe found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Probe {
    /// The fault is not present.
    Healthy,
    /// The fault is present; its message (redacted by the loop).
    Fault(String),
    /// The probe could not tell (e.g. the backend is unreachable); the gate stays as it was.
    Unknown(String),
}

/// A known fault a provider can detect and repair safely; a provisioner
/// registers it through [`Provisioner::repairs`](crate::Provisioner::repairs)
/// as a [`KnownFault`].
///
/// Required: `fault`, `probe`, `repair`. Defaulted: `class`
/// (credentials-rejected) and `secrets` (none).
///
/// # Guarantees
/// - `probe` and `repair` never run concurrently with each other or with
///   consumer attempts of the same pass.
/// - `repair` is only called after a probe found the fault, never while the
///   brake holds it back, and is always followed by a verifying `probe`.
/// - Messages from `probe` and `repair` are redacted (the provider's and this
///   hook's secrets removed) and cut before they are logged or sent.
///
/// # Assumptions
/// - `probe` is cheap and harmless to repeat (one login attempt).
/// - `repair` cleans up after itself whether it succeeds or fails (e.g. a
///   temporary administrator is removed), and is safe to cancel.
///
/// # Errors
/// A failed repair's message (its `Display` and its sources', redacted) is
/// published on `provisioner.repair` with outcome `failed`, and the brake defers
/// the next attempt.
#[async_trait]
pub trait Repair: Send + Sync + 'static {
    /// Why a repair did not succeed.
    type Error: std::error::Error + Send + Sync + 'static;

    /// The fault's name, as published on `provisioner.repair` (e.g. `admin-refused`).
    fn fault(&self) -> Name;

    /// The class consumers fail with while the fault lasts.
    fn class(&self) -> Class {
        Class::CredentialsRejected
    }

    /// Whether the fault is present now.
    async fn probe(&self) -> Probe;

    /// Tries to repair the fault: `Ok` with what it did, `Err` with why not.
    async fn repair(&self) -> Result<String, Self::Error>;

    /// Secrets this hook holds, removed from every event it publishes. Asked for
    /// before each probe and again after each repair, so a secret minted
    /// during a repair (a temporary administrator's password) is removed
    /// from that repair's message too.
    fn secrets(&self) -> Vec<Secret> {
        Vec::new()
    }
}

/// A registered known fault: any [`Repair`], whatever its error type.
#[derive(Clone)]
pub struct KnownFault(Arc<dyn AnyRepair>);

impl KnownFault {
    /// Registers `repair` (shared: the provider may keep its own handle).
    pub fn new<R: Repair>(repair: Arc<R>) -> KnownFault {
        KnownFault(repair)
    }
}

impl std::fmt::Debug for KnownFault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("KnownFault").field(&self.0.fault()).finish()
    }
}

/// [`Repair`] with the error turned into its message, so faults of several
/// error types sit in one list.
#[async_trait]
pub(crate) trait AnyRepair: Send + Sync + 'static {
    fn fault(&self) -> Name;
    fn class(&self) -> Class;
    async fn probe(&self) -> Probe;
    async fn repair(&self) -> Result<String, String>;
    fn secrets(&self) -> Vec<Secret>;
}

#[async_trait]
impl<R: Repair> AnyRepair for R {
    fn fault(&self) -> Name {
        Repair::fault(self)
    }
    fn class(&self) -> Class {
        Repair::class(self)
    }
    async fn probe(&self) -> Probe {
        Repair::probe(self).await
    }
    async fn repair(&self) -> Result<String, String> {
        Repair::repair(self).await.map_err(|e| error_text(&e))
    }
    fn secrets(&self) -> Vec<Secret> {
        Repair::secrets(self)
    }
}

impl KnownFault {
    pub(crate) fn hook(&self) -> &dyn AnyRepair {
        self.0.as_ref()
    }
}

/// Timings of the repair hook.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RepairRules {
    /// Probe this often while nothing else asks for a probe.
    pub check_every: Duration,
    /// Brake on failed repairs.
    pub brake: BrakeRules,
    /// Bound of one repair (a probe is bounded by the call timeout).
    pub repair_timeout: Duration,
}

impl Default for RepairRules {
    fn default() -> Self {
        RepairRules {
            check_every: Duration::from_secs(5 * 60),
            brake: BrakeRules::default(),
            repair_timeout: Duration::from_secs(2 * 60),
        }
    }
}

/// Shortest time between two probes asked for by refused consumers.
pub(crate) const TRIGGER_GAP: Duration = Duration::from_secs(60);

/// While the brake defers a repair, `braked` is published again this often
/// (when a probe still finds the fault), so the fault never looks silent.
pub(crate) const BRAKED_REPEAT_EVERY: Duration = Duration::from_secs(15 * 60);

/// What the loop must do after a probe.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Step {
    /// Nothing to publish or do.
    Nothing,
    /// Try the repair now, then probe again to verify.
    Repair,
    /// The brake defers the repair until then: publish `braked` (at most
    /// every [`BRAKED_REPEAT_EVERY`]).
    PublishBraked(Instant),
    /// The fault went away without a repair: publish `repaired` (the gate opens).
    PublishCleared,
}

/// The pure state of one registered fault: gate, probe schedule and brake.
#[derive(Clone, Debug, Default)]
pub(crate) struct FaultState {
    present: Option<String>,
    last_probe: Option<Instant>,
    triggered: bool,
    brake: Brake,
    /// When a repair event was last published for this fault.
    last_published: Option<Instant>,
}

impl FaultState {
    /// Nothing known yet, as at provider start (a probe is due at once).
    pub(crate) fn new(rules: &RepairRules) -> FaultState {
        FaultState {
            brake: Brake::new(rules.brake),
            ..FaultState::default()
        }
    }

    /// The fault's message while it is present (the gate is closed).
    pub(crate) fn present(&self) -> Option<&str> {
        self.present.as_deref()
    }

    /// The brake.
    pub(crate) fn brake(&self) -> &Brake {
        &self.brake
    }

    /// A pass saw a consumer's credentials rejected: probe soon.
    pub(crate) fn trigger(&mut self) {
        self.triggered = true;
    }

    /// Whether a probe is due at `now`.
    pub(crate) fn probe_due(&self, now: Instant, rules: &RepairRules) -> bool {
        let Some(last) = self.last_probe else {
            return true;
        };
        let since = now.saturating_duration_since(last);
        since >= rules.check_every
            || (self.triggered && since >= TRIGGER_GAP)
            || (self.present.is_some()
                && self.brake.allows(now)
                && self.brake.next_attempt().is_some())
    }

    /// A probe's result at `now`: what to do next.
    pub(crate) fn probed(&mut self, probe: Probe, now: Instant) -> Step {
        self.last_probe = Some(now);
        self.triggered = false;
        match probe {
            Probe::Healthy => {
                self.brake.succeeded();
                match self.present.take() {
                    Some(_) => {
                        self.last_published = Some(now);
                        Step::PublishCleared
                    }
                    None => Step::Nothing,
                }
            }
            Probe::Unknown(_) => Step::Nothing,
            Probe::Fault(message) => {
                self.present = Some(message);
                if self.brake.allows(now) {
                    return Step::Repair;
                }
                let Some(next) = self.brake.next_attempt() else {
                    return Step::Repair;
                };
                if self
                    .last_published
                    .is_none_or(|at| now.saturating_duration_since(at) >= BRAKED_REPEAT_EVERY)
                {
                    self.last_published = Some(now);
                    return Step::PublishBraked(next);
                }
                Step::Nothing
            }
        }
    }

    /// The repair and its verifying probe at `now`: `Ok(())` when the fault
    /// is gone, else `Err(next attempt)` (the brake engages).
    pub(crate) fn repaired(&mut self, verified: Probe, now: Instant) -> Result<(), Instant> {
        self.last_probe = Some(now);
        self.last_published = Some(now);
        match verified {
            Probe::Healthy => {
                self.present = None;
                self.brake.succeeded();
                Ok(())
            }
            Probe::Fault(message) | Probe::Unknown(message) => {
                if self.present.is_none() {
                    self.present = Some(message);
                }
                Err(self.brake.failed(now))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules() -> RepairRules {
        RepairRules::default()
    }

    #[test]
    fn a_probe_is_due_at_start_then_every_five_minutes() {
        let start = Instant::now();
        let mut s = FaultState::new(&rules());
        assert!(s.probe_due(start, &rules()));
        assert_eq!(s.probed(Probe::Healthy, start), Step::Nothing);
        assert!(s.present().is_none());
        assert!(!s.probe_due(start + Duration::from_secs(299), &rules()));
        assert!(s.probe_due(start + Duration::from_secs(300), &rules()));
    }

    #[test]
    fn a_refusal_asks_for_a_probe_at_most_once_a_minute() {
        let start = Instant::now();
        let mut s = FaultState::new(&rules());
        s.probed(Probe::Healthy, start);
        s.trigger();
        assert!(!s.probe_due(start + Duration::from_secs(59), &rules()));
        assert!(s.probe_due(start + Duration::from_secs(60), &rules()));
        s.probed(Probe::Healthy, start + Duration::from_secs(60));
        assert!(
            !s.probe_due(start + Duration::from_secs(200), &rules()),
            "trigger consumed"
        );
    }

    #[test]
    fn fault_closes_the_gate_and_asks_for_a_repair_then_verified_opens_it() {
        let now = Instant::now();
        let mut s = FaultState::new(&rules());
        assert_eq!(
            s.probed(Probe::Fault("admin refused".into()), now),
            Step::Repair
        );
        assert_eq!(s.present(), Some("admin refused"));
        assert_eq!(s.repaired(Probe::Healthy, now), Ok(()));
        assert!(s.present().is_none());
        assert!(s.brake().allows(now));
    }

    #[test]
    fn failed_repairs_are_braked_doubling_to_six_hours() {
        let start = Instant::now();
        let mut s = FaultState::new(&rules());
        let mut now = start;
        let mut waits = Vec::new();
        assert_eq!(s.probed(Probe::Fault("refused".into()), now), Step::Repair);
        for _ in 0..9 {
            let next = s
                .repaired(Probe::Fault("still refused".into()), now)
                .unwrap_err();
            waits.push((next - now).as_secs() / 60);
            // While deferred, a probe every 5 minutes finds the fault; no repair.
            let mid = now + Duration::from_secs(300);
            assert!(s.probe_due(mid, &rules()));
            assert_eq!(s.probed(Probe::Fault("refused".into()), mid), Step::Nothing);
            assert!(!s.probe_due(mid + Duration::from_secs(1), &rules()));
            // Released: a probe is due at once and asks for the repair.
            assert!(s.probe_due(next, &rules()));
            assert_eq!(s.probed(Probe::Fault("refused".into()), next), Step::Repair);
            now = next;
        }
        assert_eq!(waits, vec![10, 20, 40, 80, 160, 320, 360, 360, 360]);
        assert_eq!(s.present(), Some("refused"));
    }

    #[test]
    fn braked_is_published_again_every_fifteen_minutes_of_a_deferral() {
        let start = Instant::now();
        let mut s = FaultState::new(&rules());
        s.probed(Probe::Fault("refused".into()), start);
        s.repaired(Probe::Fault("refused".into()), start)
            .unwrap_err();
        s.probed(Probe::Fault("refused".into()), start); // first deferral: 10 minutes
        s.repaired(Probe::Fault("refused".into()), start)
            .unwrap_err(); // second deferral: 20 minutes
        let deferred_until = s.brake().next_attempt().unwrap();
        let published: Vec<u64> = (1..4)
            .filter_map(|i| {
                let now = start + Duration::from_secs(300 * i);
                match s.probed(Probe::Fault("refused".into()), now) {
                    Step::PublishBraked(next) => {
                        assert_eq!(next, deferred_until);
                        Some(300 * i)
                    }
                    Step::Nothing => None,
                    other => panic!("{other:?}"),
                }
            })
            .collect();
        assert_eq!(published, vec![900]);
    }

    #[test]
    fn a_fault_gone_without_a_repair_is_published_and_releases_the_brake() {
        let now = Instant::now();
        let mut s = FaultState::new(&rules());
        s.probed(Probe::Fault("refused".into()), now);
        s.repaired(Probe::Fault("refused".into()), now).unwrap_err();
        assert_eq!(
            s.probed(Probe::Healthy, now + Duration::from_secs(60)),
            Step::PublishCleared
        );
        assert!(s.present().is_none());
        assert!(
            s.brake().allows(now + Duration::from_secs(61)),
            "success resets the brake"
        );
        assert_eq!(
            s.probed(Probe::Fault("again".into()), now + Duration::from_secs(120)),
            Step::Repair
        );
    }

    #[test]
    fn unknown_leaves_the_gate_as_it_was() {
        let now = Instant::now();
        let mut s = FaultState::new(&rules());
        assert_eq!(
            s.probed(Probe::Unknown("unreachable".into()), now),
            Step::Nothing
        );
        assert!(s.present().is_none());
        s.probed(Probe::Fault("refused".into()), now);
        s.repaired(Probe::Fault("refused".into()), now).unwrap_err();
        assert_eq!(
            s.probed(Probe::Unknown("unreachable".into()), now),
            Step::Nothing
        );
        assert_eq!(s.present(), Some("refused"));
    }
}
