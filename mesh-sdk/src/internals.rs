//! The SDK's own rules and fakes, for its tests and the simulator
//! (`mesh-sim`): feature `internals`. Not documented and not a promise: any
//! release may change them. A provider author's tests need
//! [`crate::testing`] alone.

pub use mesh_runtime::testing::{recovered, RecordingSink};

pub use crate::contributions::Source;
pub use crate::secret::{SecretError, SecretSource};
pub use crate::standing::{Failure, Standing};

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use mesh_protocol::{Class, ModuleId, Name, Timestamp};
use mesh_runtime::Secret;

use crate::contributions::Consumer;
use crate::provisioner::{Held, Provisioner, Served};
use crate::repair::{KnownFault, Probe, Repair};
use crate::testing::Published;

/// An error of the fake backend, optionally carrying the provider's own class.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct FakeError {
    /// The error text.
    pub message: String,
    /// A class the provider's `classify` returns for it.
    pub class: Option<Class>,
}

impl FakeError {
    /// An error with text only (no class of its own).
    pub fn message(message: impl Into<String>) -> FakeError {
        FakeError {
            message: message.into(),
            class: None,
        }
    }
}

/// One provision at the fake backend.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FakeProvision {
    /// The secret it was made with.
    pub secret: String,
    /// Whether it is retired.
    pub retired: bool,
    /// The provider instance that made it; `None` for a mark of an older
    /// version (no instance), which an instance adopts when it lists the
    /// consumer.
    pub by: Option<ModuleId>,
}

impl FakeProvision {
    /// An active provision `by` made with `secret`.
    pub fn made_by(by: &ModuleId, secret: &str) -> FakeProvision {
        FakeProvision {
            secret: secret.to_owned(),
            retired: false,
            by: Some(by.clone()),
        }
    }
}

/// What the fake answers for a provision another instance made.
fn not_its_own(consumer: &Name, by: Option<&ModuleId>, provider: &ModuleId) -> FakeError {
    FakeError {
        message: match by {
            Some(by) => format!("{consumer} was made by {by}, not by {provider}"),
            None => format!("{consumer} was made before instance marks; {provider} adopts it only when it lists it"),
        },
        class: Some(Class::Refused),
    }
}

/// The fake backend's state; tests change it between passes.
#[derive(Debug, Default)]
pub struct FakeBackend {
    /// What the backend holds.
    pub provisions: BTreeMap<Name, FakeProvision>,
    /// Consumers whose `ensure` fails, with the error.
    pub fail_ensure: HashMap<Name, FakeError>,
    /// Consumers whose `check` fails, with the error.
    pub fail_check: HashMap<Name, FakeError>,
    /// Consumers whose `check` panics (a bug in a provider's code).
    pub panic_check: Vec<Name>,
    /// Every call fails with this error (the backend is down).
    pub down: Option<FakeError>,
    /// When set, the check's refusal echoes the secret it was given (as careless backends do).
    pub echo_secret: bool,
    /// When set, `ensure` only makes what is missing and never brings a
    /// changed secret (a provider that breaks the rotation rule).
    pub keep_secrets: bool,
    /// Latency of every call.
    pub latency: Duration,
    /// Consumers whose `ensure` waits until the test notifies the gate
    /// (a backend call that hangs; one `notify_one` lets one call through).
    pub stall: HashMap<Name, Arc<tokio::sync::Notify>>,
    /// Every call made, as `method consumer` (unless `forget_calls`).
    pub calls: Vec<String>,
    /// When set, calls are not logged in `calls` (a long simulation makes
    /// millions of them).
    pub forget_calls: bool,
    /// The provider's own word on its administrator ([`Provisioner::fault`]).
    pub fault: Option<(Class, String)>,
}

/// A [`Provisioner`] over an in-memory backend. Clones share the backend.
#[derive(Debug, Clone, Default)]
pub struct FakeProvisioner {
    /// The backend.
    pub backend: Arc<Mutex<FakeBackend>>,
    /// Secrets the provider holds (redacted from errors).
    pub own_secrets: Vec<String>,
    /// A known fault the provider registers, if any.
    pub repair: Option<FakeRepair>,
}

impl FakeProvisioner {
    /// A provisioner with an empty backend.
    pub fn new() -> FakeProvisioner {
        FakeProvisioner::default()
    }

    /// Runs `f` on the backend.
    pub fn with<R>(&self, f: impl FnOnce(&mut FakeBackend) -> R) -> R {
        f(&mut self.backend.lock().expect("fake backend lock"))
    }

