//! Each provider's backend in the simulation, and where its minted secrets
//! come from.
//!
//! [`SimBackend`] answers the loop's calls as the SDK's `FakeProvisioner`
//! does with the settings the simulation uses (no latency, never down, no
//! stalls, no panics, no calls logged; the tests below hold it to that),
//! but keeps each consumer in a slot found by its index (`app<c>`) instead
//! of in maps keyed by names: at 1,000 providers × 100 consumers the loop
//! makes 40,000 backend calls a simulated second, and the fake's map
//! lookups and locks were a fifth of the run. A real backend pays a
//! network round trip there instead; neither is the loop's own work.
//!
//! [`SimSecrets`] hands out each consumer's minted secret from a table
//! made once, instead of formatting it at every attempt.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use mesh_protocol::Name;
use mesh_runtime::Secret;
use mesh_sdk::internals::{FakeError, SecretError, SecretSource};
use mesh_sdk::{Consumer, Held, Provisioner, Served};

use crate::status::consumer_name;

/// How every secret of the simulation begins.
pub const SECRET_PREFIX: &str = "s3cr3t-";

/// How every secret of the simulation ends (a consumer's name holds no `Z`).
pub const SECRET_SUFFIX: &str = "-Zq9";

/// Consumer `consumer`'s minted secret at provider `p`.
pub fn secret_of(p: usize, consumer: &str) -> String {
    format!("{SECRET_PREFIX}{p}-{consumer}{SECRET_SUFFIX}")
}

/// The index of consumer `name` (`app<c>`, [`consumer_name`]).
fn index_of(name: &Name) -> Option<usize> {
    let digits = name.as_str().strip_prefix("app")?;
    // `app01` is no consumer of the simulation.
    match digits.len() > 1 && digits.starts_with('0') {
        true => None,
        false => digits.parse().ok(),
    }
}

/// A provision the backend holds.
#[derive(Clone, Copy, Debug)]
struct Provision {
    /// A fingerprint of the secret it was made with ([`fingerprint`]):
    /// the string itself would be one more memory read a call, missing the
    /// caches at this size.
    secret: u64,
    retired: bool,
}

/// What the backend holds and does for one consumer (small: a pass goes
/// through a provider's slots in order).
#[derive(Clone, Debug, Default)]
struct Slot {
    provision: Option<Provision>,
    /// Its `ensure` (true) or its `check` fails, with this error.
    fail: Option<Box<(bool, FakeError)>>,
}

