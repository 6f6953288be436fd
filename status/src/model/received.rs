//! An event as the link received it from the event stream.

use mesh_protocol::{Event, ModuleId, Timestamp};

/// One event as the link hands it to the store. Events of one key are
/// ordered by `(epoch, seq)`, where they stand in the event stream, never by
/// the provider's clock (`said_at`).
#[derive(Clone, Debug, PartialEq)]
pub struct Received {
    /// The epoch of the stream it came through (see the store's
    /// `stream_epoch`): a stream made anew starts its sequence again at 1,
    /// and gets the next epoch.
    pub epoch: u64,
    /// Its JetStream stream sequence.
    pub seq: u64,
    /// When the event stream stored it (the bus's clock, never the
    /// provider's), when known: how recently a provider was heard from is
    /// judged by it.
    pub stored_at: Option<Timestamp>,
    /// Who published it, read from the subject (never from the body).
    pub emitter: ModuleId,
    /// The event.
    pub event: Event,
}
