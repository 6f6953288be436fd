//! The link's progress (pure): what it keeps of its pulls and rounds, and
//! what that decides: whether a turn caught up with the stream, when the
//! link records itself in the store and what the record says, and when the
//! consumer must be set up again. [`super::follow_messages`] feeds it what
//! happened and the time; it does no I/O and reads no clock.
//!
//! | decision | rule |
//! | --- | --- |
//! | caught up ([`LinkProgress::behind`]) | the pull came back short, nothing NAKed for the store, the last pull did not fail, the consumer is there, the bus connected at the pull's start and after the round; then delivery must not wait on acknowledgements (the driver asks last) |
//! | record due ([`LinkProgress::record_due`]) | the first always; then at once when it catches up again, else once half a pull wait passed since the last one written |
//! | look the consumer up ([`LinkProgress::pulled`]) | every [`IDLE_PULLS_BEFORE_CHECK`] pulls in a row without a message (and after each failed pull) |
//! | set up again ([`LinkProgress::must_set_up_again`]) | the consumer is gone, or [`PULL_FAILURES_BEFORE_SETUP`] pulls failed in a row |

use std::time::Duration;

use tokio::time::Instant;

use crate::model::Instance;
use crate::store::ControllerRecordUpdate;

/// Pulls failing in a row after which the consumer is set up again.
pub(super) const PULL_FAILURES_BEFORE_SETUP: u32 = 10;

/// Pulls in a row without a message after which the consumer is looked up
/// (a deleted consumer's pulls just find nothing).
pub(super) const IDLE_PULLS_BEFORE_CHECK: u32 = 15;

/// How one turn's pull ended, as the caught-up decision needs it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct PullEnd {
    /// It came back short: nothing more was waiting.
    pub short: bool,
    /// The bus was connected when the pull began.
    pub connected_before: bool,
    /// The bus is connected now, after the turn's round.
    pub connected_after: bool,
}

/// Why a turn is not caught up, found before delivery is asked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Behind {
    /// The pull came back full: more may be waiting.
    FullPull,
    /// Events were NAKed for the store and not stored since.
    Naked,
    /// The last pull failed (and none worked since).
    PullFailing,
    /// The consumer is gone.
    ConsumerLost,
    /// The bus was away at the pull's start or after the round (a pull
    /// while it is away comes back empty without an error).
    BusAway,
}

/// What the link keeps of its pulls, rounds and records.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct LinkProgress {
    /// The longest time between two records (half the pull wait).
    record_every: Duration,
    /// Events were NAKed for the store and not stored since: the link is
    /// not caught up, whatever its pulls find.
    naked: bool,
    /// Pulls in a row that failed without a message.
    pull_failures: u32,
    /// Pulls in a row without a message.
    idle_pulls: u32,
    /// The consumer is gone: it must be set up again.
    consumer_lost: bool,
    /// A round was committed since the last record.
    applied_since_record: bool,
    /// When the last record was written, and whether it said caught up.
    last_record: Option<(Instant, bool)>,
}

impl LinkProgress {
    /// A link that pulls with `pull_wait`, before its first pull.
    pub(super) fn new(pull_wait: Duration) -> LinkProgress {
        LinkProgress {
            record_every: pull_wait / 2,
            naked: false,
            pull_failures: 0,
            idle_pulls: 0,
            consumer_lost: false,
            applied_since_record: false,
            last_record: None,
        }
    }

    /// A pull failed without a message.
    pub(super) fn pull_failed(&mut self) {
        self.pull_failures += 1;
    }

    /// A pull worked; returns whether that counts as pulling working (not
    /// while the consumer is lost: it is set up again first).
    pub(super) fn pull_worked(&mut self) -> bool {
        if self.consumer_lost {
            return false;
        }
        self.pull_failures = 0;
        true
    }

    /// A pull brought `messages`; returns whether the consumer is to be
    /// looked up now (a deleted consumer's pulls just find nothing).
    pub(super) fn pulled(&mut self, messages: usize) -> bool {
        if messages > 0 {
            self.idle_pulls = 0;
            return false;
        }
        self.idle_pulls += 1;
        self.idle_pulls % IDLE_PULLS_BEFORE_CHECK == 0
    }

    /// The consumer was looked up and is not there.
    pub(super) fn consumer_lost(&mut self) {
        self.consumer_lost = true;
    }

    /// Events were NAKed for the store.
    pub(super) fn naked(&mut self) {
        self.naked = true;
    }

    /// Events were stored (a round, or an event of one, committed).
    pub(super) fn stored(&mut self) {
        self.naked = false;
        self.applied_since_record = true;
    }

