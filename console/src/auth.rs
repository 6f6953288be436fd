//! Who may read and who may act: with `--token-file`, a request carries a
//! token (`Authorization: Bearer T`) or the cookie of a session the login
//! form opened (a browser cannot send a header when it navigates). Tokens
//! are compared in constant time. The cookie holds a random session value,
//! never the token: a stolen cookie dies with its session (and with the
//! process), and the token stays only in the operator's file.
//!
//! Only a session may act, and only when its token may
//! ([`crate::tokens`]): its forms carry the session's own CSRF value
//! ([`crate::sessions`]). A bearer token reads; a console without a token
//! file reads and never acts.

use std::sync::Mutex;
use std::time::Instant;

use axum::http::header::{AUTHORIZATION, COOKIE, HOST};
use axum::http::HeaderMap;

use crate::sessions::{Sessions, Who};
use crate::tokens::Tokens;

/// The session cookie's name.
pub(crate) const COOKIE_NAME: &str = "mesh_console";

/// The console's access rule.
pub(crate) struct Access {
    /// The tokens; `None`: every request is let in (no `--token-file`).
    tokens: Option<Tokens>,
    /// The logins' sessions.
    sessions: Mutex<Sessions>,
    /// The cookie is marked `Secure` (served over TLS).
    secure: bool,
}

impl std::fmt::Debug for Access {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Access")
            .field("tokens", &self.tokens.as_ref().map(Tokens::counts))
            .field("secure", &self.secure)
            .finish_non_exhaustive()
    }
}

/// Who sent a request that may read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Viewer {
    /// No token is asked: anyone reads, nobody acts.
    Anyone,
    /// A bearer token's holder: reads, acts through no form.
    Bearer(Who),
    /// A session: reads, and acts when `who` may, its forms carrying `csrf`.
    Session {
        /// Who logged in.
        who: Who,
        /// The session's forms' value.
        csrf: String,
        /// The session's cookie value.
        cookie: String,
    },
}

/// 32 random bytes as hex.
fn random_hex() -> Result<String, getrandom::Error> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// The session cookie's values in `headers`.
fn cookies(headers: &HeaderMap) -> impl Iterator<Item = &str> {
    headers
        .get_all(COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|kv| kv.trim().split_once('='))
        .filter(|(k, _)| *k == COOKIE_NAME)
        .map(|(_, v)| v)
}

impl Access {
    /// The rule for `tokens` (none: open), its cookie `Secure` when `secure`.
    pub(crate) fn new(tokens: Option<Tokens>, secure: bool) -> Access {
        Access {
            tokens,
            sessions: Mutex::new(Sessions::default()),
            secure,
        }
    }

    /// Whether a token is asked for.
    pub(crate) fn needs_token(&self) -> bool {
        self.tokens.is_some()
    }

    /// The tokens given and how many may act; `(0, 0)` without a token file.
    pub(crate) fn counts(&self) -> (usize, usize) {
        self.tokens.as_ref().map_or((0, 0), Tokens::counts)
    }

    /// Who sent a request with `headers` at `now`, when it may read: no
    /// token asked, a right bearer token, or an open session's cookie.
    pub(crate) fn viewer(&self, headers: &HeaderMap, now: Instant) -> Option<Viewer> {
        let Some(tokens) = &self.tokens else {
            return Some(Viewer::Anyone);
        };
        let mut sessions = self.sessions.lock().expect("not poisoned");
        for cookie in cookies(headers) {
            if let Some((who, csrf)) = sessions.find(cookie, now) {
                return Some(Viewer::Session {
                    who,
                    csrf,
                    cookie: cookie.to_owned(),
                });
            }
        }
        headers
            .get_all(AUTHORIZATION)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .filter_map(|v| v.strip_prefix("Bearer "))
            .find_map(|t| tokens.holder(t))
            .map(|h| {
                Viewer::Bearer(Who {
                    name: h.name.clone(),
                    may_act: h.may_act,
                })
            })
    }

