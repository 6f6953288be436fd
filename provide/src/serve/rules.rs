//! The serve mode's rules as plain state, `now` passed in: the calls in
//! flight by id and when a hook is stuck ([`Table`]), and when a hook that
//! went down may be started again ([`Life`]).

use std::collections::HashMap;
use std::time::Duration;

use mesh_runtime::Backoff;
use tokio::time::Instant;

use crate::wire::Verb;

/// The first wait before a hook that went down is started again.
pub const RESTART_FIRST: Duration = Duration::from_secs(1);

/// The longest wait between two starts of a hook that keeps going down.
pub const RESTART_MAX: Duration = Duration::from_secs(5 * 60);

/// A process that answered well for this long before it went down starts
/// the brake over: its next start waits [`RESTART_FIRST`] again.
pub const HEALTHY_AFTER: Duration = Duration::from_secs(60);

/// One request in flight.
#[derive(Debug)]
struct Call<W> {
    verb: Verb,
    sent: Instant,
    /// Who waits for the answer; `None` once the caller gave up (timeout).
    waiter: Option<W>,
}

/// What a reply's id leads to.
#[derive(Debug, PartialEq, Eq)]
pub enum Answered<W> {
    /// A call someone waits for: hand them the answer.
    Waited(Verb, W),
    /// A call whose caller gave up: the answer is dropped.
    Late(Verb),
    /// No call in flight has this id: the hook babbles.
    Unknown,
}

/// The calls in flight of one hook process, by id. `W` is whatever hands
/// an answer to its caller (a channel's sender; `()` in tests).
#[derive(Debug)]
pub struct Table<W> {
    calls: HashMap<u64, Call<W>>,
}

impl<W> Default for Table<W> {
    fn default() -> Self {
        Table {
            calls: HashMap::new(),
        }
    }
}

impl<W> Table<W> {
    /// A call with `id` (unique across the provider's life) was sent at `now`.
    pub fn sent(&mut self, id: u64, verb: Verb, waiter: W, now: Instant) {
        self.calls.insert(
            id,
            Call {
                verb,
                sent: now,
                waiter: Some(waiter),
            },
        );
    }

    /// A reply carrying `id` arrived: the call leaves the table.
    pub fn answered(&mut self, id: u64) -> Answered<W> {
        match self.calls.remove(&id) {
            Some(Call {
                verb,
                waiter: Some(waiter),
                ..
            }) => Answered::Waited(verb, waiter),
            Some(Call { verb, .. }) => Answered::Late(verb),
            None => Answered::Unknown,
        }
    }

    /// The caller of `id` stopped waiting (its timeout); the call stays in
    /// flight until the hook answers it or is found stuck.
    pub fn gave_up(&mut self, id: u64) {
        if let Some(call) = self.calls.get_mut(&id) {
            call.waiter = None;
        }
    }

    /// The call unanswered longest, if one is unanswered past twice
    /// `timeout` at `now`: the hook is stuck.
    pub fn stuck(&self, now: Instant, timeout: Duration) -> Option<(u64, Verb)> {
        let bound = timeout.saturating_mul(2);
        self.calls
            .iter()
            .filter(|(_, call)| now.saturating_duration_since(call.sent) > bound)
            .min_by_key(|(id, call)| (call.sent, **id))
            .map(|(id, call)| (*id, call.verb))
    }

    /// The hook went down: every call in flight ends; the waiting ones'
    /// waiters are handed back to be told.
    pub fn fail_all(&mut self) -> Vec<(Verb, W)> {
        self.calls
            .drain()
            .filter_map(|(_, call)| call.waiter.map(|w| (call.verb, w)))
            .collect()
    }

    /// How many calls are in flight (answered late ones included).
    pub fn len(&self) -> usize {
        self.calls.len()
    }

    /// Whether no call is in flight.
    pub fn is_empty(&self) -> bool {
        self.calls.is_empty()
    }
}

/// When a hook may be started: at once the first time, then after each
/// time it went down, whatever it went down of (its hello included), a
/// brake doubling from [`RESTART_FIRST`] to [`RESTART_MAX`] (the
/// workspace's one [`Backoff`]), back to the first wait once a process of
/// it had answered well for [`HEALTHY_AFTER`].
#[derive(Clone, Debug)]
pub struct Life {
    backoff: Backoff,
    next_start: Option<Instant>,
    why: Option<String>,
}

impl Default for Life {
    fn default() -> Self {
        Life {
            backoff: Backoff::new(RESTART_FIRST, RESTART_MAX),
            next_start: None,
            why: None,
        }
    }
}

impl Life {
    /// Whether the hook may be started at `now`; else why it is down and
    /// how long until it may.
    pub fn may_start(&self, now: Instant) -> Result<(), (String, Duration)> {
        match (self.next_start, &self.why) {
            (Some(at), Some(why)) if at > now => Err((why.clone(), at - now)),
            _ => Ok(()),
        }
    }

