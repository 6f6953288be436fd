//! The one log subscriber of every mesh binary.

/// Installs the `tracing` subscriber every mesh binary uses: human lines
/// with fields on stderr (colored only on a terminal), filtered by
/// `RUST_LOG`, else `default_level` (e.g. `info`). Does nothing when a
/// subscriber is installed already.
pub fn init_tracing(default_level: &str) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default_level));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_writer(std::io::stderr)
        .try_init();
}
