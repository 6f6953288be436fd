//! [`HookProvisioner`] and [`HookRepair`]: mesh-sdk's traits, each method
//! one call to the hook.
//!
//! What a verb the hook answers `{"unsupported": true}` means:
//!
//! | verb | unsupported means |
//! | --- | --- |
//! | `hello` | no name, no known faults, no secrets of its own |
//! | `ensure` | nothing to make: the check alone proves the provision (a hook over a backend made elsewhere) |
//! | `check` | a failure (class `refused`): nothing would prove the provision works |
//! | `held` | the backend cannot be listed: no pass counts towards retirement, nothing is retired or said withdrawn |
//! | `retire`, `re-enable`, `delete` | that action fails (logged, tried again on a later pass or refused to the approver) |
//! | `probe` | the probe cannot tell: the gate stays as it was |
//! | `repair` | the repair failed (braked like any failed repair) |

use std::sync::Arc;

use mesh_sdk::{
    async_trait, Class, Consumer, Held, KnownFault, ModuleId, Name, Probe, Provisioner, Repair,
    Secret, Served,
};

use crate::error::HookError;
use crate::hook::Hook;
use crate::wire::{Answer, Ask, Done, Hello, Verb};

/// A [`Provisioner`] whose every method is a call to the hook.
pub struct HookProvisioner {
    hook: Arc<Hook>,
    repairs: Vec<(Name, Class)>,
}

impl std::fmt::Debug for HookProvisioner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HookProvisioner")
            .field("hook", &self.hook.label())
            .finish_non_exhaustive()
    }
}

impl HookProvisioner {
    /// A provisioner over a started `hook`, with the known faults of its `hello`.
    pub fn new(hook: Hook, hello: &Hello) -> HookProvisioner {
        HookProvisioner {
            hook: Arc::new(hook),
            repairs: hello.repairs.clone(),
        }
    }

    /// The hook.
    pub fn hook(&self) -> &Hook {
        &self.hook
    }

    fn done(&self, verb: Verb, answer: Answer) -> Result<Option<Done>, HookError> {
        match answer {
            Answer::Done(done) => Ok(Some(done)),
            Answer::Unsupported => Ok(None),
            Answer::Refused { class, error } => Err(HookError::Refused {
                class,
                message: error
                    .unwrap_or_else(|| format!("hook {} {verb} failed", self.hook.label())),
            }),
            Answer::Held(_) | Answer::Hello(_) => unreachable!("judged for {verb}"),
        }
    }

    fn unsupported(&self, verb: Verb) -> HookError {
        HookError::Unsupported {
            hook: self.hook.label().to_owned(),
            verb,
        }
    }

    /// One call whose unsupported answer is a failure.
    async fn act(&self, ask: Ask<'_>) -> Result<Done, HookError> {
        let verb = ask.verb();
        let answer = self.hook.call(&ask).await?;
        self.done(verb, answer)?
            .ok_or_else(|| self.unsupported(verb))
    }

    /// What the hook's reply says it mended (scrubbed).
    fn served(&self, done: &Done) -> Served {
        match &done.mended {
            Some(mended) => Served::Mended(self.hook.scrub().text(mended)),
            None => Served::AsIs,
        }
    }
}

#[async_trait]
impl Provisioner for HookProvisioner {
    type Error = HookError;

    async fn ensure(&self, consumer: &Consumer, secret: &Secret) -> Result<Served, HookError> {
        let answer = self.hook.call(&Ask::Ensure(consumer, secret)).await?;
        Ok(match self.done(Verb::Ensure, answer)? {
            Some(done) => self.served(&done),
            None => Served::AsIs,
        })
    }

    async fn check(&self, consumer: &Consumer, secret: &Secret) -> Result<Served, HookError> {
        let done = self.act(Ask::Check(consumer, secret)).await?;
        Ok(self.served(&done))
    }

    async fn held(&self, provider: &ModuleId) -> Result<Vec<Held>, HookError> {
        match self.hook.call(&Ask::Held(provider)).await? {
            Answer::Held(held) => Ok(held),
            other => match self.done(Verb::Held, other)? {
                None => Err(self.unsupported(Verb::Held)),
                Some(_) => unreachable!("judged as held"),
            },
        }
    }

    async fn retire(&self, provider: &ModuleId, consumer: &Name) -> Result<(), HookError> {
        self.act(Ask::Retire(provider, consumer)).await.map(drop)
    }

    async fn re_enable(&self, provider: &ModuleId, consumer: &Name) -> Result<(), HookError> {
        self.act(Ask::ReEnable(provider, consumer)).await.map(drop)
    }

    async fn delete(&self, provider: &ModuleId, consumer: &Name) -> Result<(), HookError> {
        self.act(Ask::Delete(provider, consumer)).await.map(drop)
    }

    fn classify(&self, error: &HookError) -> Option<Class> {
        error.class()
    }

    fn secrets(&self) -> Vec<Secret> {
        self.hook.scrub().hook_secrets()
    }

    fn register_metrics(&self, registry: &mut prometheus_client::registry::Registry) {
        self.hook.metrics().register(registry);
    }

    /// What the hook's newest `hello` or `probe` said in its `fault`.
    fn fault(&self) -> Option<(Class, String)> {
        self.hook.reported_fault()
    }

    fn repairs(&self) -> Vec<KnownFault> {
        self.repairs
            .iter()
            .map(|(fault, class)| {
                KnownFault::new(Arc::new(HookRepair {
                    hook: Arc::clone(&self.hook),
                    fault: fault.clone(),
                    class: *class,
                }))
            })
            .collect()
    }
}

/// A known fault of the hook's hello: `probe` and `repair` calls.
pub struct HookRepair {
    hook: Arc<Hook>,
    fault: Name,
    class: Class,
}

#[async_trait]
impl Repair for HookRepair {
    type Error = HookError;

    fn fault(&self) -> Name {
        self.fault.clone()
    }

    fn class(&self) -> Class {
        self.class
    }

    /// `ok: true` is healthy; `ok: false` is the fault, unless its class is
    /// `unreachable` (the probe could not tell); anything else cannot tell.
    async fn probe(&self) -> Probe {
        match self.hook.call(&Ask::Probe(&self.fault)).await {
            Ok(Answer::Done(_)) => Probe::Healthy,
            Ok(Answer::Refused {
                class: Some(Class::Unreachable),
                error,
            }) => Probe::Unknown(error.unwrap_or_else(|| "the probe could not tell".into())),
            Ok(Answer::Refused { error, .. }) => {
                Probe::Fault(error.unwrap_or_else(|| format!("{} is present", self.fault)))
            }
            Ok(_) => Probe::Unknown(format!("hook {} does not support probe", self.hook.label())),
            Err(error) => Probe::Unknown(error.to_string()),
        }
    }

    async fn repair(&self) -> Result<String, HookError> {
        match self.hook.call(&Ask::Repair(&self.fault)).await? {
            Answer::Done(done) => Ok(done.detail.unwrap_or_else(|| "repaired".into())),
            Answer::Refused { class, error } => Err(HookError::Refused {
                class,
                message: error.unwrap_or_else(|| "the repair failed".into()),
            }),
            _ => Err(HookError::Unsupported {
                hook: self.hook.label().to_owned(),
                verb: Verb::Repair,
            }),
        }
    }

    fn secrets(&self) -> Vec<Secret> {
        self.hook.scrub().hook_secrets()
    }
}
