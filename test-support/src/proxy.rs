//! A TCP proxy that can cut its connections.

use std::net::{Ipv4Addr, SocketAddr};
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// What the connection tasks watch.
#[derive(Clone, Copy, Debug, Default)]
struct State {
    /// New connections are closed at once while set.
    cut: bool,
    /// Bumped by every cut: a connection opened in an earlier epoch closes.
    epoch: u64,
    /// The proxy was dropped: every connection closes.
    closed: bool,
}

/// A TCP proxy on 127.0.0.1 (free port) forwarding every connection to a
/// target address, for cutting connections mid-stream.
///
/// ```no_run
/// # async fn example(pg: mesh_test_support::PgCluster) {
/// let target = format!("{}:{}", pg.host(), pg.port()).parse().unwrap();
/// let proxy = mesh_test_support::TcpProxy::start(target).await;
/// // connect clients to proxy.port() ...
/// proxy.cut(); // live connections close, new ones are refused
/// proxy.open(); // new connections go through again
/// # }
/// ```
///
/// Dropping it stops accepting and closes every connection.
pub struct TcpProxy {
    addr: SocketAddr,
    target: SocketAddr,
    state: watch::Sender<State>,
    accept_task: JoinHandle<()>,
}

impl TcpProxy {
    /// Binds 127.0.0.1 on a free port and spawns a tokio task accepting
    /// connections and piping each to `target` (a new target connection per
    /// accepted connection). Must be called inside a tokio runtime.
    pub async fn start(target: SocketAddr) -> TcpProxy {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
            .await
            .expect("binding the proxy on 127.0.0.1:0");
        let addr = listener.local_addr().expect("the proxy's local address");
        let (state, watcher) = watch::channel(State::default());
        let accept_task = tokio::spawn(accept_loop(listener, target, watcher));
        TcpProxy {
            addr,
            target,
            state,
            accept_task,
        }
    }

    /// The proxy's port on 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// The proxy's address (127.0.0.1 and [`TcpProxy::port`]).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Closes every live connection (both sides) and refuses new ones: they
    /// are accepted and closed at once, until [`TcpProxy::open`].
    ///
    /// Bytes a client sends after `cut` returns are never forwarded.
    pub fn cut(&self) {
        self.state.send_modify(|state| {
            state.cut = true;
            state.epoch += 1;
        });
    }

    /// Lets new connections through again after [`TcpProxy::cut`].
    pub fn open(&self) {
        self.state.send_modify(|state| state.cut = false);
    }
}

impl Drop for TcpProxy {
    fn drop(&mut self) {
        self.state.send_modify(|state| state.closed = true);
        self.accept_task.abort();
    }
}

impl std::fmt::Debug for TcpProxy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TcpProxy")
            .field("addr", &self.addr)
            .field("target", &self.target)
            .field("state", &*self.state.borrow())
            .finish()
    }
}

async fn accept_loop(listener: TcpListener, target: SocketAddr, watcher: watch::Receiver<State>) {
    loop {
        let inbound = match listener.accept().await {
            Ok((inbound, _)) => inbound,
            Err(_) => {
                // E.g. too many open files: back off briefly.
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            }
        };
        let state = *watcher.borrow();
        if state.closed {
            return;
        }
        if state.cut {
            drop(inbound);
            continue;
        }
        tokio::spawn(pipe(inbound, target, state.epoch, watcher.clone()));
    }
}

async fn pipe(
    mut inbound: TcpStream,
    target: SocketAddr,
    epoch: u64,
    mut watcher: watch::Receiver<State>,
) {
    let ends = |state: &State| state.closed || state.epoch != epoch;
    let mut outbound = tokio::select! {
        biased;
        _ = watcher.wait_for(ends) => return,
        outbound = TcpStream::connect(target) => match outbound {
            Ok(outbound) => outbound,
            Err(_) => return,
        },
    };
    let _ = inbound.set_nodelay(true);
    let _ = outbound.set_nodelay(true);
    // `biased`: a cut is seen before any further byte is forwarded.
    tokio::select! {
        biased;
        _ = watcher.wait_for(ends) => {}
        _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound) => {}
    }
    // Dropping both streams closes them.
}
