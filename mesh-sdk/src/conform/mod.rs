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
//! println!("{report}"); // a start line, one line per rule, then "N passed, N failed"
//! report.assert_passed();
//! # }
//! ```
//!
//! The rules are [`RULES`], in that order, each building on the state the
//! ones before left (`mesh-provide conform --list` prints them). Those
//! marked [`Rule::by_hand`] need an oracle acting on the backend as a
//! person would ([`ByHand`], given as [`Suite::by_hand`]); without one they
//! are reported `skip`, with why.
//!
//! Every consumer it makes is named `conform-<random>-…`, which no real
//! consumer is, on machine `conform`. At its start it retires and deletes
//! every `conform-*` provision `held` lists (an earlier run's leftovers,
//! said on the report's first line); at its end it retires and deletes
//! what it made, and its last rule fails if `held` still lists a
//! `conform-*` name. Each call is bounded by [`Suite::timeout`].

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use mesh_protocol::{ModuleId, Name};
use mesh_runtime::Secret;

use crate::provisioner::Provisioner;

mod instances;
mod oracle;
mod rules;

/// One rule of the suite.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rule {
    /// The rule as a sentence, as its verdict names it (`N` is [`Suite::consumers`]).
    pub text: &'static str,
    /// Whether it needs the [`ByHand`] oracle (skipped without it).
    pub by_hand: bool,
}

const fn rule(text: &'static str) -> Rule {
    Rule {
        text,
        by_hand: false,
    }
}

const fn by_hand(text: &'static str) -> Rule {
    Rule {
        text,
        by_hand: true,
    }
}

/// Every rule, in the order the suite runs them: the one list of them
/// (docs/hooks.md's conformance section is held to it by a test).
pub const RULES: [Rule; 17] = [
    rule("ensure twice is idempotent"),
    rule("check passes after ensure"),
    // Or, for a provider whose check brings the secret it is given to the
    // backend (mesh-postgres, mesh-identity), passes and says so through
    // its result (`Served::Mended`).
    rule("check with another secret fails credentials-rejected"),
    rule("ensure with a new secret (a rotation) makes check pass with it"),
    rule("held lists what was made and nothing else"),
    rule("retire makes check fail and held say retired"),
    rule("re-enable makes check pass"),
    rule("delete removes it from held"),
    rule("a 63-byte name works"),
    rule("N consumers in parallel"),
    by_hand("a change by hand is mended by ensure and reported as mended"),
    by_hand("a provision it did not make is neither listed, retired nor deleted"),
    rule("names with _, - and digits side by side are each their own"),
    by_hand("no neighbour reaches another's provision"),
    rule("retiring and deleting a_b leaves its neighbours working and listed"),
    rule("a call cut off mid-way leaves nothing that breaks the next ensure"),
    rule("another instance's provision is neither listed, made, retired, re-enabled nor deleted"),
];

/// The last rule, run after the cleanup.
pub const LAST_RULE: Rule = rule("nothing of the suite's is left behind");

/// Every rule as `mesh-provide conform --list` prints it: one a line,
/// numbered, `(by-hand)` after those needing the oracle, the last rule last.
pub fn list() -> String {
    RULES
        .iter()
        .chain(std::iter::once(&LAST_RULE))
        .enumerate()
        .map(|(i, r)| {
            let mark = if r.by_hand { " (by-hand)" } else { "" };
            format!("{}. {}{mark}\n", i + 1, r.text)
        })
        .collect()
}

/// Why a [`ByHand`] action did not answer.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ByHandError {
    /// The oracle cannot do it (a hook answering `unsupported`): the rule is skipped.
    #[error("{0}")]
    Unsupported(String),
    /// It tried and failed: the rule fails.
    #[error("{0}")]
    Failed(String),
}

