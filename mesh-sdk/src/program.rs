//! The one entry point of a provider binary, on mesh-runtime's program
//! shell: the shared and the provider's own flags, then the loop until a
//! stop, with the shell's log subscriber, runtime, signals, exit code and
//! redacted error.

use std::error::Error;
use std::ffi::OsString;
use std::future::Future;
use std::process::ExitCode;

use clap::{Args, CommandFactory, FromArgMatches, Parser};
use mesh_runtime::credentials::{self, StandIn};
use mesh_runtime::program::{self, Program, ProgramFailure};
use mesh_runtime::{LogFormat, Secret};

use crate::args::ProviderArgs;
use crate::provisioner::Provisioner;
use crate::runner::run_until;

pub use mesh_runtime::program::EXIT_CANNOT_RUN;

/// A provider's whole command line: the shared flags and its own.
#[derive(Parser)]
#[group(skip)] // the provider's own arguments may well be called `Flags` too
struct Flags<A: Args> {
    #[command(flatten)]
    provider: ProviderArgs,
    #[command(flatten)]
    own: A,
}

impl<A: Args> program::Flags for Flags<A> {
    fn log_format(&self) -> LogFormat {
        self.provider.service.log.format
    }
}

/// A provider binary: its name and what it does, said first by `--help`.
///
/// [`run`](ProviderMain::run) (or [`start`](ProviderMain::start), whose
/// provisioner is made by an async function) parses the command line (the
/// shared [`ProviderArgs`] and the provider's own `clap` arguments `A`),
/// installs the log subscriber (`RUST_LOG`, default `info`), starts the
/// runtime, builds the provisioner from `A`, runs the loop until SIGINT or
/// SIGTERM, and ends with the exit code: 0 after a graceful stop, 2 for a
/// bad command line, [`EXIT_CANNOT_RUN`] when the provider cannot run (its
/// provisioner could not be made, or the bus could not be set up). The
/// reason is printed on stderr as `<name>: <message>`: the error's message and
/// its sources' (never its `Debug`), with the provider's secrets removed.
/// A stop is honoured within 10 seconds, a second signal at once (see
/// `mesh_runtime::program`).
///
/// ```no_run
/// use std::path::PathBuf;
///
/// # struct Folders(PathBuf);
/// # #[mesh_sdk::async_trait]
/// # impl mesh_sdk::Provisioner for Folders {
/// #     type Error = std::io::Error;
/// #     async fn ensure(&self, _: &mesh_sdk::Consumer, _: &mesh_sdk::Secret) -> std::io::Result<mesh_sdk::Served> { Ok(mesh_sdk::Served::AsIs) }
/// #     async fn check(&self, _: &mesh_sdk::Consumer, _: &mesh_sdk::Secret) -> std::io::Result<mesh_sdk::Served> { Ok(mesh_sdk::Served::AsIs) }
/// #     async fn held(&self, _: &mesh_sdk::ModuleId) -> std::io::Result<Vec<mesh_sdk::Held>> { Ok(vec![]) }
/// #     async fn retire(&self, _: &mesh_sdk::ModuleId, _: &mesh_sdk::Name) -> std::io::Result<()> { Ok(()) }
/// #     async fn re_enable(&self, _: &mesh_sdk::ModuleId, _: &mesh_sdk::Name) -> std::io::Result<()> { Ok(()) }
/// #     async fn delete(&self, _: &mesh_sdk::ModuleId, _: &mesh_sdk::Name) -> std::io::Result<()> { Ok(()) }
/// # }
/// /// The provider's own flags.
/// #[derive(clap::Args)]
/// struct Own {
///     /// Folder holding one folder per consumer.
///     #[arg(long, env = "FOLDERS_ROOT")]
///     root: PathBuf,
/// }
///
/// fn main() -> std::process::ExitCode {
///     mesh_sdk::ProviderMain::new(
///         "folders",
///         "Keeps a credentials folder for each consumer the mesh lists, and says on the bus when it cannot",
///     )
///     .run(|own: Own| Ok::<_, std::io::Error>(Folders(own.root)))
/// }
/// ```
#[derive(Clone, Copy, Debug)]
pub struct ProviderMain {
    name: &'static str,
    about: &'static str,
    version: Option<&'static str>,
    credentials: &'static [StandIn],
}

impl ProviderMain {
    /// A binary called `name` (as in its messages) that does `about`: one
    /// sentence for an operator, the first line of `--help`.
    pub const fn new(name: &'static str, about: &'static str) -> ProviderMain {
        ProviderMain {
            name,
            about,
            version: None,
            credentials: &[],
        }
    }

