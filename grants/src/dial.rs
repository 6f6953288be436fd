//! One check: a TCP connection to a grant's address and port, opened from
//! inside the consumer's own network namespace. Nothing is sent.
//!
//! The namespace is entered with `setns(2)` on a dedicated thread that
//! exists for this one dial (a thread's namespace is its own; the runtime's
//! threads never change theirs). The socket is made and connected there,
//! with a bound, and only the outcome comes back to tokio.

use std::fs::File;
use std::io;
use std::net::{TcpStream, ToSocketAddrs};
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::time::Duration;

use rustix::thread::{move_into_link_name_space, LinkNameSpaceType};

use crate::file::Position;
use crate::standing::GrantCheck;

/// The reason said for a consumer with no network position to dial from.
pub const NOT_RUNNING: &str = "consumer not running";

/// The container runtime that finds a container's namespace.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum ContainerRuntime {
    /// `docker inspect`.
    #[default]
    Docker,
    /// `podman inspect`.
    Podman,
}

impl ContainerRuntime {
    fn program(self) -> &'static str {
        match self {
            ContainerRuntime::Docker => "docker",
            ContainerRuntime::Podman => "podman",
        }
    }
}

/// The namespace file of `position`: the path itself, or
/// `/proc/<PID>/ns/net` of the container's first process. `Err` carries the
/// [`GrantCheck`] to report when there is none (the consumer is not running).
pub async fn namespace(
    position: &Position,
    runtime: ContainerRuntime,
) -> Result<PathBuf, GrantCheck> {
    match position {
        Position::Netns(path) => Ok(path.clone()),
        Position::Container(name) => {
            let output = tokio::process::Command::new(runtime.program())
                .args(["inspect", "-f", "{{.State.Pid}}", "--", name])
                .kill_on_drop(true)
                .output()
                .await;
            let output = match output {
                Ok(output) => output,
                Err(error) => {
                    return Err(GrantCheck::Unchecked(format!(
                        "cannot run {}: {error}",
                        runtime.program()
                    )))
                }
            };
            let pid = String::from_utf8_lossy(&output.stdout)
                .trim()
                .parse::<u32>()
                .unwrap_or(0);
            if !output.status.success() || pid == 0 {
                tracing::debug!(container = %name, stderr = %String::from_utf8_lossy(&output.stderr).trim(), "container not running");
                return Err(GrantCheck::Unchecked(NOT_RUNNING.into()));
            }
            Ok(PathBuf::from(format!("/proc/{pid}/ns/net")))
        }
    }
}

/// Dials `address:port` from inside the network namespace `netns`, bounded
/// by `timeout` (name resolution included, from that position). A missing
/// namespace file is [`NOT_RUNNING`], never a failure.
pub async fn dial(netns: &Path, address: &str, port: u16, timeout: Duration) -> GrantCheck {
    let (tx, rx) = tokio::sync::oneshot::channel();
    let (netns, address) = (netns.to_owned(), address.to_owned());
    let spawned = std::thread::Builder::new()
        .name("mesh-grants-dial".into())
        .spawn(move || {
            let _ = tx.send(dial_here(&netns, &address, port, timeout));
        });
    if let Err(error) = spawned {
        return GrantCheck::Unchecked(format!("cannot start a dialling thread: {error}"));
    }
    // The connect is bounded by `timeout`; resolution may take longer.
    match tokio::time::timeout(timeout * 2 + Duration::from_secs(1), rx).await {
        Ok(Ok(check)) => check,
        Ok(Err(_)) => GrantCheck::Unchecked("the dialling thread ended without an answer".into()),
        Err(_) => GrantCheck::Failed(format!(
            "no answer within {}",
            humantime::format_duration(timeout * 2)
        )),
    }
}

/// On this (dedicated) thread: enter the namespace, then connect.
fn dial_here(netns: &Path, address: &str, port: u16, timeout: Duration) -> GrantCheck {
    let file = match File::open(netns) {
        Ok(file) => file,
        Err(error) if error.kind() == io::ErrorKind::NotFound => {
            return GrantCheck::Unchecked(NOT_RUNNING.into())
        }
        Err(error) => {
            return GrantCheck::Unchecked(format!(
                "cannot open network namespace {}: {error}",
                netns.display()
            ))
        }
    };
    if let Err(error) = move_into_link_name_space(file.as_fd(), Some(LinkNameSpaceType::Network)) {
        return GrantCheck::Unchecked(format!(
            "cannot enter network namespace {}: {}",
            netns.display(),
            io::Error::from(error)
        ));
    }
    connect(address, port, timeout)
}

/// Connects to `address:port` from the calling thread's network position;
/// the connection is closed at once.
pub fn connect(address: &str, port: u16, timeout: Duration) -> GrantCheck {
    let addrs = match (address, port).to_socket_addrs() {
        Ok(addrs) => addrs.collect::<Vec<_>>(),
        Err(error) => return GrantCheck::Failed(format!("cannot resolve {address}: {error}")),
    };
    let mut last = format!("{address} resolves to no address");
    for addr in addrs {
        match TcpStream::connect_timeout(&addr, timeout) {
            Ok(stream) => {
                drop(stream);
                return GrantCheck::Reached;
            }
            Err(error) => last = connect_error(&error, timeout),
        }
    }
    GrantCheck::Failed(last)
}

/// A connect error, said briefly, by its kind first.
fn connect_error(error: &io::Error, timeout: Duration) -> String {
    match error.kind() {
        io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock => format!(
            "connect timed out after {}",
            humantime::format_duration(timeout)
        ),
        io::ErrorKind::ConnectionRefused => "connection refused".into(),
        _ => format!("connect failed: {error}"),
    }
}
