//! Prints the mesh's provisioner events as they arrive (used by scripts/demo).
//!
//! Creates the `MESH_EVENTS` stream when missing, then follows it with an
//! ordered consumer from its start, printing `subject  body` per event, until
//! `--for` has passed.
//!
//! `cargo run --example watch_events -- --nats nats://127.0.0.1:4222 --for 30s`
use std::time::Duration;

use async_nats::jetstream::{self, consumer::pull::OrderedConfig, stream::Config};
use clap::Parser;
use futures::StreamExt;

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
    let js = jetstream::new(client);
    let stream = js
        .get_or_create_stream(Config {
            name: "MESH_EVENTS".into(),
            subjects: vec!["mesh.event.*.*.provisioner.*".into()],
            storage: jetstream::stream::StorageType::File,
            ..Config::default()
        })
        .await?;
    let consumer = stream.create_consumer(OrderedConfig::default()).await?;
    let mut messages = consumer.messages().await?;
    let deadline = tokio::time::sleep(cli.run_for);
    tokio::pin!(deadline);
    loop {
        tokio::select! {
            () = &mut deadline => return Ok(()),
            message = messages.next() => match message {
                Some(Ok(m)) => println!("{}  {}", m.subject, String::from_utf8_lossy(&m.payload)),
                Some(Err(error)) => eprintln!("watch_events: {error}"),
                None => return Ok(()),
            },
        }
    }
}
