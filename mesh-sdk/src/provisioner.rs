//! The trait a provider implements: what the loop asks of its backend.

use async_trait::async_trait;
use mesh_protocol::{Class, ModuleId, Name};

use crate::contributions::Consumer;
use crate::repair::KnownFault;
use mesh_runtime::Secret;

/// What a successful [`Provisioner::ensure`] or [`Provisioner::check`]
/// found at the backend: as it should be, or changed by hand and brought
/// back. The loop logs a mend `mended` and counts it in
/// `mesh_provisions_mended_total`, unless the minted secret changed since
/// the consumer's last success: a rotation is no mend, and a provider need
/// not tell one from the other (since its start the loop cannot tell a
/// secret rotated while it was down from a hand edit, so the first attempt
/// after start counts).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Served {
    /// Nothing needed mending.
    #[default]
    AsIs,
    /// What was found changed at the backend and brought back, said briefly
    /// (`the role's password was refused and set to the minted secret`).
    Mended(String),
}

impl Served {
    /// A mend, said as `what`.
    pub fn mended(what: impl Into<String>) -> Served {
        Served::Mended(what.into())
    }

    /// What was mended, if anything.
    pub fn into_mended(self) -> Option<String> {
        match self {
            Served::AsIs => None,
            Served::Mended(what) => Some(what),
        }
    }

