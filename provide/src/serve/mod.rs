//! Serve mode: one long-running process, `PATH serve`, one JSON request a
//! line on its stdin and one reply a line on its stdout, each carrying its
//! request's id; up to `--concurrency` requests in flight. A hook that
//! goes down (exits, writes a line that is no reply, is stuck) is started
//! again when next called, braked ([`rules::Life`]); its `hello` is asked
//! after every start.

pub mod rules;
mod session;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{Mutex, Semaphore};
use tokio::time::Instant;

use self::rules::Life;
use self::session::Session;
use crate::error::HookError;
use crate::scrub::Scrub;
use crate::wire::{Answer, Ask, Hello, Ids, Verb};

/// How a serve-mode hook is run.
#[derive(Clone, Debug)]
pub struct ServeSettings {
    /// The executable.
    pub path: PathBuf,
    /// How words name it (`--hook` as given).
    pub label: String,
    /// Bound of each call; twice it, a call unanswered makes the hook stuck.
    pub timeout: Duration,
    /// Requests in flight at most.
    pub concurrency: usize,
}

/// A serve-mode hook and its restarts.
pub struct Serve {
    settings: ServeSettings,
    scrub: Arc<Scrub>,
    permits: Semaphore,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    session: Option<Arc<Session>>,
    life: Life,
    /// The hello of the first start (its known faults are read once).
    first: Option<Hello>,
}

impl Serve {
    /// Starts the hook and asks its hello.
    ///
    /// # Errors
    /// [`HookError`] when it cannot be started or its hello fails.
    pub async fn start(
        settings: ServeSettings,
        scrub: Arc<Scrub>,
        ids: &Ids,
    ) -> Result<(Serve, Hello), HookError> {
        let serve = Serve {
            permits: Semaphore::new(settings.concurrency.max(1)),
            settings,
            scrub,
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

    /// The pid of the hook's process while one runs (for tests).
    pub async fn pid(&self) -> Option<u32> {
        let state = self.state.lock().await;
        state.session.as_ref().and_then(|s| s.pid())
    }

    /// The running process, or a new one when it may be started now.
    async fn session(&self, ids: &Ids) -> Result<Arc<Session>, HookError> {
        let mut state = self.state.lock().await;
        if let Some(session) = &state.session {
            match session.down() {
                None => return Ok(Arc::clone(session)),
                Some((at, why)) => {
                    let answered = session.answered();
                    let wait = state.life.went_down(at, why, answered);
                    tracing::info!(hook = %self.settings.label, wait = %humantime::format_duration(wait), "hook is started again after a wait");
                    state.session = None;
                }
            }
        }
        let label = &self.settings.label;
        let now = Instant::now();
        state
            .life
            .may_start(now)
            .map_err(|(why, left)| HookError::Down {
                hook: label.clone(),
                why,
                left: humantime::format_duration(round_up(left)).to_string(),
            })?;
        let s = &self.settings;
        let session = match Session::start(&s.path, label, s.timeout, Arc::clone(&self.scrub)) {
            Ok(session) => session,
            Err(e) => {
                let why = format!("cannot be started: {e}");
                state.life.went_down(now, why, false);
                return Err(HookError::Spawn {
                    hook: label.clone(),
                    verb: Verb::Hello,
                    why: e.to_string(),
                });
            }
        };
        let hello = match session.call(&Ask::Hello, ids.next()).await {
            Ok(Answer::Hello(hello)) => hello,
            Ok(Answer::Unsupported) => Hello::default(),
            Ok(Answer::Refused { error, .. }) => {
                let words = self.scrub.words(error.as_deref().unwrap_or("no words"));
                let why = format!("refused its hello: {words}");
                session.go_down(why.clone());
                return Err(HookError::Refused {
                    class: None,
                    words: format!("hook {label} {why}"),
                });
            }
            Ok(Answer::Done(_) | Answer::Held(_)) => unreachable!("judged as a hello"),
            Err(error) => {
                session.go_down(format!("failed its hello: {error}"));
                return Err(error);
            }
        };
        self.scrub.set_hook_secrets(hello.secrets.clone());
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
