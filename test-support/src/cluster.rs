//! A private cluster of three nats-server processes with JetStream.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tempfile::TempDir;

use crate::nats::nats_server_binary;
use crate::{
    file_len, free_port, poll_until, read_lossy, read_lossy_from, tail, terminate, START_ATTEMPTS,
    START_DEADLINE,
};

/// How many servers a [`NatsCluster`] has.
pub const CLUSTER_SIZE: usize = 3;

/// The cluster's name (`cluster { name }`).
const CLUSTER_NAME: &str = "mesh-test";

/// Three `nats-server` processes (the installed binary) on 127.0.0.1, on
/// free ports, with routes between them (`cluster { name, listen, routes }`)
/// and JetStream on each (own store dir, distinct `server_name`): a
/// JetStream cluster whose streams may have up to three replicas.
///
/// Each member can be killed (`kill -9`) and started again on its own,
/// with the same ports, store dir and configuration. An optional
/// configuration (for example the `authorization` block `mesh-controller
/// permissions --format nats` renders) is rendered into every member, the
/// same on each, as a cluster needs.
///
/// Dropping it kills the servers and removes their dirs.
///
/// ```no_run
/// # async fn example() {
/// let cluster = mesh_test_support::NatsCluster::start();
/// let servers: Vec<async_nats::ServerAddr> =
///     (0..3).map(|i| cluster.url(i).parse().unwrap()).collect();
/// let client = async_nats::connect(servers).await.unwrap();
/// # }
/// ```
pub struct NatsCluster {
    binary: PathBuf,
    dir: TempDir,
    config: Value,
    members: Vec<Member>,
}

struct Member {
    name: String,
    port: u16,
    cluster_port: u16,
    http_port: u16,
    child: Option<Child>,
    /// Where the log of the current start begins.
    log_offset: u64,
}

impl NatsCluster {
    /// Starts three servers and blocks until the cluster has a JetStream
    /// meta leader that every member knows; panics (with the log tails) if
    /// it does not within 30 s.
    pub fn start() -> NatsCluster {
        Self::start_with_config(json!({}))
    }

    /// Like [`NatsCluster::start`], with `config` (a JSON object, such as an
    /// `authorization` block) merged into every member's configuration.
    /// The keys the cluster sets itself (`server_name`, `host`, `port`,
    /// `http`, `jetstream`, `cluster`) win over `config`'s.
    pub fn start_with_config(config: Value) -> NatsCluster {
        assert!(config.is_object(), "the cluster's config is a JSON object");
        let dir = crate::scratch::private_dir("nats-cluster");
        let mut cluster = NatsCluster {
            binary: nats_server_binary(),
            dir,
            config,
            members: Vec::new(),
        };
        for attempt in 1..=START_ATTEMPTS {
            cluster.members = (1..=CLUSTER_SIZE)
                .map(|n| Member {
                    name: format!("n{n}"),
                    port: free_port(),
                    cluster_port: free_port(),
                    http_port: free_port(),
                    child: None,
                    log_offset: 0,
                })
                .collect();
            for index in 0..CLUSTER_SIZE {
                cluster.write_config(index);
                cluster.spawn(index);
            }
            match cluster.wait_ready(&[0, 1, 2]) {
                Ok(()) => {
                    cluster.wait_for_meta_leader();
                    return cluster;
                }
                Err(why) if attempt < START_ATTEMPTS && why.contains("address already in use") => {
                    cluster.kill_all();
                }
                Err(why) => cluster.fail(&why),
            }
        }
        unreachable!("the loop above returns or panics")
    }

    /// Every member's client URL, comma-separated (what `--nats` takes).
    pub fn urls(&self) -> String {
        (0..CLUSTER_SIZE)
            .map(|i| self.url(i))
            .collect::<Vec<_>>()
            .join(",")
    }

    /// The client URL of member `index` (0, 1 or 2).
    pub fn url(&self, index: usize) -> String {
        format!("nats://127.0.0.1:{}", self.members[index].port)
    }

    /// The client port of member `index`.
    pub fn port(&self, index: usize) -> u16 {
        self.members[index].port
    }

    /// The member whose client port is `port`, if any.
    pub fn member_on(&self, port: u16) -> Option<usize> {
        self.members.iter().position(|m| m.port == port)
    }

    /// The `server_name` of member `index` (`n1`, `n2`, `n3`).
    pub fn name(&self, index: usize) -> &str {
        &self.members[index].name
    }

