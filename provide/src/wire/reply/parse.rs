//! A reply read from its bytes ([`parse`]): one JSON object, its `id` and
//! `secrets` taken first (the secrets replace the hook's before any other
//! field of the reply is read), the rest kept for the verb's decoding.

use mesh_sdk::Secret;
use serde::Deserialize;
use serde_json::{Map, Value};

use super::bad::Bad;
use super::field::Field;

/// The longest reply mesh-provide reads: a whole stdout (exec) or one line
/// (serve), newline excluded. A longer one is [`Bad::TooLarge`].
pub const MAX_REPLY_BYTES: usize = 64 * 1024;

/// How many bytes of a bad reply are kept to be redacted and then quoted.
const KEPT: usize = 4 * 1024;

/// The first bytes of a bad reply, as text, before any redaction.
fn kept(bytes: &[u8]) -> String {
    String::from_utf8_lossy(&bytes[..bytes.len().min(KEPT)])
        .trim()
        .to_owned()
}

/// What every reply carries whatever its verb: its `id` and `secrets`.
#[derive(Deserialize)]
struct Envelope {
    #[serde(default)]
    id: Field<u64>,
    #[serde(default)]
    secrets: Field<Vec<String>>,
    #[serde(flatten)]
    fields: Map<String, Value>,
}

/// A reply read as a JSON object, its `id` and `secrets` taken out (the
/// default: `{}`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ParsedReply {
    /// Its `id`, if it has a whole number there.
    pub id: Option<u64>,
    /// Its `secrets`, if it has them: the hook's own secrets from now on
    /// (the set is replaced before any of the hook's text is read).
    pub secrets: Option<Vec<Secret>>,
    /// Its other fields, decoded for the verb it answers when judged.
    pub(super) fields: Map<String, Value>,
}

impl ParsedReply {
    /// Whether it is a serve hook's line announcing its secrets alone
    /// (`{"secrets": [...]}`, no id): no reply to any call.
    pub fn is_secrets_line(&self) -> bool {
        self.id.is_none() && self.secrets.is_some() && self.fields.is_empty()
    }
}