/// FNV-1a of `secret`: the same on every run, and no two of the
/// simulation's secrets share one.
fn fingerprint(secret: &Secret) -> u64 {
    secret.expose().bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// One provider's backend.
#[derive(Debug)]
pub struct Slots {
    names: Arc<[Name]>,
    /// Consumer indices in the order of their names (`held` lists them so,
    /// as the fake's map does).
    by_name: Arc<[usize]>,
    slots: Vec<Slot>,
}

impl Slots {
    /// Whether the backend holds consumer `c` and it is not retired.
    pub fn active(&self, c: usize) -> bool {
        self.slots
            .get(c)
            .and_then(|s| s.provision.as_ref())
            .is_some_and(|p| !p.retired)
    }

    fn slot(&mut self, name: &Name) -> Result<&mut Slot, FakeError> {
        index_of(name)
            .and_then(|c| self.slots.get_mut(c))
            .ok_or_else(|| FakeError::message(format!("{name} is no consumer of the simulation")))
    }
}

/// A provider's backend for `consumers` consumers; clones share it.
#[derive(Clone, Debug)]
pub struct SimBackend {
    slots: Arc<Mutex<Slots>>,
}

/// The names of `consumers` consumers, by index, and their indices in name
/// order; made once and shared by every provider's backend.
pub fn names(consumers: usize) -> (Arc<[Name]>, Arc<[usize]>) {
    let names: Arc<[Name]> = (0..consumers)
        .map(|c| Name::parse(&consumer_name(c)).expect("a valid name"))
        .collect();
    let mut by_name: Vec<usize> = (0..consumers).collect();
    by_name.sort_by(|a, b| names[*a].cmp(&names[*b]));
    (names, by_name.into())
}

impl SimBackend {
    /// An empty backend for the consumers `names` ([`names`]).
    pub fn new((names, by_name): (Arc<[Name]>, Arc<[usize]>)) -> SimBackend {
        let slots = vec![Slot::default(); names.len()];
        SimBackend {
            slots: Arc::new(Mutex::new(Slots {
                names,
                by_name,
                slots,
            })),
        }
    }

    /// Runs `f` on the backend.
    pub fn with<R>(&self, f: impl FnOnce(&mut Slots) -> R) -> R {
        f(&mut self.slots.lock().expect("backend lock"))
    }

    /// From now on consumer `c`'s `ensure` (when `ensure`, else its
    /// `check`) fails with `error`; the other call works again.
    pub fn fail(&self, c: usize, ensure: bool, error: FakeError) {
        self.with(|b| b.slots[c].fail = Some(Box::new((ensure, error))));
    }

    /// Consumer `c`'s calls work again.
    pub fn heal(&self, c: usize) {
        self.with(|b| b.slots[c].fail = None);
    }
}

#[async_trait]
/// One provider instance's backend: the simulation runs one provider, so
/// every call's instance is that one and is not read.
impl Provisioner for SimBackend {
    type Error = FakeError;

    async fn ensure(&self, consumer: &Consumer, secret: &Secret) -> Result<Served, FakeError> {
        self.with(|b| {
            let slot = b.slot(&consumer.name)?;
            if let Some((true, error)) = slot.fail.as_deref() {
                return Err(error.clone());
            }
            let secret = fingerprint(secret);
            match &mut slot.provision {
                Some(p) if p.secret != secret => {
                    p.secret = secret;
                    return Ok(Served::mended("secret set to the minted one"));
                }
                Some(_) => {}
                None => {
                    slot.provision = Some(Provision {
                        secret,
                        retired: false,
                    });
                }
            }
            Ok(Served::AsIs)
        })
    }

    async fn check(&self, consumer: &Consumer, secret: &Secret) -> Result<Served, FakeError> {
        self.with(|b| {
            let slot = b.slot(&consumer.name)?;
            if let Some((false, error)) = slot.fail.as_deref() {
                return Err(error.clone());
            }
            let name = &consumer.name;
            match &slot.provision {
                Some(p) if p.retired => Err(FakeError::message(format!(
                    "role \"{name}\" is not permitted to log in"
                ))),
                Some(p) if p.secret == fingerprint(secret) => Ok(Served::AsIs),
                Some(_) => Err(FakeError::message(format!(
                    "password authentication failed for user \"{name}\""
                ))),
                None => Err(FakeError::message(format!(
                    "database \"{name}\" does not exist"
                ))),
            }
        })
    }

    async fn held(&self, _: &mesh_sdk::ModuleId) -> Result<Vec<Held>, FakeError> {
        Ok(self.with(|b| {
            b.by_name
                .iter()
                .filter_map(|&c| {
                    let p = b.slots[c].provision.as_ref()?;
                    Some(Held {
                        name: b.names[c].clone(),
                        retired: p.retired,
                    })
                })
                .collect()
        }))
    }

    async fn retire(&self, _: &mesh_sdk::ModuleId, consumer: &Name) -> Result<(), FakeError> {
        self.with(|b| {
            if let Some(p) = b.slot(consumer)?.provision.as_mut() {
                p.retired = true;
            }
            Ok(())
        })
    }

    async fn re_enable(&self, _: &mesh_sdk::ModuleId, consumer: &Name) -> Result<(), FakeError> {
        self.with(|b| {
            if let Some(p) = b.slot(consumer)?.provision.as_mut() {
                p.retired = false;
            }
            Ok(())
        })
    }

    async fn delete(&self, _: &mesh_sdk::ModuleId, consumer: &Name) -> Result<(), FakeError> {
        self.with(|b| {
            b.slot(consumer)?.provision = None;
            Ok(())
        })
    }

    fn classify(&self, error: &FakeError) -> Option<mesh_protocol::Class> {
        error.class
    }
}

/// Provider `p`'s minted secrets, one per consumer ([`secret_of`]), kept
/// one after the other in one string: a pass reads them in order.
#[derive(Clone, Debug)]
pub struct SimSecrets {
    p: usize,
    all: Arc<str>,
    /// Where each consumer's secret ends in `all`.
    ends: Arc<[usize]>,
}

impl SimSecrets {
    /// The secrets of provider `p`'s `consumers` consumers.
    pub fn new(p: usize, consumers: usize) -> SimSecrets {
        let mut all = String::new();
        let mut ends = Vec::with_capacity(consumers);
        for c in 0..consumers {
            all.push_str(&secret_of(p, &consumer_name(c)));
            ends.push(all.len());
        }
        SimSecrets {
            p,
            all: all.into(),
            ends: ends.into(),
        }
    }
}

impl SecretSource for SimSecrets {
    fn read(&self, consumer: &Consumer) -> Result<Secret, SecretError> {
        let made = index_of(&consumer.name).and_then(|c| {
            let end = *self.ends.get(c)?;
            let start = c.checked_sub(1).map_or(0, |b| self.ends[b]);
            Some(&self.all[start..end])
        });
        Ok(Secret::new(match made {
            Some(secret) => secret.to_owned(),
            None => secret_of(self.p, consumer.name.as_str()),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;
    use mesh_sdk::internals::FakeProvisioner;

    fn consumer(c: usize) -> Consumer {
        Consumer {
            provider: "postgres@db-1".parse().expect("a valid provider"),
            name: Name::parse(&consumer_name(c)).expect("a valid name"),
            machine: Name::parse("app-1").expect("a valid name"),
            provision: "postgres-database".to_owned(),
            secret_file: "secrets/x".into(),
            options: serde_json::Value::Null,
        }
    }

    /// One call or change, made alike on both backends; what it answered.
    async fn one<P: Provisioner<Error = FakeError>>(
        backend: &P,
        op: u64,
        c: usize,
        secret: &Secret,
    ) -> String {
        let consumer = consumer(c);
        let answer = match op {
            0 => format!("{:?}", backend.ensure(&consumer, secret).await),
            1 => format!("{:?}", backend.check(&consumer, secret).await),
            2 => format!("{:?}", backend.held(&consumer.provider).await),
            3 => format!(
                "{:?}",
                backend.retire(&consumer.provider, &consumer.name).await
            ),
            4 => format!(
                "{:?}",
                backend.re_enable(&consumer.provider, &consumer.name).await
            ),
            5 => format!(
                "{:?}",
                backend.delete(&consumer.provider, &consumer.name).await
            ),
            // The rest: ensure again (the op that mends).
            _ => format!("{:?}", backend.ensure(&consumer, secret).await),
        };
        let class = backend.classify(&FakeError::message("x"));
        format!("{answer} {class:?} {}", backend.secrets().len())
    }

    #[tokio::test]
    async fn it_answers_as_the_sdks_fake_backend_does() {
        let fake = FakeProvisioner::new();
        fake.with(|b| b.forget_calls = true);
        let sim = SimBackend::new(names(12));
        let mut rng = Rng::new(11);
        let (mut failed, mut mended) = (0, 0);
        for _ in 0..20_000 {
            let c = usize::try_from(rng.below(12)).expect("small");
            let secret = Secret::new(format!("secret-{}", rng.below(2)));
            match rng.below(12) {
                // A consumer's backend breaks, or works again.
                9 | 10 => {
                    let ensure = rng.chance(500);
                    let error = FakeError::message(format!("broken {}", rng.below(3)));
                    let name = consumer(c).name;
                    fake.with(|b| {
                        b.fail_check.remove(&name);
                        b.fail_ensure.remove(&name);
                        match ensure {
                            true => b.fail_ensure.insert(name, error.clone()),
                            false => b.fail_check.insert(name, error.clone()),
                        };
                    });
                    sim.fail(c, ensure, error);
                }
                11 => {
                    let name = consumer(c).name;
                    fake.with(|b| {
                        b.fail_check.remove(&name);
                        b.fail_ensure.remove(&name);
                    });
                    sim.heal(c);
                }
                op => {
                    let (a, b) = (
                        one(&fake, op, c, &secret).await,
                        one(&sim, op, c, &secret).await,
                    );
                    assert_eq!(a, b, "op {op} of consumer {c}");
                    failed += usize::from(a.starts_with("Err"));
                    mended += usize::from(a.starts_with("Ok(Mended"));
                }
            }
            let held = fake.with(|b| {
                b.provisions
                    .get(&consumer(c).name)
                    .is_some_and(|p| !p.retired)
            });
            assert_eq!(sim.with(|b| b.active(c)), held);
        }
        assert!(
            failed > 1000 && mended > 100,
            "{failed} failed, {mended} mended"
        );
    }

    #[test]
    fn names_are_held_in_the_order_of_names_and_secrets_are_minted_ones() {
        let (names, by_name) = names(12);
        let ordered: Vec<&str> = by_name.iter().map(|&c| names[c].as_str()).collect();
        let mut sorted = ordered.clone();
        sorted.sort_unstable();
        assert_eq!(ordered, sorted);
        assert_eq!(ordered[..3], ["app0", "app1", "app10"]);
        let secrets = SimSecrets::new(3, 12);
        for c in [0, 11, 12, 400] {
            let secret = secrets.read(&consumer(c)).expect("a secret");
            assert_eq!(secret.expose(), secret_of(3, &consumer_name(c)));
        }
        assert_eq!(index_of(&Name::parse("app07").expect("a name")), None);
        assert_eq!(index_of(&Name::parse("app70").expect("a name")), Some(70));
    }
}
