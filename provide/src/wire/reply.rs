//! How a hook's reply is read ([`parse`]) and judged for the verb it
//! answers ([`judge`]), and what was wrong when it is not one ([`Bad`]).

use mesh_sdk::{Class, Held, Name, NameError, Secret};
use serde_json::{Map, Value};

use super::verb::Verb;

/// The longest reply mesh-provide reads: a whole stdout (exec) or one line
/// (serve), newline excluded. A longer one is [`Bad::TooLarge`].
pub const MAX_REPLY_BYTES: usize = 64 * 1024;

/// What was wrong with a hook's output: never a reply, always an error
/// naming the hook and the verb (see `HookError::BadReply`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Bad {
    /// Not JSON at all.
    #[error("reply is not JSON ({error}): {}", quote(start))]
    NotJson {
        /// The parser's words.
        error: String,
        /// The reply's first characters, as the hook wrote them (up to
        /// 4 KiB: redacted by the caller whole, then cut and quoted
        /// when shown, so that a secret is matched before it is cut).
        start: String,
    },
    /// JSON, but not an object.
    #[error("reply is not a JSON object: {}", quote(start))]
    NotAnObject {
        /// The reply's first characters.
        start: String,
    },
    /// The pipes to the hook failed.
    #[error("reading the reply failed: {0}")]
    Io(String),
    /// More than [`MAX_REPLY_BYTES`].
    #[error("reply is larger than {limit} bytes")]
    TooLarge {
        /// The bound.
        limit: usize,
    },
    /// No `id`, or one that is not a whole number (serve mode).
    #[error("reply has no id (each reply carries its request's id)")]
    NoId,
    /// An `id` no request in flight carries (serve mode).
    #[error("reply carries id {0}, which no request in flight has")]
    UnknownId(u64),
    /// Another request's `id` (exec mode: one request, one reply).
    #[error("reply carries id {got}, the request {expected}")]
    WrongId {
        /// The request's id.
        expected: u64,
        /// The reply's.
        got: u64,
    },
    /// A `class` that is not one of the four.
    #[error(
        "reply has an unknown class {0:?} (credentials-rejected, unreachable, secret-unreadable or refused)"
    )]
    UnknownClass(String),
    /// A field the verb's reply needs is missing.
    #[error("reply lacks {0}")]
    Missing(&'static str),
    /// A field of the wrong type.
    #[error("reply's {field} is not {expected}")]
    WrongType {
        /// The field.
        field: &'static str,
        /// What it must be.
        expected: &'static str,
    },
    /// A `held` entry whose consumer is not a name.
    #[error("held entry {index}: {error}")]
    HeldName {
        /// Its place in the list, from 0.
        index: usize,
        /// Why the name is refused.
        error: NameError,
    },
    /// A `held` list naming one consumer twice.
    #[error("held lists {0} twice")]
    HeldTwice(Name),
    /// A hello's fault that is not a name.
    #[error("hello's repairs entry {index}: {error}")]
    FaultName {
        /// Its place in the list, from 0.
        index: usize,
        /// Why the name is refused.
        error: NameError,
    },
}

impl Bad {
    /// The same, the hook's words in it passed through `scrub` (they may
    /// echo a secret).
    pub fn scrubbed(self, scrub: impl Fn(&str) -> String) -> Bad {
        match self {
            Bad::NotJson { error, start } => Bad::NotJson {
                error: scrub(&error),
                start: scrub(&start),
            },
            Bad::NotAnObject { start } => Bad::NotAnObject {
                start: scrub(&start),
            },
            Bad::Io(words) => Bad::Io(scrub(&words)),
            other => other,
        }
    }
}

/// How many characters of a bad reply an error quotes.
const QUOTED: usize = 40;

/// How many bytes of a bad reply are kept to be redacted and then quoted.
pub const KEPT: usize = 4 * 1024;

/// The first bytes of a bad reply, as text, before any redaction.
fn kept(bytes: &[u8]) -> String {
    String::from_utf8_lossy(&bytes[..bytes.len().min(KEPT)])
        .trim()
        .to_owned()
}

/// A bad reply's start as an error shows it: cut, then quoted.
fn quote(start: &str) -> String {
    format!("{:?}", mesh_runtime::redact::cut(start, QUOTED))
}

/// A reply read as a JSON object, its `id` and `secrets` taken out (the
/// default: `{}`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Parsed {
    /// Its `id`, if it has a whole number there.
    pub id: Option<u64>,
    /// Its `secrets`, if it has them: the hook's own secrets from now on
    /// (the set is replaced before any of the hook's words are read).
    pub secrets: Option<Vec<Secret>>,
    fields: Map<String, Value>,
}

