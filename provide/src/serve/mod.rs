//! Serve mode: one long-running process, `PATH serve`, one JSON request a
//! line on its stdin and one reply a line on its stdout, each carrying its
//! request's id; up to `--concurrency` requests in flight. A hook that
//! goes down (exits, fails its hello, writes a line that is no reply, is
//! stuck) is started again when next called, braked ([`rules::Life`]), one
//! start at a time; while it is braked every call fails at once, quoting
//! the last lines of its stderr. Its `hello` is asked after every start.

pub mod rules;
mod session;

use mesh_runtime::redact::MAX_FAULT_CHARS;
use mesh_sdk::{Class, ModuleId};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{Mutex, Semaphore};
use tokio::time::Instant;

use self::rules::Life;
use self::session::Session;
use crate::down::DownCause;
use crate::error::HookError;
use crate::metrics::HookMetrics;
use crate::scrub::Scrub;
use crate::wire::{Answer, Ask, Hello, Ids, Verb};

pub use self::session::{STDERR_BEHIND, STDERR_PER_MINUTE, STDERR_TAIL, STDERR_WAIT_MAX};

/// How a serve-mode hook is run.
#[derive(Clone, Debug)]
pub struct ServeSettings {
    /// The executable.
    pub path: PathBuf,
    /// How logs and errors name it (`--hook` as given).
    pub label: String,
    /// Bound of each call; twice it, a call unanswered makes the hook stuck.
    pub timeout: Duration,
    /// Requests in flight at most.
    pub concurrency: usize,
    /// The provider instance it runs for.
    pub provider: ModuleId,
}

/// A serve-mode hook and its restarts.
pub struct Serve {
    settings: ServeSettings,
    scrub: Arc<Scrub>,
    metrics: HookMetrics,
    permits: Semaphore,
    state: Mutex<State>,
    /// While the hook is down because its hello failed: the hello's class
    /// (`refused` when it gave none) and its whole reason (scrubbed).
    hello_failed: std::sync::Mutex<Option<(Class, String)>>,
}

#[derive(Default)]
struct State {
    session: Option<Arc<Session>>,
    /// The last process that went down, quoted while the hook is braked.
    last: Option<Arc<Session>>,
    life: Life,
    /// The hello of the first start (its known faults are read once).
    first: Option<Hello>,
}

impl State {
    /// The process `session` went down (`down`): braked, counted, kept to
    /// be quoted.
    fn went_down(
        &mut self,
        label: &str,
        session: Arc<Session>,
        down: session::Down,
        metrics: &HookMetrics,
    ) {
        let cause = down.cause;
        let wait = self
            .life
            .went_down(down.at, down.why, session.answered_since());
        metrics.went_down(cause);
        tracing::info!(hook = %label, cause = cause.as_str(), wait = %humantime::format_duration(wait), "hook is started again after the wait, when next called");
        self.session = None;
        self.last = Some(session);
    }
}

impl Serve {
    /// Starts the hook and asks its hello.
    ///
    /// # Errors
    /// [`HookError`] when it cannot be started or its hello fails.
    pub async fn start(
        settings: ServeSettings,
        scrub: Arc<Scrub>,
        metrics: HookMetrics,
        ids: &Ids,
    ) -> Result<(Serve, Hello), HookError> {
        let serve = Serve {
            hello_failed: std::sync::Mutex::new(None),
            permits: Semaphore::new(settings.concurrency.max(1)),
            settings,
            scrub,
            metrics,
            state: Mutex::new(State::default()),
        };
        serve.session(ids).await?;
        let hello = serve.state.lock().await.first.clone().unwrap_or_default();
        Ok((serve, hello))
    }

    /// One call with the next id of `ids`.
    ///
    /// # Errors
    /// [`HookError`]: the hook is down and braked, went down with the call
    /// in flight, did not answer in time, or answered with no reply.
    pub async fn call(&self, ask: &Ask<'_>, ids: &Ids) -> Result<Answer, HookError> {
        let _permit = self.permits.acquire().await.map_err(|_| HookError::Lost {
            hook: self.settings.label.clone(),
            verb: ask.verb(),
            why: "the hook was closed".into(),
        })?;
        let session = self.session(ids).await?;
        session.call(ask, ids.next()).await
    }

    fn hello_failures(&self) -> std::sync::MutexGuard<'_, Option<(Class, String)>> {
        self.hello_failed
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// While the hook is down because its last hello failed: that hello's
    /// class (`refused` when it gave none) and its whole reason, scrubbed.
    /// A hook that cannot pass its hello cannot work: a provider fault.
    pub fn hello_failed(&self) -> Option<(Class, String)> {
        self.hello_failures().clone()
    }

    /// The pid of the hook's process while one runs (for tests).
    pub async fn pid(&self) -> Option<u32> {
        let state = self.state.lock().await;
        state.session.as_ref().and_then(|s| s.pid())
    }

