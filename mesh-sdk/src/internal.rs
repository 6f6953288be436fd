//! Shared by the crates of the mesh workspace (controller, providers,
//! benches); not part of the SDK's promise to provider authors, and free to
//! change with them.

pub use crate::brake::Backoff;
pub use crate::bus::{
    connect, connect_as, connect_options, publish_loop, BusError, BusOptions, EventSink,
    JetStreamSink, Key, Outbox, Pending, ServerListError, SinkError,
};
pub use crate::classify::classify_words;
pub use crate::clock::WallClock;
pub use crate::contributions::{Contributions, Source};
pub use crate::health::Progress;
pub use crate::metrics::LoopMetrics;
pub use crate::observe::{listen, serve as serve_endpoints, Check, Endpoints, ListenError};
pub use crate::redact::{cut, error_words, redact, shown_url};
pub use crate::secret::{
    read_admin_password, FileSecrets, PasswordFileError, SecretError, SecretSource,
};
pub use crate::standing::{Greeting, NewsRules, Streak, Threshold, Tracker};
pub use crate::tracing_init::{init_tracing, LogFormat};
