//! The stories, one a file. Each sets up its own mesh, tells what happens
//! for a person to read, and checks at each step what `mesh-controller
//! status` says; what it started is stopped when it ends, however it ends.

mod console;
mod grants;
mod hooks;
mod identity;
mod secret;

use std::time::Duration;

use clap::Subcommand;
use mesh_test_support::mesh::{Mesh, Options, Process, FAILING_AFTER, POSTGRES_PASS_EVERY};

use crate::expect;
use crate::narrate::{Demo, StoryStop};

/// A story the demo tells.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Subcommand)]
pub enum Story {
    /// The main story (the default): a consumer the PostgreSQL provider
    /// keeps failing shows up in `mesh-controller status` and goes when it
    /// recovers; then the provider is killed, and status says it is not
    /// heard from until it is started again; last the controller is
    /// killed, and status says the controller follows nothing.
    Secret,
    /// As root: a network namespace stands for a consumer's container; its
    /// path to the provider is dropped, status names the unreachable grant,
    /// then the path is restored and all is well.
    Grants,
    /// On a real Keycloak: the administrator's password is changed behind
    /// the identity provider's back; status names the consumers failing and
    /// the open repair fault; restarted with `--kc-sh`, the provider
    /// repairs it and all is well.
    Identity,
    /// The console: `mesh-console` serves the mesh as web pages
    /// (the address is printed: open it); a consumer fails, recovers and
    /// fails again, and its page says it is the 2nd time, with both
    /// intervals.
    Console,
    /// A provider in shell: `mesh-provide` runs the one loop over
    /// `examples/hooks/redis-acl.sh` on a private Redis; a consumer's
    /// password changed by hand is mended by the next ensure; the hook's
    /// administrator's password changed behind its back makes status name
    /// every consumer failing `credentials-rejected`, until its file holds
    /// the new one.
    Hooks,
}

impl Story {
    /// Tells the story; what it started is stopped when this returns.
    pub fn tell(self, demo: &mut Demo) -> Result<(), StoryStop> {
        match self {
            Story::Secret => secret::tell(demo),
            Story::Grants => grants::tell(demo),
            Story::Identity => identity::tell(demo),
            Story::Hooks => hooks::tell(demo),
            Story::Console => console::tell(demo),
        }
    }

    /// Its name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Story::Secret => "secret",
            Story::Grants => "grants",
            Story::Identity => "identity",
            Story::Hooks => "hooks",
            Story::Console => "console",
        }
    }
}

/// How long a step waits for status to say what it expects.
const WITHIN: Duration = Duration::from_secs(30);

/// The providers' `--alive-every` in the stories.
const ALIVE_EVERY: &str = "1s";

/// The consumers every story's declaration lists: (consumer, machine).
const CONSUMERS: [(&str, &str); 3] = mesh_test_support::mesh::CONSUMERS;

/// A mesh of `options` (a PostgreSQL provider `postgres@db-1` and its three
/// consumers) with `mesh-controller serve` and `mesh-postgres` running,
/// each consumer served and the provider heard from: all well.
fn postgres_mesh(demo: &mut Demo, options: Options) -> Result<Mesh, StoryStop> {
    let mut mesh = Mesh::with(Options {
        alive_every: ALIVE_EVERY,
        ..options
    });
    servers(demo, &mesh, true);
    mesh.start_controller();
    mesh.start_provider();
    demo.say(&format!(
        "mesh-controller serve and mesh-postgres (pass every {POSTGRES_PASS_EVERY}, failing after \
         {FAILING_AFTER:?}, alive every {ALIVE_EVERY}) are running"
    ));
    served(demo, &mesh, mesh.provider.as_ref(), WITHIN)?;
    demo.pause();
    Ok(mesh)
}

/// Says where the mesh's servers are: the bus, the provider's PostgreSQL
/// (when the story has a PostgreSQL provider), the controller's store.
fn servers(demo: &mut Demo, mesh: &Mesh, postgres_provider: bool) {
    demo.say(&format!(
        "private nats-server at {}, one user per module (permissions derived by \
         `mesh-controller permissions`)",
        mesh.nats.url()
    ));
    if postgres_provider {
        demo.say(&format!(
            "private PostgreSQL for the provider's databases at 127.0.0.1:{}",
            mesh.backend.port()
        ));
    }
    demo.say(&format!(
        "private PostgreSQL for the controller's store at 127.0.0.1:{}",
        mesh.store.port()
    ));
    demo.detail(
        "(every `mesh-controller` command below also gets this mesh's --declaration, \
         --database and bus flags)",
    );
}

/// Waits until `provider`'s log says it has served each of the consumers,
/// then until status is all well (the controller has heard from it), each
/// for up to `within`.
fn served(
    demo: &Demo,
    mesh: &Mesh,
    provider: Option<&Process>,
    within: Duration,
) -> Result<(), StoryStop> {
    demo.until("the provider serves its three consumers", within, || {
        let served = provider.map_or(0, Process::served);
        if served >= CONSUMERS.len() {
            Ok(())
        } else {
            Err(format!("its log says {served} served"))
        }
    })
    .map_err(|stop| stop.with_logs(mesh))?;
    demo.expect(
        mesh,
        "all well once the provider is heard from",
        within,
        expect::all_well,
    )
    .map(drop)
}
