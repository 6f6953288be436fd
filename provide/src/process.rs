//! A hook process: started in a process group of its own, so that a hook
//! that runs past its time is killed with everything it started, with its
//! three pipes, and without mesh's own settings in its environment.

use std::ffi::OsStr;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::process::{Child, ChildStderr, ChildStdin, ChildStdout, Command};

use mesh_sdk::ModuleId;

use crate::scrub::Scrub;

/// How much of a hook's stderr is kept for one exec call (the rest is read
/// and dropped, so the hook never blocks on a full pipe).
pub const STDERR_KEPT: usize = 8 * 1024;

/// At most this many stderr lines of one exec call are logged.
pub const STDERR_LINES: usize = 20;

/// The variable that tells a hook how long mesh-provide waits for each
/// reply, in milliseconds (every request says it again as `deadline_ms`).
pub const TIMEOUT_VAR: &str = "MESH_HOOK_TIMEOUT_MS";

/// The variable that tells a hook which provider instance it runs for,
/// `module@machine` (every request says it again as `provider`, which is
/// the one to act on).
pub const PROVIDER_VAR: &str = "MESH_PROVIDER";

/// Environment variables a hook does not inherit: mesh's own settings (the
/// bus, the files) are none of its business. Its own configuration comes
/// through any other variable.
fn is_mesh_setting(key: &OsStr) -> bool {
    key.as_bytes().starts_with(b"MESH_")
}

/// A running hook process, killed with its whole process group when
/// dropped before it was reaped.
pub struct Hooked {
    child: Child,
    /// The process group (the hook's own pid), while it is not reaped.
    group: Option<rustix::process::Pid>,
    /// Its stdin, until taken.
    pub stdin: Option<ChildStdin>,
    /// Its stdout, until taken.
    pub stdout: Option<ChildStdout>,
    /// Its stderr, until taken.
    pub stderr: Option<ChildStderr>,
}

impl Hooked {
    /// Starts `path arg` in a process group of its own, its three pipes
    /// open, without the `MESH_*` variables in its environment but for
    /// [`TIMEOUT_VAR`], the call `timeout`, and [`PROVIDER_VAR`], the
    /// provider instance it runs for.
    ///
    /// # Errors
    /// The system's error when it cannot be started.
    pub fn spawn(
        path: &Path,
        arg: &str,
        timeout: Duration,
        provider: &ModuleId,
    ) -> io::Result<Hooked> {
        let mut command = Command::new(path);
        command
            .arg(arg)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true);
        for (key, _) in std::env::vars_os() {
            if is_mesh_setting(&key) {
                command.env_remove(key);
            }
        }
        command.env(TIMEOUT_VAR, timeout.as_millis().to_string());
        command.env(PROVIDER_VAR, provider.to_string());
        let mut child = command.spawn()?;
        let group = child
            .id()
            .and_then(|id| i32::try_from(id).ok())
            .and_then(rustix::process::Pid::from_raw);
        Ok(Hooked {
            stdin: child.stdin.take(),
            stdout: child.stdout.take(),
            stderr: child.stderr.take(),
            child,
            group,
        })
    }

    /// Kills the whole process group (SIGKILL), if the hook was not reaped yet.
    pub fn kill_group(&mut self) {
        if let Some(group) = self.group {
            let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
        }
    }

    /// Waits for the hook to end; it is then reaped (its group is no longer
    /// killed on drop: its pid may be another process's soon).
    pub async fn wait(&mut self) -> io::Result<ExitStatus> {
        let status = self.child.wait().await;
        if status.is_ok() {
            self.group = None;
        }
        status
    }

    /// Its process group, while it is not reaped.
    pub fn group(&self) -> Option<rustix::process::Pid> {
        self.group
    }

    /// The hook's pid, while it is not reaped.
    pub fn pid(&self) -> Option<u32> {
        self.group.and_then(|_| self.child.id())
    }
}

impl Drop for Hooked {
    fn drop(&mut self) {
        // Reaping is tokio's (`kill_on_drop`); the group goes first.
        self.kill_group();
    }
}

/// Reads at most `limit` bytes: `Ok(None)` when there were more.
pub async fn read_at_most<R: AsyncRead + Unpin>(
    reader: R,
    limit: usize,
) -> io::Result<Option<Vec<u8>>> {
    let mut bytes = Vec::new();
    let bound = u64::try_from(limit).unwrap_or(u64::MAX).saturating_add(1);
    reader.take(bound).read_to_end(&mut bytes).await?;
    Ok((bytes.len() <= limit).then_some(bytes))
}

/// Reads the first [`STDERR_KEPT`] bytes and drops the rest until the end.
pub async fn read_stderr(mut stderr: ChildStderr) -> Vec<u8> {
    let mut kept = Vec::new();
    let bound = u64::try_from(STDERR_KEPT).unwrap_or(u64::MAX);
    let _ = (&mut stderr).take(bound).read_to_end(&mut kept).await;
    let _ = tokio::io::copy(&mut stderr, &mut tokio::io::sink()).await;
    kept
}

/// The non-empty lines of a hook's stderr, each scrubbed and cut.
pub fn stderr_lines(bytes: &[u8], scrub: &Scrub) -> Vec<String> {
    String::from_utf8_lossy(bytes)
        .lines()
        .map(str::trim_end)
        .filter(|line| !line.is_empty())
        .map(|line| scrub.text(line))
        .collect()
}

/// How a hook ended, for a person: `exited with status 3`, `was killed by signal 9`.
pub fn ended(status: ExitStatus) -> String {
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exited with status {code}"),
        (None, Some(signal)) => format!("was killed by signal {signal}"),
        (None, None) => format!("ended ({status})"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mesh_settings_are_not_a_hooks_business() {
        for (key, mesh) in [
            ("MESH_NATS_URL", true),
            ("MESH_CONTRIBUTIONS", true),
            ("REDIS_ACL_ADMIN_PASSWORD_FILE", false),
            ("PATH", false),
            ("XMESH_Y", false),
        ] {
            assert_eq!(is_mesh_setting(OsStr::new(key)), mesh, "{key}");
        }
    }

    #[test]
    fn stderr_lines_are_scrubbed_cut_and_blank_ones_dropped() {
        let scrub = Scrub::default();
        scrub.set_hook_secrets(vec![mesh_sdk::Secret::new("admin-pw")]);
        let text = format!(
            "first\n\n  \nAUTH admin admin-pw failed\n{}\n",
            "z".repeat(300)
        );
        let lines = stderr_lines(text.as_bytes(), &scrub);
        assert_eq!(lines.len(), 3, "{lines:?}");
        assert_eq!(lines[1], "AUTH admin [redacted] failed");
        assert_eq!(lines[2].chars().count(), 200);
    }

    #[tokio::test]
    async fn reading_stops_past_the_bound() {
        let bytes = [b'a'; 100];
        assert_eq!(
            read_at_most(&bytes[..], 100)
                .await
                .unwrap()
                .map(|b| b.len()),
            Some(100)
        );
        assert_eq!(read_at_most(&bytes[..], 99).await.unwrap(), None);
    }
}
