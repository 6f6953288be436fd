//! The flags every mesh service shares ([`ServiceArgs`]), defined once.

use std::time::Duration;

use clap::Args;

use crate::endpoints::EndpointArgs;
use crate::log::{LogArgs, LogFormat};
use crate::nats::NatsArgs;

/// The flags every mesh service that publishes events shares (each
/// provider, `mesh-grants`), with env fallbacks: how to reach the bus,
/// how long to wait for its acknowledgement, where to serve the HTTP
/// endpoints, and how to write log lines. Flatten it into a program's own
/// flags:
///
/// ```
/// use clap::Parser;
/// use mesh_runtime::program::ServiceArgs;
///
/// #[derive(Parser)]
/// struct Cli {
///     /// The program's own flag.
///     #[arg(long)]
///     every: u32,
///     #[command(flatten)]
///     service: ServiceArgs,
/// }
///
/// let cli = Cli::parse_from(["p", "--every", "3", "--nats", "nats://bus:4222", "--ack-timeout", "2s"]);
/// assert_eq!(cli.service.nats.url, "nats://bus:4222");
/// assert_eq!(cli.service.ack_timeout, std::time::Duration::from_secs(2));
/// assert_eq!(cli.service.endpoints.metrics_listen, None);
/// ```
#[derive(Args, Clone, Debug, PartialEq, Eq)]
pub struct ServiceArgs {
    /// How to reach NATS: servers, credentials, TLS (the same flags on every mesh binary).
    #[command(flatten)]
    pub nats: NatsArgs,

    /// How long to wait for the bus to acknowledge an event before keeping it pending (sent again).
    #[arg(long, env = "MESH_ACK_TIMEOUT", default_value = "5s", value_parser = humantime::parse_duration)]
    pub ack_timeout: Duration,

    /// `--metrics-listen`.
    #[command(flatten)]
    pub endpoints: EndpointArgs,

    /// `--log-format`.
    #[command(flatten)]
    pub log: LogArgs,
}

impl Default for ServiceArgs {
    /// The flags' defaults (environment variables are not consulted).
    fn default() -> ServiceArgs {
        ServiceArgs {
            nats: NatsArgs::default(),
            ack_timeout: Duration::from_secs(5),
            endpoints: EndpointArgs::default(),
            log: LogArgs {
                format: LogFormat::Text,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        service: ServiceArgs,
    }

    #[test]
    fn defaults_and_flags() {
        let cli = Cli::try_parse_from(["p"]).unwrap();
        assert_eq!(cli.service, ServiceArgs::default());
        let cli = Cli::try_parse_from([
            "p",
            "--metrics-listen",
            "127.0.0.1:0",
            "--log-format",
            "json",
            "--ack-timeout",
            "500ms",
        ])
        .unwrap();
        assert_eq!(
            cli.service.endpoints.metrics_listen.as_deref(),
            Some("127.0.0.1:0")
        );
        assert_eq!(cli.service.log.format, LogFormat::Json);
        assert_eq!(cli.service.ack_timeout, Duration::from_millis(500));
        assert!(Cli::try_parse_from(["p", "--ack-timeout", "soon"]).is_err());
    }
}
