//! Counts of the HTTP calls made to Keycloak, by kind: what the benchmark
//! prints per pass. Relaxed atomics; nothing reads them on the provider's path.

use std::sync::atomic::{AtomicU64, Ordering};

/// The calls made so far, by kind.
#[derive(Debug, Default)]
pub struct Calls {
    admin_logins: AtomicU64,
    lookups: AtomicU64,
    creates: AtomicU64,
    updates: AtomicU64,
    deletes: AtomicU64,
    list_pages: AtomicU64,
    grants: AtomicU64,
    resent: AtomicU64,
}

/// Which kind of call.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Kind {
    /// The mesh administrator's login (password or client credentials).
    AdminLogin,
    /// `GET .../clients?clientId=X`.
    Lookup,
    /// `POST .../clients`.
    Create,
    /// `PUT .../clients/{id}`.
    Update,
    /// `DELETE .../clients/{id}`.
    Delete,
    /// One page of `GET .../clients?first=&max=`.
    ListPage,
    /// A consumer's client-credentials login.
    Grant,
    /// An admin call sent again after its token was refused (401).
    Resent,
}

impl Calls {
    pub(crate) fn count(&self, kind: Kind) {
        let counter = match kind {
            Kind::AdminLogin => &self.admin_logins,
            Kind::Lookup => &self.lookups,
            Kind::Create => &self.creates,
            Kind::Update => &self.updates,
            Kind::Delete => &self.deletes,
            Kind::ListPage => &self.list_pages,
            Kind::Grant => &self.grants,
            Kind::Resent => &self.resent,
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// The counts now.
    pub fn snapshot(&self) -> CallCounts {
        let read = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
        CallCounts {
            admin_logins: read(&self.admin_logins),
            lookups: read(&self.lookups),
            creates: read(&self.creates),
            updates: read(&self.updates),
            deletes: read(&self.deletes),
            list_pages: read(&self.list_pages),
            grants: read(&self.grants),
            resent: read(&self.resent),
        }
    }
}

/// The calls made, by kind (a snapshot, or the difference of two).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CallCounts {
    /// Logins of the mesh administrator (a token fetched or renewed).
    pub admin_logins: u64,
    /// Client lookups by `clientId`.
    pub lookups: u64,
    /// Clients made (attempts, 409s included).
    pub creates: u64,
    /// Client updates.
    pub updates: u64,
    /// Client deletions.
    pub deletes: u64,
    /// Pages of the client listing.
    pub list_pages: u64,
    /// Client-credentials logins.
    pub grants: u64,
    /// Admin calls sent again after a 401 (each also counted by its kind once).
    pub resent: u64,
}

impl CallCounts {
    /// The calls made since `earlier`.
    pub fn since(&self, earlier: &CallCounts) -> CallCounts {
        CallCounts {
            admin_logins: self.admin_logins - earlier.admin_logins,
            lookups: self.lookups - earlier.lookups,
            creates: self.creates - earlier.creates,
            updates: self.updates - earlier.updates,
            deletes: self.deletes - earlier.deletes,
            list_pages: self.list_pages - earlier.list_pages,
            grants: self.grants - earlier.grants,
            resent: self.resent - earlier.resent,
        }
    }

    /// Every call counted.
    pub fn total(&self) -> u64 {
        self.admin_logins
            + self.lookups
            + self.creates
            + self.updates
            + self.deletes
            + self.list_pages
            + self.grants
            + self.resent
    }
}

impl std::fmt::Display for CallCounts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} grants, {} lookups, {} list pages, {} admin logins, {} creates, {} updates, {} deletes, {} resent",
            self.grants,
            self.lookups,
            self.list_pages,
            self.admin_logins,
            self.creates,
            self.updates,
            self.deletes,
            self.resent
        )
    }
}
