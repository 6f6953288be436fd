//! Which standings a status read selects ([`SELECTED`]), and the
//! statements that count and list them: all in order, or at most some of
//! each provider and class with each group's count (the console's pages).

use mesh_status::store::Order;

/// The rule of a provider's start ([`SELECTED`]): a standing published
/// before its provider's newest start is left out once that provider is
/// settled.
#[cfg(not(mesh_mutant = "no-settled-rule"))]
macro_rules! settled_rule {
    () => {
        "
  AND NOT EXISTS (
      SELECT 1 FROM alive a
      WHERE a.provider_module = f.provider_module AND a.provider_machine = f.provider_machine
        AND a.settled_at IS NOT NULL
        AND CASE WHEN f.stored_at IS NOT NULL AND a.stored_at IS NOT NULL
                 THEN f.stored_at < a.stored_at - (a.said_at - a.started_at)
                 ELSE f.said_at <= a.started_at END)"
    };
}

/// The planted mutation `mesh_mutant="no-settled-rule"` (scripts/mutants): no standing is
/// left out at a provider's start.
#[cfg(mesh_mutant = "no-settled-rule")]
macro_rules! settled_rule {
    () => {
        ""
    };
}

/// What selects a standing besides its provider key: `$2` (machine, or
/// null), `$3` (consumer, or null) and the rule of a provider's start.
macro_rules! narrowed {
    () => {
        concat!(
            "($2::text IS NULL OR f.provider_machine = $2 OR f.consumer_machine = $2)
  AND ($3::text IS NULL OR f.consumer = $3)",
            settled_rule!()
        )
    };
}

/// The standings `$1` (providers), `$2` (machine, or null) and `$3`
/// (consumer, or null) select. A
/// standing published before its provider's newest start is left out once
/// that provider is settled: from then on it has published `failing` again
/// for every consumer it still keeps failing, so an older event is one it
/// no longer has. "Before" is read on the stream's clock where both stored
/// times are kept (the start: the `alive`'s stored time less the run's age
/// when it said it), else on the provider's (or in the same second: times
/// are whole seconds, and a provider publishes `failing` only
/// `failing_after` after it started).
///
/// The provider key is written exactly as the statistics of migration V7
/// (`failing_provider`) are: with them the planner knows how many rows the
/// providers select, and plans the count (one core or two) and the listing
/// (the key's index or a sort) for the rows there are, not for a guess;
/// migration V15 indexes it with the consumer, so a read of chosen
/// providers or of one consumer reads their standings alone.
///
/// `mesh_status::model::AliveRow::outlived` is the same rule in Rust.
const SELECTED: &str = concat!(
    "
FROM failing f
WHERE f.provider_module || '@' || f.provider_machine = ANY($1::text[])
  AND ",
    narrowed!()
);

/// Which standings a count reads: those of providers chosen from the
/// declared ones (a provider's page) or of one consumer, found by their
/// index; or, reading every declared provider (the mesh, a machine),
/// every standing, the provider key tested on the groups ([`KEPT`])
/// instead: there the key leaves out only providers no longer declared,
/// whichever few or many the declaration holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Reach {
    Narrow,
    Wide,
}

impl Reach {
    pub(super) fn of(providers_chosen: bool, consumer: bool) -> Self {
        if providers_chosen || consumer {
            Reach::Narrow
        } else {
            Reach::Wide
        }
    }
}

/// What a count scans: [`SELECTED`] for a narrow read, else [`SELECTED`]
/// without the provider key.
///
/// `status` and the mesh page put the declaration's every module in `$1`,
/// so there the key leaves out only the standings of a provider no longer
/// declared. Tested on each standing (a concatenation, then a search of
/// `$1`) it cost a quarter of the count: at 100,000 standings of 100
/// providers, a count by provider and class took 28–29 ms in psql with it
/// and 22 ms with the key tested on the groups, run in turn (the plain
/// count the sentence once waited on: 21–25 ms).
fn scanned(reach: Reach) -> &'static str {
    match reach {
        Reach::Narrow => SELECTED,
        Reach::Wide => concat!(
            "
FROM failing f
WHERE ",
            narrowed!()
        ),
    }
}

/// The groups [`scanned`] counted whose provider is one of `$1` (the
/// key of [`SELECTED`], tested on each group).
const KEPT: &str = "g.provider_module || '@' || g.provider_machine = ANY($1::text[])";

/// The standings of one group of a capped listing (`g`, a provider and
/// class [`SELECTED`] selects), selected as [`SELECTED`] does but for the
/// provider key: `g`'s provider is one of `$1`. Said again, PostgreSQL takes
/// the key's condition for another filter, and plans each group's first
/// standings as a sort of all of them rather than the cause index's first
/// rows (2 ms a group on a machine's page at 100,000 standings, against
/// 0.02 ms).
const OF_GROUP: &str = concat!(
    "
FROM failing f
WHERE f.provider_module = g.provider_module AND f.provider_machine = g.provider_machine
  AND f.class COLLATE \"C\" = g.class COLLATE \"C\"
  AND ",
    narrowed!()
);