    /// The provider's own `*_FILE` variables that a systemd credential may
    /// stand in for (its administrator's password), beside the bus
    /// password's (`nats-password`), which every provider has
    /// ([`mesh_runtime::credentials`]).
    pub const fn credentials(self, credentials: &'static [StandIn]) -> ProviderMain {
        ProviderMain {
            credentials,
            ..self
        }
    }

    /// The version (e.g. `env!("CARGO_PKG_VERSION")`): `--version` prints it
    /// with the build's commit and profile
    /// ([`mesh_runtime::endpoints::BuildInfo::version_text`]), `/metrics` in
    /// `mesh_build_info`.
    pub const fn version(self, version: &'static str) -> ProviderMain {
        ProviderMain {
            version: Some(version),
            ..self
        }
    }

    /// The whole command line as `clap` sees it (for a provider's tests of its flags).
    pub fn command<A: Args>(&self) -> clap::Command {
        let command = Flags::<A>::command()
            .name(self.name)
            .bin_name(self.name)
            .about(self.about);
        match self.version {
            Some(version) => {
                command.version(mesh_runtime::endpoints::BuildInfo::version_text(version))
            }
            None => command,
        }
    }

    /// Parses `args` (the program's name first): the shared flags and the provider's own.
    ///
    /// # Errors
    /// `clap`'s error (a bad command line, or `--help` / `--version`).
    pub fn parse_from<A, I, T>(&self, args: I) -> Result<(ProviderArgs, A), clap::Error>
    where
        A: Args,
        I: IntoIterator<Item = T>,
        T: Into<OsString> + Clone,
    {
        let mut matches = self.command::<A>().try_get_matches_from(args)?;
        let flags = Flags::<A>::from_arg_matches_mut(&mut matches)?;
        Ok((flags.provider, flags.own))
    }

    /// Runs the provider binary with the process's arguments; see [`ProviderMain`].
    /// `make` builds the provisioner from the provider's own flags (it runs
    /// inside the runtime, after the log subscriber is installed).
    pub fn run<A, P, E>(self, make: impl FnOnce(A) -> Result<P, E>) -> ExitCode
    where
        A: Args,
        P: Provisioner,
        E: Into<Box<dyn Error + Send + Sync>>,
    {
        self.start(|own| std::future::ready(make(own)))
    }

    /// Like [`run`](ProviderMain::run), the provisioner made by an async
    /// function: a provider may connect to its backend, or check its
    /// administrator's login, before the loop starts, so a configuration
    /// that can never work (a refused password) ends the start with
    /// [`EXIT_CANNOT_RUN`] and its reason at once.
    ///
    /// ```no_run
    /// # struct Folders(std::path::PathBuf);
    /// # #[mesh_sdk::async_trait]
    /// # impl mesh_sdk::Provisioner for Folders {
    /// #     type Error = std::io::Error;
    /// #     async fn ensure(&self, _: &mesh_sdk::Consumer, _: &mesh_sdk::Secret) -> std::io::Result<mesh_sdk::Served> { Ok(mesh_sdk::Served::AsIs) }
    /// #     async fn check(&self, _: &mesh_sdk::Consumer, _: &mesh_sdk::Secret) -> std::io::Result<mesh_sdk::Served> { Ok(mesh_sdk::Served::AsIs) }
    /// #     async fn held(&self, _: &mesh_sdk::ModuleId) -> std::io::Result<Vec<mesh_sdk::Held>> { Ok(vec![]) }
    /// #     async fn retire(&self, _: &mesh_sdk::ModuleId, _: &mesh_sdk::Name) -> std::io::Result<()> { Ok(()) }
    /// #     async fn re_enable(&self, _: &mesh_sdk::ModuleId, _: &mesh_sdk::Name) -> std::io::Result<()> { Ok(()) }
    /// #     async fn delete(&self, _: &mesh_sdk::ModuleId, _: &mesh_sdk::Name) -> std::io::Result<()> { Ok(()) }
    /// # }
    /// /// The provider's own flags.
    /// #[derive(clap::Args)]
    /// struct Own {
    ///     /// Folder holding one folder per consumer.
    ///     #[arg(long)]
    ///     root: std::path::PathBuf,
    /// }
    ///
    /// fn main() -> std::process::ExitCode {
    ///     mesh_sdk::ProviderMain::new("folders", "Keeps a folder per consumer").start(
    ///         |own: Own| async move {
    ///             // Refuse at start what can never work.
    ///             tokio::fs::metadata(&own.root).await?;
    ///             Ok::<_, std::io::Error>(Folders(own.root))
    ///         },
    ///     )
    /// }
    /// ```
    pub fn start<A, P, E, F>(self, make: impl FnOnce(A) -> F) -> ExitCode
    where
        A: Args,
        P: Provisioner,
        E: Into<Box<dyn Error + Send + Sync>>,
        F: Future<Output = Result<P, E>>,
    {
        self.start_from(std::env::args_os(), |own, _| make(own))
    }

