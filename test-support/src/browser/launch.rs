//! Starting the browser: where chromium and chromedriver are, how chromium
//! runs, chromedriver in a process group of its own, and what is left to
//! kill when it ends.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::{find_in_path_or, free_port, wait_ready, START_ATTEMPTS};

/// Where chromium's binary is looked for when it is not on `PATH`. Debian's
/// `/usr/bin/chromium` is a shell wrapper; the binary itself is preferred.
const CHROMIUM: &[&str] = &["/usr/lib/chromium/chromium", "/usr/bin/chromium"];

/// Why [`Browser::start`](super::Browser::start) could not start: chromium
/// or chromedriver is not installed. Tests turn it into a `SKIPPED` line
/// ([`Browser::start_or_skip`](super::Browser::start_or_skip)); every other
/// failure to start panics.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrowserMissing(pub String);

impl std::fmt::Display for BrowserMissing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for BrowserMissing {}

/// Spawns chromedriver on a free port (a fresh one when the port turns out
/// taken) in a process group of its own, its log at `log` and chromium's
/// own settings, caches and crash reports under `dir`; the child and its
/// port, or `None` when it did not start.
pub(super) fn spawn_driver(driver: &Path, dir: &Path, log: &Path) -> Option<(Child, u16)> {
    for attempt in 1..=START_ATTEMPTS {
        let port = free_port();
        let file = std::fs::File::create(log).expect("creating chromedriver's log");
        let mut command = Command::new(driver);
        command
            .arg(format!("--port={port}"))
            .env("XDG_CONFIG_HOME", dir.join("config"))
            .env("XDG_CACHE_HOME", dir.join("cache"))
            .stdin(Stdio::null())
            .stdout(file.try_clone().expect("cloning the log file handle"))
            .stderr(file);
        std::os::unix::process::CommandExt::process_group(&mut command, 0);
        let child = command.spawn().expect("starting chromedriver");
        match wait_ready(child, log, "was started successfully") {
            Ok(child) => return Some((child, port)),
            Err(true) if attempt < START_ATTEMPTS => continue,
            Err(_) => return None,
        }
    }
    None
}

/// Kills every process whose command line holds `marker`, until none is
/// left (at most 5 s).
pub(super) fn sweep(marker: &str) {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let left = naming(marker);
        if left.is_empty() || Instant::now() >= deadline {
            return;
        }
        for pid in left {
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The processes whose command line holds `marker` (a zombie's is empty).
fn naming(marker: &str) -> Vec<rustix::process::Pid> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| {
            let pid = entry.file_name().to_str()?.parse::<i32>().ok()?;
            let line = std::fs::read(entry.path().join("cmdline")).ok()?;
            let holds = String::from_utf8_lossy(&line).contains(marker);
            holds.then(|| rustix::process::Pid::from_raw(pid)).flatten()
        })
        .collect()
}

/// A command the session's endpoint `path` takes as a JSON `body` (POST).
#[derive(Debug)]
pub(super) struct SessionPost {
    pub(super) path: &'static str,
    pub(super) body: Value,
}

impl fantoccini::wd::WebDriverCompatibleCommand for SessionPost {
    fn endpoint(
        &self,
        base_url: &url::Url,
        session_id: Option<&str>,
    ) -> Result<url::Url, url::ParseError> {
        let session = session_id.unwrap_or_default();
        base_url.join(&format!("session/{session}/{}", self.path))
    }

    fn method_and_body(&self, _request_url: &url::Url) -> (http::Method, Option<String>) {
        (http::Method::POST, Some(self.body.to_string()))
    }
}

/// chromium's and chromedriver's paths, or what to install.
pub(super) fn binaries() -> Result<(PathBuf, PathBuf), BrowserMissing> {
    let chromium = CHROMIUM
        .iter()
        .map(PathBuf::from)
        .find(|path| crate::is_executable(path))
        .or_else(|| find_in_path_or("chromium", &[]));
    let driver = find_in_path_or("chromedriver", &["/usr/bin/chromedriver"]);
    let mut missing = Vec::new();
    if chromium.is_none() {
        missing.push("chromium");
    }
    if driver.is_none() {
        missing.push("chromium-driver");
    }
    match (chromium, driver) {
        (Some(chromium), Some(driver)) => Ok((chromium, driver)),
        _ => Err(BrowserMissing(format!(
            "no headless browser: the Debian packages {} are missing \
             (bash -c '. scripts/lib.sh; ensure_browser' installs them)",
            missing.join(" and ")
        ))),
    }
}

/// The session's capabilities: which chromium, and how it runs.
pub(super) fn capabilities(
    chromium: &Path,
    profile: &Path,
    root: bool,
) -> fantoccini::wd::Capabilities {
    let mut args = vec![
        "--headless=new".to_owned(),
        "--disable-gpu".to_owned(),
        format!("--user-data-dir={}", profile.display()),
        // Nothing resolves but 127.0.0.1 and localhost: a page that loads
        // from elsewhere shows it.
        "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1, EXCLUDE localhost".to_owned(),
        "--disable-background-networking".to_owned(),
        "--disable-component-update".to_owned(),
        "--disable-sync".to_owned(),
        "--disable-extensions".to_owned(),
        "--disable-dev-shm-usage".to_owned(),
        "--no-first-run".to_owned(),
        "--no-default-browser-check".to_owned(),
        "--hide-scrollbars".to_owned(),
        "--force-device-scale-factor=1".to_owned(),
    ];
    if root {
        // Chromium's sandbox refuses to run as root.
        args.push("--no-sandbox".to_owned());
    }
    let caps = json!({
        "browserName": "chrome",
        "goog:chromeOptions": {
            "binary": chromium.display().to_string(),
            "args": args,
        },
    });
    match caps {
        Value::Object(map) => map,
        _ => unreachable!("a JSON object literal"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chromium_runs_headless_privately_and_unsandboxed_only_as_root() {
        let args = |root| {
            capabilities(Path::new("/c"), Path::new("/p"), root)["goog:chromeOptions"]["args"]
                .as_array()
                .unwrap()
                .iter()
                .map(|arg| arg.as_str().unwrap().to_owned())
                .collect::<Vec<_>>()
        };
        let user = args(false);
        for want in ["--headless=new", "--disable-gpu", "--user-data-dir=/p"] {
            assert!(user.iter().any(|arg| arg == want), "{want} in {user:?}");
        }
        assert!(!user.iter().any(|arg| arg == "--no-sandbox"));
        assert!(args(true).iter().any(|arg| arg == "--no-sandbox"));
    }
}