/// Reads one reply (a whole stdout, or a line without its `\n`).
///
/// # Errors
/// [`Bad::TooLarge`], [`Bad::NotJson`] or [`Bad::NotAnObject`], and
/// [`Bad::WrongType`] for `secrets` that are not a list of strings; an
/// `id` that is present but not a whole number counts as none.
pub fn parse(bytes: &[u8]) -> Result<ParsedReply, Bad> {
    if bytes.len() > MAX_REPLY_BYTES {
        return Err(Bad::TooLarge {
            limit: MAX_REPLY_BYTES,
        });
    }
    let value: Value = serde_json::from_slice(bytes).map_err(|error| Bad::NotJson {
        error: error.to_string(),
        start: kept(bytes),
    })?;
    let Value::Object(object) = value else {
        return Err(Bad::NotAnObject { start: kept(bytes) });
    };
    let Envelope {
        id,
        secrets,
        fields,
    } = Envelope::deserialize(object).map_err(|error| Bad::Unreadable(error.to_string()))?;
    let secrets = secrets
        .read("secrets", "a list of strings")?
        .map(|secrets| {
            secrets
                .into_iter()
                .filter(|secret| !secret.is_empty())
                .map(Secret::new)
                .collect()
        });
    Ok(ParsedReply {
        id: id.read("id", "a whole number").ok().flatten(),
        secrets,
        fields,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reply_that_is_no_json_object_or_too_large_is_said_so() {
        let not_json = parse(b"Traceback (most recent call last):").unwrap_err();
        assert!(matches!(not_json, Bad::NotJson { .. }), "{not_json:?}");
        assert!(
            not_json.to_string().starts_with("reply is not JSON (")
                && not_json
                    .to_string()
                    .ends_with("\"Traceback (most recent call last):\""),
            "{not_json}"
        );
        assert_eq!(
            parse(b"[1,2]").unwrap_err(),
            Bad::NotAnObject {
                start: "[1,2]".into()
            }
        );
        assert!(matches!(parse(b"").unwrap_err(), Bad::NotJson { .. }));
        let huge = format!(
            r#"{{"id":1,"ok":true,"error":"{}"}}"#,
            "x".repeat(MAX_REPLY_BYTES)
        );
        assert_eq!(
            parse(huge.as_bytes()).unwrap_err(),
            Bad::TooLarge {
                limit: MAX_REPLY_BYTES
            }
        );
        let long = "y".repeat(500);
        let quoted = parse(long.as_bytes()).unwrap_err().to_string();
        assert!(quoted.len() < 150, "a bad reply is quoted short: {quoted}");
        // A secret past the quoted characters, or one with a quote in it,
        // is removed before the text is cut and quoted.
        let secret = "hunter2-\"quoted\"-long-enough-to-cross-the-cut";
        let line = format!("connecting as the administrator with password {secret} now");
        let bad = parse(line.as_bytes())
            .unwrap_err()
            .scrubbed(|text| text.replace(secret, "[redacted]"));
        let said = bad.to_string();
        assert!(
            said.ends_with(r#": "connecting as the administrator with pa…""#),
            "{said}"
        );
        assert!(!said.contains("hunt"), "{said}");
        let bad = parse(format!("{secret} first").as_bytes())
            .unwrap_err()
            .scrubbed(|text| text.replace(secret, "[redacted]"));
        assert!(
            bad.to_string().ends_with(r#": "[redacted] first""#),
            "{bad}"
        );
    }

    #[test]
    fn the_id_is_taken_out_and_a_bad_one_counts_as_none() {
        assert_eq!(parse(br#"{"id":9,"ok":true}"#).unwrap().id, Some(9));
        assert_eq!(parse(br#"{"ok":true}"#).unwrap().id, None);
        assert_eq!(parse(br#"{"id":"9","ok":true}"#).unwrap().id, None);
        assert_eq!(parse(br#"{"id":-1,"ok":true}"#).unwrap().id, None);
        assert_eq!(parse(br#"{"id":9.5,"ok":true}"#).unwrap().id, None);
        let parsed = parse(br#"{"id":"9","ok":true}"#).unwrap();
        assert_eq!(
            parsed.fields.keys().collect::<Vec<_>>(),
            ["ok"],
            "a bad id is taken out all the same"
        );
    }

    #[test]
    fn a_repeated_field_counts_as_its_last_as_before() {
        let parsed = parse(br#"{"id":1,"id":2,"ok":true,"ok":false}"#).unwrap();
        assert_eq!(parsed.id, Some(2));
        assert_eq!(parsed.fields.get("ok"), Some(&Value::Bool(false)));
    }

    #[test]
    fn any_reply_may_carry_secrets_and_a_line_of_secrets_alone_answers_no_call() {
        let reply = parse(br#"{"id":4,"ok":false,"error":"no","secrets":["new-pw",""]}"#).unwrap();
        assert_eq!(reply.secrets, Some(vec![Secret::new("new-pw")]));
        assert!(!reply.is_secrets_line());
        assert!(!reply.fields.contains_key("secrets"), "taken out");
        let line = parse(br#"{"secrets":["rotated"]}"#).unwrap();
        assert!(line.is_secrets_line());
        assert_eq!(line.secrets, Some(vec![Secret::new("rotated")]));
        assert!(!parse(br#"{"ok":true}"#).unwrap().is_secrets_line());
        assert!(!parse(br#"{"secrets":[],"ok":true}"#)
            .unwrap()
            .is_secrets_line());
        assert!(!parse(br#"{"secrets":null}"#).unwrap().is_secrets_line());
        assert_eq!(parse(br#"{"secrets":[]}"#).unwrap().secrets, Some(vec![]));
        for bad in [r#"{"secrets":"pw"}"#, r#"{"id":1,"secrets":[{"pw":1}]}"#] {
            assert_eq!(
                parse(bad.as_bytes()).unwrap_err().to_string(),
                "reply's secrets is not a list of strings",
                "{bad}"
            );
        }
    }
}
