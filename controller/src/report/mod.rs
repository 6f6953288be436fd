//! `status` and `node show`: what the store says, seen through the
//! declaration (pure: no I/O).
//!
//! - [`filter`] turns the declaration and the scope into what the store
//!   reads ([`StatusFilter`]).
//! - [`head`] composes what comes before and around the standings: the
//!   all-well flag, the sentence, the open repair faults, the refused
//!   declaration entries ([`Head`]).
//! - [`standing`] marks one stored failing word silent or not.
//!
//! Rules:
//! - A standing is listed only when its provider is *assigned* where it ran
//!   (the declaration lists that module on that machine).
//! - Any listed standing, open repair fault or refused declaration entry
//!   breaks the all-well sentence.
//! - A standing whose word is older than `silent_after` carries
//!   `silent_for_seconds` (the provider stopped repeating it: it may be gone).

pub mod sentence;

use std::time::{Duration, UNIX_EPOCH};

use mesh_sdk::Timestamp;
use serde::Serialize;

use crate::model::{FailingRow, Parsed, RepairRow};
use crate::store::{Counts, StatusFilter};

pub use sentence::{sentence, Tally};

/// The default `--silent-after`.
pub const DEFAULT_SILENT_AFTER: Duration = Duration::from_secs(30 * 60);

/// What `status` or `node show` looks at.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Scope {
    /// Everything (`status`).
    All,
    /// Standings whose provider or consumer is on this machine, and repairs
    /// of providers on it (`node show MACHINE`).
    Machine(String),
}

impl Scope {
    fn machine(&self) -> Option<&str> {
        match self {
            Scope::All => None,
            Scope::Machine(m) => Some(m),
        }
    }
}

/// The wall time and the silence threshold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Clock {
    /// Now (tests fix it).
    pub now: Timestamp,
    /// A standing not said again for this long is marked silent.
    pub silent_after: Duration,
}

/// One listed standing: a provider says it keeps failing a consumer. Its
/// JSON is the stored word's fields, then `silent_for_seconds`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Standing {
    /// The stored failing word.
    #[serde(flatten)]
    pub row: FailingRow,
    /// Seconds since it was said, when that is at least `silent_after`; else null.
    pub silent_for_seconds: Option<u64>,
}

/// Everything of the report but its standings (listed one by one apart).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Head {
    /// The machine of `node show`; `None` for `status`.
    pub machine: Option<String>,
    /// Nothing failing, no repair fault open, the declaration read whole.
    pub all_well: bool,
    /// The first line: `all well: ...` or `not all well: ...`.
    pub sentence: String,
    /// The open repair faults listed (the newest repair word of each, not `repaired`).
    pub repairs: Vec<RepairRow>,
    /// Declaration entries that were refused (they were not checked).
    pub declaration_errors: Vec<String>,
}

/// Seconds since `said_at` when at least `silent_after` passed; else `None`.
pub fn silent_for(said_at: Timestamp, clock: &Clock) -> Option<u64> {
    let age = clock
        .now
        .system_time()
        .duration_since(said_at.system_time())
        .ok()?;
    (age >= clock.silent_after).then_some(age.as_secs())
}

/// What the store reads for `scope`: the standings of providers assigned
/// where they ran, in scope; silent when said `silent_after` ago or earlier
/// (the same line [`silent_for`] draws).
pub fn filter(declaration: &Parsed, scope: &Scope, clock: &Clock) -> StatusFilter {
    let mut providers: Vec<String> = declaration
        .declaration
        .modules
        .iter()
        .map(|m| m.id.to_string())
        .collect();
    providers.sort_unstable();
    providers.dedup();
    let silent_before = clock
        .now
        .system_time()
        .checked_sub(clock.silent_after)
        .unwrap_or(UNIX_EPOCH);
    StatusFilter {
        providers,
        machine: scope.machine().map(str::to_owned),
        silent_before: Timestamp::from_system(silent_before),
    }
}

/// The report around its standings: the sentence from the store's counts,
/// the open repairs read with them, the refused declaration entries.
pub fn head(
    declaration: &Parsed,
    scope: &Scope,
    counts: Counts,
    repairs: Vec<RepairRow>,
    clock: &Clock,
) -> Head {
    let d = &declaration.declaration;
    let machine = scope.machine();
    let declaration_errors: Vec<String> =
        declaration.refused.iter().map(|e| e.to_string()).collect();
    let providers = d
        .modules
        .iter()
        .filter(|m| d.receives_contributions(&m.id))
        .filter(|m| machine.is_none_or(|s| m.id.machine.as_str() == s))
        .count();
    let tally = Tally {
        failing: counts.standings,
        silent: counts.silent,
        repairs: repairs.len(),
        refused: declaration_errors.len(),
        providers,
        silent_after: clock.silent_after,
        machine,
    };
    Head {
        machine: machine.map(str::to_owned),
        all_well: tally.all_well(),
        sentence: sentence(&tally),
        repairs,
        declaration_errors,
    }
}

