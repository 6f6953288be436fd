//! Exec mode: one process per call, `PATH <verb>`, the request on stdin,
//! the reply on stdout, the exit status; bounded in time (the process
//! group is killed) and in size (stdout [`MAX_REPLY_BYTES`], stderr
//! [`STDERR_KEPT`](crate::process::STDERR_KEPT)).

use mesh_sdk::ModuleId;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use tokio::io::AsyncWriteExt;

use crate::error::HookError;
use crate::process::{ended, read_at_most, read_stderr, stderr_lines, Hooked, STDERR_LINES};
use crate::scrub::Scrub;
use crate::wire::{judge, parse, Answer, Ask, Bad, ParsedReply, Verb, MAX_REPLY_BYTES};

/// A hook run once per call.
#[derive(Debug)]
pub struct Exec {
    path: PathBuf,
    label: String,
    timeout: Duration,
    /// The provider instance it runs for (a call's own instance wins).
    provider: ModuleId,
    /// The process group of each call in flight, by request id.
    running: Mutex<HashMap<u64, rustix::process::Pid>>,
}

/// Takes a call's process group out of [`Exec::running`] when the call ends
/// (or is dropped).
struct Running<'a> {
    exec: &'a Exec,
    id: u64,
}

impl Drop for Running<'_> {
    fn drop(&mut self) {
        self.exec.running().remove(&self.id);
    }
}

/// What one process gave back.
struct Output {
    stdout: Vec<u8>,
    stderr: Vec<u8>,
    status: std::process::ExitStatus,
}

impl Exec {
    /// The hook at `path` (named `label` in logs and errors) for the
    /// instance `provider`, each call bounded by `timeout`.
    pub fn new(path: PathBuf, label: String, timeout: Duration, provider: ModuleId) -> Exec {
        Exec {
            path,
            label,
            timeout,
            provider,
            running: Mutex::new(HashMap::new()),
        }
    }

