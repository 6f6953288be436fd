//! The production [`EventSink`]: JetStream, awaiting the stream's ack.

use std::time::Duration;

use async_nats::jetstream::context::{PublishError, PublishErrorKind};
use async_nats::jetstream::{self, message::PublishMessage};
use async_trait::async_trait;
use bytes::Bytes;

use super::{EventSink, SinkError};

/// Publishes through JetStream and waits for the stream's ack.
#[derive(Clone, Debug)]
pub struct JetStreamSink {
    client: async_nats::Client,
    context: jetstream::Context,
}

impl JetStreamSink {
    /// A sink over `client`, waiting at most `ack_timeout` for each ack.
    pub fn new(client: async_nats::Client, ack_timeout: Duration) -> JetStreamSink {
        let mut context = jetstream::new(client.clone());
        context.set_timeout(ack_timeout);
        JetStreamSink { client, context }
    }
}

/// Why a publish was not acknowledged, in a message that says what to do when
/// no stream takes the subject (the usual first run, without a controller).
fn reason(error: &PublishError) -> String {
    match error.kind() {
        PublishErrorKind::StreamNotFound => format!(
            "{error}: the stream MESH_EVENTS is the controller's, and no controller made it on this bus yet; \
             start `mesh-controller serve` on it (it makes the stream); until then every event is kept pending"
        ),
        _ => error.to_string(),
    }
}

#[async_trait]
impl EventSink for JetStreamSink {
    async fn publish(&self, subject: &str, msg_id: &str, body: Bytes) -> Result<(), SinkError> {
        let fail = |error: PublishError| SinkError {
            subject: subject.to_owned(),
            reason: reason(&error),
        };
        let ack = self
            .context
            .send_publish(
                subject.to_owned(),
                PublishMessage::build().payload(body).message_id(msg_id),
            )
            .await
            .map_err(fail)?;
        ack.await.map(|_| ()).map_err(fail)
    }

    fn is_connected(&self) -> bool {
        self.client.connection_state() == async_nats::connection::State::Connected
    }
}
