//! Declared but retired: a consumer the declaration still requires from a
//! provider, which that provider last said it `retired` (or `deleted`),
//! breaks all-well and is named (pure).
//!
//! Rules (the store picks the rows, see `store::read`):
//! - The provider's newest retirement event for the consumer counts, in
//!   stream order; `approved` is a person's intent, not a state, and does
//!   not count.
//! - `retired` (disabled, nothing deleted) and `deleted` (its data deleted,
//!   on a person's approval) name it; `re-enabled` does not.
//! - A later event of that provider saying the consumer is served again (a
//!   `recovered` for a success: a deleted consumer made anew) or attempted
//!   again (a `failing`, listed as such) ends it.
//! - The likely cause: the provider's contributions file no longer lists
//!   the consumer although the declaration requires it (an old file, or a
//!   declaration the file was not rendered from again).
//! - Retiring, not only retired: `retiring` (the provider counts down to
//!   retire it, at `retire_at`) names it too, at once, apart from the
//!   retired ones; `cancelled` (listed again, or no longer held) ends it
//!   like `re-enabled`. A countdown said before the provider's newest start
//!   is over (a restart starts every count over, and says a countdown that
//!   still runs again), so it is not named ([`current`]).

use mesh_protocol::event::RetirementAction;
use mesh_protocol::{ModuleId, Name, Timestamp};
use serde::Serialize;

use crate::model::row::provider_members;
use crate::model::{AliveRow, Declaration, RetiredRow};

/// A consumer the declaration requires that its provider retired or
/// deleted. Its JSON is an entry of `retired` in `status --json`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Retired {
    /// The provider, written as `provider_module` and `provider_machine`.
    #[serde(flatten, serialize_with = "provider_members")]
    pub provider: ModuleId,
    /// The consumer.
    pub consumer: Name,
    /// The consumer's machine, as the declaration has it.
    pub consumer_machine: Name,
    /// `retiring`, `retired` or `deleted`.
    pub action: RetirementAction,
    /// As the provider said it.
    pub detail: String,
    /// When the provider said it.
    pub said_at: Timestamp,
    /// For `retiring`: when the provider will retire it (absent for the others).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retire_at: Option<Timestamp>,
}

impl Retired {
    /// The line of the human listing (without its indent).
    pub fn line(&self) -> String {
        let when = self
            .retire_at
            .map_or("soon".to_owned(), |at| format!("at {at}"));
        let (what, why) = match self.action {
            RetirementAction::Deleted => (
                "deleted",
                "a person approved its deletion; its contributions file no longer lists it?"
                    .to_owned(),
            ),
            RetirementAction::Retiring => (
                "retiring",
                format!("retired {when} unless its contributions file lists it again"),
            ),
            _ => (
                "retired",
                "its contributions file no longer lists it?".to_owned(),
            ),
        };
        format!(
            "{}@{} {what} by {} although the declaration requires it ({why})",
            self.consumer, self.consumer_machine, self.provider
        )
    }
}

/// Whether a requirement of `consumer` from `provider` is in scope: for
/// `node show MACHINE`, one of the two is on it.
fn in_scope(provider: &ModuleId, consumer: &ModuleId, machine: Option<&str>) -> bool {
    machine.is_none_or(|m| provider.machine.as_str() == m || consumer.machine.as_str() == m)
}

/// The (provider, consumer) pairs the declaration requires, in scope,
/// sorted, each once: the store reads their newest retirement.
pub fn required(declaration: &Declaration, machine: Option<&str>) -> Vec<(ModuleId, String)> {
    let mut pairs: Vec<(ModuleId, String)> = declaration
        .modules
        .iter()
        .flat_map(|m| m.requires.iter().map(move |r| (m, r)))
        .filter(|(m, r)| in_scope(&r.from, &m.id, machine))
        .map(|(m, r)| (r.from.clone(), m.id.module.to_string()))
        .collect();
    pairs.sort_unstable();
    pairs.dedup();
    pairs
}

/// The entries of the rows the store read, one per declared module that
/// requires from that provider under that name, in scope.
pub fn retired(
    declaration: &Declaration,
    machine: Option<&str>,
    rows: &[RetiredRow],
) -> Vec<Retired> {
    let mut entries = Vec::new();
    for row in rows {
        for m in &declaration.modules {
            let requires = m.requires.iter().any(|r| r.from == row.provider);
            if m.id.module == row.consumer && requires && in_scope(&row.provider, &m.id, machine) {
                entries.push(Retired {
                    provider: row.provider.clone(),
                    consumer: row.consumer.clone(),
                    consumer_machine: m.id.machine.clone(),
                    action: row.action,
                    detail: row.detail.clone(),
                    said_at: row.said_at,
                    retire_at: row.retire_at,
                });
            }
        }
    }
    entries.sort_by(|a, b| {
        (&a.provider, &a.consumer, &a.consumer_machine).cmp(&(
            &b.provider,
            &b.consumer,
            &b.consumer_machine,
        ))
    });
    entries.dedup();
    entries
}

