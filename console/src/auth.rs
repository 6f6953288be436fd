//! Who may read the console: with `--token-file`, a request carries the
//! token (`Authorization: Bearer T`) or the session cookie the login form
//! sets (a browser cannot send a header when it navigates). Both are
//! compared in constant time. The cookie holds a session value made at
//! start (random), never the token itself: a stolen cookie dies with the
//! process, and the token stays only in the operator's file.

use axum::http::header::{AUTHORIZATION, COOKIE, HOST};
use axum::http::HeaderMap;
use mesh_runtime::Secret;
use subtle::ConstantTimeEq;

/// The session cookie's name.
pub(crate) const COOKIE_NAME: &str = "mesh_console";

/// The console's access rule.
pub(crate) struct Access {
    /// The token; `None`: every request is let in (no `--token-file`).
    token: Option<Secret>,
    /// The session cookie's value, hex of 32 random bytes.
    session: Secret,
    /// The cookie is marked `Secure` (served over TLS).
    secure: bool,
}

impl std::fmt::Debug for Access {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Access")
            .field("token", &self.token.is_some())
            .field("secure", &self.secure)
            .finish_non_exhaustive()
    }
}

fn same(a: &str, b: &str) -> bool {
    bool::from(a.as_bytes().ct_eq(b.as_bytes()))
}

impl Access {
    /// The rule for `token` (none: open), its cookie `Secure` when `secure`.
    ///
    /// # Errors
    /// The operating system's random generator failed.
    pub(crate) fn new(token: Option<Secret>, secure: bool) -> Result<Access, getrandom::Error> {
        let mut bytes = [0u8; 32];
        getrandom::fill(&mut bytes)?;
        let session: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        Ok(Access {
            token,
            session: Secret::new(session),
            secure,
        })
    }

    /// Whether a token is asked for.
    pub(crate) fn needs_token(&self) -> bool {
        self.token.is_some()
    }

    /// Whether `given` (a login form's) is the token.
    pub(crate) fn is_token(&self, given: &str) -> bool {
        self.token
            .as_ref()
            .is_some_and(|t| same(t.expose(), given.trim()))
    }

    /// Whether a request with `headers` may read: no token asked, or its
    /// bearer token or its session cookie is right.
    pub(crate) fn allows(&self, headers: &HeaderMap) -> bool {
        if self.token.is_none() {
            return true;
        }
        let bearer = headers
            .get_all(AUTHORIZATION)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .filter_map(|v| v.strip_prefix("Bearer "))
            .any(|t| self.is_token(t));
        let cookie = headers
            .get_all(COOKIE)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(';'))
            .filter_map(|kv| kv.trim().split_once('='))
            .any(|(k, v)| k == COOKIE_NAME && same(v, self.session.expose()));
        bearer || cookie
    }

    /// Whether a request with `headers` may be answered at all: with a
    /// token, always (the token decides); without one, only when it was
    /// sent to an IP address or `localhost` (its `Host`), so a web page
    /// whose name an attacker points at 127.0.0.1 (DNS rebinding) cannot
    /// read a console that asks for no token.
    pub(crate) fn host_allowed(&self, headers: &HeaderMap) -> bool {
        if self.token.is_some() {
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

    /// The `Set-Cookie` value a right login gets: HttpOnly, SameSite=Strict,
    /// Secure under TLS, for the whole console.
    pub(crate) fn set_cookie(&self) -> String {
        let secure = if self.secure { "; Secure" } else { "" };
        format!(
            "{COOKIE_NAME}={}; Path=/; HttpOnly; SameSite=Strict{secure}",
            self.session.expose()
        )
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

    #[test]
    fn without_a_token_everything_is_let_in() {
        let open = Access::new(None, false).unwrap();
        assert!(!open.needs_token());
        assert!(open.allows(&HeaderMap::new()));
        assert!(
            !open.is_token(""),
            "no form login opens a console with no token"
        );
    }

    #[test]
    fn without_a_token_only_requests_to_an_address_or_localhost_are_answered() {
        let open = Access::new(None, false).unwrap();
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
        let guarded = Access::new(Some(Secret::new("t")), false).unwrap();
        assert!(guarded.host_allowed(&headers(&[(HOST, "console.example")])));
    }

    #[test]
    fn the_bearer_token_or_the_session_cookie_lets_in_nothing_else() {
        let access = Access::new(Some(Secret::new("t0ken-S3cret")), true).unwrap();
        let cookie = access.set_cookie();
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
        assert!(access.is_token("t0ken-S3cret\n"));
        assert!(!access.is_token("t0ken"));
        assert!(!format!("{access:?}").contains("t0ken"));
        let plain = Access::new(Some(Secret::new("x")), false).unwrap();
        assert!(!plain.set_cookie().contains("Secure"));
    }
}
