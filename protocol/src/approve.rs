//! The approve command: a person's approval sent to one provider as a core
//! NATS request on its [`approve_subject`](crate::subject::approve_subject),
//! and the provider's reply (docs/contracts/bus.md#bodies).

use serde::{Deserialize, Serialize};

use crate::name::Name;
use crate::time::Timestamp;

/// Body of an approve request.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApproveRequest {
    /// Body version, 1.
    pub v: u32,
    /// The consumer to approve.
    pub consumer: Name,
    /// `false`: retire a withdrawn consumer at once; `true`: delete a retired one.
    #[serde(default)]
    pub delete: bool,
    /// The asker stops waiting then: a provider never acts on the request
    /// after it (an approval without one, from an older controller, has no
    /// deadline).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<Timestamp>,
}

/// Reply to an approve request.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApproveReply {
    /// Whether it was done.
    pub ok: bool,
    /// What was done, or why not, for a person.
    pub detail: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn approve_request_defaults_delete_to_false() {
        let req: ApproveRequest = serde_json::from_str(r#"{"v":1,"consumer":"forge"}"#).unwrap();
        assert!(!req.delete);
    }
}
