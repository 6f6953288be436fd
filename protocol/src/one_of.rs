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

/// The one place an enum's wire words come from: given an enum that has
/// `ALL` (every value) and `as_str` (its word), it implements `Display`
/// (the word), `FromStr` (the word back, else [`NotOneOf`]) and serde's
/// `Serialize` and `Deserialize` through them, so no `rename_all` can say
/// another word than `as_str`. A word that is none of the values fails to
/// deserialize with [`NotOneOf`]'s sentence.
///
/// ```
/// #[derive(Clone, Copy, Debug, PartialEq)]
/// enum Colour { Red, DarkBlue }
///
/// impl Colour {
///     const ALL: [Colour; 2] = [Colour::Red, Colour::DarkBlue];
///     fn as_str(self) -> &'static str {
///         match self {
///             Colour::Red => "red",
///             Colour::DarkBlue => "dark-blue",
///         }
///     }
/// }
///
/// mesh_protocol::wire_words!(Colour, "a colour");
///
/// assert_eq!(serde_json::to_string(&Colour::DarkBlue).unwrap(), "\"dark-blue\"");
/// assert_eq!(serde_json::from_str::<Colour>("\"red\"").unwrap(), Colour::Red);
/// let error = serde_json::from_str::<Colour>("\"blue\"").unwrap_err().to_string();
/// assert!(error.starts_with("\"blue\" is not a colour (one of red, dark-blue)"), "{error}");
/// ```
#[macro_export]
macro_rules! wire_words {
    ($ty:ty, $expected:literal) => {
        impl ::std::fmt::Display for $ty {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl ::std::str::FromStr for $ty {
            type Err = $crate::NotOneOf;

            fn from_str(text: &str) -> ::std::result::Result<Self, Self::Err> {
                Self::ALL
                    .into_iter()
                    .find(|value| value.as_str() == text)
                    .ok_or_else(|| {
                        $crate::NotOneOf::new($expected, text, &Self::ALL.map(Self::as_str))
                    })
            }
        }

        impl $crate::__serde::Serialize for $ty {
            fn serialize<S: $crate::__serde::Serializer>(
                &self,
                serializer: S,
            ) -> ::std::result::Result<S::Ok, S::Error> {
                serializer.serialize_str(self.as_str())
            }
        }

        impl<'de> $crate::__serde::Deserialize<'de> for $ty {
            fn deserialize<D: $crate::__serde::Deserializer<'de>>(
                deserializer: D,
            ) -> ::std::result::Result<Self, D::Error> {
                let text =
                    <::std::borrow::Cow<'de, str> as $crate::__serde::Deserialize>::deserialize(
                        deserializer,
                    )?;
                text.parse()
                    .map_err(<D::Error as $crate::__serde::de::Error>::custom)
            }
        }
    };
}
