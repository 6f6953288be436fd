//! One run of the suite: its names, its bounded calls, the rules that need
//! only the provisioner, and the order of every rule.

use std::collections::HashSet;
use std::hash::{BuildHasher, Hasher};
use std::path::PathBuf;
use std::sync::Mutex;

use mesh_protocol::{Class, ModuleId, Name};
use mesh_runtime::redact::{error_text, redact};
use mesh_runtime::Secret;

use super::{Outcome, Report, Rule, Suite, Verdict, LAST_RULE, RULES};
use crate::classify::classify_message;
use crate::contributions::Consumer;
use crate::provisioner::{Held, Provisioner};

/// Random hex from the standard library's per-process random keys.
pub(super) fn random_hex() -> String {
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    format!("{:016x}", hasher.finish())
}

/// The prefix of every name any run of the suite makes.
pub(super) const PREFIX: &str = "conform-";

/// Whether `name` is one the suite makes: `conform-`, eight lowercase hex
/// digits, `-` (a real consumer may be named `conform-api`; it is never
/// cleaned up or counted as a leftover).
pub(super) fn is_suites(name: &str) -> bool {
    name.strip_prefix(PREFIX).is_some_and(|rest| {
        let tag = rest.as_bytes();
        tag.len() > 9
            && tag[..8]
                .iter()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(b))
            && tag[8] == b'-'
    })
}

/// One run of the suite over one provisioner.
pub(super) struct Run<'a, P> {
    pub(super) p: &'a P,
    pub(super) suite: &'a Suite,
    /// The instance the suite acts as ([`Suite::provider`]).
    pub(super) provider: ModuleId,
    /// `conform-<random>-`: this run's names.
    pub(super) prefix: String,
    /// Every secret the run minted (kept out of what it reports).
    secrets: Mutex<Vec<String>>,
    /// Every name an ensure was tried for (cleaned up at the end).
    made: Mutex<Vec<Name>>,
    /// Every name whose delete succeeded.
    deleted: Mutex<HashSet<Name>>,
}

/// A failed step, as a message.
pub(super) type Step = Result<(), String>;

impl<'a, P: Provisioner> Run<'a, P> {
    pub(super) fn name(&self, tail: &str) -> Name {
        Name::parse(&format!("{}{tail}", self.prefix)).expect("a suite name is a name")
    }

    /// A fresh secret, kept out of the run's report.
    pub(super) fn secret(&self) -> Secret {
        let secret = format!("conform-s-{}{}", random_hex(), random_hex());
        self.secrets
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(secret.clone());
        Secret::new(secret)
    }

    pub(super) fn consumer(&self, name: &Name) -> Consumer {
        self.consumer_of(&self.provider, name)
    }

    /// `name` as a consumer listed by the instance `provider`.
    pub(super) fn consumer_of(&self, provider: &ModuleId, name: &Name) -> Consumer {
        Consumer {
            provider: provider.clone(),
            name: name.clone(),
            machine: Name::parse("conform").expect("a name"),
            provision: self.suite.provision.clone(),
            secret_file: PathBuf::new(),
            options: self.suite.options.clone(),
        }
    }

    /// `text` without any secret of the run's or the provisioner's.
    pub(super) fn redacted(&self, text: &str) -> String {
        let mut secrets = self
            .secrets
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        secrets.extend(self.p.secrets().iter().map(|s| s.expose().to_owned()));
        redact(text, &secrets)
    }

    fn class(&self, error: &P::Error) -> Class {
        self.p
            .classify(error)
            .unwrap_or_else(|| classify_message(&error_text(error)))
    }

    /// A bounded call: its error (or timeout) as a message.
    pub(super) async fn bounded<T>(
        &self,
        what: &str,
        call: impl std::future::Future<Output = Result<T, P::Error>>,
    ) -> Result<Result<T, (Class, String)>, String> {
        match tokio::time::timeout(self.suite.timeout, call).await {
            Ok(Ok(value)) => Ok(Ok(value)),
            Ok(Err(error)) => Ok(Err((
                self.class(&error),
                self.redacted(&error_text(&error)),
            ))),
            Err(_) => Err(format!(
                "{what} timed out after {}",
                humantime::format_duration(self.suite.timeout)
            )),
        }
    }

