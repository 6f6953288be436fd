//! SIGINT and SIGTERM for a program that runs until stopped: the first
//! requests its [`Stop`]; if it has not ended [`STOP_WITHIN`] later, or
//! when a second signal comes, the process ends at once with 128 + the
//! signal's number, as a shell reports a process a signal ended.

use std::time::Duration;

use tokio::signal::unix::{signal, SignalKind};
use tokio::sync::mpsc;

use crate::stop::Stop;

/// How long a program may take to end after the first SIGINT or SIGTERM
/// before the shell ends it anyway (docs/contracts/command-lines.md#stopping).
pub const STOP_WITHIN: Duration = Duration::from_secs(10);

/// A stop signal.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Signal {
    /// SIGINT (Ctrl-C).
    Interrupt,
    /// SIGTERM (`kill`, systemd's stop).
    Terminate,
}

impl Signal {
    /// Its name, `SIGINT` or `SIGTERM`.
    pub fn name(self) -> &'static str {
        match self {
            Signal::Interrupt => "SIGINT",
            Signal::Terminate => "SIGTERM",
        }
    }

    /// The exit code of a process this signal ends: 128 + its number
    /// (130 for SIGINT, 143 for SIGTERM).
    pub fn exit_code(self) -> u8 {
        match self {
            Signal::Interrupt => 128 + 2,
            Signal::Terminate => 128 + 15,
        }
    }
}

/// Watches SIGINT and SIGTERM until dropped (the handlers are installed
/// before this returns, so no signal is missed). Made by [`watch_signals`].
#[derive(Debug)]
pub struct SignalWatch {
    task: tokio::task::JoinHandle<()>,
}

impl Drop for SignalWatch {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// From now until the returned watch is dropped: the first SIGINT or
/// SIGTERM requests `stop` (and logs it); a second one, or
/// `within` passing after the first without the watch being dropped, ends
/// the process at once with the signal's [`Signal::exit_code`] (logged in
/// the log as an error). Must be called inside a tokio runtime.
///
/// # Errors
/// When the signal handlers cannot be installed.
pub fn watch_signals(stop: &Stop, within: Duration) -> std::io::Result<SignalWatch> {
    let mut interrupt = signal(SignalKind::interrupt())?;
    let mut terminate = signal(SignalKind::terminate())?;
    let (send, received) = mpsc::channel(4);
    let stop = stop.clone();
    let task = tokio::spawn(async move {
        let forward = async move {
            loop {
                let signal = tokio::select! {
                    _ = interrupt.recv() => Signal::Interrupt,
                    _ = terminate.recv() => Signal::Terminate,
                };
                if send.send(signal).await.is_err() {
                    break;
                }
            }
        };
        tokio::select! {
            () = forward => {}
            end = watch(received, stop, within) => {
                if let Some(code) = end {
                    std::process::exit(i32::from(code));
                }
            }
        }
    });
    Ok(SignalWatch { task })
}

/// The watcher's rules over `signals`: the first requests `stop`; returns
/// the exit code to end the process with when a second comes or `within`
/// passed after the first. `None` when the signals end before any came.
pub(crate) async fn watch(
    mut signals: mpsc::Receiver<Signal>,
    stop: Stop,
    within: Duration,
) -> Option<u8> {
    let first = signals.recv().await?;
    let bound = humantime::format_duration(within);
    tracing::info!(
        "{}: stopping (ended anyway after {bound}; a second SIGINT or SIGTERM ends it at once)",
        first.name()
    );
    stop.request();
    tokio::select! {
        Some(second) = signals.recv() => {
            tracing::warn!(exit = second.exit_code(), "{} again: ending now", second.name());
            Some(second.exit_code())
        }
        () = tokio::time::sleep(within) => {
            tracing::error!(exit = first.exit_code(), "not stopped {bound} after {}: ending now", first.name());
            Some(first.exit_code())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn the_first_signal_asks_for_a_stop_and_the_bound_ends_the_process() {
        let (send, received) = mpsc::channel(4);
        let stop = Stop::new();
        let watcher = tokio::spawn(watch(received, stop.clone(), STOP_WITHIN));
        tokio::time::sleep(Duration::from_secs(60)).await;
        assert!(!stop.is_requested(), "nothing before a signal");
        send.send(Signal::Terminate).await.unwrap();
        tokio::time::sleep(Duration::from_millis(1)).await;
        assert!(stop.is_requested());
        tokio::time::sleep(STOP_WITHIN - Duration::from_millis(2)).await;
        assert!(!watcher.is_finished(), "the program has its ten seconds");
        tokio::time::sleep(Duration::from_millis(2)).await;
        assert_eq!(watcher.await.unwrap(), Some(143));
    }

    #[tokio::test(start_paused = true)]
    async fn a_second_signal_ends_the_process_at_once() {
        let (send, received) = mpsc::channel(4);
        let stop = Stop::new();
        let watcher = tokio::spawn(watch(received, stop.clone(), STOP_WITHIN));
        send.send(Signal::Terminate).await.unwrap();
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert!(stop.is_requested());
        let sent = tokio::time::Instant::now();
        send.send(Signal::Interrupt).await.unwrap();
        assert_eq!(watcher.await.unwrap(), Some(130));
        assert_eq!(sent.elapsed(), Duration::ZERO, "at once");
    }

    #[tokio::test(start_paused = true)]
    async fn no_signal_no_stop() {
        let (send, received) = mpsc::channel::<Signal>(4);
        let stop = Stop::new();
        drop(send);
        assert_eq!(watch(received, stop.clone(), STOP_WITHIN).await, None);
        assert!(!stop.is_requested());
    }

    #[test]
    fn exit_codes_are_128_and_the_signal_number() {
        assert_eq!(Signal::Interrupt.exit_code(), 130);
        assert_eq!(Signal::Terminate.exit_code(), 143);
        assert_eq!(Signal::Terminate.name(), "SIGTERM");
    }
}
