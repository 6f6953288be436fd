//! The loop over a real nats-server (started by the test support): events
//! on the right subjects with the bodies of docs/contracts/bus.md#bodies,
//! a `recovered` kept pending through a server outage, a refused publish logged, approvals answered.
//! Real time here: async-nats's timers do not work on a paused clock.

use std::path::Path;
use std::time::Duration;

use mesh_sdk::internals::FakeProvisioner;
use mesh_sdk::run_until;
use mesh_sdk::testing::LogCapture;
use mesh_sdk::ProviderArgs;
use mesh_test_support::{create_events_stream, NatsServer};
use serde_json::{json, Value};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

const WAIT: Duration = Duration::from_secs(20);

fn args(dir: &Path, nats: &str) -> ProviderArgs {
    let mut args = ProviderArgs {
        pass_every: Duration::from_millis(100),
        failing_after: Duration::from_millis(500),
        ..ProviderArgs::with_defaults(dir.join("contributions.json"))
    };
    args.service.nats.url = nats.into();
    args.service.ack_timeout = Duration::from_millis(500);
    args
}

/// Writes a contributions file for `postgres@db-1` listing `consumers`; a
/// consumer's secret is written when given.
fn contributions(dir: &Path, consumers: &[(&str, Option<&str>)]) {
    let entries: Vec<Value> = consumers
        .iter()
        .map(|(c, secret)| {
            if let Some(secret) = secret {
                std::fs::write(dir.join(format!("{c}.secret")), secret).unwrap();
            }
            json!({"consumer": c, "machine": "app-1", "provision": "postgres-database", "secret_file": format!("{c}.secret")})
        })
        .collect();
    let file = json!({"provider": {"module": "postgres", "machine": "db-1"}, "consumers": entries});
    std::fs::write(dir.join("contributions.json"), file.to_string()).unwrap();
}

struct Provider {
    stop: Option<oneshot::Sender<()>>,
    task: JoinHandle<()>,
}

impl Provider {
    fn start(fake: FakeProvisioner, args: ProviderArgs) -> Provider {
        let (stop, stopped) = oneshot::channel();
        let task = tokio::spawn(async move {
            run_until(fake, &args, async {
                let _ = stopped.await;
            })
            .await
            .unwrap();
        });
        Provider {
            stop: Some(stop),
            task,
        }
    }

    async fn stop(mut self) {
        let _ = self.stop.take().unwrap().send(());
        tokio::time::timeout(WAIT, self.task)
            .await
            .expect("the provider did not stop after its pass")
            .unwrap();
    }
}

/// Every message in the stream: (subject, body).
async fn stream_messages(client: &async_nats::Client) -> Vec<(String, Value)> {
    let js = async_nats::jetstream::new(client.clone());
    let Ok(mut stream) = js.get_stream("MESH_EVENTS").await else {
        return Vec::new();
    };
    let Ok(info) = stream.info().await else {
        return Vec::new();
    };
    let (first, last) = (info.state.first_sequence, info.state.last_sequence);
    let mut out = Vec::new();
    for seq in first..=last {
        if let Ok(message) = stream.get_raw_message(seq).await {
            out.push((
                message.subject.to_string(),
                serde_json::from_slice(&message.payload).unwrap(),
            ));
        }
    }
    out
}

