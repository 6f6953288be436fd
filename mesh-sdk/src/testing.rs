//! Testing a provider (feature `testing`; enable it in `[dev-dependencies]`).
//!
//! - The loop, pass by pass: a [`Runner`] over an [`Outbox`] (the fake bus:
//!   what would be published, read with [`drain`] and [`kinds`]), driven on
//!   tokio's paused clock (`#[tokio::test(start_paused = true)]`,
//!   `tokio::time::advance`), with times in bodies fixed by a [`WallClock`];
//!   its contributions file written by [`write_contributions`]; the rules
//!   of its [`Settings`] ([`StandingRules`], [`RetireRules`], [`BrakeRules`],
//!   [`RepairRules`]) shortened for a test; [`passes`] runs several.
//! - A provisioner over a real backend on the paused clock: [`hold_clock`].
//! - The log lines a test's thread wrote: [`LogCapture`].
//! - The conformance suite ([`conform()`], [`Suite`], [`Report`]: the same
//!   rules `mesh-provide conform` runs against a hook), to run in a
//!   provider's tests against its real backend.
//!
//! Everything here is a promise to provider authors, counted by the SDK's
//! surface test; the fakes and rules the SDK's own tests and the simulator
//! use are elsewhere (feature `internals`, not documented, not a promise).

pub use mesh_runtime::{Outbox, WallClock};

pub use crate::brake::BrakeRules;
pub use crate::conform::{conform, Report, Suite, Verdict, RULES};
pub use crate::repair::RepairRules;
pub use crate::retire::RetireRules;
pub use crate::runner::{PassReport, Runner};
pub use crate::settings::Settings;
pub use crate::standing::StandingRules;

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mesh_protocol::subject::parse_event_subject;

use crate::provisioner::Provisioner;

/// Holds tokio's paused clock while real I/O is in flight; see [`hold_clock`].
#[derive(Debug)]
pub struct ClockHold(tokio::task::JoinHandle<()>);

impl Drop for ClockHold {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Keeps tokio's paused clock where the test puts it while real I/O
/// (sockets to a real backend, child processes) is in flight, until the
/// returned guard is dropped.
///
/// # When to use it
/// In a test on the paused clock (`#[tokio::test(start_paused = true)]`)
/// whose provisioner does real I/O. A paused runtime with nothing to do
/// but wait for I/O jumps its clock to the next timer: the loop's call
/// timeout fires at once and the call fails (`ensure timed out after 30s`)
/// while the answer is on its way, differently each run. With the clock
/// held (a task that always yields keeps the runtime from idling), time
/// moves only with `tokio::time::advance`. Pure logic and in-memory fakes
/// do not need it; a test against a real NATS server runs on real time
/// instead (async-nats does not work on a paused clock at all).
///
/// On the held clock no tokio timeout fires by itself, so a call that
/// hangs hangs the test: bound it with a real-time watchdog (a thread
/// that ends the process after a limit).
///
/// ```no_run
/// # async fn example() {
/// // #[tokio::test(start_paused = true)]
/// let _hold = mesh_sdk::testing::hold_clock();
/// // ... runner.pass().await against the real backend, then
/// tokio::time::advance(std::time::Duration::from_secs(5)).await;
/// # }
/// ```
pub fn hold_clock() -> ClockHold {
    ClockHold(tokio::spawn(async {
        loop {
            std::thread::sleep(Duration::from_micros(100));
            tokio::task::yield_now().await;
        }
    }))
}

/// Captures the log lines written on this thread while its guard lives.
///
/// The first capture installs a global `tracing` subscriber (every level)
/// that writes each line to the capture of the thread that logged it, and
/// drops lines of threads that capture nothing. A global subscriber avoids
/// tracing's per-callsite interest cache, which thread-local subscribers race
/// on when tests run in parallel. Use it with single-threaded runtimes (the
/// `#[tokio::test]` default) so every line of a test is on its thread.
#[derive(Clone, Default)]
pub struct LogCapture {
    buffer: Arc<Mutex<Vec<u8>>>,
}

thread_local! {
    static CAPTURE: std::cell::RefCell<Option<LogCapture>> = const { std::cell::RefCell::new(None) };
}

/// Ends a capture when dropped.
pub struct CaptureGuard(());

impl Drop for CaptureGuard {
    fn drop(&mut self) {
        CAPTURE.with(|c| c.borrow_mut().take());
    }
}

/// Routes a log line to the current thread's capture.
struct Route;

impl Write for Route {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        CAPTURE.with(|c| {
            if let Some(capture) = c.borrow().as_ref() {
                capture
                    .buffer
                    .lock()
                    .expect("log lock")
                    .extend_from_slice(buf);
            }
        });
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl LogCapture {
    /// Starts capturing every level logged on the current thread.
    pub fn start() -> (LogCapture, CaptureGuard) {
        static INIT: std::sync::Once = std::sync::Once::new();
        INIT.call_once(|| {
            let _ = tracing_subscriber::fmt()
                .with_max_level(tracing::Level::TRACE)
                .with_ansi(false)
                .with_writer(|| Route)
                .try_init();
        });
        let capture = LogCapture::default();
        CAPTURE.with(|c| *c.borrow_mut() = Some(capture.clone()));
        (capture, CaptureGuard(()))
    }

    /// Everything captured so far.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.buffer.lock().expect("log lock")).into_owned()
    }