/// An oracle acting on the backend as a person would, outside the
/// provisioner (the `by-hand` verb of a hook). The suite uses it to make
/// what the provisioner did not, to change what it did, and to ask what a
/// consumer's login can reach.
#[async_trait]
pub trait ByHand: Send + Sync {
    /// Changes `consumer`'s provision as a person would (another password
    /// on its user), so check with its secret fails until ensure mends it.
    async fn change(&self, consumer: &Name) -> Result<(), ByHandError>;
    /// Makes a provision named `consumer` with `secret` as a person would:
    /// one the provisioner does not count as its own.
    async fn make(&self, consumer: &Name, secret: &Secret) -> Result<(), ByHandError>;
    /// Whether `consumer`'s provision works with `secret`.
    async fn works(&self, consumer: &Name, secret: &Secret) -> Result<bool, ByHandError>;
    /// Whether `who`, logged in with `secret`, can reach the provision of
    /// consumer `to` (its database, its keys, its vhost).
    async fn reach(&self, who: &Name, secret: &Secret, to: &Name) -> Result<bool, ByHandError>;
    /// Removes what [`make`](Self::make) made.
    async fn remove(&self, consumer: &Name) -> Result<(), ByHandError>;
    /// Whether anything named `consumer` is at the backend, made by anyone,
    /// whether `held` lists it or not (a half-made user, a database
    /// without its role): how the last rule finds what the suite left
    /// outside `held`. The default cannot tell, and the rule says so.
    async fn left(&self, consumer: &Name) -> Result<bool, ByHandError> {
        let _ = consumer;
        Err(ByHandError::Unsupported(
            "the by-hand oracle cannot tell what is at the backend outside held".into(),
        ))
    }
}

/// What kills whatever runs a call that was just cut off (a hook's
/// processes). In process, dropping the call's future is the cut and no
/// interrupt is needed.
#[async_trait]
pub trait Interrupt: Send + Sync {
    /// Called right after a call was cut off.
    async fn interrupt(&self);
}

/// The instance the suite acts as by default: `conform@conform`.
pub const PROVIDER: &str = "conform@conform";

/// The second instance the rule on instances asks as: `conform@conform-other`.
pub const OTHER_PROVIDER: &str = "conform@conform-other";

/// A constant instance name as a [`ModuleId`].
pub(crate) fn instance(text: &str) -> ModuleId {
    ModuleId::parse(text).expect("the suite's instances are valid names")
}

/// What the suite runs with.
#[derive(Clone)]
pub struct Suite {
    /// The provider instance every call is made for ([`PROVIDER`] unless
    /// set): what it makes is marked with it, and `held` as it lists
    /// only that. The rule on instances asks as [`OTHER_PROVIDER`] too.
    pub provider: ModuleId,
    /// The provision its consumers ask for (a provider may refuse others).
    pub provision: String,
    /// Their `options`.
    pub options: serde_json::Value,
    /// How many consumers the parallel rule makes at once.
    pub consumers: usize,
    /// Bound of each call.
    pub timeout: Duration,
    /// The oracle for the rules marked [`Rule::by_hand`] (skipped without it).
    pub by_hand: Option<Arc<dyn ByHand>>,
    /// Called after a call was cut off (see [`Interrupt`]).
    pub interrupt: Option<Arc<dyn Interrupt>>,
    /// How long a cut-off call's consumer may take to work again (a hook
    /// restarted behind a brake fails at once meanwhile).
    pub recovery: Duration,
}

impl fmt::Debug for Suite {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Suite")
            .field("provider", &self.provider)
            .field("provision", &self.provision)
            .field("options", &self.options)
            .field("consumers", &self.consumers)
            .field("timeout", &self.timeout)
            .field("by_hand", &self.by_hand.is_some())
            .field("interrupt", &self.interrupt.is_some())
            .field("recovery", &self.recovery)
            .finish()
    }
}

impl Suite {
    /// The suite for consumers of `provision`, as instance [`PROVIDER`]: no options, 16 consumers in
    /// parallel, 30 s a call, no oracle, no interrupt, 20 s to recover.
    pub fn new(provision: impl Into<String>) -> Suite {
        Suite {
            provider: instance(PROVIDER),
            provision: provision.into(),
            options: serde_json::json!({}),
            consumers: 16,
            timeout: Duration::from_secs(30),
            by_hand: None,
            interrupt: None,
            recovery: Duration::from_secs(20),
        }
    }

