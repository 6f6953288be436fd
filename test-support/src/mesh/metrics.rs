//! What `serve` exports of the report (`mesh_status_*` at its
//! `/metrics`), read and held against what `status --json` says.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::Mesh;

/// How long `status` and `serve`'s gauges may take to agree: a few of
/// `--status-every`, and a status run under load.
const AGREE_WITHIN: Duration = Duration::from_secs(15);

/// The samples of a Prometheus text body: `name{labels}` (as written) to value.
pub fn samples(text: &str) -> BTreeMap<String, f64> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let (key, value) = l.rsplit_once(' ')?;
            Some((key.to_owned(), value.parse().ok()?))
        })
        .collect()
}

/// The clause counts `status --json` implies, by the `clause` label of
/// `mesh_status_clauses`.
pub fn clauses_of(status: &Value) -> BTreeMap<&'static str, u64> {
    let len = |v: &Value| v.as_array().map_or(0, |a| a.len() as u64);
    let retired = |action: &str| {
        status["retired"].as_array().map_or(0, |a| {
            a.iter().filter(|r| r["action"] == action).count() as u64
        })
    };
    BTreeMap::from([
        (
            "controller_not_following",
            u64::from(status["controller"]["following"] == false),
        ),
        ("consumers_failing", len(&status["failing"])),
        ("providers_unheard", len(&status["unheard"])),
        ("consumers_retiring", len(&status["retiring"])),
        ("consumers_retired", retired("retired")),
        ("consumers_deleted", retired("deleted")),
        ("providers_catching_up", len(&status["catching_up"])),
        ("input_refused", len(&status["input_refused"])),
        ("repair_faults_open", len(&status["repairs"])),
        ("grants_unreachable", len(&status["grants"]["unreachable"])),
        ("declaration_refused", len(&status["declaration_errors"])),
    ])
}

impl Mesh {
    /// `serve`'s `/metrics` now, or `None` when it does not answer 200.
    pub fn serve_metrics(&self) -> Option<BTreeMap<String, f64>> {
        let mut stream = TcpStream::connect(("127.0.0.1", self.serve_metrics_port)).ok()?;
        stream.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
        stream
            .write_all(b"GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
            .ok()?;
        let mut answer = String::new();
        stream.read_to_string(&mut answer).ok()?;
        let (head, body) = answer.split_once("\r\n\r\n")?;
        head.lines()
            .next()
            .is_some_and(|l| l.contains(" 200 "))
            .then(|| samples(body))
    }

    /// Waits until `serve`'s status gauges say what `status --json` says
    /// (all well or not, and the count of every clause, looked at the same
    /// moment), and that `want` holds of that status; returns the status.
    /// Panics with both and the logs when they never agree.
    pub fn wait_metrics_agree(&self, what: &str, want: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + AGREE_WITHIN;
        let mut last = None;
        while Instant::now() < deadline {
            if let (Some(status), Some(metrics)) = (self.status(), self.serve_metrics()) {
                let all_well = status["all_well"] == true;
                let mut agree = metrics.get("mesh_status_all_well") == Some(&f64::from(all_well));
                for (clause, n) in clauses_of(&status) {
                    let key = format!("mesh_status_clauses{{clause=\"{clause}\"}}");
                    agree &= metrics.get(&key) == Some(&(n as f64));
                }
                if agree && want(&status) {
                    return status;
                }
                last = Some((status, metrics));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!(
            "serve's metrics never agreed with status on {what}; last: {last:#?}\n{}",
            self.logs(80)
        );
    }
}
