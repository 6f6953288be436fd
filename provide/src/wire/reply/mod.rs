//! How a hook's reply is read ([`parse()`]: the JSON object, its `id` and its
//! `secrets` first), decoded into the typed reply of the verb it answers
//! (one serde type per verb, beside what every reply may say) and judged
//! from that ([`judge()`]), and what was wrong when it is not one ([`Bad`]).
//!
//! A reply carries no verb of its own: the request's verb tags it (in serve
//! mode it is known only once the reply's `id` is matched to a request in
//! flight), so the line is parsed once and decoded for that verb.

mod bad;
mod field;
mod judge;
mod parse;
mod verbs;

use mesh_sdk::{Class, Held, Name, Secret};

pub use bad::Bad;
pub use judge::judge;
pub use parse::{parse, ParsedReply, MAX_REPLY_BYTES};

/// A hook's hello: all of it optional.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Hello {
    /// The hook's name, for the log.
    pub name: Option<String>,
    /// Its known faults, each with the class consumers fail with while it lasts.
    pub repairs: Vec<(Name, Class)>,
    /// Its own secrets (an administrator's password), removed from every text it says.
    pub secrets: Vec<Secret>,
    /// `fault`: it cannot work as its administrator now (class, message).
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
    /// `left` (by-hand left): whether anything of that name is at the backend.
    pub left: Option<bool>,
    /// `fault` (probe): it cannot work as its administrator now (class, message).
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
    /// The call failed (`ok: false`, or a failing exit): the hook's class and message, if given.
    Refused {
        /// The class the hook gives, if any.
        class: Option<Class>,
        /// The hook's message, if any.
        error: Option<String>,
    },
}