    /// A call that must succeed.
    pub(super) async fn must<T>(
        &self,
        what: &str,
        call: impl std::future::Future<Output = Result<T, P::Error>>,
    ) -> Result<T, String> {
        self.bounded(what, call)
            .await?
            .map_err(|(class, message)| format!("{what} failed ({class}): {message}"))
    }

    /// Notes `name` as made by the suite (cleaned up at the end).
    pub(super) fn making(&self, name: &Name) {
        let mut made = self.made.lock().unwrap_or_else(|p| p.into_inner());
        if !made.contains(name) {
            made.push(name.clone());
        }
    }

    /// An ensure that must succeed; what it mended.
    pub(super) async fn ensure(
        &self,
        name: &Name,
        secret: &Secret,
    ) -> Result<Option<String>, String> {
        self.making(name);
        let consumer = self.consumer(name);
        let served = self
            .must("ensure", self.p.ensure(&consumer, secret))
            .await?;
        Ok(served.into_mended())
    }

    /// A check that must pass; what it mended.
    pub(super) async fn check(
        &self,
        name: &Name,
        secret: &Secret,
    ) -> Result<Option<String>, String> {
        let consumer = self.consumer(name);
        let served = self.must("check", self.p.check(&consumer, secret)).await?;
        Ok(served.into_mended())
    }

    pub(super) async fn held(&self) -> Result<Vec<Held>, String> {
        self.must("held", self.p.held(&self.provider)).await
    }

    /// What held says of `name`: `None` when not listed.
    pub(super) async fn held_as(&self, name: &Name) -> Result<Option<bool>, String> {
        Ok(self
            .held()
            .await?
            .into_iter()
            .find(|h| &h.name == name)
            .map(|h| h.retired))
    }

    /// A retire that must succeed.
    pub(super) async fn retire(&self, name: &Name) -> Step {
        self.must("retire", self.p.retire(&self.provider, name))
            .await
    }

    /// A delete that must succeed (then noted as deleted).
    pub(super) async fn delete(&self, name: &Name) -> Step {
        self.must("delete", self.p.delete(&self.provider, name))
            .await?;
        self.deleted
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(name.clone());
        Ok(())
    }