/// A stored failing word as listed at `clock`.
pub fn standing(row: FailingRow, clock: &Clock) -> Standing {
    Standing {
        silent_for_seconds: silent_for(row.said_at, clock),
        row,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::declaration::parse;

    fn ts(s: &str) -> Timestamp {
        Timestamp::parse(s).unwrap()
    }

    fn declaration() -> Parsed {
        parse(
            r#"{"modules":[
              {"module":"postgres","machine":"db-1","provides":["postgres-database"]},
              {"module":"identity","machine":"id-1","provides":["oidc-client"]},
              {"module":"forge","machine":"app-1","requires":[
                {"provision":"postgres-database","from":"postgres@db-1"}]}
            ]}"#,
        )
        .unwrap()
    }

    fn clock(now: &str) -> Clock {
        Clock {
            now: ts(now),
            silent_after: DEFAULT_SILENT_AFTER,
        }
    }

    #[test]
    fn silence_table() {
        let said = ts("2026-10-05T00:00:00Z");
        let cases = [
            ("2026-10-05T00:00:00Z", None),
            ("2026-10-05T00:29:59Z", None),
            ("2026-10-05T00:30:00Z", Some(1800)),
            ("2026-10-05T01:00:00Z", Some(3600)),
            ("2026-10-04T23:00:00Z", None),
        ];
        for (now, expected) in cases {
            let c = clock(now);
            assert_eq!(silent_for(said, &c), expected, "{now}");
            // The store's line is the same one.
            let line = filter(&declaration(), &Scope::All, &c).silent_before;
            assert_eq!(said <= line, expected.is_some(), "{now}");
        }
    }

    #[test]
    fn filter_names_every_declared_module_once_and_the_scope() {
        let c = clock("2026-10-05T00:10:00Z");
        let all = filter(&declaration(), &Scope::All, &c);
        assert_eq!(
            all.providers,
            ["forge@app-1", "identity@id-1", "postgres@db-1"]
        );
        assert_eq!(all.machine, None);
        assert_eq!(all.silent_before, ts("2026-10-04T23:40:00Z"));
        let node = filter(&declaration(), &Scope::Machine("db-1".into()), &c);
        assert_eq!(node.machine.as_deref(), Some("db-1"));
    }

    #[test]
    fn head_table() {
        let c = clock("2026-10-05T00:10:00Z");
        let repair = RepairRow {
            provider_module: "identity".into(),
            provider_machine: "id-1".into(),
            fault: "admin-refused".into(),
            outcome: "failed".into(),
            detail: "could not log in".into(),
            next_attempt_at: None,
            said_at: ts("2026-10-05T00:09:00Z"),
        };
        // (scope, counts, repairs, all well, sentence starts with)
        let cases = [
            (
                Scope::All,
                (0, 0),
                0,
                true,
                "all well: none of the 2 providers",
            ),
            (
                Scope::Machine("db-1".into()),
                (0, 0),
                0,
                true,
                "all well: no provider says it keeps failing a consumer whose provider or \
                 consumer is on db-1 (1 provider assigned on db-1)",
            ),
            (
                Scope::All,
                (2, 1),
                1,
                false,
                "not all well: 2 consumers failing (1 not said",
            ),
            (
                Scope::All,
                (0, 0),
                1,
                false,
                "not all well: 0 consumers failing, 1 repair fault open",
            ),
        ];
        for (scope, (standings, silent), repairs, all_well, starts) in cases {
            let counts = Counts { standings, silent };
            let head = head(
                &declaration(),
                &scope,
                counts,
                vec![repair.clone(); repairs],
                &c,
            );
            assert_eq!(head.all_well, all_well, "{scope:?}");
            assert!(head.sentence.starts_with(starts), "{}", head.sentence);
            assert_eq!(head.machine.as_deref(), scope.machine());
        }
        let refused = parse(r#"{"modules":[{"module":"Bad","machine":"m"}]}"#).unwrap();
        let head = head(&refused, &Scope::All, Counts::default(), vec![], &c);
        assert!(!head.all_well);
        assert_eq!(
            head.sentence,
            "not all well: 0 consumers failing, 1 declaration entry refused (not checked)"
        );
        assert_eq!(head.declaration_errors.len(), 1);
    }
}
