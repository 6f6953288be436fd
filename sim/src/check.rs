//! The invariants I1–I6, checked after every simulated second against the
//! world's ground truth (what it broke, listed, killed and cut off), never
//! against what the system under test believes.
//!
//! Bounds (`P` pass, `F` failing_after, `A` alive_every, `D` delivery bound,
//! see [`crate::world::Timings::delivery`]); "the path" is the bus, the
//! store, the controller and its acks, and the provider's own way to the
//! bus; while it is away the bounds run from the moment it is back:
//! - I1 no false green: a listed consumer of a running provider, failing
//!   since `t` (or since the provider's start, or its listing, if later), is
//!   named by status from `max(t + F + 2P, path back) + D` on; the
//!   sentence says all were heard within `T` only when none is down for
//!   longer, and "since the controller follows again" only within `3A + D`
//!   of when the controller could last have stopped following.
//! - I2 no false red: a consumer status names was in trouble (listed and
//!   failing, or withdrawn but still held: its standing stands until it is
//!   retired) within the last `2P + D`; or its provider is down, or started
//!   less than `2P + D` ago, or, for a consumer withdrawn while it was
//!   down, less than `F + 3P + A + D` ago (the settled rule has not run yet); or the path
//!   was back less than `2P + D` ago.
//! - I3 silence is seen: a provider down since `t` is named unheard from
//!   `t + 3A + slack` on; a running one is not, from `max(start + P, path
//!   back) + D` on.
//! - I4 nothing lost: whenever the stream holds nothing unacknowledged and
//!   the store is there, the store holds, per key, the newest event the
//!   stream stored (stream order): the newest `failing` or tombstone of each
//!   standing, the newest `alive` of each provider.
//! - I5 no secret: no minted secret in any stored event, log line (every
//!   level), row of the store or status text.
//! - I6 the right part is blamed: while the controller follows nothing,
//!   status says so, and names no provider unheard whose silence began
//!   after the controller's.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::time::Duration;

use mesh_protocol::subject::parse_event_subject;
use mesh_protocol::{Event, EventKind};
use tokio::time::Instant;

use crate::cost::{Costs, Timer};
use crate::status::{consumer_name, Status};
use crate::store::StandingKey;
use crate::world::{secret_of, World, SECRET_PREFIX, SECRET_SUFFIX, SLACK};

/// An invariant broken.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    /// Which (`I1` … `I6`).
    pub invariant: &'static str,
    /// The simulated second.
    pub at: u64,
    /// What was wrong.
    pub detail: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} broken at t={}s: {}",
            self.invariant, self.at, self.detail
        )
    }
}

/// The newest event the stream stored for one key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Newest {
    seq: u64,
    failing: bool,
}

/// What one latency measure saw: when the thing began, when status showed it.
#[derive(Clone, Debug, Default)]
pub struct Latencies {
    /// "status names the consumer" minus "the consumer began failing" (s).
    pub detection: Vec<f64>,
    /// "status no longer names it" minus "it works again" (s).
    pub recovery: Vec<f64>,
    /// "status names the provider unheard" minus "it stopped" (s).
    pub unheard: Vec<f64>,
}

