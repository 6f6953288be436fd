//! The hook protocol's words, as plain types with no I/O: the requests
//! mesh-provide writes ([`Ask`]), how a reply is read ([`parse`]) and judged
//! for the verb it answers ([`judge`]), and what was wrong when it is not
//! one ([`Bad`]). docs/hooks.md is the contract.

use std::fmt;

use mesh_sdk::{Class, Consumer, Held, Name, NameError, Secret};
use serde::Serialize;
use serde_json::{Map, Value};

/// The protocol's version, `"v"` in every request.
pub const VERSION: u32 = 1;

/// The longest reply mesh-provide reads: a whole stdout (exec) or one line
/// (serve), newline excluded. A longer one is [`Bad::TooLarge`].
pub const MAX_REPLY_BYTES: usize = 64 * 1024;

/// Request ids, unique across a provider's life, from 1.
#[derive(Debug, Default)]
pub struct Ids(std::sync::atomic::AtomicU64);

impl Ids {
    /// The next id.
    pub fn next(&self) -> u64 {
        self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1
    }
}

/// What mesh-provide asks of a hook.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Verb {
    /// Who the hook is: its name, its known faults, its own secrets.
    Hello,
    /// Make the consumer's provision if missing, and bring its secret.
    Ensure,
    /// Prove the provision works, as the consumer would use it.
    Check,
    /// List every provision the hook made.
    Held,
    /// Disable a provision (reversible).
    Retire,
    /// Enable a retired provision again.
    ReEnable,
    /// Delete a retired provision and its data.
    Delete,
    /// Whether a known fault is present.
    Probe,
    /// Repair a known fault.
    Repair,
}

impl Verb {
    /// Every verb, in the contract's order.
    pub const ALL: [Verb; 9] = [
        Verb::Hello,
        Verb::Ensure,
        Verb::Check,
        Verb::Held,
        Verb::Retire,
        Verb::ReEnable,
        Verb::Delete,
        Verb::Probe,
        Verb::Repair,
    ];

    /// The verb as it is written: `"verb"` of a request, and the exec
    /// mode's argument (`PATH <verb>`).
    pub fn as_str(self) -> &'static str {
        match self {
            Verb::Hello => "hello",
            Verb::Ensure => "ensure",
            Verb::Check => "check",
            Verb::Held => "held",
            Verb::Retire => "retire",
            Verb::ReEnable => "re-enable",
            Verb::Delete => "delete",
            Verb::Probe => "probe",
            Verb::Repair => "repair",
        }
    }

    /// Whether its reply must say `ok` (serve mode; exec mode has the exit
    /// status): every verb but `hello` and `held`, whose reply is its data.
    fn says_ok(self) -> bool {
        !matches!(self, Verb::Hello | Verb::Held)
    }
}

