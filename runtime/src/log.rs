//! The one log subscriber of every mesh binary: on stderr, filtered by
//! `RUST_LOG`, written as text or JSON (`--log-format`, [`LogArgs`];
//! docs/contracts.md, section 9).

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
/// filtered by `RUST_LOG`, else `default_level` (e.g. `info`). Does
/// nothing when a subscriber is installed already.
pub fn init_tracing(default_level: &str, format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default_level));
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
