//! One process of a serve-mode hook: its request lines written under one
//! lock, its reply lines read by one task and handed to the callers by id,
//! its stderr logged, and a watchdog that kills it when it is stuck. When
//! it goes down (it exits, babbles, is stuck, or its stdin breaks) every
//! call in flight fails and the process group is killed.

use mesh_sdk::ModuleId;
use std::collections::VecDeque;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{ChildStderr, ChildStdin, ChildStdout};
use tokio::sync::oneshot;
use tokio::time::Instant;

use super::rules::{Answered, Table};
use crate::down::DownCause;
use crate::error::HookError;
use crate::process::{ended, Hooked, STDERR_KEPT};
use crate::scrub::Scrub;
use crate::wire::{judge, parse, Answer, Ask, Bad, Verb, MAX_REPLY_BYTES};

/// What a caller is handed.
type Reply = oneshot::Sender<Result<Answer, HookError>>;

/// At most this many stderr lines of a serve-mode hook are logged a minute.
pub const STDERR_PER_MINUTE: u32 = 100;

/// Two pipes have no order of their own, so a stderr line read at R is
/// scrubbed only once stdout has been read up to R: its reader found the
/// pipe empty after R (at once when the hook wrote to stdout meanwhile),
/// or, on a stdout quiet all along, this long after R (so a secrets line
/// the hook wrote before the stderr line is known by then).
pub const STDERR_BEHIND: Duration = Duration::from_millis(100);

/// The longest a stderr line waits while stdout is being read.
pub const STDERR_WAIT_MAX: Duration = Duration::from_secs(1);

/// What the stdout reader says of itself: whether it waits on an empty
/// pipe, and when it last found the pipe empty.
#[derive(Clone, Copy, Debug)]
struct StdoutRead {
    waiting: bool,
    empty_at: Instant,
}

/// How many of its last stderr lines a hook that went down is quoted with.
pub const STDERR_TAIL: usize = 3;

/// When, of what and why a process went down.
#[derive(Clone, Debug)]
pub(super) struct Down {
    /// When.
    pub at: Instant,
    /// Of what.
    pub cause: DownCause,
    /// Why, for a person.
    pub why: String,
}

/// One running process of the hook.
pub(super) struct Session {
    label: String,
    /// The provider instance it runs for.
    provider: ModuleId,
    timeout: Duration,
    scrub: Arc<Scrub>,
    hooked: Mutex<Option<Hooked>>,
    stdin: tokio::sync::Mutex<Option<ChildStdin>>,
    table: Mutex<Table<Reply>>,
    /// When and why it went down, once it did.
    down: Mutex<Option<Down>>,
    /// When it first answered a call other than its hello well.
    answered_since: Mutex<Option<Instant>>,
    /// Its last stderr lines, scrubbed and cut.
    tail: Mutex<VecDeque<String>>,
    /// Set when its stderr ended.
    stderr_ended: tokio::sync::watch::Sender<bool>,
    /// How far its stdout has been read.
    stdout_read: tokio::sync::watch::Sender<StdoutRead>,
}

fn locked<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// One line read from a pipe.
enum Line {
    /// A whole line, without its newline.
    Whole(Vec<u8>),
    /// A line longer than the bound (consumed up to the bound).
    TooLong,
    /// The pipe ended.
    End,
}