    /// Everything captured since the last `take`, removed from the capture
    /// (a long run reads its lines as they come and keeps none).
    pub fn take(&self) -> String {
        let taken = std::mem::take(&mut *self.buffer.lock().expect("log lock"));
        String::from_utf8_lossy(&taken).into_owned()
    }
}

/// One event the loop published, as a test reads it: its kind (`failing`,
/// `recovered`, `retirement`, `repair`) and its JSON body.
pub type Published = (String, serde_json::Value);

/// Takes every event pending on `outbox`, oldest key first, as a bus that
/// acknowledged them all would; the outbox is then empty.
///
/// # Panics
/// On a subject that is not a provisioner event subject, or a body that is
/// not JSON: either is a bug of the loop.
pub fn drain(outbox: &Outbox) -> Vec<Published> {
    let mut out = Vec::new();
    for (key, pending) in outbox.snapshot() {
        let Some((_, _, kind)) = parse_event_subject(&pending.subject) else {
            panic!("not a provisioner event subject: {}", pending.subject);
        };
        let body = serde_json::from_slice(&pending.body).expect("an event body is JSON");
        out.push((kind.as_str().to_owned(), body));
        outbox.done(&key, pending.seq);
    }
    out
}

/// `kind:consumer:what` of each event, in order, where `what` is its
/// reason, action or class (empty for a repair).
pub fn kinds(published: &[Published]) -> Vec<String> {
    published
        .iter()
        .map(|(kind, body)| {
            let what = body
                .get("reason")
                .or(body.get("action"))
                .or(body.get("class"))
                .and_then(serde_json::Value::as_str)
                .unwrap_or("");
            let consumer = body["consumer"].as_str().unwrap_or("");
            format!("{kind}:{consumer}:{what}")
        })
        .collect()
}

/// `mesh_provisions_mended_total` as `runner`'s `/metrics` shows it (its
/// events pending on `outbox`): how many provisions it found changed by
/// hand and brought back.
///
/// # Panics
/// When the text of `/metrics` lacks the counter: a bug of the loop.
pub fn mended_total<P: Provisioner>(runner: &Runner<P>, outbox: &Outbox) -> u64 {
    let text = runner.metrics().encode(outbox);
    text.lines()
        .find_map(|line| line.strip_prefix("mesh_provisions_mended_total "))
        .and_then(|value| value.trim().parse().ok())
        .unwrap_or_else(|| panic!("no mesh_provisions_mended_total in:\n{text}"))
}

/// Runs `n` passes of `runner`, one every `every` on tokio's (paused) clock.
pub async fn passes<P: Provisioner>(runner: &mut Runner<P>, n: usize, every: Duration) {
    for _ in 0..n {
        runner.pass().await;
        tokio::time::advance(every).await;
    }
}

/// Writes the contributions file at `path` for the provider `module` on
/// `machine`, listing `consumers`, each on machine `app-1` with the
/// provision `provision` and its minted secret in `secrets/<consumer>`
/// beside the file.
pub fn write_contributions(
    path: &std::path::Path,
    (module, machine): (&str, &str),
    provision: &str,
    consumers: &[&str],
) {
    let entries: Vec<serde_json::Value> = consumers
        .iter()
        .map(|c| serde_json::json!({"consumer": c, "machine": "app-1", "provision": provision, "secret_file": format!("secrets/{c}")}))
        .collect();
    let file = serde_json::json!({"provider": {"module": module, "machine": machine}, "consumers": entries});
    std::fs::write(path, file.to_string()).expect("the contributions file can be written");
}
