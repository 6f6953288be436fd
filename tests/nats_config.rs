//! The recipe of docs/operating.md for merging the rendered permissions
//! into an operator's own nats-server configuration, tried on the real
//! nats-server: the operator's file keeps its own blocks (`server_name`,
//! `listen`, `jetstream { store_dir }`) and says `include ./mesh-auth.conf`;
//! `mesh-controller permissions --format nats` writes that file. nats-server
//! accepts it (`-t`), starts with it and nothing on its command line, and
//! enforces the users: the controller logs in and reaches JetStream, a
//! wrong password is refused, a provider may not publish another's events,
//! and a watcher (`--watcher dashboard`) sees the events and publishes nothing.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use mesh_test_support::mesh::binary;
use serde_json::json;

/// The installed nats-server: `PATH` first, then the Debian package's place.
fn nats_server() -> PathBuf {
    let on_path = std::env::var_os("PATH")
        .into_iter()
        .flat_map(|paths| std::env::split_paths(&paths).collect::<Vec<_>>())
        .map(|dir| dir.join("nats-server"))
        .find(|path| path.is_file());
    on_path
        .or_else(|| {
            ["/usr/sbin/nats-server", "/usr/local/sbin/nats-server"]
                .map(PathBuf::from)
                .into_iter()
                .find(|path| path.is_file())
        })
        .expect("nats-server is installed (the Debian package nats-server)")
}

/// A nats-server started as `nats-server -c main.conf`, killed on drop.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Renders the permissions of `declaration` into `dir/mesh-auth.conf`,
/// every user's password `pw-<user>` in `dir/credentials`.
fn render(dir: &Path, users: &[&str]) {
    let declaration = json!({"modules": [
        {"module": "postgres", "machine": "db-1", "provides": ["postgres-database"]},
        {"module": "forge", "machine": "app-1",
         "requires": [{"provision": "postgres-database", "from": "postgres@db-1"}]},
    ]});
    std::fs::write(dir.join("declaration.json"), declaration.to_string()).unwrap();
    std::fs::create_dir(dir.join("credentials")).unwrap();
    for user in users {
        std::fs::write(dir.join("credentials").join(user), format!("pw-{user}")).unwrap();
    }
    let rendered = Command::new(binary("mesh-controller"))
        .arg("--declaration")
        .arg(dir.join("declaration.json"))
        .args(["permissions", "--format", "nats", "--credentials"])
        .arg(dir.join("credentials"))
        .args(["--watcher", "dashboard"])
        .output()
        .unwrap();
    assert!(
        rendered.status.success(),
        "{}",
        String::from_utf8_lossy(&rendered.stderr)
    );
    std::fs::write(dir.join("mesh-auth.conf"), rendered.stdout).unwrap();
}

