//! The one entry point of a provider binary: flags, tracing, the runtime,
//! the run, the exit code and a redacted error, in one place.

use std::error::Error;
use std::ffi::OsString;
use std::process::ExitCode;

use clap::{Args, CommandFactory, FromArgMatches, Parser};

use mesh_runtime::log::init_tracing;
use mesh_runtime::redact::{error_words, redact};
use mesh_runtime::Secret;

use crate::args::ProviderArgs;
use crate::provisioner::Provisioner;
use crate::runner::run;

/// Exit code of a provider that cannot run (bad configuration, unreadable
/// password file, bus setup). A bad command line exits 2; a graceful stop
/// (SIGINT, SIGTERM) exits 0.
pub const EXIT_CANNOT_RUN: u8 = 1;

/// A provider's whole command line: the shared flags and its own.
#[derive(Parser)]
#[group(skip)] // the provider's own arguments may well be called `Flags` too
struct Flags<A: Args> {
    #[command(flatten)]
    provider: ProviderArgs,
    #[command(flatten)]
    own: A,
}

/// A provider binary: its name and what it does, said first by `--help`.
///
/// [`run`](ProviderMain::run) parses the command line (the shared
/// [`ProviderArgs`] and the provider's own `clap` arguments `A`), installs
/// the log subscriber (`RUST_LOG`, default `info`), starts the runtime,
/// builds the provisioner from `A`, runs the loop until SIGINT or SIGTERM,
/// and ends with the exit code: 0 after a graceful stop, 2 for a bad
/// command line, [`EXIT_CANNOT_RUN`] when the provider cannot run. The
/// reason is printed on stderr as `<name>: <words>`: the error's words and
/// its sources' (never its `Debug`), with the provider's secrets removed.
///
/// ```no_run
/// use std::path::PathBuf;
///
/// # struct Folders(PathBuf);
/// # #[mesh_sdk::async_trait]
/// # impl mesh_sdk::Provisioner for Folders {
/// #     type Error = std::io::Error;
/// #     async fn ensure(&self, _: &mesh_sdk::Consumer, _: &mesh_sdk::Secret) -> std::io::Result<()> { Ok(()) }
/// #     async fn check(&self, _: &mesh_sdk::Consumer, _: &mesh_sdk::Secret) -> std::io::Result<()> { Ok(()) }
/// #     async fn held(&self) -> std::io::Result<Vec<mesh_sdk::Held>> { Ok(vec![]) }
/// #     async fn retire(&self, _: &mesh_sdk::Name) -> std::io::Result<()> { Ok(()) }
/// #     async fn re_enable(&self, _: &mesh_sdk::Name) -> std::io::Result<()> { Ok(()) }
/// #     async fn delete(&self, _: &mesh_sdk::Name) -> std::io::Result<()> { Ok(()) }
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
}

impl ProviderMain {
    /// A binary called `name` (as in its messages) that does `about`: one
    /// sentence for an operator, the first line of `--help`.
    pub const fn new(name: &'static str, about: &'static str) -> ProviderMain {
        ProviderMain {
            name,
            about,
            version: None,
        }
    }

    /// The version `--version` prints (e.g. `env!("CARGO_PKG_VERSION")`).
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
            Some(version) => command.version(version),
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
        let (provider, own) = match self.parse_from::<A, _, _>(std::env::args_os()) {
            Ok(flags) => flags,
            Err(error) => {
                let _ = error.print();
                return ExitCode::from(u8::try_from(error.exit_code()).unwrap_or(2));
            }
        };
        init_tracing("info", provider.log_format);
        let runtime = match tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
        {
            Ok(runtime) => runtime,
            Err(error) => return self.cannot_run(&error, &[]),
        };
        let name = self.name;
        let result = runtime.block_on(async move {
            let provisioner = make(own).map_err(|error| (error.into(), Vec::new()))?;
            let secrets = provisioner.secrets();
            tracing::info!(contributions = %provider.contributions.display(), nats = %provider.nats.shown_servers(), "{name} starting");
            run(provisioner, &provider)
                .await
                .map_err(|error| (Box::new(error).into(), secrets))
        });
        match result {
            Ok(()) => ExitCode::SUCCESS,
            Err((error, secrets)) => self.cannot_run(&*error, &secrets),
        }
    }

    /// Says why the provider cannot run, redacted, and returns [`EXIT_CANNOT_RUN`].
    fn cannot_run(&self, error: &(dyn Error + 'static), secrets: &[Secret]) -> ExitCode {
        let secrets: Vec<&str> = secrets.iter().map(Secret::expose).collect();
        let words = redact(&error_words(error), &secrets);
        eprintln!("{}: {words}", self.name);
        ExitCode::from(EXIT_CANNOT_RUN)
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