/// Reads the next line of at most `max` bytes.
async fn next_line<R: AsyncBufRead + Unpin>(
    reader: &mut R,
    max: usize,
    waits: impl Fn(bool),
) -> std::io::Result<Line> {
    let mut line = Vec::new();
    loop {
        // `waits(true)` while the pipe has nothing to read, `waits(false)`
        // once it has.
        std::future::poll_fn(
            |cx| match std::pin::Pin::new(&mut *reader).poll_fill_buf(cx) {
                std::task::Poll::Pending => {
                    waits(true);
                    std::task::Poll::Pending
                }
                std::task::Poll::Ready(read) => std::task::Poll::Ready(read.map(drop)),
            },
        )
        .await?;
        waits(false);
        let buf = reader.fill_buf().await?;
        if buf.is_empty() {
            return Ok(match line.is_empty() {
                true => Line::End,
                false => Line::Whole(line),
            });
        }
        let (take, newline) = match buf.iter().position(|b| *b == b'\n') {
            Some(at) => (at, true),
            None => (buf.len(), false),
        };
        if line.len() + take > max {
            reader.consume(take);
            return Ok(Line::TooLong);
        }
        line.extend_from_slice(&buf[..take]);
        reader.consume(take + usize::from(newline));
        if newline {
            if line.last() == Some(&b'\r') {
                line.pop();
            }
            return Ok(Line::Whole(line));
        }
    }
}

/// Reads and drops the rest of a line.
async fn skip_line<R: AsyncBufRead + Unpin>(reader: &mut R) -> std::io::Result<()> {
    let mut rest = Vec::new();
    reader.read_until(b'\n', &mut rest).await.map(drop)
}

impl Session {
    /// Starts `path serve` and its reader, stderr and watchdog tasks.
    ///
    /// # Errors
    /// The system's error when it cannot be started.
    pub(super) fn start(
        path: &Path,
        label: &str,
        timeout: Duration,
        provider: &ModuleId,
        scrub: Arc<Scrub>,
    ) -> std::io::Result<Arc<Session>> {
        let mut hooked = Hooked::spawn(path, "serve", timeout, provider)?;
        let (stdin, stdout, stderr) = (
            hooked.stdin.take(),
            hooked.stdout.take(),
            hooked.stderr.take(),
        );
        let session = Arc::new(Session {
            label: label.to_owned(),
            provider: provider.clone(),
            timeout,
            scrub,
            hooked: Mutex::new(Some(hooked)),
            stdin: tokio::sync::Mutex::new(stdin),
            table: Mutex::new(Table::default()),
            down: Mutex::new(None),
            answered_since: Mutex::new(None),
            tail: Mutex::new(VecDeque::with_capacity(STDERR_TAIL)),
            stderr_ended: tokio::sync::watch::Sender::new(false),
            stdout_read: tokio::sync::watch::Sender::new(StdoutRead {
                waiting: false,
                empty_at: Instant::now(),
            }),
        });
        if let Some(stdout) = stdout {
            tokio::spawn(Arc::clone(&session).read_replies(stdout));
        }
        match stderr {
            Some(stderr) => drop(tokio::spawn(Arc::clone(&session).log_stderr(stderr))),
            None => {
                session.stderr_ended.send_replace(true);
            }
        }
        tokio::spawn(Arc::clone(&session).watch());
        Ok(session)
    }

    /// When and why it went down, if it did.
    pub(super) fn down(&self) -> Option<Down> {
        locked(&self.down).clone()
    }

    /// When it first answered a call other than its hello well, if it did.
    pub(super) fn answered_since(&self) -> Option<Instant> {
        *locked(&self.answered_since)
    }

    /// Its last stderr lines (at most [`STDERR_TAIL`]), scrubbed, joined
    /// with ` | `; empty when it wrote none.
    pub(super) fn stderr_tail(&self) -> String {
        let joined = {
            let tail = locked(&self.tail);
            tail.iter()
                .map(String::as_str)
                .collect::<Vec<_>>()
                .join(" | ")
        };
        // Scrubbed again: a secret announced since a line was kept.
        match joined.is_empty() {
            true => joined,
            false => self.scrub.text(&joined),
        }
    }

    /// The hook's pid while it runs.
    pub(super) fn pid(&self) -> Option<u32> {
        locked(&self.hooked).as_ref().and_then(Hooked::pid)
    }