    /// This suite with the oracle `by_hand`.
    pub fn with_by_hand(mut self, by_hand: Arc<dyn ByHand>) -> Suite {
        self.by_hand = Some(by_hand);
        self
    }

    /// This suite with the `interrupt`.
    pub fn with_interrupt(mut self, interrupt: Arc<dyn Interrupt>) -> Suite {
        self.interrupt = Some(interrupt);
        self
    }
}

/// A rule's outcome.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// It held, with an optional note.
    Passed(Option<String>),
    /// It did not: why.
    Failed(String),
    /// It was not tried: why.
    Skipped(String),
}

impl Outcome {
    /// Passed without a note, or failed.
    fn of(step: Result<(), String>) -> Outcome {
        match step {
            Ok(()) => Outcome::Passed(None),
            Err(why) => Outcome::Failed(why),
        }
    }

    /// Passed with an optional note, or failed.
    fn noted(step: Result<Option<String>, String>) -> Outcome {
        match step {
            Ok(note) => Outcome::Passed(note),
            Err(why) => Outcome::Failed(why),
        }
    }

    /// Whether it failed.
    pub fn is_failed(&self) -> bool {
        matches!(self, Outcome::Failed(_))
    }
}

/// One rule's outcome.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verdict {
    /// The rule, as [`RULES`] says it (`N` replaced by the number).
    pub rule: String,
    /// What came of it.
    pub outcome: Outcome,
}

/// What the suite found at its start, and every rule's verdict.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Report {
    /// What it removed (or could not) of an earlier run before the rules.
    pub start: String,
    /// One verdict per rule, in order, [`LAST_RULE`] last.
    pub verdicts: Vec<Verdict>,
}

impl Report {
    fn count(&self, f: impl Fn(&Outcome) -> bool) -> usize {
        self.verdicts.iter().filter(|v| f(&v.outcome)).count()
    }

    /// How many rules passed.
    pub fn passed(&self) -> usize {
        self.count(|o| matches!(o, Outcome::Passed(_)))
    }

    /// How many rules failed.
    pub fn failed(&self) -> usize {
        self.count(Outcome::is_failed)
    }

    /// How many rules were skipped.
    pub fn skipped(&self) -> usize {
        self.count(|o| matches!(o, Outcome::Skipped(_)))
    }

    /// Whether no rule failed (skipped ones do not fail).
    pub fn all_passed(&self) -> bool {
        self.failed() == 0
    }

    /// The rules that failed, each as its sentence.
    pub fn failures(&self) -> Vec<&str> {
        self.verdicts
            .iter()
            .filter(|v| v.outcome.is_failed())
            .map(|v| v.rule.as_str())
            .collect()
    }

    /// Panics with the whole report unless no rule failed.
    ///
    /// # Panics
    /// When a rule failed.
    pub fn assert_passed(&self) {
        assert!(self.all_passed(), "the conformance suite failed:\n{self}");
    }
}

/// The start line, one line per rule (`ok   rule`, `ok   rule (note)`,
/// `FAIL rule: why` or `skip rule: why`), then `N passed, N failed` (and
/// `, N skipped` when some were).
impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "start: {}", self.start)?;
        for verdict in &self.verdicts {
            match &verdict.outcome {
                Outcome::Passed(None) => writeln!(f, "ok   {}", verdict.rule)?,
                Outcome::Passed(Some(note)) => writeln!(f, "ok   {} ({note})", verdict.rule)?,
                Outcome::Failed(why) => writeln!(f, "FAIL {}: {why}", verdict.rule)?,
                Outcome::Skipped(why) => writeln!(f, "skip {}: {why}", verdict.rule)?,
            }
        }
        write!(f, "{} passed, {} failed", self.passed(), self.failed())?;
        match self.skipped() {
            0 => Ok(()),
            n => write!(f, ", {n} skipped"),
        }
    }
}

/// Runs every rule against `provisioner` and its backend; see the
/// [module docs](self).
pub async fn conform<P: Provisioner>(provisioner: &P, suite: &Suite) -> Report {
    rules::run(provisioner, suite).await
}

