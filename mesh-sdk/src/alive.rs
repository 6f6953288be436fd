//! What a provider publishes in its `alive` event, decided without I/O.
//!
//! A provider publishes `alive` after its first pass and then every
//! `alive_every`, so a provider that is down (publishes nothing) is told apart
//! from one that is well. Its `settled_at` is the end of the first pass that
//! began at least `failing_after` after the first pass ended: by then every
//! consumer it keeps failing has failed for `failing_after` since it
//! started, so it has published `failing` for each of them again, and a standing
//! it published before it started and has not published again is one it no longer has.

use std::time::Duration;

use tokio::time::Instant;

/// The loop's life as `alive` reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct AliveState {
    started: Instant,
    first_pass_ended: Option<Instant>,
    settled: Option<Instant>,
    last_published: Option<Instant>,
    /// The last pass: consumers listed, of which failing, how long it took.
    pub(crate) last_pass: Option<(u64, u64, Duration)>,
}

impl AliveState {
    /// The loop started at `started`.
    pub(crate) fn new(started: Instant) -> AliveState {
        AliveState {
            started,
            first_pass_ended: None,
            settled: None,
            last_published: None,
            last_pass: None,
        }
    }

    /// When the loop started.
    pub(crate) fn started(&self) -> Instant {
        self.started
    }

    /// When the loop settled, if it did.
    pub(crate) fn settled(&self) -> Option<Instant> {
        self.settled
    }

    /// A pass ran from `began` to `ended` over `consumers`, `failing` of them failing.
    pub(crate) fn pass_ended(
        &mut self,
        began: Instant,
        ended: Instant,
        consumers: u64,
        failing: u64,
        failing_after: Duration,
    ) {
        match self.first_pass_ended {
            None => self.first_pass_ended = Some(ended),
            Some(first) => {
                if self.settled.is_none() && began >= first + failing_after {
                    self.settled = Some(ended);
                }
            }
        }
        self.last_pass = Some((consumers, failing, ended.saturating_duration_since(began)));
    }

    /// Whether `alive` is due at `now`: after the first pass, then every `every`.
    pub(crate) fn due(&self, now: Instant, every: Duration) -> bool {
        self.last_pass.is_some() && self.due_every(now, every)
    }

    /// Whether `every` passed since `alive` was last published at `now`
    /// (or it never was), pass or not.
    pub(crate) fn due_every(&self, now: Instant, every: Duration) -> bool {
        self.last_published
            .is_none_or(|at| now.saturating_duration_since(at) >= every)
    }

    /// `alive` was published at `now`.
    pub(crate) fn published(&mut self, now: Instant) {
        self.last_published = Some(now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIN: Duration = Duration::from_secs(60);

    #[test]
    fn settled_is_the_end_of_the_first_pass_begun_failing_after_the_first_pass() {
        let t0 = Instant::now();
        let at = |s: u64| t0 + Duration::from_secs(s);
        let failing_after = 5 * MIN;
        // (pass began, pass ended) in seconds from start; settled after each.
        let passes: [(u64, u64, Option<u64>); 5] = [
            (0, 10, None),    // first pass ends at 10
            (15, 20, None),   // too early
            (309, 312, None), // began 299 s after the first pass ended
            (310, 330, Some(330)),
            (400, 401, Some(330)), // stays
        ];
        let mut state = AliveState::new(t0);
        for (began, ended, settled) in passes {
            state.pass_ended(at(began), at(ended), 3, 1, failing_after);
            assert_eq!(state.settled(), settled.map(at), "pass {began}..{ended}");
        }
        assert_eq!(state.last_pass, Some((3, 1, Duration::from_secs(1))));
    }

    #[test]
    fn alive_is_due_after_the_first_pass_and_then_every_alive_every() {
        let t0 = Instant::now();
        let at = |s: u64| t0 + Duration::from_secs(s);
        let mut state = AliveState::new(t0);
        assert!(!state.due(at(100), MIN), "nothing before the first pass");
        state.pass_ended(at(0), at(2), 0, 0, MIN);
        assert!(state.due(at(2), MIN), "right after the first pass");
        state.published(at(2));
        // (now, due)
        for (now, due) in [(3, false), (61, false), (62, true), (500, true)] {
            assert_eq!(state.due(at(now), MIN), due, "at {now}");
        }
        state.published(at(500));
        assert!(!state.due(at(559), MIN));
    }
}
