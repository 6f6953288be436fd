//! A reply's field as the hook wrote it ([`Field`]): left out (or null), of
//! its type, or something else. Decoded so, a reply never fails to decode
//! on a wrong field: the judge reads the fields in the contract's order and
//! says the first wrong one in the terms of docs/hooks.md
//! ([`Bad::WrongType`], [`Bad::UnknownClass`]), not in serde's.

use std::fmt;
use std::marker::PhantomData;

use mesh_sdk::Class;
use serde::de::value::{MapAccessDeserializer, StrDeserializer};
use serde::de::{self, MapAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::Value;

use super::bad::Bad;

/// What `expected` says of a boolean field.
pub(super) const TRUE_OR_FALSE: &str = "true or false";

/// What `expected` says of a text field.
pub(super) const A_STRING: &str = "a string";

/// One field of a reply.
#[derive(Clone, Debug, Default, PartialEq)]
pub(super) enum Field<T> {
    /// Left out, or `null`.
    #[default]
    Absent,
    /// Of its type.
    Given(T),
    /// Something else, as written.
    Other(Value),
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Field<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        /// The value tried as `T` first, then taken as whatever it is.
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw<T> {
            Given(T),
            Other(Value),
        }
        Ok(match Raw::deserialize(deserializer)? {
            Raw::Given(value) => Field::Given(value),
            Raw::Other(Value::Null) => Field::Absent,
            Raw::Other(value) => Field::Other(value),
        })
    }
}

impl<T> Field<T> {
    /// Its value, if given.
    ///
    /// # Errors
    /// [`Bad::WrongType`] naming `field` and what it must be (`expected`)
    /// when it is of another type.
    pub(super) fn read(
        self,
        field: &'static str,
        expected: &'static str,
    ) -> Result<Option<T>, Bad> {
        match self {
            Field::Absent => Ok(None),
            Field::Given(value) => Ok(Some(value)),
            Field::Other(_) => Err(Bad::WrongType { field, expected }),
        }
    }
}

impl Field<Word<Class>> {
    /// The class, if given.
    ///
    /// # Errors
    /// [`Bad::UnknownClass`] for a word that is none of the four;
    /// [`Bad::WrongType`] naming `field` for anything but a string.
    pub(super) fn class(self, field: &'static str) -> Result<Option<Class>, Bad> {
        match self {
            Field::Absent => Ok(None),
            Field::Given(Word(class)) => Ok(Some(class)),
            Field::Other(Value::String(word)) => Err(Bad::UnknownClass(word)),
            Field::Other(_) => Err(Bad::WrongType {
                field,
                expected: A_STRING,
            }),
        }
    }
}

/// A field that must be a JSON object: decoded from an object only, so
/// that a list whose items happen to line up with the fields (serde reads
/// a struct from either) is no `fault` or `held` entry.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Object<T>(pub T);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Object<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Fields<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for Fields<T> {
            type Value = Object<T>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object")
            }

            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Object<T>, A::Error> {
                T::deserialize(MapAccessDeserializer::new(map)).map(Object)
            }
        }
        deserializer.deserialize_map(Fields(PhantomData))
    }
}

/// A field that must be a JSON string naming one of `T`'s values (a
/// [`Class`]): decoded from a string only, so that an object such as
/// `{"refused": null}` (serde's other way of writing an enum) is no class.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Word<T>(pub T);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Word<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Text<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for Text<T> {
            type Value = Word<T>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }

            fn visit_str<E: de::Error>(self, word: &str) -> Result<Word<T>, E> {
                T::deserialize(StrDeserializer::<E>::new(word)).map(Word)
            }
        }
        deserializer.deserialize_str(Text(PhantomData))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Default, Deserialize, PartialEq)]
    #[serde(default)]
    struct Pair {
        a: Field<bool>,
        b: Field<String>,
    }

    fn field<T: for<'de> Deserialize<'de>>(json: &str) -> Field<T> {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn a_field_is_absent_given_or_other_and_never_fails_to_decode() {
        assert_eq!(field::<bool>("null"), Field::Absent);
        assert_eq!(field::<bool>("true"), Field::Given(true));
        assert_eq!(field::<bool>("\"yes\""), Field::Other("yes".into()));
        assert_eq!(field::<u64>("9"), Field::Given(9));
        assert_eq!(field::<u64>("-1"), Field::Other((-1).into()));
        assert_eq!(
            field::<Vec<String>>("[\"a\"]"),
            Field::Given(vec!["a".into()])
        );
        assert!(matches!(field::<Vec<String>>("[\"a\",1]"), Field::Other(_)));
        let pair: Pair = serde_json::from_str(r#"{"b":2,"c":3}"#).unwrap();
        assert_eq!(pair.a, Field::Absent, "left out");
        assert_eq!(pair.b, Field::Other(2.into()));
    }

    #[test]
    fn a_class_is_the_enum_and_another_word_is_an_unknown_class() {
        assert_eq!(
            field::<Word<Class>>("\"secret-unreadable\"").class("class"),
            Ok(Some(Class::SecretUnreadable))
        );
        assert_eq!(field::<Word<Class>>("null").class("class"), Ok(None));
        assert_eq!(
            field::<Word<Class>>("\"Refused\"").class("class"),
            Err(Bad::UnknownClass("Refused".into()))
        );
        assert_eq!(
            field::<Word<Class>>(r#"{"refused":null}"#).class("class"),
            Err(Bad::WrongType {
                field: "class",
                expected: A_STRING
            }),
            "an enum written as serde's object is no class"
        );
        assert_eq!(
            field::<Word<Class>>("3").class("fault's class"),
            Err(Bad::WrongType {
                field: "fault's class",
                expected: A_STRING
            })
        );
    }

    #[test]
    fn an_object_field_is_decoded_from_an_object_only() {
        assert_eq!(
            field::<Object<Pair>>(r#"{"a":false}"#),
            Field::Given(Object(Pair {
                a: Field::Given(false),
                b: Field::Absent
            }))
        );
        assert!(matches!(
            field::<Object<Pair>>(r#"[true,"x"]"#),
            Field::Other(_)
        ));
        assert!(matches!(field::<Object<Pair>>("\"x\""), Field::Other(_)));
    }
}
