//! The trait a provider implements: what the loop asks of its backend.

use std::sync::Arc;

use async_trait::async_trait;

use crate::classify::Class;
use crate::contributions::Consumer;
use crate::name::Name;
use crate::repair::Repair;
use crate::secret::Secret;

/// A provision the provider holds at its backend, as it lists it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Held {
    /// The consumer the provision was made for.
    pub name: Name,
    /// Whether it is retired (disabled, reversible).
    pub retired: bool,
}

impl Held {
    /// A provision in use.
    pub fn active(name: Name) -> Held {
        Held {
            name,
            retired: false,
        }
    }

    /// A retired provision.
    pub fn retired(name: Name) -> Held {
        Held {
            name,
            retired: true,
        }
    }
}

/// What a provider does for each consumer; the loop does everything else.
///
/// # Expected flow
/// Every pass, for each listed consumer (at most `concurrency` at once): the
/// loop reads the consumer's minted secret, calls [`ensure`](Self::ensure),
/// then [`check`](Self::check). A failure of any of the three is a failure of
/// that consumer for the pass. After the consumers, the loop calls
/// [`held`](Self::held) and retires, re-enables or (on a person's approval)
/// deletes what it lists.
///
/// Required: `ensure`, `check`, `held`, `retire`, `re_enable`, `delete`.
/// Defaulted: `classify` (none: the loop reads the error's words),
/// `secrets` (none) and `repairs` (no known fault; see [`crate::repair`]).
///
/// # Guarantees
/// - Calls for one consumer never overlap; calls for different consumers do.
/// - Each call is bounded by the per-call timeout; a call that times out is
///   dropped (its future is cancelled) and counts as `unreachable`.
/// - `delete` is only ever called for a provision that is retired, no longer
///   listed, and that a person approved deleting.
/// - `retire` is only called for a provision no longer listed, after
///   `retire_after_passes` passes and `retire_after`, or on approval; never
///   in a pass where the contributions file or `held` could not be read.
/// - Error text is redacted (the consumer's secret and [`secrets`](Self::secrets)
///   removed) and cut to 200 characters before it is logged or sent.
///
/// # Assumptions
/// - `ensure`, `retire`, `re_enable` and `delete` are idempotent: calling one
///   again after it succeeded (or after it was cancelled midway) is harmless.
/// - Calls are cancel-safe: a dropped future leaves the backend in a state the
///   next call repairs.
/// - `held` lists only provisions this provider made, never anything else at
///   the backend: the loop may retire whatever it lists.
///
/// # Errors
/// Every error is a failure for that consumer (or, for `held`, a pass that
/// does not count towards retirement) and is retried on the next pass. Its
/// class comes from [`classify`](Self::classify) when that returns `Some`,
/// otherwise from the error's words ([`crate::classify_words`]).
#[async_trait]
pub trait Provisioner: Send + Sync + 'static {
    /// The backend's error.
    type Error: std::error::Error + Send + Sync + 'static;

    /// Makes the consumer's provision if it is missing. Idempotent.
    async fn ensure(&self, consumer: &Consumer, secret: &Secret) -> Result<(), Self::Error>;

    /// Proves the provision works, as the consumer would use it.
    async fn check(&self, consumer: &Consumer, secret: &Secret) -> Result<(), Self::Error>;

    /// Every provision this provider made and still holds at its backend.
    async fn held(&self) -> Result<Vec<Held>, Self::Error>;

    /// Disables a provision (reversible, nothing deleted). Idempotent.
    async fn retire(&self, consumer: &Name) -> Result<(), Self::Error>;

    /// Enables a retired provision again. Idempotent.
    async fn re_enable(&self, consumer: &Name) -> Result<(), Self::Error>;

    /// Deletes a retired provision and its data. Only on a person's approval.
    async fn delete(&self, consumer: &Name) -> Result<(), Self::Error>;

    /// The provider's own classification of its error; `None` lets the loop
    /// read the error's words. Typed facts (SQLSTATE, HTTP status) belong here.
    fn classify(&self, error: &Self::Error) -> Option<Class> {
        let _ = error;
        None
    }

    /// Secrets the provider holds (an administrator's password): removed from
    /// every error text, like the consumer's own secret.
    fn secrets(&self) -> Vec<Secret> {
        Vec::new()
    }

    /// Known faults this provider can repair safely, asked once when the
    /// loop starts. While one is present the loop stops calling the backend
    /// for consumers (see [`crate::repair`]).
    fn repairs(&self) -> Vec<Arc<dyn Repair>> {
        Vec::new()
    }
}
