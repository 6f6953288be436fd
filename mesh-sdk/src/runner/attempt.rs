//! One attempt per consumer: read the secret, make if missing, check.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt;
use tokio::task::JoinSet;

use crate::classify::{classify_words, Class};
use crate::contributions::{Consumer, Contributions};
use crate::provisioner::Provisioner;
use crate::redact::{error_words, redact};
use crate::secret::{read_secret, Secret};

/// A failed attempt: its class and redacted words.
pub(super) type Failed = (Class, String);

/// Attempts every consumer, at most `concurrency` at once; returns each
/// consumer's index with its result, in completion order.
///
/// Each attempt is its own task, so attempts use every core (a provider's
/// CPU work, such as hashing a password, does not hold up the others) and
/// reading a secret file never stalls the timers of attempts in flight. A
/// panic in the provider's code is caught and counts as that consumer's
/// failure, not the loop's end.
pub(super) async fn all<P: Provisioner>(
    provisioner: &Arc<P>,
    contributions: &Arc<Contributions>,
    provider_secrets: &Arc<[Secret]>,
    concurrency: usize,
    call_timeout: Duration,
) -> Vec<(usize, Result<(), Failed>)> {
    let total = contributions.consumers.len();
    let mut running = JoinSet::new();
    let mut out = Vec::with_capacity(total);
    let mut next = 0;
    loop {
        while running.len() < concurrency.max(1) && next < total {
            let (provisioner, contributions, secrets) = (
                Arc::clone(provisioner),
                Arc::clone(contributions),
                Arc::clone(provider_secrets),
            );
            let index = next;
            running.spawn(async move {
                let consumer = &contributions.consumers[index];
                let attempt = one(provisioner.as_ref(), consumer, &secrets, call_timeout);
                let result = AssertUnwindSafe(attempt)
                    .catch_unwind()
                    .await
                    .unwrap_or_else(|panic| {
                        let words = panic
                            .downcast_ref::<&str>()
                            .map(|s| (*s).to_owned())
                            .or_else(|| panic.downcast_ref::<String>().cloned())
                            .unwrap_or_default();
                        Err((
                            Class::Refused,
                            scrub(
                                &format!("the provisioner panicked: {words}"),
                                None,
                                &secrets,
                            ),
                        ))
                    });
                (index, result)
            });
            next += 1;
        }
        match running.join_next().await {
            Some(Ok(done)) => out.push(done),
            Some(Err(error)) => tracing::error!(error = %error, "an attempt task ended abnormally"),
            None => return out,
        }
    }
}

async fn one<P: Provisioner>(
    provisioner: &P,
    consumer: &Consumer,
    provider_secrets: &[Secret],
    call_timeout: Duration,
) -> Result<(), Failed> {
    let secret = read_secret(&consumer.secret_file).map_err(|error| {
        let words = error_words(&error);
        (
            Class::SecretUnreadable,
            scrub(&words, None, provider_secrets),
        )
    })?;
    let bounded = |step: &'static str, call| {
        step_with_timeout(
            provisioner,
            step,
            call,
            call_timeout,
            &secret,
            provider_secrets,
        )
    };
    bounded("make", provisioner.ensure(consumer, &secret)).await?;
    bounded("check", provisioner.check(consumer, &secret)).await
}

async fn step_with_timeout<P: Provisioner>(
    provisioner: &P,
    step: &'static str,
    call: impl Future<Output = Result<(), P::Error>>,
    call_timeout: Duration,
    secret: &Secret,
    provider_secrets: &[Secret],
) -> Result<(), Failed> {
    match tokio::time::timeout(call_timeout, call).await {
        Ok(Ok(())) => Ok(()),
        Ok(Err(error)) => {
            let words = error_words(&error);
            let class = provisioner
                .classify(&error)
                .unwrap_or_else(|| classify_words(&words));
            Err((class, scrub(&words, Some(secret), provider_secrets)))
        }
        Err(_) => Err((
            Class::Unreachable,
            format!(
                "{step} timed out after {}",
                humantime::format_duration(call_timeout)
            ),
        )),
    }
}

/// Removes the consumer's secret and the provider's secrets, cuts to 200 characters.
fn scrub(words: &str, secret: Option<&Secret>, provider_secrets: &[Secret]) -> String {
    let mut secrets: Vec<&str> = provider_secrets.iter().map(Secret::expose).collect();
    if let Some(secret) = secret {
        secrets.push(secret.expose());
    }
    redact(words, &secrets)
}
