//! Each verb's reply as a serde type (docs/hooks.md, the reply table):
//! what every reply may say ([`Outcome`]) and what the verb's own reply
//! says beside it ([`Body`], one variant a verb), decoded from a parsed
//! reply's fields once the verb is known. Every field is a [`Field`], so
//! decoding takes the reply as written and the judge says what is wrong.

use mesh_sdk::Class;
use serde::Deserialize;
use serde_json::{Map, Value};

use super::field::{Field, Object, Word};
use crate::wire::verb::Verb;

/// What any reply may say, whatever its verb.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct Outcome {
    /// `true`: the hook does not know the verb.
    pub unsupported: Field<bool>,
    /// Whether the call succeeded (serve mode: every verb but `hello` and
    /// `held` must say it).
    pub ok: Field<bool>,
    /// A failure's class.
    pub class: Field<Word<Class>>,
    /// A failure's message.
    pub error: Field<String>,
}

/// `hello`'s reply (its `secrets` are the envelope's, taken at parse).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct HelloReply {
    /// The hook's name, for the log.
    pub name: Field<String>,
    /// Its known faults.
    pub repairs: Field<Vec<Field<Object<Repairable>>>>,
    /// It cannot work as its administrator now.
    pub fault: Field<Object<Fault>>,
}

/// A `repairs` entry of a hello.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct Repairable {
    /// The fault's name.
    pub fault: Field<String>,
    /// The class consumers fail with while it lasts (default
    /// `credentials-rejected`).
    pub class: Field<Word<Class>>,
}

/// The `fault` of a hello or a probe.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct Fault {
    /// Its class (default `refused`).
    pub class: Field<Word<Class>>,
    /// Its message.
    pub error: Field<String>,
}

/// `ensure`'s and `check`'s reply.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct MendedReply {
    /// What the hook found changed by hand and brought back.
    pub mended: Field<String>,
}

/// `held`'s reply.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct HeldReply {
    /// Every provision the hook made (required on success).
    pub held: Field<Vec<Field<Object<HeldEntry>>>>,
}

/// One entry of `held`.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct HeldEntry {
    /// The consumer's name (required).
    pub consumer: Field<String>,
    /// Whether it is retired (default false).
    pub retired: Field<bool>,
}

/// `probe`'s reply.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct ProbeReply {
    /// It cannot work as its administrator now.
    pub fault: Field<Object<Fault>>,
}

/// `repair`'s reply.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct RepairReply {
    /// What it did.
    pub detail: Field<String>,
}

/// `by-hand`'s reply.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct ByHandReply {
    /// `works`: whether the provision works with the secret.
    pub works: Field<bool>,
    /// `reach`: whether the consumer reaches the target's provision.
    pub reaches: Field<bool>,
    /// `left`: whether anything of that name is at the backend.
    pub left: Field<bool>,
}

/// What a verb's own reply says, tagged by the request's verb.
#[derive(Debug)]
pub(super) enum Body {
    /// `hello`.
    Hello(HelloReply),
    /// `ensure`.
    Ensure(MendedReply),
    /// `check`.
    Check(MendedReply),
    /// `held`.
    Held(HeldReply),
    /// `retire`: nothing beside the outcome.
    Retire,
    /// `re-enable`: nothing beside the outcome.
    ReEnable,
    /// `delete`: nothing beside the outcome.
    Delete,
    /// `probe`.
    Probe(ProbeReply),
    /// `repair`.
    Repair(RepairReply),
    /// `by-hand`.
    ByHand(ByHandReply),
}

/// A reply to one verb, typed.
#[derive(Debug)]
pub(super) struct Reply {
    /// What any reply may say.
    pub outcome: Outcome,
    /// What the verb's own says.
    pub body: Body,
}

impl Reply {
    /// Decodes a reply's fields (its `id` and `secrets` taken out) as
    /// `verb`'s reply; unknown fields are left unread.
    ///
    /// # Errors
    /// Serde's, which a reply's fields cannot cause (each is a [`Field`]).
    pub(super) fn decode(verb: Verb, fields: &Map<String, Value>) -> serde_json::Result<Reply> {
        fn of<'a, T: Deserialize<'a>>(fields: &'a Map<String, Value>) -> serde_json::Result<T> {
            T::deserialize(fields)
        }
        let body = match verb {
            Verb::Hello => Body::Hello(of(fields)?),
            Verb::Ensure => Body::Ensure(of(fields)?),
            Verb::Check => Body::Check(of(fields)?),
            Verb::Held => Body::Held(of(fields)?),
            Verb::Retire => Body::Retire,
            Verb::ReEnable => Body::ReEnable,
            Verb::Delete => Body::Delete,
            Verb::Probe => Body::Probe(of(fields)?),
            Verb::Repair => Body::Repair(of(fields)?),
            Verb::ByHand => Body::ByHand(of(fields)?),
        };
        Ok(Reply {
            outcome: of(fields)?,
            body,
        })
    }
}