    /// Why the turn whose pull ended as `pull` is not caught up, the first
    /// reason of [`Behind`]'s order; `None`: it is, once delivery does not
    /// wait on acknowledgements (asked only then).
    pub(super) fn behind(&self, pull: PullEnd) -> Option<Behind> {
        if !pull.short {
            Some(Behind::FullPull)
        } else if self.naked {
            Some(Behind::Naked)
        } else if self.pull_failures > 0 {
            Some(Behind::PullFailing)
        } else if self.consumer_lost {
            Some(Behind::ConsumerLost)
        } else if !(pull.connected_before && pull.connected_after) {
            Some(Behind::BusAway)
        } else {
            None
        }
    }

    /// The record of `instance` due at `now` after a turn that was
    /// `caught_up` or not, if one is: the first always, then at once when
    /// it catches up again, else once [`LinkProgress::record_every`] passed
    /// since the last one written. It says whether a round was committed
    /// since the last record written.
    pub(super) fn record_due<'a>(
        &self,
        instance: &'a Instance,
        caught_up: bool,
        now: Instant,
    ) -> Option<ControllerRecordUpdate<'a>> {
        let due = match self.last_record {
            None => true,
            Some((at, was)) => (caught_up && !was) || now.duration_since(at) >= self.record_every,
        };
        due.then_some(ControllerRecordUpdate {
            instance,
            caught_up,
            applied: self.applied_since_record,
            first: self.last_record.is_none(),
        })
    }

    /// The store wrote a record at `now` that said `caught_up` (a record
    /// it failed changes nothing: it is due again at the next turn).
    pub(super) fn recorded(&mut self, now: Instant, caught_up: bool) {
        self.last_record = Some((now, caught_up));
        self.applied_since_record = false;
    }

    /// Whether the link must end for its consumer to be set up again.
    pub(super) fn must_set_up_again(&self) -> bool {
        self.consumer_lost || self.pull_failures >= PULL_FAILURES_BEFORE_SETUP
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const WAIT: Duration = Duration::from_secs(2);

    const CAUGHT_UP_PULL: PullEnd = PullEnd {
        short: true,
        connected_before: true,
        connected_after: true,
    };

    fn instance() -> Instance {
        Instance {
            host: "ctl-1".to_owned(),
            pid: 7,
            started_at: mesh_protocol::Timestamp::parse("2026-10-05T00:00:00Z").unwrap(),
            pull_wait: WAIT,
        }
    }

    #[test]
    fn each_condition_alone_keeps_a_turn_from_being_caught_up() {
        type Happened = fn(&mut LinkProgress);
        let nothing: Happened = |_| {};
        let pull = |short, connected_before, connected_after| PullEnd {
            short,
            connected_before,
            connected_after,
        };
        // (what happened, what it did, the pull, why not caught up)
        let cases = [
            ("nothing", nothing, CAUGHT_UP_PULL, None),
            (
                "a full pull",
                nothing,
                pull(false, true, true),
                Some(Behind::FullPull),
            ),
            (
                "events NAKed",
                LinkProgress::naked,
                CAUGHT_UP_PULL,
                Some(Behind::Naked),
            ),
            (
                "a pull failed",
                LinkProgress::pull_failed,
                CAUGHT_UP_PULL,
                Some(Behind::PullFailing),
            ),
            (
                "the consumer lost",
                LinkProgress::consumer_lost,
                CAUGHT_UP_PULL,
                Some(Behind::ConsumerLost),
            ),
            (
                "the bus away at the start",
                nothing,
                pull(true, false, true),
                Some(Behind::BusAway),
            ),
            (
                "the bus away after",
                nothing,
                pull(true, true, false),
                Some(Behind::BusAway),
            ),
            (
                "the bus away throughout",
                nothing,
                pull(true, false, false),
                Some(Behind::BusAway),
            ),
        ];
        for (what, happened, pull, expected) in cases {
            let mut progress = LinkProgress::new(WAIT);
            happened(&mut progress);
            assert_eq!(progress.behind(pull), expected, "{what}");
        }
    }

    #[test]
    fn what_ends_a_reason_to_be_behind_and_what_does_not() {
        // Events NAKed, then stored: caught up again.
        let mut progress = LinkProgress::new(WAIT);
        progress.naked();
        progress.stored();
        assert_eq!(progress.behind(CAUGHT_UP_PULL), None, "stored after NAKed");
        // A failed pull, then one that worked: caught up again.
        progress.pull_failed();
        progress.pull_failed();
        assert!(progress.pull_worked(), "counts while the consumer is there");
        assert_eq!(progress.behind(CAUGHT_UP_PULL), None, "worked after failed");
        // A lost consumer stays lost, and a pull that works does not
        // count against its failures.
        progress.pull_failed();
        progress.consumer_lost();
        assert!(!progress.pull_worked(), "not while the consumer is lost");
        assert_eq!(progress.behind(CAUGHT_UP_PULL), Some(Behind::PullFailing));
        assert!(progress.must_set_up_again());
    }

    #[test]
    fn the_consumer_is_set_up_again_after_ten_failed_pulls_or_once_it_is_lost() {
        // (pulls failed in a row, consumer lost, set up again)
        let cases = [
            (0, false, false),
            (1, false, false),
            (PULL_FAILURES_BEFORE_SETUP - 1, false, false),
            (PULL_FAILURES_BEFORE_SETUP, false, true),
            (PULL_FAILURES_BEFORE_SETUP + 1, false, true),
            (0, true, true),
            (3, true, true),
        ];
        for (failures, lost, expected) in cases {
            let mut progress = LinkProgress::new(WAIT);
            for _ in 0..failures {
                progress.pull_failed();
            }
            if lost {
                progress.consumer_lost();
            }
            assert_eq!(
                progress.must_set_up_again(),
                expected,
                "{failures} failures, lost {lost}"
            );
        }
        // A pull that works in between starts the count again.
        let mut progress = LinkProgress::new(WAIT);
        for _ in 0..PULL_FAILURES_BEFORE_SETUP - 1 {
            progress.pull_failed();
        }
        progress.pull_worked();
        progress.pull_failed();
        assert!(!progress.must_set_up_again(), "one failure since it worked");
    }

    #[test]
    fn the_consumer_is_looked_up_every_fifteen_pulls_in_a_row_without_a_message() {
        let mut progress = LinkProgress::new(WAIT);
        let looks: Vec<u32> = (1..=2 * IDLE_PULLS_BEFORE_CHECK + 1)
            .filter(|_| progress.pulled(0))
            .collect();
        assert_eq!(
            looks,
            [IDLE_PULLS_BEFORE_CHECK, 2 * IDLE_PULLS_BEFORE_CHECK],
            "the idle pulls it looks after"
        );
        // A pull with messages starts the count again.
        let mut progress = LinkProgress::new(WAIT);
        for _ in 0..IDLE_PULLS_BEFORE_CHECK - 1 {
            assert!(!progress.pulled(0));
        }
        assert!(!progress.pulled(3), "messages came");
        for n in 1..IDLE_PULLS_BEFORE_CHECK {
            assert!(!progress.pulled(0), "{n} idle pulls since the messages");
        }
        assert!(progress.pulled(0), "the fifteenth since the messages");
    }

    #[test]
    fn the_first_record_is_due_at_once_and_says_so() {
        let me = instance();
        let now = Instant::now();
        for caught_up in [false, true] {
            let progress = LinkProgress::new(WAIT);
            assert_eq!(
                progress.record_due(&me, caught_up, now),
                Some(ControllerRecordUpdate {
                    instance: &me,
                    caught_up,
                    applied: false,
                    first: true,
                }),
                "caught up {caught_up}"
            );
        }
        // A first record the store failed: the next is still the first.
        let mut progress = LinkProgress::new(WAIT);
        progress.stored();
        let later = now + Duration::from_millis(10);
        let due = progress.record_due(&me, false, later).expect("due");
        assert!(due.first && due.applied, "{due:?}");
        progress.recorded(later, false);
        let due = progress.record_due(&me, false, later + WAIT);
        assert!(due.is_some_and(|d| !d.first && !d.applied), "{due:?}");
    }

    #[test]
    fn a_record_is_due_at_once_on_catching_up_again_else_every_half_pull_wait() {
        let me = instance();
        let half = WAIT / 2;
        let just_before = half - Duration::from_millis(1);
        // (the last record said caught up, this turn caught up, time since
        // the last record, due)
        let cases = [
            (false, true, Duration::ZERO, true),
            (false, true, just_before, true),
            (true, true, Duration::ZERO, false),
            (true, true, just_before, false),
            (true, true, half, true),
            (false, false, just_before, false),
            (false, false, half, true),
            (true, false, Duration::ZERO, false),
            (true, false, just_before, false),
            (true, false, half, true),
            (true, false, 10 * WAIT, true),
        ];
        for (was, caught_up, since, expected) in cases {
            let mut progress = LinkProgress::new(WAIT);
            let at = Instant::now();
            progress.recorded(at, was);
            assert_eq!(
                progress.record_due(&me, caught_up, at + since).is_some(),
                expected,
                "last said caught up {was}, caught up {caught_up}, {since:?} since"
            );
        }
    }

    #[test]
    fn a_record_says_whether_a_round_was_committed_since_the_last_one_written() {
        let me = instance();
        let at = Instant::now();
        let mut progress = LinkProgress::new(WAIT);
        progress.recorded(at, true);
        let next = at + WAIT;
        let due = |p: &LinkProgress| p.record_due(&me, true, next).expect("due").applied;
        assert!(!due(&progress), "nothing committed");
        progress.naked();
        assert!(!due(&progress), "NAKed is not committed");
        progress.stored();
        assert!(due(&progress), "committed");
        // Not written (the store failed it): the next still says so.
        assert!(due(&progress), "still, until one is written");
        progress.recorded(next, true);
        assert!(
            !progress
                .record_due(&me, true, next + WAIT)
                .expect("due")
                .applied,
            "written: nothing since"
        );
    }
}