    /// Like [`start`](ProviderMain::start), `make` also given the shared
    /// flags as parsed: a provisioner whose own bounds follow the loop's
    /// (`--call-timeout`, `--concurrency`, `--pass-every`) reads them there.
    /// `mesh-provide`'s hook timeout defaults to `--call-timeout` this way.
    pub fn start_with<A, P, E, F>(self, make: impl FnOnce(A, &ProviderArgs) -> F) -> ExitCode
    where
        A: Args,
        P: Provisioner,
        E: Into<Box<dyn Error + Send + Sync>>,
        F: Future<Output = Result<P, E>>,
    {
        self.start_from(std::env::args_os(), make)
    }

    /// [`start_with`](ProviderMain::start_with) with `args` as the command line.
    fn start_from<A, P, E, F, I, T>(
        self,
        args: I,
        make: impl FnOnce(A, &ProviderArgs) -> F,
    ) -> ExitCode
    where
        A: Args,
        P: Provisioner,
        E: Into<Box<dyn Error + Send + Sync>>,
        F: Future<Output = Result<P, E>>,
        I: IntoIterator<Item = T>,
        T: Into<OsString> + Clone,
    {
        let name = self.name;
        // Before the command line is read, and before any thread starts.
        credentials::into_environment(&[credentials::NATS_PASSWORD]);
        credentials::into_environment(self.credentials);
        let parsed = self
            .parse_from::<A, _, _>(args)
            .map(|(provider, own)| Flags { provider, own });
        let program = match self.version {
            Some(version) => Program::new(name).version(version),
            None => Program::new(name),
        };
        program.run_parsed(parsed, |flags: Flags<A>, stop| async move {
            let Flags { provider, own } = flags;
            let provisioner = make(own, &provider).await.map_err(|error| {
                let error: Box<dyn Error + Send + Sync> = error.into();
                ProgramFailure::cannot_run(&*error).redacted::<&str>(&[])
            })?;
            let secrets = provisioner.secrets();
            tracing::info!(contributions = %provider.contributions.display(), nats = %provider.service.nats.shown_servers(), "{name} starting");
            run_until(provisioner, &provider, stop.into_requested())
                .await
                .map_err(|error| {
                    let secrets: Vec<&str> = secrets.iter().map(Secret::expose).collect();
                    ProgramFailure::cannot_run(&error).redacted(&secrets)
                })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A provider's own flags.
    #[derive(Args, Debug)]
    struct Own {
        /// Folder holding one folder per consumer.
        #[arg(long)]
        root: std::path::PathBuf,
    }

    const MAIN: ProviderMain = ProviderMain::new("folders", "Keeps a folder per consumer");

    #[test]
    fn parses_the_shared_flags_and_the_providers_own() {
        let (provider, own) = MAIN
            .parse_from::<Own, _, _>(["folders", "--contributions", "c.json", "--root", "/srv"])
            .unwrap();
        assert_eq!(provider, ProviderArgs::with_defaults("c.json"));
        assert_eq!(own.root, std::path::PathBuf::from("/srv"));
        let missing = MAIN.parse_from::<Own, _, _>(["folders", "--contributions", "c.json"]);
        assert_eq!(missing.unwrap_err().exit_code(), 2);
    }

    #[test]
    fn an_async_start_that_fails_ends_with_exit_1_before_the_loop_runs() {
        let dir = tempfile::tempdir().unwrap();
        let contributions = dir.path().join("c.json");
        let args = [
            "folders",
            "--contributions",
            contributions.to_str().unwrap(),
        ];
        let args = args.into_iter().chain(["--root", "/srv"]);
        let code = MAIN.start_from(args, |own: Own, _: &ProviderArgs| async move {
            assert_eq!(own.root, std::path::PathBuf::from("/srv"));
            Err::<crate::internals::FakeProvisioner, _>(std::io::Error::other(
                "password authentication failed for user \"admin\"",
            ))
        });
        assert_eq!(code, ExitCode::from(EXIT_CANNOT_RUN));
        let bad = MAIN.start_from(["folders"], |_: Own, _: &ProviderArgs| async {
            Ok::<_, std::io::Error>(crate::internals::FakeProvisioner::new())
        });
        assert_eq!(bad, ExitCode::from(2), "a bad command line");
    }

    #[test]
    fn help_opens_with_what_the_program_does() {
        let help = MAIN.command::<Own>().render_help().to_string();
        assert!(help.starts_with("Keeps a folder per consumer\n"), "{help}");
        assert!(help.contains("Usage: folders"), "{help}");
        for flag in [
            "--root",
            "--contributions",
            "MESH_CONTRIBUTIONS",
            "--pass-every",
        ] {
            assert!(help.contains(flag), "{flag} missing from:\n{help}");
        }
    }
}
