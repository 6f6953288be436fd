//! The servers of `--nats`, and the user and password a URL may carry
//! (`nats://user:pw@host`, the form every NATS client takes).
//!
//! The credentials are taken out of every URL before the URL reaches the
//! NATS client: async-nats logs each connection attempt at DEBUG with the
//! server's whole URL, and it does not send a URL's user and password
//! itself. They are handed to the client as its user and password instead
//! ([`async_nats::ConnectOptions::user_and_password`]), for every server it
//! connects to.
//!
//! The rules (one client has one identity on every server of a cluster):
//! - a URL's user and password are percent-decoded (`postgres%40db-1` is
//!   the user `postgres@db-1`);
//! - entries without credentials beside one that has them use the same
//!   ones, as servers the client discovers do;
//! - two entries holding different credentials are refused, as is a user
//!   without a password (a token) or a password without a user: a clear
//!   error at start, never a guess.
//!
//! Pure: no I/O; the errors name an entry by its place and never quote a
//! password.

use std::str::FromStr;

use async_nats::ServerAddr;
use percent_encoding::percent_decode_str;

use crate::redact::shown_url;

/// The servers of one `--nats` list, their URLs without credentials, and
/// the credentials one of them carried.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ServerList {
    /// Each entry, in order, without user or password.
    pub(crate) servers: Vec<ServerAddr>,
    /// The user and password inside the URLs, if any held them.
    pub(crate) credentials: Option<UrlCredentials>,
}

/// A user and password found inside a URL of the list.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct UrlCredentials {
    /// The user, percent-decoded.
    pub(crate) user: String,
    /// The password, percent-decoded.
    pub(crate) password: String,
    /// The first entry holding them, from 1.
    pub(crate) position: usize,
}

impl std::fmt::Debug for UrlCredentials {
    /// The user and the entry; never the password.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UrlCredentials")
            .field("user", &self.user)
            .field("password", &"***")
            .field("position", &self.position)
            .finish()
    }
}

/// A `--nats` list that cannot be used; ends the start. No variant holds a
/// password or a token.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ServerListError {
    /// An entry is empty or not a NATS server URL.
    #[error("--nats entry {position} ({entry}) is not a nats server: {reason}")]
    Invalid {
        /// The entry, its password replaced.
        entry: String,
        /// Its place in the comma-separated list, from 1.
        position: usize,
        /// Why.
        reason: String,
    },
    /// An entry holds credentials that are not a user and a password.
    #[error("--nats entry {position} ({entry}) holds {reason}")]
    Credentials {
        /// The entry, its user and password replaced by `***`.
        entry: String,
        /// Its place in the comma-separated list, from 1.
        position: usize,
        /// What it holds and what to give instead.
        reason: &'static str,
    },
    /// Two entries hold different credentials.
    #[error(
        "--nats entries {first} and {other} hold different users or passwords: the client \
         logs in as one user on every server of the list; give the same user and password \
         in each entry, or in one entry only"
    )]
    Different {
        /// The first entry holding credentials.
        first: usize,
        /// The entry holding others.
        other: usize,
    },
}

/// Parses the comma-separated `list` (`nats://` assumed without a scheme,
/// port 4222 without one), taking the credentials out of each entry.
///
/// # Errors
/// [`ServerListError`] for the first entry that cannot be used.
pub(crate) fn parse(list: &str) -> Result<ServerList, ServerListError> {
    let mut servers = Vec::new();
    let mut credentials: Option<UrlCredentials> = None;
    for (index, entry) in list.split(',').enumerate() {
        let position = index + 1;
        let (server, found) = parse_entry(entry.trim(), position)?;
        servers.push(server);
        match (&credentials, found) {
            (_, None) => {}
            (None, Some(found)) => credentials = Some(found),
            (Some(first), Some(found)) => {
                if (&first.user, &first.password) != (&found.user, &found.password) {
                    return Err(ServerListError::Different {
                        first: first.position,
                        other: position,
                    });
                }
            }
        }
    }
    Ok(ServerList {
        servers,
        credentials,
    })
}