    fn running(&self) -> MutexGuard<'_, HashMap<u64, rustix::process::Pid>> {
        self.running.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Kills the process group of every call in flight (each fails as its
    /// hook was killed by a signal).
    pub fn kill(&self) {
        for group in self.running().values() {
            let _ = rustix::process::kill_process_group(*group, rustix::process::Signal::KILL);
        }
    }

    /// Runs one call with request id `id`. A refusal without a message of its
    /// own gets the last line of the hook's stderr, or how it ended.
    ///
    /// # Errors
    /// [`HookError`] when the hook cannot be started, runs past the
    /// timeout, or its output is no reply.
    pub async fn call(&self, ask: &Ask<'_>, id: u64, scrub: &Scrub) -> Result<Answer, HookError> {
        let verb = ask.verb();
        let provider = ask.provider().unwrap_or(&self.provider);
        let spawned = Hooked::spawn(&self.path, verb.as_str(), self.timeout, provider);
        let mut hooked = spawned.map_err(|e| HookError::Spawn {
            hook: self.label.clone(),
            verb,
            why: e.to_string(),
        })?;
        let _running = hooked.group().map(|group| {
            self.running().insert(id, group);
            Running { exec: self, id }
        });
        let run = self.run(&mut hooked, ask.line(id, provider, self.timeout));
        let output = match tokio::time::timeout(self.timeout, run).await {
            Ok(Ok(output)) => output,
            Ok(Err(what)) => return Err(self.bad(ask.verb(), what, scrub)),
            Err(_) => {
                hooked.kill_group();
                return Err(HookError::TimedOut {
                    hook: self.label.clone(),
                    verb,
                    after: humantime::format_duration(self.timeout).to_string(),
                });
            }
        };
        // The reply's secrets replace the hook's before any of its text
        // (stderr, the reply's error) are read.
        let answer = self.answer(ask, id, &output, scrub);
        let lines = stderr_lines(&output.stderr, scrub);
        let answer = match answer {
            Ok(answer) => answer,
            Err(what) => {
                // Its stderr says why (a traceback beside half a reply).
                self.log_stderr(ask, &lines, true);
                return Err(self.bad(ask.verb(), what, scrub));
            }
        };
        let failed = matches!(answer, Answer::Refused { .. });
        self.log_stderr(ask, &lines, failed);
        Ok(match answer {
            Answer::Refused { class, error } => Answer::Refused {
                class,
                error: Some(match error {
                    Some(message) => scrub.text(&message),
                    None => lines.last().cloned().unwrap_or_else(|| {
                        format!("hook {} {verb} {}", self.label, ended(output.status))
                    }),
                }),
            },
            other => other,
        })
    }

    /// Writes the request, reads stdout (bounded) and stderr, waits for the end.
    async fn run(&self, hooked: &mut Hooked, line: Vec<u8>) -> Result<Output, Bad> {
        let (stdin, stdout, stderr) = (
            hooked.stdin.take(),
            hooked.stdout.take(),
            hooked.stderr.take(),
        );
        let write = async move {
            if let Some(mut stdin) = stdin {
                // A hook that does not read its request closes the pipe: its
                // exit status says what happened.
                let _ = stdin.write_all(&line).await;
            }
            Ok::<(), Bad>(())
        };
        let read = async move {
            let Some(stdout) = stdout else {
                return Ok(Vec::new());
            };
            match read_at_most(stdout, MAX_REPLY_BYTES).await {
                Ok(Some(bytes)) => Ok(bytes),
                Ok(None) => Err(Bad::TooLarge {
                    limit: MAX_REPLY_BYTES,
                }),
                Err(e) => Err(Bad::Io(e.to_string())),
            }
        };
        let errors = async move {
            Ok::<_, Bad>(match stderr {
                Some(stderr) => read_stderr(stderr).await,
                None => Vec::new(),
            })
        };
        let ((), stdout, stderr) = tokio::try_join!(write, read, errors)?;
        let status = hooked
            .wait()
            .await
            .map_err(|e| Bad::Io(format!("waiting for the hook: {e}")))?;
        Ok(Output {
            stdout,
            stderr,
            status,
        })
    }

    fn answer(
        &self,
        ask: &Ask<'_>,
        id: u64,
        output: &Output,
        scrub: &Scrub,
    ) -> Result<Answer, Bad> {
        let stdout = output.stdout.trim_ascii();
        let parsed = match stdout.is_empty() {
            true => Ok(ParsedReply::default()),
            false => parse(stdout),
        };
        parsed.and_then(|parsed| {
            if let Some(secrets) = &parsed.secrets {
                scrub.set_hook_secrets(secrets.clone());
            }
            match parsed.id {
                Some(got) if got != id => Err(Bad::WrongId { expected: id, got }),
                _ => Ok(()),
            }?;
            judge(ask.verb(), &parsed, Some(output.status.success()))
        })
    }

    fn bad(&self, verb: Verb, what: Bad, scrub: &Scrub) -> HookError {
        let what = what.scrubbed(|text| scrub.text(text));
        HookError::BadReply {
            hook: self.label.clone(),
            verb,
            what,
        }
    }

    /// Logs the hook's stderr lines (at most [`STDERR_LINES`]): as warnings
    /// when the call failed, at debug level otherwise.
    fn log_stderr(&self, ask: &Ask<'_>, lines: &[String], failed: bool) {
        let consumer = ask.consumer().map(|c| c.as_str()).unwrap_or("-");
        for line in lines.iter().take(STDERR_LINES) {
            match failed {
                true => {
                    tracing::warn!(hook = %self.label, verb = %ask.verb(), consumer, line = %line, "hook stderr")
                }
                false => {
                    tracing::debug!(hook = %self.label, verb = %ask.verb(), consumer, line = %line, "hook stderr")
                }
            }
        }
        if lines.len() > STDERR_LINES {
            tracing::debug!(hook = %self.label, verb = %ask.verb(), consumer, dropped = lines.len() - STDERR_LINES, "hook stderr lines not logged");
        }
    }
}
