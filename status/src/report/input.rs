//! Refused input (pure): a provider heard from whose newest `alive` says
//! that its contributions file cannot be taken, or that an entry of it was
//! refused, holds back consumers the declaration requires from it. That
//! breaks all-well at once: no `failing` ever comes for a consumer whose
//! entry was refused (it is not served, or served from a stale entry), and
//! a provider serving its last good list makes no change of the file.
//!
//! Rules:
//! - Only a consumer the declaration requires from that provider counts
//!   (in scope for `node show MACHINE`: the provider or the consumer is on
//!   it). A refused entry of a consumer the declaration does not require
//!   from it breaks nothing here (the provider's metrics still count it).
//! - A refused entry counts for every declared module of its consumer's
//!   name that requires from the provider; an entry whose consumer could
//!   not be read as a name counts for none.
//! - A file that cannot be taken counts when the provider has at least one
//!   required consumer in scope, naming them all.
//! - Only a provider *heard from* is named (as for a provider fault), from
//!   its newest `alive`; one older than the field (no `contributions`) is
//!   unknown, never refused.
//!
//! The grant agent's grants file ([`refused_grants`]), from its newest
//! `grant.read`: a consumer whose grants it cannot check is not shown
//! reachable, and nothing else would say so. The agent is named
//! `mesh-grants@MACHINE`.
//! - Only a consumer declared on that machine that requires something
//!   counts (in scope for `node show MACHINE`: that machine).
//! - A refused entry counts for the declared module of its consumer's name
//!   on that machine; a file that cannot be taken, for every one.

use mesh_protocol::event::ContributionsRead;
use mesh_protocol::subject::grants_agent_emitter;
use mesh_protocol::{ModuleId, Timestamp};
use serde::{Serialize, Serializer};

use crate::model::row::provider_members;
use crate::model::{AliveRow, Declaration, GrantsReadRow};

/// Whose input: a provider's contributions file, or a grant agent's
/// grants file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Input {
    /// A provider's contributions file.
    Contributions,
    /// A machine's grants file (its agent `mesh-grants@MACHINE`).
    Grants,
}

/// Consumers held back by a provider's refused input. Its JSON is an entry
/// of `input_refused` in `status --json`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct InputRefused {
    /// The provider, written as `provider_module` and `provider_machine`.
    #[serde(flatten, serialize_with = "provider_members")]
    pub provider: ModuleId,
    /// Which file: `contributions` (the provider's) or `grants` (the
    /// machine's; `provider` is its agent `mesh-grants@MACHINE`).
    pub input: Input,
    /// The entry refused, from 0; `None` (null) when the file as a whole
    /// cannot be taken.
    pub index: Option<u64>,
    /// Why: the entry's reason, or the file's problem (naming the file).
    pub reason: String,
    /// The consumers the declaration requires from the provider that it
    /// holds back, `module@machine`.
    #[serde(serialize_with = "ids")]
    pub required: Vec<ModuleId>,
    /// When the `alive` that says it was published.
    pub said_at: Timestamp,
}

fn ids<S: Serializer>(ids: &[ModuleId], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(ids.iter().map(ToString::to_string))
}

impl InputRefused {
    /// The line of the human listing (without its indent).
    pub fn line(&self) -> String {
        let required = self
            .required
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(", ");
        match (self.input, self.index) {
            (Input::Grants, None) => format!(
                "{} cannot take its grants file: {}; it checks its last good list, if it has one \
                 (consumers on it: {required})",
                self.provider, self.reason
            ),
            (Input::Grants, Some(index)) => format!(
                "{required}: grants not checked: {} refused its grants entry {index}: {}",
                self.provider, self.reason
            ),
            (Input::Contributions, None) => format!(
                "{} cannot take its contributions file: {}; it serves its last good list, if it \
                 has one ({required} required)",
                self.provider, self.reason
            ),
            (Input::Contributions, Some(index)) => {
                format!(
                "{required} {} held back by {}: its contributions entry {index} was refused: {}",
                if self.required.len() == 1 { "is" } else { "are" },
                self.provider,
                self.reason
            )
            }
        }
    }
}

