//! The binary: `mesh-provide --hook PATH ...` runs the loop over the hook;
//! `mesh-provide conform --hook PATH ...` runs the conformance suite.

use std::process::ExitCode;

use mesh_sdk::{ModuleId, Name, ProviderArgs, ProviderMain};

use crate::args::HookArgs;
use crate::error::HookError;
use crate::hook::Hook;
use crate::provisioner::HookProvisioner;
use crate::{bench, conform};

/// What `mesh-provide --help` opens with.
const ABOUT: &str = "Runs mesh's provisioner loop for a provider written in any language: an executable (the hook) does what touches the backend, spoken to in JSON; `mesh-provide conform --hook PATH` checks a hook against the loop's rules, `mesh-provide bench --hook PATH` measures a pass over it";

/// The provider binary.
pub const MAIN: ProviderMain =
    ProviderMain::new("mesh-provide", ABOUT).version(env!("CARGO_PKG_VERSION"));

/// The whole command line of `mesh-provide` (the SDK's shared flags, the
/// hook's, and `conform`), as clap sees it: for its man page and shell
/// completions.
pub fn command() -> clap::Command {
    let conform = <conform::ConformArgs as clap::CommandFactory>::command()
        .name("conform")
        .bin_name("mesh-provide conform");
    let bench = <bench::BenchArgs as clap::CommandFactory>::command()
        .name("bench")
        .bin_name("mesh-provide bench");
    MAIN.command::<HookArgs>()
        .subcommand(conform)
        .subcommand(bench)
}

/// Why `mesh-provide` cannot start (exit 1).
#[derive(Debug, thiserror::Error)]
pub enum HookStartError {
    /// Which provider instance this is cannot be told: no `--provider`,
    /// and the contributions file's `provider` block cannot be read.
    #[error("cannot tell which provider instance this is, so give --provider MODULE@MACHINE (MESH_PROVIDER): {0}")]
    Unidentified(String),
    /// The hook cannot be started, or its hello failed.
    #[error(transparent)]
    Hook(#[from] HookError),
}

/// Starts the hook for its provider instance and asks its hello: a hook
/// that cannot be started, or whose hello fails, ends the start (exit 1)
/// naming the hook.
///
/// # Errors
/// [`HookStartError`]: the instance unknown, or the hook's start or hello failed.
pub async fn provisioner(
    own: HookArgs,
    shared: ProviderArgs,
) -> Result<HookProvisioner, HookStartError> {
    let provider = instance(&shared)?;
    let settings = own.settings(&shared, provider);
    if own.hook_timeout.is_some_and(|t| t > shared.call_timeout) {
        tracing::warn!(hook_timeout = %humantime::format_duration(own.hook_timeout.unwrap_or_default()), call_timeout = %humantime::format_duration(shared.call_timeout), "--hook-timeout is longer than --call-timeout, which bounds every call: the hook gets --call-timeout");
    }
    let (hook, hello) = Hook::start(settings).await?;
    Ok(HookProvisioner::new(hook, &hello))
}

/// The provider instance the hook runs for: `--provider`, else the
/// contributions file's `provider` block read now.
///
/// # Errors
/// [`HookStartError::Unidentified`] when neither tells.
fn instance(shared: &ProviderArgs) -> Result<ModuleId, HookStartError> {
    if let Some(provider) = &shared.provider {
        return Ok(provider.clone());
    }
    /// The one block read of the file here (the loop reads the whole).
    #[derive(serde::Deserialize)]
    struct File {
        provider: Block,
    }
    #[derive(serde::Deserialize)]
    struct Block {
        module: Name,
        machine: Name,
    }
    let path = &shared.contributions;
    let unidentified = |why: String| {
        HookStartError::Unidentified(format!("contributions file {}: {why}", path.display()))
    };
    let text = std::fs::read_to_string(path).map_err(|e| unidentified(e.to_string()))?;
    let file: File = serde_json::from_str(&text).map_err(|e| unidentified(e.to_string()))?;
    Ok(ModuleId::new(file.provider.module, file.provider.machine))
}

/// `main`: the conformance suite when the first argument is `conform`,
/// else the provider.
pub fn main() -> ExitCode {
    let mut args = std::env::args_os().skip(1).peekable();
    if args.peek().is_some_and(|first| first == "conform") {
        return conform::main(args);
    }
    if args.peek().is_some_and(|first| first == "bench") {
        return bench::main(args);
    }
    MAIN.start_with(|own: HookArgs, shared: &ProviderArgs| provisioner(own, shared.clone()))
}