#[tokio::test]
async fn the_rendered_permissions_are_included_in_the_operators_own_configuration() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    render(
        d,
        &[
            "forge@app-1",
            "postgres@db-1",
            "_grants@app-1",
            "controller",
            "dashboard",
        ],
    );
    let port = mesh_test_support::free_port();
    // The operator's own file: its blocks, the store dir once (in the file,
    // not also on the command line), and the include.
    let main = format!(
        "# the operator's nats-server configuration\n\
         server_name: nats-1\n\
         listen: 127.0.0.1:{port}\n\
         jetstream {{\n  store_dir: \"{}\"\n}}\n\
         include ./mesh-auth.conf\n",
        d.join("jetstream").display()
    );
    std::fs::write(d.join("main.conf"), main).unwrap();

    let checked = Command::new(nats_server())
        .arg("-c")
        .arg(d.join("main.conf"))
        .arg("-t")
        .output()
        .unwrap();
    assert!(
        checked.status.success(),
        "nats-server -t: {}",
        String::from_utf8_lossy(&checked.stderr)
    );
    // The pitfall the recipe avoids: a store dir also on the command line.
    let twice = Command::new(nats_server())
        .arg("-c")
        .arg(d.join("main.conf"))
        .arg("--store_dir")
        .arg(d.join("elsewhere"))
        .arg("-t")
        .output()
        .unwrap();
    assert!(!twice.status.success());
    assert!(
        String::from_utf8_lossy(&twice.stderr).contains("Duplicate 'store_dir'"),
        "{}",
        String::from_utf8_lossy(&twice.stderr)
    );

    let _server = Server(
        Command::new(nats_server())
            .arg("-c")
            .arg(d.join("main.conf"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let url = format!("nats://127.0.0.1:{port}");
    let connect = |user: &'static str, password: String| {
        let url = url.clone();
        async move {
            async_nats::ConnectOptions::new()
                .user_and_password(user.to_owned(), password)
                .custom_inbox_prefix(match user {
                    "controller" => "_INBOX._controller",
                    _ => "_INBOX.db-1.postgres",
                })
                .connect(url)
                .await
        }
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    let controller = loop {
        match connect("controller", "pw-controller".to_owned()).await {
            Ok(client) => break client,
            Err(error) => {
                assert!(
                    Instant::now() < deadline,
                    "the server never let the controller in: {error}"
                );
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    };
    // JetStream is on, and the controller may ask about its stream.
    let answer = tokio::time::timeout(
        Duration::from_secs(10),
        controller.request("$JS.API.STREAM.INFO.MESH_EVENTS", "".into()),
    )
    .await
    .expect("JetStream answers")
    .expect("the controller may ask");
    let answer: serde_json::Value = serde_json::from_slice(&answer.payload).unwrap();
    assert_eq!(answer["error"]["code"], 404, "{answer}");

    // A wrong password is refused.
    assert!(connect("controller", "not-the-password".to_owned())
        .await
        .is_err());

    // The watcher subscribes to the events and sees a provider's.
    let watcher = connect("dashboard", "pw-dashboard".to_owned())
        .await
        .unwrap();
    let mut seen = watcher
        .subscribe("mesh.event.*.*.provisioner.*")
        .await
        .unwrap();
    watcher.flush().await.unwrap();

    // The provider may publish its own events, never another provider's.
    let provider = connect("postgres@db-1", "pw-postgres@db-1".to_owned())
        .await
        .unwrap();
    let mut errors = Vec::new();
    provider
        .publish("mesh.event.db-1.postgres.provisioner.alive", "{}".into())
        .await
        .unwrap();
    provider.flush().await.unwrap();
    let event = tokio::time::timeout(Duration::from_secs(10), futures::StreamExt::next(&mut seen))
        .await
        .expect("the watcher sees the provider's alive")
        .unwrap();
    assert_eq!(
        event.subject.as_str(),
        "mesh.event.db-1.postgres.provisioner.alive"
    );
    // It publishes nothing: not an event, not an approval.
    assert!(
        refused_publish(
            &url,
            "dashboard",
            "mesh.event.db-1.postgres.provisioner.failing"
        )
        .await,
        "the watcher published an event"
    );
    assert!(
        refused_publish(
            &url,
            "dashboard",
            "mesh.cmd.db-1.postgres.provisioner.approve"
        )
        .await,
        "the watcher sent an approval"
    );
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let watched = async_nats::ConnectOptions::new()
        .user_and_password("postgres@db-1".to_owned(), "pw-postgres@db-1".to_owned())
        .custom_inbox_prefix("_INBOX.db-1.postgres")
        .event_callback(move |event| {
            let tx = tx.clone();
            async move {
                let _ = tx.send(event.to_string());
            }
        })
        .connect(&url)
        .await
        .unwrap();
    watched
        .publish("mesh.event.db-9.postgres.provisioner.alive", "{}".into())
        .await
        .unwrap();
    watched.flush().await.unwrap();
    let refused = tokio::time::timeout(Duration::from_secs(10), async {
        while let Some(event) = rx.recv().await {
            errors.push(event.clone());
            if event.to_lowercase().contains("permissions violation") {
                return;
            }
        }
    })
    .await;
    assert!(
        refused.is_ok(),
        "no permissions violation for another provider's subject: {errors:?}"
    );
}

/// Whether the server refuses `user` (password `pw-<user>`) publishing to
/// `subject`: the refusal comes back as a permissions violation event.
async fn refused_publish(url: &str, user: &str, subject: &str) -> bool {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let client = async_nats::ConnectOptions::new()
        .user_and_password(user.to_owned(), format!("pw-{user}"))
        .event_callback(move |event| {
            let tx = tx.clone();
            async move {
                let _ = tx.send(event.to_string());
            }
        })
        .connect(url)
        .await
        .unwrap();
    client
        .publish(subject.to_owned(), "{}".into())
        .await
        .unwrap();
    client.flush().await.unwrap();
    tokio::time::timeout(Duration::from_secs(10), async {
        while let Some(event) = rx.recv().await {
            if event.to_lowercase().contains("permissions violation") {
                return true;
            }
        }
        false
    })
    .await
    .unwrap_or(false)
}

#[test]
fn a_watcher_named_like_another_user_is_refused_saying_which() {
    let dir = tempfile::tempdir().unwrap();
    let declaration = json!({"modules": [
        {"module": "postgres", "machine": "db-1", "provides": ["postgres-database"]}]});
    std::fs::write(dir.path().join("d.json"), declaration.to_string()).unwrap();
    for (watchers, said) in [
        (
            &["controller"][..],
            "--watcher controller: that is the controller's user",
        ),
        (
            &["dash", "dash"][..],
            "--watcher dash: a user of that name is in the permissions already",
        ),
    ] {
        let mut command = Command::new(binary("mesh-controller"));
        command
            .arg("--declaration")
            .arg(dir.path().join("d.json"))
            .arg("permissions");
        for name in watchers {
            command.args(["--watcher", name]);
        }
        let out = command.output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains(said), "{stderr}");
        assert!(out.stdout.is_empty(), "nothing half rendered");
    }
}