    /// Kills member `index` with SIGKILL (no goodbye to its routes or
    /// clients) and reaps it. Its store dir is kept.
    pub fn kill(&mut self, index: usize) {
        if let Some(mut child) = self.members[index].child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts member `index` again after [`NatsCluster::kill`]: same ports,
    /// store dir and configuration. Blocks until it is ready and knows the
    /// meta leader.
    pub fn start_again(&mut self, index: usize) {
        assert!(
            !self.is_running(index),
            "NatsCluster::start_again({index}) while it runs; kill it first"
        );
        self.spawn(index);
        if let Err(why) = self.wait_ready(&[index]) {
            self.fail(&why);
        }
        self.wait_for_meta_leader();
    }

    /// Whether member `index` runs.
    pub fn is_running(&mut self, index: usize) -> bool {
        let member = &mut self.members[index];
        match member.child.as_mut().map(Child::try_wait) {
            Some(Ok(None)) | Some(Err(_)) => true,
            Some(Ok(Some(_))) => {
                member.child = None;
                false
            }
            None => false,
        }
    }

    /// The log of member `index` (all its starts) and what it wrote to
    /// stdout/stderr.
    pub fn log(&self, index: usize) -> String {
        let mut log = read_lossy(&self.log_path(index));
        let stderr = read_lossy(&self.stderr_path(index));
        if !stderr.trim().is_empty() {
            log.push_str("\n--- stdout/stderr ---\n");
            log.push_str(&stderr);
        }
        log
    }

    /// Blocks until every running member answers `/jsz` naming a meta
    /// leader that runs; panics after 30 s.
    pub fn wait_for_meta_leader(&self) {
        let deadline = Instant::now() + START_DEADLINE;
        let running: Vec<&Member> = self.members.iter().filter(|m| m.child.is_some()).collect();
        let names: Vec<&str> = running.iter().map(|m| m.name.as_str()).collect();
        let agreed = poll_until(deadline, || {
            let leaders: Vec<Option<String>> =
                running.iter().map(|m| meta_leader(m.http_port)).collect();
            let first = leaders.first().cloned().flatten()?;
            let all_agree = leaders.iter().all(|l| l.as_deref() == Some(first.as_str()));
            (all_agree && names.contains(&first.as_str())).then_some(first)
        });
        if agreed.is_none() {
            self.fail(
                "the cluster elected no JetStream meta leader that every running member knows",
            );
        }
    }

    fn member_dir(&self, index: usize) -> PathBuf {
        self.dir.path().join(&self.members[index].name)
    }

    fn log_path(&self, index: usize) -> PathBuf {
        self.member_dir(index).join("nats-server.log")
    }

    fn stderr_path(&self, index: usize) -> PathBuf {
        self.member_dir(index).join("nats-server.stderr")
    }

    fn config_path(&self, index: usize) -> PathBuf {
        self.member_dir(index).join("nats-server.json")
    }

    fn write_config(&self, index: usize) {
        let member = &self.members[index];
        let dir = self.member_dir(index);
        std::fs::create_dir_all(&dir).expect("creating a cluster member's dir");
        let routes: Vec<String> = self
            .members
            .iter()
            .filter(|m| m.name != member.name)
            .map(|m| format!("nats-route://127.0.0.1:{}", m.cluster_port))
            .collect();
        let mut config = self.config.clone();
        let own = json!({
            "server_name": member.name,
            "host": "127.0.0.1",
            "port": member.port,
            "http": format!("127.0.0.1:{}", member.http_port),
            "jetstream": { "store_dir": dir.join("jetstream") },
            "cluster": {
                "name": CLUSTER_NAME,
                "listen": format!("127.0.0.1:{}", member.cluster_port),
                "routes": routes,
            },
        });
        for (key, value) in own.as_object().expect("an object") {
            config[key] = value.clone();
        }
        let text = serde_json::to_string_pretty(&config).expect("serializing the nats config");
        std::fs::write(self.config_path(index), text).expect("writing the nats config file");
    }

    fn spawn(&mut self, index: usize) {
        // A start appends to the log: only what this start writes counts.
        self.members[index].log_offset = file_len(&self.log_path(index));
        let stderr = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.stderr_path(index))
            .expect("opening the nats-server stderr file");
        let stdout = stderr.try_clone().expect("cloning a file handle");
        let child = Command::new(&self.binary)
            .arg("-c")
            .arg(self.config_path(index))
            .arg("-l")
            .arg(self.log_path(index))
            .current_dir(self.member_dir(index))
            .stdin(Stdio::null())
            .stdout(stdout)
            .stderr(stderr)
            .spawn()
            .unwrap_or_else(|error| {
                panic!(
                    "could not run {}: {error}; install the Debian package `nats-server`",
                    self.binary.display()
                )
            });
        self.members[index].child = Some(child);
    }