    /// Sends `ask` with `id` and waits for its answer, at most the timeout.
    ///
    /// # Errors
    /// [`HookError::TimedOut`], or [`HookError::Lost`] when the hook went
    /// down with the call in flight; a reply to this call that is no
    /// reply for its verb is [`HookError::BadReply`].
    pub(super) async fn call(&self, ask: &Ask<'_>, id: u64) -> Result<Answer, HookError> {
        let verb = ask.verb();
        let (reply, answer) = oneshot::channel();
        {
            let down = locked(&self.down);
            if let Some(down) = down.as_ref() {
                return Err(self.lost(verb, &down.why));
            }
            locked(&self.table).sent(id, verb, reply, Instant::now());
        }
        let line = ask.line(id, &self.provider, self.timeout);
        let exchange = async {
            let wrote = {
                let mut stdin = self.stdin.lock().await;
                match stdin.as_mut() {
                    Some(stdin) => {
                        let mut writing = HalfWritten {
                            session: self,
                            done: false,
                        };
                        let wrote = match stdin.write_all(&line).await {
                            Ok(()) => stdin.flush().await,
                            Err(e) => Err(e),
                        };
                        writing.done = true;
                        wrote
                    }
                    None => Err(std::io::ErrorKind::BrokenPipe.into()),
                }
            };
            if let Err(e) = wrote {
                self.go_down(DownCause::Pipe, format!("could not be written to ({e})"));
            }
            answer.await
        };
        match tokio::time::timeout(self.timeout, exchange).await {
            Ok(Ok(result)) => result,
            Ok(Err(_)) => Err(HookError::Lost {
                hook: self.label.clone(),
                verb,
                why: "the call ended unanswered (the hook was closed)".into(),
            }),
            Err(_) => {
                locked(&self.table).gave_up(id);
                Err(HookError::TimedOut {
                    hook: self.label.clone(),
                    verb,
                    after: humantime::format_duration(self.timeout).to_string(),
                })
            }
        }
    }

    fn lost(&self, verb: Verb, why: &str) -> HookError {
        HookError::Lost {
            hook: self.label.clone(),
            verb,
            why: format!("the hook {why}, with the call in flight"),
        }
    }

    /// Goes down of `cause`, for `why` (once): the process group killed,
    /// its stdin closed, every waiting call failed.
    pub(super) fn go_down(&self, cause: DownCause, why: String) {
        self.end(cause, why, true);
    }

    /// Ends it because the provider stops: as [`go_down`](Self::go_down), quietly.
    pub(super) fn close(&self) {
        self.end(DownCause::Killed, "was closed".into(), false);
    }

    fn end(&self, cause: DownCause, why: String, loud: bool) {
        {
            let mut down = locked(&self.down);
            if down.is_some() {
                return;
            }
            if loud {
                tracing::warn!(hook = %self.label, cause = cause.as_str(), why = %why, "hook went down; it is started again (braked) when next called");
            }
            *down = Some(Down {
                at: Instant::now(),
                cause,
                why: why.clone(),
            });
        }
        if let Some(hooked) = locked(&self.hooked).as_mut() {
            hooked.kill_group();
        }
        if let Ok(mut stdin) = self.stdin.try_lock() {
            stdin.take();
        }
        let waiting = locked(&self.table).fail_all();
        for (verb, reply) in waiting {
            let _ = reply.send(Err(self.lost(verb, &why)));
        }
    }

    /// Reads reply lines until the hook's stdout ends or it babbles.
    async fn read_replies(self: Arc<Self>, stdout: ChildStdout) {
        let mut reader = BufReader::new(stdout);
        let (cause, why) = loop {
            let read = |waiting: bool| {
                self.stdout_read.send_modify(|r| {
                    r.waiting = waiting;
                    if waiting {
                        r.empty_at = Instant::now();
                    }
                })
            };
            let line = match next_line(&mut reader, MAX_REPLY_BYTES, read).await {
                Ok(Line::Whole(line)) => line,
                Ok(Line::TooLong) => {
                    break (
                        DownCause::BadLine,
                        format!("wrote a line larger than {MAX_REPLY_BYTES} bytes; killed"),
                    )
                }
                Ok(Line::End) => {
                    read(true);
                    break self.ended().await;
                }
                Err(e) => break (DownCause::Pipe, format!("could not be read ({e})")),
            };
            if let Err(bad) = self.reply(&line) {
                let bad = bad.scrubbed(|text| self.scrub.text(text));
                break (
                    DownCause::BadLine,
                    format!("wrote a line that is no reply: {bad}; killed"),
                );
            }
        };
        self.go_down(cause, why);
    }

