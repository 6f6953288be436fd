//! The SDK's default classifier: an error's [`Class`] from its message.

use std::sync::LazyLock;

use aho_corasick::AhoCorasick;
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
pub(crate) fn classify_message(text: &str) -> Class {
    let lower = text.to_lowercase();
    let (phrases, groups) = &*PHRASES;
    let mut found = [false; 3];
    for m in phrases.find_overlapping_iter(lower.as_str()) {
        if whole(&lower, m.start(), m.end()) {
            found[groups[m.pattern().as_usize()]] = true;
        }
    }
    match found {
        [true, _, _] => Class::SecretUnreadable,
        [_, true, _] => Class::CredentialsRejected,
        [_, _, true] => Class::Unreachable,
        _ => Class::Refused,
    }
}

/// Every phrase of [`SECRET`], [`CREDENTIALS`] and [`UNREACHABLE`] in one
/// automaton (an error is read once, not once a phrase), and each phrase's
/// group: 0, 1 and 2 in that order.
static PHRASES: LazyLock<(AhoCorasick, Vec<usize>)> = LazyLock::new(|| {
    let all = [SECRET, CREDENTIALS, UNREACHABLE];
    let phrases =
        AhoCorasick::new(all.concat()).expect("the classifier's phrases make an automaton");
    let groups = all
        .iter()
        .enumerate()
        .flat_map(|(group, phrases)| std::iter::repeat_n(group, phrases.len()))
        .collect();
    (phrases, groups)
});

/// The match `start..end` of `haystack` is not glued to other letters or
/// digits, so "401" does not match "14012" and "timeout" does not match
/// "timeouts_total". Every occurrence is tried (overlapping ones too), so
/// a phrase counts wherever it stands whole.
fn whole(haystack: &str, start: usize, end: usize) -> bool {
    let alnum = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric());
    !alnum(haystack[..start].chars().next_back()) && !alnum(haystack[end..].chars().next())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typical_phrases_map_to_each_class() {
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
    fn numbers_and_phrases_match_whole() {
        assert_eq!(classify_message("row 14012 refused"), Class::Refused);
        assert_eq!(classify_message("metric timeouts_total=3"), Class::Refused);
        assert_eq!(classify_message("status 401"), Class::CredentialsRejected);
    }

    /// The classifier as it was written first: each phrase looked for on its own.
    fn one_phrase_at_a_time(text: &str) -> Class {
        fn contains_phrase(haystack: &str, needle: &str) -> bool {
            let alnum = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric());
            haystack.match_indices(needle).any(|(at, _)| {
                !alnum(haystack[..at].chars().next_back())
                    && !alnum(haystack[at + needle.len()..].chars().next())
            })
        }
        let lower = text.to_lowercase();
        let has = |phrases: &[&str]| phrases.iter().any(|w| contains_phrase(&lower, w));
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

    #[test]
    fn one_pass_over_all_phrases_says_what_each_phrase_on_its_own_said() {
        let phrases: Vec<&str> = [SECRET, CREDENTIALS, UNREACHABLE].concat();
        let glue = [
            " ", "", "_", "x", "1", ": ", "\u{e9}", "\u{130}", "-", "TIMEOUT",
        ];
        let mut state = 7u64;
        let mut next = |n: usize| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1);
            usize::try_from(state >> 33).unwrap_or(0) % n
        };
        let mut classes = std::collections::HashSet::new();
        for _ in 0..20_000 {
            let mut text = String::new();
            for _ in 0..next(4) + 1 {
                text.push_str(glue[next(glue.len())]);
                let phrase = phrases[next(phrases.len())];
                // Sometimes only the start of a phrase.
                match next(4) {
                    0 => text.push_str(&phrase[..next(phrase.len()) + 1]),
                    _ => text.push_str(phrase),
                }
            }
            text.push_str(glue[next(glue.len())]);
            let class = classify_message(&text);
            assert_eq!(class, one_phrase_at_a_time(&text), "{text:?}");
            classes.insert(class);
        }
        assert_eq!(classes.len(), 4, "{classes:?}");
    }

    #[test]
    fn credentials_win_over_reachability() {
        assert_eq!(
            classify_message("login failed: connection closed by server"),
            Class::CredentialsRejected
        );
    }
}