impl Latencies {
    /// One line per measure: cases, p50, p99 and max in simulated seconds,
    /// as seen by checks `check_every` seconds apart (a latency is then
    /// known to within that; recovery, timed from the check that first saw
    /// the heal, is left out).
    pub fn summary(&self, check_every: u64) -> String {
        let recovery = ("consumer works -> no longer named", &self.recovery);
        [
            Some(("consumer failing -> named", &self.detection)),
            (check_every <= 1).then_some(recovery),
            Some(("provider stopped -> named unheard", &self.unheard)),
        ]
        .iter()
        .flatten()
        .map(|(name, values)| {
            let mut sorted = (*values).clone();
            sorted.sort_by(f64::total_cmp);
            format!(
                "{name}: {} cases, p50 {:.0} s, p99 {:.0} s, max {:.0} s",
                sorted.len(),
                percentile(&sorted, 0.5),
                percentile(&sorted, 0.99),
                sorted.last().copied().unwrap_or(f64::NAN)
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
    }
}

/// The age the sentence claims every provider was heard within: `all N
/// were heard from within the last T` or `it was heard from within the
/// last T` (not `H of the N heard from …`).
pub fn heard_claim(sentence: &str) -> Option<Duration> {
    let at = [
        "were heard from within the last ",
        "it was heard from within the last ",
    ]
    .iter()
    .find_map(|claim| sentence.find(claim).map(|i| i + claim.len()))?;
    let rest = &sentence[at..];
    let end = rest.find([')', ',']).unwrap_or(rest.len());
    duration_of(&rest[..end])
}

/// A duration as status writes it (`1 h 2 min`, `1 min 5 s`, `3 d`).
fn duration_of(text: &str) -> Option<Duration> {
    let words: Vec<&str> = text.split_whitespace().collect();
    if words.is_empty() || words.len() % 2 != 0 {
        return None;
    }
    let mut seconds = 0u64;
    for pair in words.chunks(2) {
        let n: u64 = pair[0].parse().ok()?;
        let unit = match pair[1] {
            "s" => 1,
            "min" => 60,
            "h" => 3600,
            "d" => 86_400,
            _ => return None,
        };
        seconds += n * unit;
    }
    Some(Duration::from_secs(seconds))
}

/// Whether the sentence says some provider is not heard from because the
/// controller follows again since recently (`… not heard from since the
/// controller follows again`).
pub fn follows_again_claim(sentence: &str) -> bool {
    sentence.contains(" not heard from since the controller follows again")
}

/// The `p` quantile (0 to 1) of `sorted` (nearest rank); NaN when empty.
pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

/// Checks the invariants; keeps what it needs between seconds.
#[derive(Debug, Default)]
pub struct Checker {
    /// The store's key (provider module, machine, consumer) → newest
    /// standing event in the stream.
    standings: BTreeMap<StandingKey, Newest>,
    /// provider → newest `alive` in the stream.
    alive: BTreeMap<String, u64>,
    /// Every secret of the simulation.
    secrets: BTreeSet<String>,
    /// Times every invariant was checked.
    pub checks: u64,
    /// Status reports checked.
    pub reports: u64,
    /// The standings the last status report named.
    pub named: usize,
    /// Latencies measured (clean cases: no fault of the path meanwhile).
    pub latencies: Latencies,
    /// `(p, c)` → since when it fails, and whether status named it since.
    failing_since: BTreeMap<(usize, usize), (Instant, bool)>,
    /// `(p, c)` → since when it works, and whether status stopped naming it since.
    healed_at: BTreeMap<(usize, usize), (Instant, bool)>,
    /// provider → since when it is down, and whether status named it unheard since.
    down_at: BTreeMap<usize, (Instant, bool)>,
    /// The wall time the checks took, by phase.
    pub costs: Costs,
}

fn secs(d: Duration) -> f64 {
    d.as_secs_f64()
}

impl Checker {
    /// A checker for a world of `providers` × `consumers`.
    pub fn new(providers: usize, consumers: usize) -> Checker {
        let secrets = (0..providers)
            .flat_map(|p| (0..consumers).map(move |c| secret_of(p, &consumer_name(c))))
            .collect();
        Checker {
            secrets,
            ..Checker::default()
        }
    }

    /// A secret of the simulation `text` holds. Every secret is
    /// `s3cr3t-…-Zq9` ([`secret_of`]): each place the prefix begins is
    /// looked up (one lookup per place, not one search per secret: a
    /// hundred thousand of them at scale).
    fn secret_in(&self, text: &str) -> Option<&str> {
        text.match_indices(SECRET_PREFIX).find_map(|(at, _)| {
            let rest = &text[at..];
            let end = rest.find(SECRET_SUFFIX)? + SECRET_SUFFIX.len();
            self.secrets.get(&rest[..end]).map(String::as_str)
        })
    }

    /// Checks every invariant at `second`; `logs` are the log lines
    /// written since the last check (every level).
    ///
    /// # Errors
    /// The first invariant found broken.
    pub fn check(&mut self, world: &World, logs: &str, second: u64) -> Result<(), Violation> {
        self.checks += 1;
        let fail = |invariant: &'static str, detail: String| Violation {
            invariant,
            at: second,
            detail,
        };
        let timer = Timer::start("check: events");
        self.read_history(world)
            .map_err(|detail| fail("I5", detail))?;
        timer.stop(&mut self.costs);
        let timer = Timer::start("check: log lines");
        if let Some(line) = logs.lines().find(|line| self.secret_in(line).is_some()) {
            return Err(fail("I5", format!("a log line holds a secret: {line}")));
        }
        timer.stop(&mut self.costs);
        // The rows, whether or not status may read them now.
        let timer = Timer::start("check: rows");
        let rows = world
            .store
            .with(|t| format!("{:?} {:?}", t.failing, t.alive));
        if let Some(secret) = self.secret_in(&rows) {
            return Err(fail(
                "I5",
                format!("a row of the store holds the secret {secret}"),
            ));
        }
        timer.stop(&mut self.costs);
        if !world.store_away() {
            let timer = Timer::start("check: I4");
            self.check_store(world)
                .map_err(|detail| fail("I4", detail))?;
            timer.stop(&mut self.costs);
        }
        let timer = Timer::start("status");
        let status = world.status();
        timer.stop(&mut self.costs);
        let Some(status) = status else {
            return Ok(());
        };
        let timer = Timer::start("check: I1-I3, I6");
        let checked = self.check_status(world, &status, &fail);
        timer.stop(&mut self.costs);
        checked
    }

    /// The invariants that read what status says (I1, I2, I3, I5's status
    /// text, I6).
    fn check_status(
        &mut self,
        world: &World,
        status: &Status,
        fail: &impl Fn(&'static str, String) -> Violation,
    ) -> Result<(), Violation> {
        self.reports += 1;
        self.named = status.listed.len();
        if let Some(secret) = self.secret_in(&status.text) {
            return Err(fail("I5", format!("status prints the secret {secret}")));
        }
        let t = world.timings;
        let (pass, fa, alive) = (
            t.settings.pass_every,
            t.settings.standing.failing_after,
            t.settings.alive_every,
        );
        let d = t.delivery();
        let now = Instant::now();
        let listed: std::collections::BTreeSet<(String, &str)> = status
            .listed
            .iter()
            .map(|l| (l.row.provider.to_string(), l.row.said.consumer.as_str()))
            .collect();
        let named = |p: &str, c: &str| listed.contains(&(p.to_owned(), c));
        // I1, the sentence: "all N were heard from within the last T" only
        // when each was (a dead provider said nothing since it stopped).
        if let Some(within) = heard_claim(&status.head.sentence) {
            if let Some(dead) = world
                .providers
                .iter()
                .find(|p| !p.running && now > p.since + within + SLACK)
            {
                return Err(fail(
                    "I1",
                    format!(
                        "status says every provider was heard from within the last {}, but {} is down since t={}s: {}",
                        humantime::format_duration(within),
                        dead.id,
                        (dead.since - world.t0).as_secs(),
                        status.head.sentence
                    ),
                ));
            }
        }
        // I1, the sentence: "not heard from since the controller follows
        // again" only while it does since recently. Its run of catch-ups
        // begins again at most a NAK delay and two pulls after it was last
        // back, a provider then has 3 alives, and its last catch-up is at
        // most the follow bound old: all within `follow_back + 3A + D`.
        // Past that it followed throughout (issue 31: the window between
        // the last catch-up and now read as "follows again").
        if follows_again_claim(&status.head.sentence) && now > world.follow_back + 3 * alive + d {
            return Err(fail(
                "I1",
                format!(
                    "status says a provider is not heard from since the controller follows again, but it follows since t={}s: {}",
                    (world.follow_back - world.t0).as_secs(),
                    status.head.sentence
                ),
            ));
        }
        // I6: while the controller follows nothing, status says so.
        if let Some(lost) = world.unfollowed {
            let bound = (world.timings.link.wait * 3).min(Duration::from_secs(15)) + SLACK;
            let said = !status.head.controller.following
                && status
                    .head
                    .sentence
                    .starts_with("not all well: the controller has");
            if now >= lost + bound && !said {
                return Err(fail(
                    "I6",
                    format!(
                        "the controller follows nothing since t={}s but status does not say so: {}",
                        (lost - world.t0).as_secs(),
                        status.head.sentence
                    ),
                ));
            }
        }
        for (pi, provider) in world.providers.iter().enumerate() {
            let pid = provider.id.to_string();
            let back = world.path_back.max(provider.path_back);
            let away = world.path_away() || provider.path_until > now;
            let unheard = status.head.unheard().any(|u| u.provider == provider.id);
            // I3.
            if !provider.running {
                let down = self.down_at.entry(pi).or_insert((provider.since, false));
                if unheard && !down.1 {
                    down.1 = true;
                    // Measured when no fault of the path came between.
                    if world.hard_back <= down.0 && !world.path_away() {
                        self.latencies.unheard.push(secs(now - down.0));
                    }
                }
                // A silence is counted while the controller follows: from
                // its newest alive, or from when the controller follows
                // again (after an outage, or after its acks were lost),
                // whichever is later.
                let silent_from = provider.since.max(world.follow_back);
                let following = world.follow_lost_at.is_none() && !world.store_away();
                if following && now >= silent_from + 3 * alive + d && !unheard {
                    return Err(fail(
                        "I3",
                        format!(
                            "{pid} is down since t={}s but status does not name it unheard: {}",
                            (provider.since - world.t0).as_secs(),
                            status.head.sentence
                        ),
                    ));
                }
            } else {
                self.down_at.remove(&pi);
                // I6: while the controller follows nothing, no provider is
                // blamed for a silence that began after the controller's.
                if let Some(lost) = world.follow_lost_at {
                    // Its silence began after the controller's: it runs
                    // (started well before, its own way to the bus fine
                    // for 3 alives before), or it stopped after.
                    let blamed = match provider.running {
                        true => {
                            provider.since + pass + d < lost
                                && provider.path_back + 3 * alive + d < lost
                        }
                        false => provider.since > lost,
                    };
                    if unheard && blamed {
                        return Err(fail(
                            "I6",
                            format!(
                                "the controller follows nothing since t={}s, and status names {pid} unheard though it runs since t={}s: {}",
                                (lost - world.t0).as_secs(),
                                (provider.since - world.t0).as_secs(),
                                status.head.sentence
                            ),
                        ));
                    }
                }
                if !away && now >= (provider.since + pass).max(back) + d && unheard {
                    return Err(fail(
                        "I3",
                        format!(
                            "{pid} runs since t={}s and its alive gets through, but status names it unheard: {}",
                            (provider.since - world.t0).as_secs(),
                            status.head.sentence
                        ),
                    ));
                }
            }
            for (c, truth) in provider.truth.iter().enumerate() {
                let cname = consumer_name(c);
                let is_named = named(&pid, &cname);
                // I1.
                let failing = match (provider.running, truth.listed_since, truth.broken) {
                    (true, Some(listed), Some((broken, _))) => {
                        Some(broken.max(listed).max(provider.since))
                    }
                    _ => None,
                };
                match failing {
                    Some(since) => {
                        self.healed_at.remove(&(pi, c));
                        // Named already when it began (a standing kept from
                        // before): nothing to measure.
                        let began = self
                            .failing_since
                            .entry((pi, c))
                            .or_insert((since, is_named));
                        if is_named && !began.1 {
                            began.1 = true;
                            if began.0 >= back && !away {
                                self.latencies.detection.push(secs(now - began.0));
                            }
                        }
                        let due = (since + fa + 2 * pass).max(back) + d;
                        if !away && now >= due && !is_named {
                            return Err(fail(
                                "I1",
                                format!(
                                    "{cname}@app-1 fails at {pid} since t={}s but status does not name it: {}",
                                    (since - world.t0).as_secs(),
                                    status.head.sentence
                                ),
                            ));
                        }
                    }
                    None => {
                        // A failure status named that ended: its recovery is measured.
                        // (Healed, not withdrawn: a withdrawn one's standing
                        // stands until it is retired.)
                        let healed = truth.listed_since.is_some() && provider.running;
                        if let Some((_, true)) = self.failing_since.remove(&(pi, c)) {
                            if healed {
                                self.healed_at.insert((pi, c), (now, false));
                            }
                        }
                    }
                }
                if let Some(healed) = self.healed_at.get_mut(&(pi, c)) {
                    if !is_named && !healed.1 {
                        healed.1 = true;
                        if healed.0 >= back && !away && healed.0 > provider.since {
                            self.latencies.recovery.push(secs(now - healed.0));
                        }
                    }
                }
                // I2.
                if is_named {
                    let window = 2 * pass + d;
                    let trouble = truth.trouble_at.is_some_and(|at| at + window >= now);
                    // A restarted provider clears a standing of its earlier
                    // run at its first success (listed), or by the settled
                    // rule once settled (withdrawn while it was down).
                    let restarting = !provider.running
                        || now < provider.since + window
                        || (truth.listed_since.is_none()
                            && now < provider.since + fa + 3 * pass + alive + d);
                    let path = away || now < back + window;
                    if !trouble && !restarting && !path {
                        return Err(fail(
                            "I2",
                            format!(
                                "status names {cname}@app-1 failing at {pid}, but it has not been in trouble since {}: {}",
                                truth.trouble_at.map_or("ever".to_owned(), |at| format!("t={}s", (at - world.t0).as_secs())),
                                status.head.sentence
                            ),
                        ));
                    }
                }
            }
        }
        Ok(())
    }

    /// Reads what the stream stored since the last check: the newest event
    /// per key, and no secret in any (I5).
    fn read_history(&mut self, world: &World) -> Result<(), String> {
        for stored in world.bus.take_history() {
            let text = String::from_utf8_lossy(&stored.body);
            if let Some(secret) = self.secret_in(&text) {
                return Err(format!(
                    "the event on {} carries the secret {secret}",
                    stored.subject
                ));
            }
            let Some((machine, module, kind)) = parse_event_subject(&stored.subject) else {
                continue;
            };
            let Ok(event) = Event::parse(kind, &stored.body) else {
                continue;
            };
            let key = |consumer: &mesh_protocol::Name| -> StandingKey {
                (
                    module.to_string(),
                    machine.to_string(),
                    consumer.to_string(),
                )
            };
            match (kind, event) {
                (EventKind::Failing, Event::Failing(b)) => {
                    self.standings.insert(
                        key(&b.consumer),
                        Newest {
                            seq: stored.seq,
                            failing: true,
                        },
                    );
                }
                (EventKind::Recovered, Event::Recovered(b)) => {
                    self.standings.insert(
                        key(&b.consumer),
                        Newest {
                            seq: stored.seq,
                            failing: false,
                        },
                    );
                }
                (EventKind::Alive, _) => {
                    self.alive.insert(format!("{module}@{machine}"), stored.seq);
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// I4, when the stream holds nothing unacknowledged.
    fn check_store(&self, world: &World) -> Result<(), String> {
        if world.bus.unacknowledged() > 0 {
            return Ok(());
        }
        world.store.with(|t| {
            // Both in key order: each table is read once, alongside.
            let (mut failings, mut tombs) = (t.failing.iter().peekable(), t.recovered.iter().peekable());
            for (key, newest) in &self.standings {
                let failing = seek(&mut failings, key).map(|(_, place)| place.seq);
                let tomb = seek(&mut tombs, key).map(|place| place.seq);
                let right = match newest.failing {
                    true => failing == Some(newest.seq),
                    false => failing.is_none() && tomb == Some(newest.seq),
                };
                if !right {
                    let (module, machine, consumer) = key;
                    return Err(format!(
                        "the stream's newest standing event of {consumer} at {module}@{machine} is {} (seq {}), the store holds failing {failing:?}, recovered {tomb:?}",
                        if newest.failing { "failing" } else { "recovered" },
                        newest.seq
                    ));
                }
            }
            let alive: BTreeMap<String, u64> = t
                .alive
                .iter()
                .map(|(p, (_, place))| (p.to_string(), place.seq))
                .collect();
            for (provider, seq) in &self.alive {
                let held = alive.get(provider).copied();
                if held != Some(*seq) {
                    return Err(format!(
                        "the stream's newest alive of {provider} is seq {seq}, the store holds {held:?}"
                    ));
                }
            }
            Ok(())
        })
    }
}

/// The value at `key` of the map `entries` reads, each key asked for once
/// and in increasing order.
fn seek<'a, V>(
    entries: &mut std::iter::Peekable<std::collections::btree_map::Iter<'a, StandingKey, V>>,
    key: &StandingKey,
) -> Option<&'a V> {
    while entries.next_if(|(k, _)| *k < key).is_some() {}
    entries.next_if(|(k, _)| *k == key).map(|(_, v)| v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_secret_is_found_wherever_it_stands_and_only_a_whole_one_of_this_world() {
        let checker = Checker::new(2, 3);
        let one = secret_of(1, &consumer_name(2));
        assert_eq!(
            checker.secret_in(&format!("{{\"error\":\"pw={one}\"}}")),
            Some(one.as_str())
        );
        let late = format!("s3cr3t- then s3cr3t-0-app1 then {one}");
        assert_eq!(checker.secret_in(&late), Some(one.as_str()));
        assert_eq!(checker.secret_in("s3cr3t-1-app2"), None, "cut short");
        assert_eq!(
            checker.secret_in("s3cr3t-7-app2-Zq9"),
            None,
            "not of this world"
        );
        assert_eq!(checker.secret_in("all well"), None);
    }

    #[test]
    fn the_heard_claim_is_read_only_when_it_is_of_all() {
        let all = "all well: none of the 8 providers assigned in the declaration says it keeps failing a consumer (all 8 were heard from within the last 1 min 5 s), and no repair fault is open";
        assert_eq!(heard_claim(all), Some(Duration::from_secs(65)));
        let one = "all well: no provider says it keeps failing a consumer whose provider or consumer is on db-1 (1 provider on it or serving it, it was heard from within the last 20 s), and";
        assert_eq!(heard_claim(one), Some(Duration::from_secs(20)));
        let some = "all well: none of the 2 providers assigned in the declaration says it keeps failing a consumer (1 of the 2 heard from within the last 10 s, 1 provider not heard from since the controller follows again), and";
        assert_eq!(heard_claim(some), None);
        assert!(follows_again_claim(some));
        assert!(!follows_again_claim(all) && !follows_again_claim(one));
        assert!(!follows_again_claim(
            "not all well: 0 consumers failing, 1 provider not heard from"
        ));
        assert_eq!(heard_claim("not all well: 1 provider not heard from"), None);
    }

    #[tokio::test(start_paused = true)]
    async fn a_secret_in_a_log_line_breaks_i5() {
        let shape = crate::plan::Shape {
            providers: 1,
            consumers: 1,
            ..crate::plan::Shape::default()
        };
        let mut world = World::new(
            crate::plan::Plan::draw(0, &shape),
            crate::world::Timings::default(),
        );
        world.step(0).await;
        let mut checker = Checker::new(1, 1);
        assert_eq!(checker.check(&world, "INFO pass ended\n", 0), Ok(()));
        let leak = format!(
            "INFO pass ended\nWARN check failed error={}\n",
            secret_of(0, "app0")
        );
        let broken = checker.check(&world, &leak, 0).unwrap_err();
        assert_eq!(broken.invariant, "I5");
        assert!(
            broken
                .detail
                .starts_with("a log line holds a secret: WARN check failed"),
            "{broken}"
        );
        world.end().await;
    }
}
