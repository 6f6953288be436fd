//! Prints the mesh's events as they are said, `subject  body` per event,
//! until `--for` has passed.
//!
//! It listens on the bus itself (a plain subscription to `mesh.event.>`),
//! never through the `MESH_EVENTS` stream: that stream keeps an event only
//! until the controller took it (work-queue retention), and a second reader
//! there would take events away from the controller. So it shows what is
//! said while it runs, not what was said before. On a bus with permissions,
//! give it a user allowed to subscribe to `mesh.event.>`. To read the
//! bodies as types, parse them with `mesh-protocol` (`Event::parse`).
//!
//! `cargo run --example watch_events -- --nats nats://127.0.0.1:4222 --for 30s`
use std::time::Duration;

use clap::Parser;
use futures::StreamExt;
use mesh_protocol::subject::ALL_EVENTS;

#[derive(Parser)]
struct Cli {
    /// NATS server URL.
    #[arg(long, env = "MESH_NATS_URL", default_value = "nats://127.0.0.1:4222")]
    nats: String,
    /// Stop after this long.
    #[arg(long = "for", default_value = "30s", value_parser = humantime::parse_duration)]
    run_for: Duration,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let cli = Cli::parse();
    let client = async_nats::connect(&cli.nats).await?;
    let mut events = client.subscribe(ALL_EVENTS).await?;
    let deadline = tokio::time::sleep(cli.run_for);
    tokio::pin!(deadline);
    loop {
        tokio::select! {
            () = &mut deadline => return Ok(()),
            event = events.next() => match event {
                Some(m) => println!("{}  {}", m.subject, String::from_utf8_lossy(&m.payload)),
                None => return Ok(()),
            },
        }
    }
}