#[cfg(test)]
mod tests {
    #[test]
    fn only_the_suites_own_names_are_cleaned_up() {
        use super::rules::is_suites;
        for (name, suites) in [
            ("conform-0a1b2c3d-a_b", true),
            ("conform-0a1b2c3d-x", true),
            ("conform-api", false),
            ("conform-0a1b2c3d", false),
            ("conform-0A1B2C3D-x", false),
            ("conform-0a1b2c3g-x", false),
            ("myconform-0a1b2c3d-x", false),
        ] {
            assert_eq!(is_suites(name), suites, "{name}");
        }
    }
    use std::collections::{HashMap, HashSet};
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    use async_trait::async_trait;

    use super::*;
    use crate::contributions::Consumer;
    use crate::internals::{FakeError, FakeProvision, FakeProvisioner};
    use crate::provisioner::{Held, Served};

    /// The fake's oracle: changes its provisions, keeps what it makes by hand apart.
    #[derive(Default)]
    struct FakeHand {
        fake: FakeProvisioner,
        theirs: Mutex<HashMap<Name, String>>,
        /// Names left at the backend that held does not list.
        ghosts: Arc<Mutex<HashSet<Name>>>,
    }

    #[async_trait]
    impl ByHand for FakeHand {
        async fn change(&self, consumer: &Name) -> Result<(), ByHandError> {
            self.fake.with(|b| match b.provisions.get_mut(consumer) {
                Some(p) => {
                    p.secret = "changed by hand".into();
                    Ok(())
                }
                None => Err(ByHandError::Failed(format!("no {consumer}"))),
            })
        }
        async fn make(&self, consumer: &Name, secret: &Secret) -> Result<(), ByHandError> {
            let mut theirs = self.theirs.lock().unwrap();
            theirs.insert(consumer.clone(), secret.expose().to_owned());
            Ok(())
        }
        async fn works(&self, consumer: &Name, secret: &Secret) -> Result<bool, ByHandError> {
            let theirs = self.theirs.lock().unwrap();
            Ok(theirs.get(consumer).map(String::as_str) == Some(secret.expose()))
        }
        async fn reach(&self, who: &Name, secret: &Secret, to: &Name) -> Result<bool, ByHandError> {
            Ok(who == to
                && self.fake.with(|b| {
                    b.provisions
                        .get(who)
                        .is_some_and(|p| p.secret == secret.expose())
                }))
        }
        async fn remove(&self, consumer: &Name) -> Result<(), ByHandError> {
            self.theirs.lock().unwrap().remove(consumer);
            Ok(())
        }
        async fn left(&self, consumer: &Name) -> Result<bool, ByHandError> {
            Ok(self.fake.with(|b| b.provisions.contains_key(consumer))
                || self.theirs.lock().unwrap().contains_key(consumer)
                || self.ghosts.lock().unwrap().contains(consumer))
        }
    }

    /// The fake and a suite with its oracle (1 s to recover).
    fn with_hand(fake: &FakeProvisioner) -> Suite {
        let mut suite = Suite::new("fake").with_by_hand(Arc::new(FakeHand {
            fake: fake.clone(),
            theirs: Mutex::default(),
            ghosts: Arc::default(),
        }));
        suite.recovery = Duration::from_secs(1);
        suite
    }

