//! `--metrics-listen ADDR`: a small HTTP server with `/metrics` (Prometheus
//! text), `/healthz` (the loop is making progress) and `/readyz` (connected
//! to what it needs). Each answers 200 with a line of text, or 503 with
//! the reason; anything else is 404.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::http::{header, StatusCode};
use axum::response::IntoResponse;
use axum::routing::get;
use axum::Router;

/// A check: `Ok` with a sentence, or `Err` with the reason.
pub type Check = Arc<dyn Fn() -> Result<String, String> + Send + Sync>;

/// What the endpoints answer.
#[derive(Clone)]
pub struct Endpoints {
    /// The text of `/metrics`.
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
    addr: String,
    #[source]
    source: std::io::Error,
}

/// The content type of the Prometheus text format this server writes
/// (OpenMetrics, which Prometheus reads).
const METRICS_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

fn answer(check: &Check) -> (StatusCode, String) {
    match check() {
        Ok(text) => (StatusCode::OK, text + "\n"),
        Err(text) => (StatusCode::SERVICE_UNAVAILABLE, text + "\n"),
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
    let router = Router::new()
        .route(
            "/metrics",
            get(move || {
                let text = metrics();
                async move { ([(header::CONTENT_TYPE, METRICS_TYPE)], text).into_response() }
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