/// The refused input the newest `alive` of a provider heard from says,
/// for the consumers `declaration` requires from it in scope (`machine`
/// for `node show`); the file first, then the entries in file order.
pub fn refused(
    declaration: &Declaration,
    machine: Option<&str>,
    alive: &AliveRow,
) -> Vec<InputRefused> {
    let Some(read) = &alive.contributions else {
        return Vec::new();
    };
    let provider = &alive.provider;
    let required: Vec<ModuleId> = declaration
        .modules
        .iter()
        .filter(|m| m.requires.iter().any(|r| &r.from == provider))
        .filter(|m| {
            machine.is_none_or(|on| provider.machine.as_str() == on || m.id.machine.as_str() == on)
        })
        .map(|m| m.id.clone())
        .collect();
    held_back(
        provider,
        Input::Contributions,
        read,
        required,
        alive.said_at,
    )
}

/// What `read` (the newest of `source`'s `input`, said at `said_at`) holds
/// back of `required`: the file, naming them all, then each entry whose
/// consumer is among them.
fn held_back(
    source: &ModuleId,
    input: Input,
    read: &ContributionsRead,
    mut required: Vec<ModuleId>,
    said_at: Timestamp,
) -> Vec<InputRefused> {
    required.sort_unstable();
    required.dedup();
    let mut out = Vec::new();
    if required.is_empty() {
        return out;
    }
    let entry = |index: Option<u64>, reason: &str, required: Vec<ModuleId>| InputRefused {
        provider: source.clone(),
        input,
        index,
        reason: reason.to_owned(),
        required,
        said_at,
    };
    if !read.readable {
        let problem = read.problem.as_deref().unwrap_or("(no reason given)");
        out.push(entry(None, problem, required.clone()));
    }
    for r in &read.refused {
        let Some(consumer) = &r.consumer else {
            continue;
        };
        let held: Vec<ModuleId> = required
            .iter()
            .filter(|id| &id.module == consumer)
            .cloned()
            .collect();
        if !held.is_empty() {
            out.push(entry(Some(r.index), &r.reason, held));
        }
    }
    out
}

/// What the newest `grant.read` of `row`'s machine refused, for the
/// consumers declared on it that require something, in scope (`machine`
/// for `node show`): the file first, then the entries in file order.
pub fn refused_grants(
    declaration: &Declaration,
    machine: Option<&str>,
    row: &GrantsReadRow,
) -> Vec<InputRefused> {
    if machine.is_some_and(|on| on != row.machine.as_str()) {
        return Vec::new();
    }
    let required: Vec<ModuleId> = declaration
        .modules
        .iter()
        .filter(|m| m.id.machine == row.machine && !m.requires.is_empty())
        .map(|m| m.id.clone())
        .collect();
    let agent = ModuleId::new(grants_agent_emitter(), row.machine.clone());
    held_back(&agent, Input::Grants, &row.read, required, row.said_at)
}