    /// Kills the running process (its calls in flight fail; the next call
    /// starts it again behind the brake).
    pub async fn kill(&self) {
        let state = self.state.lock().await;
        if let Some(session) = &state.session {
            session.go_down(DownCause::Killed, "was killed".into());
        }
    }

    /// The running process, or a new one when it may be started now (one
    /// start at a time: the state stays locked through the hello).
    async fn session(&self, ids: &Ids) -> Result<Arc<Session>, HookError> {
        let mut state = self.state.lock().await;
        if let Some(session) = state.session.clone() {
            match session.down() {
                None => return Ok(session),
                Some(down) => state.went_down(&self.settings.label, session, down, &self.metrics),
            }
        }
        let label = &self.settings.label;
        let now = Instant::now();
        if let Err((why, left)) = state.life.may_start(now) {
            let stderr = state
                .last
                .as_ref()
                .map(|s| s.stderr_tail())
                .unwrap_or_default();
            return Err(HookError::Down {
                hook: label.clone(),
                why,
                left: humantime::format_duration(round_up(left)).to_string(),
                stderr,
                class: self.hello_failed().map(|(class, _)| class),
            });
        }
        let s = &self.settings;
        let started = Session::start(
            &s.path,
            label,
            s.timeout,
            &s.provider,
            Arc::clone(&self.scrub),
        );
        let session = match started {
            Ok(session) => session,
            Err(e) => {
                let why = format!("cannot be started: {e}");
                state.life.went_down(now, why, None);
                self.metrics.went_down(DownCause::Spawn);
                return Err(HookError::Spawn {
                    hook: label.clone(),
                    verb: Verb::Hello,
                    why: e.to_string(),
                });
            }
        };
        let hello = match session.call(&Ask::Hello, ids.next()).await {
            Ok(Answer::Hello(hello)) => Ok(hello),
            Ok(Answer::Unsupported) => Ok(Hello::default()),
            Ok(Answer::Refused { class, error }) => {
                let reason = self.scrub.text_within(
                    error.as_deref().unwrap_or("no reason given"),
                    MAX_FAULT_CHARS,
                );
                Err(HookError::Refused {
                    class,
                    message: format!("hook {label} refused its hello: {reason}"),
                })
            }
            Ok(Answer::Done(_) | Answer::Held(_)) => unreachable!("judged as a hello"),
            Err(error) => Err(error),
        };
        let hello = match hello {
            Ok(hello) => hello,
            Err(error) => {
                // A hook that fails its hello went down like any other:
                // braked, so a hook that dies at start is no process storm.
                session.go_down(DownCause::Hello, format!("failed its hello: {error}"));
                let mut down = session.down().expect("it just went down");
                if down.cause != DownCause::Hello {
                    // It went down during its hello (it exited, babbled):
                    // that is a failed start.
                    down.why = format!("failed its hello: {}", down.why);
                    down.cause = DownCause::Hello;
                }
                let stderr = session.stderr_tail();
                state.went_down(label, session, down, &self.metrics);
                let error = with_stderr(error, &stderr);
                *self.hello_failures() = Some((
                    error.class().unwrap_or(Class::Refused),
                    self.scrub.text_within(&error.to_string(), MAX_FAULT_CHARS),
                ));
                return Err(error);
            }
        };
        self.scrub.set_hook_secrets(hello.secrets.clone());
        *self.hello_failures() = None;
        self.metrics.started();
        match &state.first {
            None => {
                tracing::info!(hook = %label, name = hello.name.as_deref().unwrap_or("-"), repairs = hello.repairs.len(), "hook started (serve)");
                state.first = Some(hello);
            }
            Some(first) if first.repairs != hello.repairs => {
                tracing::warn!(hook = %label, "the hook's known faults changed since its first start; they are read once, at start");
            }
            Some(_) => tracing::info!(hook = %label, "hook started again (serve)"),
        }
        state.session = Some(Arc::clone(&session));
        Ok(session)
    }
}

/// `error` with the hook's last stderr lines added where they say why.
fn with_stderr(error: HookError, stderr: &str) -> HookError {
    if stderr.is_empty() {
        return error;
    }
    match error {
        HookError::Lost { hook, verb, why } => HookError::Lost {
            hook,
            verb,
            why: format!("{why}; its stderr: {stderr}"),
        },
        other => other,
    }
}

/// Whole seconds up (a wait said as `0ns` would read as none).
fn round_up(left: Duration) -> Duration {
    Duration::from_secs(left.as_secs() + u64::from(left.subsec_nanos() > 0))
}

impl Drop for Serve {
    fn drop(&mut self) {
        if let Ok(state) = self.state.try_lock() {
            if let Some(session) = &state.session {
                session.close();
            }
        }
    }
}