/// Waits until the stream holds a message matching `want`; returns all messages then.
async fn wait_for(
    client: &async_nats::Client,
    what: &str,
    want: impl Fn(&str, &Value) -> bool,
) -> Vec<(String, Value)> {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let all = stream_messages(client).await;
        if all.iter().any(|(s, v)| want(s, v)) {
            return all;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "never saw {what} in the stream; it holds {all:#?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn is(
    subject_kind: &'static str,
    consumer: &'static str,
    field: &'static str,
    value: &'static str,
) -> impl Fn(&str, &Value) -> bool {
    move |s, v| {
        s == format!("mesh.event.db-1.postgres.provisioner.{subject_kind}")
            && v["consumer"] == consumer
            && v[field] == value
    }
}

#[tokio::test]
async fn events_arrive_on_their_subjects_and_a_recovery_survives_an_outage() {
    let mut nats = NatsServer::start();
    let client = async_nats::connect(nats.url()).await.unwrap();
    create_events_stream(&client).await;
    let dir = tempfile::tempdir().unwrap();
    contributions(dir.path(), &[("forge", Some("pw-forge")), ("wiki", None)]);
    let provider = Provider::start(FakeProvisioner::new(), args(dir.path(), &nats.url()));

    let all = wait_for(
        &client,
        "failing wiki",
        is("failing", "wiki", "class", "secret-unreadable"),
    )
    .await;
    let (_, recovered) = all
        .iter()
        .find(|(s, _)| s == "mesh.event.db-1.postgres.provisioner.recovered")
        .expect("forge's first success is said");
    assert_eq!(recovered["consumer"], "forge");
    assert_eq!(recovered["reason"], "first-success-after-start");
    assert_eq!(recovered["consumer_machine"], "app-1");
    assert_eq!(recovered["provision"], "postgres-database");
    let (_, failing) = all.iter().find(|(s, _)| s.ends_with(".failing")).unwrap();
    let keys: Vec<&String> = failing.as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        vec![
            "attempts",
            "class",
            "consumer",
            "consumer_machine",
            "error",
            "provision",
            "said_at",
            "since",
            "v"
        ]
    );
    assert!(failing["attempts"].as_u64().unwrap() >= 5);
    assert!(failing["error"]
        .as_str()
        .unwrap()
        .contains("wiki.secret is missing"));

    // The bus goes away; wiki recovers meanwhile; the event is held.
    nats.stop();
    std::fs::write(dir.path().join("wiki.secret"), "pw-wiki").unwrap();
    tokio::time::sleep(Duration::from_secs(2)).await;
    nats.start_again();
    let all = wait_for(
        &client,
        "recovered wiki",
        is("recovered", "wiki", "reason", "success"),
    )
    .await;
    let recoveries = all
        .iter()
        .filter(|(s, v)| s.ends_with(".recovered") && v["consumer"] == "wiki")
        .count();
    assert_eq!(
        recoveries, 1,
        "sent again with the same message id, stored once: {all:#?}"
    );
    provider.stop().await;
}

