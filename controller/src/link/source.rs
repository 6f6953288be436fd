//! The JetStream durable pull consumer as the engine's message source
//! ([`Messages`], [`Delivery`]): what the link follows in production.

use std::time::Duration;

use async_nats::jetstream::consumer::PullConsumer;
use async_nats::jetstream::context::{ConsumerInfoError, ConsumerInfoErrorKind};
use async_nats::jetstream::ErrorCode;
use async_nats::jetstream::{AckKind, Message};
use async_trait::async_trait;
use futures::StreamExt;
use mesh_status::link::{ConsumerPending, Delivery, DeliveryError, DeliveryErrorKind, Messages};

/// An error of the client, of no kind it names more closely.
fn other(error: impl Into<Box<dyn std::error::Error + Send + Sync + 'static>>) -> DeliveryError {
    DeliveryError::new(DeliveryErrorKind::Other, error)
}

/// The kind of a consumer's state the server did not give.
fn info_kind(error: &ConsumerInfoError) -> DeliveryErrorKind {
    match error.kind() {
        ConsumerInfoErrorKind::NotFound | ConsumerInfoErrorKind::StreamNotFound => {
            DeliveryErrorKind::ConsumerGone
        }
        ConsumerInfoErrorKind::JetStream(e) if e.error_code() == ErrorCode::CONSUMER_NOT_FOUND => {
            DeliveryErrorKind::ConsumerGone
        }
        ConsumerInfoErrorKind::TimedOut => DeliveryErrorKind::TimedOut,
        ConsumerInfoErrorKind::NoResponders | ConsumerInfoErrorKind::Offline => {
            DeliveryErrorKind::Unreachable
        }
        _ => DeliveryErrorKind::Other,
    }
}

/// The JetStream durable pull consumer.
#[derive(Debug)]
pub(super) struct JetStreamMessages<'a>(pub &'a PullConsumer);

#[async_trait]
impl Messages for JetStreamMessages<'_> {
    type Message = JetStreamMessage;

    /// Every pull request is read to its end.
    async fn pull(
        &mut self,
        batch: usize,
        wait: Duration,
    ) -> (Vec<JetStreamMessage>, Option<DeliveryError>) {
        let consumer = self.0;
        let waiting = consumer
            .fetch()
            .max_messages(batch)
            .expires(wait)
            .messages()
            .await
            .map_err(other);
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
            .map_err(other);
        match next {
            Ok(stream) => collect(stream).await,
            Err(error) => (Vec::new(), Some(error)),
        }
    }

    async fn pending(&mut self) -> Result<ConsumerPending, DeliveryError> {
        let info = self
            .0
            .get_info()
            .await
            .map_err(|e| DeliveryError::new(info_kind(&e), e))?;
        Ok(ConsumerPending {
            undelivered: info.num_pending,
            unacknowledged: u64::try_from(info.num_ack_pending).unwrap_or(0),
        })
    }
}

/// Reads a pull to its end: its messages, and the error that ended it, if
/// any (the normal ends, no message or the pull expired, are not errors).
async fn collect<E: Into<Box<dyn std::error::Error + Send + Sync + 'static>>>(
    mut stream: impl futures::Stream<Item = Result<Message, E>> + Unpin,
) -> (Vec<JetStreamMessage>, Option<DeliveryError>) {
    let mut messages = Vec::new();
    while let Some(item) = stream.next().await {
        match item {
            Ok(message) => messages.push(JetStreamMessage(message)),
            Err(error) => return (messages, Some(other(error))),
        }
    }
    (messages, None)
}

/// A message the JetStream consumer delivered.
#[derive(Debug)]
pub(super) struct JetStreamMessage(Message);

#[async_trait]
impl Delivery for JetStreamMessage {
    fn subject(&self) -> &str {
        self.0.subject.as_str()
    }

    fn payload(&self) -> &[u8] {
        &self.0.payload
    }

    fn stream_sequence(&self) -> u64 {
        self.0.info().map(|i| i.stream_sequence).unwrap_or(0)
    }

    fn stored_at(&self) -> Option<std::time::SystemTime> {
        self.0.info().ok().map(|i| i.published.into())
    }

    async fn ack(&self) -> Result<(), DeliveryError> {
        self.0.ack().await.map_err(other)
    }

    async fn double_ack(&self) -> Result<(), DeliveryError> {
        self.0.double_ack().await.map_err(other)
    }

    async fn nak(&self, delay: Duration) -> Result<(), DeliveryError> {
        self.0
            .ack_with(AckKind::Nak(Some(delay)))
            .await
            .map_err(other)
    }

    async fn term(&self) -> Result<(), DeliveryError> {
        self.0.double_ack_with(AckKind::Term).await.map_err(other)
    }
}