/// How many providers `entries` name (each counted once).
pub fn providers(entries: &[InputRefused]) -> usize {
    let mut named: Vec<&ModuleId> = entries.iter().map(|e| &e.provider).collect();
    named.sort_unstable();
    named.dedup();
    named.len()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::declaration::parse;
    use mesh_protocol::event::{ContributionsRead, RefusedContribution};
    use mesh_protocol::Name;

    fn ts(s: &str) -> Timestamp {
        Timestamp::parse(s).unwrap()
    }

    fn declaration() -> Declaration {
        parse(
            r#"{"modules":[
              {"module":"postgres","machine":"db-1","provides":["postgres-database"]},
              {"module":"forge","machine":"app-1","requires":[
                {"provision":"postgres-database","from":"postgres@db-1"}]},
              {"module":"forge","machine":"app-2","requires":[
                {"provision":"postgres-database","from":"postgres@db-1"}]},
              {"module":"wiki","machine":"app-3","requires":[
                {"provision":"postgres-database","from":"postgres@db-1"}]},
              {"module":"cms","machine":"app-1"}
            ]}"#,
        )
        .unwrap()
        .declaration
    }

    fn alive(contributions: Option<ContributionsRead>) -> AliveRow {
        AliveRow {
            provider: ModuleId::parse("postgres@db-1").unwrap(),
            started_at: ts("2026-10-05T00:00:00Z"),
            alive_every_seconds: 60,
            settled_at: None,
            repeat_every_seconds: Some(900),
            said_at: ts("2026-10-05T00:05:00Z"),
            stored_at: None,
            fault: None,
            contributions,
        }
    }

    fn entry(index: u64, consumer: Option<&str>) -> RefusedContribution {
        RefusedContribution {
            index,
            consumer: consumer.map(|c| Name::parse(c).unwrap()),
            reason: "provision: it is empty".into(),
        }
    }

    fn read(readable: bool, refused: Vec<RefusedContribution>) -> Option<ContributionsRead> {
        Some(ContributionsRead {
            readable,
            problem: (!readable)
                .then(|| "contributions file /etc/mesh/c.json is malformed: EOF".to_owned()),
            refused,
            more: 0,
        })
    }

    #[test]
    fn only_a_consumer_the_declaration_requires_from_the_provider_is_held_back() {
        // (what the alive says, scope, the lines)
        let cases: Vec<(Option<ContributionsRead>, Option<&str>, Vec<&str>)> = vec![
            // An older provider: unknown, never refused.
            (None, None, vec![]),
            (read(true, vec![]), None, vec![]),
            // Not required from it (cms requires nothing), or no name: nothing.
            (
                read(true, vec![entry(0, Some("cms")), entry(1, None)]),
                None,
                vec![],
            ),
            (
                read(true, vec![entry(3, Some("wiki"))]),
                None,
                vec![
                    "wiki@app-3 is held back by postgres@db-1: its contributions entry 3 was \
                     refused: provision: it is empty",
                ],
            ),
            // Every declared module of that name.
            (
                read(true, vec![entry(0, Some("forge"))]),
                None,
                vec![
                    "forge@app-1, forge@app-2 are held back by postgres@db-1: its contributions \
                     entry 0 was refused: provision: it is empty",
                ],
            ),
            // A file that cannot be taken names every required consumer;
            // the entries refused in the list it serves follow.
            (
                read(false, vec![entry(2, Some("wiki"))]),
                None,
                vec![
                    "postgres@db-1 cannot take its contributions file: contributions file \
                     /etc/mesh/c.json is malformed: EOF; it serves its last good list, if it has \
                     one (forge@app-1, forge@app-2, wiki@app-3 required)",
                    "wiki@app-3 is held back by postgres@db-1: its contributions entry 2 was \
                     refused: provision: it is empty",
                ],
            ),
            // node show app-1: only what is required on it.
            (
                read(false, vec![entry(2, Some("wiki"))]),
                Some("app-1"),
                vec![
                    "postgres@db-1 cannot take its contributions file: contributions file \
                     /etc/mesh/c.json is malformed: EOF; it serves its last good list, if it has \
                     one (forge@app-1 required)",
                ],
            ),
            // node show cms's machine of nothing required: nothing.
            (read(false, vec![]), Some("app-9"), vec![]),
            // The provider's own machine: all of it.
            (
                read(true, vec![entry(2, Some("wiki"))]),
                Some("db-1"),
                vec![
                    "wiki@app-3 is held back by postgres@db-1: its contributions entry 2 was \
                     refused: provision: it is empty",
                ],
            ),
        ];
        for (said, machine, expected) in cases {
            let found = refused(&declaration(), machine, &alive(said.clone()));
            let lines: Vec<String> = found.iter().map(InputRefused::line).collect();
            assert_eq!(lines, expected, "{said:?} {machine:?}");
            assert_eq!(providers(&found), usize::from(!expected.is_empty()));
        }
    }

    #[test]
    fn a_provider_that_requires_nothing_of_its_file_breaks_nothing() {
        let mut d = declaration();
        d.modules.retain(|m| m.requires.is_empty());
        assert!(refused(&d, None, &alive(read(false, vec![]))).is_empty());
    }

    #[test]
    fn its_json_names_the_provider_the_entry_and_the_required_consumers() {
        let found = refused(
            &declaration(),
            None,
            &alive(read(false, vec![entry(2, Some("wiki"))])),
        );
        assert_eq!(
            serde_json::to_value(&found).unwrap(),
            serde_json::json!([
                {"provider_module":"postgres","provider_machine":"db-1","input":"contributions",
                 "index":null,
                 "reason":"contributions file /etc/mesh/c.json is malformed: EOF",
                 "required":["forge@app-1","forge@app-2","wiki@app-3"],
                 "said_at":"2026-10-05T00:05:00Z"},
                {"provider_module":"postgres","provider_machine":"db-1","input":"contributions",
                 "index":2,
                 "reason":"provision: it is empty","required":["wiki@app-3"],
                 "said_at":"2026-10-05T00:05:00Z"}
            ])
        );
    }

    fn grants_read(
        machine: &str,
        readable: bool,
        refused: Vec<RefusedContribution>,
    ) -> GrantsReadRow {
        GrantsReadRow {
            machine: Name::parse(machine).unwrap(),
            file: "/etc/mesh/grants.json".into(),
            read: ContributionsRead {
                readable,
                problem: (!readable)
                    .then(|| "grants file /etc/mesh/grants.json cannot be parsed: EOF".to_owned()),
                refused,
                more: 0,
            },
            said_at: ts("2026-10-05T00:05:00Z"),
        }
    }

    #[test]
    fn a_grants_file_refused_names_the_consumers_on_its_machine_that_require_anything() {
        // (what the agent said, scope, the lines)
        let cases: Vec<(GrantsReadRow, Option<&str>, Vec<&str>)> = vec![
            (grants_read("app-1", true, vec![]), None, vec![]),
            // cms requires nothing; an entry without a name counts for none.
            (
                grants_read("app-1", true, vec![entry(0, Some("cms")), entry(1, None)]),
                None,
                vec![],
            ),
            // forge of app-1 only, not forge of app-2.
            (
                grants_read("app-1", true, vec![entry(2, Some("forge"))]),
                None,
                vec![
                    "forge@app-1: grants not checked: mesh-grants@app-1 refused its grants entry \
                     2: provision: it is empty",
                ],
            ),
            (
                grants_read("app-1", false, vec![]),
                None,
                vec![
                    "mesh-grants@app-1 cannot take its grants file: grants file \
                     /etc/mesh/grants.json cannot be parsed: EOF; it checks its last good list, \
                     if it has one (consumers on it: forge@app-1)",
                ],
            ),
            // node show: its own machine only.
            (grants_read("app-1", false, vec![]), Some("db-1"), vec![]),
            (
                grants_read("app-3", false, vec![]),
                Some("app-3"),
                vec![
                    "mesh-grants@app-3 cannot take its grants file: grants file \
                     /etc/mesh/grants.json cannot be parsed: EOF; it checks its last good list, \
                     if it has one (consumers on it: wiki@app-3)",
                ],
            ),
            // A machine nothing is declared on: nothing.
            (grants_read("app-9", false, vec![]), None, vec![]),
        ];
        for (row, machine, expected) in cases {
            let found = refused_grants(&declaration(), machine, &row);
            let lines: Vec<String> = found.iter().map(InputRefused::line).collect();
            assert_eq!(lines, expected, "{row:?} {machine:?}");
            assert!(found.iter().all(|f| f.input == Input::Grants));
        }
    }
}
