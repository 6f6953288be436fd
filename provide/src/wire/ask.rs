//! The requests mesh-provide writes to a hook, one JSON line each.

use std::time::Duration;

use mesh_sdk::{Consumer, ModuleId, Name, Secret};
use serde::Serialize;
use serde_json::Value;

use super::verb::{Verb, VERSION};

/// One request, with what it carries.
#[derive(Clone, Copy, Debug)]
pub enum Ask<'a> {
    /// `hello`.
    Hello,
    /// `ensure` for a consumer, with its minted secret.
    Ensure(&'a Consumer, &'a Secret),
    /// `check` for a consumer, with its minted secret.
    Check(&'a Consumer, &'a Secret),
    /// `held`: what the instance made.
    Held(&'a ModuleId),
    /// `retire` a consumer's provision the instance made.
    Retire(&'a ModuleId, &'a Name),
    /// `re-enable` a consumer's provision the instance made.
    ReEnable(&'a ModuleId, &'a Name),
    /// `delete` a consumer's provision the instance made.
    Delete(&'a ModuleId, &'a Name),
    /// `probe` a known fault (named in the hello).
    Probe(&'a Name),
    /// `repair` a known fault.
    Repair(&'a Name),
    /// `by-hand` (conform only): act on a consumer's provision at the
    /// backend as a person would.
    ByHand {
        /// What to do.
        action: ByHandAction,
        /// Whose provision.
        consumer: &'a Name,
        /// The password it is made with or tried with (`make`, `works`, `reach`).
        secret: Option<&'a Secret>,
        /// `reach`: the consumer whose provision it tries to reach.
        target: Option<&'a Name>,
    },
}

/// What a `by-hand` request asks the hook to do, as a person would at the
/// backend (docs/hooks.md, "Conformance").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ByHandAction {
    /// Change the provision (another password) so that only ensure mends it.
    Change,
    /// Make a provision the hook does not count as its own.
    Make,
    /// Whether a provision works with a secret (reply `works`).
    Works,
    /// Whether a consumer reaches another's provision (reply `reaches`).
    Reach,
    /// Remove what `make` made.
    Remove,
    /// Whether anything of that name is at the backend, made by anyone,
    /// listed in `held` or not (reply `left`).
    Left,
}

impl ByHandAction {
    /// The action as it is written (`"action"` of the request).
    pub fn as_str(self) -> &'static str {
        match self {
            ByHandAction::Change => "change",
            ByHandAction::Make => "make",
            ByHandAction::Works => "works",
            ByHandAction::Reach => "reach",
            ByHandAction::Remove => "remove",
            ByHandAction::Left => "left",
        }
    }
}

impl Serialize for ByHandAction {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

/// A request as it is written: the protocol's version, its id, the
/// provider instance it is made for, its verb with what the verb carries,
/// and how long mesh-provide waits for it.
#[derive(Serialize)]
struct Request<'a> {
    v: u32,
    id: u64,
    #[serde(flatten)]
    carries: Carries<'a>,
    provider: &'a ModuleId,
    deadline_ms: u64,
}

/// What each verb's request carries, tagged `"verb"` (its names are
/// [`Verb::as_str`]'s, which the tests hold them to).
#[derive(Serialize)]
#[serde(tag = "verb", rename_all = "kebab-case")]
enum Carries<'a> {
    Hello,
    Ensure {
        consumer: ConsumerBody<'a>,
        secret: &'a str,
    },
    Check {
        consumer: ConsumerBody<'a>,
        secret: &'a str,
    },
    Held,
    Retire {
        consumer: &'a Name,
    },
    ReEnable {
        consumer: &'a Name,
    },
    Delete {
        consumer: &'a Name,
    },
    Probe {
        fault: &'a Name,
    },
    Repair {
        fault: &'a Name,
    },
    ByHand {
        consumer: &'a Name,
        #[serde(skip_serializing_if = "Option::is_none")]
        secret: Option<&'a str>,
        action: ByHandAction,
        #[serde(skip_serializing_if = "Option::is_none")]
        target: Option<&'a Name>,
    },
}

/// The consumer as an `ensure` or `check` request carries it.
#[derive(Serialize)]
struct ConsumerBody<'a> {
    name: &'a Name,
    machine: &'a Name,
    provision: &'a str,
    options: &'a Value,
}

impl<'a> ConsumerBody<'a> {
    fn of(consumer: &'a Consumer) -> Self {
        ConsumerBody {
            name: &consumer.name,
            machine: &consumer.machine,
            provision: &consumer.provision,
            options: &consumer.options,
        }
    }
}