    #[tokio::test]
    async fn the_fake_provisioner_passes_every_rule_and_is_left_clean() {
        let fake = FakeProvisioner::new();
        let report = conform(&fake, &with_hand(&fake)).await;
        report.assert_passed();
        assert_eq!(report.verdicts.len(), RULES.len() + 1);
        let text = report.to_string();
        assert!(
            text.starts_with(
                "start: nothing an earlier run left\nok   ensure twice is idempotent\n"
            ),
            "{text}"
        );
        assert!(text.ends_with("17 passed, 0 failed, 1 skipped"), "{text}");
        assert!(text.contains("ok   16 consumers in parallel"), "{text}");
        assert!(text.contains("ok   a change by hand is mended by ensure and reported as mended (mended: secret set to the minted one)"), "{text}");
        // The fake answers at once: nothing can be cut, and the rule says
        // it tested nothing rather than passing.
        assert!(
            text.contains("skip a call cut off mid-way leaves nothing that breaks the next ensure: an ensure took "),
            "{text}"
        );
        assert!(
            text.contains("nothing was cut, so nothing was tested"),
            "{text}"
        );
        assert!(
            text.contains("ok   nothing of the suite's is left behind (held lists none, and by-hand left finds none of the "),
            "{text}"
        );
        assert!(
            text.contains("ok   another instance's provision is neither listed, made, retired, re-enabled nor deleted (as conform@conform-other: ensure refused (refused), retire refused, re-enable refused, delete refused)"),
            "{text}"
        );
        assert!(fake.with(|b| b.provisions.is_empty()), "cleaned up");
        assert!(!text.contains("conform-s-"), "no secret in the report");
    }

    #[tokio::test]
    async fn without_an_oracle_its_rules_are_skipped_saying_why() {
        let fake = FakeProvisioner::new();
        let report = conform(&fake, &Suite::new("fake")).await;
        let text = report.to_string();
        assert!(text.ends_with("14 passed, 0 failed, 4 skipped"), "{text}");
        assert!(
            text.contains("\nskip no neighbour reaches another's provision: no by-hand oracle given (Suite::by_hand)\n"),
            "{text}"
        );
        report.assert_passed();
    }

    #[tokio::test]
    async fn an_earlier_runs_leftovers_are_removed_first_and_a_persons_are_not() {
        let fake = FakeProvisioner::new();
        for name in ["conform-0badf00d-p3", "conform-0badf00d-p4", "app"] {
            fake.with(|b| {
                b.provisions.insert(
                    Name::parse(name).unwrap(),
                    FakeProvision::made_by(&instance(PROVIDER), "s"),
                )
            });
        }
        let report = conform(&fake, &with_hand(&fake)).await;
        report.assert_passed();
        assert_eq!(
            report.start,
            "retired and deleted 2 an earlier run left: conform-0badf00d-p3, conform-0badf00d-p4"
        );
        let left: Vec<String> = fake.with(|b| b.provisions.keys().map(|n| n.to_string()).collect());
        assert_eq!(left, ["app"]);
    }

    #[tokio::test]
    async fn a_backend_that_is_down_fails_every_rule_but_the_skipped_naming_why() {
        let broken = FakeProvisioner::new();
        broken.with(|b| b.down = Some(FakeError::message("connection refused")));
        let report = conform(&broken, &Suite::new("fake")).await;
        let text = report.to_string();
        assert!(
            text.starts_with("start: cannot tell what an earlier run left (held failed (unreachable): connection refused)\nFAIL ensure twice is idempotent: ensure failed (unreachable): connection refused\n"),
            "{text}"
        );
        assert!(text.ends_with("0 passed, 15 failed, 3 skipped"), "{text}");
        assert!(
            text.contains("FAIL nothing of the suite's is left behind: held failed (unreachable): connection refused"),
            "{text}"
        );
    }

    #[tokio::test]
    async fn an_ensure_that_keeps_the_old_secret_fails_the_rotation_rule() {
        let fake = FakeProvisioner::new();
        fake.with(|b| b.keep_secrets = true);
        let report = conform(&fake, &Suite::new("fake")).await;
        assert_eq!(report.failures()[0], RULES[3].text, "{report}");
        // What fails after it on the same consumer says it may be its knock-on.
        let later: Vec<&Verdict> = report.verdicts[4..8]
            .iter()
            .filter(|v| v.outcome.is_failed())
            .collect();
        assert!(!later.is_empty(), "{report}");
        for verdict in later {
            let Outcome::Failed(why) = &verdict.outcome else {
                unreachable!()
            };
            assert!(
                why.ends_with("(after \"ensure with a new secret (a rotation) makes check pass with it\" failed above on the same consumer: this may be its knock-on)"),
                "{why}"
            );
        }
        assert!(
            report.to_string().contains("FAIL ensure with a new secret (a rotation) makes check pass with it: check failed (credentials-rejected): password authentication failed"),
            "{report}"
        );
    }

