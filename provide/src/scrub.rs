//! Keeping secrets out of what a hook says: every stderr line and every
//! error text is cut and has removed the hook's own secrets (from its
//! hello) and every consumer secret mesh-provide has handed it.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};

use mesh_runtime::redact::redact;
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
    consumers: HashMap<Name, [Option<Secret>; 2]>,
}

impl Scrub {
    fn known(&self) -> MutexGuard<'_, Known> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The hook's own secrets, as its latest hello gave them.
    pub fn set_hook_secrets(&self, secrets: Vec<Secret>) {
        self.known().hook = secrets;
    }

    /// The hook's own secrets.
    pub fn hook_secrets(&self) -> Vec<Secret> {
        self.known().hook.clone()
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
    pub fn words(&self, text: &str) -> String {
        let known = self.known();
        let all: Vec<&str> = known
            .hook
            .iter()
            .chain(known.consumers.values().flatten().flatten())
            .map(Secret::expose)
            .collect();
        redact(text, &all)
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
            scrub.words(text),
            "[redacted] first-pw [redacted] [redacted]",
            "the first secret was rotated away twice"
        );
        assert_eq!(scrub.words(&"x".repeat(500)).chars().count(), 200);
    }
}
