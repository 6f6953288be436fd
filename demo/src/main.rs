//! `mesh-demo`: the mesh's stories over the built binaries, told for a
//! person to read and checked step by step. `scripts/demo` builds the
//! workspace and runs it.
//!
//! Each story starts its own private servers and processes (through
//! `mesh_test_support::mesh`, the harness the end-to-end tests drive), runs
//! `mesh-controller status` as an operator would, and checks what
//! `status --json` says at every step, waiting for each expected state
//! until a deadline. It exits 0 when every step held, 1 naming the step
//! that did not (or why the story cannot run here), 2 on a usage error,
//! and 130 when interrupted (Ctrl-C or SIGTERM); whatever the end, what it
//! started is stopped first.

mod expect;
mod interrupt;
mod narrate;
mod story;

use std::panic::{self, AssertUnwindSafe};
use std::process::ExitCode;
use std::sync::Mutex;

use clap::Parser;

use narrate::{Demo, StoryStop};
use story::Story;

/// The mesh's stories over the built binaries, each step checked.
#[derive(Debug, Parser)]
#[command(
    name = "mesh-demo",
    subcommand_value_name = "STORY",
    subcommand_help_heading = "Stories"
)]
struct Cli {
    /// The story to tell (the default: secret).
    #[command(subcommand)]
    story: Option<Story>,
}

/// The message of a panic in the story (a server that would not start, a
/// harness assertion), kept for the failure's line.
static PANICKED: Mutex<Option<String>> = Mutex::new(None);

fn main() -> ExitCode {
    let story = Cli::parse().story.unwrap_or(Story::Secret);
    interrupt::watch();
    panic::set_hook(Box::new(|info| {
        let message = info
            .payload()
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| {
                info.payload()
                    .downcast_ref::<&str>()
                    .map(|s| (*s).to_owned())
            })
            .unwrap_or_else(|| "a panic".to_owned());
        let place = info
            .location()
            .map(|l| format!(" (at {}:{})", l.file(), l.line()))
            .unwrap_or_default();
        *PANICKED.lock().unwrap_or_else(|e| e.into_inner()) = Some(format!("{message}{place}"));
    }));
    let mut demo = Demo::new();
    // What the story started is stopped as it returns or unwinds, before
    // the outcome is said.
    let told = panic::catch_unwind(AssertUnwindSafe(|| story.tell(&mut demo)));
    let stop = match told {
        Ok(Ok(())) => return ExitCode::SUCCESS,
        Ok(Err(stop)) => stop,
        Err(_) => {
            let message = PANICKED.lock().unwrap_or_else(|e| e.into_inner()).take();
            StoryStop::Broke {
                step: demo.step().to_owned(),
                why: message.unwrap_or_else(|| "a panic".to_owned()),
            }
        }
    };
    match stop {
        StoryStop::Interrupted => {
            eprintln!(
                "== interrupted after {}s; what the demo started is stopped",
                demo.elapsed().as_secs()
            );
            ExitCode::from(130)
        }
        stop => {
            eprintln!("!! mesh-demo {}: {stop}", story.name());
            ExitCode::FAILURE
        }
    }
}