#[tokio::test]
async fn a_publish_refused_by_permissions_is_logged() {
    let (logs, _guard) = LogCapture::start();
    let nats = NatsServer::start_with_config(json!({
        "authorization": {"users": [
            {"user": "admin", "password": "admin-pw"},
            {"user": "postgres@db-1", "password": "provider-pw",
             "permissions": {"publish": {"allow": ["mesh.event.db-9.postgres.provisioner.*"]},
                             "subscribe": {"allow": ["_INBOX.db-1.postgres.>", "mesh.cmd.db-1.postgres.>"]}}}
        ]}
    }));
    let admin =
        async_nats::ConnectOptions::with_user_and_password("admin".into(), "admin-pw".into())
            .connect(nats.url())
            .await
            .unwrap();
    create_events_stream(&admin).await;
    let dir = tempfile::tempdir().unwrap();
    contributions(dir.path(), &[("forge", Some("pw-forge"))]);
    std::fs::write(dir.path().join("nats-password"), "provider-pw\n").unwrap();
    let mut args = args(dir.path(), &nats.url());
    args.service.nats.user = Some("postgres@db-1".into());
    args.service.nats.password_file = Some(dir.path().join("nats-password"));
    let provider = Provider::start(FakeProvisioner::new(), args);

    let deadline = tokio::time::Instant::now() + WAIT;
    let seen = |text: String| {
        text.contains("Permissions Violation for Publish")
            && text.contains("events not acknowledged by the bus")
    };
    while !seen(logs.text()) {
        assert!(
            tokio::time::Instant::now() < deadline,
            "no refusal logged:\n{}",
            logs.text()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let text = logs.text();
    assert!(
        text.contains("the bus refused a publish or subscribe"),
        "{text}"
    );
    assert!(
        text.contains("events not acknowledged by the bus"),
        "{text}"
    );
    assert!(
        !text.contains("provider-pw") && !text.contains("pw-forge"),
        "{text}"
    );
    assert!(
        stream_messages(&admin).await.is_empty(),
        "nothing reached the stream"
    );
    provider.stop().await;
}

#[tokio::test]
async fn without_the_stream_the_log_says_it_is_the_controllers_and_how_to_start_it() {
    let (logs, _guard) = LogCapture::start();
    let nats = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    contributions(dir.path(), &[("forge", Some("pw-forge"))]);
    let provider = Provider::start(FakeProvisioner::new(), args(dir.path(), &nats.url()));
    let deadline = tokio::time::Instant::now() + WAIT;
    while !logs.text().contains("events not acknowledged by the bus") {
        assert!(
            tokio::time::Instant::now() < deadline,
            "nothing logged:\n{}",
            logs.text()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let text = logs.text();
    assert!(
        text.contains(
            "no stream found for given subject: the stream MESH_EVENTS is the controller's"
        ),
        "{text}"
    );
    assert!(text.contains("mesh-controller serve"), "{text}");
    provider.stop().await;
}

/// A provider serving forge and wiki on a fresh server, once wiki was served.
struct Serving {
    _nats: NatsServer,
    client: async_nats::Client,
    dir: tempfile::TempDir,
    fake: FakeProvisioner,
    provider: Provider,
}

async fn serving_forge_and_wiki() -> Serving {
    let nats = NatsServer::start();
    let client = async_nats::connect(nats.url()).await.unwrap();
    create_events_stream(&client).await;
    let dir = tempfile::tempdir().unwrap();
    contributions(
        dir.path(),
        &[("forge", Some("pw-forge")), ("wiki", Some("pw-wiki"))],
    );
    let fake = FakeProvisioner::new();
    let provider = Provider::start(fake.clone(), args(dir.path(), &nats.url()));
    wait_for(
        &client,
        "wiki served",
        is("recovered", "wiki", "reason", "first-success-after-start"),
    )
    .await;
    Serving {
        _nats: nats,
        client,
        dir,
        fake,
        provider,
    }
}

#[tokio::test]
async fn approve_requests_are_answered_over_the_bus() {
    let Serving {
        client,
        dir,
        fake,
        provider,
        _nats: _server,
    } = serving_forge_and_wiki().await;
    contributions(dir.path(), &[("forge", None)]);

    let subject = "mesh.cmd.db-1.postgres.provisioner.approve";
    let ask = |body: &'static str| {
        let client = client.clone();
        async move {
            let reply = tokio::time::timeout(WAIT, client.request(subject, body.into()))
                .await
                .expect("no reply in time")
                .unwrap();
            serde_json::from_slice::<Value>(&reply.payload).unwrap()
        }
    };
    let reply = ask("{not json").await;
    assert_eq!(reply["ok"], false);
    assert!(reply["detail"].as_str().unwrap().contains("malformed"));
    let reply = ask(r#"{"v":1,"consumer":"wiki","delete":true}"#).await;
    assert_eq!(reply["ok"], false, "{reply}");
    let reply = ask(r#"{"v":1,"consumer":"wiki","delete":false}"#).await;
    assert_eq!(
        reply,
        json!({"ok": true, "detail": "wiki retired: disabled, nothing deleted"})
    );
    wait_for(
        &client,
        "wiki retired",
        is("retirement", "wiki", "action", "retired"),
    )
    .await;
    wait_for(
        &client,
        "wiki recovered as retired",
        is("recovered", "wiki", "reason", "retired"),
    )
    .await;
    let reply = ask(r#"{"v":1,"consumer":"wiki","delete":true}"#).await;
    assert_eq!(reply["ok"], true, "{reply}");
    wait_for(
        &client,
        "wiki deleted",
        is("retirement", "wiki", "action", "deleted"),
    )
    .await;
    assert_eq!(fake.calls("delete"), 1);
    provider.stop().await;
}

#[tokio::test]
async fn an_approval_is_answered_while_a_pass_runs() {
    let Serving {
        client,
        dir,
        fake,
        provider,
        _nats: _server,
    } = serving_forge_and_wiki().await;
    // wiki is withdrawn; once a pass read that file, forge's next make
    // hangs, so the pass that attempts it does not end.
    contributions(dir.path(), &[("forge", None)]);
    let ensures_after = |n: usize| {
        let (fake, start) = (fake.clone(), fake.calls("ensure"));
        async move {
            while fake.calls("ensure") < start + n {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    };
    // The second make after the write is of a pass that began after it.
    ensures_after(2).await;
    let gate = std::sync::Arc::new(tokio::sync::Notify::new());
    fake.with(|b| b.stall.insert("forge".parse().unwrap(), gate.clone()));
    ensures_after(1).await;

    let reply = tokio::time::timeout(
        Duration::from_secs(5),
        client.request(
            "mesh.cmd.db-1.postgres.provisioner.approve",
            r#"{"v":1,"consumer":"wiki","delete":false}"#.into(),
        ),
    )
    .await
    .expect("the approval waited behind the running pass")
    .unwrap();
    let reply: Value = serde_json::from_slice(&reply.payload).unwrap();
    assert_eq!(
        reply,
        json!({"ok": true, "detail": "wiki retired: disabled, nothing deleted"})
    );
    // forge is withdrawn too, but the running pass attempts it (its file
    // was read before): an approval for it is refused while that pass runs.
    contributions(dir.path(), &[]);
    let reply = client
        .request(
            "mesh.cmd.db-1.postgres.provisioner.approve",
            r#"{"v":1,"consumer":"forge","delete":false}"#.into(),
        )
        .await
        .unwrap();
    let reply: Value = serde_json::from_slice(&reply.payload).unwrap();
    assert_eq!(reply["ok"], false, "{reply}");
    assert_eq!(fake.calls("retire"), 1, "only wiki was retired");
    fake.with(|b| b.stall.clear());
    gate.notify_one();
    provider.stop().await;
}
