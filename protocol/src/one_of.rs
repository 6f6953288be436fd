//! Enums written as one of a few fixed values on the bus (a class, a repair
//! outcome, a reason, an action, a grant's state), read back from that text
//! by [`std::str::FromStr`]: a store or a tool that keeps them as text
//! decodes them at its edge.

/// Text that is none of an enum's values. It names what was expected, quotes
/// the text (a bounded copy: 140 characters) and lists the values accepted.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{shown:?} is not {expected} (one of {accepted})")]
pub struct NotOneOf {
    expected: &'static str,
    shown: String,
    accepted: String,
}

impl NotOneOf {
    /// `text` is not `expected` (e.g. "a failure class"), whose values are `accepted`.
    pub fn new(expected: &'static str, text: &str, accepted: &[&str]) -> NotOneOf {
        NotOneOf {
            expected,
            shown: text.chars().take(140).collect(),
            accepted: accepted.join(", "),
        }
    }
}

/// `Display` (the word) and `FromStr` (the word back, else [`NotOneOf`])
/// of an enum that has `ALL` and `as_str`.
macro_rules! one_of {
    ($ty:ty, $expected:literal) => {
        impl std::fmt::Display for $ty {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl std::str::FromStr for $ty {
            type Err = $crate::NotOneOf;

            fn from_str(text: &str) -> Result<Self, Self::Err> {
                Self::ALL
                    .into_iter()
                    .find(|value| value.as_str() == text)
                    .ok_or_else(|| {
                        $crate::NotOneOf::new($expected, text, &Self::ALL.map(Self::as_str))
                    })
            }
        }
    };
}

pub(crate) use one_of;