    /// Calls made so far whose method is `method`.
    pub fn calls(&self, method: &str) -> usize {
        self.with(|b| {
            b.calls
                .iter()
                .filter(|c| c.split(' ').next() == Some(method))
                .count()
        })
    }

    async fn enter(
        &self,
        method: &str,
        consumer: &(dyn std::fmt::Display + Sync),
    ) -> Result<(), FakeError> {
        let (latency, down) = self.with(|b| {
            if !b.forget_calls {
                b.calls.push(format!("{method} {consumer}"));
            }
            (b.latency, b.down.clone())
        });
        if !latency.is_zero() {
            tokio::time::sleep(latency).await;
        }
        down.map_or(Ok(()), Err)
    }
}

#[async_trait]
impl Provisioner for FakeProvisioner {
    type Error = FakeError;

    async fn ensure(&self, consumer: &Consumer, secret: &Secret) -> Result<Served, FakeError> {
        self.enter("ensure", &consumer.name).await?;
        if let Some(gate) = self.with(|b| b.stall.get(&consumer.name).cloned()) {
            gate.notified().await;
        }
        self.with(|b| {
            if let Some(error) = b.fail_ensure.get(&consumer.name) {
                return Err(error.clone());
            }
            let keep = b.keep_secrets;
            let provision = b
                .provisions
                .entry(consumer.name.clone())
                .or_insert_with(|| FakeProvision::made_by(&consumer.provider, secret.expose()));
            match &provision.by {
                Some(by) if by != &consumer.provider => {
                    return Err(not_its_own(&consumer.name, Some(by), &consumer.provider));
                }
                Some(_) => {}
                // Listed by this instance: adopted.
                None => provision.by = Some(consumer.provider.clone()),
            }
            if !keep && provision.secret != secret.expose() {
                provision.secret = secret.expose().to_owned();
                return Ok(Served::mended("secret set to the minted one"));
            }
            Ok(Served::AsIs)
        })
    }

    async fn check(&self, consumer: &Consumer, secret: &Secret) -> Result<Served, FakeError> {
        self.enter("check", &consumer.name).await?;
        if self.with(|b| b.panic_check.contains(&consumer.name)) {
            panic!("index out of bounds while checking {}", consumer.name);
        }
        self.with(|b| {
            if let Some(error) = b.fail_check.get(&consumer.name) {
                return Err(error.clone());
            }
            match b.provisions.get(&consumer.name) {
                Some(p) if p.retired => Err(FakeError::message(format!(
                    "role \"{}\" is not permitted to log in",
                    consumer.name
                ))),
                Some(p) if p.secret == secret.expose() => Ok(Served::AsIs),
                Some(_) if b.echo_secret => Err(FakeError::message(format!(
                    "password authentication failed for user \"{}\" with password \"{}\"",
                    consumer.name,
                    secret.expose()
                ))),
                Some(_) => Err(FakeError::message(format!(
                    "password authentication failed for user \"{}\"",
                    consumer.name
                ))),
                None => Err(FakeError::message(format!(
                    "database \"{}\" does not exist",
                    consumer.name
                ))),
            }
        })
    }

    async fn held(&self, provider: &ModuleId) -> Result<Vec<Held>, FakeError> {
        self.enter("held", &"-").await?;
        Ok(self.with(|b| {
            b.provisions
                .iter()
                .filter(|(_, p)| p.by.as_ref() == Some(provider))
                .map(|(name, p)| Held {
                    name: name.clone(),
                    retired: p.retired,
                })
                .collect()
        }))
    }

    async fn retire(&self, provider: &ModuleId, consumer: &Name) -> Result<(), FakeError> {
        self.enter("retire", consumer).await?;
        self.with(|b| {
            let p = own(b, provider, consumer)?;
            if let Some(p) = p {
                p.retired = true;
            }
            Ok(())
        })
    }

    async fn re_enable(&self, provider: &ModuleId, consumer: &Name) -> Result<(), FakeError> {
        self.enter("re_enable", consumer).await?;
        self.with(|b| {
            if let Some(p) = own(b, provider, consumer)? {
                p.retired = false;
            }
            Ok(())
        })
    }

    async fn delete(&self, provider: &ModuleId, consumer: &Name) -> Result<(), FakeError> {
        self.enter("delete", consumer).await?;
        self.with(|b| {
            if own(b, provider, consumer)?.is_some() {
                b.provisions.remove(consumer);
            }
            Ok(())
        })
    }

    fn classify(&self, error: &FakeError) -> Option<Class> {
        error.class
    }

    fn fault(&self) -> Option<(Class, String)> {
        self.with(|b| b.fault.clone())
    }

