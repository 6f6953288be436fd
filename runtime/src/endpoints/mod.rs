//! `--metrics-listen ADDR`: a small HTTP server with `/metrics` (Prometheus
//! text), `/healthz` and `/readyz`. Each answers 200 with a line of text, or
//! 503 with the reason; anything else is 404 (docs/contracts/metrics.md).
//!
//! As Kubernetes' liveness and readiness probes (and controller-runtime's
//! `livez`/`readyz`) mean them:
//! - `/healthz` (liveness): the program's loop is turning ([`Progress`]). A
//!   bus or a backend that is away does not make it fail; a loop that
//!   stopped turning does, and restarting the process may help.
//! - `/readyz` (readiness): the program can do its work now: connected to
//!   the bus and, for `mesh-controller serve`, the store answering. It fails
//!   within 5 s of either going away, and passes again once they are back;
//!   restarting does not help.
//!
//! `/metrics` adds `mesh_build_info{binary, version} 1` ([`BuildInfo`]) to
//! the program's metrics, and answers in OpenMetrics when the scraper asks
//! for it in `Accept` (Prometheus does), else in the text format 0.0.4
//! ([`Format::negotiate`]).
//!
//! ```no_run
//! use std::sync::Arc;
//! use std::time::Duration;
//!
//! use mesh_runtime::endpoints::{listen, serve, Checked, Endpoints};
//! use mesh_runtime::Progress;
//!
//! # async fn run() -> Result<(), mesh_runtime::endpoints::ListenError> {
//! let progress = Arc::new(Progress::new());
//! let listener = listen("127.0.0.1:9464").await?;
//! let moved = Arc::clone(&progress);
//! let (_addr, task) = serve(
//!     listener,
//!     Endpoints {
//!         metrics: Arc::new(|| "# EOF\n".to_owned()),
//!         health: Arc::new(move || moved.check(Duration::from_secs(60))),
//!         ready: Arc::new(|| Checked::Passing("ready".to_owned())),
//!     },
//! );
//! // ... the program's work, calling progress.tick() as it moves ...
//! task.abort();
//! # Ok(())
//! # }
//! ```

mod build;
mod format;
mod progress;

use std::net::SocketAddr;
use std::sync::Arc;

use axum::http::{header, HeaderMap, StatusCode};
use axum::response::IntoResponse;
use axum::routing::get;
use axum::Router;

pub use build::BuildInfo;
pub use format::{to_text_0_0_4, Format};
pub use progress::Progress;

/// `--metrics-listen HOST:PORT` (`MESH_METRICS_LISTEN`), the same on every
/// mesh binary that serves the endpoints.
#[derive(clap::Args, Clone, Debug, Default, PartialEq, Eq)]
pub struct EndpointArgs {
    /// Serve on this address (host:port) Prometheus metrics at /metrics, /healthz (200 while the
    /// program's loop turns; a restart may help if not) and /readyz (200 while it can do its work
    /// now: what it needs answers, the bus or the store; 503 saying which does not).
    #[arg(long, env = "MESH_METRICS_LISTEN")]
    pub metrics_listen: Option<String>,
}

/// What a check says: passing or not, and a sentence for a person.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Checked {
    /// It passes (`200`), as the sentence says.
    Passing(String),
    /// It does not (`503`), for the reason the sentence gives.
    Failing(String),
}

impl Checked {
    /// Whether it passes.
    pub fn is_passing(&self) -> bool {
        matches!(self, Checked::Passing(_))
    }

    /// Its sentence.
    pub fn text(&self) -> &str {
        match self {
            Checked::Passing(text) | Checked::Failing(text) => text,
        }
    }
}

/// A check, asked at each request.
pub type Check = Arc<dyn Fn() -> Checked + Send + Sync>;

/// What the endpoints answer.
#[derive(Clone)]
pub struct Endpoints {
    /// The text of `/metrics`, in OpenMetrics (as prometheus-client's
    /// `encode` writes it, ending in `# EOF`).
    pub metrics: Arc<dyn Fn() -> String + Send + Sync>,
    /// `/healthz`.
    pub health: Check,
    /// `/readyz`.
    pub ready: Check,
}

impl std::fmt::Debug for Endpoints {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Endpoints").finish_non_exhaustive()
    }
}

/// The metrics address could not be listened on; the program does not start.
#[derive(Debug, thiserror::Error)]
#[error("cannot listen on {addr} for metrics: {source}")]
pub struct ListenError {
    /// The address given.
    addr: String,
    /// Why.
    #[source]
    source: std::io::Error,
}

/// The text of `/metrics` for a scraper whose `Accept` header is `accept`:
/// the program's `openmetrics` with the build info added, in the format it
/// asked for; and that format.
pub fn metrics_text(openmetrics: &str, accept: Option<&str>) -> (Format, String) {
    let text = build::with_build_info(openmetrics, &BuildInfo::current());
    match Format::negotiate(accept) {
        Format::OpenMetrics => (Format::OpenMetrics, text),
        Format::Text004 => (Format::Text004, to_text_0_0_4(&text)),
    }
}

/// A count as a gauge's value: prometheus-client's gauges hold an `i64`,
/// and a count past `i64::MAX` reads `i64::MAX`. The programs' metrics
/// (a provider's loop, `serve`'s link) set their counts through it.
pub fn gauge_value(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

fn answer(check: &Check) -> (StatusCode, String) {
    match check() {
        Checked::Passing(text) => (StatusCode::OK, text + "\n"),
        Checked::Failing(text) => (StatusCode::SERVICE_UNAVAILABLE, text + "\n"),
    }
}

/// Listens on `addr` (`host:port`; port 0 picks a free one).
///
/// # Errors
/// [`ListenError`] when the address is invalid or taken.
pub async fn listen(addr: &str) -> Result<tokio::net::TcpListener, ListenError> {
    tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|source| ListenError {
            addr: addr.to_owned(),
            source,
        })
}

/// Serves the endpoints on `listener` until the returned task is aborted;
/// returns the address served.
pub fn serve(
    listener: tokio::net::TcpListener,
    endpoints: Endpoints,
) -> (Option<SocketAddr>, tokio::task::JoinHandle<()>) {
    let local = listener.local_addr().ok();
    let Endpoints {
        metrics,
        health,
        ready,
    } = endpoints;
    let router =
        Router::new()
            .route(
                "/metrics",
                get(move |headers: HeaderMap| {
                    let accept = headers
                        .get(header::ACCEPT)
                        .and_then(|value| value.to_str().ok());
                    let (format, text) = metrics_text(&metrics(), accept);
                    async move {
                        ([(header::CONTENT_TYPE, format.content_type())], text).into_response()
                    }
                }),
            )
            .route(
                "/healthz",
                get(move || {
                    let answered = answer(&health);
                    async move { answered }
                }),
            )
            .route(
                "/readyz",
                get(move || {
                    let answered = answer(&ready);
                    async move { answered }
                }),
            );
    let task = tokio::spawn(async move {
        if let Err(error) = axum::serve(listener, router).await {
            tracing::error!(error = %error, "the metrics server stopped");
        }
    });
    if let Some(addr) = local {
        tracing::info!(%addr, "serving /metrics, /healthz and /readyz");
    }
    (local, task)
}
