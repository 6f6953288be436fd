//! The rules past the basic ones: those asking the [`ByHand`] oracle, the
//! neighbours' isolation, a call cut off mid-way, and the cleanup at both
//! ends of a run.

use std::sync::Arc;
use std::time::Duration;

use mesh_protocol::Name;
use mesh_runtime::Secret;

use super::rules::{is_suites, names_listed, Run, Step};
use super::{ByHand, ByHandError, Outcome};
use crate::provisioner::Provisioner;

/// How many ensures the cut rule cuts off at most (a serve hook's restart
/// brake doubles with each kill: 1 s, 2 s, 4 s, 8 s, 16 s).
const CUTS: usize = 5;

/// The tails of the neighbours' names, `a_b` first; the last is filled to 63 bytes.
const NEIGHBOURS: [&str; 5] = ["a_b", "acb", "a-b", "a0b", "a_b-"];

/// Neighbours, each with its own secret: `a_b` first.
pub(super) struct Neighbours(Vec<(Name, Secret)>);

impl<P: Provisioner> Run<'_, P> {
    /// The oracle, or why its rules are skipped.
    fn oracle(&self) -> Result<&Arc<dyn ByHand>, Outcome> {
        self.suite
            .by_hand
            .as_ref()
            .ok_or_else(|| Outcome::Skipped("no by-hand oracle given (Suite::by_hand)".into()))
    }

    /// An oracle's refusal as the rule's outcome.
    fn by_hand_outcome(&self, what: &str, error: ByHandError) -> Outcome {
        match error {
            ByHandError::Unsupported(why) => Outcome::Skipped(self.redacted(&why)),
            ByHandError::Failed(why) => {
                Outcome::Failed(format!("by-hand {what} failed: {}", self.redacted(&why)))
            }
        }
    }

    /// Retires and deletes every `conform-*` provision held lists (an
    /// earlier run's); the report's start line.
    pub(super) async fn clean_earlier(&self) -> String {
        let held = match self.held().await {
            Ok(held) => held,
            Err(why) => return format!("cannot tell what an earlier run left ({why})"),
        };
        let earlier: Vec<_> = held
            .into_iter()
            .filter(|h| is_suites(h.name.as_str()))
            .collect();
        if earlier.is_empty() {
            return "nothing an earlier run left".into();
        }
        let (mut removed, mut kept) = (Vec::new(), Vec::new());
        for h in earlier {
            let removal = async {
                if !h.retired {
                    self.retire(&h.name).await?;
                }
                self.must("delete", self.p.delete(&self.provider, &h.name))
                    .await
            };
            match removal.await {
                Ok(()) => removed.push(h.name),
                Err(why) => kept.push(format!("{} ({why})", h.name)),
            }
        }
        let mut line = format!(
            "retired and deleted {} an earlier run left: {}",
            removed.len(),
            names_listed(&removed)
        );
        if !kept.is_empty() {
            line.push_str(&format!("; could not remove {}", kept.join(", ")));
        }
        line
    }

    /// By-hand change, then check fails, then ensure mends and says so.
    pub(super) async fn rule_mended(&self) -> Outcome {
        let oracle = match self.oracle() {
            Ok(oracle) => oracle,
            Err(skip) => return skip,
        };
        let (m, secret) = (self.name("mended"), self.secret());
        if let Err(why) = self.ensure(&m, &secret).await {
            return Outcome::Failed(why);
        }
        if let Err(error) = oracle.change(&m).await {
            return self.by_hand_outcome("change", error);
        }
        let consumer = self.consumer(&m);
        match self
            .bounded("check", self.p.check(&consumer, &secret))
            .await
        {
            Err(why) => return Outcome::Failed(why),
            Ok(Ok(served)) => {
                return match served.into_mended() {
                    Some(mended) => Outcome::Passed(Some(format!(
                        "its check brought it back and said so: {}",
                        self.redacted(&mended)
                    ))),
                    None => Outcome::Failed(
                        "check passed after the change by hand, and said nothing was mended".into(),
                    ),
                }
            }
            Ok(Err(_)) => {}
        }
        let mended = match self.ensure(&m, &secret).await {
            Ok(mended) => mended,
            Err(why) => return Outcome::Failed(why),
        };
        let Some(mended) = mended else {
            return Outcome::Failed(
                "ensure after the change by hand did not say it mended anything".into(),
            );
        };
        match self.check(&m, &secret).await {
            Ok(_) => Outcome::Passed(Some(format!("mended: {}", self.redacted(&mended)))),
            Err(why) => Outcome::Failed(format!(
                "ensure said it mended it ({}), but {why}",
                self.redacted(&mended)
            )),
        }
    }

    /// By-hand make; not listed, not retired, re-enabled or deleted; by-hand remove.
    pub(super) async fn rule_not_made(&self) -> Outcome {
        let oracle = match self.oracle() {
            Ok(oracle) => oracle,
            Err(skip) => return skip,
        };
        let (theirs, secret) = (self.name("theirs"), self.secret());
        if let Err(error) = oracle.make(&theirs, &secret).await {
            return self.by_hand_outcome("make", error);
        }
        let outcome = self.untouched(oracle, &theirs, &secret).await;
        match oracle.remove(&theirs).await {
            Err(error) if !outcome.is_failed() => self.by_hand_outcome("remove", error),
            _ => outcome,
        }
    }

    async fn untouched(&self, oracle: &Arc<dyn ByHand>, theirs: &Name, secret: &Secret) -> Outcome {
        let works = |after: &'static str| async move {
            match oracle.works(theirs, secret).await {
                Ok(true) => Ok(()),
                Ok(false) => Err(Outcome::Failed(format!(
                    "{theirs}, made by hand, no longer works {after}"
                ))),
                Err(error) => Err(self.by_hand_outcome("works", error)),
            }
        };
        let listed = || async {
            match self.held_as(theirs).await {
                Ok(None) => Ok(()),
                Ok(Some(_)) => Err(Outcome::Failed(format!(
                    "held lists {theirs}, which it did not make"
                ))),
                Err(why) => Err(Outcome::Failed(why)),
            }
        };
        let steps = async {
            works("(by-hand works says no for what by-hand make made: the oracle proves nothing)")
                .await?;
            listed().await?;
            let mut said = Vec::new();
            for what in ["retire", "re-enable", "delete"] {
                let call = match what {
                    "retire" => self.p.retire(&self.provider, theirs),
                    "re-enable" => self.p.re_enable(&self.provider, theirs),
                    _ => self.p.delete(&self.provider, theirs),
                };
                let answer = self.bounded(what, call).await.map_err(Outcome::Failed)?;
                said.push(match answer {
                    Ok(()) => format!("{what} did nothing"),
                    Err(_) => format!("{what} refused"),
                });
                works(match what {
                    "retire" => "after retire",
                    "re-enable" => "after re-enable",
                    _ => "after delete",
                })
                .await?;
            }
            listed().await?;
            Ok::<_, Outcome>(said.join(", "))
        };
        match steps.await {
            Ok(said) => Outcome::Passed(Some(said)),
            Err(outcome) => outcome,
        }
    }

    /// The neighbours' names and secrets.
    pub(super) fn neighbours(&self) -> Neighbours {
        Neighbours(
            NEIGHBOURS
                .iter()
                .map(|tail| {
                    let mut name = format!("{}{tail}", self.prefix);
                    if tail.ends_with('-') {
                        let fill = "0_9-".chars().cycle();
                        name.extend(fill.take(63 - name.len()));
                    }
                    (
                        Name::parse(&name).expect("a neighbour's name is a name"),
                        self.secret(),
                    )
                })
                .collect(),
        )
    }

    /// Each neighbour made and checked; none checks with another's secret.
    pub(super) async fn rule_isolated(&self, n: &Neighbours) -> Result<Option<String>, String> {
        for (name, secret) in &n.0 {
            self.ensure(name, secret).await?;
            self.check(name, secret).await?;
        }
        let mut mended = 0;
        for (a, own) in &n.0 {
            for (b, other) in n.0.iter().filter(|(b, _)| b != a) {
                let consumer = self.consumer(a);
                match self
                    .bounded("check", self.p.check(&consumer, other))
                    .await?
                {
                    Err(_) => {}
                    Ok(crate::provisioner::Served::Mended(_)) => {
                        mended += 1;
                        self.ensure(a, own).await?;
                    }
                    Ok(crate::provisioner::Served::AsIs) => {
                        return Err(format!("check of {a} passed with {b}'s secret"))
                    }
                }
            }
        }
        for (name, secret) in &n.0 {
            self.check(name, secret).await?;
        }
        let names: Vec<&str> =
            n.0.iter()
                .map(|(n, _)| &n.as_str()[self.prefix.len()..])
                .collect();
        let mut note = format!("{}, the last 63 bytes", names[..4].join(", "));
        if mended > 0 {
            note.push_str(&format!(
                "; its check brought a neighbour's secret {mended} times and said so"
            ));
        }
        Ok(Some(note))
    }

    /// By-hand reach: each reaches its own, none another's.
    pub(super) async fn rule_reach(&self, n: &Neighbours) -> Outcome {
        let oracle = match self.oracle() {
            Ok(oracle) => oracle,
            Err(skip) => return skip,
        };
        for (a, secret) in &n.0 {
            for (b, _) in &n.0 {
                match oracle.reach(a, secret, b).await {
                    Err(error) => return self.by_hand_outcome("reach", error),
                    Ok(false) if a == b => {
                        return Outcome::Failed(format!(
                            "by-hand reach says {a} cannot reach its own provision: the oracle proves nothing"
                        ))
                    }
                    Ok(true) if a != b => {
                        return Outcome::Failed(format!("{a} reaches {b}'s provision"))
                    }
                    Ok(_) => {}
                }
            }
        }
        Outcome::Passed(None)
    }

    /// Retire and delete `a_b`; its neighbours still check and are listed.
    pub(super) async fn rule_retire_neighbour(&self, n: &Neighbours) -> Step {
        let (a_b, secret) = &n.0[0];
        let others = &n.0[1..];
        self.retire(a_b).await?;
        let consumer = self.consumer(a_b);
        if self
            .bounded("check", self.p.check(&consumer, secret))
            .await?
            .is_ok()
        {
            return Err(format!("check of {a_b} passed after its retire"));
        }
        self.neighbours_intact(others, "retiring").await?;
        if self.held_as(a_b).await? != Some(true) {
            return Err(format!(
                "held does not list {a_b} as retired after its retire"
            ));
        }
        self.delete(a_b).await?;
        self.neighbours_intact(others, "deleting").await?;
        if self.held_as(a_b).await?.is_some() {
            return Err(format!("held still lists {a_b} after its delete"));
        }
        Ok(())
    }

    async fn neighbours_intact(&self, others: &[(Name, Secret)], after: &str) -> Step {
        for (name, secret) in others {
            self.check(name, secret)
                .await
                .map_err(|why| format!("after {after} a_b, {name}'s {why}"))?;
        }
        let held = self.held().await?;
        for (name, _) in others {
            match held.iter().find(|h| &h.name == name) {
                Some(h) if !h.retired => {}
                Some(_) => return Err(format!("after {after} a_b, held lists {name} as retired")),
                None => return Err(format!("after {after} a_b, held no longer lists {name}")),
            }
        }
        Ok(())
    }

    /// An ensure of a fresh consumer timed (T); then ensures of fresh
    /// consumers cut off at T/2, and on by halves (later after a cut that
    /// came before anything was begun, earlier after one that finished), at
    /// most [`CUTS`] times, until one was cut mid-way (held lists what it
    /// began); each cut one must then ensure and check again within
    /// [`Suite::recovery`](super::Suite::recovery).
    pub(super) async fn rule_cut(&self) -> Outcome {
        match self.cut().await {
            Ok(Ok(note)) => Outcome::Passed(Some(note)),
            Ok(Err(nothing)) => Outcome::Skipped(nothing),
            Err(why) => Outcome::Failed(why),
        }
    }

    /// The cut rule: what it saw (`Ok(Ok(note))`), why it could cut
    /// nothing (`Ok(Err(why))`: it tested nothing), or why it failed.
    async fn cut(&self) -> Result<Result<String, String>, String> {
        let (timed, secret) = (self.name("cut"), self.secret());
        let start = tokio::time::Instant::now();
        self.ensure(&timed, &secret).await?;
        let whole = start.elapsed();
        if whole < Duration::from_millis(2) {
            return Ok(Err(format!(
                "an ensure took {} µs, too quick to cut mid-way: nothing was cut, so nothing was tested",
                whole.as_micros()
            )));
        }
        let (mut early, mut late) = (Duration::ZERO, whole);
        let mut said = Vec::new();
        for i in 0..CUTS {
            let at = (early + late) / 2;
            let (k, secret) = (self.name(&format!("cut{i}")), self.secret());
            self.making(&k);
            let consumer = self.consumer(&k);
            let call = self.p.ensure(&consumer, &secret);
            let ms = at.as_millis();
            match tokio::time::timeout(at, call).await {
                Ok(Ok(_)) => {
                    said.push(format!("{ms} ms (it finished first)"));
                    late = at;
                    continue;
                }
                Ok(Err(error)) => {
                    return Err(format!(
                        "ensure of {k} failed: {}",
                        self.redacted(&mesh_runtime::redact::error_text(&error))
                    ))
                }
                Err(_) => {}
            }
            if let Some(interrupt) = &self.suite.interrupt {
                interrupt.interrupt().await;
            }
            let begun = self.listed_after_cut(&k).await;
            let took = self.recover(&k, &secret).await.map_err(|why| {
                format!(
                    "after an ensure of {k} was cut off at {ms} ms, it did not work again within {}: {why}",
                    humantime::format_duration(self.suite.recovery)
                )
            })?;
            if begun {
                said.push(format!(
                    "{ms} ms, mid-way: held listed what it began ({} ms to recover)",
                    took.as_millis()
                ));
                break;
            }
            said.push(format!("{ms} ms ({} ms to recover)", took.as_millis()));
            early = at;
        }
        let cut = said
            .iter()
            .filter(|s| !s.contains("finished first"))
            .count();
        if cut == 0 {
            return Ok(Err(format!(
                "an ensure took {} ms, and every ensure cut at {} finished first: nothing was cut, so nothing was tested",
                whole.as_millis(),
                said.join(", ")
            )));
        }
        let mut note = format!(
            "an ensure took {} ms; cut at {}",
            whole.as_millis(),
            said.join(", ")
        );
        if !note.contains("mid-way") {
            note.push_str("; none was seen cut mid-way");
        }
        Ok(Ok(note))
    }

    /// Whether held lists `k` once it answers again (a killed hook is
    /// started again behind a brake), within the recovery bound.
    async fn listed_after_cut(&self, k: &Name) -> bool {
        let start = tokio::time::Instant::now();
        loop {
            match self.held_as(k).await {
                Ok(listed) => return listed.is_some(),
                Err(_) if start.elapsed() >= self.suite.recovery => return false,
                Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
            }
        }
    }

    /// Ensure and check of `k` until both pass; how long it took.
    async fn recover(&self, k: &Name, secret: &Secret) -> Result<Duration, String> {
        let start = tokio::time::Instant::now();
        loop {
            let tried = async {
                self.ensure(k, secret).await?;
                self.check(k, secret).await
            };
            match tried.await {
                Ok(_) => return Ok(start.elapsed()),
                Err(why) if start.elapsed() >= self.suite.recovery => return Err(why),
                Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
            }
        }
    }

    /// Held lists nothing deleted; what the run made is retired and
    /// deleted; then held lists no `conform-*` name, and the by-hand
    /// oracle finds none of the names the run tried to make at the backend
    /// (a half-made entry `held` never listed). The note says how far it
    /// could look.
    pub(super) async fn rule_left_behind(&self) -> Outcome {
        let in_held = self.left_in_held().await.err();
        let at_backend = self.left_at_backend().await;
        match (in_held, at_backend) {
            (None, Ok(note)) => Outcome::Passed(Some(note)),
            (Some(why), Ok(_)) => Outcome::Failed(why),
            (None, Err(why)) => Outcome::Failed(why),
            (Some(held), Err(backend)) => Outcome::Failed(format!("{held}; {backend}")),
        }
    }

    /// What the last rule finds through the oracle: a note of how far it
    /// looked, or the names still at the backend.
    async fn left_at_backend(&self) -> Result<String, String> {
        let Some(oracle) = &self.suite.by_hand else {
            return Ok(
                "held lists none; the backend itself was not asked (no by-hand oracle)".into(),
            );
        };
        let mut left = Vec::new();
        for name in self.made() {
            match oracle.left(&name).await {
                Ok(true) => left.push(name),
                Ok(false) => {}
                Err(ByHandError::Unsupported(why)) => {
                    return Ok(format!(
                        "held lists none; the backend itself was not asked: {}",
                        self.redacted(&why)
                    ))
                }
                Err(ByHandError::Failed(why)) => {
                    return Err(format!("by-hand left failed: {}", self.redacted(&why)))
                }
            }
        }
        match left.is_empty() {
            true => Ok(format!(
                "held lists none, and by-hand left finds none of the {} names it tried to make",
                self.made().len()
            )),
            false => Err(format!(
                "{} it tried to make {} still at the backend though held lists none (made half-way?): {}",
                left.len(),
                if left.len() == 1 { "is" } else { "are" },
                names_listed(&left)
            )),
        }
    }

    /// Held lists nothing deleted; what the run made is retired and
    /// deleted; then held lists no `conform-*` name.
    async fn left_in_held(&self) -> Step {
        let mut why = Vec::new();
        let held = self.held().await?;
        let deleted = self.deleted();
        let undead: Vec<Name> = held
            .iter()
            .filter(|h| deleted.contains(&h.name))
            .map(|h| h.name.clone())
            .collect();
        if !undead.is_empty() {
            why.push(format!(
                "held still lists {} it said it deleted: {}",
                undead.len(),
                names_listed(&undead)
            ));
        }
        let made = self.made();
        for h in held
            .iter()
            .filter(|h| h.name.as_str().starts_with(&self.prefix) || made.contains(&h.name))
        {
            let removal = async {
                if !h.retired {
                    self.retire(&h.name).await?;
                }
                self.delete(&h.name).await
            };
            if let Err(error) = removal.await {
                why.push(format!("cannot remove {}: {error}", h.name));
            }
        }
        let left: Vec<Name> = self
            .held()
            .await?
            .into_iter()
            .map(|h| h.name)
            .filter(|n| is_suites(n.as_str()))
            .collect();
        if !left.is_empty() {
            why.push(format!(
                "after the cleanup held lists {}: {}",
                left.len(),
                names_listed(&left)
            ));
        }
        match why.is_empty() {
            true => Ok(()),
            false => Err(why.join("; ")),
        }
    }
}
