//! What can go wrong when speaking to Keycloak.
//!
//! Every variant keeps the typed facts ([`IdentityError::Status`] keeps the
//! HTTP status and Keycloak's own error code) so [`crate::classify`] can
//! decide the class without reading messages. No variant ever holds a secret:
//! passwords and client secrets travel only in request bodies, never in
//! URLs, and Keycloak's error bodies are reduced to their `error` /
//! `error_description` / `errorMessage` fields.
//!
//! Every error is a failure of the consumer (or the call) it happened in and
//! is retried on a later pass; none ends the loop.

use serde::Deserialize;

/// The attribute marking a client this provider made.
pub const MARK: &str = "mesh.provisioned";

/// The attribute naming the provider instance (`module@machine`) that made
/// a client: an instance lists and acts on its own clients only. A client
/// an older release made has [`MARK`] alone until an instance that lists
/// it adopts it.
pub const INSTANCE: &str = "mesh.provider";

/// The provision this provider makes.
pub const PROVISION: &str = "oidc-client";

/// A call to Keycloak that failed. Retried on a later pass.
#[derive(Debug, thiserror::Error)]
pub enum IdentityError {
    /// Keycloak could not be reached, or did not answer in time.
    #[error("{what}: keycloak cannot be reached")]
    Unreachable {
        /// What was being done.
        what: String,
        /// The transport's error (its message names the URL, never a secret).
        #[source]
        source: reqwest::Error,
    },
    /// Keycloak answered with an error status.
    #[error("{what}: keycloak answered {status}{}", detail(.error, .description))]
    Status {
        /// What was being done.
        what: String,
        /// The HTTP status code.
        status: u16,
        /// Keycloak's error code (`invalid_grant`, `invalid_client`, …) or message, when it gave one.
        error: Option<String>,
        /// Keycloak's description of the error, when it gave one.
        description: Option<String>,
    },
    /// A client with the consumer's `clientId` exists, but this provider did not make it.
    #[error("client {client} exists in realm {realm} but was not made by mesh (no {MARK} attribute); it is left untouched")]
    Foreign {
        /// The client's `clientId`.
        client: String,
        /// The realm.
        realm: String,
    },
    /// The client was made by another instance of mesh-identity: this one
    /// neither changes, retires nor deletes it.
    #[error("client {client} in realm {realm} was made by another mesh-identity instance ({by}); it is left untouched")]
    OtherInstance {
        /// The client's `clientId`.
        client: String,
        /// The realm.
        realm: String,
        /// The instance that made it, `module@machine`.
        by: String,
    },
    /// The client was made by a release before instance marks and this
    /// instance has not adopted it: only an instance listing it does (in
    /// `ensure`), so it is not retired, re-enabled or deleted.
    #[error("client {client} in realm {realm} was made before instance marks and only an instance listing it adopts it; it is left untouched")]
    NotAdopted {
        /// The client's `clientId`.
        client: String,
        /// The realm.
        realm: String,
    },
    /// Keycloak's answer could not be understood.
    #[error("{what}: unexpected answer from keycloak: {reason}")]
    Unexpected {
        /// What was being done.
        what: String,
        /// What was wrong with the answer.
        reason: String,
    },
    /// The consumer asks for a provision this provider does not make.
    #[error(
        "consumer {consumer} asks for provision {provision:?}; this provider makes {}",
        PROVISION
    )]
    WrongProvision {
        /// The consumer.
        consumer: String,
        /// What it asks for.
        provision: String,
    },
}

impl IdentityError {
    /// Keycloak's error code, when the error is an error answer that carried one.
    pub fn keycloak_error(&self) -> Option<&str> {
        match self {
            IdentityError::Status { error, .. } => error.as_deref(),
            _ => None,
        }
    }

    /// The HTTP status, when the error is an error answer.
    pub fn status(&self) -> Option<u16> {
        match self {
            IdentityError::Status { status, .. } => Some(*status),
            _ => None,
        }
    }

    /// Whether this is Keycloak refusing a password login (`invalid_grant`,
    /// with status 400 from Keycloak 26.6 on and 401 before it).
    pub fn is_invalid_grant(&self) -> bool {
        matches!(self, IdentityError::Status { status: 400 | 401, error: Some(e), .. } if e == "invalid_grant")
    }

    /// An error answer from its status and body (Keycloak's JSON error
    /// shapes are read; any other body is ignored, never quoted).
    pub(crate) fn from_answer(what: impl Into<String>, status: u16, body: &[u8]) -> IdentityError {
        let parsed: ErrorBody = serde_json::from_slice(body).unwrap_or_default();
        let error = parsed.error.or(parsed.error_message);
        IdentityError::Status {
            what: what.into(),
            status,
            error: error.map(|e| short(&e)),
            description: parsed.error_description.map(|d| short(&d)),
        }
    }
}

/// The error bodies Keycloak answers with: OAuth errors
/// (`{"error":"invalid_grant","error_description":"Invalid user credentials"}`)
/// and admin API errors (`{"errorMessage":"Client forge already exists"}`,
/// `{"error":"Could not find client"}`).
#[derive(Debug, Default, Deserialize)]
struct ErrorBody {
    error: Option<String>,
    error_description: Option<String>,
    #[serde(rename = "errorMessage")]
    error_message: Option<String>,
}

fn detail(error: &Option<String>, description: &Option<String>) -> String {
    match (error, description) {
        (Some(e), Some(d)) => format!(": {e}: {d}"),
        (Some(e), None) => format!(": {e}"),
        (None, Some(d)) => format!(": {d}"),
        (None, None) => String::new(),
    }
}

/// Keycloak's message, bounded (a hostile or broken server cannot flood the log).
fn short(text: &str) -> String {
    mesh_sdk::redact::cut(text, 120)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_keycloak_error_bodies() {
        let e = IdentityError::from_answer(
            "administrator login as admin",
            401,
            br#"{"error":"invalid_grant","error_description":"Invalid user credentials"}"#,
        );
        assert_eq!(
            e.to_string(),
            "administrator login as admin: keycloak answered 401: invalid_grant: Invalid user credentials"
        );
        assert!(e.is_invalid_grant());
        let e = IdentityError::from_answer(
            "making client forge",
            409,
            br#"{"errorMessage":"Client forge already exists"}"#,
        );
        assert_eq!(e.keycloak_error(), Some("Client forge already exists"));
        assert!(!e.is_invalid_grant());
        let e = IdentityError::from_answer("x", 502, b"<html>bad gateway</html>");
        assert_eq!(e.to_string(), "x: keycloak answered 502");
        assert_eq!(e.status(), Some(502));
    }

    #[test]
    fn invalid_grant_needs_400_or_401() {
        let body = br#"{"error":"invalid_grant"}"#;
        assert!(IdentityError::from_answer("x", 400, body).is_invalid_grant());
        assert!(IdentityError::from_answer("x", 401, body).is_invalid_grant());
        assert!(!IdentityError::from_answer("x", 403, body).is_invalid_grant());
        assert!(
            !IdentityError::from_answer("x", 401, br#"{"error":"invalid_client"}"#)
                .is_invalid_grant()
        );
    }
}
