//! Asking a provider for an approval (`mesh-controller approve`, the
//! console's approvals): the request on the provider's approve subject
//! (docs/contracts/bus.md), its answer or why there is none.

use std::time::Duration;

use async_nats::RequestErrorKind;
use mesh_protocol::subject::approve_subject;
use mesh_protocol::{ApproveReply, ApproveRequest, ModuleId, Name, Timestamp, VERSION};

/// What came of an approval that was asked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ApproveAnswer {
    /// The provider answered (`ok` true: done; false: refused, with why).
    Replied(ApproveReply),
    /// No provider listens on the subject (not running, or not on the bus).
    NoResponders,
    /// Nobody answered within the timeout.
    TimedOut(Duration),
    /// An answer came that is not an approve reply.
    BadReply(String),
}

impl ApproveAnswer {
    /// Whether the approval was done.
    pub fn is_done(&self) -> bool {
        matches!(self, ApproveAnswer::Replied(reply) if reply.ok)
    }

    /// For a person: what `provider` said, or why there is no answer;
    /// `unheard` is what to check when nobody listens (in parentheses).
    pub fn describe(&self, provider: &ModuleId, unheard: &str) -> String {
        match self {
            ApproveAnswer::Replied(reply) if reply.ok => {
                format!("done by {provider}: {}", reply.detail)
            }
            ApproveAnswer::Replied(reply) => format!("refused by {provider}: {}", reply.detail),
            ApproveAnswer::NoResponders => {
                format!("unanswered: no provider {provider} listens on the bus ({unheard})")
            }
            ApproveAnswer::TimedOut(after) => format!(
                "unanswered: {provider} did not answer within {}; the request has expired, so \
                 it will not act on it",
                humantime::format_duration(*after)
            ),
            ApproveAnswer::BadReply(why) => {
                format!("unanswered: {provider} sent a malformed reply: {why}")
            }
        }
    }
}

/// The request could not be sent at all (exit 2).
#[derive(Debug, thiserror::Error)]
#[error("cannot send the approval to {subject}: {source}")]
pub struct ApproveError {
    subject: String,
    #[source]
    source: async_nats::RequestError,
}

/// Sends the approve request for `consumer` to `provider` and waits at most
/// `timeout` for its answer; the request expires then (`expires_at`), so a
/// provider that gets it later does not act on it.
///
/// # Errors
/// [`ApproveError`] when the request cannot be sent; an unanswered request
/// is an [`ApproveAnswer`], not an error.
pub async fn approve(
    client: &async_nats::Client,
    provider: &ModuleId,
    consumer: &Name,
    delete: bool,
    timeout: Duration,
    now: Timestamp,
) -> Result<ApproveAnswer, ApproveError> {
    let subject = approve_subject(&provider.machine, &provider.module);
    let body = serde_json::to_vec(&ApproveRequest {
        v: VERSION,
        consumer: consumer.clone(),
        delete,
        expires_at: Some(Timestamp::from_system(now.system_time() + timeout)),
    })
    .expect("an approve request serializes");
    let request = async_nats::Request::new()
        .payload(body.into())
        .timeout(Some(timeout));
    match client.send_request(subject.clone(), request).await {
        Ok(message) => Ok(
            match serde_json::from_slice::<ApproveReply>(&message.payload) {
                Ok(reply) => ApproveAnswer::Replied(reply),
                Err(error) => ApproveAnswer::BadReply(error.to_string()),
            },
        ),
        Err(error) => match error.kind() {
            RequestErrorKind::NoResponders => Ok(ApproveAnswer::NoResponders),
            RequestErrorKind::TimedOut => Ok(ApproveAnswer::TimedOut(timeout)),
            _ => Err(ApproveError {
                subject,
                source: error,
            }),
        },
    }
}