    fn secrets(&self) -> Vec<Secret> {
        self.own_secrets.iter().map(Secret::new).collect()
    }

    fn repairs(&self) -> Vec<KnownFault> {
        self.repair
            .iter()
            .map(|r| KnownFault::new(Arc::new(r.clone())))
            .collect()
    }
}

/// `consumer`'s provision if `provider` made it (`None` when there is
/// none); an error when another instance did, or an older version.
fn own<'b>(
    b: &'b mut FakeBackend,
    provider: &ModuleId,
    consumer: &Name,
) -> Result<Option<&'b mut FakeProvision>, FakeError> {
    match b.provisions.get_mut(consumer) {
        None => Ok(None),
        Some(p) if p.by.as_ref() == Some(provider) => Ok(Some(p)),
        Some(p) => Err(not_its_own(consumer, p.by.as_ref(), provider)),
    }
}

/// The fake's known fault, `admin-refused`: the administrator's login.
#[derive(Debug, Default)]
pub struct FakeAdmin {
    /// Whether the administrator's login is refused now.
    pub refused: bool,
    /// Whether a repair fixes it.
    pub repair_works: bool,
    /// Probes made.
    pub probes: usize,
    /// Repairs tried.
    pub repairs: usize,
    /// The administrator's password, which careless error text echoes.
    pub password: String,
    /// A password minted during each repair (a temporary administrator's), echoed too.
    pub temporary: String,
}

/// A [`Repair`] over [`FakeAdmin`]. Clones share the state.
#[derive(Debug, Clone, Default)]
pub struct FakeRepair {
    /// The state.
    pub admin: Arc<Mutex<FakeAdmin>>,
}

impl FakeRepair {
    /// Runs `f` on the state.
    pub fn with<R>(&self, f: impl FnOnce(&mut FakeAdmin) -> R) -> R {
        f(&mut self.admin.lock().expect("fake admin lock"))
    }
}

#[async_trait]
impl Repair for FakeRepair {
    type Error = FakeError;

    fn fault(&self) -> Name {
        Name::parse("admin-refused").expect("valid name")
    }

    async fn probe(&self) -> Probe {
        self.with(|a| {
            a.probes += 1;
            match a.refused {
                true => Probe::Fault(format!(
                    "invalid_grant: Invalid user credentials (tried {})",
                    a.password
                )),
                false => Probe::Healthy,
            }
        })
    }

    async fn repair(&self) -> Result<String, FakeError> {
        self.with(|a| {
            a.repairs += 1;
            a.temporary = format!("temporary-secret-{}", a.repairs);
            if a.repair_works {
                a.refused = false;
                Ok(format!("administrator password reset to {}", a.password))
            } else {
                Err(FakeError::message(format!(
                    "bootstrap-admin failed while setting {}",
                    a.password
                )))
            }
        })
    }

    fn secrets(&self) -> Vec<Secret> {
        self.with(|a| {
            vec![
                Secret::new(a.password.clone()),
                Secret::new(a.temporary.clone()),
            ]
        })
    }
}

/// Whole minutes from `start` to the time in `field` of `body`.
///
/// # Panics
/// When the field is not an RFC 3339 time at or after `start`.
pub fn minutes_since(start: Timestamp, body: &serde_json::Value, field: &str) -> u64 {
    let text = body[field]
        .as_str()
        .unwrap_or_else(|| panic!("{field} is not a time: {body}"));
    let at = Timestamp::parse(text).expect("an RFC 3339 time");
    at.system_time()
        .duration_since(start.system_time())
        .expect("a time after the start")
        .as_secs()
        / 60
}

/// The brake under the default rules when every repair fails and a pass
/// runs at least every few minutes: `(said_at, next_attempt_at)` of each
/// `failed` repair event in the first 13 hours, in minutes from the first:
/// held back 10, 20, 40, 80, 160, 320, then 360 minutes.
pub const BRAKE_SCHEDULE: [(u64, u64); 7] = [
    (0, 10),
    (10, 30),
    (30, 70),
    (70, 150),
    (150, 310),
    (310, 630),
    (630, 990),
];

/// `(said_at, next_attempt_at)` in minutes from `start` of each `failed`
/// repair event; compare with [`BRAKE_SCHEDULE`].
pub fn failed_repairs(published: &[Published], start: Timestamp) -> Vec<(u64, u64)> {
    published
        .iter()
        .filter(|(kind, body)| kind == "repair" && body["outcome"] == "failed")
        .map(|(_, body)| {
            (
                minutes_since(start, body, "said_at"),
                minutes_since(start, body, "next_attempt_at"),
            )
        })
        .collect()
}
