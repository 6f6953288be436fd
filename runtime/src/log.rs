//! The one log subscriber of every mesh binary: on stderr, filtered by
//! `RUST_LOG`, written as text or JSON (`--log-format`, [`LogArgs`];
//! docs/contracts/metrics.md#logs).

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
pub fn init_tracing(default_level: &str, format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| default_filter(default_level));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    let _ = match format {
        LogFormat::Text => builder
            .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
            .try_init(),
        LogFormat::Json => builder
            .json()
            .flatten_event(true)
            .with_current_span(false)
            .try_init(),
    };
}

/// The filter without `RUST_LOG`: `default_level`, and `warn` for
/// async-nats, which logs each failed connection attempt (every 2 s while
/// the bus is away) at `info`; the event callback says what matters of
/// them (`mesh_runtime::nats`).
fn default_filter(default_level: &str) -> tracing_subscriber::EnvFilter {
    tracing_subscriber::EnvFilter::new(format!("{default_level},async_nats=warn"))
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
