//! Where the link's messages come from: a small trait over the durable
//! consumer ([`Messages`], [`Delivery`]). `mesh-controller` implements it
//! over the JetStream durable pull consumer it follows in production.
//!
//! The link's rounds ([`super::follow_messages`]) are written against the
//! trait only, so a test or the simulator (`mesh-sim`) can run the very same
//! round code over a message source of its own.

use std::time::Duration;

use async_trait::async_trait;

/// What kind of failure the bus had.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeliveryErrorKind {
    /// The client is not connected, or nobody answered (no responders).
    Unreachable,
    /// The server did not answer in time.
    TimedOut,
    /// The durable consumer is not there (deleted, or its stream).
    ConsumerGone,
    /// Anything else the server or the client said.
    Other,
}

/// The bus did not do what the link asked (a pull, an ack, a NAK, a
/// consumer's state): its [`DeliveryErrorKind`] and the client's own error
/// (shown as the error's text, and as its [`std::error::Error::source`]).
#[derive(Debug)]
pub struct DeliveryError {
    kind: DeliveryErrorKind,
    error: Box<dyn std::error::Error + Send + Sync + 'static>,
}

impl DeliveryError {
    /// A failure of `kind`, said by the client's `error`.
    pub fn new(
        kind: DeliveryErrorKind,
        error: impl Into<Box<dyn std::error::Error + Send + Sync + 'static>>,
    ) -> DeliveryError {
        DeliveryError {
            kind,
            error: error.into(),
        }
    }

    /// Its kind.
    pub fn kind(&self) -> DeliveryErrorKind {
        self.kind
    }
}

impl std::fmt::Display for DeliveryError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.error.fmt(f)
    }
}

impl std::error::Error for DeliveryError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.error.source()
    }
}

/// One message delivered by the durable consumer, awaiting its ack.
///
/// # Guarantees expected of an implementation
/// - A message neither acknowledged, NAKed nor terminated is delivered
///   again after the consumer's ack wait.
/// - [`Delivery::double_ack`] returns `Ok` only once the server processed
///   this ack and every earlier one of the same consumer.
#[async_trait]
pub trait Delivery: Send + Sync {
    /// Its subject.
    fn subject(&self) -> &str;
    /// Its body.
    fn payload(&self) -> &[u8];
    /// Its stream sequence (0 when unknown).
    fn stream_sequence(&self) -> u64;
    /// When the stream stored it (the server's clock), when known.
    fn stored_at(&self) -> Option<std::time::SystemTime>;
    /// Acknowledges it (no answer awaited).
    ///
    /// # Errors
    /// Why the ack could not be sent.
    async fn ack(&self) -> Result<(), DeliveryError>;
    /// Acknowledges it and waits for the server's answer.
    ///
    /// # Errors
    /// Why the ack was not confirmed.
    async fn double_ack(&self) -> Result<(), DeliveryError>;
    /// Asks for it again after `delay`.
    ///
    /// # Errors
    /// Why the NAK could not be sent.
    async fn nak(&self, delay: Duration) -> Result<(), DeliveryError>;
    /// Terminates it (never delivered again) and waits for the answer.
    ///
    /// # Errors
    /// Why the termination was not confirmed.
    async fn term(&self) -> Result<(), DeliveryError>;
}

/// The durable consumer, as the link pulls from it.
#[async_trait]
pub trait Messages: Send {
    /// A delivered message.
    type Message: Delivery;
    /// The messages waiting (at most `batch`, in stream order), or, when
    /// none is, the first to arrive within `wait`; with the error that ended
    /// the pull, if any (no message and an expired pull are not errors).
    async fn pull(
        &mut self,
        batch: usize,
        wait: Duration,
    ) -> (Vec<Self::Message>, Option<DeliveryError>);
    /// What the consumer holds that is not acknowledged yet.
    ///
    /// # Errors
    /// When the consumer cannot be asked or is not there.
    async fn pending(&mut self) -> Result<ConsumerPending, DeliveryError>;
}

/// What a consumer holds that is not acknowledged yet.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ConsumerPending {
    /// Messages not delivered yet (JetStream's `num_pending`).
    pub undelivered: u64,
    /// Messages delivered and not acknowledged (`num_ack_pending`).
    pub unacknowledged: u64,
}

impl ConsumerPending {
    /// The stream's lag: every message not acknowledged yet.
    pub fn lag(&self) -> u64 {
        self.undelivered.saturating_add(self.unacknowledged)
    }

    /// Whether delivery waits on acknowledgements: the consumer holds
    /// `max_ack_pending` unacknowledged messages (their acks lost, say:
    /// they are stored, and delivered again after the ack wait) and more
    /// wait behind them. A pull then comes back empty though events wait.
    pub fn blocked(&self, max_ack_pending: usize) -> bool {
        self.undelivered > 0
            && self.unacknowledged >= u64::try_from(max_ack_pending).unwrap_or(u64::MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::ConsumerPending;

    #[test]
    fn delivery_is_blocked_only_by_a_full_ack_window_with_more_waiting() {
        let p = |undelivered, unacknowledged| ConsumerPending {
            undelivered,
            unacknowledged,
        };
        // (pending, max_ack_pending, blocked)
        for (pending, max, blocked) in [
            (p(0, 0), 16, false),
            (p(0, 16), 16, false),
            (p(5, 15), 16, false),
            (p(1, 16), 16, true),
            (p(9, 20), 16, true),
            (p(1, 1), 1, true),
        ] {
            assert_eq!(pending.blocked(max), blocked, "{pending:?} of {max}");
        }
        assert_eq!(p(3, 4).lag(), 7);
        assert_eq!(p(u64::MAX, 4).lag(), u64::MAX);
    }
}
