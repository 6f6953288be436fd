//! One attempt per consumer: read the secret, ensure (make if missing,
//! bring the minted secret), check.

use std::future::Future;
use std::hash::BuildHasher;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use futures::FutureExt;
use mesh_protocol::Class;
use tokio::task::JoinSet;

use crate::classify::classify_message;
use crate::contributions::{Consumer, Contributions};
use crate::provisioner::Provisioner;
use crate::secret::SecretSource;
use mesh_runtime::redact::{error_text, redact};
use mesh_runtime::Progress;
use mesh_runtime::Secret;

/// A failed attempt: its class and redacted error text.
pub(super) type Failed = (Class, String);

/// A successful attempt.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Served {
    /// A fingerprint of the secret it was made with (random keys per
    /// runner; never the secret): a changed one is a rotation.
    pub(super) secret: u64,
    /// What the provider reported it mended on the way (redacted).
    pub(super) mended: Option<String>,
}

/// What every attempt of a pass shares.
pub(super) struct Attempts<P> {
    pub(super) provisioner: Arc<P>,
    pub(super) secrets: Arc<dyn SecretSource>,
    /// The provider's own secrets, removed from every error.
    pub(super) provider_secrets: Arc<[Secret]>,
    pub(super) call_timeout: Duration,
    /// Ticked as attempts end (`/healthz`).
    pub(super) progress: Arc<Progress>,
    /// Keys of the secrets' fingerprints.
    pub(super) fingerprints: foldhash::fast::RandomState,
}

impl<P> Clone for Attempts<P> {
    fn clone(&self) -> Self {
        Attempts {
            provisioner: Arc::clone(&self.provisioner),
            secrets: Arc::clone(&self.secrets),
            provider_secrets: Arc::clone(&self.provider_secrets),
            call_timeout: self.call_timeout,
            progress: Arc::clone(&self.progress),
            fingerprints: self.fingerprints.clone(),
        }
    }
}

/// Attempts every consumer, at most `concurrency` at once; returns each
/// consumer's index with its result, in completion order.
///
/// `concurrency` worker tasks take the next consumer from a shared counter
/// until none is left: at most `concurrency` attempts are in flight, the
/// attempts use every core (a provider's CPU work, such as hashing a
/// password, does not hold up the others), and a pass spawns `concurrency`
/// tasks, not one per consumer. A panic in the provider's code is caught and
/// counts as that consumer's failure, not the loop's end.
pub(super) async fn all<P: Provisioner>(
    attempts: Attempts<P>,
    contributions: Arc<Contributions>,
    concurrency: usize,
) -> Vec<(usize, Result<Served, Failed>)> {
    let total = contributions.consumers.len();
    let next = Arc::new(AtomicUsize::new(0));
    let mut workers = JoinSet::new();
    for _ in 0..concurrency.clamp(1, total.max(1)) {
        let (shared, contributions, next) = (
            attempts.clone(),
            Arc::clone(&contributions),
            Arc::clone(&next),
        );
        workers.spawn(async move {
            let mut done = Vec::new();
            loop {
                let index = next.fetch_add(1, Ordering::Relaxed);
                let Some(consumer) = contributions.consumers.get(index) else {
                    return done;
                };
                let mut attempt = std::pin::pin!(shared.guarded(consumer));
                let (result, waited) = match futures::poll!(attempt.as_mut()) {
                    Poll::Ready(result) => (result, false),
                    Poll::Pending => (attempt.await, true),
                };
                done.push((index, result));
                // The loop moved (`/healthz`). Attempts that answer at once
                // tell it every 64th (a clock read each costs more than
                // they do); the pass's end tells it too.
                if waited || done.len() % 64 == 0 {
                    shared.progress.tick();
                }
            }
        });
    }
    let mut out = Vec::with_capacity(total);
    while let Some(joined) = workers.join_next().await {
        match joined {
            Ok(done) => out.extend(done),
            Err(error) => tracing::error!(error = %error, "an attempt worker ended abnormally"),
        }
    }
    out
}

impl<P: Provisioner> Attempts<P> {
    /// One attempt; a panic in the provider's code becomes a failure.
    async fn guarded(&self, consumer: &Consumer) -> Result<Served, Failed> {
        AssertUnwindSafe(self.one(consumer))
            .catch_unwind()
            .await
            .unwrap_or_else(|panic| {
                let text = panic
                    .downcast_ref::<&str>()
                    .map(|s| (*s).to_owned())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_default();
                let text = format!("the provisioner panicked: {text}");
                Err((Class::Refused, self.scrub(&text, None)))
            })
    }

    async fn one(&self, consumer: &Consumer) -> Result<Served, Failed> {
        let secret = self.secrets.read(consumer).map_err(|error| {
            (
                Class::SecretUnreadable,
                self.scrub(&error_text(&error), None),
            )
        })?;
        let provisioner = self.provisioner.as_ref();
        let ensured = self
            .step("ensure", provisioner.ensure(consumer, &secret), &secret)
            .await?;
        let checked = self
            .step("check", provisioner.check(consumer, &secret), &secret)
            .await?;
        Ok(Served {
            secret: self.fingerprints.hash_one(secret.expose()),
            mended: ensured
                .and(checked)
                .into_mended()
                .map(|text| self.scrub(&text, Some(&secret))),
        })
    }

    async fn step(
        &self,
        step: &'static str,
        call: impl Future<Output = Result<crate::provisioner::Served, P::Error>>,
        secret: &Secret,
    ) -> Result<crate::provisioner::Served, Failed> {
        // A call that answers at its first poll needs no timer: the timeout
        // is armed when the call first waits (so it counts from then, not
        // from before any work the call does before its first wait).
        // Reading the clock and making a timer cost more than a quick
        // call itself, and a pass makes two calls a consumer.
        let mut call = std::pin::pin!(call);
        let answered = match futures::poll!(call.as_mut()) {
            Poll::Ready(answer) => Ok(answer),
            Poll::Pending => tokio::time::timeout(self.call_timeout, call).await,
        };
        match answered {
            Ok(Ok(served)) => Ok(served),
            Ok(Err(error)) => {
                let text = error_text(&error);
                let class = self
                    .provisioner
                    .classify(&error)
                    .unwrap_or_else(|| classify_message(&text));
                Err((class, self.scrub(&text, Some(secret))))
            }
            Err(_) => Err((
                Class::Unreachable,
                format!(
                    "{step} timed out after {}",
                    humantime::format_duration(self.call_timeout)
                ),
            )),
        }
    }
}

impl<P> Attempts<P> {
    /// Removes the consumer's secret and the provider's secrets, cuts to 200 characters.
    fn scrub(&self, text: &str, secret: Option<&Secret>) -> String {
        let mut secrets: Vec<&str> = self.provider_secrets.iter().map(Secret::expose).collect();
        if let Some(secret) = secret {
            secrets.push(secret.expose());
        }
        redact(text, &secrets)
    }
}