impl Parsed {
    /// Whether it is a serve hook's line announcing its secrets alone
    /// (`{"secrets": [...]}`, no id): no reply to any call.
    pub fn is_secrets_line(&self) -> bool {
        self.id.is_none() && self.secrets.is_some() && self.fields.is_empty()
    }
}

/// The `secrets` of a reply: strings, empty ones dropped.
fn secrets(value: Value) -> Result<Vec<Secret>, Bad> {
    let wrong = Bad::WrongType {
        field: "secrets",
        expected: "a list of strings",
    };
    let Value::Array(items) = value else {
        return Err(wrong);
    };
    let mut secrets = Vec::with_capacity(items.len());
    for item in items {
        match item {
            Value::String(s) if !s.is_empty() => secrets.push(Secret::new(s)),
            Value::String(_) => {}
            _ => return Err(wrong),
        }
    }
    Ok(secrets)
}

/// Reads one reply (a whole stdout, or a line without its `\n`).
///
/// # Errors
/// [`Bad::TooLarge`], [`Bad::NotJson`] or [`Bad::NotAnObject`]; an `id`
/// that is present but not a whole number counts as none.
pub fn parse(bytes: &[u8]) -> Result<Parsed, Bad> {
    if bytes.len() > MAX_REPLY_BYTES {
        return Err(Bad::TooLarge {
            limit: MAX_REPLY_BYTES,
        });
    }
    let value: Value = serde_json::from_slice(bytes).map_err(|error| Bad::NotJson {
        error: error.to_string(),
        start: kept(bytes),
    })?;
    let Value::Object(mut fields) = value else {
        return Err(Bad::NotAnObject { start: kept(bytes) });
    };
    let id = fields.remove("id").and_then(|id| id.as_u64());
    let secrets = match fields.remove("secrets") {
        None | Some(Value::Null) => None,
        Some(value) => Some(secrets(value)?),
    };
    Ok(Parsed {
        id,
        secrets,
        fields,
    })
}

/// A hook's hello: all of it optional.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Hello {
    /// The hook's name, for the log.
    pub name: Option<String>,
    /// Its known faults, each with the class consumers fail with while it lasts.
    pub repairs: Vec<(Name, Class)>,
    /// Its own secrets (an administrator's password), removed from every word.
    pub secrets: Vec<Secret>,
    /// `fault`: it cannot work as its administrator now (class, words).
    pub fault: Option<(Class, String)>,
}

/// A call that succeeded.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Done {
    /// `mended` (ensure, check): what the hook found changed by hand and brought back.
    pub mended: Option<String>,
    /// `detail` (repair): what it did.
    pub detail: Option<String>,
    /// `works` (by-hand works): whether the provision works with the secret.
    pub works: Option<bool>,
    /// `reaches` (by-hand reach): whether the consumer reaches the target's provision.
    pub reaches: Option<bool>,
    /// `fault` (probe): it cannot work as its administrator now (class, words).
    pub fault: Option<(Class, String)>,
}

/// What a well-formed reply says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Answer {
    /// `{"unsupported": true}`: the hook does not know the verb.
    Unsupported,
    /// The call succeeded (`ok: true`, or exit 0).
    Done(Done),
    /// `held`'s list.
    Held(Vec<Held>),
    /// `hello`'s answer.
    Hello(Hello),
    /// The call failed (`ok: false`, or a failing exit): the hook's class and words, if given.
    Refused {
        /// The class the hook gives, if any.
        class: Option<Class>,
        /// The hook's words, if any.
        error: Option<String>,
    },
}

impl Parsed {
    fn bool(&self, field: &'static str) -> Result<Option<bool>, Bad> {
        match self.fields.get(field) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(_) => Err(Bad::WrongType {
                field,
                expected: "true or false",
            }),
        }
    }

    fn text(&self, field: &'static str) -> Result<Option<String>, Bad> {
        match self.fields.get(field) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(Bad::WrongType {
                field,
                expected: "a string",
            }),
        }
    }

    fn list(&self, field: &'static str) -> Result<Option<&Vec<Value>>, Bad> {
        match self.fields.get(field) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Array(items)) => Ok(Some(items)),
            Some(_) => Err(Bad::WrongType {
                field,
                expected: "a list",
            }),
        }
    }
}

