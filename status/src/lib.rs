//! # mesh-status
//!
//! The status engine, backend-neutral (as `postgres-protocol` sits under
//! `tokio-postgres`): what `mesh-controller status` and `node show` say and
//! how the link's rounds bring the events there, with no PostgreSQL and no
//! NATS client in it. `mesh-controller` runs it over its PostgreSQL store and
//! the JetStream consumer; the simulator (`mesh-sim`) over a store and a bus
//! in memory; a console or a history command reads the same engine.
//!
//! Layers, bottom to top; a module imports only from layers below it
//! (checked by the root package's `tests/layers.rs`):
//! - [`model`]: plain types: the declaration, the events received and the
//!   rows, the pure reduction of a round of events.
//! - [`store`]: the [`Store`] trait the link writes through, its
//!   backend-neutral [`StoreError`], what a status read is asked for.
//! - [`link`]: the link's rounds ([`link::follow_messages`]) over the
//!   [`link::Messages`] and [`Store`] traits, and its metrics
//!   ([`LinkState`]); [`report`]: what `status` and `node show` say (pure).
//! - [`render`]: the report printed for a person or as JSON, as it is read.
//!
//! With the `testing` feature, `mesh_status::testing` has fixtures of the
//! events the link receives, for tests of what stores or reads them.
//!
//! History, the read side a console builds on: [`model::history`] decides
//! which events are transitions (the store keeps them append-only) and
//! its [`Transition`](model::history::Transition) is a history row as read
//! back; [`report::history`] makes them intervals, per-consumer totals and
//! a standing's recurrence; [`render::history`] prints them
//! (`mesh-controller history`); [`store::HistoryFilter`] says what a read
//! of history selects.

// Nothing public by accident: what this crate offers is chosen.
#![warn(unreachable_pub)]

pub mod model;

pub mod store;
#[cfg(any(test, feature = "testing"))]
pub mod testing;

pub mod link;
pub mod report;

pub mod render;

pub use link::{LinkSettings, LinkState};
pub use model::Declaration;
pub use report::{Clock, Scope};
pub use store::{Store, StoreError, StoreErrorKind};