    /// The fake with one fault planted.
    #[derive(Default)]
    struct Odd {
        fake: FakeProvisioner,
        /// Check passes whatever the secret; `Some(true)`: saying it mended.
        lax: Option<bool>,
        /// Ensure makes a user, waits 20 ms, then brings its secret; a user
        /// without a secret makes the next ensure fail.
        half_made: Option<Mutex<HashSet<Name>>>,
        /// Delete of the parallel rule's consumers says done and does nothing.
        sticky: bool,
        /// Ensure brings the secret back without saying it mended anything.
        silent: bool,
        /// Held lists what the oracle made by hand too.
        lists_theirs: Option<Arc<FakeHand>>,
        /// Retire and delete treat `_` as any character.
        wildcard: bool,
        /// One mark for every instance (as mesh-postgres's was): held
        /// lists, and every call acts on, what any instance made.
        one_mark: bool,
        /// Delete of the parallel rule's consumers leaves a part at the
        /// backend that held does not list (a database without its role).
        ghost: bool,
        /// What `ghost` left.
        ghosts: Arc<Mutex<HashSet<Name>>>,
    }

    impl Odd {
        /// The instance a call acts as: with one mark, the one that made `n`.
        fn acting(&self, provider: &ModuleId, n: &Name) -> ModuleId {
            let maker = self
                .fake
                .with(|b| b.provisions.get(n).and_then(|p| p.by.clone()));
            match (self.one_mark, maker) {
                (true, Some(maker)) => maker,
                _ => provider.clone(),
            }
        }

        fn matching(&self, name: &Name) -> Vec<Name> {
            self.fake.with(|b| {
                b.provisions
                    .keys()
                    .filter(|n| {
                        n.as_str().len() == name.as_str().len()
                            && n.as_str()
                                .bytes()
                                .zip(name.as_str().bytes())
                                .all(|(x, y)| x == y || (self.wildcard && y == b'_'))
                    })
                    .cloned()
                    .collect()
            })
        }
    }

    #[async_trait]
    impl Provisioner for Odd {
        type Error = FakeError;
        async fn ensure(&self, c: &Consumer, s: &Secret) -> Result<Served, FakeError> {
            if let Some(half) = &self.half_made {
                if half.lock().unwrap().contains(&c.name) {
                    return Err(FakeError::message("role exists without a password"));
                }
                if self.fake.with(|b| !b.provisions.contains_key(&c.name)) {
                    half.lock().unwrap().insert(c.name.clone());
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    half.lock().unwrap().remove(&c.name);
                }
            }
            let c = &Consumer {
                provider: self.acting(&c.provider, &c.name),
                ..c.clone()
            };
            let served = self.fake.ensure(c, s).await?;
            Ok(if self.silent { Served::AsIs } else { served })
        }
        async fn check(&self, c: &Consumer, s: &Secret) -> Result<Served, FakeError> {
            let Some(says) = self.lax else {
                return self.fake.check(c, s).await;
            };
            self.fake.with(|b| match b.provisions.get(&c.name) {
                Some(p) if p.retired => Err(FakeError::message("disabled")),
                _ if says => Ok(Served::mended("password reset")),
                _ => Ok(Served::AsIs),
            })
        }
        async fn held(&self, provider: &ModuleId) -> Result<Vec<Held>, FakeError> {
            let mut held = self.fake.held(provider).await?;
            if self.one_mark {
                held = self.fake.with(|b| {
                    b.provisions
                        .iter()
                        .map(|(name, p)| Held {
                            name: name.clone(),
                            retired: p.retired,
                        })
                        .collect()
                });
            }
            if let Some(hand) = &self.lists_theirs {
                held.extend(
                    hand.theirs
                        .lock()
                        .unwrap()
                        .keys()
                        .cloned()
                        .map(Held::active),
                );
            }
            Ok(held)
        }
        async fn retire(&self, provider: &ModuleId, n: &Name) -> Result<(), FakeError> {
            for n in self.matching(n) {
                self.fake.retire(&self.acting(provider, &n), &n).await?;
            }
            Ok(())
        }
        async fn re_enable(&self, provider: &ModuleId, n: &Name) -> Result<(), FakeError> {
            self.fake.re_enable(&self.acting(provider, n), n).await
        }
        async fn delete(&self, provider: &ModuleId, n: &Name) -> Result<(), FakeError> {
            if self.sticky
                && n.as_str()
                    .rsplit('-')
                    .next()
                    .is_some_and(|t| t.starts_with('p'))
            {
                return Ok(());
            }
            for n in self.matching(n) {
                self.fake.delete(&self.acting(provider, &n), &n).await?;
                if self.ghost
                    && n.as_str()
                        .rsplit('-')
                        .next()
                        .is_some_and(|t| t.starts_with('p'))
                {
                    self.ghosts.lock().unwrap().insert(n);
                }
            }
            Ok(())
        }
    }