    /// Whether a request with `headers` may read.
    pub(crate) fn allows(&self, headers: &HeaderMap) -> bool {
        self.viewer(headers, Instant::now()).is_some()
    }

    /// A login with `given` at `now`: for a right token, a new session and
    /// the `Set-Cookie` value that carries it; `None` for a wrong one.
    ///
    /// # Errors
    /// The operating system's random generator failed.
    pub(crate) fn log_in(
        &self,
        given: &str,
        now: Instant,
    ) -> Result<Option<String>, getrandom::Error> {
        let Some(holder) = self.tokens.as_ref().and_then(|t| t.holder(given)) else {
            return Ok(None);
        };
        let who = Who {
            name: holder.name.clone(),
            may_act: holder.may_act,
        };
        let (cookie, csrf) = (random_hex()?, random_hex()?);
        let secure = if self.secure { "; Secure" } else { "" };
        let set = format!("{COOKIE_NAME}={cookie}; Path=/; HttpOnly; SameSite=Strict{secure}");
        self.sessions
            .lock()
            .expect("not poisoned")
            .open(who, cookie, csrf, now);
        Ok(Some(set))
    }

    /// Whether `given` is the forms' value of the session `cookie`.
    pub(crate) fn csrf_matches(&self, cookie: &str, given: &str) -> bool {
        self.sessions
            .lock()
            .expect("not poisoned")
            .csrf_matches(cookie, given)
    }

    /// Ends the session `cookie`.
    pub(crate) fn log_out(&self, cookie: &str) {
        self.sessions.lock().expect("not poisoned").close(cookie);
    }

