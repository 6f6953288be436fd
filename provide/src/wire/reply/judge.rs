//! A reply judged for the verb it answers ([`judge`]): decoded into the
//! verb's typed reply, then read field by field in the contract's order,
//! the first wrong field said as [`Bad`].

use mesh_sdk::{Class, Held, Name};

use super::bad::Bad;
use super::field::{Field, Object, A_STRING, TRUE_OR_FALSE};
use super::parse::ParsedReply;
use super::verbs::{Body, Fault, HeldReply, HelloReply, Reply};
use super::{Answer, Done, Hello};
use crate::wire::verb::Verb;

/// Judges a reply to `verb`. `exited` is the exec mode's exit status
/// (`Some(true)` for exit 0); `None` in serve mode, where the reply alone
/// decides.
///
/// - `{"unsupported": true}` answers any verb so.
/// - Exec: exit 0 is success unless the reply says `"ok": false`; any other
///   exit is a failure, whatever the reply says (its `class` and `error`
///   are read). The reply may be empty (`{}`) for verbs without data.
/// - Serve: every verb but `hello` and `held` says `ok`; `held` says
///   `held` (or `"ok": false`); `hello` may say nothing.
///
/// # Errors
/// [`Bad`] when the reply cannot be one: a missing or mistyped field, an
/// unknown class, a `held` entry that is not a name or comes twice.
pub fn judge(verb: Verb, reply: &ParsedReply, exited: Option<bool>) -> Result<Answer, Bad> {
    let Reply { outcome, body } =
        Reply::decode(verb, &reply.fields).map_err(|error| Bad::Unreadable(error.to_string()))?;
    if outcome.unsupported.read("unsupported", TRUE_OR_FALSE)? == Some(true) {
        return Ok(Answer::Unsupported);
    }
    let said = outcome.ok.read("ok", TRUE_OR_FALSE)?;
    let ok = match exited {
        Some(exit_zero) => exit_zero && said != Some(false),
        None => match said {
            Some(ok) => ok,
            None if verb.says_ok() => return Err(Bad::Missing("\"ok\"")),
            None => true,
        },
    };
    if !ok {
        return Ok(Answer::Refused {
            class: outcome.class.class("class")?,
            error: outcome.error.read("error", A_STRING)?,
        });
    }
    Ok(match body {
        Body::Hello(said) => Answer::Hello(hello(said, reply)?),
        Body::Held(said) => Answer::Held(held(said)?),
        Body::Ensure(said) | Body::Check(said) => Answer::Done(Done {
            mended: said.mended.read("mended", A_STRING)?,
            ..Done::default()
        }),
        Body::Repair(said) => Answer::Done(Done {
            detail: said.detail.read("detail", A_STRING)?,
            ..Done::default()
        }),
        Body::ByHand(said) => Answer::Done(Done {
            works: said.works.read("works", TRUE_OR_FALSE)?,
            reaches: said.reaches.read("reaches", TRUE_OR_FALSE)?,
            left: said.left.read("left", TRUE_OR_FALSE)?,
            ..Done::default()
        }),
        Body::Probe(said) => Answer::Done(Done {
            fault: fault(said.fault)?,
            ..Done::default()
        }),
        Body::Retire | Body::ReEnable | Body::Delete => Answer::Done(Done::default()),
    })
}

/// `held`'s list: each entry a consumer's name, none twice.
fn held(said: HeldReply) -> Result<Vec<Held>, Bad> {
    let items = said
        .held
        .read("held", "a list")?
        .ok_or(Bad::Missing("\"held\""))?;
    let no_consumer = || Bad::WrongType {
        field: "held entry's consumer",
        expected: A_STRING,
    };
    let mut held: Vec<Held> = Vec::with_capacity(items.len());
    let mut seen = std::collections::HashSet::with_capacity(items.len());
    for (index, item) in items.into_iter().enumerate() {
        let Field::Given(Object(entry)) = item else {
            return Err(no_consumer());
        };
        let consumer = entry
            .consumer
            .read("held entry's consumer", A_STRING)?
            .ok_or_else(no_consumer)?;
        let name = Name::parse(&consumer).map_err(|error| Bad::HeldName { index, error })?;
        let retired = entry
            .retired
            .read("held entry's retired", TRUE_OR_FALSE)?
            .unwrap_or(false);
        if !seen.insert(name.clone()) {
            return Err(Bad::HeldTwice(name));
        }
        held.push(Held { name, retired });
    }
    Ok(held)
}

