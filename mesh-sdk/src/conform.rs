//! The conformance suite: the loop's assumptions about a [`Provisioner`],
//! tried against its real backend, one verdict per rule (feature
//! `conform`; `testing` includes it). `mesh-provide conform` runs the same
//! rules against a hook; a Rust provider runs them in its tests:
//!
//! ```no_run
//! # async fn example(provisioner: impl mesh_sdk::Provisioner) {
//! use mesh_sdk::conform::{conform, Suite};
//!
//! let report = conform(&provisioner, &Suite::new("postgres-database")).await;
//! println!("{report}"); // one line per rule, then "10 passed, 0 failed"
//! report.assert_passed();
//! # }
//! ```
//!
//! The rules ([`RULES`], in this order, each building on the state the
//! ones before left):
//!
//! 1. ensure twice is idempotent;
//! 2. check passes after ensure;
//! 3. check with another secret fails `credentials-rejected` — or, for a
//!    provider whose check brings the secret it is given to the backend
//!    (mesh-postgres and mesh-identity reset a refused password), passes
//!    and says so through [`Provisioner::take_mended`];
//! 4. ensure with a new secret (a rotation) makes check pass with it;
//! 5. held lists what was made and nothing else (of the suite's names: a
//!    name never made is not listed);
//! 6. retire makes check fail and held say retired (retire twice is harmless);
//! 7. re-enable makes check pass (twice is harmless);
//! 8. delete removes it from held (twice is harmless);
//! 9. a 63-byte name works (made, checked, listed, retired and deleted);
//! 10. N consumers in parallel (made and checked at once, all listed, all
//!     removed).
//!
//! Every consumer it makes is named `conform-<random>-…`, which no real
//! consumer is, on machine `conform`; it retires and deletes all of them
//! before it ends, whatever failed. Each call is bounded by
//! [`Suite::timeout`].

use std::collections::HashSet;
use std::fmt;
use std::hash::{BuildHasher, Hasher};
use std::path::PathBuf;
use std::time::Duration;

use mesh_protocol::{Class, Name};
use mesh_runtime::redact::{error_text, redact};
use mesh_runtime::Secret;

use crate::classify::classify_words;
use crate::contributions::Consumer;
use crate::provisioner::{Held, Provisioner};

/// The rules, as each verdict names them (`{n}` is the number of consumers).
pub const RULES: [&str; 10] = [
    "ensure twice is idempotent",
    "check passes after ensure",
    "check with another secret fails credentials-rejected",
    "ensure with a new secret (a rotation) makes check pass with it",
    "held lists what was made and nothing else",
    "retire makes check fail and held say retired",
    "re-enable makes check pass",
    "delete removes it from held",
    "a 63-byte name works",
    "{n} consumers in parallel",
];

/// What the suite runs with.
#[derive(Clone, Debug)]
pub struct Suite {
    /// The provision its consumers ask for (a provider may refuse others).
    pub provision: String,
    /// Their `options`.
    pub options: serde_json::Value,
    /// How many consumers the parallel rule makes at once.
    pub consumers: usize,
    /// Bound of each call.
    pub timeout: Duration,
}

impl Suite {
    /// The suite for consumers of `provision`: no options, 16 consumers in
    /// parallel, 30 s a call.
    pub fn new(provision: impl Into<String>) -> Suite {
        Suite {
            provision: provision.into(),
            options: serde_json::json!({}),
            consumers: 16,
            timeout: Duration::from_secs(30),
        }
    }
}

/// One rule's outcome.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verdict {
    /// The rule, as [`RULES`] words it.
    pub rule: String,
    /// `Ok` with an optional note, or why it failed.
    pub outcome: Result<Option<String>, String>,
}

/// Every rule's verdict, and what the cleanup could not remove.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Report {
    /// One verdict per rule, in order.
    pub verdicts: Vec<Verdict>,
    /// Consumers the suite made and could not delete, with why.
    pub left_behind: Vec<String>,
}

impl Report {
    /// How many rules passed.
    pub fn passed(&self) -> usize {
        self.verdicts.iter().filter(|v| v.outcome.is_ok()).count()
    }

    /// How many rules failed.
    pub fn failed(&self) -> usize {
        self.verdicts.len() - self.passed()
    }

    /// Whether every rule passed.
    pub fn all_passed(&self) -> bool {
        self.failed() == 0
    }

    /// Panics with the whole report unless every rule passed.
    ///
    /// # Panics
    /// When a rule failed.
    pub fn assert_passed(&self) {
        assert!(self.all_passed(), "the conformance suite failed:\n{self}");
    }
}

