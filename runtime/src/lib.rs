//! # mesh-runtime
//!
//! What every mesh binary shares, promised as it is documented here: the
//! pieces a program that runs on the mesh's bus is made of, whoever wrote
//! it. The mesh's own binaries (`mesh-controller`, `mesh-grants`, the
//! providers `mesh-postgres` and `mesh-identity`) are built on it, and so
//! can a tool of yours that publishes events or serves the mesh's
//! endpoints.
//!
//! **Writing a provider?** Use `mesh-sdk`: its loop and `ProviderMain` are
//! built on this crate, and it re-exports what a provider author needs
//! from here (`Secret`, `LogFormat`, `NatsArgs`, …). **Only reading the
//! bus?** `mesh-protocol` alone has the subjects and bodies, with no
//! runtime.
//!
//! | module | what |
//! | --- | --- |
//! | [`program`] | the one program shell: flags, log subscriber, runtime, signals, exit code, the reason written once ([`Program`]) |
//! | [`stop`] | a stop asked of a running program ([`Stop`]) |
//! | [`log`] | the one log subscriber (`RUST_LOG`, `--log-format text\|json`) |
//! | [`nats`] | how a mesh client reaches NATS: the transport flags ([`NatsArgs`]: servers of one cluster, credentials, TLS), the connection, the event callback that logs what the server refuses |
//! | [`outbox`] | events published through JetStream and kept pending until acknowledged (newest per key), sent again with the same message id |
//! | [`endpoints`] | `--metrics-listen`: `/metrics`, `/healthz`, `/readyz`; [`Progress`] for `/healthz` |
//! | [`backoff`] | the one doubling delay ([`Backoff`]) |
//! | [`redact`] | keeping secrets out of every text that is logged or published |
//! | [`secret`] | [`Secret`], a value whose `Debug` never shows it, and [`Secret::from_file`] |
//! | [`clock`] | wall-clock times for event bodies from one place tests can fix ([`WallClock`]) |
//! | [`streak`] | when a run of failures is news: reported once past a threshold, again every so often, and the first success after it ([`streak::Tracker`]) |
//!
//! With the `testing` feature, `mesh_runtime::testing` has fakes for tests of what
//! publishes events.
//!
//! Every contract these pieces implement (flags, subjects, exit codes,
//! metrics) is written down in the repository's `docs/contracts/`.

// Nothing public by accident: what this crate offers is chosen.
#![warn(unreachable_pub)]

pub mod backoff;
pub mod clock;
pub mod credentials;
pub mod endpoints;
pub mod log;
pub mod nats;
pub mod outbox;
pub mod program;
pub mod redact;
pub mod secret;
pub mod secret_file;
pub mod stop;
pub mod streak;
#[cfg(any(test, feature = "testing"))]
pub mod testing;

pub use backoff::Backoff;
pub use clock::WallClock;
pub use endpoints::Progress;
pub use log::LogFormat;
pub use nats::{BusError, NatsArgs};
pub use outbox::Outbox;
pub use program::{Program, ProgramFailure, ServiceArgs};
pub use secret::Secret;
pub use secret_file::SecretFile;
pub use stop::Stop;
