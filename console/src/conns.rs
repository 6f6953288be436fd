//! The console's connections, served one by one by hyper (HTTP/1.1, over
//! TLS when configured) instead of `axum::serve`, for what it does not
//! bound:
//! - a client has [`Limits::header_read`] to send a request's headers (and
//!   the TLS handshake as long): a connection that sends half a request and
//!   stops, or sits idle between requests, is closed then;
//! - the connections that have not yet sent the token or the session
//!   cookie are at most [`Limits::unproven`]; the next one closes the
//!   oldest (`limits::Unproven`), so clients without the token cannot
//!   hold the process's file descriptors and keep the token holder out;
//! - when accepting fails for want of file descriptors, the oldest
//!   unproven connection is closed to make room.
//!
//! Each request carries its client's address (`ConnectInfo`), for the
//! login's limit. Each connection closed before it sent a request is
//! counted (`Watch::closed`).

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::ConnectInfo;
use axum::Router;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use mesh_runtime::Stop;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpListener;
use tokio::task::AbortHandle;
use tokio_rustls::TlsAcceptor;
use tower::ServiceExt;

use crate::auth::Access;
use crate::limits::Unproven;
use crate::watch::{Closed, Watch};

/// What a connection may hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Limits {
    /// How long a client may take to send a request's headers (and a TLS
    /// handshake); an idle connection is closed after it too.
    pub(crate) header_read: Duration,
    /// Connections held that have not sent the token or the session.
    pub(crate) unproven: usize,
}

/// The connections open, and which of them are not proven.
struct Open {
    unproven: Unproven,
    tasks: HashMap<u64, AbortHandle>,
}

impl Open {
    fn close(&mut self, id: u64) {
        if let Some(task) = self.tasks.remove(&id) {
            task.abort();
        }
    }
}

/// Serves `app` on `listener` until `stop` is requested.
pub(crate) async fn serve(
    listener: TcpListener,
    tls: Option<TlsAcceptor>,
    app: Router,
    access: Arc<Access>,
    limits: Limits,
    watch: Arc<Watch>,
    stop: &Stop,
) {
    let open = Arc::new(Mutex::new(Open {
        unproven: Unproven::new(limits.unproven),
        tasks: HashMap::new(),
    }));
    let ids = AtomicU64::new(0);
    let accepting = async {
        loop {
            let (tcp, peer) = match listener.accept().await {
                Ok(accepted) => accepted,
                Err(error) => {
                    // Out of file descriptors (or another passing error):
                    // the oldest unproven connection makes room.
                    let oldest = {
                        let mut open = open.lock().expect("not poisoned");
                        let oldest = open.unproven.oldest();
                        if let Some(id) = oldest {
                            open.close(id);
                            watch.closed(Closed::MadeRoom);
                        }
                        oldest
                    };
                    tracing::debug!(error = %error, closed = oldest.is_some(), "the console cannot accept a connection");
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                }
            };
            let id = ids.fetch_add(1, Ordering::Relaxed);
            let connection = {
                let (open, app, access, watch, tls) = (
                    Arc::clone(&open),
                    app.clone(),
                    Arc::clone(&access),
                    Arc::clone(&watch),
                    tls.clone(),
                );
                async move {
                    match tls {
                        Some(acceptor) => {
                            match tokio::time::timeout(limits.header_read, acceptor.accept(tcp))
                                .await
                            {
                                Ok(Ok(stream)) => {
                                    one(stream, peer, id, &open, app, &access, &watch, limits)
                                        .await;
                                }
                                Ok(Err(error)) => {
                                    tracing::debug!(peer = %peer, error = %error, "a TLS handshake with the console failed");
                                }
                                Err(_) => {
                                    watch.closed(Closed::TimedOut);
                                    tracing::debug!(peer = %peer, "a TLS handshake with the console timed out");
                                }
                            }
                        }
                        None => one(tcp, peer, id, &open, app, &access, &watch, limits).await,
                    }
                    let mut open = open.lock().expect("not poisoned");
                    open.unproven.leave(id);
                    open.tasks.remove(&id);
                }
            };
            let mut held = open.lock().expect("not poisoned");
            if let Some(oldest) = held.unproven.admit(id) {
                held.close(oldest);
                watch.closed(Closed::MadeRoom);
            }
            // The connection removes its handle as it ends, under this lock:
            // it cannot have ended before the handle is kept.
            let task = tokio::spawn(connection);
            held.tasks.insert(id, task.abort_handle());
        }
    };
    stop.run_until_stopped(accepting).await;
    let mut open = open.lock().expect("not poisoned");
    for (_, task) in open.tasks.drain() {
        task.abort();
    }
}

/// Serves one connection's requests; the first that carries the token or
/// the session proves it.
#[allow(clippy::too_many_arguments)]
async fn one<S>(
    stream: S,
    peer: SocketAddr,
    id: u64,
    open: &Arc<Mutex<Open>>,
    app: Router,
    access: &Arc<Access>,
    watch: &Watch,
    limits: Limits,
) where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let (open, access) = (Arc::clone(open), Arc::clone(access));
    // Whether a request's headers came: a timeout after one is an idle
    // connection's end, not one that never asked.
    let asked = Arc::new(AtomicBool::new(false));
    let asking = Arc::clone(&asked);
    let service = hyper::service::service_fn(move |mut request: hyper::Request<Incoming>| {
        asking.store(true, Ordering::Relaxed);
        if access.allows(request.headers()) {
            open.lock().expect("not poisoned").unproven.prove(id);
        }
        request.extensions_mut().insert(ConnectInfo(peer));
        let app = app.clone();
        async move {
            let response = app
                .oneshot(request.map(axum::body::Body::new))
                .await
                .unwrap_or_else(|never: Infallible| match never {});
            Ok::<_, Infallible>(response)
        }
    });
    let served = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read)
        .serve_connection(TokioIo::new(stream), service)
        .await;
    if let Err(error) = served {
        if error.is_timeout() && !asked.load(Ordering::Relaxed) {
            watch.closed(Closed::TimedOut);
        }
        tracing::debug!(peer = %peer, error = %error, "a console connection ended");
    }
}
