//! The JSON form: one object on one line, its members in the order of the
//! contract (`machine` for `node show`, `all_well`, `sentence`,
//! `controller`, `unheard`, `retired`, `retiring`, `catching_up`, `faults` when any,
//! `input_refused` when any,
//! `failing`, `repairs`, `grants`, `declaration_errors` when any, then
//! `problems`: the one list every other member is drawn from, each entry
//! its kind, provider, cause, count, since and runbook anchor), each value
//! written by serde.
//! The object is written as it is read: everything up to the opening of
//! `failing` first (flushed), then each standing, then the rest.

use std::io::{self, Write};

use serde::Serialize;

use super::Listing;
use crate::report::{Head, Listed, ProblemEntry, UncheckedGrant, UnreachableGrant};

/// One JSON object.
#[derive(Clone, Copy, Debug, Default)]
pub struct Json {
    listed: u64,
}

fn value(out: &mut dyn Write, value: &impl Serialize) -> io::Result<()> {
    serde_json::to_writer(out, value).map_err(io::Error::from)
}

fn list<T: Serialize>(out: &mut dyn Write, items: impl Iterator<Item = T>) -> io::Result<()> {
    value(out, &items.collect::<Vec<T>>())
}

/// The `grants` member: how many are reachable, those unreachable (a
/// problem each) and those unchecked.
#[derive(Serialize)]
struct GrantsJson<'a> {
    reachable: u64,
    unreachable: Vec<&'a UnreachableGrant>,
    unchecked: &'a [UncheckedGrant],
}

impl Listing for Json {
    fn head(&mut self, out: &mut dyn Write, head: &Head) -> io::Result<()> {
        out.write_all(b"{")?;
        if let Some(machine) = &head.machine {
            out.write_all(b"\"machine\":")?;
            value(out, machine)?;
            out.write_all(b",")?;
        }
        out.write_all(b"\"all_well\":")?;
        value(out, &head.all_well())?;
        out.write_all(b",\"sentence\":")?;
        value(out, &head.sentence)?;
        out.write_all(b",\"controller\":")?;
        value(out, &head.controller)?;
        out.write_all(b",\"unheard\":")?;
        list(out, head.unheard())?;
        out.write_all(b",\"retired\":")?;
        list(out, head.retired(false))?;
        out.write_all(b",\"retiring\":")?;
        list(out, head.retired(true))?;
        out.write_all(b",\"catching_up\":")?;
        list(out, head.catching_up())?;
        if head.faults().next().is_some() {
            out.write_all(b",\"faults\":")?;
            list(out, head.faults())?;
        }
        if head.input_refused().next().is_some() {
            out.write_all(b",\"input_refused\":")?;
            list(out, head.input_refused())?;
        }
        out.write_all(b",\"failing\":[")?;
        out.flush()
    }

    fn standing(&mut self, out: &mut dyn Write, standing: Listed) -> io::Result<()> {
        if self.listed > 0 {
            out.write_all(b",")?;
        }
        self.listed += 1;
        value(out, &standing)
    }

