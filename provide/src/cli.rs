//! The binary: `mesh-provide --hook PATH ...` runs the loop over the hook;
//! `mesh-provide conform --hook PATH ...` runs the conformance suite.

use std::process::ExitCode;

use mesh_sdk::{ProviderArgs, ProviderMain};

use crate::args::HookArgs;
use crate::conform;
use crate::error::HookError;
use crate::hook::Hook;
use crate::provisioner::HookProvisioner;

/// What `mesh-provide --help` opens with.
const ABOUT: &str = "Runs mesh's provisioner loop for a provider written in any language: an executable (the hook) does what touches the backend, spoken to in JSON; `mesh-provide conform --hook PATH` checks a hook against the loop's rules";

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
    MAIN.command::<HookArgs>().subcommand(conform)
}

/// Starts the hook and asks its hello: a hook that cannot be started, or
/// whose hello fails, ends the start (exit 1) naming the hook.
///
/// # Errors
/// [`HookError`] from the start or the hello.
pub async fn provisioner(
    own: HookArgs,
    shared: ProviderArgs,
) -> Result<HookProvisioner, HookError> {
    let settings = own.settings(&shared);
    if own.hook_timeout.is_some_and(|t| t > shared.call_timeout) {
        tracing::warn!(hook_timeout = %humantime::format_duration(own.hook_timeout.unwrap_or_default()), call_timeout = %humantime::format_duration(shared.call_timeout), "--hook-timeout is longer than --call-timeout, which bounds every call: the hook gets --call-timeout");
    }
    let (hook, hello) = Hook::start(settings).await?;
    Ok(HookProvisioner::new(hook, &hello))
}

/// `main`: the conformance suite when the first argument is `conform`,
/// else the provider.
pub fn main() -> ExitCode {
    let mut args = std::env::args_os().skip(1).peekable();
    if args.peek().is_some_and(|first| first == "conform") {
        return conform::main(args);
    }
    MAIN.start_with(|own: HookArgs, shared: &ProviderArgs| provisioner(own, shared.clone()))
}
