//! Classes from typed facts: the HTTP status and Keycloak's error code.
//!
//! | fact | class |
//! | --- | --- |
//! | no answer (connect error, timeout, broken body) | `unreachable` |
//! | 5xx, 408, 429 | `unreachable` |
//! | 401 | `credentials-rejected` |
//! | 400 with `invalid_grant`, `invalid_client` or `unauthorized_client` | `credentials-rejected` |
//! | any other 4xx, a foreign client, a wrong provision | `refused` |
//! | an answer that cannot be understood | none: the loop reads the message |

use mesh_sdk::Class;

use crate::error::IdentityError;

/// Keycloak's OAuth error codes that mean a login or a client's secret was refused.
const CREDENTIAL_ERRORS: [&str; 3] = ["invalid_grant", "invalid_client", "unauthorized_client"];

/// The class of `error`, from its typed facts; `None` when it has none
/// (the loop then reads the error's message).
pub fn classify(error: &IdentityError) -> Option<Class> {
    match error {
        IdentityError::Unreachable { .. } => Some(Class::Unreachable),
        IdentityError::Status { status, error, .. } => {
            Some(status_class(*status, error.as_deref()))
        }
        IdentityError::Foreign { .. }
        | IdentityError::OtherInstance { .. }
        | IdentityError::NotAdopted { .. }
        | IdentityError::WrongProvision { .. } => Some(Class::Refused),
        IdentityError::Unexpected { .. } => None,
    }
}

/// The class of an error answer with `status` and Keycloak's error code.
pub fn status_class(status: u16, error: Option<&str>) -> Class {
    match status {
        500..=599 | 408 | 429 => Class::Unreachable,
        401 => Class::CredentialsRejected,
        400 if error.is_some_and(|e| CREDENTIAL_ERRORS.contains(&e)) => Class::CredentialsRejected,
        _ => Class::Refused,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_and_error_codes() {
        let cases: [(u16, Option<&str>, Class); 14] = [
            (401, Some("invalid_grant"), Class::CredentialsRejected),
            (400, Some("invalid_grant"), Class::CredentialsRejected),
            (401, Some("invalid_client"), Class::CredentialsRejected),
            (400, Some("invalid_client"), Class::CredentialsRejected),
            (401, Some("unauthorized_client"), Class::CredentialsRejected),
            (400, Some("unauthorized_client"), Class::CredentialsRejected),
            (401, None, Class::CredentialsRejected),
            (400, Some("invalidPasswordMinLengthMessage"), Class::Refused),
            (403, None, Class::Refused),
            (404, Some("Realm not found."), Class::Refused),
            (409, Some("Client forge already exists"), Class::Refused),
            (500, None, Class::Unreachable),
            (503, Some("invalid_grant"), Class::Unreachable),
            (429, None, Class::Unreachable),
        ];
        for (status, error, class) in cases {
            assert_eq!(status_class(status, error), class, "{status} {error:?}");
        }
    }

    #[test]
    fn typed_variants() {
        let foreign = IdentityError::Foreign {
            client: "forge".into(),
            realm: "mesh".into(),
        };
        assert_eq!(classify(&foreign), Some(Class::Refused));
        let unexpected = IdentityError::Unexpected {
            what: "x".into(),
            reason: "y".into(),
        };
        assert_eq!(classify(&unexpected), None);
        let answer = IdentityError::from_answer("x", 400, br#"{"error":"invalid_grant"}"#);
        assert_eq!(classify(&answer), Some(Class::CredentialsRejected));
    }
}
