//! `approve`: a person approves retiring (or deleting) a withdrawn consumer;
//! the request goes to the provider's approve subject and its answer is shown.

use std::time::Duration;

use async_nats::RequestErrorKind;
use mesh_protocol::subject::approve_subject;
use mesh_protocol::{ApproveReply, ApproveRequest, ModuleId, Name, VERSION};

/// The default `--timeout`.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// What came of an approval that was asked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Answer {
    /// The provider answered (`ok` true: done; false: refused, with why).
    Replied(ApproveReply),
    /// No provider listens on the subject (not running, or not on the bus).
    NoResponders,
    /// Nobody answered within the timeout.
    TimedOut(Duration),
    /// An answer came that is not an approve reply.
    BadReply(String),
}

impl Answer {
    /// Whether the approval was done.
    pub fn is_done(&self) -> bool {
        matches!(self, Answer::Replied(reply) if reply.ok)
    }

    /// For a person: what the provider said, or why there is no answer.
    pub fn describe(&self, provider: &ModuleId) -> String {
        match self {
            Answer::Replied(reply) if reply.ok => format!("done by {provider}: {}", reply.detail),
            Answer::Replied(reply) => format!("refused by {provider}: {}", reply.detail),
            Answer::NoResponders => format!(
                "unanswered: no provider {provider} listens on the bus (is it running and connected?)"
            ),
            Answer::TimedOut(after) => format!(
                "unanswered: {provider} did not answer within {}; the request has expired, so it \
                 will not act on it",
                humantime::format_duration(*after)
            ),
            Answer::BadReply(why) => format!("unanswered: {provider} sent a malformed reply: {why}"),
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
/// is an [`Answer`], not an error.
pub async fn approve(
    client: &async_nats::Client,
    provider: &ModuleId,
    consumer: &Name,
    delete: bool,
    timeout: Duration,
    now: mesh_protocol::Timestamp,
) -> Result<Answer, ApproveError> {
    let subject = approve_subject(&provider.machine, &provider.module);
    let body = serde_json::to_vec(&ApproveRequest {
        v: VERSION,
        consumer: consumer.clone(),
        delete,
        expires_at: Some(mesh_protocol::Timestamp::from_system(
            now.system_time() + timeout,
        )),
    })
    .expect("an approve request serializes");
    let request = async_nats::Request::new()
        .payload(body.into())
        .timeout(Some(timeout));
    match client.send_request(subject.clone(), request).await {
        Ok(message) => Ok(
            match serde_json::from_slice::<ApproveReply>(&message.payload) {
                Ok(reply) => Answer::Replied(reply),
                Err(error) => Answer::BadReply(error.to_string()),
            },
        ),
        Err(error) => match error.kind() {
            RequestErrorKind::NoResponders => Ok(Answer::NoResponders),
            RequestErrorKind::TimedOut => Ok(Answer::TimedOut(timeout)),
            _ => Err(ApproveError {
                subject,
                source: error,
            }),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_say_which() {
        let p = ModuleId::parse("postgres@db-1").unwrap();
        let cases = [
            (
                Answer::Replied(ApproveReply {
                    ok: true,
                    detail: "retired forge".into(),
                }),
                true,
                "done by postgres@db-1: retired forge",
            ),
            (
                Answer::Replied(ApproveReply {
                    ok: false,
                    detail: "forge is still listed".into(),
                }),
                false,
                "refused by postgres@db-1: forge is still listed",
            ),
            (
                Answer::NoResponders,
                false,
                "unanswered: no provider postgres@db-1 listens",
            ),
            (
                Answer::TimedOut(Duration::from_secs(30)),
                false,
                "unanswered: postgres@db-1 did not answer within 30s",
            ),
        ];
        for (answer, done, text) in cases {
            assert_eq!(answer.is_done(), done);
            assert!(
                answer.describe(&p).starts_with(text),
                "{}",
                answer.describe(&p)
            );
        }
    }
}