/// One line per rule (`ok   rule` or `FAIL rule: why`), a line per
/// consumer left behind, then `N passed, N failed`.
impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for verdict in &self.verdicts {
            match &verdict.outcome {
                Ok(None) => writeln!(f, "ok   {}", verdict.rule)?,
                Ok(Some(note)) => writeln!(f, "ok   {} ({note})", verdict.rule)?,
                Err(why) => writeln!(f, "FAIL {}: {why}", verdict.rule)?,
            }
        }
        for left in &self.left_behind {
            writeln!(f, "left behind: {left}")?;
        }
        write!(f, "{} passed, {} failed", self.passed(), self.failed())
    }
}

/// Random hex from the standard library's per-process random keys.
fn random_hex() -> String {
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    format!("{:016x}", hasher.finish())
}

/// One run of the suite over one provisioner.
struct Run<'a, P> {
    p: &'a P,
    suite: &'a Suite,
    prefix: String,
    secrets: Vec<Secret>,
    /// Every name an ensure was tried for (cleaned up at the end).
    made: Vec<Name>,
}

/// A failed step, in words.
type Step = Result<(), String>;

impl<'a, P: Provisioner> Run<'a, P> {
    fn name(&self, tail: &str) -> Name {
        Name::parse(&format!("{}{tail}", self.prefix)).expect("a suite name is a name")
    }

    fn consumer(&self, name: &Name) -> Consumer {
        Consumer {
            name: name.clone(),
            machine: Name::parse("conform").expect("a name"),
            provision: self.suite.provision.clone(),
            secret_file: PathBuf::new(),
            options: self.suite.options.clone(),
        }
    }

    /// Redacted words of an error.
    fn words(&self, error: &P::Error) -> String {
        let mut secrets: Vec<String> = self.secrets.iter().map(|s| s.expose().to_owned()).collect();
        secrets.extend(self.p.secrets().iter().map(|s| s.expose().to_owned()));
        redact(&error_text(error), &secrets)
    }

    fn class(&self, error: &P::Error) -> Class {
        self.p
            .classify(error)
            .unwrap_or_else(|| classify_words(&error_text(error)))
    }

    /// A bounded call: its error (or timeout) in words.
    async fn bounded<T>(
        &self,
        what: &str,
        call: impl std::future::Future<Output = Result<T, P::Error>>,
    ) -> Result<Result<T, (Class, String)>, String> {
        match tokio::time::timeout(self.suite.timeout, call).await {
            Ok(Ok(value)) => Ok(Ok(value)),
            Ok(Err(error)) => Ok(Err((self.class(&error), self.words(&error)))),
            Err(_) => Err(format!(
                "{what} timed out after {}",
                humantime::format_duration(self.suite.timeout)
            )),
        }
    }

    /// A call that must succeed.
    async fn must<T>(
        &self,
        what: &str,
        call: impl std::future::Future<Output = Result<T, P::Error>>,
    ) -> Result<T, String> {
        self.bounded(what, call)
            .await?
            .map_err(|(class, words)| format!("{what} failed ({class}): {words}"))
    }

    async fn ensure(&mut self, name: &Name, secret: &Secret) -> Step {
        if !self.made.contains(name) {
            self.made.push(name.clone());
        }
        let consumer = self.consumer(name);
        self.must("ensure", self.p.ensure(&consumer, secret))
            .await?;
        self.p.take_mended(name);
        Ok(())
    }

    async fn check(&self, name: &Name, secret: &Secret) -> Step {
        let consumer = self.consumer(name);
        self.must("check", self.p.check(&consumer, secret)).await?;
        self.p.take_mended(name);
        Ok(())
    }

    async fn held(&self) -> Result<Vec<Held>, String> {
        self.must("held", self.p.held()).await
    }

    /// What held says of `name`: `None` when not listed.
    async fn held_as(&self, name: &Name) -> Result<Option<bool>, String> {
        Ok(self
            .held()
            .await?
            .into_iter()
            .find(|h| &h.name == name)
            .map(|h| h.retired))
    }

    async fn twice(&self, what: &str, name: &Name) -> Step {
        for time in ["", " again"] {
            let call = match what {
                "retire" => self.p.retire(name),
                "re-enable" => self.p.re_enable(name),
                _ => self.p.delete(name),
            };
            self.must(&format!("{what}{time}"), call).await?;
        }
        Ok(())
    }

    async fn rule_other_secret(&self, a: &Name, other: &Secret) -> Result<Option<String>, String> {
        self.p.take_mended(a);
        let consumer = self.consumer(a);
        match self.bounded("check", self.p.check(&consumer, other)).await? {
            Err((Class::CredentialsRejected, _)) => Ok(None),
            Err((class, words)) => Err(format!(
                "it failed {class}, not credentials-rejected: {words}"
            )),
            Ok(()) => match self.p.take_mended(a) {
                Some(words) => Ok(Some(format!(
                    "its check brings the secret it is given to the backend, and said so: {}",
                    redact(&words, &self.secrets.iter().map(Secret::expose).collect::<Vec<_>>())
                ))),
                None => Err(
                    "check passed with a secret that is not the one ensure brought, and said nothing was mended"
                        .into(),
                ),
            },
        }
    }