    /// The suite over `odd` with the oracle over its fake.
    async fn odd_report(odd: Odd) -> Report {
        let hand = Arc::new(FakeHand {
            fake: odd.fake.clone(),
            theirs: Mutex::default(),
            ghosts: Arc::clone(&odd.ghosts),
        });
        let odd = match odd.lists_theirs {
            Some(_) => Odd {
                lists_theirs: Some(Arc::clone(&hand)),
                ..odd
            },
            None => odd,
        };
        let mut suite = Suite::new("fake").with_by_hand(hand);
        suite.recovery = Duration::from_secs(1);
        suite.consumers = 4;
        conform(&odd, &suite).await
    }

    #[tokio::test]
    async fn a_check_that_proves_nothing_fails_and_one_that_mends_and_says_so_passes() {
        let silent = odd_report(Odd {
            lax: Some(false),
            ..Odd::default()
        })
        .await;
        assert!(
            silent.to_string().contains(
                "FAIL check with another secret fails credentials-rejected: check passed with a secret"
            ),
            "{silent}"
        );
        let mending = odd_report(Odd {
            lax: Some(true),
            ..Odd::default()
        })
        .await;
        mending.assert_passed();
        assert!(
            mending.to_string().contains("ok   check with another secret fails credentials-rejected (its check brings the secret it is given to the backend, and said so: password reset)"),
            "{mending}"
        );
    }

    /// Each planted fault fails exactly its rule, saying why.
    #[tokio::test]
    async fn each_planted_fault_fails_exactly_its_rule() {
        let cases: Vec<(Odd, &str, &str)> = vec![
            (
                Odd { sticky: true, ..Odd::default() },
                LAST_RULE.text,
                "held still lists 4 it said it deleted: conform-",
            ),
            (
                Odd { silent: true, ..Odd::default() },
                RULES[10].text,
                "ensure after the change by hand did not say it mended anything",
            ),
            (
                Odd { lists_theirs: Some(Arc::default()), ..Odd::default() },
                RULES[11].text,
                "-theirs, which it did not make",
            ),
            (
                Odd { wildcard: true, ..Odd::default() },
                RULES[14].text,
                "after retiring a_b, conform-",
            ),
            (
                Odd { half_made: Some(Mutex::default()), ..Odd::default() },
                RULES[15].text,
                " ms, it did not work again within 1s: ensure failed (refused): role exists without a password",
            ),
            (
                Odd { ghost: true, ..Odd::default() },
                LAST_RULE.text,
                "4 it tried to make are still at the backend though held lists none (made half-way?): conform-",
            ),
            (
                Odd { one_mark: true, ..Odd::default() },
                RULES[16].text,
                "-inst, which conform@conform made: conform@conform-other would retire it",
            ),
        ];
        for (odd, rule, why) in cases {
            let report = odd_report(odd).await;
            assert_eq!(report.failures(), [rule], "{report}");
            let text = report.to_string();
            let line = text.lines().find(|l| l.starts_with("FAIL")).unwrap();
            assert!(line.contains(why), "{rule}: {line}");
        }
    }
}
