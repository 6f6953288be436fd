//! Keeping secrets out of every text a program logs or publishes: [`redact`]
//! removes them and cuts the text (docs/contracts/loop.md#classes-and-error-text),
//! [`error_text`] gives an error's whole chain of messages, [`shown_url`] a
//! URL without its password, [`cut`] a bounded copy of any text.

/// Longest error text a provider logs or sends, in characters.
pub const MAX_ERROR_CHARS: usize = 200;

/// Longest text of a provider fault, in characters: the whole reason of a
/// provider that cannot work (a fix at its end is not cut off), within the
/// 1,024 bytes the controller keeps of any text an event carries.
pub const MAX_FAULT_CHARS: usize = 1000;

/// What a removed secret is replaced with.
pub const REDACTED: &str = "[redacted]";

/// Removes every occurrence of each secret from `text`, then cuts it to its
/// first `MAX_ERROR_CHARS` characters (ending in `…` when cut).
///
/// Secrets are removed before the cut, so no prefix of a secret survives at
/// the end of a cut text. Longer secrets are removed first, so a secret that
/// contains another is removed whole. Empty secrets are ignored.
pub fn redact<S: AsRef<str>>(text: &str, secrets: &[S]) -> String {
    redact_within(text, secrets, MAX_ERROR_CHARS)
}

/// As [`redact`], cut to its first `max` characters instead.
pub fn redact_within<S: AsRef<str>>(text: &str, secrets: &[S], max: usize) -> String {
    let mut ordered: Vec<&str> = secrets
        .iter()
        .map(AsRef::as_ref)
        .filter(|s| !s.is_empty())
        .collect();
    ordered.sort_by_key(|s| std::cmp::Reverse(s.len()));
    let mut out = text.to_owned();
    for secret in ordered {
        if out.contains(secret) {
            out = out.replace(secret, REDACTED);
        }
    }
    cut(&out, max)
}

/// A server URL, or a comma-separated list of them, as it may be shown: a
/// password inside (`nats://user:pw@host`) becomes `***`. Text that is not
/// a URL is shown as it is.
pub fn shown_url(url: &str) -> String {
    url.split(',')
        .map(|one| {
            let Some((scheme, rest)) = one.split_once("://") else {
                return one.to_owned();
            };
            let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
            let (authority, path) = rest.split_at(authority_end);
            match authority.rsplit_once('@') {
                Some((userinfo, host)) => match userinfo.split_once(':') {
                    Some((user, _password)) => format!("{scheme}://{user}:***@{host}{path}"),
                    None => one.to_owned(),
                },
                None => one.to_owned(),
            }
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// The first `max` characters of `text`, ending in `…` when it was longer.
pub fn cut(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        None => text.to_owned(),
        Some(_) => {
            let mut out: String = text.chars().take(max.saturating_sub(1)).collect();
            out.push('…');
            out
        }
    }
}

/// The error's own message followed by those of its sources, joined with `: `
/// (many libraries, tokio-postgres among them, keep the detail in a source).
pub fn error_text(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(inner) = source {
        let message = inner.to_string();
        if !text.contains(&message) {
            text.push_str(": ");
            text.push_str(&message);
        }
        source = inner.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_in_urls_are_not_shown() {
        let cases = [
            ("nats://127.0.0.1:4222", "nats://127.0.0.1:4222"),
            ("nats://mesh:s3cret@h:4222", "nats://mesh:***@h:4222"),
            ("tls://u:p:w@h/x?y", "tls://u:***@h/x?y"),
            ("nats://token@h", "nats://token@h"),
            (
                "nats://a:pw1@h1:4222,nats://b:pw2@h2:4222",
                "nats://a:***@h1:4222,nats://b:***@h2:4222",
            ),
            (
                "postgres://u:p@db/name?sslmode=require",
                "postgres://u:***@db/name?sslmode=require",
            ),
            ("not a url", "not a url"),
        ];
        for (url, shown) in cases {
            assert_eq!(shown_url(url), shown, "{url}");
        }
    }

    #[test]
    fn removes_every_occurrence() {
        let out = redact("pw s3cr3t then s3cr3t again", &["s3cr3t"]);
        assert_eq!(out, "pw [redacted] then [redacted] again");
    }

    #[test]
    fn removes_a_secret_echoed_by_the_backend() {
        let text = "FATAL: role \"forge\" with password 'hunter2-long' rejected (hunter2-long)";
        let out = redact(text, &["hunter2-long", "admin-pw"]);
        assert!(!out.contains("hunter2"));
        assert_eq!(out.matches(REDACTED).count(), 2);
    }

    #[test]
    fn longer_secret_first() {
        let out = redact("abcdef", &["abc", "abcdef"]);
        assert_eq!(out, REDACTED);
    }

    #[test]
    fn empty_secret_ignored() {
        assert_eq!(redact("text", &[""]), "text");
    }

    #[test]
    fn cut_to_200_characters_after_redaction() {
        let secret = "S".repeat(30);
        let text = format!("{}{secret}", "x".repeat(195));
        let out = redact(&text, &[secret.as_str()]);
        assert!(!out.contains('S'));
        assert_eq!(out.chars().count(), MAX_ERROR_CHARS);
        assert!(out.ends_with('…'));
        let short = redact("short", &[secret.as_str()]);
        assert_eq!(short, "short");
    }

    #[test]
    fn cut_respects_multibyte_characters() {
        let text = "é".repeat(300);
        let out = cut(&text, 200);
        assert_eq!(out.chars().count(), 200);
        assert_eq!(cut("ééé", 3), "ééé");
    }

    #[test]
    fn error_messages_follow_sources() {
        #[derive(Debug, thiserror::Error)]
        #[error("db error")]
        struct Outer(#[source] std::io::Error);
        let err = Outer(std::io::Error::other("password authentication failed"));
        assert_eq!(error_text(&err), "db error: password authentication failed");
    }
}
