//! The built binaries of the workspace as child processes.

use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// What a provider's log says when a consumer is served (its first good
/// pass, or a recovery).
pub const SERVED: &str = "publishing recovered";

/// A built binary of the workspace (`target/<profile>/NAME`).
///
/// It is found beside the running executable: a test runs from
/// `target/<profile>/deps`, a binary of the workspace (the demo) from
/// `target/<profile>`. `scripts/test` and `scripts/demo` build them first
/// (`cargo build --workspace --bins`).
///
/// # Panics
/// When the binary is not built, saying how to build it.
pub fn binary(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("the running executable's path");
    let mut dir = exe.parent().expect("the running executable's folder");
    if dir.ends_with("deps") {
        dir = dir.parent().expect("target/<profile>");
    }
    let path = dir.join(name);
    assert!(
        path.exists(),
        "{} is not built: run `cargo build --workspace --bins` first (scripts/test does)",
        path.display()
    );
    path
}

/// A running child process, its stdout discarded and its stderr (the log,
/// at `RUST_LOG=info` unless the command sets it) in a file; stopped (SIGTERM, then SIGKILL) on drop.
pub struct Process {
    /// What it is, for messages (`controller`, `provider`, …).
    pub name: &'static str,
    child: Child,
    /// The file its stderr goes to.
    pub log: PathBuf,
}

impl Process {
    /// Starts `command` as `name`, its stderr written to `log` (created
    /// anew).
    ///
    /// # Panics
    /// When the log file cannot be created or the command cannot start.
    pub fn spawn(name: &'static str, mut command: Command, log: PathBuf) -> Process {
        let file = std::fs::File::create(&log).expect("process log file");
        if !command.get_envs().any(|(key, _)| key == "RUST_LOG") {
            command.env("RUST_LOG", "info");
        }
        command.stdout(Stdio::null()).stderr(file);
        let child = command
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {name}: {e}"));
        Process { name, child, log }
    }

    /// Kills it with SIGKILL (no last word, no cleanup) and waits for it to end.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Stops it with SIGTERM and waits for it to end (SIGKILL after 15 s).
    pub fn stop(&mut self) {
        let pid = self.child.id().to_string();
        let _ = Command::new("kill").args(["-TERM", &pid]).status();
        let deadline = Instant::now() + Duration::from_secs(15);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Sends it SIGTERM and returns at once (see [`Process::wait_exit`]).
    pub fn terminate(&self) {
        self.signal(rustix::process::Signal::TERM);
    }

    /// Sends it SIGINT (as Ctrl-C does) and returns at once.
    pub fn interrupt(&self) {
        self.signal(rustix::process::Signal::INT);
    }

    fn signal(&self, signal: rustix::process::Signal) {
        let pid = rustix::process::Pid::from_child(&self.child);
        let _ = rustix::process::kill_process(pid, signal);
    }

    /// Waits up to `within` for it to end: its exit status, or `None` when
    /// it still runs then (it is left running).
    pub fn wait_exit(&mut self, within: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + within;
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Some(status);
            }
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Whether it has ended.
    pub fn is_dead(&mut self) -> bool {
        !matches!(self.child.try_wait(), Ok(None))
    }

    /// Its log so far.
    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// How many times a provider's log says it served a consumer (a
    /// consumer's first good pass and every recovery).
    pub fn served(&self) -> usize {
        self.log_text().matches(SERVED).count()
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            self.stop();
        }
    }
}
