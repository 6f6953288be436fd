//! What was wrong with a hook's output ([`Bad`]), in the terms a hook
//! author reads (docs/hooks.md, "When a hook answers badly").

use mesh_sdk::{Name, NameError};

/// What was wrong with a hook's output: never a reply, always an error
/// naming the hook and the verb (see `HookError::BadReply`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Bad {
    /// Not JSON at all.
    #[error("reply is not JSON ({error}): {}", quote(start))]
    NotJson {
        /// The parser's message.
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
    /// More than [`MAX_REPLY_BYTES`](super::MAX_REPLY_BYTES).
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
    /// The reply's fields could not be decoded for its verb. Not seen in
    /// practice: every field is read as given, of its type or not, and a
    /// wrong one is [`Bad::WrongType`]; kept so that a decoding fault is
    /// an error naming the hook, never a panic.
    #[error("reply cannot be read ({0})")]
    Unreadable(String),
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
    /// The same, the hook's text in it passed through `scrub` (it may
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
            Bad::Io(error) => Bad::Io(scrub(&error)),
            Bad::Unreadable(error) => Bad::Unreadable(scrub(&error)),
            Bad::UnknownClass(word) => Bad::UnknownClass(scrub(&word)),
            other => other,
        }
    }
}

/// How many characters of a bad reply an error quotes.
const QUOTED: usize = 40;

/// A bad reply's start as an error shows it: cut, then quoted.
fn quote(start: &str) -> String {
    format!("{:?}", mesh_runtime::redact::cut(start, QUOTED))
}
