//! The console's token file (pure): who may log in, by what name, and
//! whether they may act or only look.
//!
//! A line is one of
//! - `TOKEN`: a token named `console`, which may act;
//! - `NAME:TOKEN`: a token named NAME, which may act;
//! - `NAME:TOKEN:read-only`: a token named NAME, which may only look.
//!
//! Blank lines and lines starting with `#` are skipped. A name is a mesh
//! name (`a-z`, `0-9`, `-`); names and tokens are each given once. A line
//! that is none of these refuses the whole file, naming the line, never
//! its token: a file that means something else than it says must not let
//! anyone in.

use mesh_protocol::Name;
use mesh_runtime::Secret;
use subtle::ConstantTimeEq;

/// The name of a bare token's holder.
pub(crate) const BARE_NAME: &str = "console";

/// The word that makes a token read-only.
const READ_ONLY: &str = "read-only";

/// One token and its holder.
pub(crate) struct Holder {
    /// Who (history's `by`).
    pub(crate) name: Name,
    token: Secret,
    /// Whether they may act (approve, note); `false`: only look.
    pub(crate) may_act: bool,
}

/// The tokens of one file, in its order.
pub(crate) struct Tokens(Vec<Holder>);

/// A token file that cannot be taken.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TokenFileError {
    /// It holds no token.
    #[error("it holds no token")]
    Empty,
    /// A line is not `TOKEN`, `NAME:TOKEN` or `NAME:TOKEN:read-only`.
    #[error("line {line}: {reason} (a line is TOKEN, NAME:TOKEN or NAME:TOKEN:read-only)")]
    Line {
        /// The line's number, from 1.
        line: usize,
        /// What is wrong, never the token.
        reason: String,
    },
}

fn same(a: &str, b: &str) -> bool {
    bool::from(a.as_bytes().ct_eq(b.as_bytes()))
}

impl Tokens {
    /// Reads a token file's text.
    ///
    /// # Errors
    /// [`TokenFileError`], naming the first line that cannot be taken.
    pub(crate) fn parse(text: &str) -> Result<Tokens, TokenFileError> {
        let mut holders: Vec<Holder> = Vec::new();
        for (index, raw) in text.lines().enumerate() {
            let line = raw.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let refused = |reason: String| TokenFileError::Line {
                line: index + 1,
                reason,
            };
            let parts: Vec<&str> = line.split(':').collect();
            let (name, token, may_act) = match parts.as_slice() {
                [token] => (BARE_NAME, *token, true),
                [name, token] => (*name, *token, true),
                [name, token, READ_ONLY] => (*name, *token, false),
                [_, _, other] => {
                    return Err(refused(format!(
                        "the third part is {other:?}, not {READ_ONLY:?}"
                    )))
                }
                _ => return Err(refused(format!("{} parts", parts.len()))),
            };
            let name = Name::parse(name.trim())
                .map_err(|e| refused(format!("the name is not valid: {e}")))?;
            let token = token.trim();
            if token.is_empty() {
                return Err(refused(format!("{name}'s token is empty")));
            }
            if token.chars().any(char::is_whitespace) {
                return Err(refused(format!("{name}'s token holds a space")));
            }
            if holders.iter().any(|h| h.name == name) {
                return Err(refused(format!("{name} is named on an earlier line")));
            }
            if holders.iter().any(|h| same(h.token.expose(), token)) {
                return Err(refused(format!("{name}'s token is an earlier line's too")));
            }
            holders.push(Holder {
                name,
                token: Secret::new(token.to_owned()),
                may_act,
            });
        }
        if holders.is_empty() {
            return Err(TokenFileError::Empty);
        }
        Ok(Tokens(holders))
    }

    /// The holder of `given` (compared in constant time with every token).
    pub(crate) fn holder(&self, given: &str) -> Option<&Holder> {
        let given = given.trim();
        let mut found = None;
        for h in &self.0 {
            if same(h.token.expose(), given) && found.is_none() {
                found = Some(h);
            }
        }
        found
    }

    /// How many tokens, and how many of them may act.
    pub(crate) fn counts(&self) -> (usize, usize) {
        (self.0.len(), self.0.iter().filter(|h| h.may_act).count())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn who(tokens: &Tokens, given: &str) -> Option<(String, bool)> {
        tokens
            .holder(given)
            .map(|h| (h.name.to_string(), h.may_act))
    }

    #[test]
    fn a_bare_token_is_named_console_and_may_act() {
        let tokens = Tokens::parse("  S3cret-token \n").unwrap();
        assert_eq!(who(&tokens, "S3cret-token"), Some(("console".into(), true)));
        assert_eq!(who(&tokens, "S3cret-toke"), None);
        assert_eq!(tokens.counts(), (1, 1));
    }

    #[test]
    fn named_tokens_act_or_only_look() {
        let text = "# who may look\nana:T-ana-1\n\nbo:T-bo-2:read-only\n";
        let tokens = Tokens::parse(text).unwrap();
        assert_eq!(who(&tokens, "T-ana-1"), Some(("ana".into(), true)));
        assert_eq!(who(&tokens, "T-bo-2"), Some(("bo".into(), false)));
        assert_eq!(who(&tokens, "bo:T-bo-2:read-only"), None);
        assert_eq!(who(&tokens, ""), None);
        assert_eq!(tokens.counts(), (2, 1));
    }

    #[test]
    fn a_line_that_means_something_else_refuses_the_file_naming_the_line_not_the_token() {
        let cases = [
            ("", TokenFileError::Empty.to_string()),
            ("# only a comment\n", TokenFileError::Empty.to_string()),
            (
                "ana:T-1\nbo:T-2:admin\n",
                "line 2: the third part is \"admin\"".into(),
            ),
            ("ana:T-1:read-only:x\n", "line 1: 4 parts".into()),
            ("Ana Banana:T-1\n", "line 1: the name is not valid".into()),
            ("ana:\n", "line 1: ana's token is empty".into()),
            ("ana:T 1\n", "line 1: ana's token holds a space".into()),
            (
                "ana:T-1\nana:T-2\n",
                "line 2: ana is named on an earlier line".into(),
            ),
            (
                "ana:T-1\nbo:T-1\n",
                "line 2: bo's token is an earlier line's too".into(),
            ),
        ];
        for (text, said) in cases {
            let error = Tokens::parse(text).err().unwrap().to_string();
            assert!(error.starts_with(&said), "{text:?}: {error}");
            assert!(!error.contains("T-1") && !error.contains("T-2"), "{error}");
        }
    }
}