impl fmt::Display for Verb {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One request, with what it carries.
#[derive(Clone, Copy, Debug)]
pub enum Ask<'a> {
    /// `hello`.
    Hello,
    /// `ensure` for a consumer, with its minted secret.
    Ensure(&'a Consumer, &'a Secret),
    /// `check` for a consumer, with its minted secret.
    Check(&'a Consumer, &'a Secret),
    /// `held`.
    Held,
    /// `retire` a consumer's provision.
    Retire(&'a Name),
    /// `re-enable` a consumer's provision.
    ReEnable(&'a Name),
    /// `delete` a consumer's provision.
    Delete(&'a Name),
    /// `probe` a known fault (named in the hello).
    Probe(&'a Name),
    /// `repair` a known fault.
    Repair(&'a Name),
}

/// The consumer as an `ensure` or `check` request carries it.
#[derive(Serialize)]
struct ConsumerBody<'a> {
    name: &'a str,
    machine: &'a str,
    provision: &'a str,
    options: &'a Value,
}

/// `"consumer"` of a request: whole for ensure and check, a name otherwise.
#[derive(Serialize)]
#[serde(untagged)]
enum Target<'a> {
    Whole(ConsumerBody<'a>),
    Name(&'a str),
}

#[derive(Serialize)]
struct Body<'a> {
    v: u32,
    id: u64,
    verb: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    consumer: Option<Target<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    secret: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    fault: Option<&'a str>,
}

impl<'a> Ask<'a> {
    /// Its verb.
    pub fn verb(&self) -> Verb {
        match self {
            Ask::Hello => Verb::Hello,
            Ask::Ensure(..) => Verb::Ensure,
            Ask::Check(..) => Verb::Check,
            Ask::Held => Verb::Held,
            Ask::Retire(_) => Verb::Retire,
            Ask::ReEnable(_) => Verb::ReEnable,
            Ask::Delete(_) => Verb::Delete,
            Ask::Probe(_) => Verb::Probe,
            Ask::Repair(_) => Verb::Repair,
        }
    }

    /// The consumer's minted secret it carries (ensure, check).
    pub fn secret(&self) -> Option<&'a Secret> {
        match self {
            Ask::Ensure(_, secret) | Ask::Check(_, secret) => Some(secret),
            _ => None,
        }
    }

    /// The consumer it is about, if any.
    pub fn consumer(&self) -> Option<&'a Name> {
        match self {
            Ask::Ensure(c, _) | Ask::Check(c, _) => Some(&c.name),
            Ask::Retire(n) | Ask::ReEnable(n) | Ask::Delete(n) => Some(n),
            _ => None,
        }
    }

    /// The request as one JSON line (ending in `\n`), carrying `id`.
    pub fn line(&self, id: u64) -> Vec<u8> {
        let whole = |c: &'a Consumer| {
            Some(Target::Whole(ConsumerBody {
                name: c.name.as_str(),
                machine: c.machine.as_str(),
                provision: &c.provision,
                options: &c.options,
            }))
        };
        let (consumer, fault) = match self {
            Ask::Ensure(c, _) | Ask::Check(c, _) => (whole(c), None),
            Ask::Retire(n) | Ask::ReEnable(n) | Ask::Delete(n) => {
                (Some(Target::Name(n.as_str())), None)
            }
            Ask::Probe(f) | Ask::Repair(f) => (None, Some(f.as_str())),
            Ask::Hello | Ask::Held => (None, None),
        };
        let body = Body {
            v: VERSION,
            id,
            verb: self.verb().as_str(),
            consumer,
            secret: self.secret().map(Secret::expose),
            fault,
        };
        let mut line = serde_json::to_vec(&body).expect("a request serializes");
        line.push(b'\n');
        line
    }
}

/// What was wrong with a hook's output: never a reply, always an error
/// naming the hook and the verb (see `HookError::BadReply`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Bad {
    /// Not JSON at all.
    #[error("reply is not JSON ({error}): {start}")]
    NotJson {
        /// The parser's words.
        error: String,
        /// The reply's first characters, quoted (redacted by the caller).
        start: String,
    },
    /// JSON, but not an object.
    #[error("reply is not a JSON object: {start}")]
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

fn quoted(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    format!("{:?}", mesh_runtime::redact::cut(text.trim(), QUOTED))
}

/// A reply read as a JSON object, its `id` taken out (the default: `{}`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Parsed {
    /// Its `id`, if it has a whole number there.
    pub id: Option<u64>,
    fields: Map<String, Value>,
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
        start: quoted(bytes),
    })?;
    let Value::Object(mut fields) = value else {
        return Err(Bad::NotAnObject {
            start: quoted(bytes),
        });
    };
    let id = fields.remove("id").and_then(|id| id.as_u64());
    Ok(Parsed { id, fields })
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
}

