//! The hook, whatever its mode: one [`Hook::call`] per request, the
//! secrets it is handed remembered for scrubbing, and in exec mode the
//! `hello` asked again once a pass (its secrets may change).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use mesh_sdk::{Class, ModuleId};
use tokio::time::Instant;

use crate::error::HookError;
use crate::exec::Exec;
use crate::metrics::HookMetrics;
use crate::scrub::Scrub;
use crate::serve::{Serve, ServeSettings};
use crate::wire::{Answer, Ask, Hello, Ids, Verb};

/// How the hook runs (`--hook-mode`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Mode {
    /// One process per call: `PATH <verb>`.
    #[default]
    Exec,
    /// One long-running process: `PATH serve`, JSON lines with ids.
    Serve,
}

/// What running a hook needs.
#[derive(Clone, Debug)]
pub struct HookSettings {
    /// The executable (`--hook`).
    pub path: PathBuf,
    /// The mode (`--hook-mode`).
    pub mode: Mode,
    /// Bound of each call (`--hook-timeout`, default `--call-timeout`).
    pub timeout: Duration,
    /// Requests in flight at most, serve mode (`--concurrency`).
    pub concurrency: usize,
    /// Exec mode: the hello is asked again when the last is this old (`--pass-every`).
    pub hello_every: Duration,
    /// The provider instance it runs for (`MESH_PROVIDER`, and `provider`
    /// in every request that names no other).
    pub provider: ModuleId,
}

enum Runner {
    Exec(Exec),
    Serve(Box<Serve>),
}

/// A started hook.
pub struct Hook {
    label: String,
    mode: Mode,
    scrub: Arc<Scrub>,
    metrics: HookMetrics,
    ids: Ids,
    runner: Runner,
    hello_every: Duration,
    /// Exec mode: when the last hello was asked.
    last_hello: tokio::sync::Mutex<Instant>,
    /// The fault its newest hello or probe reported (scrubbed).
    reported: std::sync::Mutex<Option<(Class, String)>>,
}

/// A call in progress, counted as timed out if it is dropped unfinished.
struct Counted<'a> {
    metrics: &'a HookMetrics,
    verb: crate::wire::Verb,
    started: Instant,
    done: bool,
}

impl Drop for Counted<'_> {
    fn drop(&mut self) {
        if !self.done {
            self.metrics.cut_off(self.verb, self.started.elapsed());
        }
    }
}

/// The hello in an answer: a hook that does not know it says nothing.
fn hello_of(label: &str, answer: Answer) -> Result<Hello, HookError> {
    match answer {
        Answer::Hello(hello) => Ok(hello),
        Answer::Unsupported => Ok(Hello::default()),
        Answer::Refused { class, error } => Err(HookError::Refused {
            class,
            message: format!(
                "hook {label} refused its hello: {}",
                error.as_deref().unwrap_or("no reason given")
            ),
        }),
        Answer::Done(_) | Answer::Held(_) => unreachable!("judged as a hello"),
    }
}

impl Hook {
    /// Starts the hook (serve mode: its process) and asks its hello.
    ///
    /// # Errors
    /// [`HookError`] when it cannot be started or its hello fails: a hook
    /// whose secrets are unknown is not run.
    pub async fn start(settings: HookSettings) -> Result<(Hook, Hello), HookError> {
        let label = settings.path.display().to_string();
        let scrub = Arc::new(Scrub::default());
        let metrics = HookMetrics::default();
        let ids = Ids::default();
        let (runner, hello) = match settings.mode {
            Mode::Exec => {
                let exec = Exec::new(
                    settings.path.clone(),
                    label.clone(),
                    settings.timeout,
                    settings.provider.clone(),
                );
                let answer = exec.call(&Ask::Hello, ids.next(), &scrub).await;
                metrics.could_start(!matches!(answer, Err(HookError::Spawn { .. })));
                let hello = hello_of(&label, answer?)?;
                scrub.set_hook_secrets(hello.secrets.clone());
                tracing::info!(hook = %label, name = hello.name.as_deref().unwrap_or("-"), repairs = hello.repairs.len(), "hook answered its hello (exec)");
                (Runner::Exec(exec), hello)
            }
            Mode::Serve => {
                let serve_settings = ServeSettings {
                    provider: settings.provider.clone(),
                    path: settings.path.clone(),
                    label: label.clone(),
                    timeout: settings.timeout,
                    concurrency: settings.concurrency,
                };
                let (serve, hello) =
                    Serve::start(serve_settings, Arc::clone(&scrub), metrics.clone(), &ids).await?;
                (Runner::Serve(Box::new(serve)), hello)
            }
        };
        let hook = Hook {
            label,
            mode: settings.mode,
            scrub,
            metrics,
            ids,
            runner,
            hello_every: settings.hello_every,
            last_hello: tokio::sync::Mutex::new(Instant::now()),
            reported: std::sync::Mutex::new(None),
        };
        hook.report(hello.fault.clone());
        Ok((hook, hello))
    }

