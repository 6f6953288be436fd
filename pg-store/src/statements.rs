//! The write statements, prepared on each connection and kept with it
//! (prepared again now and then: [`Replan`]); a round runs them. Below both
//! the connection and the round, so the two import it and not each other.

use tokio_postgres::{Client, Statement};

use super::columns::{
    RECOVERED, UPSERT_ALIVE, UPSERT_FAILING, UPSERT_GRANT, UPSERT_GRANTS_READ, UPSERT_REPAIR,
    UPSERT_RETIREMENT,
};
use super::history::HistoryStatements;
use super::locks::LOCK_KEYS;

/// The prepared write statements.
pub(super) struct Statements {
    pub(super) lock: Statement,
    pub(super) failing: Statement,
    pub(super) recovered: Statement,
    pub(super) repair: Statement,
    pub(super) retirement: Statement,
    pub(super) alive: Statement,
    pub(super) grant: Statement,
    pub(super) grants_read: Statement,
    pub(super) history: HistoryStatements,
}

impl Statements {
    /// Prepares them on `client`.
    pub(super) async fn prepare(client: &Client) -> Result<Statements, tokio_postgres::Error> {
        Ok(Statements {
            lock: client.prepare(LOCK_KEYS).await?,
            failing: client.prepare(&UPSERT_FAILING).await?,
            recovered: client.prepare(&RECOVERED).await?,
            repair: client.prepare(&UPSERT_REPAIR).await?,
            retirement: client.prepare(&UPSERT_RETIREMENT).await?,
            alive: client.prepare(&UPSERT_ALIVE).await?,
            grant: client.prepare(&UPSERT_GRANT).await?,
            grants_read: client.prepare(&UPSERT_GRANTS_READ).await?,
            history: HistoryStatements::prepare(client).await?,
        })
    }
}

/// When a connection's statements are prepared again: after 16 rounds,
/// then after 64 more, 256 more, … and from then on every 65,536.
///
/// A prepared statement keeps its plan until the statistics of its tables
/// change (autovacuum's analyze, within a minute or so of enough writes). A
/// store made anew is planned as empty, and a backlog taken into it ran at
/// a fraction of its speed for as long as the plans stayed. Prepared again
/// while the tables fill, after analyzing the tables a round looks up
/// (`apply.rs`, `ANALYZE_LOOKED_UP`), the plans follow their size. Preparing
/// costs about a millisecond, analyzing about 90 ms at 50,000 standings;
/// late in a connection's life it comes rarely.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Replan {
    rounds: u32,
    next: u32,
}

/// The rounds before the first preparing again.
const FIRST: u32 = 16;
/// The most rounds between two.
const LAST: u32 = 65_536;

impl Default for Replan {
    fn default() -> Replan {
        Replan {
            rounds: 0,
            next: FIRST,
        }
    }
}

impl Replan {
    /// A round is about to run on the statements prepared: whether they
    /// are prepared again first.
    pub(super) fn round(&mut self) -> bool {
        self.rounds += 1;
        if self.rounds <= self.next {
            return false;
        }
        self.rounds = 1;
        self.next = self.next.saturating_mul(4).min(LAST);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statements_are_prepared_again_after_16_64_256_rounds_and_then_every_65536() {
        let mut replan = Replan::default();
        let again: Vec<u32> = (1..=200_000u32).filter(|_| replan.round()).collect();
        let mut expected = vec![17, 17 + 64, 17 + 64 + 256];
        let mut at = 17 + 64 + 256;
        for gap in [1024, 4096, 16_384, 65_536] {
            at += gap;
            expected.push(at);
        }
        while at + 65_536 <= 200_000 {
            at += 65_536;
            expected.push(at);
        }
        assert_eq!(again, expected);
    }
}
