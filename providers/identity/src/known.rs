//! What the provider last saw of its own clients, so a healthy pass need
//! not look every client up again, nor list the realm every pass.
//!
//! It holds the `clientId`s of the clients marked as made by one provider
//! instance (the one it was last filled for) that were last seen to exist,
//! each with whether it is enabled; a client of someone else, or of
//! another instance, is never in it, and it answers for that instance only. It is filled by the listing of `held()`
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

use mesh_sdk::ModuleId;
use tokio::time::Instant;

use crate::keycloak::ClientRep;

#[derive(Debug, Default)]
struct Seen {
    /// The instance whose clients these are.
    instance: Option<ModuleId>,
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

    /// The seen clients when they are `provider`'s (taking them for it
    /// when nothing was seen for any instance yet).
    fn of(&self, provider: &ModuleId) -> Option<MutexGuard<'_, Seen>> {
        let mut seen = self.seen();
        match &seen.instance {
            Some(instance) if instance != provider => return None,
            Some(_) => {}
            None => seen.instance = Some(provider.clone()),
        }
        Some(seen)
    }

    /// Whether a client `client_id` of `provider` was last seen to exist.
    pub(crate) fn has(&self, client_id: &str, provider: &ModuleId) -> bool {
        self.of(provider)
            .is_some_and(|seen| seen.own.contains_key(client_id))
    }

    /// What a lookup of `client_id` by `provider` found: its own client is
    /// kept, anything else (none, someone else's, another instance's)
    /// drops the name. A lookup by another instance than the one these
    /// clients are of changes nothing: what it found says nothing of
    /// whether they are still this instance's.
    pub(crate) fn found(&self, client_id: &str, client: Option<&ClientRep>, provider: &ModuleId) {
        let Some(mut seen) = self.of(provider) else {
            return;
        };
        match client.filter(|c| c.is_of(provider)) {
            Some(client) => seen.own.insert(client_id.to_owned(), client.enabled),
            None => seen.own.remove(client_id),
        };
    }

    /// A client `client_id` of `provider` was made (or adopted) just now.
    pub(crate) fn made(&self, client_id: &str, provider: &ModuleId, enabled: bool) {
        if let Some(mut seen) = self.of(provider) {
            seen.own.insert(client_id.to_owned(), enabled);
        }
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

    /// Replaces everything with `provider`'s clients of a whole listing read at `now`.
    pub(crate) fn replace<'a>(
        &self,
        listed: impl IntoIterator<Item = &'a ClientRep>,
        provider: &ModuleId,
        now: Instant,
    ) {
        let own = listed
            .into_iter()
            .filter(|c| c.is_of(provider))
            .map(|c| (c.client_id.clone(), c.enabled))
            .collect();
        *self.seen() = Seen {
            instance: Some(provider.clone()),
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
        provider: &ModuleId,
    ) -> Option<Vec<(String, bool)>> {
        let seen = self.seen();
        if seen.instance.as_ref() != Some(provider) {
            return None;
        }
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
    use crate::error::{INSTANCE, MARK};
    use serde_json::json;

    fn me() -> ModuleId {
        "identity@id-1".parse().unwrap()
    }

    /// A client made by `by`: `Some("")` marked without an instance (an
    /// older release), `None` not marked at all.
    fn rep(client_id: &str, by: Option<&str>) -> ClientRep {
        let attributes = match by {
            None => Default::default(),
            Some("") => [(MARK.to_owned(), json!("true"))].into(),
            Some(by) => [
                (MARK.to_owned(), json!("true")),
                (INSTANCE.to_owned(), json!(by)),
            ]
            .into(),
        };
        ClientRep {
            id: format!("id-of-{client_id}"),
            client_id: client_id.into(),
            enabled: true,
            attributes,
        }
    }

    const ME: Option<&str> = Some("identity@id-1");
    const OTHER: Option<&str> = Some("identity@id-2");
    const OLD: Option<&str> = Some("");

    #[test]
    fn only_the_instances_own_clients_are_kept() {
        let known = KnownClients::default();
        known.replace(
            &[
                rep("forge", ME),
                rep("legacy", None),
                rep("wiki", ME),
                rep("app", OTHER),
                rep("old", OLD),
            ],
            &me(),
            Instant::now(),
        );
        assert_eq!(known.len(), 2);
        assert!(known.has("wiki", &me()));
        for other in ["legacy", "app", "old"] {
            assert!(!known.has(other, &me()), "{other}");
        }
        // It answers for its instance only, and another instance's lookup
        // of one of its clients (refused there) does not drop it here.
        let other: ModuleId = "identity@id-2".parse().unwrap();
        assert!(!known.has("wiki", &other));
        known.found("wiki", Some(&rep("wiki", ME)), &other);
        assert!(known.has("wiki", &me()));
        known.made("chat", &other, true);
        assert!(!known.has("chat", &me()) && !known.has("chat", &other));
        // A lookup that finds someone else's client under an own name drops it.
        known.found("forge", Some(&rep("forge", None)), &me());
        assert!(!known.has("forge", &me()));
        known.found("wiki", Some(&rep("wiki", OTHER)), &me());
        assert!(!known.has("wiki", &me()));
        known.found("chat", Some(&rep("chat", ME)), &me());
        assert!(known.has("chat", &me()));
        known.found("chat", None, &me());
        assert!(!known.has("chat", &me()));
        known.made("news", &me(), true);
        assert!(known.has("news", &me()));
        known.clear();
        assert_eq!(known.len(), 0);
    }

    #[test]
    fn a_listing_replaces_what_was_known() {
        let known = KnownClients::default();
        known.made("gone", &me(), true);
        known.replace(&[rep("kept", ME)], &me(), Instant::now());
        assert!(
            !known.has("gone", &me()),
            "deleted behind the provider's back"
        );
        assert!(known.has("kept", &me()));
    }

    #[test]
    fn a_listing_stands_for_held_until_it_is_older_than_every() {
        let known = KnownClients::default();
        let (every, t0) = (Duration::from_secs(60), Instant::now());
        assert_eq!(known.listing_within(every, t0, &me()), None, "never listed");
        known.replace(&[rep("forge", ME), rep("legacy", None)], &me(), t0);
        let at = |secs| t0 + Duration::from_secs(secs);
        assert_eq!(
            known.listing_within(every, at(59), &me()),
            Some(vec![("forge".to_owned(), true)])
        );
        let other: ModuleId = "identity@id-2".parse().unwrap();
        assert_eq!(
            known.listing_within(every, at(1), &other),
            None,
            "another instance lists"
        );
        assert_eq!(
            known.listing_within(every, at(60), &me()),
            None,
            "list again"
        );
        // The provider's own changes keep it true meanwhile.
        known.set_enabled("forge", false);
        known.made("wiki", &me(), true);
        known.set_enabled("absent", true);
        let mut now = known.listing_within(every, at(1), &me()).unwrap();
        now.sort();
        assert_eq!(
            now,
            [("forge".to_owned(), false), ("wiki".to_owned(), true)]
        );
        known.forget("wiki");
        assert_eq!(known.listing_within(every, at(1), &me()).unwrap().len(), 1);
        // A failed listing clears it: the next held() lists.
        known.clear();
        assert_eq!(known.listing_within(every, at(1), &me()), None);
        known.replace(&[], &me(), t0);
        assert_eq!(
            known.listing_within(Duration::ZERO, t0, &me()),
            None,
            "every 0: always list"
        );
    }
}
