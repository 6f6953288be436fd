//! What `mesh-controller status` says of a [`Mesh`], read and waited for.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::{Mesh, Options, Process, SERVED, WAIT};

impl Mesh {
    /// `status --json`, or `None` while the store cannot be read.
    pub fn status(&self) -> Option<Value> {
        let (code, out, _) = self.controller(&["status", "--json"]);
        (code == 0).then(|| serde_json::from_str(&out).expect("status --json prints JSON"))
    }

    /// The entries of `history --json` (with `args`, e.g. a consumer or
    /// `--provider P`) of `kind`, newest first.
    pub fn history_entries(&self, args: &[&str], kind: &str) -> Vec<Value> {
        let asked = [&["history", "--json"][..], args].concat();
        let (code, out, err) = self.controller(&asked);
        assert_eq!(code, 0, "history: {err}");
        let history: Value = serde_json::from_str(&out).expect("history --json is JSON");
        history["entries"]
            .as_array()
            .expect("entries")
            .iter()
            .filter(|e| e["kind"] == kind)
            .cloned()
            .collect()
    }

    /// Waits until `status --json` satisfies `want`; panics with the logs otherwise.
    pub fn wait_status(&self, what: &str, want: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + WAIT;
        let mut last = None;
        while Instant::now() < deadline {
            if let Some(status) = self.status() {
                if want(&status) {
                    return status;
                }
                last = Some(status);
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        panic!(
            "status never showed {what}; last: {last:#?}\n{}",
            self.logs(usize::MAX)
        );
    }

    /// The provider's log so far (it is read, never trusted for state).
    pub fn provider_log(&self) -> String {
        self.provider
            .as_ref()
            .map(Process::log_text)
            .unwrap_or_default()
    }

    /// The last `lines` lines of the log of each process started (the
    /// providers, the grants agent, the controller), each under a
    /// `--- NAME log:` line.
    pub fn logs(&self, lines: usize) -> String {
        [
            &self.provider,
            &self.identity,
            &self.hook,
            &self.grants,
            &self.controller,
        ]
        .into_iter()
        .flatten()
        .map(|p| {
            format!(
                "--- {} log:\n{}\n",
                p.name,
                crate::tail(&p.log_text(), lines)
            )
        })
        .collect()
    }
}

/// Waits until the provider's log says `text` at least `times` times.
pub fn wait_log(mesh: &Mesh, text: &str, times: usize) {
    wait_said("the provider", || mesh.provider_log(), text, times);
}

/// Waits until the hook provider's log holds `text` at least `times` times.
pub fn wait_hook_log(mesh: &Mesh, text: &str, times: usize) {
    wait_said("the hook's log", || mesh.hook_log(), text, times);
}

/// Waits (at most [`WAIT`]) until `log()` holds `text` at least `times`
/// times; else panics, saying "`who` never said …" and the log.
fn wait_said(who: &str, log: impl Fn() -> String, text: &str, times: usize) {
    let deadline = Instant::now() + WAIT;
    while log().matches(text).count() < times {
        assert!(
            Instant::now() < deadline,
            "{who} never said {text:?} {times} times:\n{}",
            log()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A mesh made of `options` whose consumers have been served once, and
/// whose provider the controller has heard from (until then status rightly
/// says it is not).
pub fn healthy_mesh_with(options: Options) -> Mesh {
    let mut mesh = Mesh::with(options);
    mesh.start_controller();
    mesh.start_provider();
    wait_log(&mesh, SERVED, mesh.consumers.len());
    // A controller that never caught up calls nobody unheard: wait for it
    // to follow as well.
    mesh.wait_status("the controller following, postgres@db-1 heard from", |s| {
        s["controller"]["following"] == true && !unheard(s).contains(&"postgres@db-1".to_owned())
    });
    mesh
}

/// The consumers `status --json` names as failing.
pub fn failing(status: &Value) -> Vec<String> {
    let mut names: Vec<String> = status["failing"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|f| f["consumer"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// The providers `status --json` names as not heard from, `module@machine`.
pub fn unheard(status: &Value) -> Vec<String> {
    let mut names: Vec<String> = status["unheard"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|u| {
                    format!(
                        "{}@{}",
                        u["provider_module"].as_str().unwrap_or("?"),
                        u["provider_machine"].as_str().unwrap_or("?")
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// An RFC 3339 time of `status --json`.
pub fn time(value: &Value) -> std::time::SystemTime {
    let text = value
        .as_str()
        .unwrap_or_else(|| panic!("not a time: {value}"));
    humantime::parse_rfc3339_weak(text).unwrap_or_else(|e| panic!("{text}: {e}"))
}

/// Whether `status` is all well.
pub fn all_well(status: &Value) -> bool {
    status["all_well"] == json!(true)
}
