//! Open pages kept current: one shared reader for all of them. While any
//! page follows `/events`, the reader renders every page open (each
//! distinct page once, each reading what it shows) every [`READ_EVERY`], on
//! [`CONNECTIONS`] store connections side by side, and sends a page's
//! `<main>` fragment to its followers when it differs from the one sent
//! last. A hundred open pages cost what the distinct pages among them cost,
//! not a hundred reads.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mesh_protocol::Timestamp;
use tokio::sync::{watch, Notify};

use crate::pages::{unreadable, PageKey, Pages};
use crate::watch::Watch;
use mesh_pg_store::{DatabaseOptions, PgStore};

/// How often the reader reads the store while a page is open: a change
/// stored reaches an open page within this plus one read (well within 1 s).
pub(crate) const READ_EVERY: Duration = Duration::from_millis(500);

/// How many store connections a round reads the open pages on, side by
/// side, the pages dealt to them in turn: the mesh page, the third, the
/// fifth… on the first, the others on the second. Each page's read waits
/// mostly on the store, which answers the two at once. With the
/// benchmark's 51 distinct pages over 100,000 standings, a round on one
/// connection took about 1.1 s, so a change reached the mesh page up to a
/// round late.
pub(crate) const CONNECTIONS: usize = 2;

/// A fragment sent: its number (the event's id) and the `<main>` HTML.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Fragment {
    pub(crate) id: u64,
    pub(crate) main: String,
}

struct Followed {
    followers: usize,
    sender: watch::Sender<Option<Arc<Fragment>>>,
}

/// The pages followed and the reader that keeps them current.
pub(crate) struct Live {
    pages: Arc<Pages>,
    options: DatabaseOptions,
    followed: Mutex<HashMap<PageKey, Followed>>,
    wake: Notify,
    /// Told whether each round read the store (`/readyz`).
    watch: Arc<Watch>,
}

/// One follower of a page: its fragments come on `fragments`; dropping it
/// stops following.
pub(crate) struct Following {
    pub(crate) fragments: watch::Receiver<Option<Arc<Fragment>>>,
    key: PageKey,
    live: Arc<Live>,
}

impl Drop for Following {
    fn drop(&mut self) {
        let mut followed = self.live.followed.lock().expect("not poisoned");
        if let Some(f) = followed.get_mut(&self.key) {
            f.followers -= 1;
            if f.followers == 0 {
                followed.remove(&self.key);
            }
        }
    }
}

impl Live {
    /// Pages over the store `options` names; [`Live::run`] reads for them
    /// and tells `watch` whether the store answered.
    pub(crate) fn new(pages: Arc<Pages>, options: DatabaseOptions, watch: Arc<Watch>) -> Arc<Live> {
        Arc::new(Live {
            pages,
            options,
            followed: Mutex::new(HashMap::new()),
            wake: Notify::new(),
            watch,
        })
    }

    /// Follows page `key` (one the declaration names): the fragment
    /// rendered last (if any) at once, then each that differs from the one
    /// before on the returned receiver.
    pub(crate) fn follow(self: &Arc<Self>, key: PageKey) -> Following {
        let mut followed = self.followed.lock().expect("not poisoned");
        let entry = followed.entry(key.clone()).or_insert_with(|| Followed {
            followers: 0,
            sender: watch::channel(None).0,
        });
        entry.followers += 1;
        // The page as last rendered comes at once: a change sent to the
        // others between this page's own render and now is not missed.
        let mut fragments = entry.sender.subscribe();
        if fragments.borrow().is_some() {
            fragments.mark_changed();
        }
        drop(followed);
        self.wake.notify_one();
        Following {
            fragments,
            key,
            live: Arc::clone(self),
        }
    }

    /// Reads for the followed pages until dropped: idle while none is.
    pub(crate) async fn run(self: Arc<Self>) {
        let mut stores: [PgStore; CONNECTIONS] =
            std::array::from_fn(|_| PgStore::new(self.options.clone()));
        let next_id = AtomicU64::new(1);
        // The store's last error, said once while it lasts (not twice a second).
        let mut unreadable_since: Option<String> = None;
        loop {
            // The mesh page first, then the machines', the providers' and
            // the consumers'.
            let mut keys: Vec<PageKey> = {
                let followed = self.followed.lock().expect("not poisoned");
                followed.keys().cloned().collect()
            };
            keys.sort_unstable();
            if keys.is_empty() {
                self.wake.notified().await;
                continue;
            }
            let began = tokio::time::Instant::now();
            let now = Timestamp::now();
            let count = keys.len();
            // In turn: the mesh page on the first connection, the next
            // page on the second, and so on.
            let mut shares: [Vec<PageKey>; CONNECTIONS] = Default::default();
            for (i, key) in keys.into_iter().enumerate() {
                shares[i % CONNECTIONS].push(key);
            }
            let reads = stores
                .iter_mut()
                .zip(shares)
                .map(|(store, keys)| self.read(store, keys, now, &next_id));
            // The store's error when a connection met one (the first
            // connection's when both did).
            let failed = futures::future::join_all(reads)
                .await
                .into_iter()
                .flatten()
                .next();
            tracing::debug!(
                pages = count,
                took_ms = began.elapsed().as_millis(),
                "the console read its open pages"
            );
            match &failed {
                Some(error) => self.watch.store_failed(error),
                None => self.watch.store_answered(),
            }
            match (&failed, &unreadable_since) {
                (Some(error), None) => {
                    tracing::warn!(error = %error, "the console cannot read the store; its pages say so")
                }
                (None, Some(_)) => tracing::info!("the console reads the store again"),
                _ => {}
            }
            unreadable_since = failed;
            tokio::time::sleep_until(began + READ_EVERY).await;
        }
    }

    /// Renders the pages `keys` on `store` in turn, and sends each to its
    /// followers when it differs from the one sent last. Returns the
    /// store's error when it failed: the pages after it say so without
    /// waiting for the store again.
    async fn read(
        &self,
        store: &mut PgStore,
        keys: Vec<PageKey>,
        now: Timestamp,
        next_id: &AtomicU64,
    ) -> Option<String> {
        let mut failed: Option<String> = None;
        for key in keys {
            let rendered = match &failed {
                Some(error) => Err(error.clone()),
                None => self
                    .pages
                    .render(store, &key, now)
                    .await
                    .map_err(|e| e.to_string()),
            };
            let main = match rendered {
                Ok(Some(page)) => page.main,
                Ok(None) => continue,
                Err(error) => {
                    let main = unreadable(&key, &error).main;
                    failed = Some(error);
                    main
                }
            };
            let followed = self.followed.lock().expect("not poisoned");
            let Some(f) = followed.get(&key) else {
                continue;
            };
            f.sender.send_if_modified(|last| {
                if last.as_ref().is_some_and(|l| l.main == main) {
                    return false;
                }
                let id = next_id.fetch_add(1, Ordering::Relaxed);
                *last = Some(Arc::new(Fragment { id, main }));
                true
            });
        }
        failed
    }
}
