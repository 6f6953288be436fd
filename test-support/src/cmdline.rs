//! Watching every process's command line while a test runs: none may hold
//! a secret (secrets travel in files and environment variables only).

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// How often `/proc/*/cmdline` is read.
const EVERY: Duration = Duration::from_millis(15);

/// A thread reading `/proc/*/cmdline` every 15 ms until
/// [`finish`](Self::finish): it notes every command line holding one of the
/// watched secrets, and counts the processes whose command line holds a
/// given word (so a test can tell the scan saw the command it is about).
///
/// ```no_run
/// let scan = mesh_test_support::CmdlineScan::start("bootstrap-admin");
/// scan.watch(["the-admin-password".to_owned()]);
/// // ... run what may start processes ...
/// let seen = scan.finish(); // panics if a secret was on a command line
/// assert!(seen >= 1);
/// ```
pub struct CmdlineScan {
    stop: Arc<AtomicBool>,
    secrets: Arc<Mutex<Vec<String>>>,
    found: Arc<Mutex<(usize, Vec<String>)>>,
    thread: Option<JoinHandle<()>>,
}

impl CmdlineScan {
    /// Starts scanning; processes whose command line holds `word` are counted.
    pub fn start(word: &str) -> CmdlineScan {
        let stop = Arc::new(AtomicBool::new(false));
        let secrets = Arc::new(Mutex::new(Vec::<String>::new()));
        let found = Arc::new(Mutex::new((0usize, Vec::new())));
        let thread = std::thread::spawn({
            let (stop, secrets, found) = (stop.clone(), secrets.clone(), found.clone());
            let word = word.to_owned();
            move || {
                let mut counted = HashSet::new();
                while !stop.load(Ordering::SeqCst) {
                    let secrets = secrets.lock().unwrap().clone();
                    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
                        let Ok(raw) = std::fs::read(entry.path().join("cmdline")) else {
                            continue;
                        };
                        let line = String::from_utf8_lossy(&raw).replace('\0', " ");
                        let mut found = found.lock().unwrap();
                        if line.contains(&word) && counted.insert(entry.file_name()) {
                            found.0 += 1;
                        }
                        for (i, secret) in secrets.iter().enumerate() {
                            if !secret.is_empty() && line.contains(secret.as_str()) {
                                found.1.push(format!(
                                    "secret #{i} on the command line of pid {:?}",
                                    entry.file_name()
                                ));
                            }
                        }
                    }
                    std::thread::sleep(EVERY);
                }
            }
        });
        CmdlineScan {
            stop,
            secrets,
            found,
            thread: Some(thread),
        }
    }

    /// Adds secrets to look for.
    pub fn watch(&self, more: impl IntoIterator<Item = String>) {
        self.secrets.lock().unwrap().extend(more);
    }

    /// Stops; how many processes held the word, after asserting that no
    /// command line held a secret.
    pub fn finish(mut self) -> usize {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(thread) = self.thread.take() {
            thread.join().expect("the command line scan panicked");
        }
        let found = self.found.lock().unwrap();
        assert!(found.1.is_empty(), "{:?}", found.1);
        found.0
    }
}

impl Drop for CmdlineScan {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}