/// `hello`'s answer, with the secrets the reply carried.
fn hello(said: HelloReply, reply: &ParsedReply) -> Result<Hello, Bad> {
    let no_fault = || Bad::WrongType {
        field: "repairs entry's fault",
        expected: A_STRING,
    };
    let mut repairs = Vec::new();
    let items = said.repairs.read("repairs", "a list")?;
    for (index, item) in items.into_iter().flatten().enumerate() {
        let Field::Given(Object(entry)) = item else {
            return Err(no_fault());
        };
        let fault = entry
            .fault
            .read("repairs entry's fault", A_STRING)?
            .ok_or_else(no_fault)?;
        let fault = Name::parse(&fault).map_err(|error| Bad::FaultName { index, error })?;
        let class = entry.class.class("repairs entry's class")?;
        repairs.push((fault, class.unwrap_or(Class::CredentialsRejected)));
    }
    Ok(Hello {
        name: said.name.read("name", A_STRING)?,
        repairs,
        secrets: reply.secrets.clone().unwrap_or_default(),
        fault: fault(said.fault)?,
    })
}

/// The `fault` of a hello or a probe: `{"class": ..., "error": ...}` (both
/// optional: `refused`, and a message of the loop's), or null / absent for none.
fn fault(said: Field<Object<Fault>>) -> Result<Option<(Class, String)>, Bad> {
    let Some(Object(fault)) = said.read("fault", "an object or null")? else {
        return Ok(None);
    };
    let class = fault.class.class("class")?.unwrap_or(Class::Refused);
    let error = fault
        .error
        .read("error", A_STRING)?
        .unwrap_or_else(|| "the hook cannot work as its administrator".to_owned());
    Ok(Some((class, error)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::reply::parse::parse;
    use mesh_sdk::Secret;

    fn n(s: &str) -> Name {
        Name::parse(s).unwrap()
    }

    /// Parses and judges `reply` for `verb`.
    fn judged(verb: Verb, reply: &str, exited: Option<bool>) -> Result<Answer, Bad> {
        judge(verb, &parse(reply.as_bytes())?, exited)
    }

    fn done() -> Answer {
        Answer::Done(Done::default())
    }

    fn refused(class: Option<Class>, error: Option<&str>) -> Answer {
        Answer::Refused {
            class,
            error: error.map(str::to_owned),
        }
    }

    #[test]
    fn replies_in_serve_mode_are_judged_by_what_they_say() {
        use Verb::*;
        let cases: Vec<(Verb, &str, Result<Answer, Bad>)> = vec![
            (Ensure, r#"{"id":1,"ok":true}"#, Ok(done())),
            (
                Ensure,
                r#"{"id":1,"ok":true,"mended":"password set again"}"#,
                Ok(Answer::Done(Done {
                    mended: Some("password set again".into()),
                    ..Done::default()
                })),
            ),
            (
                Check,
                r#"{"id":1,"ok":false,"class":"credentials-rejected","error":"WRONGPASS invalid username-password pair"}"#,
                Ok(refused(
                    Some(Class::CredentialsRejected),
                    Some("WRONGPASS invalid username-password pair"),
                )),
            ),
            (Check, r#"{"id":1,"ok":false}"#, Ok(refused(None, None))),
            (Retire, r#"{"id":1,"ok":true}"#, Ok(done())),
            (
                Delete,
                r#"{"id":1,"unsupported":true}"#,
                Ok(Answer::Unsupported),
            ),
            (
                Hello,
                r#"{"id":1,"unsupported":true}"#,
                Ok(Answer::Unsupported),
            ),
            (
                Repair,
                r#"{"id":1,"ok":true,"detail":"admin password reset"}"#,
                Ok(Answer::Done(Done {
                    detail: Some("admin password reset".into()),
                    ..Done::default()
                })),
            ),
            (
                ByHand,
                r#"{"id":1,"ok":true,"reaches":false}"#,
                Ok(Answer::Done(Done {
                    reaches: Some(false),
                    ..Done::default()
                })),
            ),
            (Check, r#"{"id":1}"#, Err(Bad::Missing("\"ok\""))),
            (
                Check,
                r#"{"id":1,"ok":"yes"}"#,
                Err(Bad::WrongType {
                    field: "ok",
                    expected: "true or false",
                }),
            ),
            (
                Check,
                r#"{"id":1,"ok":false,"class":"wrong-password"}"#,
                Err(Bad::UnknownClass("wrong-password".into())),
            ),
            (
                Check,
                r#"{"id":1,"ok":false,"error":42}"#,
                Err(Bad::WrongType {
                    field: "error",
                    expected: "a string",
                }),
            ),
            (Held, r#"{"id":1}"#, Err(Bad::Missing("\"held\""))),
            (
                Held,
                r#"{"id":1,"ok":false,"error":"down"}"#,
                Ok(refused(None, Some("down"))),
            ),
            (Held, r#"{"id":1,"held":[]}"#, Ok(Answer::Held(vec![]))),
            (
                Held,
                r#"{"id":1,"held":[{"consumer":"forge","retired":false},{"consumer":"wiki","retired":true},{"consumer":"docs"}]}"#,
                Ok(Answer::Held(vec![
                    mesh_sdk::Held::active(n("forge")),
                    mesh_sdk::Held::retired(n("wiki")),
                    mesh_sdk::Held::active(n("docs")),
                ])),
            ),
            (
                Held,
                r#"{"id":1,"held":[{"consumer":"forge"},{"consumer":"forge"}]}"#,
                Err(Bad::HeldTwice(n("forge"))),
            ),
            (
                Held,
                r#"{"id":1,"held":"forge"}"#,
                Err(Bad::WrongType {
                    field: "held",
                    expected: "a list",
                }),
            ),
            (
                Held,
                r#"{"id":1,"held":[{"name":"forge"}]}"#,
                Err(Bad::WrongType {
                    field: "held entry's consumer",
                    expected: "a string",
                }),
            ),
            (
                Held,
                r#"{"id":1,"held":[{"consumer":"forge","retired":"no"}]}"#,
                Err(Bad::WrongType {
                    field: "held entry's retired",
                    expected: "true or false",
                }),
            ),
        ];
        for (verb, reply, expected) in cases {
            assert_eq!(judged(verb, reply, None), expected, "{verb} {reply}");
        }
    }

    #[test]
    fn a_held_entry_that_is_not_a_name_is_refused_naming_it() {
        let bad = judged(
            Verb::Held,
            r#"{"id":1,"held":[{"consumer":"ok"},{"consumer":"Bad Name"}]}"#,
            None,
        )
        .unwrap_err();
        assert!(matches!(bad, Bad::HeldName { index: 1, .. }), "{bad:?}");
        assert!(bad.to_string().starts_with("held entry 1: "), "{bad}");
    }

    #[test]
    fn in_exec_mode_the_exit_status_decides_and_the_reply_adds_a_message() {
        use Verb::*;
        let cases: Vec<(Verb, &str, bool, Result<Answer, Bad>)> = vec![
            (Ensure, "{}", true, Ok(done())),
            (Ensure, "{}", false, Ok(refused(None, None))),
            (Ensure, r#"{"ok":true}"#, false, Ok(refused(None, None))),
            (
                Ensure,
                r#"{"ok":false,"error":"no"}"#,
                true,
                Ok(refused(None, Some("no"))),
            ),
            (
                Check,
                r#"{"ok":false,"class":"unreachable","error":"connection refused"}"#,
                false,
                Ok(refused(
                    Some(Class::Unreachable),
                    Some("connection refused"),
                )),
            ),
            (Retire, "{}", true, Ok(done())),
            (Held, "{}", true, Err(Bad::Missing("\"held\""))),
            (Held, r#"{"held":[]}"#, true, Ok(Answer::Held(vec![]))),
            (Held, r#"{"held":[]}"#, false, Ok(refused(None, None))),
            (
                Hello,
                "{}",
                true,
                Ok(Answer::Hello(super::Hello::default())),
            ),
            (
                Check,
                r#"{"unsupported":true}"#,
                false,
                Ok(Answer::Unsupported),
            ),
        ];
        for (verb, reply, exit_zero, expected) in cases {
            assert_eq!(
                judged(verb, reply, Some(exit_zero)),
                expected,
                "{verb} {reply} exit 0: {exit_zero}"
            );
        }
    }

    #[test]
    fn a_hello_or_a_probe_may_report_a_fault() {
        let hello = |reply: &str| match judged(Verb::Hello, reply, None) {
            Ok(Answer::Hello(hello)) => Ok(hello.fault),
            Ok(other) => panic!("{other:?}"),
            Err(bad) => Err(bad.to_string()),
        };
        /// The fault a hello gives, or the text of the error it is.
        type Expected = Result<Option<(Class, &'static str)>, &'static str>;
        // (reply, fault or error)
        let cases: [(&str, Expected); 6] = [
            (r#"{"id":0}"#, Ok(None)),
            (r#"{"id":0,"fault":null}"#, Ok(None)),
            (
                r#"{"id":0,"fault":{"class":"credentials-rejected","error":"WRONGPASS"}}"#,
                Ok(Some((Class::CredentialsRejected, "WRONGPASS"))),
            ),
            (
                r#"{"id":0,"fault":{}}"#,
                Ok(Some((
                    Class::Refused,
                    "the hook cannot work as its administrator",
                ))),
            ),
            (r#"{"id":0,"fault":"down"}"#, Err("fault")),
            (r#"{"id":0,"fault":{"class":"sad"}}"#, Err("sad")),
        ];
        for (reply, expected) in cases {
            match (hello(reply), expected) {
                (Ok(got), Ok(want)) => {
                    assert_eq!(got, want.map(|(c, e)| (c, e.to_owned())), "{reply}")
                }
                (Err(got), Err(want)) => assert!(got.contains(want), "{reply}: {got}"),
                (got, want) => panic!("{reply}: {got:?}, expected {want:?}"),
            }
        }
        let Answer::Done(done) = judged(
            Verb::Probe,
            r#"{"id":3,"ok":true,"fault":{"class":"unreachable","error":"no route"}}"#,
            None,
        )
        .unwrap() else {
            panic!("done")
        };
        assert_eq!(
            done.fault,
            Some((Class::Unreachable, "no route".to_owned()))
        );
    }

    #[test]
    fn a_hello_gives_name_repairs_and_secrets_all_optional() {
        let reply = r#"{"id":0,"name":"redis","repairs":[{"fault":"admin-refused","class":"credentials-rejected"},{"fault":"disk-full"}],"secrets":["admin-pw",""]}"#;
        let Answer::Hello(hello) = judged(Verb::Hello, reply, None).unwrap() else {
            panic!("a hello");
        };
        assert_eq!(hello.name.as_deref(), Some("redis"));
        assert_eq!(
            hello.repairs,
            vec![
                (n("admin-refused"), Class::CredentialsRejected),
                (n("disk-full"), Class::CredentialsRejected)
            ]
        );
        assert_eq!(hello.secrets, vec![Secret::new("admin-pw")]);
        for (reply, wrong) in [
            (
                r#"{"repairs":[{"fault":"Bad"}]}"#,
                "hello's repairs entry 0: ",
            ),
            (
                r#"{"repairs":[{"fault":"x","class":"nope"}]}"#,
                "unknown class",
            ),
            (r#"{"secrets":[1]}"#, "secrets is not a list of strings"),
            (r#"{"name":1}"#, "name is not a string"),
        ] {
            let bad = judged(Verb::Hello, reply, None).unwrap_err().to_string();
            assert!(bad.contains(wrong), "{reply}: {bad}");
        }
    }

    #[test]
    fn the_secrets_a_reply_carries_are_no_field_of_its_answer() {
        let reply = parse(br#"{"id":4,"ok":false,"error":"no","secrets":["new-pw"]}"#).unwrap();
        assert_eq!(
            judge(Verb::Check, &reply, None),
            Ok(refused(None, Some("no")))
        );
        let reply = parse(br#"{"id":0,"secrets":["admin-pw"]}"#).unwrap();
        let Ok(Answer::Hello(hello)) = judge(Verb::Hello, &reply, None) else {
            panic!("a hello");
        };
        assert_eq!(
            hello.secrets,
            vec![Secret::new("admin-pw")],
            "a hello's own"
        );
    }

    #[test]
    fn the_first_wrong_field_in_the_contracts_order_is_the_one_said() {
        use Verb::*;
        let wrong = |field, expected| Err(Bad::WrongType { field, expected });
        let cases: Vec<(Verb, &str, Result<Answer, Bad>)> = vec![
            // unsupported before ok, ok before class, class before error
            (
                Check,
                r#"{"id":1,"unsupported":1,"ok":2}"#,
                wrong("unsupported", TRUE_OR_FALSE),
            ),
            (
                Check,
                r#"{"id":1,"ok":2,"class":3}"#,
                wrong("ok", TRUE_OR_FALSE),
            ),
            (
                Check,
                r#"{"id":1,"ok":false,"class":3,"error":4}"#,
                wrong("class", A_STRING),
            ),
            (
                Check,
                r#"{"id":1,"ok":false,"class":"nope","error":4}"#,
                Err(Bad::UnknownClass("nope".into())),
            ),
            // a failure's verb fields are not read
            (
                Ensure,
                r#"{"id":1,"ok":false,"mended":5}"#,
                Ok(refused(None, None)),
            ),
            (
                Ensure,
                r#"{"id":1,"ok":true,"mended":5}"#,
                wrong("mended", A_STRING),
            ),
            (
                Repair,
                r#"{"id":1,"ok":true,"detail":[]}"#,
                wrong("detail", A_STRING),
            ),
            (
                ByHand,
                r#"{"id":1,"ok":true,"works":"y","reaches":"n"}"#,
                wrong("works", TRUE_OR_FALSE),
            ),
            (
                Probe,
                r#"{"id":1,"ok":true,"fault":["refused","down"]}"#,
                wrong("fault", "an object or null"),
            ),
            (
                Probe,
                r#"{"id":1,"ok":true,"fault":{"class":"refused","error":6}}"#,
                wrong("error", A_STRING),
            ),
            (
                Held,
                r#"{"id":1,"held":[["forge",false]]}"#,
                wrong("held entry's consumer", A_STRING),
            ),
            (
                Held,
                r#"{"id":1,"held":[null]}"#,
                wrong("held entry's consumer", A_STRING),
            ),
            (
                Held,
                r#"{"id":1,"held":[{"consumer":"forge","retired":1},{"consumer":7}]}"#,
                wrong("held entry's retired", TRUE_OR_FALSE),
            ),
            // a hello: repairs, then name, then fault
            (
                Hello,
                r#"{"repairs":{},"name":1}"#,
                wrong("repairs", "a list"),
            ),
            (
                Hello,
                r#"{"repairs":["x"],"name":1}"#,
                wrong("repairs entry's fault", A_STRING),
            ),
            (
                Hello,
                r#"{"repairs":[{"fault":"x","class":2}]}"#,
                wrong("repairs entry's class", A_STRING),
            ),
            (Hello, r#"{"name":1,"fault":2}"#, wrong("name", A_STRING)),
            (Hello, r#"{"fault":2}"#, wrong("fault", "an object or null")),
            // retire, re-enable and delete say nothing else
            (
                Retire,
                r#"{"id":1,"ok":true,"mended":5,"held":6}"#,
                Ok(done()),
            ),
        ];
        for (verb, reply, expected) in cases {
            assert_eq!(judged(verb, reply, None), expected, "{verb} {reply}");
        }
    }

    #[test]
    fn every_verb_judges_an_empty_success_in_exec_mode() {
        for verb in Verb::ALL {
            let judged = judged(verb, "{}", Some(true));
            match verb {
                Verb::Held => assert_eq!(judged, Err(Bad::Missing("\"held\""))),
                Verb::Hello => assert_eq!(judged, Ok(Answer::Hello(super::Hello::default()))),
                _ => assert_eq!(judged, Ok(done()), "{verb}"),
            }
        }
    }
}