    async fn rule_retire(&self, a: &Name, secret: &Secret) -> Step {
        self.twice("retire", a).await?;
        let consumer = self.consumer(a);
        if let Ok(()) = self
            .bounded("check", self.p.check(&consumer, secret))
            .await?
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
        self.must("retire", self.p.retire(a)).await?;
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
        if let Some(other) = ours.iter().find(|h| &h.name != a) {
            return Err(format!(
                "held lists {}, which the suite did not make",
                other.name
            ));
        }
        Ok(())
    }

    async fn rule_long_name(&mut self, secret: &Secret) -> Step {
        let long = self.name(&"x".repeat(63 - self.prefix.len()));
        debug_assert_eq!(long.as_str().len(), 63);
        self.ensure(&long, secret).await?;
        self.check(&long, secret).await?;
        if self.held_as(&long).await? != Some(false) {
            return Err("held does not list the 63-byte name".into());
        }
        self.must("retire", self.p.retire(&long)).await?;
        self.must("delete", self.p.delete(&long)).await?;
        Ok(())
    }

    async fn rule_parallel(&mut self, secret: &Secret) -> Step {
        let names: Vec<Name> = (0..self.suite.consumers)
            .map(|i| self.name(&format!("p{i}")))
            .collect();
        self.made.extend(names.iter().cloned());
        let this = &*self;
        let attempts = names.iter().map(|name| async move {
            let consumer = this.consumer(name);
            this.must("ensure", this.p.ensure(&consumer, secret))
                .await?;
            this.must("check", this.p.check(&consumer, secret)).await?;
            this.p.take_mended(name);
            Ok::<(), String>(())
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
            this.must("retire", this.p.retire(name)).await?;
            this.must("delete", this.p.delete(name)).await
        });
        let removed = futures::future::join_all(removals).await;
        match removed.into_iter().find_map(Result::err) {
            Some(why) => Err(why),
            None => Ok(()),
        }
    }

    /// Retires and deletes whatever the suite made and the backend still
    /// holds; what cannot be removed is named.
    async fn clean_up(&self) -> Vec<String> {
        let held = match self.held().await {
            Ok(held) => held,
            Err(why) => return vec![format!("cannot tell ({why})")],
        };
        let mut left = Vec::new();
        for h in held.iter().filter(|h| self.made.contains(&h.name)) {
            let removed = async {
                if !h.retired {
                    self.must("retire", self.p.retire(&h.name)).await?;
                }
                self.must("delete", self.p.delete(&h.name)).await
            };
            if let Err(why) = removed.await {
                left.push(format!("{} ({why})", h.name));
            }
        }
        left
    }
}