    /// The hook as logs and errors name it (`--hook` as given).
    pub fn label(&self) -> &str {
        &self.label
    }

    /// Its mode.
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// The secrets kept out of its errors and its stderr.
    pub fn scrub(&self) -> &Scrub {
        &self.scrub
    }

    /// Its metrics (registered beside the loop's).
    pub fn metrics(&self) -> &HookMetrics {
        &self.metrics
    }

    /// Kills what runs the hook now: serve, its process (the next call
    /// starts it again behind the brake); exec, every call's process in
    /// flight. Conform cuts a call off mid-way with it.
    pub async fn kill(&self) {
        match &self.runner {
            Runner::Serve(serve) => serve.kill().await,
            Runner::Exec(exec) => exec.kill(),
        }
    }

    /// The pid of a serve-mode hook's process while one runs (for tests).
    pub async fn pid(&self) -> Option<u32> {
        match &self.runner {
            Runner::Serve(serve) => serve.pid().await,
            Runner::Exec(_) => None,
        }
    }

    /// The fault the hook's newest hello or probe reported: it cannot
    /// work as its administrator now (class, scrubbed message).
    pub fn reported_fault(&self) -> Option<(Class, String)> {
        if let Runner::Serve(serve) = &self.runner {
            if let Some(failed) = serve.hello_failed() {
                return Some(failed);
            }
        }
        self.reported
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// Keeps what a hello or probe said of the fault (none: none).
    fn report(&self, fault: Option<(Class, String)>) {
        let fault = fault.map(|(class, message)| {
            (
                class,
                self.scrub
                    .text_within(&message, mesh_runtime::redact::MAX_FAULT_CHARS),
            )
        });
        *self
            .reported
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = fault;
    }

    /// One request. A refusal's message is scrubbed.
    ///
    /// # Errors
    /// [`HookError`] when there is no reply (see its variants).
    pub async fn call(&self, ask: &Ask<'_>) -> Result<Answer, HookError> {
        if let (Some(consumer), Some(secret)) = (ask.consumer(), ask.secret()) {
            self.scrub.handing(consumer, secret);
        }
        // Counted however the call ends: the loop's own bound (the call
        // timeout) may cut it off before it returns, and that is a timeout.
        let mut counted = Counted {
            metrics: &self.metrics,
            verb: ask.verb(),
            started: Instant::now(),
            done: false,
        };
        let answer = match &self.runner {
            Runner::Exec(exec) => {
                self.hello_if_due(exec).await;
                let answer = exec.call(ask, self.ids.next(), &self.scrub).await;
                self.metrics
                    .could_start(!matches!(answer, Err(HookError::Spawn { .. })));
                answer
            }
            Runner::Serve(serve) => serve.call(ask, &self.ids).await,
        };
        counted.done = true;
        self.metrics
            .call(ask.verb(), &answer, counted.started.elapsed());
        let answer = answer?;
        if let (Verb::Probe, Answer::Done(done)) = (ask.verb(), &answer) {
            self.report(done.fault.clone());
        }
        Ok(match answer {
            Answer::Refused { class, error } => Answer::Refused {
                class,
                error: error.map(|message| self.scrub.text(&message)),
            },
            other => other,
        })
    }

    /// Exec mode: the hello again once a pass, its secrets kept; a hello
    /// that fails keeps the last good ones.
    async fn hello_if_due(&self, exec: &Exec) {
        let mut last = self.last_hello.lock().await;
        if last.elapsed() < self.hello_every {
            return;
        }
        *last = Instant::now();
        let hello = exec
            .call(&Ask::Hello, self.ids.next(), &self.scrub)
            .await
            .and_then(|answer| hello_of(&self.label, answer));
        match hello {
            Ok(hello) => {
                self.scrub.set_hook_secrets(hello.secrets);
                self.report(hello.fault);
            }
            Err(error) => {
                let message = self
                    .scrub
                    .text_within(&error.to_string(), mesh_runtime::redact::MAX_FAULT_CHARS);
                tracing::warn!(hook = %self.label, error = %message, "hello failed; the last secrets it gave are kept");
                // A hook that cannot pass its hello cannot work: a
                // provider fault until a hello passes again.
                self.report(Some((error.class().unwrap_or(Class::Refused), message)));
            }
        }
    }
}