    /// Both of two calls' outcomes (an `ensure`'s, then a `check`'s):
    /// what either mended, `; ` between them.
    pub fn and(self, then: Served) -> Served {
        match (self, then) {
            (Served::AsIs, then) => then,
            (first, Served::AsIs) => first,
            (Served::Mended(a), Served::Mended(b)) => Served::Mended(format!("{a}; {b}")),
        }
    }
}

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
/// Every pass the loop first calls [`held`](Self::held) and retires what it
/// lists that is withdrawn long enough, and re-enables what is retired but
/// listed again (so a consumer listed again is enabled before its check).
/// Then, for each listed consumer (at most `concurrency` at once), it reads
/// the consumer's minted secret, calls [`ensure`](Self::ensure), then
/// [`check`](Self::check). A failure of any of the three is a failure of
/// that consumer for the pass. Deleting happens only on a person's approval.
/// A rotated secret reaches the backend only through `ensure` (or `check`).
///
/// Required: `ensure`, `check`, `held`, `retire`, `re_enable`, `delete`.
/// Defaulted: `classify` (none: the loop reads the error's text),
/// `secrets` (none), `fault` (the
/// loop's own reading of `held`) and `repairs` (no known fault; see
/// [`Repair`](crate::Repair)).
///
/// # Only its own
/// Several provider instances may share one backend (two machines' providers
/// on one PostgreSQL cluster, a move in progress). Each call carries the
/// instance it is made for: `held`, `retire`, `re_enable` and `delete` get
/// it as `provider`, `ensure` and `check` as [`Consumer::provider`]
/// (`module@machine`, from the contributions file). A provider marks what
/// it makes with that instance and:
/// - lists in `held` only what is marked with `provider`, never what
///   another instance made (the loop retires what `held` lists and the
///   contributions file no longer lists);
/// - refuses `retire`, `re_enable` and `delete` of anything not marked with
///   `provider`, and `ensure` of a provision another instance made
///   (class `refused`, naming that instance);
/// - adopts a provision marked by an older version (a mark without an
///   instance) only in `ensure`, that is only for a consumer the instance
///   lists; it never lists such a provision in `held` before.
///
/// The conformance suite's rule "another instance's provisions are never
/// its own" makes a provision as one instance and asks as another.
///
/// # The provider fault
/// `held` is the pass's first administrator work: when it fails
/// `credentials-rejected` or `unreachable` (by [`classify`](Self::classify)
/// or the error's message), or a known fault's gate is closed, or
/// [`fault`](Self::fault) reports one, the loop publishes a provider fault
/// (in `alive`, at once when it begins, changes class or clears); the next
/// `held` that succeeds clears it. So `held` should log in as the
/// administrator afresh (or prove its kept session's login still works):
/// a kept session outlives a changed password.
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
///   removed) and cut to 200 characters before it is logged or published.
///
/// # Assumptions
/// - `ensure`, `retire`, `re_enable` and `delete` are idempotent: calling one
///   again after it succeeded (or after it was cancelled midway) is harmless.
/// - Calls are cancel-safe: a dropped future leaves the backend in a state the
///   next call repairs.
/// - `held` lists only provisions this provider instance made, never anything
///   else at the backend (another instance's included): the loop may retire
///   whatever it lists.
///
/// # Errors
/// Every error is a failure for that consumer (or, for `held`, a pass that
/// does not count towards retirement) and is retried on the next pass. Its
/// class comes from [`classify`](Self::classify) when that returns `Some`,
/// otherwise from the error's text (`password authentication failed` reads
/// as [`Class::CredentialsRejected`], `connection refused` as
/// [`Class::Unreachable`], …; anything else is [`Class::Refused`]).
///
/// # Example
/// A provider whose backend is a map in memory, with its own error type and
/// its own class for it:
///
/// ```
/// use std::collections::HashMap;
/// use std::sync::Mutex;
///
/// use mesh_sdk::{async_trait, Class, Consumer, Held, ModuleId, Name, Provisioner, Secret, Served};
///
/// /// The in-memory backend's refusals.
/// #[derive(Debug, thiserror::Error)]
/// enum MapError {
///     /// The account exists with another password.
///     #[error("account {0} holds another password")]
///     OtherPassword(Name),
///     /// The account is missing.
///     #[error("account {0} is missing")]
///     Missing(Name),
/// }
///
/// /// Accounts by consumer: (password, retired).
/// #[derive(Default)]
/// struct Accounts(Mutex<HashMap<Name, (String, bool)>>);
///
/// #[async_trait]
/// impl Provisioner for Accounts {
///     type Error = MapError;
///
///     /// Made if missing; the minted secret brought if it holds another
///     /// (a rotation, or a change by hand: the loop tells which).
///     async fn ensure(&self, consumer: &Consumer, secret: &Secret) -> Result<Served, MapError> {
///         let mut accounts = self.0.lock().unwrap();
///         let account = accounts
///             .entry(consumer.name.clone())
///             .or_insert_with(|| (secret.expose().to_owned(), false));
///         if account.0 != secret.expose() {
///             account.0 = secret.expose().to_owned();
///             return Ok(Served::mended("the password set to the minted secret"));
///         }
///         Ok(Served::AsIs)
///     }
///
///     async fn check(&self, consumer: &Consumer, secret: &Secret) -> Result<Served, MapError> {
///         match self.0.lock().unwrap().get(&consumer.name) {
///             Some((password, false)) if password == secret.expose() => Ok(Served::AsIs),
///             Some(_) => Err(MapError::OtherPassword(consumer.name.clone())),
///             None => Err(MapError::Missing(consumer.name.clone())),
///         }
///     }
///
///     /// Only the accounts this instance made (the map is its own backend).
///     async fn held(&self, _provider: &ModuleId) -> Result<Vec<Held>, MapError> {
///         let accounts = self.0.lock().unwrap();
///         Ok(accounts
///             .iter()
///             .map(|(name, (_, retired))| Held { name: name.clone(), retired: *retired })
///             .collect())
///     }
///
///     async fn retire(&self, _provider: &ModuleId, consumer: &Name) -> Result<(), MapError> {
///         self.0.lock().unwrap().get_mut(consumer).map(|a| a.1 = true);
///         Ok(())
///     }
///
///     async fn re_enable(&self, _provider: &ModuleId, consumer: &Name) -> Result<(), MapError> {
///         self.0.lock().unwrap().get_mut(consumer).map(|a| a.1 = false);
///         Ok(())
///     }
///
///     async fn delete(&self, _provider: &ModuleId, consumer: &Name) -> Result<(), MapError> {
///         self.0.lock().unwrap().remove(consumer);
///         Ok(())
///     }
///
///     /// Typed facts, not messages: another password is a rejected credential.
///     fn classify(&self, error: &MapError) -> Option<Class> {
///         match error {
///             MapError::OtherPassword(_) => Some(Class::CredentialsRejected),
///             MapError::Missing(_) => Some(Class::Refused),
///         }
///     }
/// }
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// // A binary hands it to the loop: `mesh_sdk::run(Accounts::default(), &args)`.
/// let args = mesh_sdk::ProviderArgs::with_defaults("/etc/mesh/accounts/contributions.json");
/// let _loop = mesh_sdk::run(Accounts::default(), &args);
/// # Ok(())
/// # }
/// ```
#[async_trait]
pub trait Provisioner: Send + Sync + 'static {
    /// The backend's error.
    type Error: std::error::Error + Send + Sync + 'static;

    /// Makes the consumer's provision if it is missing, and brings `secret`
    /// to it when the backend holds another. Idempotent.
    ///
    /// The loop never calls anything else when a consumer's minted secret
    /// changes: `ensure` (then `check`) is all a rotated secret gets, so
    /// between them they must apply it (a password set again, a client
    /// secret replaced). The plain way is an `ensure` that sets the secret
    /// when the backend holds another; mesh-postgres and mesh-identity do
    /// it in `check` instead, resetting the secret once when the
    /// consumer's login is refused. An `ensure` that only makes what is
    /// missing, with a `check` that only checks, leaves every rotated
    /// consumer failing `credentials-rejected`; the conformance suite's
    /// rule "ensure with a new secret (a rotation) makes check pass with
    /// it" catches it. A secret changed by hand at the backend is brought
    /// back the same way: say it in the result, [`Served::Mended`].
    async fn ensure(&self, consumer: &Consumer, secret: &Secret) -> Result<Served, Self::Error>;

    /// Proves the provision works, as the consumer would use it; what it
    /// mended on the way (a refused password set again) in the result.
    async fn check(&self, consumer: &Consumer, secret: &Secret) -> Result<Served, Self::Error>;

    /// Every provision the instance `provider` made and still holds at its
    /// backend, and nothing another instance made ("Only its own").
    async fn held(&self, provider: &ModuleId) -> Result<Vec<Held>, Self::Error>;

    /// Disables a provision `provider` made (reversible, nothing deleted).
    /// Idempotent. Refuses one another instance made.
    async fn retire(&self, provider: &ModuleId, consumer: &Name) -> Result<(), Self::Error>;

    /// Enables a retired provision `provider` made again. Idempotent.
    /// Refuses one another instance made.
    async fn re_enable(&self, provider: &ModuleId, consumer: &Name) -> Result<(), Self::Error>;

    /// Deletes a retired provision `provider` made, and its data. Only on a
    /// person's approval. Refuses one another instance made.
    async fn delete(&self, provider: &ModuleId, consumer: &Name) -> Result<(), Self::Error>;

    /// The provider's own classification of its error; `None` lets the loop
    /// read the error's message. Typed facts (SQLSTATE, HTTP status) belong here.
    fn classify(&self, error: &Self::Error) -> Option<Class> {
        let _ = error;
        None
    }

    /// Secrets the provider holds (an administrator's password): removed from
    /// every error text, like the consumer's own secret.
    fn secrets(&self) -> Vec<Secret> {
        Vec::new()
    }

    /// Metrics of the provider's own, registered once when the loop starts
    /// into the registry `/metrics` encodes beside the loop's (which adds
    /// the `mesh_` prefix to every name). The default registers none.
    /// Register clones of the metrics the provider keeps updating
    /// (prometheus-client's metrics share their values between clones);
    /// a name may not be one of the loop's (docs/operating.md, "Metrics").
    fn register_metrics(&self, registry: &mut prometheus_client::registry::Registry) {
        let _ = registry;
    }

    /// The provider's own word on its administrator, asked each pass after
    /// [`held`](Self::held): `Some((class, message))` when it cannot work as
    /// its administrator now (a login refused, the backend not reached),
    /// which the loop publishes as the provider fault whatever the class;
    /// `None` (the default) leaves it to what the loop saw: `held`
    /// failing `credentials-rejected` or `unreachable` is the fault, `held`
    /// succeeding clears it. The message is redacted like every error.
    fn fault(&self) -> Option<(Class, String)> {
        None
    }

    /// Known faults this provider can repair safely, asked once when the
    /// loop starts. While one is present the loop stops calling the backend
    /// for consumers (see [`Repair`](crate::Repair)).
    fn repairs(&self) -> Vec<KnownFault> {
        Vec::new()
    }
}
