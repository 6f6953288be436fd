//! # mesh-sdk
//!
//! The provisioner loop every mesh provider embeds, so a provider that keeps
//! failing a consumer publishes it on the bus instead of only logging it.
//!
//! A provider is a program that makes a *provision* (a database and role, an
//! identity-provider client, …) for each consumer the mesh lists in its
//! contributions file. With this crate, a provider author writes only what
//! touches the backend: an implementation of [`Provisioner`]. The loop does
//! the rest, every pass: reads the contributions file and each consumer's
//! minted [`Secret`], calls [`Provisioner::ensure`] and
//! [`Provisioner::check`] with bounded concurrency and timeouts, keeps each
//! consumer's state (ok, or failing since when), publishes `failing` /
//! `recovered` / `retirement` / `repair` events on the bus (through
//! JetStream; an event not acknowledged stays pending and is sent again),
//! retires withdrawn consumers, and answers a person's approvals.
//!
//! ## What you implement
//! - [`Provisioner`]: ensure (make if missing, and bring the minted secret
//!   when the backend holds another: a rotated secret reaches it only
//!   through `ensure` or `check`), check, list what you hold ([`Held`]), retire, re-enable, delete;
//!   optionally your own error [`Class`], what you mended, and the secrets
//!   to keep out of every event and log line.
//! - [`Repair`] (optional): a known fault you can repair safely, found by a
//!   [`Probe`].
//!
//! ## What you call
//! [`ProviderMain::run`] (or [`ProviderMain::start`], to check your backend
//! at start) from your binary's `main`, with your own `clap` arguments: it
//! adds the shared flags ([`ProviderArgs`]), installs the log subscriber,
//! runs the loop until SIGINT/SIGTERM (a stop honoured within seconds) and
//! ends with the right exit code and a redacted error. To embed the loop
//! elsewhere, call [`run`] or [`run_until`] yourself.
//!
//! ## What you may use
//! The shared machinery of every mesh binary is `mesh-runtime`'s; what a
//! provider author needs of it is re-exported here: [`Secret`] (with
//! [`Secret::from_file`] for an administrator's password file, and
//! [`SecretFile`] to read it again at each new session) and
//! [`SecretFileError`], [`Backoff`] (a doubling delay) and [`redact`] (an
//! error's text with its sources, secrets removed, a bounded cut). The flags every mesh service shares (the
//! bus, `--metrics-listen`, `--log-format`) are [`ProviderArgs::service`]:
//! an embedder sets them on the value (`args.service.nats.url = …`) with no
//! name to import.
//!
//! ## A complete provider
//! One folder per consumer holding its credentials (the same provider, with
//! retirement and its own error class, is `examples/quickstart.rs`):
//!
//! ```no_run
//! use std::{io, path::PathBuf};
//!
//! use mesh_sdk::{
//!     async_trait, Consumer, Held, ModuleId, Name, ProviderMain, Provisioner, Secret, Served,
//! };
//!
//! /// The provider's own flags (the SDK adds the shared ones).
//! #[derive(clap::Args)]
//! struct Own {
//!     /// Folder holding one folder per consumer.
//!     #[arg(long)]
//!     root: PathBuf,
//! }
//!
//! /// Folders under `root/<module@machine>/`: each provider instance keeps
//! /// (and lists, retires and deletes) only its own.
//! struct Folders(PathBuf);
//!
//! impl Folders {
//!     fn dir(&self, provider: &ModuleId, consumer: &Name) -> PathBuf {
//!         self.0.join(provider.to_string()).join(consumer.as_str())
//!     }
//! }
//!
//! #[async_trait]
//! impl Provisioner for Folders {
//!     type Error = io::Error;
//!
//!     async fn ensure(&self, consumer: &Consumer, secret: &Secret) -> io::Result<Served> {
//!         let dir = self.dir(&consumer.provider, &consumer.name);
//!         std::fs::create_dir_all(&dir)?;
//!         std::fs::write(dir.join("credentials"), secret.expose())?;
//!         Ok(Served::AsIs)
//!     }
//!     async fn check(&self, consumer: &Consumer, secret: &Secret) -> io::Result<Served> {
//!         let path = self.dir(&consumer.provider, &consumer.name).join("credentials");
//!         match std::fs::read_to_string(path)? == secret.expose() {
//!             true => Ok(Served::AsIs),
//!             false => Err(io::Error::other("credentials differ from the minted secret")),
//!         }
//!     }
//!     async fn held(&self, provider: &ModuleId) -> io::Result<Vec<Held>> {
//!         let mut held = Vec::new();
//!         let Ok(dirs) = std::fs::read_dir(self.0.join(provider.to_string())) else {
//!             return Ok(held); // nothing made yet
//!         };
//!         for dir in dirs {
//!             if let Ok(name) = Name::parse(&dir?.file_name().to_string_lossy()) {
//!                 held.push(Held::active(name));
//!             }
//!         }
//!         Ok(held)
//!     }
//!     async fn retire(&self, _: &ModuleId, _: &Name) -> io::Result<()> { Ok(()) }
//!     async fn re_enable(&self, _: &ModuleId, _: &Name) -> io::Result<()> { Ok(()) }
//!     async fn delete(&self, provider: &ModuleId, consumer: &Name) -> io::Result<()> {
//!         std::fs::remove_dir_all(self.dir(provider, consumer))
//!     }
//! }
//!
//! fn main() -> std::process::ExitCode {
//!     let about = "Keeps a credentials folder for each consumer the mesh lists";
//!     ProviderMain::new("folders", about).run(|own: Own| Ok::<_, io::Error>(Folders(own.root)))
//! }
//! ```
//!
//! ## Reading the bus
//! A tool that reads what providers publish (the controller, a dashboard)
//! depends on `mesh-protocol` instead: the subjects and bodies, with no
//! runtime. The names this crate's API shares with it ([`Name`],
//! [`ModuleId`], [`NameError`], [`Class`], [`Timestamp`]) are re-exported here.
//!
//! ## Testing a provider
//! With the `testing` feature (enable it in your `[dev-dependencies]`:
//! `mesh-sdk = { ..., features = ["testing"] }`), `mesh_sdk::testing`
//! drives the loop pass by pass on tokio's paused clock and brings a fake
//! bus, a fake provisioner, a log capture, a clock held while real I/O is
//! in flight (`testing::hold_clock`), and the conformance suite
//! (`mesh_sdk::conform`: the loop's assumptions tried against your
//! provisioner and its real backend, one verdict a rule). Feature-gated modules are
//! documented when the feature is on: read them with
//! `cargo doc -p mesh-sdk --features testing --open`.