fn class(word: Option<String>) -> Result<Option<Class>, Bad> {
    word.map(|word| {
        Class::ALL
            .into_iter()
            .find(|class| class.as_str() == word)
            .ok_or(Bad::UnknownClass(word))
    })
    .transpose()
}

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
pub fn judge(verb: Verb, reply: &Parsed, exited: Option<bool>) -> Result<Answer, Bad> {
    if reply.bool("unsupported")? == Some(true) {
        return Ok(Answer::Unsupported);
    }
    let said = reply.bool("ok")?;
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
            class: class(reply.text("class")?)?,
            error: reply.text("error")?,
        });
    }
    match verb {
        Verb::Hello => hello(reply).map(Answer::Hello),
        Verb::Held => held(reply).map(Answer::Held),
        Verb::Ensure | Verb::Check => Ok(Answer::Done(Done {
            mended: reply.text("mended")?,
            ..Done::default()
        })),
        Verb::Repair => Ok(Answer::Done(Done {
            detail: reply.text("detail")?,
            ..Done::default()
        })),
        Verb::ByHand => Ok(Answer::Done(Done {
            works: reply.bool("works")?,
            reaches: reply.bool("reaches")?,
            ..Done::default()
        })),
        Verb::Probe => Ok(Answer::Done(Done {
            fault: fault(reply)?,
            ..Done::default()
        })),
        Verb::Retire | Verb::ReEnable | Verb::Delete => Ok(Answer::Done(Done::default())),
    }
}

fn held(reply: &Parsed) -> Result<Vec<Held>, Bad> {
    let items = reply.list("held")?.ok_or(Bad::Missing("\"held\""))?;
    let mut held: Vec<Held> = Vec::with_capacity(items.len());
    let mut seen = std::collections::HashSet::with_capacity(items.len());
    for (index, item) in items.iter().enumerate() {
        let consumer = item
            .get("consumer")
            .and_then(Value::as_str)
            .ok_or(Bad::WrongType {
                field: "held entry's consumer",
                expected: "a string",
            })?;
        let name = Name::parse(consumer).map_err(|error| Bad::HeldName { index, error })?;
        let retired = match item.get("retired") {
            None | Some(Value::Null) => false,
            Some(Value::Bool(b)) => *b,
            Some(_) => {
                return Err(Bad::WrongType {
                    field: "held entry's retired",
                    expected: "true or false",
                })
            }
        };
        if !seen.insert(name.clone()) {
            return Err(Bad::HeldTwice(name));
        }
        held.push(Held { name, retired });
    }
    Ok(held)
}

fn hello(reply: &Parsed) -> Result<Hello, Bad> {
    let mut repairs = Vec::new();
    for (index, item) in reply.list("repairs")?.into_iter().flatten().enumerate() {
        let fault = item
            .get("fault")
            .and_then(Value::as_str)
            .ok_or(Bad::WrongType {
                field: "repairs entry's fault",
                expected: "a string",
            })?;
        let fault = Name::parse(fault).map_err(|error| Bad::FaultName { index, error })?;
        let given = match item.get("class") {
            None | Some(Value::Null) => None,
            Some(Value::String(word)) => Some(word.clone()),
            Some(_) => {
                return Err(Bad::WrongType {
                    field: "repairs entry's class",
                    expected: "a string",
                })
            }
        };
        repairs.push((fault, class(given)?.unwrap_or(Class::CredentialsRejected)));
    }
    Ok(Hello {
        name: reply.text("name")?,
        repairs,
        secrets: reply.secrets.clone().unwrap_or_default(),
        fault: fault(reply)?,
    })
}

