//! # mesh-protocol
//!
//! The mesh's bus contract as plain types: names, times, failure classes,
//! the subject grammar, every event body and the approve request and reply.
//! It is what a tool reading the bus depends on (a dashboard, an alerting
//! bridge, the controller), the way `postgres-protocol` sits under
//! `tokio-postgres`: no runtime, no NATS client, no I/O. Providers build on
//! `mesh-sdk`, which speaks this protocol for them.
//!
//! ## Subjects
//! Built by [`subject`], and an event subject parsed by
//! [`subject::parse_event_subject`]; the emitter is read from the subject
//! only, never from a body.
//!
//! | subject | published by | body |
//! | --- | --- | --- |
//! | `mesh.event.<machine>.<module>.provisioner.failing` | a provider | [`event::Failing`] |
//! | `mesh.event.<machine>.<module>.provisioner.recovered` | a provider | [`event::Recovered`] |
//! | `mesh.event.<machine>.<module>.provisioner.retirement` | a provider | [`event::Retirement`] |
//! | `mesh.event.<machine>.<module>.provisioner.repair` | a provider | [`event::RepairReport`] |
//! | `mesh.event.<machine>.<module>.provisioner.alive` | a provider | [`event::Alive`] |
//! | `mesh.event.<machine>.<consumer>.grant.unreachable` | the grant agent of `<machine>` | [`event::GrantUnreachable`] |
//! | `mesh.event.<machine>.<consumer>.grant.reachable` | the grant agent of `<machine>` | [`event::GrantReachable`] |
//! | `mesh.event.<machine>.<consumer>.grant.unchecked` | the grant agent of `<machine>` | [`event::GrantUnchecked`] |
//! | `mesh.cmd.<machine>.<module>.provisioner.approve` | the controller (core request/reply) | [`ApproveRequest`], reply [`ApproveReply`] |
//!
//! Inbox prefixes: a provider's `_INBOX.<machine>.<module>`, the grant
//! agent's `_INBOX.<machine>._grants`, the controller's `_INBOX._controller`.
//! Bus users: a module's `<module>@<machine>` ([`ModuleId`]), the grant
//! agent's `_grants@<machine>`, the controller's `controller`.
//!
//! ## Bodies
//! JSON with `"v": 1` ([`VERSION`]); times are RFC 3339 UTC with whole
//! seconds ([`Timestamp`]). Readers refuse another version and ignore
//! unknown fields ([`Event::parse`]). One body of each kind:
//!
//! ```text
//! failing:     {"v":1,"consumer":"forge","consumer_machine":"app-1","provision":"postgres-database",
//!               "class":"credentials-rejected","error":"password authentication failed for user \"forge\"",
//!               "since":"2026-10-05T00:04:00Z","attempts":61,"said_at":"2026-10-05T00:09:00Z"}
//! recovered:   {"v":1,"consumer":"forge","consumer_machine":"app-1","provision":"postgres-database",
//!               "reason":"success","said_at":"2026-10-05T00:12:05Z"}
//! retirement:  {"v":1,"consumer":"old-app","action":"retired",
//!               "detail":"disabled, nothing deleted: withdrawn from the contributions file long enough",
//!               "said_at":"2026-10-05T01:00:00Z"}
//!              (action: retiring, cancelled, retired, approved, re-enabled, deleted;
//!               retiring adds "retire_at":"2026-10-05T01:00:00Z", when it will be retired)
//! repair:      {"v":1,"fault":"admin-refused","outcome":"failed","detail":"repair failed: ...",
//!               "next_attempt_at":"2026-10-05T00:19:00Z","said_at":"2026-10-05T00:09:00Z"}
//! alive:       {"v":1,"started_at":"2026-10-05T00:00:00Z","alive_every_seconds":60,
//!               "failing_after_seconds":300,"repeat_every_seconds":900,
//!               "settled_at":"2026-10-05T00:05:01Z","consumers":120,
//!               "failing":3,"pass_seconds":0.84,"said_at":"2026-10-05T00:09:00Z"}
//! unreachable: {"v":1,"provision":"postgres-database","from":"postgres@db-1","address":"10.10.0.1",
//!               "port":6852,"failures":4,"failing_since":"2026-10-05T00:04:00Z",
//!               "last_reachable_at":null,"error":"connect timed out after 3s","said_at":"2026-10-05T00:09:00Z"}
//! reachable:   {"v":1,"provision":"postgres-database","from":"postgres@db-1","address":"10.10.0.1",
//!               "port":6852,"reason":"first-success-after-start","said_at":"2026-10-05T00:09:00Z"}
//! unchecked:   {"v":1,"provision":"postgres-database","from":"postgres@db-1",
//!               "reason":"consumer not running","said_at":"2026-10-05T00:09:00Z"}
//! approve request: {"v":1,"consumer":"old-app","delete":false,"expires_at":"2026-10-05T01:00:30Z"}
//! approve reply:   {"ok":true,"detail":"old-app retired: disabled, nothing deleted"}
//! ```
//!
//! ## Reading one message
//! ```
//! use mesh_protocol::{subject, Class, Event};
//!
//! let subject = "mesh.event.db-1.postgres.provisioner.failing";
//! let body = br#"{"v":1,"consumer":"forge","consumer_machine":"app-1",
//!     "provision":"postgres-database","class":"credentials-rejected",
//!     "error":"password authentication failed","since":"2026-10-05T00:04:00Z",
//!     "attempts":61,"said_at":"2026-10-05T00:09:00Z"}"#;
//! let (machine, module, kind) =
//!     subject::parse_event_subject(subject).expect("an event subject");
//! match Event::parse(kind, body)? {
//!     Event::Failing(failing) => {
//!         assert_eq!((machine.as_str(), module.as_str()), ("db-1", "postgres"));
//!         assert_eq!(failing.class, Class::CredentialsRejected);
//!         assert_eq!(failing.since.to_string(), "2026-10-05T00:04:00Z");
//!     }
//!     other => panic!("a failing subject gave {other:?}"),
//! }
//! # Ok::<_, mesh_protocol::BodyError>(())
//! ```
//!
//! The full contract, with what each field means and when each event is
//! published, is docs/contracts/ in the mesh repository.

// Nothing public by accident: what this crate offers is chosen.
#![warn(unreachable_pub)]

mod alive;
mod approve;
mod class;
pub mod event;
mod module_id;
mod name;
mod one_of;
pub mod subject;
mod time;

pub use approve::{ApproveReply, ApproveRequest};
pub use class::Class;
pub use event::{BodyError, Event, EventKind, VERSION};
pub use module_id::{ModuleId, ModuleIdError};
pub use name::{Name, NameError, MAX_NAME_LEN};
pub use one_of::NotOneOf;
pub use time::Timestamp;

/// serde, as [`wire_words!`] names it from another crate.
#[doc(hidden)]
pub use serde as __serde;
