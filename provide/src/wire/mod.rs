//! The hook protocol's messages, as plain types with no I/O: the requests
//! mesh-provide writes ([`Ask`]), how a reply is read ([`parse`]) and judged
//! for the verb it answers ([`judge`]), and what was wrong when it is not
//! one ([`Bad`]). docs/hooks.md is the contract.

mod ask;
mod reply;
mod verb;

pub use ask::{Ask, ByHandAction};
pub use reply::{judge, parse, Answer, Bad, Done, Hello, ParsedReply, MAX_REPLY_BYTES};
pub use verb::{Ids, Verb, VERSION};
