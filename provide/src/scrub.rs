//! Keeping secrets out of what a hook says: every stderr line and every
//! error text is cut and has removed the hook's own secrets (from its
//! hello) and every consumer secret mesh-provide has handed it.

use std::collections::{HashMap, VecDeque};
use std::sync::{Mutex, MutexGuard};

use mesh_runtime::redact::redact_within;
use mesh_sdk::{Name, Secret};

/// The secrets to remove: the hook's own and the consumers' (the latest
/// two of each consumer, so a rotated-away secret stays hidden too).
#[derive(Debug, Default)]
pub struct Scrub {
    inner: Mutex<Known>,
}

#[derive(Debug, Default)]
struct Known {
    hook: Vec<Secret>,
    /// The hook's secrets it no longer announces (a rotated-away password),
    /// newest last, at most [`RETIRED_KEPT`].
    retired: VecDeque<Secret>,
    consumers: HashMap<Name, [Option<Secret>; 2]>,
}

/// How many of the hook's own secrets that it stopped announcing stay hidden.
pub const RETIRED_KEPT: usize = 16;

impl Scrub {
    fn known(&self) -> MutexGuard<'_, Known> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The hook's own secrets, as it last announced them (a hello, any
    /// reply's `secrets`, a serve hook's secrets line): they replace the
    /// set, and the ones it no longer names stay hidden too (the last
    /// [`RETIRED_KEPT`]).
    pub fn set_hook_secrets(&self, secrets: Vec<Secret>) {
        let mut known = self.known();
        let old = std::mem::replace(&mut known.hook, secrets);
        for secret in old {
            if !known.hook.contains(&secret) && !known.retired.contains(&secret) {
                known.retired.push_back(secret);
            }
        }
        let Known { hook, retired, .. } = &mut *known;
        retired.retain(|s| !hook.contains(s));
        while retired.len() > RETIRED_KEPT {
            retired.pop_front();
        }
    }

    /// The hook's own secrets: those it announced last and the ones it
    /// announced before (kept out of every text the loop writes).
    pub fn hook_secrets(&self) -> Vec<Secret> {
        let known = self.known();
        known.hook.iter().chain(&known.retired).cloned().collect()
    }

    /// `consumer`'s minted secret is about to be handed to the hook.
    pub fn handing(&self, consumer: &Name, secret: &Secret) {
        let mut known = self.known();
        let kept = known.consumers.entry(consumer.clone()).or_default();
        if kept[0].as_ref() != Some(secret) {
            kept[1] = kept[0].replace(secret.clone());
        }
    }

    /// `text` without any known secret, cut to the error length.
    pub fn text(&self, text: &str) -> String {
        self.text_within(text, mesh_runtime::redact::MAX_ERROR_CHARS)
    }

    /// `text` without any known secret, cut to `max` characters.
    pub fn text_within(&self, text: &str, max: usize) -> String {
        let known = self.known();
        let all: Vec<&str> = known
            .hook
            .iter()
            .chain(&known.retired)
            .chain(known.consumers.values().flatten().flatten())
            .map(Secret::expose)
            .collect();
        redact_within(text, &all, max)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn removes_the_hooks_secrets_and_the_last_two_of_each_consumer() {
        let scrub = Scrub::default();
        let forge = Name::parse("forge").unwrap();
        scrub.set_hook_secrets(vec![Secret::new("admin-pw")]);
        for secret in ["first-pw", "second-pw", "second-pw", "third-pw"] {
            scrub.handing(&forge, &Secret::new(secret));
        }
        let text = "admin-pw first-pw second-pw third-pw";
        assert_eq!(
            scrub.text(text),
            "[redacted] first-pw [redacted] [redacted]",
            "the first secret was rotated away twice"
        );
        assert_eq!(scrub.text(&"x".repeat(500)).chars().count(), 200);
    }

    #[test]
    fn a_rotated_hook_secret_stays_hidden_beside_the_new_one() {
        let scrub = Scrub::default();
        scrub.set_hook_secrets(vec![Secret::new("admin-pw-1")]);
        scrub.set_hook_secrets(vec![Secret::new("admin-pw-2")]);
        assert_eq!(
            scrub.text("was admin-pw-1 now admin-pw-2"),
            "was [redacted] now [redacted]"
        );
        assert_eq!(scrub.hook_secrets().len(), 2);
        // Announced again: it is current, not kept twice.
        scrub.set_hook_secrets(vec![Secret::new("admin-pw-1")]);
        assert_eq!(scrub.hook_secrets().len(), 2);
        for n in 0..40 {
            scrub.set_hook_secrets(vec![Secret::new(format!("rotated-{n}"))]);
        }
        assert_eq!(scrub.hook_secrets().len(), 1 + RETIRED_KEPT, "bounded");
        assert_eq!(scrub.text("rotated-39 rotated-38"), "[redacted] [redacted]");
    }
}
