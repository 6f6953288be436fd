//! Fixtures for tests of what stores, reduces or reads the events the link
//! receives (feature `testing`; enable it in `[dev-dependencies]`): an
//! event as the link hands it to the store ([`received`]), a consumer's
//! recovery ([`recovered`]) and a small mesh's declaration
//! ([`declaration`]).

use mesh_protocol::event::{Recovered, RecoveredReason, VERSION};
use mesh_protocol::{Event, ModuleId, Name, Timestamp};

use crate::model::declaration::parse;
use crate::model::{ParsedDeclaration, Received};

/// A small mesh: `postgres@db-1` provides `postgres-database` and
/// `identity@id-1` provides `oidc-client`; on `app-1`, `forge` requires
/// both, `wiki` the database alone, and `lone` requires nothing.
#[must_use]
pub fn declaration() -> ParsedDeclaration {
    parse(
        r#"{"modules":[
          {"module":"postgres","machine":"db-1","provides":["postgres-database"]},
          {"module":"identity","machine":"id-1","provides":["oidc-client"]},
          {"module":"forge","machine":"app-1","requires":[
            {"provision":"postgres-database","from":"postgres@db-1"},
            {"provision":"oidc-client","from":"identity@id-1"}]},
          {"module":"wiki","machine":"app-1","requires":[
            {"provision":"postgres-database","from":"postgres@db-1"}]},
          {"module":"lone","machine":"app-1"}
        ]}"#,
    )
    .expect("the fixture declaration parses")
}

/// `event`, published by `emitter` (`module@machine`), at `seq` of the
/// stream's first epoch; when the stream stored it is not known.
///
/// Panics when `emitter` is not a module id.
pub fn received(emitter: &str, seq: u64, event: Event) -> Received {
    Received {
        epoch: 1,
        seq,
        stored_at: None,
        emitter: ModuleId::parse(emitter).expect("a valid module id"),
        event,
    }
}

/// `recovered` (a success) of `consumer`, its machine and provision not
/// said, published by `emitter` at `said_at`, at `seq` ([`received`]).
///
/// Panics when `emitter` or `consumer` is not valid.
pub fn recovered(emitter: &str, consumer: &str, said_at: Timestamp, seq: u64) -> Received {
    received(
        emitter,
        seq,
        Event::Recovered(Recovered {
            v: VERSION,
            consumer: Name::parse(consumer).expect("a valid consumer name"),
            consumer_machine: None,
            provision: None,
            reason: RecoveredReason::Success,
            said_at,
        }),
    )
}