    fn finish(&mut self, out: &mut dyn Write, head: &Head) -> io::Result<()> {
        out.write_all(b"],\"repairs\":")?;
        list(out, head.repairs())?;
        out.write_all(b",\"grants\":")?;
        value(
            out,
            &GrantsJson {
                reachable: head.grants_reachable,
                unreachable: head.unreachable_grants().collect(),
                unchecked: &head.grants_unchecked,
            },
        )?;
        if head.declaration_errors().next().is_some() {
            out.write_all(b",\"declaration_errors\":")?;
            list(out, head.declaration_errors())?;
        }
        out.write_all(b",\"problems\":")?;
        list(out, head.problems.iter().map(ProblemEntry::from))?;
        out.write_all(b"}\n")?;
        out.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{FailingRow, RepairRow};
    use crate::render::write_all;
    use crate::report::{Controller, Problem, Unheard};
    use mesh_protocol::event::Failing;
    use mesh_protocol::event::RepairOutcome;
    use mesh_protocol::Name;
    use mesh_protocol::{Class, ModuleId, Timestamp};

    fn id(text: &str) -> ModuleId {
        ModuleId::parse(text).unwrap()
    }

    fn ts(s: &str) -> Timestamp {
        Timestamp::parse(s).unwrap()
    }

    fn head(machine: Option<&str>, errors: Vec<String>) -> Head {
        let mut problems = vec![
            Problem::ProviderUnheard(Unheard {
                provider: id("identity@id-2"),
                heard_at: None,
                started_at: None,
            }),
            Problem::RepairFault(RepairRow {
                provider: id("identity@id-1"),
                fault: Name::parse("admin-refused").unwrap(),
                outcome: RepairOutcome::Braked,
                detail: "quote \" backslash \\ newline \n".into(),
                next_attempt_at: Some(ts("2028-02-29T23:59:59Z")),
                said_at: ts("2026-10-05T00:09:00Z"),
                repaired: None,
            }),
        ];
        problems.extend(errors.into_iter().map(Problem::DeclarationRefused));
        Head {
            machine: machine.map(str::to_owned),
            sentence: "not all well: 1 consumer failing".into(),
            controller: Controller::following_for_tests(),
            problems,
            grants_reachable: 0,
            grants_unchecked: vec![],
        }
    }

    fn standing() -> Listed {
        Listed {
            row: FailingRow {
                provider: id("postgres@db-1"),
                said: Failing {
                    v: 1,
                    consumer: Name::parse("forge").unwrap(),
                    consumer_machine: Some(Name::parse("app-1").unwrap()),
                    provision: Some("postgres-database".into()),
                    class: Class::CredentialsRejected,
                    error: "password authentication failed for user \"forge\"".into(),
                    since: ts("2026-10-05T00:03:00Z"),
                    attempts: 12,
                    said_at: ts("2026-10-05T00:09:00Z"),
                },
                first_since: None,
            },
            silent_for_seconds: None,
            recurrence: None,
            acknowledged: None,
        }
    }

    fn render(head: &Head, standings: &[Listed]) -> (Vec<u8>, serde_json::Value) {
        let mut out = Vec::new();
        write_all(&mut Json::default(), &mut out, head, standings).unwrap();
        let parsed = serde_json::from_slice(&out).unwrap();
        (out, parsed)
    }

    #[test]
    fn json_has_the_design_shape() {
        let (out, json) = render(&head(None, vec![]), &[standing()]);
        assert!(out.ends_with(b"}\n") && !out[..out.len() - 1].contains(&b'\n'));
        let text = String::from_utf8(out).unwrap();
        assert!(
            text.starts_with(r#"{"all_well":false,"sentence":"not all well"#),
            "{text}"
        );
        // A standing's members in the order docs/contracts/status.md lists
        // them: the provider's, then the `failing` event's but `v`.
        assert!(
            text.contains(
                r#""failing":[{"provider_module":"postgres","provider_machine":"db-1","consumer":"forge","consumer_machine":"app-1","provision":"postgres-database","class":"credentials-rejected","error":"password authentication failed for user \"forge\"","since":"2026-10-05T00:03:00Z","attempts":12,"said_at":"2026-10-05T00:09:00Z","silent_for_seconds":null}]"#
            ),
            "{text}"
        );
        let expected = serde_json::json!({
            "all_well": false,
            "sentence": "not all well: 1 consumer failing",
            "controller": {"following": true, "pulled_at": null, "applied_at": null,
                "following_since": null, "host": null,
                "pid": null, "started_at": null, "record_begins_at": null},
            "retired": [],
            "retiring": [],
            "catching_up": [],
            "unheard": [{"provider_module":"identity","provider_machine":"id-2","heard_at":null,
                "started_at":null}],
            "failing": [{"provider_module":"postgres","provider_machine":"db-1","consumer":"forge",
                "consumer_machine":"app-1","provision":"postgres-database","class":"credentials-rejected",
                "error":"password authentication failed for user \"forge\"","since":"2026-10-05T00:03:00Z",
                "attempts":12,"said_at":"2026-10-05T00:09:00Z","silent_for_seconds":null}],
            "repairs": [{"provider_module":"identity","provider_machine":"id-1","fault":"admin-refused",
                "outcome":"braked","detail":"quote \" backslash \\ newline \n",
                "next_attempt_at":"2028-02-29T23:59:59Z","said_at":"2026-10-05T00:09:00Z"}],
            "grants": {"reachable": 0, "unreachable": [], "unchecked": []},
            "problems": [
                {"kind": "providers_unheard", "provider": "identity@id-2", "cause": "never",
                    "count": 1, "since": null, "runbook": "providers-unheard",
                    "next_step": crate::report::runbook::entry("providers-unheard")
                        .unwrap().next_step},
                {"kind": "repair_faults_open", "provider": "identity@id-1",
                    "cause": "admin-refused", "count": 1, "since": "2026-10-05T00:09:00Z",
                    "runbook": "repair-faults-open",
                    "next_step": crate::report::runbook::entry("repair-faults-open")
                        .unwrap().next_step}
            ]
        });
        assert_eq!(json, expected);
    }

    #[test]
    fn faults_come_before_the_standings_and_only_when_any() {
        let mut h = head(None, vec![]);
        h.problems.extend(
            [crate::report::Faulted {
                provider: id("postgres@db-1"),
                class: Class::CredentialsRejected,
                error: "password authentication failed for user \"mesh_admin\"".into(),
                since: ts("2026-10-05T00:04:00Z"),
                said_at: ts("2026-10-05T00:05:00Z"),
            }]
            .map(Problem::ProviderFault),
        );
        let (out, json) = render(&h, &[standing()]);
        let text = String::from_utf8(out).unwrap();
        assert!(
            text.contains(r#""catching_up":[],"faults":[{"provider_module":"postgres","provider_machine":"db-1","class":"credentials-rejected","#),
            "{text}"
        );
        assert!(text.find(r#""faults""#) < text.find(r#""failing""#));
        assert_eq!(json["faults"][0]["since"], "2026-10-05T00:04:00Z");
        let (_, json) = render(&head(None, vec![]), &[]);
        assert!(json.get("faults").is_none(), "{json}");
    }

    #[test]
    fn refused_input_comes_after_the_faults_before_the_standings_and_only_when_any() {
        let mut h = head(None, vec![]);
        h.problems.extend(
            [crate::report::InputRefused {
                input: crate::report::Input::Contributions,
                provider: id("postgres@db-1"),
                index: Some(3),
                reason: "provision: it is empty".into(),
                required: vec![id("forge@app-1")],
                said_at: ts("2026-10-05T00:05:00Z"),
            }]
            .map(Problem::InputRefused),
        );
        let (out, _) = render(&h, &[standing()]);
        let text = String::from_utf8(out).unwrap();
        assert!(
            text.contains(
                r#""catching_up":[],"input_refused":[{"provider_module":"postgres","provider_machine":"db-1","input":"contributions","index":3,"reason":"provision: it is empty","required":["forge@app-1"],"said_at":"2026-10-05T00:05:00Z"}],"failing":["#
            ),
            "{text}"
        );
        let (_, json) = render(&head(None, vec![]), &[]);
        assert!(json.get("input_refused").is_none(), "{json}");
    }

    #[test]
    fn machine_first_and_refused_entries_last() {
        let (out, json) = render(&head(Some("db-1"), vec!["modules[0]: bad".into()]), &[]);
        assert!(out.starts_with(br#"{"machine":"db-1","all_well""#));
        assert_eq!(json["failing"], serde_json::json!([]));
        assert_eq!(
            json["declaration_errors"],
            serde_json::json!(["modules[0]: bad"])
        );
        let (_, json) = render(&head(None, vec![]), &[standing(), standing(), standing()]);
        assert_eq!(json["failing"].as_array().unwrap().len(), 3);
        assert!(json.get("machine").is_none() && json.get("declaration_errors").is_none());
    }

    #[test]
    fn an_acknowledgement_is_said_beside_the_standing_and_changes_no_verdict() {
        let mut acked = standing();
        acked.acknowledged = Some(crate::model::AckRow::for_tests(
            "forge",
            "restoring the dump",
        ));
        let (_, json) = render(&head(None, vec![]), &[acked]);
        assert_eq!(json["all_well"], false);
        assert_eq!(
            json["failing"][0]["acknowledged"],
            serde_json::json!({"reason": "restoring the dump", "by": "ana",
                "at": "2026-10-05T00:10:00Z", "until": "2026-10-05T04:00:00Z"})
        );
        let (_, json) = render(&head(None, vec![]), &[standing()]);
        assert!(json["failing"][0].get("acknowledged").is_none(), "{json}");
    }
}
