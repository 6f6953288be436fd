//! # mesh-sdk
//!
//! The provisioner loop every mesh provider embeds, so a provider that keeps
//! failing a consumer says so on the bus instead of only in its journal.
//!
//! A provider implements [`Provisioner`] (make if missing, check, and the
//! retirement methods) and hands it to [`run`] with the shared
//! [`ProviderArgs`]; the loop reads the contributions file and the minted
//! secrets every pass, keeps a [`Standing`] per consumer, retires withdrawn
//! consumers, and publishes `failing` / `recovered` / `retirement` events
//! through JetStream. See `examples/quickstart.rs` for a complete provider.

pub mod args;
pub mod brake;
pub mod bus;
pub mod classify;
pub mod clock;
pub mod contributions;
pub mod event;
pub mod name;
pub mod provisioner;
pub mod redact;
pub mod repair;
pub mod retire;
pub mod runner;
pub mod secret;
pub mod standing;
pub mod testing;

pub use args::ProviderArgs;
pub use async_trait::async_trait;
pub use classify::{classify_words, Class};
pub use clock::{Timestamp, WallClock};
pub use contributions::{Consumer, Contributions, ProviderId};
pub use event::{Event, EventKind};
pub use name::Name;
pub use provisioner::{Held, Provisioner};
pub use redact::redact;
pub use repair::{Probe, Repair, RepairRules};
pub use retire::RetireRules;
pub use runner::{run, PassReport, RunError, Runner, Settings};
pub use secret::Secret;
pub use standing::{Standing, StandingRules};

/// Installs the `tracing` subscriber every provider binary uses: human
/// lines with fields on stderr (colored only on a terminal), filtered by
/// `RUST_LOG` (default `info`). Does nothing when a subscriber is installed.
pub fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_writer(std::io::stderr)
        .try_init();
}