/// Runs every rule against `provisioner` and its backend; see the
/// [module docs](self).
pub async fn conform<P: Provisioner>(provisioner: &P, suite: &Suite) -> Report {
    let tag = random_hex();
    let prefix = format!("conform-{}-", &tag[..8]);
    let secret = |n: u8| Secret::new(format!("conform-{n}-{}{}", random_hex(), random_hex()));
    let (first, other, rotated) = (secret(1), secret(2), secret(3));
    let mut run = Run {
        p: provisioner,
        suite,
        prefix,
        secrets: vec![first.clone(), other.clone(), rotated.clone()],
        made: Vec::new(),
    };
    let (a, never) = (run.name("a"), run.name("never"));
    let mut verdicts = Vec::with_capacity(RULES.len());
    let mut say = |rule: &str, outcome: Result<Option<String>, String>| {
        verdicts.push(Verdict {
            rule: rule.replace("{n}", &suite.consumers.to_string()),
            outcome,
        });
    };

    let once = run.ensure(&a, &first).await;
    let twice = match once {
        Ok(()) => run
            .ensure(&a, &first)
            .await
            .map_err(|e| format!("the second {e}")),
        Err(e) => Err(e),
    };
    say(RULES[0], twice.map(|()| None));
    say(RULES[1], run.check(&a, &first).await.map(|()| None));
    say(RULES[2], run.rule_other_secret(&a, &other).await);
    let rotation = match run.ensure(&a, &rotated).await {
        Ok(()) => run.check(&a, &rotated).await,
        Err(e) => Err(e),
    };
    say(RULES[3], rotation.map(|()| None));
    say(RULES[4], run.rule_held(&a, &never).await.map(|()| None));
    say(RULES[5], run.rule_retire(&a, &rotated).await.map(|()| None));
    say(
        RULES[6],
        run.rule_re_enable(&a, &rotated).await.map(|()| None),
    );
    say(RULES[7], run.rule_delete(&a).await.map(|()| None));
    say(RULES[8], run.rule_long_name(&rotated).await.map(|()| None));
    say(RULES[9], run.rule_parallel(&rotated).await.map(|()| None));
    let left_behind = run.clean_up().await;
    Report {
        verdicts,
        left_behind,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{FakeError, FakeProvisioner};
    use async_trait::async_trait;

    #[tokio::test]
    async fn the_fake_provisioner_passes_every_rule_and_is_left_clean() {
        let fake = FakeProvisioner::new();
        let report = conform(&fake, &Suite::new("fake")).await;
        report.assert_passed();
        assert_eq!(report.verdicts.len(), RULES.len());
        let text = report.to_string();
        assert!(text.ends_with("10 passed, 0 failed"), "{text}");
        assert!(text.contains("ok   16 consumers in parallel"), "{text}");
        assert!(fake.with(|b| b.provisions.is_empty()), "cleaned up");
        assert!(!text.contains("conform-1-"), "no secret in the report");
    }

    #[tokio::test]
    async fn a_backend_that_is_down_fails_every_rule_naming_why() {
        let broken = FakeProvisioner::new();
        broken.with(|b| b.down = Some(FakeError::words("connection refused")));
        let report = conform(&broken, &Suite::new("fake")).await;
        let text = report.to_string();
        assert!(
            text.starts_with("FAIL ensure twice is idempotent: ensure failed (unreachable): connection refused\n"),
            "{text}"
        );
        assert!(text.ends_with("0 passed, 10 failed"), "{text}");
        assert!(
            text.contains(
                "left behind: cannot tell (held failed (unreachable): connection refused)"
            ),
            "{text}"
        );
    }

    #[tokio::test]
    async fn an_ensure_that_keeps_the_old_secret_fails_the_rotation_rule() {
        let fake = FakeProvisioner::new();
        fake.with(|b| b.keep_secrets = true);
        let report = conform(&fake, &Suite::new("fake")).await;
        let failed: Vec<&str> = report
            .verdicts
            .iter()
            .filter(|v| v.outcome.is_err())
            .map(|v| v.rule.as_str())
            .collect();
        assert_eq!(failed[0], RULES[3], "{report}");
        assert!(
            report.to_string().contains("FAIL ensure with a new secret (a rotation) makes check pass with it: check failed (credentials-rejected): password authentication failed"),
            "{report}"
        );
    }

    /// The fake, its check passing whatever the secret, saying `mended` or not.
    struct Lax(FakeProvisioner, bool);

    #[async_trait]
    impl Provisioner for Lax {
        type Error = FakeError;
        async fn ensure(&self, c: &Consumer, s: &Secret) -> Result<(), FakeError> {
            self.0.ensure(c, s).await
        }
        async fn check(&self, c: &Consumer, _: &Secret) -> Result<(), FakeError> {
            if self.1 {
                self.0
                    .with(|b| b.mended.insert(c.name.clone(), "password reset".into()));
            }
            self.0.with(|b| match b.provisions.get(&c.name) {
                Some(p) if p.retired => Err(FakeError::words("disabled")),
                _ => Ok(()),
            })
        }
        async fn held(&self) -> Result<Vec<Held>, FakeError> {
            self.0.held().await
        }
        async fn retire(&self, n: &Name) -> Result<(), FakeError> {
            self.0.retire(n).await
        }
        async fn re_enable(&self, n: &Name) -> Result<(), FakeError> {
            self.0.re_enable(n).await
        }
        async fn delete(&self, n: &Name) -> Result<(), FakeError> {
            self.0.delete(n).await
        }
        fn take_mended(&self, n: &Name) -> Option<String> {
            self.0.take_mended(n)
        }
    }

    #[tokio::test]
    async fn a_check_that_proves_nothing_fails_and_one_that_mends_and_says_so_passes() {
        let silent = conform(&Lax(FakeProvisioner::new(), false), &Suite::new("fake")).await;
        assert_eq!(silent.failed(), 1, "{silent}");
        assert!(
            silent.to_string().contains("FAIL check with another secret fails credentials-rejected: check passed with a secret"),
            "{silent}"
        );
        let mending = conform(&Lax(FakeProvisioner::new(), true), &Suite::new("fake")).await;
        mending.assert_passed();
        assert!(
            mending.to_string().contains("ok   check with another secret fails credentials-rejected (its check brings the secret it is given to the backend, and said so: password reset)"),
            "{mending}"
        );
    }
}
