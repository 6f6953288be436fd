//! `mesh-provide`'s own flags: the hook, its mode and its timeout.

use std::path::PathBuf;
use std::time::Duration;

use mesh_sdk::{ModuleId, ProviderArgs};

use crate::hook::{HookSettings, Mode};

/// The hook's flags (the SDK adds the shared provider flags).
#[derive(clap::Args, Clone, Debug, PartialEq, Eq)]
pub struct HookArgs {
    /// The hook: an executable that does what touches the backend (ensure, check, held, retire, re-enable, delete), spoken to in JSON.
    #[arg(long, env = "MESH_HOOK")]
    pub hook: PathBuf,

    /// How the hook runs: `exec`, one process per call (`PATH <verb>`); `serve`, one long-running process (`PATH serve`) taking JSON lines.
    #[arg(long, env = "MESH_HOOK_MODE", value_enum, default_value_t = Mode::Exec)]
    pub hook_mode: Mode,

    /// Bound of each call to the hook (default: --call-timeout); in serve mode a call unanswered for twice this makes the hook stuck, and it is killed and started again.
    #[arg(long, env = "MESH_HOOK_TIMEOUT", value_parser = humantime::parse_duration)]
    pub hook_timeout: Option<Duration>,
}

impl HookArgs {
    /// How to run the hook under the loop's `shared` flags: the timeout
    /// defaults to `--call-timeout` (and never exceeds it: the loop's own
    /// bound would cut the call first), serve mode takes `--concurrency`
    /// requests at once, exec mode asks the hello once a `--pass-every`.
    pub fn settings(&self, shared: &ProviderArgs, provider: ModuleId) -> HookSettings {
        HookSettings {
            provider,
            path: self.hook.clone(),
            mode: self.hook_mode,
            timeout: self
                .hook_timeout
                .unwrap_or(shared.call_timeout)
                .min(shared.call_timeout),
            concurrency: usize::try_from(shared.concurrency).unwrap_or(usize::MAX),
            hello_every: shared.pass_every,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::MAIN;

    fn parse(args: &[&str]) -> (ProviderArgs, HookArgs) {
        let all = ["mesh-provide", "--contributions", "c.json"]
            .iter()
            .chain(args);
        MAIN.parse_from::<HookArgs, _, _>(all).unwrap()
    }

    #[test]
    fn the_hook_timeout_defaults_to_the_call_timeout_and_never_exceeds_it() {
        let cases: [(&[&str], Mode, u64); 4] = [
            (&["--hook", "/h"], Mode::Exec, 30),
            (
                &[
                    "--hook",
                    "/h",
                    "--hook-mode",
                    "serve",
                    "--hook-timeout",
                    "5s",
                ],
                Mode::Serve,
                5,
            ),
            (&["--hook", "/h", "--call-timeout", "10s"], Mode::Exec, 10),
            (
                &[
                    "--hook",
                    "/h",
                    "--call-timeout",
                    "10s",
                    "--hook-timeout",
                    "1m",
                ],
                Mode::Exec,
                10,
            ),
        ];
        for (args, mode, timeout) in cases {
            let (shared, own) = parse(args);
            let settings = own.settings(&shared, "redis@db-1".parse().unwrap());
            assert_eq!(settings.mode, mode, "{args:?}");
            assert_eq!(settings.timeout, Duration::from_secs(timeout), "{args:?}");
            assert_eq!(settings.path, PathBuf::from("/h"));
            assert_eq!(settings.concurrency, 16);
            assert_eq!(settings.hello_every, Duration::from_secs(5));
        }
    }

    #[test]
    fn a_hook_is_required_and_a_mode_is_one_of_two() {
        let all = ["mesh-provide", "--contributions", "c.json"];
        let missing = MAIN.parse_from::<HookArgs, _, _>(all).unwrap_err();
        assert_eq!(missing.exit_code(), 2);
        assert!(missing.to_string().contains("--hook"), "{missing}");
        let bad = MAIN
            .parse_from::<HookArgs, _, _>(all.iter().chain(&[
                "--hook",
                "/h",
                "--hook-mode",
                "daemon",
            ]))
            .unwrap_err();
        assert!(bad.to_string().contains("exec"), "{bad}");
    }
}
