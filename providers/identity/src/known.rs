//! What the provider last saw of its own clients, so a healthy pass need
//! not look every client up again, nor list the realm every pass.
//!
//! It holds the `clientId`s of the clients marked as made by this provider
//! that were last seen to exist, each with whether it is enabled; a client
//! of someone else is never in it. It is filled by the listing of `held()`
//! (which replaces it whole, and notes when), by a lookup that found an own
//! client, by the making of a client, and kept up to date by the
//! provider's own changes (disable, enable, delete). A name is dropped
//! whenever a call shows it wrong (a lookup that found no own client, a
//! 404 on a change), and all of it, the listing's time too, when the
//! listing fails. Between listings it answers `held()`; it never stands in
//! for a lookup before a client is changed or deleted, so an entry is
//! never taken as leave to touch one.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use tokio::time::Instant;

use crate::keycloak::ClientRep;

#[derive(Debug, Default)]
struct Seen {
    /// `clientId` → enabled.
    own: HashMap<String, bool>,
    /// When the last whole listing was read.
    listed_at: Option<Instant>,
}

/// The own clients last seen, and when the realm was last listed.
#[derive(Debug, Default)]
pub(crate) struct KnownClients {
    seen: Mutex<Seen>,
}

impl KnownClients {
    fn seen(&self) -> MutexGuard<'_, Seen> {
        self.seen
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Whether an own client `client_id` was last seen to exist.
    pub(crate) fn has(&self, client_id: &str) -> bool {
        self.seen().own.contains_key(client_id)
    }

    /// What a lookup of `client_id` found: an own client is kept, anything
    /// else (none, or someone else's) drops the name.
    pub(crate) fn found(&self, client_id: &str, client: Option<&ClientRep>) {
        match client.filter(|c| c.is_marked()) {
            Some(client) => {
                self.seen().own.insert(client_id.to_owned(), client.enabled);
            }
            None => self.forget(client_id),
        }
    }

    /// An own client `client_id` was made just now (enabled).
    pub(crate) fn made(&self, client_id: &str) {
        self.seen().own.insert(client_id.to_owned(), true);
    }

    /// The provider enabled or disabled its client `client_id`.
    pub(crate) fn set_enabled(&self, client_id: &str, enabled: bool) {
        if let Some(seen) = self.seen().own.get_mut(client_id) {
            *seen = enabled;
        }
    }

    /// Drops `client_id`: the next `ensure` looks it up.
    pub(crate) fn forget(&self, client_id: &str) {
        self.seen().own.remove(client_id);
    }

    /// Drops everything: every client is looked up again, and the next
    /// `held()` lists the realm.
    pub(crate) fn clear(&self) {
        *self.seen() = Seen::default();
    }

    /// Replaces everything with the own clients of a whole listing read at `now`.
    pub(crate) fn replace<'a>(
        &self,
        listed: impl IntoIterator<Item = &'a ClientRep>,
        now: Instant,
    ) {
        let own = listed
            .into_iter()
            .filter(|c| c.is_marked())
            .map(|c| (c.client_id.clone(), c.enabled))
            .collect();
        *self.seen() = Seen {
            own,
            listed_at: Some(now),
        };
    }

    /// The own clients (`clientId`, enabled) as last seen, when the last
    /// listing is younger than `every` at `now`; `None` when the realm
    /// must be listed again.
    pub(crate) fn listing_within(
        &self,
        every: Duration,
        now: Instant,
    ) -> Option<Vec<(String, bool)>> {
        let seen = self.seen();
        let listed_at = seen.listed_at?;
        (now.saturating_duration_since(listed_at) < every).then(|| {
            seen.own
                .iter()
                .map(|(name, enabled)| (name.clone(), *enabled))
                .collect()
        })
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.seen().own.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::MARK;
    use serde_json::json;

    fn rep(client_id: &str, marked: bool) -> ClientRep {
        let attributes = match marked {
            true => [(MARK.to_owned(), json!("true"))].into(),
            false => Default::default(),
        };
        ClientRep {
            id: format!("id-of-{client_id}"),
            client_id: client_id.into(),
            enabled: true,
            attributes,
        }
    }

    #[test]
    fn only_own_clients_are_kept() {
        let known = KnownClients::default();
        known.replace(
            &[rep("forge", true), rep("legacy", false), rep("wiki", true)],
            Instant::now(),
        );
        assert_eq!(known.len(), 2);
        assert!(known.has("wiki") && !known.has("legacy"));
        // A lookup that finds someone else's client under an own name drops it.
        known.found("forge", Some(&rep("forge", false)));
        assert!(!known.has("forge"));
        known.found("chat", Some(&rep("chat", true)));
        assert!(known.has("chat"));
        known.found("chat", None);
        assert!(!known.has("chat"));
        known.made("news");
        assert!(known.has("news"));
        known.clear();
        assert_eq!(known.len(), 0);
    }

    #[test]
    fn a_listing_replaces_what_was_known() {
        let known = KnownClients::default();
        known.made("gone");
        known.replace(&[rep("kept", true)], Instant::now());
        assert!(!known.has("gone"), "deleted behind the provider's back");
        assert!(known.has("kept"));
    }

    #[test]
    fn a_listing_stands_for_held_until_it_is_older_than_every() {
        let known = KnownClients::default();
        let (every, t0) = (Duration::from_secs(60), Instant::now());
        assert_eq!(known.listing_within(every, t0), None, "never listed");
        known.replace(&[rep("forge", true), rep("legacy", false)], t0);
        let at = |secs| t0 + Duration::from_secs(secs);
        assert_eq!(
            known.listing_within(every, at(59)),
            Some(vec![("forge".to_owned(), true)])
        );
        assert_eq!(known.listing_within(every, at(60)), None, "list again");
        // The provider's own changes keep it true meanwhile.
        known.set_enabled("forge", false);
        known.made("wiki");
        known.set_enabled("absent", true);
        let mut now = known.listing_within(every, at(1)).unwrap();
        now.sort();
        assert_eq!(
            now,
            [("forge".to_owned(), false), ("wiki".to_owned(), true)]
        );
        known.forget("wiki");
        assert_eq!(known.listing_within(every, at(1)).unwrap().len(), 1);
        // A failed listing clears it: the next held() lists.
        known.clear();
        assert_eq!(known.listing_within(every, at(1)), None);
        known.replace(&[], t0);
        assert_eq!(
            known.listing_within(Duration::ZERO, t0),
            None,
            "every 0: always list"
        );
    }
}
