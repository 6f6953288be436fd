//! The one log subscriber of every mesh binary: on stderr, filtered by
//! `RUST_LOG`, written as text or JSON (`--log-format`, [`LogArgs`];
//! docs/contracts/metrics.md#logs).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// `--log-format text|json` (`MESH_LOG_FORMAT`), the same on every mesh
/// binary; given before or after a subcommand.
#[derive(clap::Args, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LogArgs {
    /// How log lines are written: text (key=value fields) or json (one object a line).
    #[arg(
        id = "log_format",
        long = "log-format",
        env = "MESH_LOG_FORMAT",
        value_enum,
        default_value_t = LogFormat::Text,
        global = true
    )]
    pub format: LogFormat,
}

/// How log lines are written (`--log-format`, `MESH_LOG_FORMAT`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// Human lines with fields (`key=value`); colored only on a terminal.
    #[default]
    Text,
    /// One JSON object a line: `timestamp`, `level`, `target`, `message`
    /// and the same fields as the text lines, at the top level.
    Json,
}

/// Installs the `tracing` subscriber every mesh binary uses, on stderr,
/// filtered by `RUST_LOG`, else `default_level` (e.g. `info`) with the NATS
/// client's own lines (target `async_nats`) at `warn`. Does nothing when a
/// subscriber is installed already.
///
/// The NATS client's warnings and errors pass [`ClientRepeats`]: each said
/// at most once every 5 minutes (it says a refused password at every
/// attempt, 2 s apart; the event callback says what to fix).
pub fn init_tracing(default_level: &str, format: LogFormat) {
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| default_filter(default_level));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    let _ = match format {
        LogFormat::Text => builder
            .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
            .finish()
            .with(ClientRepeats::default())
            .try_init(),
        LogFormat::Json => builder
            .json()
            .flatten_event(true)
            .with_current_span(false)
            .finish()
            .with(ClientRepeats::default())
            .try_init(),
    };
}

/// A layer that lets each warning or error of the NATS client (target
/// `async_nats…`) through at most once every [`ClientRepeats::every`]
/// (same target and message): the client says a refused password or an
/// unreachable server at every attempt, 2 s apart, and the event callback
/// (`mesh_runtime::nats`) already says what matters of them and what to
/// fix. Other lines pass untouched.
#[derive(Debug)]
pub struct ClientRepeats {
    every: Duration,
    said: Mutex<HashMap<(String, String), Instant>>,
}

/// The most distinct lines [`ClientRepeats`] remembers (then it forgets all).
const REMEMBERED: usize = 64;

impl Default for ClientRepeats {
    /// Once every 5 minutes.
    fn default() -> Self {
        ClientRepeats::every(Duration::from_secs(300))
    }
}

impl ClientRepeats {
    /// Each line at most once every `every`.
    pub fn every(every: Duration) -> ClientRepeats {
        ClientRepeats {
            every,
            said: Mutex::new(HashMap::new()),
        }
    }

    /// Whether a line of `target` saying `message` at `now` is said (pure
    /// but for what it remembers).
    fn passes(&self, target: &str, message: String, now: Instant) -> bool {
        let mut said = self.said.lock().unwrap_or_else(|e| e.into_inner());
        let key = (target.to_owned(), message);
        match said.get(&key) {
            Some(at) if now.saturating_duration_since(*at) < self.every => false,
            _ => {
                if said.len() >= REMEMBERED {
                    said.clear();
                }
                said.insert(key, now);
                true
            }
        }
    }
}

/// The `message` field of an event.
struct Message(String);

impl tracing::field::Visit for Message {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            self.0 = format!("{value:?}");
        }
    }
}

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for ClientRepeats {
    fn event_enabled(
        &self,
        event: &tracing::Event<'_>,
        _: tracing_subscriber::layer::Context<'_, S>,
    ) -> bool {
        let meta = event.metadata();
        if !meta.target().starts_with("async_nats") || *meta.level() > tracing::Level::WARN {
            return true;
        }
        let mut message = Message(String::new());
        event.record(&mut message);
        self.passes(meta.target(), message.0, Instant::now())
    }
}

/// The filter without `RUST_LOG`: `default_level`, and `warn` for
/// async-nats, which logs each failed connection attempt (every 2 s while
/// the bus is away) at `info`; the event callback says what matters of
/// them (`mesh_runtime::nats`).
fn default_filter(default_level: &str) -> tracing_subscriber::EnvFilter {
    tracing_subscriber::EnvFilter::new(format!("{default_level},async_nats=warn"))
}

#[cfg(test)]
mod repeats_tests {
    use super::*;

    #[test]
    fn a_client_line_is_said_once_every_so_often() {
        let repeats = ClientRepeats::every(Duration::from_secs(300));
        let start = Instant::now();
        let at = |s| start + Duration::from_secs(s);
        let t = "async_nats::connector";
        // (target, message, seconds from start, said)
        let cases = [
            (t, "authorization violation", 0, true),
            (t, "authorization violation", 2, false),
            (t, "connection closed unexpectedly", 4, true),
            ("async_nats", "authorization violation", 4, true),
            (t, "authorization violation", 299, false),
            (t, "authorization violation", 300, true),
            (t, "authorization violation", 302, false),
        ];
        for (target, message, s, said) in cases {
            assert_eq!(
                repeats.passes(target, message.to_owned(), at(s)),
                said,
                "{target} {message} at {s} s"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use tracing_subscriber::layer::SubscriberExt;

    use super::*;

    /// Records the target of every event it is given.
    struct Targets(Arc<Mutex<Vec<String>>>);

    impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Targets {
        fn on_event(
            &self,
            event: &tracing::Event<'_>,
            _: tracing_subscriber::layer::Context<'_, S>,
        ) {
            let target = event.metadata().target().to_owned();
            self.0.lock().unwrap().push(target);
        }
    }

    #[test]
    fn the_nats_clients_own_info_lines_are_left_out_by_default() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let subscriber = tracing_subscriber::registry()
            .with(default_filter("info"))
            .with(Targets(Arc::clone(&seen)));
        tracing::subscriber::with_default(subscriber, || {
            tracing::info!(target: "async_nats", "event: client error: nats: IO error");
            tracing::warn!(target: "async_nats", "a warning");
            tracing::info!(target: "mesh_runtime::nats::callback", "connected to the bus");
        });
        assert_eq!(
            *seen.lock().unwrap(),
            ["async_nats", "mesh_runtime::nats::callback"]
        );
    }
}