    /// Hands one reply line to its caller (its secrets, if it carries
    /// some, replace the hook's first; a line of secrets alone answers no
    /// call); `Err` when the line is no reply.
    fn reply(&self, line: &[u8]) -> Result<(), Bad> {
        let parsed = parse(line)?;
        if let Some(secrets) = &parsed.secrets {
            self.scrub.set_hook_secrets(secrets.clone());
        }
        if parsed.is_secrets_line() {
            return Ok(());
        }
        let id = parsed.id.ok_or(Bad::NoId)?;
        let answered = locked(&self.table).answered(id);
        match answered {
            Answered::Unknown => Err(Bad::UnknownId(id)),
            Answered::Late(verb) => {
                tracing::debug!(hook = %self.label, verb = %verb, id, "late answer dropped");
                Ok(())
            }
            Answered::Waited(verb, reply) => {
                let judged = judge(verb, &parsed, None).map_err(|what| HookError::BadReply {
                    hook: self.label.clone(),
                    verb,
                    what: what.scrubbed(|text| self.scrub.text(text)),
                });
                if judged.is_ok() && verb != Verb::Hello {
                    locked(&self.answered_since).get_or_insert_with(Instant::now);
                }
                let _ = reply.send(judged);
                Ok(())
            }
        }
    }

    /// Why the hook closed its stdout: its exit, if it comes within a
    /// second (and then its stderr is read to its end, a little longer at
    /// most, so that its last lines say why).
    /// A process ended by a signal it did not raise itself (`kill -9`
    /// from outside, the OOM killer) went down [`DownCause::Killed`];
    /// one that exited, [`DownCause::Exited`].
    async fn ended(&self) -> (DownCause, String) {
        let hooked = locked(&self.hooked).take();
        let Some(mut hooked) = hooked else {
            return (DownCause::Exited, "closed its stdout".into());
        };
        let how = match tokio::time::timeout(Duration::from_secs(1), hooked.wait()).await {
            Ok(Ok(status)) if status.signal().is_some() => (DownCause::Killed, ended(status)),
            Ok(Ok(status)) => (DownCause::Exited, ended(status)),
            _ => (DownCause::Exited, "closed its stdout; killed".into()),
        };
        let mut stderr = self.stderr_ended.subscribe();
        let _ = tokio::time::timeout(
            STDERR_WAIT_MAX + Duration::from_millis(400),
            stderr.wait_for(|ended| *ended),
        )
        .await;
        how
    }

    /// Logs the hook's stderr, each line scrubbed and cut, at most
    /// [`STDERR_PER_MINUTE`] lines a minute, each once stdout was read up
    /// to it ([`STDERR_BEHIND`], at most [`STDERR_WAIT_MAX`])
    /// was read (the pipe is read on meanwhile, so the hook never waits).
    async fn log_stderr(self: Arc<Self>, stderr: ChildStderr) {
        let (lines, queued) = tokio::sync::mpsc::channel::<(Instant, Vec<u8>)>(256);
        let logger = tokio::spawn(Arc::clone(&self).log_lines(queued));
        let mut reader = BufReader::new(stderr);
        loop {
            let line = match next_line(&mut reader, STDERR_KEPT, |_| {}).await {
                Ok(Line::Whole(line)) => line,
                Ok(Line::TooLong) => {
                    if skip_line(&mut reader).await.is_err() {
                        break;
                    }
                    b"(a line longer than 8 KiB, not logged)".to_vec()
                }
                Ok(Line::End) | Err(_) => break,
            };
            if line.trim_ascii().is_empty() {
                continue;
            }
            if lines.send((Instant::now(), line)).await.is_err() {
                break;
            }
        }
        drop(lines);
        let _ = logger.await;
        self.stderr_ended.send_replace(true);
    }