/// One snapshot for the counts and the listing. The count runs at the
/// default cost of random page reads (4): counting every standing,
/// PostgreSQL then scans the table, where costed lower it walks the
/// primary key's index row by row to feed its anti-join with the
/// providers' starts (at 100,000 standings 58 ms against 34 for the
/// scan); a narrow count still takes its indexes. [`INDEX_COSTS`] is set
/// with the streamed listing, not here.
/// Nothing is compiled to machine code (JIT):
/// over 100,000 standings that took 40–55 ms for a read that runs in 25.
/// Starting a parallel worker is costed at a tenth of the default: a
/// narrow count misjudges how many rows the providers' key selects (a
/// concatenation), so at 100,000 standings it ran on one core in 137 ms
/// where two take 76.
pub(super) const BEGIN: &str = "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY; \
                     SET LOCAL jit = off; SET LOCAL parallel_setup_cost = 100";

/// For the streamed listing, set in the same pipeline as its statement:
/// random page reads are costed as what they are for a store that is in
/// memory (the default, 4, is for spinning disks). Then PostgreSQL walks
/// the primary key's index for the whole listing, whose first row comes
/// at once, instead of sorting every row first; for a narrow `node show`
/// it still sorts the few rows it selects. Not with the count: a statement
/// is planned when it is bound, which is after its statement is prepared,
/// so a setting sent behind the count in one pipeline is in force when
/// the count is planned.
pub(super) const INDEX_COSTS: &str = "SET LOCAL random_page_cost = 1.1";

/// The standings [`scanned`] counted by provider and class, each group
/// with how many of it are silent (published at or before `$4`): a
/// statement's first part, naming the groups `g`. Materialised, so that
/// PostgreSQL does not move [`KEPT`] back into the scan.
fn groups(reach: Reach) -> String {
    let scanned = scanned(reach);
    format!(
        "WITH g AS MATERIALIZED (
    SELECT f.provider_module, f.provider_machine, f.class, count(*) AS n,
           count(*) FILTER (WHERE f.said_at <= $4::timestamptz) AS silent
    {scanned}
    GROUP BY f.provider_module, f.provider_machine, f.class)"
    )
}

/// The standings selected, counted by provider and class, each group with
/// how many of it are silent (published at or before `$4`), in cause
/// order.
pub(super) fn count_selected(reach: Reach) -> String {
    let groups = groups(reach);
    format!(
        "{groups}
SELECT g.provider_module, g.provider_machine, g.class, g.n, g.silent
FROM g WHERE {KEPT}
ORDER BY g.provider_module, g.provider_machine, g.class COLLATE \"C\""
    )
}

pub(super) fn list_selected(order: Order) -> String {
    let order = match order {
        Order::Key => "f.provider_module, f.provider_machine, f.consumer",
        // Served by the index `failing_by_cause` (migration V8).
        Order::Cause => {
            "f.provider_module, f.provider_machine, f.class COLLATE \"C\", \
             f.error COLLATE \"C\", f.consumer"
        }
    };
    format!(
        "SELECT {LISTED}
         {SELECTED}
         ORDER BY {order}"
    )
}

/// The columns a standing is listed with, in `failing_row`'s order.
const LISTED: &str = "f.provider_module, f.provider_machine, f.consumer, f.consumer_machine,
     f.provision, f.class, f.error, f.since, f.attempts, f.said_at,
     CASE WHEN f.first_since < f.since THEN f.first_since END";

/// At most `$5` standings of each provider and class, in cause order, each
/// with its group's count and how many of the group are silent (published
/// at or before `$4`) after the listed columns. The groups are counted in
/// one pass; each group's first standings come from the index
/// `failing_by_cause`, so the whole mesh's 100,000 standings are counted,
/// not sent.
pub(super) fn list_capped(reach: Reach) -> String {
    let groups = groups(reach);
    format!(
        "{groups}
SELECT s.*, g.n, g.silent
FROM g CROSS JOIN LATERAL (
    SELECT {LISTED}
    {OF_GROUP}
    ORDER BY f.class COLLATE \"C\", f.error COLLATE \"C\", f.consumer
    LIMIT $5) s
WHERE {KEPT}
ORDER BY s.provider_module, s.provider_machine, s.class COLLATE \"C\",
         s.error COLLATE \"C\", s.consumer"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chosen_providers_or_one_consumer_is_a_narrow_read() {
        assert_eq!(Reach::of(true, false), Reach::Narrow);
        assert_eq!(Reach::of(false, true), Reach::Narrow);
        assert_eq!(Reach::of(true, true), Reach::Narrow);
        assert_eq!(Reach::of(false, false), Reach::Wide);
        assert!(!scanned(Reach::Wide).contains("$1"));
        assert!(scanned(Reach::Narrow).contains("$1"));
        assert!(count_selected(Reach::Wide).contains(KEPT));
    }
}