#![cfg_attr(docsrs, feature(doc_cfg))]
// Nothing public by accident: what this crate offers is chosen.
#![warn(unreachable_pub)]

mod alive;
mod args;
mod brake;
mod classify;
mod contributions;
mod fault;
mod metrics;
mod name_map;
mod program;
mod provisioner;
pub mod redact;
mod repair;
mod retire;
mod runner;
mod secret;
mod settings;
mod standing;

#[cfg(any(test, feature = "conform"))]
#[cfg_attr(docsrs, doc(cfg(feature = "conform")))]
pub mod conform;
#[cfg(any(test, feature = "internals"))]
#[doc(hidden)]
pub mod internals;
#[cfg(any(test, feature = "testing"))]
#[cfg_attr(docsrs, doc(cfg(feature = "testing")))]
pub mod testing;

pub use args::ProviderArgs;
pub use async_trait::async_trait;
pub use contributions::Consumer;
pub use mesh_protocol::{Class, ModuleId, Name, NameError, Timestamp};
pub use mesh_runtime::credentials::StandIn;
pub use mesh_runtime::secret::SecretFileError;
pub use mesh_runtime::{Backoff, Secret, SecretFile};
pub use program::{ProviderMain, EXIT_CANNOT_RUN};
pub use provisioner::{Held, Provisioner, Served};
pub use repair::{KnownFault, Probe, Repair};
pub use runner::{run, run_until, RunError};
