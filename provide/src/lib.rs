//! # mesh-provide
//!
//! A mesh provider in any language: mesh-sdk's one provisioner loop, whose
//! [`Provisioner`](mesh_sdk::Provisioner) calls an executable, the *hook*,
//! for what touches the backend. The hook is a shell script, a Python or
//! TypeScript program, anything that reads JSON on stdin and writes JSON on
//! stdout; the loop (failing, recovered, retirement, repair, alive, the
//! outbox, metrics, approvals) is the same as every Rust provider's.
//!
//! ```text
//! mesh-provide --hook PATH [--hook-mode exec|serve] [--hook-timeout D] + every shared provider flag
//! mesh-provide conform --hook PATH [--hook-mode exec|serve] [--consumers N]
//! mesh-provide bench --hook PATH [--hook-mode exec|serve|both] [--consumers 50,200] [--runs 5]
//! ```
//!
//! - `exec` ([`exec`]): one process per call, `PATH <verb>`, the request on
//!   stdin, the reply on stdout, the exit status; a call past its timeout
//!   has its process group killed.
//! - `serve` ([`serve`]): one process, `PATH serve`, one JSON request a line
//!   on stdin, one reply a line on stdout carrying the request's id; up to
//!   `--concurrency` in flight; a hook that exits, babbles or is stuck is
//!   started again, braked from 1 s doubling to 5 min.
//!
//! The requests and replies ([`wire`]), what each verb's `unsupported`
//! means ([`provisioner`]), the limits and the exit codes are in
//! docs/hooks.md. The consumer's secret travels
//! only on the hook's stdin: never in its arguments or environment (the
//! hook inherits mesh-provide's environment without the `MESH_*`
//! variables), and never in a text it writes ([`scrub`]).

// Nothing public by accident: what this crate offers is chosen.
#![warn(unreachable_pub)]

pub mod args;
pub mod bench;
pub mod by_hand;
pub mod cli;
pub mod conform;
pub mod down;
pub mod error;
pub mod exec;
pub mod hook;
pub mod metrics;
pub mod process;
pub mod provisioner;
pub mod scrub;
pub mod serve;
pub mod wire;
