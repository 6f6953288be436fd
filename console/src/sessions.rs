//! The console's logins (pure: the clock and the random values are given).
//!
//! Each right login opens a session of its own: a random value for the
//! cookie, who logged in (the token's name, whether it may act), and a
//! second random value every form of that session carries (the CSRF
//! value), checked beside `SameSite=Strict`. A session unused for
//! [`SESSION_IDLE`] ends; past [`MAX_SESSIONS`] the least recently used
//! ends. Sessions live in the process only: a restart logs everyone out.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use mesh_protocol::Name;
use subtle::ConstantTimeEq;

/// A session unused this long ends.
pub(crate) const SESSION_IDLE: Duration = Duration::from_secs(12 * 3600);

/// At most this many sessions are kept.
pub(crate) const MAX_SESSIONS: usize = 1024;

/// Who a session is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Who {
    /// The token's name.
    pub(crate) name: Name,
    /// Whether it may act (approve, note); `false`: only look.
    pub(crate) may_act: bool,
}

#[derive(Debug)]
struct Session {
    who: Who,
    csrf: String,
    used: Instant,
}

/// The open sessions, by their cookie value.
#[derive(Debug, Default)]
pub(crate) struct Sessions {
    by_cookie: HashMap<String, Session>,
}

fn same(a: &str, b: &str) -> bool {
    bool::from(a.as_bytes().ct_eq(b.as_bytes()))
}

impl Sessions {
    /// Opens a session for `who` at `now`, its cookie value `cookie` and
    /// its forms' value `csrf` (both random, drawn by the caller).
    pub(crate) fn open(&mut self, who: Who, cookie: String, csrf: String, now: Instant) {
        self.by_cookie
            .retain(|_, s| now.saturating_duration_since(s.used) < SESSION_IDLE);
        while self.by_cookie.len() >= MAX_SESSIONS {
            let oldest = self
                .by_cookie
                .iter()
                .min_by_key(|(_, s)| s.used)
                .map(|(k, _)| k.clone());
            match oldest {
                Some(k) => self.by_cookie.remove(&k),
                None => break,
            };
        }
        self.by_cookie.insert(
            cookie,
            Session {
                who,
                csrf,
                used: now,
            },
        );
    }

    /// Who the session of `cookie` is, and its forms' value, when it is
    /// open at `now` (it is then used: its idle time starts again).
    pub(crate) fn find(&mut self, cookie: &str, now: Instant) -> Option<(Who, String)> {
        let session = self.by_cookie.get_mut(cookie)?;
        if now.saturating_duration_since(session.used) >= SESSION_IDLE {
            self.by_cookie.remove(cookie);
            return None;
        }
        session.used = now;
        Some((session.who.clone(), session.csrf.clone()))
    }

    /// Whether `given` is the forms' value of the session of `cookie`.
    pub(crate) fn csrf_matches(&self, cookie: &str, given: &str) -> bool {
        self.by_cookie
            .get(cookie)
            .is_some_and(|s| !given.is_empty() && same(&s.csrf, given))
    }

    /// Ends the session of `cookie` (a log-out).
    pub(crate) fn close(&mut self, cookie: &str) {
        self.by_cookie.remove(cookie);
    }

    /// How many are open.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.by_cookie.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn who(name: &str, may_act: bool) -> Who {
        Who {
            name: Name::parse(name).unwrap(),
            may_act,
        }
    }

    #[test]
    fn each_login_is_its_own_session_with_its_own_form_value() {
        let t0 = Instant::now();
        let mut s = Sessions::default();
        s.open(who("ana", true), "c-ana".into(), "f-ana".into(), t0);
        s.open(who("bo", false), "c-bo".into(), "f-bo".into(), t0);
        assert_eq!(
            s.find("c-ana", t0),
            Some((who("ana", true), "f-ana".into()))
        );
        assert_eq!(s.find("c-bo", t0), Some((who("bo", false), "f-bo".into())));
        assert_eq!(s.find("c-eve", t0), None);
        assert!(s.csrf_matches("c-ana", "f-ana"));
        assert!(!s.csrf_matches("c-ana", "f-bo"), "another session's value");
        assert!(!s.csrf_matches("c-ana", ""));
        assert!(!s.csrf_matches("c-eve", "f-ana"));
        s.close("c-ana");
        assert_eq!(s.find("c-ana", t0), None, "logged out");
        assert!(s.find("c-bo", t0).is_some(), "the other stays");
    }

    #[test]
    fn a_session_unused_for_twelve_hours_ends_and_use_keeps_it() {
        let t0 = Instant::now();
        let mut s = Sessions::default();
        s.open(who("ana", true), "c-ana".into(), "f".into(), t0);
        s.open(who("bo", true), "c-bo".into(), "f2".into(), t0);
        let almost = t0 + SESSION_IDLE - Duration::from_secs(1);
        assert!(s.find("c-ana", almost).is_some(), "used: it starts again");
        let later = t0 + SESSION_IDLE;
        assert!(s.find("c-ana", later).is_some(), "used 1 s before");
        assert_eq!(s.find("c-bo", later), None, "idle 12 h: ended");
        assert_eq!(s.len(), 1);
    }

    #[test]
    fn past_the_cap_the_least_recently_used_session_ends() {
        let t0 = Instant::now();
        let mut s = Sessions::default();
        for i in 0..MAX_SESSIONS {
            let at = t0 + Duration::from_secs(i as u64);
            s.open(who("ana", true), format!("c{i}"), format!("f{i}"), at);
        }
        let now = t0 + Duration::from_secs(MAX_SESSIONS as u64);
        assert!(
            s.find("c0", now).is_some(),
            "c0 used again: c1 is the oldest"
        );
        s.open(who("bo", true), "c-new".into(), "f-new".into(), now);
        assert_eq!(s.len(), MAX_SESSIONS);
        assert!(s.find("c1", now).is_none());
        assert!(s.find("c0", now).is_some() && s.find("c-new", now).is_some());
    }
}