    /// Whether a request with `headers` may be answered at all: with a
    /// token, always (the token decides); without one, only when it was
    /// sent to an IP address or `localhost` (its `Host`), so a web page
    /// whose name an attacker points at 127.0.0.1 (DNS rebinding) cannot
    /// read a console that asks for no token.
    pub(crate) fn host_allowed(&self, headers: &HeaderMap) -> bool {
        if self.tokens.is_some() {
            return true;
        }
        let Some(host) = headers.get(HOST).and_then(|h| h.to_str().ok()) else {
            // HTTP/1.0 without a Host: no name was used.
            return true;
        };
        let name = match host.strip_prefix('[') {
            // [::1]:9480
            Some(rest) => {
                return rest
                    .split(']')
                    .next()
                    .is_some_and(|ip| ip.parse::<std::net::Ipv6Addr>().is_ok())
            }
            None => host.rsplit_once(':').map_or(host, |(name, _port)| name),
        };
        name.eq_ignore_ascii_case("localhost") || name.parse::<std::net::Ipv4Addr>().is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn headers(pairs: &[(axum::http::HeaderName, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(k.clone(), HeaderValue::from_str(v).unwrap());
        }
        h
    }

    fn tokens(text: &str) -> Option<Tokens> {
        Some(Tokens::parse(text).unwrap())
    }

    #[test]
    fn without_a_token_everything_is_let_in_and_nobody_acts() {
        let open = Access::new(None, false);
        assert!(!open.needs_token());
        let viewer = open.viewer(&HeaderMap::new(), Instant::now());
        assert_eq!(viewer, Some(Viewer::Anyone));
        assert_eq!(
            open.log_in("", Instant::now()).unwrap(),
            None,
            "no form login opens a console with no token"
        );
    }

    #[test]
    fn without_a_token_only_requests_to_an_address_or_localhost_are_answered() {
        let open = Access::new(None, false);
        for (host, answered) in [
            ("127.0.0.1:9480", true),
            ("127.0.0.1", true),
            ("10.0.0.7:9480", true),
            ("localhost:9480", true),
            ("LOCALHOST", true),
            ("[::1]:9480", true),
            ("evil.example:9480", false),
            ("evil.example", false),
            ("localhost.evil.example", false),
            ("127.0.0.1.nip.io:9480", false),
            ("[evil]:1", false),
        ] {
            assert_eq!(
                open.host_allowed(&headers(&[(HOST, host)])),
                answered,
                "{host}"
            );
        }
        assert!(
            open.host_allowed(&HeaderMap::new()),
            "no Host: no name used"
        );
        let guarded = Access::new(tokens("t"), false);
        assert!(guarded.host_allowed(&headers(&[(HOST, "console.example")])));
    }

    #[test]
    fn the_bearer_token_or_a_session_cookie_lets_in_nothing_else() {
        let access = Access::new(tokens("ana:t0ken-S3cret\nbo:b0-T0ken:read-only"), true);
        let now = Instant::now();
        let cookie = access.log_in("t0ken-S3cret\n", now).unwrap().unwrap();
        assert!(
            cookie.ends_with("; Path=/; HttpOnly; SameSite=Strict; Secure"),
            "{cookie}"
        );
        assert!(
            !cookie.contains("t0ken-S3cret"),
            "the cookie is no copy of the token"
        );
        let session = cookie.split(';').next().unwrap().to_owned();
        let cases: &[(&[(axum::http::HeaderName, &str)], bool)] = &[
            (&[], false),
            (&[(AUTHORIZATION, "Bearer t0ken-S3cret")], true),
            (&[(AUTHORIZATION, "Bearer b0-T0ken")], true),
            (&[(AUTHORIZATION, "Bearer t0ken-S3cre")], false),
            (&[(AUTHORIZATION, "Bearer t0ken-S3cretX")], false),
            (&[(AUTHORIZATION, "Basic t0ken-S3cret")], false),
            (&[(AUTHORIZATION, "t0ken-S3cret")], false),
            (&[(COOKIE, &session)], true),
            (&[(COOKIE, &format!("other=1; {session}"))], true),
            (&[(COOKIE, "mesh_console=t0ken-S3cret")], false),
            (&[(COOKIE, "mesh_console=")], false),
        ];
        for (given, allowed) in cases {
            assert_eq!(access.allows(&headers(given)), *allowed, "{given:?}");
        }
        assert_eq!(access.log_in("t0ken", now).unwrap(), None);
        assert!(!format!("{access:?}").contains("t0ken"));
        let plain = Access::new(tokens("x"), false);
        assert!(!plain.log_in("x", now).unwrap().unwrap().contains("Secure"));
    }

    #[test]
    fn only_a_session_whose_token_may_act_acts_with_its_own_form_value() {
        let access = Access::new(tokens("ana:T-ana\nbo:T-bo:read-only"), false);
        let now = Instant::now();
        let session = |token: &str| {
            let set = access.log_in(token, now).unwrap().unwrap();
            set.split(';').next().unwrap().to_owned()
        };
        let (ana, bo) = (session("T-ana"), session("T-bo"));
        let ana_again = session("T-ana");
        let viewer =
            |h: &[(axum::http::HeaderName, &str)]| access.viewer(&headers(h), now).unwrap();
        let Viewer::Session { who, csrf, cookie } = viewer(&[(COOKIE, &ana)]) else {
            panic!("a session");
        };
        assert_eq!((who.name.as_str(), who.may_act), ("ana", true));
        assert!(access.csrf_matches(&cookie, &csrf));
        let Viewer::Session {
            csrf: other,
            cookie: other_cookie,
            ..
        } = viewer(&[(COOKIE, &ana_again)])
        else {
            panic!("a session");
        };
        assert_ne!(csrf, other, "each login its own form value");
        assert!(!access.csrf_matches(&other_cookie, &csrf));
        let Viewer::Session { who, .. } = viewer(&[(COOKIE, &bo)]) else {
            panic!("a session");
        };
        assert!(!who.may_act, "bo may only look");
        assert!(
            matches!(
                viewer(&[(AUTHORIZATION, "Bearer T-ana")]),
                Viewer::Bearer(_)
            ),
            "a bearer token is no session: it acts through no form"
        );
        access.log_out(&cookie);
        assert_eq!(access.viewer(&headers(&[(COOKIE, &ana)]), now), None);
    }
}
