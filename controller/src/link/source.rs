//! Where the link's messages come from: a small trait over the durable
//! consumer ([`Messages`], [`Delivery`]), with the JetStream
//! implementation the link follows in production ([`JetStreamMessages`]).
//!
//! The link's rounds ([`super::follow_messages`]) are written against the
//! trait only, so a test or the simulator (`mesh-sim`) can run the very same
//! round code over a message source of its own.

use std::time::Duration;

use async_nats::jetstream::consumer::PullConsumer;
use async_nats::jetstream::{AckKind, Message};
use async_trait::async_trait;
use futures::StreamExt;

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
    async fn ack(&self) -> Result<(), String>;
    /// Acknowledges it and waits for the server's answer.
    ///
    /// # Errors
    /// Why the ack was not confirmed.
    async fn double_ack(&self) -> Result<(), String>;
    /// Asks for it again after `delay`.
    ///
    /// # Errors
    /// Why the NAK could not be sent.
    async fn nak(&self, delay: Duration) -> Result<(), String>;
    /// Terminates it (never delivered again) and waits for the answer.
    ///
    /// # Errors
    /// Why the termination was not confirmed.
    async fn term(&self) -> Result<(), String>;
}

/// The durable consumer, as the link pulls from it.
#[async_trait]
pub trait Messages: Send {
    /// A delivered message.
    type Message: Delivery;
    /// The messages waiting (at most `batch`, in stream order), or, when
    /// none is, the first to arrive within `wait`; with the error that ended
    /// the pull, if any (no message and an expired pull are not errors).
    async fn pull(&mut self, batch: usize, wait: Duration) -> (Vec<Self::Message>, Option<String>);
    /// What the consumer holds that is not acknowledged yet.
    ///
    /// # Errors
    /// When the consumer cannot be asked or is not there.
    async fn pending(&mut self) -> Result<Pending, String>;
}

/// What a consumer holds that is not acknowledged yet.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Pending {
    /// Messages not delivered yet (JetStream's `num_pending`).
    pub undelivered: u64,
    /// Messages delivered and not acknowledged (`num_ack_pending`).
    pub unacknowledged: u64,
}

impl Pending {
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
    use super::Pending;

    #[test]
    fn delivery_is_blocked_only_by_a_full_ack_window_with_more_waiting() {
        let p = |undelivered, unacknowledged| Pending {
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

/// The JetStream durable pull consumer.
#[derive(Debug)]
pub struct JetStreamMessages<'a>(pub &'a PullConsumer);

#[async_trait]
impl Messages for JetStreamMessages<'_> {
    type Message = Message;

    /// Every pull request is read to its end.
    async fn pull(&mut self, batch: usize, wait: Duration) -> (Vec<Message>, Option<String>) {
        let consumer = self.0;
        let waiting = consumer
            .fetch()
            .max_messages(batch)
            .expires(wait)
            .messages()
            .await
            .map_err(|e| e.to_string());
        let (messages, failure) = match waiting {
            Ok(stream) => collect(stream).await,
            Err(error) => (Vec::new(), Some(error)),
        };
        if !messages.is_empty() || failure.is_some() {
            return (messages, failure);
        }
        let next = consumer
            .batch()
            .max_messages(1)
            .expires(wait)
            .messages()
            .await
            .map_err(|e| e.to_string());
        match next {
            Ok(stream) => collect(stream).await,
            Err(error) => (Vec::new(), Some(error)),
        }
    }

    async fn pending(&mut self) -> Result<Pending, String> {
        let info = self.0.get_info().await.map_err(|e| e.to_string())?;
        Ok(Pending {
            undelivered: info.num_pending,
            unacknowledged: u64::try_from(info.num_ack_pending).unwrap_or(0),
        })
    }
}

/// Reads a pull to its end: its messages, and the error that ended it, if
/// any (the normal ends, no message or the pull expired, are not errors).
async fn collect<E: std::fmt::Display>(
    mut stream: impl futures::Stream<Item = Result<Message, E>> + Unpin,
) -> (Vec<Message>, Option<String>) {
    let mut messages = Vec::new();
    while let Some(item) = stream.next().await {
        match item {
            Ok(message) => messages.push(message),
            Err(error) => return (messages, Some(error.to_string())),
        }
    }
    (messages, None)
}

#[async_trait]
impl Delivery for Message {
    fn subject(&self) -> &str {
        self.subject.as_str()
    }

    fn payload(&self) -> &[u8] {
        &self.payload
    }

    fn stream_sequence(&self) -> u64 {
        self.info().map(|i| i.stream_sequence).unwrap_or(0)
    }

    fn stored_at(&self) -> Option<std::time::SystemTime> {
        self.info().ok().map(|i| i.published.into())
    }

    async fn ack(&self) -> Result<(), String> {
        Message::ack(self).await.map_err(|e| e.to_string())
    }

    async fn double_ack(&self) -> Result<(), String> {
        Message::double_ack(self).await.map_err(|e| e.to_string())
    }

    async fn nak(&self, delay: Duration) -> Result<(), String> {
        self.ack_with(AckKind::Nak(Some(delay)))
            .await
            .map_err(|e| e.to_string())
    }

    async fn term(&self) -> Result<(), String> {
        self.double_ack_with(AckKind::Term)
            .await
            .map_err(|e| e.to_string())
    }
}
