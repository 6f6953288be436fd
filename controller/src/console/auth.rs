//! Who may read the console: with `--token-file`, a request carries the
//! token (`Authorization: Bearer T`) or the session cookie the login form
//! sets (a browser cannot send a header when it navigates). Both are
//! compared in constant time. The cookie holds a session value made at
//! start (random), never the token itself: a stolen cookie dies with the
//! process, and the token stays only in the operator's file.

use axum::http::header::{AUTHORIZATION, COOKIE};
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