/// One entry: its URL without credentials, and the credentials it held.
fn parse_entry(
    entry: &str,
    position: usize,
) -> Result<(ServerAddr, Option<UrlCredentials>), ServerListError> {
    let invalid = |reason: String| ServerListError::Invalid {
        entry: shown_url(entry),
        position,
        reason,
    };
    if entry.is_empty() {
        return Err(invalid("it is empty".to_owned()));
    }
    let server = ServerAddr::from_str(entry).map_err(|e| invalid(e.to_string()))?;
    let mut url = server.into_inner();
    let (user, password) = (url.username().to_owned(), url.password().map(str::to_owned));
    if user.is_empty() && password.is_none() {
        return Ok((
            ServerAddr::from_url(url).map_err(|e| invalid(e.to_string()))?,
            None,
        ));
    }
    let stripped = url.set_password(None).and_then(|()| url.set_username(""));
    let hidden = || url.as_str().replacen("://", "://***@", 1);
    let refuse = |reason: &'static str| ServerListError::Credentials {
        entry: hidden(),
        position,
        reason,
    };
    if stripped.is_err() {
        return Err(refuse("credentials in a URL that cannot carry them"));
    }
    let password = match password {
        Some(password) if !user.is_empty() => password,
        Some(_) => return Err(refuse("a password without a user: give user:password@host")),
        None => {
            return Err(refuse(
                "a user without a password (a token is not taken from a URL): give \
                 user:password@host, or --nats-user with --nats-password-file",
            ))
        }
    };
    let decode = |text: &str| {
        percent_decode_str(text)
            .decode_utf8()
            .map(|decoded| decoded.into_owned())
            .map_err(|_| refuse("a user or password that is not UTF-8 once percent-decoded"))
    };
    let credentials = UrlCredentials {
        user: decode(&user)?,
        password: decode(&password)?,
        position,
    };
    let server = ServerAddr::from_url(url).map_err(|e| invalid(e.to_string()))?;
    Ok((server, Some(credentials)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn credentials(user: &str, password: &str, position: usize) -> Option<UrlCredentials> {
        Some(UrlCredentials {
            user: user.to_owned(),
            password: password.to_owned(),
            position,
        })
    }

    #[test]
    fn credentials_are_taken_out_of_every_url_and_decoded() {
        let cases = [
            ("nats://a:4222", vec!["nats://a:4222"], None),
            (
                "nats://u:s3cret@a:4222",
                vec!["nats://a:4222"],
                credentials("u", "s3cret", 1),
            ),
            // The user's `@` written %40, or left for the URL parser (the
            // last `@` ends the credentials); a password with `:` and `@`.
            (
                "nats://postgres%40db-1:p%3Aw%40rd@a",
                vec!["nats://a:4222"],
                credentials("postgres@db-1", "p:w@rd", 1),
            ),
            (
                "tls://postgres@db-1:pw@a:4223",
                vec!["tls://a:4223"],
                credentials("postgres@db-1", "pw", 1),
            ),
            // Without a scheme, and a list where one entry carries them.
            (
                "u:pw@a, nats://b:4222",
                vec!["nats://a:4222", "nats://b:4222"],
                credentials("u", "pw", 1),
            ),
            (
                "nats://b,nats://u:pw@a,nats://u:pw@c",
                vec!["nats://b:4222", "nats://a:4222", "nats://c:4222"],
                credentials("u", "pw", 2),
            ),
        ];
        for (list, servers, found) in cases {
            let parsed = parse(list).unwrap_or_else(|e| panic!("{list}: {e}"));
            let shown: Vec<String> = parsed
                .servers
                .iter()
                .map(|s| format!("{}://{}:{}", s.scheme(), s.host(), s.port()))
                .collect();
            assert_eq!(shown, servers, "{list}");
            assert_eq!(parsed.credentials, found, "{list}");
            for server in &parsed.servers {
                assert!(!server.has_user_pass(), "{list}: {server:?}");
                assert_eq!(server.password(), None, "{list}");
                let debug = format!("{server:?}");
                assert!(
                    !debug.contains("pw") && !debug.contains("s3cret"),
                    "{debug}"
                );
            }
        }
    }

    #[test]
    fn credentials_that_are_not_one_user_and_password_are_refused_without_quoting_them() {
        let cases = [
            (
                "nats://t0ken@a:4222",
                1,
                "nats://***@a:4222",
                "a user without a password",
            ),
            (
                "nats://a,nats://:s3cret@b",
                2,
                "nats://***@b",
                "a password without a user",
            ),
            ("nats://u:%FF%FE@a", 1, "nats://***@a", "not UTF-8"),
        ];
        for (list, at, entry, expected) in cases {
            let error = parse(list).unwrap_err();
            let ServerListError::Credentials {
                position,
                entry: shown,
                ..
            } = &error
            else {
                panic!("{list}: {error}")
            };
            assert_eq!((*position, shown.as_str()), (at, entry), "{list}");
            let text = error.to_string();
            assert!(text.contains(expected), "{list}: {text}");
            assert!(
                !text.contains("t0ken") && !text.contains("s3cret"),
                "{text}"
            );
        }
        let error = parse("nats://u:s3cret@a,nats://b,nats://u:other@c").unwrap_err();
        assert_eq!(error, ServerListError::Different { first: 1, other: 3 });
        let text = error.to_string();
        assert!(text.contains("entries 1 and 3"), "{text}");
        assert!(
            !text.contains("s3cret") && !text.contains("other"),
            "{text}"
        );
        // The same user with another password differs too.
        let error = parse("nats://u:a@h1,nats://u:b@h2").unwrap_err();
        assert!(
            matches!(error, ServerListError::Different { .. }),
            "{error}"
        );
    }

    #[test]
    fn a_bad_entry_in_the_list_is_named_without_its_password() {
        for (list, at, expected) in [
            ("nats://a:4222,nats://u:s3cret@b:99999", 2, "u:***@b"),
            ("nats://a:4222,,nats://c:4222", 2, "empty"),
            ("http://a:4222", 1, "invalid scheme"),
            ("nats://a:4222,nats://b:port", 2, "invalid port"),
        ] {
            let error = parse(list).unwrap_err();
            let ServerListError::Invalid { position, .. } = &error else {
                panic!("{list}: {error}")
            };
            assert_eq!(*position, at, "{list}");
            let text = error.to_string();
            assert!(text.contains(expected), "{list}: {text}");
            assert!(!text.contains("s3cret"), "{text}");
        }
    }

    #[test]
    fn the_debug_form_of_url_credentials_hides_the_password() {
        let debug = format!("{:?}", credentials("u", "s3cret", 1).unwrap());
        assert!(
            debug.contains("\"u\"") && !debug.contains("s3cret"),
            "{debug}"
        );
    }
}