    /// A process of the hook went down at `at`, for `why`;
    /// `answered_since`: when it first answered a call other than its
    /// hello well, if it did. Returns the wait before the next start.
    pub fn went_down(
        &mut self,
        at: Instant,
        why: String,
        answered_since: Option<Instant>,
    ) -> Duration {
        if answered_since.is_some_and(|since| at.saturating_duration_since(since) >= HEALTHY_AFTER)
        {
            self.backoff.reset();
        }
        let wait = self.backoff.next_delay();
        self.next_start = Some(at + wait);
        self.why = Some(why);
        wait
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(n: u64) -> Duration {
        Duration::from_secs(n)
    }

    #[test]
    fn an_answer_goes_to_its_waiter_once_and_an_unknown_id_is_babble() {
        let now = Instant::now();
        let mut t = Table::default();
        t.sent(1, Verb::Check, "one", now);
        t.sent(2, Verb::Held, "two", now);
        assert_eq!(t.len(), 2);
        assert_eq!(t.answered(2), Answered::Waited(Verb::Held, "two"));
        assert_eq!(t.answered(2), Answered::Unknown, "answered twice");
        assert_eq!(t.answered(9), Answered::Unknown);
        assert_eq!(t.answered(1), Answered::Waited(Verb::Check, "one"));
        assert!(t.is_empty());
    }

    #[test]
    fn a_late_answer_is_dropped_and_a_call_unanswered_past_twice_the_timeout_is_stuck() {
        let start = Instant::now();
        let timeout = s(10);
        let mut t = Table::default();
        t.sent(1, Verb::Ensure, (), start);
        t.sent(2, Verb::Check, (), start + s(3));
        let cases = [
            (0, None),
            (10, None),
            (20, None),
            (21, Some(1)),
            (40, Some(1)),
        ];
        for (at, stuck) in cases {
            assert_eq!(
                t.stuck(start + s(at), timeout).map(|(id, _)| id),
                stuck,
                "at {at}s"
            );
        }
        // The caller of 1 gave up at 10 s; the hook answers at 15 s: dropped.
        t.gave_up(1);
        assert_eq!(t.answered(1), Answered::Late(Verb::Ensure));
        assert_eq!(t.stuck(start + s(23), timeout), None);
        assert_eq!(
            t.stuck(start + s(24), timeout),
            Some((2, Verb::Check)),
            "2 was sent at 3 s"
        );
    }

    #[test]
    fn a_hook_that_goes_down_fails_every_waiting_call() {
        let now = Instant::now();
        let mut t = Table::default();
        t.sent(1, Verb::Ensure, 'a', now);
        t.sent(2, Verb::Check, 'b', now);
        t.sent(3, Verb::Held, 'c', now);
        t.gave_up(3);
        let mut told: Vec<char> = t.fail_all().into_iter().map(|(_, w)| w).collect();
        told.sort_unstable();
        assert_eq!(told, vec!['a', 'b'], "3's caller no longer waits");
        assert!(t.is_empty());
    }

    #[test]
    fn a_hook_that_keeps_going_down_is_braked_from_a_second_doubling_to_five_minutes() {
        let start = Instant::now();
        let mut life = Life::default();
        assert_eq!(life.may_start(start), Ok(()), "the first start is at once");
        let mut now = start;
        let mut waits = Vec::new();
        for _ in 0..11 {
            let wait = life.went_down(now, "exited with status 1".into(), None);
            waits.push(wait.as_secs());
            let (why, left) = life.may_start(now).unwrap_err();
            assert_eq!((why.as_str(), left), ("exited with status 1", wait));
            assert!(life
                .may_start(now + wait - Duration::from_millis(1))
                .is_err());
            now += wait;
            assert_eq!(life.may_start(now), Ok(()));
        }
        assert_eq!(waits, vec![1, 2, 4, 8, 16, 32, 64, 128, 256, 300, 300]);
        // A process that answered well for a minute: the brake starts over.
        assert_eq!(
            life.went_down(now + s(61), "babbled".into(), Some(now)),
            s(1)
        );
    }

    #[test]
    fn the_brake_starts_over_only_after_a_minute_of_good_answers() {
        let start = Instant::now();
        // (answered since, went down at) -> the wait after three earlier
        // downs (1 s, 2 s, 4 s waited).
        let cases = [
            (None, 100, 8),
            (Some(0), 1, 8),
            (Some(0), 59, 8),
            (Some(0), 60, 1),
            (Some(30), 89, 8),
            (Some(30), 95, 1),
        ];
        for (since, at, wait) in cases {
            let mut life = Life::default();
            for _ in 0..3 {
                life.went_down(start, "exited with status 2".into(), None);
            }
            let since = since.map(|n| start + s(n));
            assert_eq!(
                life.went_down(start + s(at), "exited".into(), since),
                s(wait),
                "answered since {since:?}, down at {at}s"
            );
        }
    }
}