    /// Names the suite deleted (their delete succeeded).
    pub(super) fn deleted(&self) -> HashSet<Name> {
        self.deleted
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Names the suite tried to make.
    pub(super) fn made(&self) -> Vec<Name> {
        self.made.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    async fn twice(&self, what: &str, name: &Name) -> Step {
        for time in ["", " again"] {
            match what {
                "retire" => {
                    self.must(
                        &format!("retire{time}"),
                        self.p.retire(&self.provider, name),
                    )
                    .await?
                }
                "re-enable" => {
                    self.must(
                        &format!("re-enable{time}"),
                        self.p.re_enable(&self.provider, name),
                    )
                    .await?
                }
                _ => {
                    self.must(
                        &format!("delete{time}"),
                        self.p.delete(&self.provider, name),
                    )
                    .await?;
                    self.deleted
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .insert(name.clone());
                }
            }
        }
        Ok(())
    }

    async fn rule_idempotent(&self, a: &Name, first: &Secret) -> Step {
        self.ensure(a, first).await?;
        self.ensure(a, first)
            .await
            .map(drop)
            .map_err(|e| format!("the second {e}"))
    }

    async fn rule_other_secret(&self, a: &Name, other: &Secret) -> Result<Option<String>, String> {
        let consumer = self.consumer(a);
        match self.bounded("check", self.p.check(&consumer, other)).await? {
            Err((Class::CredentialsRejected, _)) => Ok(None),
            Err((class, message)) => Err(format!(
                "it failed {class}, not credentials-rejected: {message}"
            )),
            Ok(served) => match served.into_mended() {
                Some(mended) => Ok(Some(format!(
                    "its check brings the secret it is given to the backend, and said so: {}",
                    self.redacted(&mended)
                ))),
                None => Err(
                    "check passed with a secret that is not the one ensure brought, and said nothing was mended"
                        .into(),
                ),
            },
        }
    }

    async fn rule_rotation(&self, a: &Name, rotated: &Secret) -> Step {
        self.ensure(a, rotated).await?;
        self.check(a, rotated).await.map(drop)
    }

    async fn rule_retire(&self, a: &Name, secret: &Secret) -> Step {
        self.twice("retire", a).await?;
        let consumer = self.consumer(a);
        if self
            .bounded("check", self.p.check(&consumer, secret))
            .await?
            .is_ok()
        {
            return Err("check passed after retire".into());
        }
        match self.held_as(a).await? {
            Some(true) => Ok(()),
            Some(false) => Err("held lists it, not retired".into()),
            None => Err("held does not list it after retire".into()),
        }
    }

    async fn rule_re_enable(&self, a: &Name, secret: &Secret) -> Step {
        self.twice("re-enable", a).await?;
        self.check(a, secret).await?;
        match self.held_as(a).await? {
            Some(false) => Ok(()),
            Some(true) => Err("held still says it is retired".into()),
            None => Err("held does not list it after re-enable".into()),
        }
    }

    async fn rule_delete(&self, a: &Name) -> Step {
        self.retire(a).await?;
        self.twice("delete", a).await?;
        match self.held_as(a).await? {
            None => Ok(()),
            Some(_) => Err("held still lists it after delete".into()),
        }
    }

    async fn rule_held(&self, a: &Name, never: &Name) -> Step {
        let held = self.held().await?;
        let ours: Vec<&Held> = held
            .iter()
            .filter(|h| h.name.as_str().starts_with(&self.prefix))
            .collect();
        match ours.iter().find(|h| &h.name == a) {
            None => return Err(format!("held does not list {a}, which ensure made")),
            Some(h) if h.retired => return Err(format!("held lists {a} as retired")),
            Some(_) => {}
        }
        if ours.iter().any(|h| &h.name == never) {
            return Err(format!("held lists {never}, which was never made"));
        }
        let names: HashSet<&Name> = held.iter().map(|h| &h.name).collect();
        if names.len() != held.len() {
            return Err("held lists a consumer twice".into());
        }
        if let Some(other) = held
            .iter()
            .find(|h| is_suites(h.name.as_str()) && &h.name != a)
        {
            return Err(format!(
                "held lists {}, which the suite did not make (or an earlier run left)",
                other.name
            ));
        }
        Ok(())
    }

    async fn rule_long_name(&self, secret: &Secret) -> Step {
        let long = self.name(&"x".repeat(63 - self.prefix.len()));
        debug_assert_eq!(long.as_str().len(), 63);
        self.ensure(&long, secret).await?;
        self.check(&long, secret).await?;
        if self.held_as(&long).await? != Some(false) {
            return Err("held does not list the 63-byte name".into());
        }
        self.retire(&long).await?;
        self.delete(&long).await
    }

    async fn rule_parallel(&self, secret: &Secret) -> Step {
        let names: Vec<Name> = (0..self.suite.consumers)
            .map(|i| self.name(&format!("p{i}")))
            .collect();
        let attempts = names.iter().map(|name| async move {
            self.ensure(name, secret).await?;
            self.check(name, secret).await.map(drop)
        });
        let failed: Vec<(usize, String)> = futures::future::join_all(attempts)
            .await
            .into_iter()
            .enumerate()
            .filter_map(|(i, r)| r.err().map(|e| (i, e)))
            .collect();
        if let Some((i, why)) = failed.first() {
            return Err(format!(
                "{} of {} failed; p{i}: {why}",
                failed.len(),
                names.len()
            ));
        }
        let listed: HashSet<Name> = self.held().await?.into_iter().map(|h| h.name).collect();
        let missing = names.iter().filter(|n| !listed.contains(*n)).count();
        if missing > 0 {
            return Err(format!(
                "held does not list {missing} of the {}",
                names.len()
            ));
        }
        let removals = names.iter().map(|name| async move {
            self.retire(name).await?;
            self.delete(name).await
        });
        let removed = futures::future::join_all(removals).await;
        match removed.into_iter().find_map(Result::err) {
            Some(why) => Err(why),
            None => Ok(()),
        }
    }
}

/// Names for a person: the first few, then how many more.
pub(super) fn names_listed(names: &[Name]) -> String {
    let shown: Vec<&str> = names.iter().take(5).map(Name::as_str).collect();
    match names.len() {
        n if n > 5 => format!("{} and {} more", shown.join(", "), n - 5),
        _ => shown.join(", "),
    }
}

/// Every rule in order; see the module docs of `conform`.
pub(super) async fn run<P: Provisioner>(p: &P, suite: &Suite) -> Report {
    let tag = random_hex();
    let run = Run {
        p,
        suite,
        provider: suite.provider.clone(),
        prefix: format!("{PREFIX}{}-", &tag[..8]),
        secrets: Mutex::new(Vec::new()),
        made: Mutex::new(Vec::new()),
        deleted: Mutex::new(HashSet::new()),
    };
    let start = run.clean_earlier().await;
    let (first, other, rotated) = (run.secret(), run.secret(), run.secret());
    let (a, never) = (run.name("a"), run.name("never"));
    let mut verdicts = Vec::with_capacity(RULES.len() + 1);
    let mut say = |rule: &Rule, outcome: Outcome| {
        verdicts.push(Verdict {
            rule: match rule.text.strip_prefix("N ") {
                Some(rest) => format!("{} {rest}", suite.consumers),
                None => rule.text.to_owned(),
            },
            outcome,
        });
    };
    say(
        &RULES[0],
        Outcome::of(run.rule_idempotent(&a, &first).await),
    );
    say(
        &RULES[1],
        Outcome::of(run.check(&a, &first).await.map(drop)),
    );
    say(
        &RULES[2],
        Outcome::noted(run.rule_other_secret(&a, &other).await),
    );
    say(
        &RULES[3],
        Outcome::of(run.rule_rotation(&a, &rotated).await),
    );
    say(&RULES[4], Outcome::of(run.rule_held(&a, &never).await));
    say(&RULES[5], Outcome::of(run.rule_retire(&a, &rotated).await));
    say(
        &RULES[6],
        Outcome::of(run.rule_re_enable(&a, &rotated).await),
    );
    say(&RULES[7], Outcome::of(run.rule_delete(&a).await));
    say(&RULES[8], Outcome::of(run.rule_long_name(&rotated).await));
    say(&RULES[9], Outcome::of(run.rule_parallel(&rotated).await));
    say(&RULES[10], run.rule_mended().await);
    say(&RULES[11], run.rule_not_made().await);
    let neighbours = run.neighbours();
    say(
        &RULES[12],
        Outcome::noted(run.rule_isolated(&neighbours).await),
    );
    say(&RULES[13], run.rule_reach(&neighbours).await);
    say(
        &RULES[14],
        Outcome::of(run.rule_retire_neighbour(&neighbours).await),
    );
    say(&RULES[15], run.rule_cut().await);
    say(&RULES[16], run.rule_other_instance().await);
    say(&LAST_RULE, run.rule_left_behind().await);
    knock_on(&mut verdicts[..ON_A]);
    Report { start, verdicts }
}

/// How many rules, from the first, act on one consumer (`a`) in turn,
/// each on the state the ones before it left.
const ON_A: usize = 8;

/// A failure of a rule that builds on an earlier one that failed says so:
/// it may be that failure's knock-on, not a fault of its own.
fn knock_on(chain: &mut [super::Verdict]) {
    let mut first: Option<String> = None;
    for verdict in chain {
        match (&mut verdict.outcome, &first) {
            (Outcome::Failed(why), Some(earlier)) => {
                why.push_str(&format!(
                    " (after \"{earlier}\" failed above on the same consumer: this may be its knock-on)"
                ));
            }
            (Outcome::Failed(_), None) => first = Some(verdict.rule.clone()),
            _ => {}
        }
    }
}
