//! An error's text for a log line or an event of your own, with no secret
//! in it: mesh-runtime's [`error_text`] (an error and its sources),
//! [`redact`] (secrets removed, then cut) and [`cut`] (a bounded copy). The
//! loop already redacts what it publishes; these are for what a provider
//! says itself.

pub use mesh_runtime::redact::{cut, error_text, redact};
