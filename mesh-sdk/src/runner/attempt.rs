//! One attempt per consumer: read the secret, make if missing, check.

use std::future::Future;
use std::time::Duration;

use futures::stream::{self, StreamExt};

use crate::classify::{classify_words, Class};
use crate::contributions::Consumer;
use crate::provisioner::Provisioner;
use crate::redact::{error_words, redact};
use crate::secret::{read_secret, Secret};

/// A failed attempt: its class and redacted words.
pub(super) type Failed = (Class, String);

/// Attempts every consumer, at most `concurrency` at once; returns each
/// consumer's index with its result, in completion order.
pub(super) async fn all<P: Provisioner>(
    provisioner: &P,
    consumers: &[Consumer],
    provider_secrets: &[Secret],
    concurrency: usize,
    call_timeout: Duration,
) -> Vec<(usize, Result<(), Failed>)> {
    stream::iter(consumers.iter().enumerate())
        .map(|(index, consumer)| async move {
            (
                index,
                one(provisioner, consumer, provider_secrets, call_timeout).await,
            )
        })
        .buffer_unordered(concurrency.max(1))
        .collect()
        .await
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