    async fn log_lines(
        self: Arc<Self>,
        mut queued: tokio::sync::mpsc::Receiver<(Instant, Vec<u8>)>,
    ) {
        let (mut window, mut logged, mut dropped) = (Instant::now(), 0u32, 0u32);
        while let Some((read_at, line)) = queued.recv().await {
            // A secret announced on stdout before the line is known by then.
            let mut stdout = self.stdout_read.subscribe();
            let read_up_to_it = |r: &StdoutRead| r.empty_at > read_at;
            let quiet =
                tokio::time::timeout_at(read_at + STDERR_BEHIND, stdout.wait_for(read_up_to_it))
                    .await
                    .is_err();
            if quiet && !self.stdout_read.borrow().waiting {
                // Its reader is busy with what came: wait for it to reach the line.
                let _ = tokio::time::timeout(STDERR_WAIT_MAX, stdout.wait_for(read_up_to_it)).await;
            }
            let text = self.scrub.text(String::from_utf8_lossy(&line).trim_end());
            {
                let mut tail = locked(&self.tail);
                if tail.len() == STDERR_TAIL {
                    tail.pop_front();
                }
                tail.push_back(text.clone());
            }
            if window.elapsed() >= Duration::from_secs(60) {
                if dropped > 0 {
                    tracing::info!(hook = %self.label, dropped, "hook stderr lines not logged (more than {STDERR_PER_MINUTE} a minute)");
                }
                (window, logged, dropped) = (Instant::now(), 0, 0);
            }
            if logged >= STDERR_PER_MINUTE {
                dropped += 1;
                continue;
            }
            logged += 1;
            tracing::info!(hook = %self.label, line = %text, "hook stderr");
        }
    }

    /// Kills the hook when a call is unanswered past twice the timeout.
    async fn watch(self: Arc<Self>) {
        let tick = (self.timeout / 4).clamp(Duration::from_millis(10), Duration::from_secs(5));
        loop {
            tokio::time::sleep(tick).await;
            if self.down().is_some() {
                return;
            }
            let stuck = locked(&self.table).stuck(Instant::now(), self.timeout);
            if let Some((id, verb)) = stuck {
                let twice = humantime::format_duration(self.timeout.saturating_mul(2));
                self.go_down(
                    DownCause::Stuck,
                    format!(
                        "was stuck ({verb} call {id} unanswered past twice the timeout, {twice}); killed"
                    ),
                );
                return;
            }
        }
    }
}

/// A request being written: cut off half way (its call's timeout), it
/// takes the session down, for the next request would follow the half line.
struct HalfWritten<'a> {
    session: &'a Session,
    done: bool,
}

impl Drop for HalfWritten<'_> {
    fn drop(&mut self) {
        if !self.done {
            self.session.go_down(
                DownCause::Pipe,
                "a request was cut off half written (the hook did not read its stdin in time); killed"
                    .into(),
            );
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        if let Some(hooked) = locked(&self.hooked).as_mut() {
            hooked.kill_group();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn lines(input: &[u8], max: usize) -> Vec<String> {
        let mut reader = BufReader::with_capacity(4, input);
        let mut out = Vec::new();
        loop {
            match next_line(&mut reader, max, |_| {}).await.unwrap() {
                Line::Whole(l) => out.push(String::from_utf8(l).unwrap()),
                Line::TooLong => {
                    out.push("<too long>".into());
                    skip_line(&mut reader).await.unwrap();
                }
                Line::End => return out,
            }
        }
    }

    #[tokio::test]
    async fn lines_are_read_whole_and_bounded() {
        assert_eq!(
            lines(b"{\"id\":1}\n\r\n{\"id\":2}\r\nlast", 10).await,
            vec!["{\"id\":1}", "", "{\"id\":2}", "last"]
        );
        assert_eq!(
            lines(b"0123456789\n01234567890123\nok\n", 10).await,
            vec!["0123456789", "<too long>", "ok"]
        );
    }
}
