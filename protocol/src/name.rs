//! Names of modules, machines and consumers.
//!
//! A name becomes a NATS subject token and a PostgreSQL identifier, so only
//! `^[a-z0-9][a-z0-9_-]{0,62}$` is accepted. Anything else is refused with an
//! error that quotes (a bounded, escaped copy of) the offending text.

use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

/// Longest accepted name, in bytes (PostgreSQL cuts identifiers at 63).
pub const MAX_NAME_LEN: usize = 63;

/// A validated module, machine or consumer name.
///
/// Cloning one shares its text, and two clones compare equal without
/// reading it: the loop keeps each consumer's name once, however many maps
/// it is a key of.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Name(Arc<str>);

/// A text that is not a valid name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{shown} is not a valid name: {reason} (allowed: a lower-case letter or digit, then up to 62 of a-z 0-9 _ -)")]
pub struct NameError {
    shown: String,
    reason: &'static str,
}

impl Name {
    /// Validates `text` as a name.
    ///
    /// # Errors
    /// [`NameError`] saying why, when `text` does not match the name rule.
    pub fn parse(text: &str) -> Result<Name, NameError> {
        let refuse = |reason| {
            Err(NameError {
                shown: shown(text),
                reason,
            })
        };
        let Some(first) = text.bytes().next() else {
            return refuse("it is empty");
        };
        if text.len() > MAX_NAME_LEN {
            return refuse("it is longer than 63 bytes");
        }
        if !(first.is_ascii_lowercase() || first.is_ascii_digit()) {
            return refuse("it must start with a lower-case letter or a digit");
        }
        if !text
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-')
        {
            return refuse("it holds a character other than a-z 0-9 _ -");
        }
        Ok(Name(text.into()))
    }

    /// The name as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A bounded, escaped copy of untrusted text for error messages.
fn shown(text: &str) -> String {
    let cut: String = text.chars().take(80).collect();
    let mut out = format!("{cut:?}");
    if cut.len() < text.len() {
        out.push('…');
    }
    out
}

impl fmt::Display for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl AsRef<str> for Name {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for Name {
    type Error = NameError;
    fn try_from(value: String) -> Result<Self, Self::Error> {
        Name::parse(&value)
    }
}

impl From<Name> for String {
    fn from(value: Name) -> Self {
        value.0.as_ref().to_owned()
    }
}

impl std::str::FromStr for Name {
    type Err = NameError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Name::parse(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_valid_names() {
        for ok in ["a", "0", "forge", "app-1", "db_2", "a-_-b", &"x".repeat(63)] {
            assert_eq!(Name::parse(ok).unwrap().as_str(), ok);
        }
    }

    #[test]
    fn refuses_everything_else_with_a_reason() {
        let cases = [
            ("", "empty"),
            ("Forge", "start with"),
            ("forGe", "other than"),
            ("-a", "start with"),
            ("_a", "start with"),
            ("a.b", "other than"),
            ("a*", "other than"),
            ("a>", "other than"),
            ("a b", "other than"),
            ("a\"b", "other than"),
            ("é", "start with"),
            ("aé", "other than"),
        ];
        for (text, reason) in cases {
            let err = Name::parse(text).unwrap_err().to_string();
            assert!(err.contains(reason), "{text:?}: {err}");
        }
        let long = "x".repeat(64);
        assert!(Name::parse(&long)
            .unwrap_err()
            .to_string()
            .contains("63 bytes"));
    }

    #[test]
    fn error_shows_bounded_escaped_text() {
        let err = Name::parse(&format!("A\n{}", "y".repeat(500)))
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("\"A\\n"), "{err}");
        assert!(err.len() < 300, "{err}");
    }

    #[test]
    fn deserialize_validates() {
        assert!(serde_json::from_str::<Name>("\"ok-1\"").is_ok());
        assert!(serde_json::from_str::<Name>("\"not ok\"").is_err());
    }
}
