//! The SDK's default classifier: an error's [`Class`] from its message.

use mesh_protocol::Class;

const CREDENTIALS: &[&str] = &[
    "password authentication failed",
    "authentication failed",
    "invalid_grant",
    "invalid_client",
    "unauthorized_client",
    "invalid user credentials",
    "invalid client credentials",
    "invalid credentials",
    "bad credentials",
    "wrong password",
    "invalid password",
    "login failed",
    "unauthorized",
    "401",
];

const UNREACHABLE: &[&str] = &[
    "connection refused",
    "connection reset",
    "connection closed",
    "connection aborted",
    "broken pipe",
    "timed out",
    "timeout",
    "deadline has elapsed",
    "no route to host",
    "network is unreachable",
    "host is unreachable",
    "unreachable",
    "failed to lookup address",
    "name or service not known",
    "temporary failure in name resolution",
    "dns error",
    "could not connect",
    "error connecting",
    "shutting down",
    "starting up",
    "unexpected eof",
    "502",
    "503",
    "504",
];

const SECRET: &[&str] = &["secret-unreadable", "secret unreadable", "minted secret"];

/// Classifies an error from its message: the default when the provider has no
/// typed classification of its own.
///
/// Credential phrases win over reachability phrases (a "login failed: connection
/// closed" is a refused login); anything unrecognised is [`Class::Refused`].
pub fn classify_message(text: &str) -> Class {
    let lower = text.to_lowercase();
    let has = |words: &[&str]| words.iter().any(|w| contains_word(&lower, w));
    if has(SECRET) {
        Class::SecretUnreadable
    } else if has(CREDENTIALS) {
        Class::CredentialsRejected
    } else if has(UNREACHABLE) {
        Class::Unreachable
    } else {
        Class::Refused
    }
}

/// `needle` occurs in `haystack` not glued to other letters or digits, so
/// "401" does not match "14012" and "timeout" does not match "timeouts_total".
fn contains_word(haystack: &str, needle: &str) -> bool {
    let alnum = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric());
    haystack.match_indices(needle).any(|(at, _)| {
        !alnum(haystack[..at].chars().next_back())
            && !alnum(haystack[at + needle.len()..].chars().next())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typical_words_map_to_each_class() {
        let cases = [
            (
                "db error: FATAL: password authentication failed for user \"forge\"",
                Class::CredentialsRejected,
            ),
            (
                "{\"error\":\"invalid_grant\",\"error_description\":\"Invalid user credentials\"}",
                Class::CredentialsRejected,
            ),
            (
                "HTTP status client error (401 Unauthorized)",
                Class::CredentialsRejected,
            ),
            (
                "invalid_client: Invalid client or Invalid client credentials",
                Class::CredentialsRejected,
            ),
            (
                "error connecting to server: Connection refused (os error 111)",
                Class::Unreachable,
            ),
            ("operation timed out", Class::Unreachable),
            ("check timed out after 30s", Class::Unreachable),
            ("deadline has elapsed", Class::Unreachable),
            (
                "FATAL: the database system is shutting down",
                Class::Unreachable,
            ),
            (
                "FATAL: the database system is starting up",
                Class::Unreachable,
            ),
            ("connection reset by peer", Class::Unreachable),
            (
                "error trying to connect: dns error: failed to lookup address information",
                Class::Unreachable,
            ),
            ("HTTP 503 Service Unavailable", Class::Unreachable),
            (
                "secret-unreadable: minted secret file is empty",
                Class::SecretUnreadable,
            ),
            ("permission denied to create database", Class::Refused),
            ("role \"postgres\" is not a mesh role", Class::Refused),
            ("", Class::Refused),
        ];
        for (text, class) in cases {
            assert_eq!(classify_message(text), class, "{text}");
        }
    }

    #[test]
    fn numbers_and_words_match_whole() {
        assert_eq!(classify_message("row 14012 refused"), Class::Refused);
        assert_eq!(classify_message("metric timeouts_total=3"), Class::Refused);
        assert_eq!(classify_message("status 401"), Class::CredentialsRejected);
    }

    #[test]
    fn credentials_win_over_reachability() {
        assert_eq!(
            classify_message("login failed: connection closed by server"),
            Class::CredentialsRejected
        );
    }
}
