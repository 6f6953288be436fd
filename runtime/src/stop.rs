//! A stop asked of a running program ([`Stop`]): the program shell requests
//! it on the first SIGINT or SIGTERM (see [`crate::program`]), the
//! program's loops watch it and end their work cancel-safely.

use std::future::Future;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

/// A stop asked of a program, shared by whoever asks and whoever obeys.
/// Clones are the same stop; once requested it stays requested.
///
/// ```
/// use mesh_runtime::Stop;
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let stop = Stop::new();
/// let asked = stop.clone();
/// tokio::spawn(async move { asked.request() });
/// // A wait that is cut short by the stop (the work must be cancel-safe).
/// let slept = stop
///     .run_until_stopped(tokio::time::sleep(std::time::Duration::from_secs(3600)))
///     .await;
/// assert_eq!(slept, None);
/// assert!(stop.is_requested());
/// # });
/// ```
#[derive(Clone, Debug, Default)]
pub struct Stop(CancellationToken);

impl Stop {
    /// A stop not requested yet.
    pub fn new() -> Stop {
        Stop::default()
    }

    /// Asks for the stop (again: nothing more happens).
    pub fn request(&self) {
        self.0.cancel();
    }

    /// Whether the stop was requested.
    pub fn is_requested(&self) -> bool {
        self.0.is_cancelled()
    }

    /// Resolves once the stop is requested (at once if it was).
    pub async fn requested(&self) {
        self.0.cancelled().await;
    }

    /// [`requested`](Stop::requested) as a future that owns the stop (for
    /// an API that takes a `'static` stop future, such as `mesh_sdk::run_until`).
    pub fn into_requested(self) -> impl Future<Output = ()> + Send + 'static {
        self.0.cancelled_owned()
    }

    /// Runs `work` until it ends (`Some` with its output) or the stop is
    /// requested (`None`, the work dropped where it waited: it must be
    /// cancel-safe). A stop requested before the call ends it at once.
    pub async fn run_until_stopped<F: Future>(&self, work: F) -> Option<F::Output> {
        tokio::select! {
            biased;
            () = self.0.cancelled() => None,
            output = work => Some(output),
        }
    }

    /// Runs `work` to its end (`Some`), but once the stop is requested
    /// (before the call or during it) gives it at most `grace` more, then
    /// drops it (`None`; it must be cancel-safe): work that ends quickly is
    /// done, work that waits on something away is not waited for.
    pub async fn run_with_grace<F: Future>(&self, work: F, grace: Duration) -> Option<F::Output> {
        tokio::pin!(work);
        tokio::select! {
            biased;
            output = &mut work => return Some(output),
            () = self.0.cancelled() => {}
        }
        tokio::time::timeout(grace, work).await.ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn work_ends_or_the_stop_cuts_it_short() {
        let stop = Stop::new();
        let quick = stop.run_until_stopped(async { 7 }).await;
        assert_eq!(quick, Some(7));
        let asked = stop.clone();
        let cut = tokio::spawn(async move {
            asked
                .run_until_stopped(tokio::time::sleep(Duration::from_secs(3600)))
                .await
        });
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert!(!stop.is_requested());
        stop.request();
        assert_eq!(cut.await.unwrap(), None);
        assert_eq!(
            stop.run_until_stopped(async { 8 }).await,
            None,
            "stays requested"
        );
        stop.clone().into_requested().await;
    }

    #[tokio::test(start_paused = true)]
    async fn after_a_stop_work_gets_its_grace_and_no_more() {
        let stop = Stop::new();
        let sleep = |secs| tokio::time::sleep(Duration::from_secs(secs));
        let grace = Duration::from_secs(2);
        assert_eq!(stop.run_with_grace(async { 1 }, grace).await, Some(1));
        let asked = stop.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_secs(10)).await;
            asked.request();
        });
        let started = tokio::time::Instant::now();
        let long = stop
            .run_with_grace(async { sleep(3600).await }, grace)
            .await;
        assert_eq!(long, None);
        assert_eq!(
            started.elapsed(),
            Duration::from_secs(12),
            "the stop, then its grace"
        );
        let quick = stop
            .run_with_grace(
                async {
                    sleep(1).await;
                    2
                },
                grace,
            )
            .await;
        assert_eq!(quick, Some(2), "ends within its grace: done");
    }
}