/// Whether `entry` still holds, given the newest `alive` of each provider:
/// a `retiring` said before its provider's newest start does not (that
/// countdown ended with the process; a new one is said if it runs again).
pub fn current(entry: &Retired, alive: &[AliveRow]) -> bool {
    entry.action != RetirementAction::Retiring
        || !alive
            .iter()
            .any(|a| a.provider == entry.provider && a.started_at > entry.said_at)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::declaration::parse;

    fn declaration() -> Declaration {
        parse(
            r#"{"modules":[
              {"module":"postgres","machine":"db-1","provides":["postgres-database"]},
              {"module":"postgres","machine":"db-2","provides":["postgres-database"]},
              {"module":"forge","machine":"app-1","requires":[
                {"provision":"postgres-database","from":"postgres@db-1"}]},
              {"module":"wiki","machine":"app-2","requires":[
                {"provision":"postgres-database","from":"postgres@db-1"},
                {"provision":"postgres-database","from":"postgres@db-2"}]}
            ]}"#,
        )
        .unwrap()
        .declaration
    }

    fn id(s: &str) -> ModuleId {
        ModuleId::parse(s).unwrap()
    }

    fn row(provider: &str, consumer: &str, action: RetirementAction) -> RetiredRow {
        RetiredRow {
            provider: id(provider),
            consumer: Name::parse(consumer).unwrap(),
            action,
            detail: "disabled, nothing deleted".into(),
            said_at: Timestamp::parse("2026-10-05T00:09:00Z").unwrap(),
            retire_at: (action == RetirementAction::Retiring)
                .then(|| Timestamp::parse("2026-10-05T00:19:00Z").unwrap()),
        }
    }

    #[test]
    fn the_required_pairs_in_scope() {
        let text = |pairs: Vec<(ModuleId, String)>| -> Vec<String> {
            pairs.iter().map(|(p, c)| format!("{p} {c}")).collect()
        };
        let d = declaration();
        assert_eq!(
            text(required(&d, None)),
            [
                "postgres@db-1 forge",
                "postgres@db-1 wiki",
                "postgres@db-2 wiki"
            ]
        );
        assert_eq!(text(required(&d, Some("db-2"))), ["postgres@db-2 wiki"]);
        assert_eq!(
            text(required(&d, Some("app-2"))),
            ["postgres@db-1 wiki", "postgres@db-2 wiki"]
        );
        assert!(required(&d, Some("nowhere")).is_empty());
    }

    #[test]
    fn entries_and_their_lines() {
        let d = declaration();
        let rows = [
            row("postgres@db-1", "forge", RetirementAction::Retired),
            row("postgres@db-2", "wiki", RetirementAction::Deleted),
            // Not declared as a consumer of that provider: not named.
            row("postgres@db-2", "forge", RetirementAction::Retired),
            row("postgres@db-1", "wiki", RetirementAction::Retiring),
        ];
        // (scope, lines)
        let cases: [(Option<&str>, &[&str]); 3] = [
            (
                None,
                &[
                    "forge@app-1 retired by postgres@db-1 although the declaration requires it \
                     (its contributions file no longer lists it?)",
                    "wiki@app-2 retiring by postgres@db-1 although the declaration requires it \
                     (retired at 2026-10-05T00:19:00Z unless its contributions file lists it \
                     again)",
                    "wiki@app-2 deleted by postgres@db-2 although the declaration requires it (a \
                     person approved its deletion; its contributions file no longer lists it?)",
                ],
            ),
            (
                Some("app-1"),
                &[
                    "forge@app-1 retired by postgres@db-1 although the declaration requires it \
                   (its contributions file no longer lists it?)",
                ],
            ),
            (Some("db-3"), &[]),
        ];
        for (machine, lines) in cases {
            let entries = retired(&d, machine, &rows);
            let got: Vec<String> = entries.iter().map(Retired::line).collect();
            assert_eq!(got, lines, "{machine:?}");
        }
        let json = serde_json::to_value(&retired(&d, None, &rows[..1])[0]).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"provider_module":"postgres","provider_machine":"db-1",
                "consumer":"forge","consumer_machine":"app-1","action":"retired",
                "detail":"disabled, nothing deleted","said_at":"2026-10-05T00:09:00Z"})
        );
        let json = serde_json::to_value(&retired(&d, None, &rows[3..])[0]).unwrap();
        assert_eq!(json["action"], "retiring");
        assert_eq!(json["retire_at"], "2026-10-05T00:19:00Z");
    }

    /// A countdown said before its provider's newest start is over; one
    /// published since, and every retired or deleted event, holds.
    #[test]
    fn a_countdown_from_before_the_providers_start_is_over() {
        let d = declaration();
        let alive = |provider: &str, started: &str| AliveRow {
            provider: id(provider),
            started_at: Timestamp::parse(started).unwrap(),
            alive_every_seconds: 60,
            settled_at: None,
            repeat_every_seconds: None,
            said_at: Timestamp::parse("2026-10-05T00:10:00Z").unwrap(),
            stored_at: None,
            fault: None,
            contributions: None,
        };
        // (action, provider's start, still holds)
        let cases = [
            (RetirementAction::Retiring, None, true),
            (
                RetirementAction::Retiring,
                Some("2026-10-05T00:08:00Z"),
                true,
            ),
            (
                RetirementAction::Retiring,
                Some("2026-10-05T00:09:00Z"),
                true,
            ),
            (
                RetirementAction::Retiring,
                Some("2026-10-05T00:09:30Z"),
                false,
            ),
            (
                RetirementAction::Retired,
                Some("2026-10-05T00:09:30Z"),
                true,
            ),
            (
                RetirementAction::Deleted,
                Some("2026-10-05T00:09:30Z"),
                true,
            ),
        ];
        for (action, started, holds) in cases {
            let entry = &retired(&d, None, &[row("postgres@db-1", "forge", action)])[0];
            let alive: Vec<AliveRow> = started
                .iter()
                .map(|s| alive("postgres@db-1", s))
                .chain([alive("postgres@db-2", "2026-10-05T00:09:59Z")])
                .collect();
            assert_eq!(current(entry, &alive), holds, "{action} {started:?}");
        }
    }
}