    /// Waits until the members `indexes` logged "Server is ready" since
    /// their last start (the log offset taken before each was spawned).
    fn wait_ready(&mut self, indexes: &[usize]) -> Result<(), String> {
        let offsets: Vec<u64> = indexes
            .iter()
            .map(|&i| self.members[i].log_offset)
            .collect();
        let deadline = Instant::now() + START_DEADLINE;
        for (&index, offset) in indexes.iter().zip(offsets) {
            let log_path = self.log_path(index);
            let stderr_path = self.stderr_path(index);
            let outcome = poll_until(deadline, || {
                let fresh = read_lossy_from(&log_path, offset);
                let child = self.members[index].child.as_mut()?;
                match child.try_wait() {
                    Ok(Some(status)) => Some(Err(format!(
                        "nats-server {} exited during startup ({status}): {}",
                        index + 1,
                        tail(&format!("{fresh}\n{}", read_lossy(&stderr_path)), 5).to_lowercase()
                    ))),
                    Ok(None) if fresh.contains("Server is ready") => Some(Ok(())),
                    Ok(None) => None,
                    Err(error) => Some(Err(format!("waiting for nats-server failed: {error}"))),
                }
            });
            match outcome {
                Some(Ok(())) => {}
                Some(Err(why)) => return Err(why),
                None => {
                    return Err(format!(
                        "nats-server {} did not log \"Server is ready\" within {START_DEADLINE:?}",
                        index + 1
                    ))
                }
            }
        }
        Ok(())
    }

    fn kill_all(&mut self) {
        for member in &mut self.members {
            if let Some(mut child) = member.child.take() {
                terminate(&mut child, Duration::ZERO);
            }
        }
    }

    /// Panics with `why` and every member's log tail.
    fn fail(&self, why: &str) -> ! {
        let mut logs = String::new();
        for index in 0..self.members.len() {
            logs.push_str(&format!(
                "\n--- {} (client port {}) log tail ---\n{}",
                self.members[index].name,
                self.members[index].port,
                tail(&self.log(index), 30)
            ));
        }
        panic!(
            "{why}\nbinary: {}\ndir: {}{logs}",
            self.binary.display(),
            self.dir.path().display()
        )
    }
}

/// The JetStream meta leader a member's `/jsz` names, if it answers with one.
fn meta_leader(http_port: u16) -> Option<String> {
    let body = http_get(http_port, "/jsz")?;
    let value: Value = serde_json::from_str(&body).ok()?;
    value["meta_cluster"]["leader"]
        .as_str()
        .filter(|leader| !leader.is_empty())
        .map(str::to_owned)
}

/// The body of a plain HTTP GET on 127.0.0.1 (the monitoring port).
fn http_get(port: u16, path: &str) -> Option<String> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    write!(stream, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").ok()?;
    let mut response = String::new();
    stream.read_to_string(&mut response).ok()?;
    let (head, body) = response.split_once("\r\n\r\n")?;
    head.starts_with("HTTP/1.1 200")
        .then(|| body.to_owned())
        .or_else(|| head.starts_with("HTTP/1.0 200").then(|| body.to_owned()))
}

impl Drop for NatsCluster {
    fn drop(&mut self) {
        for member in &mut self.members {
            if let Some(mut child) = member.child.take() {
                let _ = child.kill();
                let _ = child.wait();
            }
        }
    }
}

impl std::fmt::Debug for NatsCluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NatsCluster")
            .field("urls", &self.urls())
            .field("dir", &self.dir.path())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_stream_with_three_replicas_outlives_a_killed_member() {
        let mut cluster = NatsCluster::start();
        let servers: Vec<async_nats::ServerAddr> = (0..CLUSTER_SIZE)
            .map(|i| cluster.url(i).parse().unwrap())
            .collect();
        let client = async_nats::connect(servers).await.unwrap();
        let js = async_nats::jetstream::new(client.clone());
        js.create_stream(async_nats::jetstream::stream::Config {
            name: "T".into(),
            subjects: vec!["t.>".into()],
            num_replicas: 3,
            ..Default::default()
        })
        .await
        .unwrap_or_else(|e| panic!("{e}\n{}", cluster.log(0)));
        js.publish("t.1", "one".into())
            .await
            .unwrap()
            .await
            .unwrap();
        let connected = cluster
            .member_on(client.server_info().port)
            .expect("connected to a member");
        cluster.kill(connected);
        assert!(!cluster.is_running(connected));
        let ack = tokio::time::timeout(Duration::from_secs(30), async {
            loop {
                match js.publish("t.2", "two".into()).await {
                    Ok(ack) => match ack.await {
                        Ok(ack) => return ack,
                        Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
                    },
                    Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
                }
            }
        })
        .await
        .expect("the stream never took an event after one member was killed");
        assert_eq!(ack.sequence, 2);
        cluster.start_again(connected);
        assert!(cluster.is_running(connected));
    }
}
