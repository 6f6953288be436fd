//! Telling a story: what is done (`== …`), what a person would run
//! (`$ mesh-controller …` and what it prints), and each step's expectation
//! waited for until a deadline, checked, or the story stopped naming the
//! step that did not hold.

use std::fmt;
use std::path::Path;
use std::time::{Duration, Instant};

use mesh_test_support::mesh::Mesh;
use serde_json::Value;

use crate::interrupt;

/// How often a wait asks again.
const POLL: Duration = Duration::from_millis(250);

/// How many lines of each process's log a failure shows.
const LOG_LINES: usize = 20;

/// Why a story stopped before its end.
#[derive(Debug)]
pub enum StoryStop {
    /// What a step expects did not hold (within its time, for a wait).
    Unmet {
        /// The step.
        step: String,
        /// What did not hold, and what was seen instead.
        why: String,
        /// The tails of the processes' logs.
        logs: String,
    },
    /// The story cannot run here (not root, no Keycloak, …).
    Cannot(String),
    /// Something the story relies on broke during a step (a server that
    /// would not start, a binary not built): the harness's panic.
    Broke {
        /// The step the story was at.
        step: String,
        /// The panic's message.
        why: String,
    },
    /// Ctrl-C or SIGTERM.
    Interrupted,
}

impl StoryStop {
    /// Adds the tails of `mesh`'s logs to an unmet step.
    pub fn with_logs(self, mesh: &Mesh) -> StoryStop {
        match self {
            StoryStop::Unmet { step, why, .. } => StoryStop::Unmet {
                step,
                why,
                logs: mesh.logs(LOG_LINES),
            },
            other => other,
        }
    }

    /// Adds the tail of the file at `path` (`name`), when there is one, to
    /// an unmet step's logs.
    pub fn with_file(self, name: &str, path: &Path) -> StoryStop {
        match self {
            StoryStop::Unmet {
                step,
                why,
                mut logs,
            } => {
                let text = std::fs::read_to_string(path).unwrap_or_default();
                if !text.trim().is_empty() {
                    let lines: Vec<&str> = text.lines().collect();
                    let tail = lines[lines.len().saturating_sub(LOG_LINES)..].join("\n");
                    logs.push_str(&format!("--- {name}:\n{tail}\n"));
                }
                StoryStop::Unmet { step, why, logs }
            }
            other => other,
        }
    }
}

impl fmt::Display for StoryStop {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoryStop::Unmet { step, why, logs } => {
                write!(f, "step \"{step}\" did not hold: {why}")?;
                if !logs.is_empty() {
                    write!(f, "\n{}", logs.trim_end())?;
                }
                Ok(())
            }
            StoryStop::Cannot(why) => write!(f, "{why}"),
            StoryStop::Broke { step, why } => write!(f, "broke during \"{step}\": {why}"),
            StoryStop::Interrupted => write!(f, "interrupted"),
        }
    }
}

/// The teller of one story: what it prints, and the step it is at.
pub struct Demo {
    started: Instant,
    step: String,
}

impl Demo {
    /// A story starting now.
    pub fn new() -> Demo {
        Demo {
            started: Instant::now(),
            step: "setting up".to_owned(),
        }
    }

    /// The step the story is at (for a failure that is not a check, such
    /// as a server that does not start).
    pub fn step(&self) -> &str {
        &self.step
    }

    /// How long the story has run.
    pub fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }

    /// Says what is done next (`== text`); it is the step until the next.
    pub fn say(&mut self, text: &str) {
        println!("== {text}");
        text.clone_into(&mut self.step);
    }

    /// A detail of what was just said, indented.
    pub fn detail(&self, text: &str) {
        println!("   {text}");
    }

    /// Says the story is told, and how long it took; what it started is
    /// stopped next.
    pub fn done(&self) {
        println!();
        println!(
            "== done in {}s; stopping what the demo started",
            self.elapsed().as_secs()
        );
    }

    /// An empty line between the parts of a story.
    pub fn pause(&self) {
        println!();
    }

    /// Runs `mesh-controller ARGS` and prints it as a person would type it
    /// (`$ mesh-controller ARGS   # why`; the mesh's own flags left out)
    /// and what it printed; returns that. It must exit 0.
    pub fn show(&self, mesh: &Mesh, args: &[&str], why: &str) -> Result<String, StoryStop> {
        let command = format!("mesh-controller {}", args.join(" "));
        println!("$ {command:<31} # {why}");
        let (code, out, err) = mesh.controller(args);
        print!("{out}");
        if code != 0 {
            return Err(self.unmet(&command, format!("it exited {code}: {}", err.trim()), mesh));
        }
        Ok(out)
    }

    /// `mesh-controller ARGS --json`, parsed; it must exit 0.
    pub fn json(&self, mesh: &Mesh, args: &[&str]) -> Result<Value, StoryStop> {
        let mut args = args.to_vec();
        args.push("--json");
        let command = format!("mesh-controller {}", args.join(" "));
        let (code, out, err) = mesh.controller(&args);
        if code != 0 {
            let why = format!("it exited {code}: {}", err.trim());
            return Err(self.unmet(&command, why, mesh));
        }
        serde_json::from_str(&out)
            .map_err(|e| self.unmet(&command, format!("it printed no JSON ({e}): {out}"), mesh))
    }

    /// Checks what `step` expects now, not waiting.
    pub fn check(
        &self,
        mesh: &Mesh,
        step: &str,
        holds: Result<(), String>,
    ) -> Result<(), StoryStop> {
        holds.map_err(|why| self.unmet(step, why, mesh))
    }

    /// Waits until `check` holds of `status --json`, asking again every
    /// 250 ms for up to `within`; returns that status.
    pub fn expect(
        &self,
        mesh: &Mesh,
        step: &str,
        within: Duration,
        check: impl Fn(&Value) -> Result<(), String>,
    ) -> Result<Value, StoryStop> {
        self.until(step, within, || match mesh.status() {
            Some(status) => check(&status).map(|()| status),
            None => Err("status cannot read the controller's store".to_owned()),
        })
        .map_err(|stop| stop.with_logs(mesh))
    }

    /// Waits until `ready` gives a value, asking every 250 ms for up to
    /// `within` (its `Err` says what is not there yet); stops at once when
    /// the demo is interrupted.
    pub fn until<T>(
        &self,
        step: &str,
        within: Duration,
        mut ready: impl FnMut() -> Result<T, String>,
    ) -> Result<T, StoryStop> {
        let deadline = Instant::now() + within;
        loop {
            if interrupt::asked() {
                return Err(StoryStop::Interrupted);
            }
            let why = match ready() {
                Ok(value) => return Ok(value),
                Err(why) => why,
            };
            if Instant::now() >= deadline {
                return Err(StoryStop::Unmet {
                    step: step.to_owned(),
                    why: format!("not within {within:?}: {why}"),
                    logs: String::new(),
                });
            }
            std::thread::sleep(POLL);
        }
    }

    fn unmet(&self, step: &str, why: String, mesh: &Mesh) -> StoryStop {
        StoryStop::Unmet {
            step: step.to_owned(),
            why,
            logs: String::new(),
        }
        .with_logs(mesh)
    }
}