impl<'a> Ask<'a> {
    /// Its verb.
    pub fn verb(&self) -> Verb {
        match self {
            Ask::Hello => Verb::Hello,
            Ask::Ensure(..) => Verb::Ensure,
            Ask::Check(..) => Verb::Check,
            Ask::Held(_) => Verb::Held,
            Ask::Retire(..) => Verb::Retire,
            Ask::ReEnable(..) => Verb::ReEnable,
            Ask::Delete(..) => Verb::Delete,
            Ask::Probe(_) => Verb::Probe,
            Ask::Repair(_) => Verb::Repair,
            Ask::ByHand { .. } => Verb::ByHand,
        }
    }

    /// The consumer's secret it carries (ensure, check; by-hand's make,
    /// works and reach).
    pub fn secret(&self) -> Option<&'a Secret> {
        match self {
            Ask::Ensure(_, secret) | Ask::Check(_, secret) => Some(secret),
            Ask::ByHand { secret, .. } => *secret,
            _ => None,
        }
    }

    /// The consumer it is about, if any.
    pub fn consumer(&self) -> Option<&'a Name> {
        match self {
            Ask::Ensure(c, _) | Ask::Check(c, _) => Some(&c.name),
            Ask::Retire(_, n) | Ask::ReEnable(_, n) | Ask::Delete(_, n) => Some(n),
            Ask::ByHand { consumer, .. } => Some(consumer),
            _ => None,
        }
    }

    /// The provider instance it is made for, when the call names one
    /// (the loop's calls about consumers and `held`); the others are made
    /// for the instance the hook runs for.
    pub fn provider(&self) -> Option<&'a ModuleId> {
        match self {
            Ask::Ensure(c, _) | Ask::Check(c, _) => Some(&c.provider),
            Ask::Held(p) | Ask::Retire(p, _) | Ask::ReEnable(p, _) | Ask::Delete(p, _) => Some(p),
            _ => None,
        }
    }

    /// The request as one JSON line (ending in `\n`), carrying `id`, the
    /// `provider` it is made for (its own, or `running_for`: the instance
    /// the hook runs for) and `deadline_ms`: how long mesh-provide waits
    /// for the reply.
    pub fn line(&self, id: u64, running_for: &ModuleId, deadline: Duration) -> Vec<u8> {
        let carries = match *self {
            Ask::Hello => Carries::Hello,
            Ask::Ensure(consumer, secret) => Carries::Ensure {
                consumer: ConsumerBody::of(consumer),
                secret: secret.expose(),
            },
            Ask::Check(consumer, secret) => Carries::Check {
                consumer: ConsumerBody::of(consumer),
                secret: secret.expose(),
            },
            Ask::Held(_) => Carries::Held,
            Ask::Retire(_, consumer) => Carries::Retire { consumer },
            Ask::ReEnable(_, consumer) => Carries::ReEnable { consumer },
            Ask::Delete(_, consumer) => Carries::Delete { consumer },
            Ask::Probe(fault) => Carries::Probe { fault },
            Ask::Repair(fault) => Carries::Repair { fault },
            Ask::ByHand {
                action,
                consumer,
                secret,
                target,
            } => Carries::ByHand {
                consumer,
                secret: secret.map(Secret::expose),
                action,
                target,
            },
        };
        let request = Request {
            v: VERSION,
            id,
            carries,
            provider: self.provider().unwrap_or(running_for),
            deadline_ms: u64::try_from(deadline.as_millis()).unwrap_or(u64::MAX),
        };
        let mut line = serde_json::to_vec(&request).expect("a request serializes");
        line.push(b'\n');
        line
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn consumer() -> Consumer {
        Consumer {
            provider: "redis@db-1".parse().unwrap(),
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
        let (forge, wiki, fault) = (n("forge"), n("wiki"), n("admin-refused"));
        // The instance the hook runs for, and another that a call names.
        let (running, other): (ModuleId, ModuleId) =
            ("redis@db-1".parse().unwrap(), "redis@db-2".parse().unwrap());
        let cases: Vec<(Ask<'_>, Value)> = vec![
            (
                Ask::Hello,
                json!({"v":1,"id":7,"deadline_ms":2500,"verb":"hello","provider":"redis@db-1"}),
            ),
            (
                Ask::Ensure(&c, &secret),
                json!({"v":1,"id":7,"deadline_ms":2500,"verb":"ensure","consumer":{"name":"forge","machine":"app-1","provision":"redis-acl","options":{"db":2}},"secret":"s3cret","provider":"redis@db-1"}),
            ),
            (
                Ask::Check(&c, &secret),
                json!({"v":1,"id":7,"deadline_ms":2500,"verb":"check","consumer":{"name":"forge","machine":"app-1","provision":"redis-acl","options":{"db":2}},"secret":"s3cret","provider":"redis@db-1"}),
            ),
            (
                Ask::Held(&other),
                json!({"v":1,"id":7,"deadline_ms":2500,"verb":"held","provider":"redis@db-2"}),
            ),
            (
                Ask::Retire(&other, &forge),
                json!({"v":1,"id":7,"deadline_ms":2500,"verb":"retire","consumer":"forge","provider":"redis@db-2"}),
            ),
            (
                Ask::ReEnable(&running, &forge),
                json!({"v":1,"id":7,"deadline_ms":2500,"verb":"re-enable","consumer":"forge","provider":"redis@db-1"}),
            ),
            (
                Ask::Delete(&other, &forge),
                json!({"v":1,"id":7,"deadline_ms":2500,"verb":"delete","consumer":"forge","provider":"redis@db-2"}),
            ),
            (
                Ask::Probe(&fault),
                json!({"v":1,"id":7,"deadline_ms":2500,"verb":"probe","fault":"admin-refused","provider":"redis@db-1"}),
            ),
            (
                Ask::Repair(&fault),
                json!({"v":1,"id":7,"deadline_ms":2500,"verb":"repair","fault":"admin-refused","provider":"redis@db-1"}),
            ),
            (
                Ask::ByHand {
                    action: ByHandAction::Reach,
                    consumer: &forge,
                    secret: Some(&secret),
                    target: Some(&wiki),
                },
                json!({"v":1,"id":7,"deadline_ms":2500,"verb":"by-hand","action":"reach","consumer":"forge","secret":"s3cret","target":"wiki","provider":"redis@db-1"}),
            ),
            (
                Ask::ByHand {
                    action: ByHandAction::Change,
                    consumer: &forge,
                    secret: None,
                    target: None,
                },
                json!({"v":1,"id":7,"deadline_ms":2500,"verb":"by-hand","action":"change","consumer":"forge","provider":"redis@db-1"}),
            ),
        ];
        for (ask, expected) in cases {
            let line = ask.line(7, &running, Duration::from_millis(2500));
            assert_eq!(line.last(), Some(&b'\n'), "{:?}", ask.verb());
            assert_eq!(line.iter().filter(|b| **b == b'\n').count(), 1, "one line");
            let body: Value = serde_json::from_slice(&line).unwrap();
            assert_eq!(body, expected, "{:?}", ask.verb());
            assert_eq!(
                body["verb"],
                ask.verb().as_str(),
                "the tag is the verb's word"
            );
        }
        assert!(Verb::ALL.iter().all(|v| !v.as_str().is_empty()));
    }

    #[test]
    fn only_ensure_check_and_by_hand_carry_a_secret() {
        let c = consumer();
        let secret = Secret::new("s3cret");
        let forge = n("forge");
        let running: ModuleId = "redis@db-1".parse().unwrap();
        for ask in [
            Ask::Hello,
            Ask::Held(&running),
            Ask::Retire(&running, &forge),
            Ask::Probe(&forge),
        ] {
            let line = String::from_utf8(ask.line(1, &running, Duration::from_secs(1))).unwrap();
            assert!(!line.contains("secret"), "{line}");
        }
        for ask in [Ask::Ensure(&c, &secret), Ask::Check(&c, &secret)] {
            assert_eq!(ask.secret(), Some(&secret));
        }
    }

    #[test]
    fn a_request_keeps_its_keys_in_the_contracts_order() {
        let c = consumer();
        let secret = Secret::new("s3cret");
        let (forge, wiki) = (n("forge"), n("wiki"));
        let running: ModuleId = "redis@db-1".parse().unwrap();
        let line = |ask: Ask<'_>| {
            String::from_utf8(ask.line(7, &running, Duration::from_millis(2500))).unwrap()
        };
        assert_eq!(
            line(Ask::Ensure(&c, &secret)),
            "{\"v\":1,\"id\":7,\"verb\":\"ensure\",\"consumer\":{\"name\":\"forge\",\"machine\":\"app-1\",\"provision\":\"redis-acl\",\"options\":{\"db\":2}},\"secret\":\"s3cret\",\"provider\":\"redis@db-1\",\"deadline_ms\":2500}\n"
        );
        assert_eq!(
            line(Ask::ByHand {
                action: ByHandAction::Reach,
                consumer: &forge,
                secret: Some(&secret),
                target: Some(&wiki),
            }),
            "{\"v\":1,\"id\":7,\"verb\":\"by-hand\",\"consumer\":\"forge\",\"secret\":\"s3cret\",\"action\":\"reach\",\"target\":\"wiki\",\"provider\":\"redis@db-1\",\"deadline_ms\":2500}\n"
        );
        assert_eq!(
            line(Ask::Hello),
            "{\"v\":1,\"id\":7,\"verb\":\"hello\",\"provider\":\"redis@db-1\",\"deadline_ms\":2500}\n"
        );
    }
}
