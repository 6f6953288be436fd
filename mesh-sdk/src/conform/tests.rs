use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;

use super::*;
use crate::contributions::Consumer;
use crate::provisioner::Held;
use crate::testing::{FakeError, FakeProvision, FakeProvisioner};

/// The fake's oracle: changes its provisions, keeps what it makes by hand apart.
#[derive(Default)]
struct FakeHand {
    fake: FakeProvisioner,
    theirs: Mutex<HashMap<Name, String>>,
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
    async fn reach(
        &self,
        consumer: &Name,
        secret: &Secret,
        target: &Name,
    ) -> Result<bool, ByHandError> {
        Ok(consumer == target
            && self.fake.with(|b| {
                b.provisions
                    .get(consumer)
                    .is_some_and(|p| p.secret == secret.expose())
            }))
    }
    async fn remove(&self, consumer: &Name) -> Result<(), ByHandError> {
        self.theirs.lock().unwrap().remove(consumer);
        Ok(())
    }
}

/// The fake and a suite with its oracle (1 s to recover).
fn with_hand(fake: &FakeProvisioner) -> Suite {
    let mut suite = Suite::new("fake").with_by_hand(Arc::new(FakeHand {
        fake: fake.clone(),
        theirs: Mutex::default(),
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
        text.starts_with("start: nothing an earlier run left\nok   ensure twice is idempotent\n"),
        "{text}"
    );
    assert!(text.ends_with("17 passed, 0 failed"), "{text}");
    assert!(text.contains("ok   16 consumers in parallel"), "{text}");
    assert!(text.contains("ok   a change by hand is mended by ensure and reported as mended (mended: secret set to the minted one)"), "{text}");
    assert!(
        text.contains("ok   a call cut off mid-way leaves nothing that breaks the next ensure (an ensure took "),
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
    assert!(text.ends_with("14 passed, 0 failed, 3 skipped"), "{text}");
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
                FakeProvision {
                    secret: "s".into(),
                    retired: false,
                },
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
    broken.with(|b| b.down = Some(FakeError::words("connection refused")));
    let report = conform(&broken, &Suite::new("fake")).await;
    let text = report.to_string();
    assert!(
        text.starts_with("start: cannot tell what an earlier run left (held failed (unreachable): connection refused)\nFAIL ensure twice is idempotent: ensure failed (unreachable): connection refused\n"),
        "{text}"
    );
    assert!(text.ends_with("0 passed, 14 failed, 3 skipped"), "{text}");
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
    assert_eq!(report.failures()[0], RULES[3].words, "{report}");
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
}

impl Odd {
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
    async fn ensure(&self, c: &Consumer, s: &Secret) -> Result<(), FakeError> {
        if let Some(half) = &self.half_made {
            if half.lock().unwrap().contains(&c.name) {
                return Err(FakeError::words("role exists without a password"));
            }
            if self.fake.with(|b| !b.provisions.contains_key(&c.name)) {
                half.lock().unwrap().insert(c.name.clone());
                tokio::time::sleep(Duration::from_millis(20)).await;
                half.lock().unwrap().remove(&c.name);
            }
        }
        self.fake.ensure(c, s).await?;
        if self.silent {
            self.fake.take_mended(&c.name);
        }
        Ok(())
    }
    async fn check(&self, c: &Consumer, s: &Secret) -> Result<(), FakeError> {
        let Some(says) = self.lax else {
            return self.fake.check(c, s).await;
        };
        if says {
            self.fake
                .with(|b| b.mended.insert(c.name.clone(), "password reset".into()));
        }
        self.fake.with(|b| match b.provisions.get(&c.name) {
            Some(p) if p.retired => Err(FakeError::words("disabled")),
            _ => Ok(()),
        })
    }
    async fn held(&self) -> Result<Vec<Held>, FakeError> {
        let mut held = self.fake.held().await?;
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
    async fn retire(&self, n: &Name) -> Result<(), FakeError> {
        for n in self.matching(n) {
            self.fake.retire(&n).await?;
        }
        Ok(())
    }
    async fn re_enable(&self, n: &Name) -> Result<(), FakeError> {
        self.fake.re_enable(n).await
    }
    async fn delete(&self, n: &Name) -> Result<(), FakeError> {
        if self.sticky
            && n.as_str()
                .rsplit('-')
                .next()
                .is_some_and(|t| t.starts_with('p'))
        {
            return Ok(());
        }
        for n in self.matching(n) {
            self.fake.delete(&n).await?;
        }
        Ok(())
    }
    fn take_mended(&self, n: &Name) -> Option<String> {
        self.fake.take_mended(n)
    }
}

/// The suite over `odd` with the oracle over its fake.
async fn odd_report(odd: Odd) -> Report {
    let hand = Arc::new(FakeHand {
        fake: odd.fake.clone(),
        theirs: Mutex::default(),
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
            LAST_RULE.words,
            "held still lists 4 it said it deleted: conform-",
        ),
        (
            Odd { silent: true, ..Odd::default() },
            RULES[10].words,
            "ensure after the change by hand did not say it mended anything",
        ),
        (
            Odd { lists_theirs: Some(Arc::default()), ..Odd::default() },
            RULES[11].words,
            "-theirs, which it did not make",
        ),
        (
            Odd { wildcard: true, ..Odd::default() },
            RULES[14].words,
            "after retiring a_b, conform-",
        ),
        (
            Odd { half_made: Some(Mutex::default()), ..Odd::default() },
            RULES[15].words,
            " ms, it did not work again within 1s: ensure failed (refused): role exists without a password",
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