/// The `fault` of a hello or a probe: `{"class": ..., "error": ...}` (both
/// optional: `refused`, and words of the loop's), or null / absent for none.
fn fault(reply: &Parsed) -> Result<Option<(Class, String)>, Bad> {
    let fault = match reply.fields.get("fault") {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Object(fault)) => fault,
        Some(_) => {
            return Err(Bad::WrongType {
                field: "fault",
                expected: "an object or null",
            })
        }
    };
    let word = |field: &'static str| match fault.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(Bad::WrongType {
            field,
            expected: "a string",
        }),
    };
    let class = class(word("class")?)?.unwrap_or(Class::Refused);
    let error =
        word("error")?.unwrap_or_else(|| "the hook cannot work as its administrator".to_owned());
    Ok(Some((class, error)))
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn in_exec_mode_the_exit_status_decides_and_the_reply_adds_words() {
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
    fn a_reply_that_is_no_json_object_or_too_large_is_said_so() {
        let not_json = parse(b"Traceback (most recent call last):").unwrap_err();
        assert!(matches!(not_json, Bad::NotJson { .. }), "{not_json:?}");
        assert!(
            not_json.to_string().starts_with("reply is not JSON (")
                && not_json
                    .to_string()
                    .ends_with("\"Traceback (most recent call last):\""),
            "{not_json}"
        );
        assert_eq!(
            parse(b"[1,2]").unwrap_err(),
            Bad::NotAnObject {
                start: "[1,2]".into()
            }
        );
        assert!(matches!(parse(b"").unwrap_err(), Bad::NotJson { .. }));
        let huge = format!(
            r#"{{"id":1,"ok":true,"error":"{}"}}"#,
            "x".repeat(MAX_REPLY_BYTES)
        );
        assert_eq!(
            parse(huge.as_bytes()).unwrap_err(),
            Bad::TooLarge {
                limit: MAX_REPLY_BYTES
            }
        );
        let long = "y".repeat(500);
        let quoted = parse(long.as_bytes()).unwrap_err().to_string();
        assert!(quoted.len() < 150, "a bad reply is quoted short: {quoted}");
        // A secret past the quoted characters, or one with a quote in it,
        // is removed before the text is cut and quoted.
        let secret = "hunter2-\"quoted\"-long-enough-to-cross-the-cut";
        let line = format!("connecting as the administrator with password {secret} now");
        let bad = parse(line.as_bytes())
            .unwrap_err()
            .scrubbed(|text| text.replace(secret, "[redacted]"));
        let said = bad.to_string();
        assert!(
            said.ends_with(r#": "connecting as the administrator with pa…""#),
            "{said}"
        );
        assert!(!said.contains("hunt"), "{said}");
        let bad = parse(format!("{secret} first").as_bytes())
            .unwrap_err()
            .scrubbed(|text| text.replace(secret, "[redacted]"));
        assert!(
            bad.to_string().ends_with(r#": "[redacted] first""#),
            "{bad}"
        );
    }

    #[test]
    fn the_id_is_taken_out_and_a_bad_one_counts_as_none() {
        assert_eq!(parse(br#"{"id":9,"ok":true}"#).unwrap().id, Some(9));
        assert_eq!(parse(br#"{"ok":true}"#).unwrap().id, None);
        assert_eq!(parse(br#"{"id":"9","ok":true}"#).unwrap().id, None);
        assert_eq!(parse(br#"{"id":-1,"ok":true}"#).unwrap().id, None);
    }

    #[test]
    fn a_hello_or_a_probe_may_report_a_fault() {
        let hello = |reply: &str| match judged(Verb::Hello, reply, None) {
            Ok(Answer::Hello(hello)) => Ok(hello.fault),
            Ok(other) => panic!("{other:?}"),
            Err(bad) => Err(bad.to_string()),
        };
        /// The fault a hello gives, or words of the error it is.
        type Said = Result<Option<(Class, &'static str)>, &'static str>;
        // (reply, fault or error)
        let cases: [(&str, Said); 6] = [
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
    fn any_reply_may_carry_secrets_and_a_line_of_secrets_alone_answers_no_call() {
        let reply = parse(br#"{"id":4,"ok":false,"error":"no","secrets":["new-pw",""]}"#).unwrap();
        assert_eq!(reply.secrets, Some(vec![Secret::new("new-pw")]));
        assert!(!reply.is_secrets_line());
        assert_eq!(
            judge(Verb::Check, &reply, None),
            Ok(refused(None, Some("no"))),
            "the secrets are no field of the answer"
        );
        let line = parse(br#"{"secrets":["rotated"]}"#).unwrap();
        assert!(line.is_secrets_line());
        assert_eq!(line.secrets, Some(vec![Secret::new("rotated")]));
        assert!(!parse(br#"{"ok":true}"#).unwrap().is_secrets_line());
        assert!(!parse(br#"{"secrets":[],"ok":true}"#)
            .unwrap()
            .is_secrets_line());
        assert_eq!(parse(br#"{"secrets":[]}"#).unwrap().secrets, Some(vec![]));
        for bad in [r#"{"secrets":"pw"}"#, r#"{"id":1,"secrets":[{"pw":1}]}"#] {
            assert_eq!(
                parse(bad.as_bytes()).unwrap_err().to_string(),
                "reply's secrets is not a list of strings",
                "{bad}"
            );
        }
    }
}
