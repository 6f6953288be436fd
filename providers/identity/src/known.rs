//! What the provider last saw of its own clients, so a healthy pass need
//! not look every client up again.
//!
//! It holds the `clientId`s of the clients marked as made by this provider
//! that were last seen to exist; a client of someone else is never in it.
//! It is filled by the listing of `held()` (which replaces it whole), by a
//! lookup that found an own client, and by the making of a client. A name
//! is dropped whenever a call shows it wrong (a lookup that found no own
//! client, a 404 on a change), and all of it when the listing fails. It
//! only spares `ensure` its lookup: whatever changes or deletes a client
//! looks it up first, so an entry is never taken as leave to touch one.

use std::collections::HashSet;
use std::sync::{Mutex, MutexGuard};

use crate::keycloak::ClientRep;

/// The `clientId`s of the own clients last seen.
#[derive(Debug, Default)]
pub(crate) struct KnownClients {
    own: Mutex<HashSet<String>>,
}

impl KnownClients {
    fn set(&self) -> MutexGuard<'_, HashSet<String>> {
        self.own
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Whether an own client `client_id` was last seen to exist.
    pub(crate) fn has(&self, client_id: &str) -> bool {
        self.set().contains(client_id)
    }

    /// What a lookup of `client_id` found: an own client is kept, anything
    /// else (none, or someone else's) drops the name.
    pub(crate) fn found(&self, client_id: &str, client: Option<&ClientRep>) {
        match client.is_some_and(ClientRep::is_marked) {
            true => self.made(client_id),
            false => self.forget(client_id),
        }
    }

    /// An own client `client_id` exists (made just now, or found).
    pub(crate) fn made(&self, client_id: &str) {
        self.set().insert(client_id.to_owned());
    }

    /// Drops `client_id`: the next `ensure` looks it up.
    pub(crate) fn forget(&self, client_id: &str) {
        self.set().remove(client_id);
    }

    /// Drops everything: every client is looked up again.
    pub(crate) fn clear(&self) {
        self.set().clear();
    }

    /// Replaces everything with the own clients of a whole listing.
    pub(crate) fn replace<'a>(&self, listed: impl IntoIterator<Item = &'a ClientRep>) {
        let fresh: HashSet<String> = listed
            .into_iter()
            .filter(|c| c.is_marked())
            .map(|c| c.client_id.clone())
            .collect();
        *self.set() = fresh;
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.set().len()
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
        known.replace(&[rep("forge", true), rep("legacy", false), rep("wiki", true)]);
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
        known.replace(&[rep("kept", true)]);
        assert!(!known.has("gone"), "deleted behind the provider's back");
        assert!(known.has("kept"));
    }
}