/// A call that succeeded.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Done {
    /// `mended` (ensure, check): what the hook found changed by hand and brought back.
    pub mended: Option<String>,
    /// `detail` (repair): what it did.
    pub detail: Option<String>,
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
            detail: None,
        })),
        Verb::Repair => Ok(Answer::Done(Done {
            mended: None,
            detail: reply.text("detail")?,
        })),
        Verb::Retire | Verb::ReEnable | Verb::Delete | Verb::Probe => {
            Ok(Answer::Done(Done::default()))
        }
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
    let mut secrets = Vec::new();
    for item in reply.list("secrets")?.into_iter().flatten() {
        match item {
            Value::String(s) if !s.is_empty() => secrets.push(Secret::new(s.clone())),
            Value::String(_) => {}
            _ => {
                return Err(Bad::WrongType {
                    field: "secrets entry",
                    expected: "a string",
                })
            }
        }
    }
    Ok(Hello {
        name: reply.text("name")?,
        repairs,
        secrets,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn consumer() -> Consumer {
        Consumer {
            name: Name::parse("forge").unwrap(),
            machine: Name::parse("app-1").unwrap(),
            provision: "redis-acl".into(),
            secret_file: "secrets/forge".into(),
            options: json!({"db": 2}),
        }
    }

    fn n(s: &str) -> Name {
        Name::parse(s).unwrap()
    }

    #[test]
    fn requests_are_one_json_line_each_as_the_contract_writes_them() {
        let c = consumer();
        let secret = Secret::new("s3cret");
        let (forge, fault) = (n("forge"), n("admin-refused"));
        let cases: Vec<(Ask<'_>, Value)> = vec![
            (Ask::Hello, json!({"v":1,"id":7,"verb":"hello"})),
            (
                Ask::Ensure(&c, &secret),
                json!({"v":1,"id":7,"verb":"ensure","consumer":{"name":"forge","machine":"app-1","provision":"redis-acl","options":{"db":2}},"secret":"s3cret"}),
            ),
            (
                Ask::Check(&c, &secret),
                json!({"v":1,"id":7,"verb":"check","consumer":{"name":"forge","machine":"app-1","provision":"redis-acl","options":{"db":2}},"secret":"s3cret"}),
            ),
            (Ask::Held, json!({"v":1,"id":7,"verb":"held"})),
            (
                Ask::Retire(&forge),
                json!({"v":1,"id":7,"verb":"retire","consumer":"forge"}),
            ),
            (
                Ask::ReEnable(&forge),
                json!({"v":1,"id":7,"verb":"re-enable","consumer":"forge"}),
            ),
            (
                Ask::Delete(&forge),
                json!({"v":1,"id":7,"verb":"delete","consumer":"forge"}),
            ),
            (
                Ask::Probe(&fault),
                json!({"v":1,"id":7,"verb":"probe","fault":"admin-refused"}),
            ),
            (
                Ask::Repair(&fault),
                json!({"v":1,"id":7,"verb":"repair","fault":"admin-refused"}),
            ),
        ];
        for (ask, expected) in cases {
            let line = ask.line(7);
            assert_eq!(line.last(), Some(&b'\n'), "{:?}", ask.verb());
            assert_eq!(line.iter().filter(|b| **b == b'\n').count(), 1, "one line");
            let body: Value = serde_json::from_slice(&line).unwrap();
            assert_eq!(body, expected, "{:?}", ask.verb());
        }
        assert!(Verb::ALL.iter().all(|v| !v.as_str().is_empty()));
    }

    #[test]
    fn only_ensure_and_check_carry_the_secret() {
        let c = consumer();
        let secret = Secret::new("s3cret");
        let forge = n("forge");
        for ask in [
            Ask::Hello,
            Ask::Held,
            Ask::Retire(&forge),
            Ask::Probe(&forge),
        ] {
            let line = String::from_utf8(ask.line(1)).unwrap();
            assert!(!line.contains("secret"), "{line}");
        }
        for ask in [Ask::Ensure(&c, &secret), Ask::Check(&c, &secret)] {
            assert_eq!(ask.secret(), Some(&secret));
        }
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
                    detail: None,
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
                    mended: None,
                    detail: Some("admin password reset".into()),
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
                start: "\"[1,2]\"".into()
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
    }

    #[test]
    fn the_id_is_taken_out_and_a_bad_one_counts_as_none() {
        assert_eq!(parse(br#"{"id":9,"ok":true}"#).unwrap().id, Some(9));
        assert_eq!(parse(br#"{"ok":true}"#).unwrap().id, None);
        assert_eq!(parse(br#"{"id":"9","ok":true}"#).unwrap().id, None);
        assert_eq!(parse(br#"{"id":-1,"ok":true}"#).unwrap().id, None);
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
            (r#"{"secrets":[1]}"#, "secrets entry is not a string"),
            (r#"{"name":1}"#, "name is not a string"),
        ] {
            let bad = judged(Verb::Hello, reply, None).unwrap_err().to_string();
            assert!(bad.contains(wrong), "{reply}: {bad}");
        }
    }
}
