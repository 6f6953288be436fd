//! The derived permissions against a real nats-server started with the
//! rendered configuration: providers, a module without contributions, the
//! controller (its stream, consumer, acks, approvals and inbox), and the
//! `approve` command end to end.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_nats::jetstream::consumer::PullConsumer;
use bytes::Bytes;
use futures::StreamExt;
use mesh_controller::{derive, read_credentials, render_nats};
use mesh_controller::{ensure_consumer, STREAM};
use mesh_controller::{exit, run, Cli, Io, EXIT_NOT_DONE, EXIT_OK};
use mesh_protocol::{ApproveReply, ModuleId, Name, Timestamp};
use mesh_runtime::outbox::{EventSink, JetStreamSink};
use mesh_runtime::NatsArgs;
use mesh_status::model::declaration::parse;
use mesh_status::model::Received;
use mesh_status::{LinkSettings, Store, StoreError};
use mesh_test_support::NatsServer;

const DECLARATION: &str = r#"{"modules":[
  {"module":"postgres","machine":"db-1","provides":["postgres-database"]},
  {"module":"identity","machine":"db-1","provides":["oidc-client"]},
  {"module":"forge","machine":"app-1","requires":[
    {"provision":"postgres-database","from":"postgres@db-1"},
    {"provision":"oidc-client","from":"identity@db-1"}]}
]}"#;

const FAILING: &str = r#"{"v":1,"consumer":"forge","consumer_machine":"app-1","provision":"postgres-database","class":"refused","error":"nope","since":"2026-10-05T00:04:00Z","attempts":1,"said_at":"2026-10-05T00:09:00Z"}"#;

const WAIT: Duration = Duration::from_secs(20);

struct Bus {
    nats: NatsServer,
    dir: tempfile::TempDir,
}

impl Bus {
    /// A nats-server with the rendered configuration; passwords `pw-<user>`
    /// (the server holds only their bcrypt hashes).
    fn start() -> Bus {
        let dir = tempfile::tempdir().unwrap();
        let declaration = parse(DECLARATION).unwrap().declaration;
        let users = derive(&declaration);
        for user in &users {
            std::fs::write(dir.path().join(&user.user), format!("pw-{}\n", user.user)).unwrap();
        }
        let credentials = read_credentials(dir.path(), &users).unwrap().found;
        let config = render_nats(&users, &credentials);
        assert!(
            !config.to_string().contains("pw-"),
            "the configuration holds bcrypt hashes, no password: {config}"
        );
        let nats = NatsServer::start_with_config(config);
        Bus { nats, dir }
    }

    fn password_file(&self, user: &str) -> std::path::PathBuf {
        self.dir.path().join(user)
    }

    /// Connects as `user` with `inbox`, recording every connection event.
    async fn client(&self, user: &str, inbox: &str) -> (async_nats::Client, Events) {
        let events = Events::default();
        let seen = events.clone();
        let client =
            async_nats::ConnectOptions::with_user_and_password(user.into(), format!("pw-{user}"))
                .custom_inbox_prefix(inbox)
                .event_callback(move |event| {
                    let seen = seen.clone();
                    async move { seen.0.lock().unwrap().push(event.to_string()) }
                })
                .connect(self.nats.url())
                .await
                .unwrap_or_else(|e| panic!("{user} connects: {e}\n{}", self.nats.log()));
        (client, events)
    }

    /// A provider's JetStream sink, connected the providers' way.
    async fn provider_sink(&self, module: &str, machine: &str) -> JetStreamSink {
        let user = format!("{module}@{machine}");
        let nats = NatsArgs {
            url: self.nats.url(),
            user: Some(user.clone()),
            password_file: Some(self.password_file(&user)),
            ..NatsArgs::default()
        };
        let provider = ModuleId {
            module: Name::parse(module).unwrap(),
            machine: Name::parse(machine).unwrap(),
        };
        let client = mesh_runtime::nats::connect(&nats, &provider).await.unwrap();
        client.flush().await.unwrap();
        JetStreamSink::new(client, Duration::from_millis(1500))
    }
}

impl Bus {
    /// The controller connected, its stream and consumer set up with its
    /// narrowed API, and postgres@db-1's sink after it published one
    /// `failing` (acknowledged) into the stream.
    async fn stream_with_a_word(
        &self,
    ) -> (async_nats::Client, Events, PullConsumer, JetStreamSink) {
        let (controller, events) = self.client("controller", "_INBOX._controller").await;
        let consumer = ensure_consumer(&controller, &LinkSettings::default(), &mut NoStore)
            .await
            .unwrap_or_else(|e| panic!("{e}\n{}", self.nats.log()))
            .consumer;
        let postgres = self.provider_sink("postgres", "db-1").await;
        publish(
            &postgres,
            "mesh.event.db-1.postgres.provisioner.failing",
            "a",
        )
        .await
        .expect("own event acknowledged");
        (controller, events, consumer, postgres)
    }
}

#[derive(Clone, Default)]
struct Events(Arc<Mutex<Vec<String>>>);

impl Events {
    fn violations(&self) -> Vec<String> {
        self.0
            .lock()
            .unwrap()
            .iter()
            .filter(|e| e.to_lowercase().contains("permissions violation"))
            .cloned()
            .collect()
    }

    async fn wait_for_violation(&self, text: &str) {
        let deadline = tokio::time::Instant::now() + WAIT;
        while !self.violations().iter().any(|v| v.contains(text)) {
            assert!(
                tokio::time::Instant::now() < deadline,
                "no permissions violation for {text}: {:?}",
                self.0.lock().unwrap()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

async fn publish(sink: &JetStreamSink, subject: &str, id: &str) -> Result<(), String> {
    sink.publish(subject, id, Bytes::from_static(FAILING.as_bytes()))
        .await
        .map_err(|e| e.to_string())
}

/// Every message the controller's consumer gets, acknowledged.
async fn drain(consumer: &PullConsumer) -> Vec<String> {
    let mut subjects = Vec::new();
    loop {
        let mut batch = consumer
            .fetch()
            .max_messages(100)
            .expires(Duration::from_secs(1))
            .messages()
            .await
            .unwrap();
        let mut got = 0;
        while let Some(message) = batch.next().await {
            let message = message.unwrap();
            message.double_ack().await.unwrap();
            subjects.push(message.subject.to_string());
            got += 1;
        }
        if got == 0 {
            return subjects;
        }
    }
}

/// Setting the stream up registers its epoch and applies no event.
struct NoStore;

#[async_trait::async_trait]
impl Store for NoStore {
    async fn apply(&mut self, events: &[Received]) -> Result<(), StoreError> {
        assert!(events.is_empty(), "setting the stream up applies no event");
        Ok(())
    }

    async fn stream_epoch(
        &mut self,
        _stream: &str,
        _created: std::time::SystemTime,
    ) -> Result<u64, StoreError> {
        Ok(1)
    }
}

#[tokio::test]
async fn the_rendered_permissions_hold_on_a_real_server() {
    let bus = Bus::start();
    tokio::time::timeout(Duration::from_secs(120), async {
        // The controller sets up its stream and consumer with its narrowed
        // API, and a provider's own events are accepted.
        let (controller, controller_events, consumer, postgres) = bus.stream_with_a_word().await;
        publish(
            &postgres,
            "mesh.event.db-1.postgres.provisioner.repair",
            "b",
        )
        .await
        .expect("own repair acknowledged");
        let identity = bus.provider_sink("identity", "db-1").await;
        publish(
            &identity,
            "mesh.event.db-1.identity.provisioner.recovered",
            "c",
        )
        .await
        .expect("another provider's own event acknowledged");

        // The same provider as another machine or module is refused.
        for subject in [
            "mesh.event.db-2.postgres.provisioner.failing",
            "mesh.event.db-1.identity.provisioner.failing",
            "mesh.event.app-1.forge.provisioner.recovered",
        ] {
            assert!(
                publish(&postgres, subject, subject).await.is_err(),
                "{subject} must be refused"
            );
        }
        // A module that receives no contributions cannot publish any event.
        let forge = bus.provider_sink("forge", "app-1").await;
        for subject in [
            "mesh.event.app-1.forge.provisioner.failing",
            "mesh.event.db-1.postgres.provisioner.recovered",
        ] {
            assert!(
                publish(&forge, subject, subject).await.is_err(),
                "{subject} must be refused to forge"
            );
        }

        // Nothing refused reached the stream; the controller reads and acks
        // through its consumer only.
        let mut subjects = drain(&consumer).await;
        subjects.sort();
        assert_eq!(
            subjects,
            [
                "mesh.event.db-1.identity.provisioner.recovered",
                "mesh.event.db-1.postgres.provisioner.failing",
                "mesh.event.db-1.postgres.provisioner.repair",
            ]
        );
        let mut info = consumer.clone();
        let info = info.info().await.unwrap();
        assert_eq!(info.num_ack_pending, 0, "acks were accepted");
        assert!(
            controller_events.violations().is_empty(),
            "the controller's own work is allowed: {:?}",
            controller_events.violations()
        );

        // The controller cannot subscribe to mesh.> nor to a module's inbox.
        let mut everything = controller.subscribe("mesh.>").await.unwrap();
        controller_events
            .wait_for_violation("Subscription to \"mesh.>\"")
            .await;
        let mut inbox = controller
            .subscribe("_INBOX.db-1.postgres.>")
            .await
            .unwrap();
        controller_events
            .wait_for_violation("_INBOX.db-1.postgres.>")
            .await;
        // Nor publish an event.
        controller
            .publish(
                "mesh.event.db-1.postgres.provisioner.failing",
                FAILING.into(),
            )
            .await
            .unwrap();
        controller_events
            .wait_for_violation("Publish to \"mesh.event.db-1.postgres.provisioner.failing\"")
            .await;
        // An event is published (its ack goes to the provider's inbox):
        // neither reaches the controller's refused subscriptions.
        publish(
            &postgres,
            "mesh.event.db-1.postgres.provisioner.recovered",
            "d",
        )
        .await
        .expect("own event acknowledged");
        assert!(
            tokio::time::timeout(Duration::from_millis(500), everything.next())
                .await
                .map_or(true, |m| m.is_none()),
            "mesh.> delivered nothing to the controller"
        );
        assert!(
            tokio::time::timeout(Duration::from_millis(300), inbox.next())
                .await
                .map_or(true, |m| m.is_none()),
            "a provider's inbox delivered nothing to the controller"
        );
        assert_eq!(
            drain(&consumer).await,
            ["mesh.event.db-1.postgres.provisioner.recovered"]
        );

        // A module without contributions cannot even listen to commands.
        let (forge_raw, forge_events) = bus.client("forge@app-1", "_INBOX.app-1.forge").await;
        let _cmd = forge_raw.subscribe("mesh.cmd.app-1.forge.>").await.unwrap();
        forge_events
            .wait_for_violation("mesh.cmd.app-1.forge.>")
            .await;
    })
    .await
    .expect("the permission checks hang: a refused subscription or ack probably blocks");
}

/// `serve`'s routine user makes and follows its stream, and nothing more:
/// it may not delete the stream, purge it, remove a message or read stored
/// messages by sequence (`MSG.GET`, `DIRECT.GET`); each try is refused by the
/// server, and the stream keeps its event.
#[tokio::test]
async fn the_controller_may_not_delete_purge_or_read_its_stream_by_sequence() {
    let bus = Bus::start();
    tokio::time::timeout(Duration::from_secs(120), async {
        let (controller, events, consumer, _postgres) = bus.stream_with_a_word().await;

        let mut js = async_nats::jetstream::new(controller.clone());
        js.set_timeout(Duration::from_secs(1));
        let stream = js
            .get_stream(STREAM)
            .await
            .expect("its stream's info is allowed");
        let refused = [
            (
                "STREAM.MSG.GET",
                stream.get_raw_message(1).await.err().map(|e| e.to_string()),
            ),
            (
                "DIRECT.GET",
                stream.direct_get(1).await.err().map(|e| e.to_string()),
            ),
            (
                "STREAM.MSG.DELETE",
                stream.delete_message(1).await.err().map(|e| e.to_string()),
            ),
            (
                "STREAM.PURGE",
                stream.purge().await.err().map(|e| e.to_string()),
            ),
            (
                "STREAM.DELETE",
                js.delete_stream(STREAM).await.err().map(|e| e.to_string()),
            ),
        ];
        for (api, error) in refused {
            assert!(error.is_some(), "$JS.API.{api} was done for the controller");
            events
                .wait_for_violation(&format!("Publish to \"$JS.API.{api}.{STREAM}\""))
                .await;
        }
        // The stream and its event are still there, and the routine work goes on.
        let mut stream = js
            .get_stream(STREAM)
            .await
            .expect("the stream is still there");
        assert_eq!(stream.info().await.unwrap().state.messages, 1);
        assert_eq!(
            drain(&consumer).await,
            ["mesh.event.db-1.postgres.provisioner.failing"]
        );
    })
    .await
    .expect("the refused requests hang: the JetStream timeout is not applied");
}

/// A provider answering approvals on its subject the way the SDK does.
async fn answer_approvals(bus: &Bus, ok: bool) -> tokio::task::JoinHandle<()> {
    let (client, events) = bus.client("postgres@db-1", "_INBOX.db-1.postgres").await;
    let mut requests = client
        .subscribe("mesh.cmd.db-1.postgres.provisioner.approve")
        .await
        .unwrap();
    client.flush().await.unwrap();
    tokio::spawn(async move {
        while let Some(request) = requests.next().await {
            let body: serde_json::Value = serde_json::from_slice(&request.payload).unwrap();
            let reply = ApproveReply {
                ok,
                detail: format!("consumer {} delete {}", body["consumer"], body["delete"]),
            };
            client
                .publish(
                    request.reply.unwrap(),
                    serde_json::to_vec(&reply).unwrap().into(),
                )
                .await
                .unwrap();
            client.flush().await.unwrap();
            assert!(events.violations().is_empty(), "{:?}", events.violations());
        }
    })
}

async fn approve_command(bus: &Bus, extra: &[&str]) -> (u8, String, String) {
    let password_file = bus.password_file("controller");
    let url = bus.nats.url();
    let mut args = vec![
        "mesh-controller",
        "--nats",
        &url,
        "--nats-user",
        "controller",
        "--nats-password-file",
        password_file.to_str().unwrap(),
        "approve",
        "postgres@db-1",
        "forge",
        "--timeout",
        "2s",
    ];
    args.extend_from_slice(extra);
    let cli = <Cli as clap::Parser>::try_parse_from(args).unwrap();
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let mut io = Io {
        out: &mut out,
        err: &mut err,
        // The request's deadline is now + --timeout: the real now.
        now: Timestamp::now(),
    };
    let result = run(&cli, &mut io, &mesh_runtime::Stop::new()).await;
    let code = exit(result, &mut io);
    (
        code,
        String::from_utf8(out).unwrap(),
        String::from_utf8(err).unwrap(),
    )
}

#[tokio::test]
async fn approve_with_a_refused_bus_password_exits_at_once_naming_the_user_and_its_file() {
    let bus = Bus::start();
    let file = bus.password_file("controller");
    std::fs::write(&file, "wrong-pw-for-approve\n").unwrap();
    let started = std::time::Instant::now();
    let (code, out, err) =
        tokio::time::timeout(Duration::from_secs(20), approve_command(&bus, &[]))
            .await
            .expect("approve ends within 20 s");
    assert_ne!(code, EXIT_OK, "{out}{err}");
    assert!(started.elapsed() < Duration::from_secs(10), "{err}");
    for what in [
        "authorization violation",
        "controller",
        "--nats-user",
        file.to_str().unwrap(),
        "--nats-password-file",
    ] {
        assert!(err.contains(what), "names {what}: {err}");
    }
    assert!(!err.contains("wrong-pw"), "{err}");
}

#[tokio::test]
async fn approve_asks_the_provider_and_says_what_came_of_it() {
    let bus = Bus::start();
    tokio::time::timeout(Duration::from_secs(60), async {
        // Nobody listens: unanswered, exit 1.
        let (code, out, err) = approve_command(&bus, &[]).await;
        assert_eq!(code, EXIT_NOT_DONE, "{out}{err}");
        assert!(
            err.contains("unanswered: no provider postgres@db-1 listens"),
            "{err}"
        );

        // The provider agrees: exit 0, its detail printed.
        let provider = answer_approvals(&bus, true).await;
        let (code, out, err) = approve_command(&bus, &["--delete"]).await;
        assert_eq!(code, EXIT_OK, "{out}{err}");
        assert_eq!(
            out.trim(),
            "done by postgres@db-1: consumer \"forge\" delete true"
        );
        provider.abort();

        // The provider refuses: exit 1, its detail printed.
        let provider = answer_approvals(&bus, false).await;
        let (code, _, err) = approve_command(&bus, &[]).await;
        assert_eq!(code, EXIT_NOT_DONE);
        assert!(
            err.contains("refused by postgres@db-1: consumer \"forge\" delete false"),
            "{err}"
        );
        provider.abort();

        // A provider that listens but never answers: unanswered after the timeout.
        let (silent, _) = bus.client("postgres@db-1", "_INBOX.db-1.postgres").await;
        let _requests = silent
            .subscribe("mesh.cmd.db-1.postgres.provisioner.approve")
            .await
            .unwrap();
        silent.flush().await.unwrap();
        let (code, _, err) = approve_command(&bus, &[]).await;
        assert_eq!(code, EXIT_NOT_DONE);
        assert!(err.contains("did not answer within 2s"), "{err}");
    })
    .await
    .expect("approve hangs: the request timeout is not applied");
}

/// `mesh-controller` (the binary) with `args`, at most 10 s: (exit code,
/// stdout and stderr).
async fn controller_binary(args: &[&str]) -> (Option<i32>, String) {
    let run = tokio::process::Command::new(env!("CARGO_BIN_EXE_mesh-controller"))
        .args(args)
        .env_remove("RUST_LOG")
        .output();
    let out = tokio::time::timeout(Duration::from_secs(10), run)
        .await
        .expect("the command ends")
        .unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code(), said)
}

/// With a declaration, an approval for a provider it does not assign (or a
/// module that answers no approvals) is an error naming it, exit 2, and the
/// bus is not touched (here no server listens at all); one it assigns that
/// does not listen is unanswered, exit 1, and the message says it is declared.
/// Without a declaration nobody listening is unanswered, and the message says
/// that whether the provider exists was not checked.
#[tokio::test]
async fn approve_with_a_declaration_names_a_provider_it_does_not_assign() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("declaration.json");
    std::fs::write(&file, DECLARATION).unwrap();
    let declaration = ["--declaration", file.to_str().unwrap()];
    let nowhere = format!("nats://127.0.0.1:{}", mesh_test_support::free_port());
    let approve = |provider: &'static str| ["approve", provider, "forge", "--timeout", "2s"];
    let nats = ["--nats", nowhere.as_str()];

    // Refused from the declaration alone: (provider, message).
    for (provider, message) in [
        (
            "ghost@nowhere",
            "mesh-controller: the declaration assigns no provider ghost@nowhere (it assigns \
             identity@db-1, postgres@db-1); nothing was sent",
        ),
        (
            "forge@app-1",
            "the declaration lists forge@app-1, but it provides nothing",
        ),
    ] {
        let args = [&declaration[..], &nats, &approve(provider)].concat();
        let (code, said) = controller_binary(&args).await;
        assert_eq!(code, Some(2), "{said}");
        assert!(
            said.contains(message) && said.contains("nothing was sent"),
            "{said}"
        );
        assert!(
            !said.contains("cannot connect"),
            "the bus was not touched: {said}"
        );
    }

    let bus = Bus::start();
    let password_file = bus.password_file("controller");
    let url = bus.nats.url();
    let login = [
        "--nats",
        &url,
        "--nats-user",
        "controller",
        "--nats-password-file",
        password_file.to_str().unwrap(),
    ];
    let (code, said) =
        controller_binary(&[&declaration[..], &login, &approve("postgres@db-1")].concat()).await;
    assert_eq!(code, Some(1), "{said}");
    assert!(
        said.contains("unanswered: no provider postgres@db-1 listens on the bus")
            && said.contains("the declaration assigns it"),
        "{said}"
    );
    let (code, said) = controller_binary(&[&login[..], &approve("ghost@nowhere")].concat()).await;
    assert_eq!(code, Some(1), "{said}");
    assert!(
        said.contains("unanswered: no provider ghost@nowhere listens on the bus")
            && said.contains("no --declaration was given"),
        "{said}"
    );
}

/// `permissions --format nats` asks only for the credentials of users that
/// can do something: without files for `forge@app-1` (it may do nothing)
/// and `_grants@app-1` (the declaration cannot tell whether `mesh-grants`
/// runs on app-1) it renders, warns about the agent alone, and a real
/// nats-server started with the result lets the providers and the
/// controller in and refuses the two left out. A provider's missing file
/// is still an error, exit 2, nothing printed.
#[tokio::test]
async fn only_users_that_can_do_something_are_asked_for_credentials() {
    let dir = tempfile::tempdir().unwrap();
    let declaration = dir.path().join("declaration.json");
    std::fs::write(&declaration, DECLARATION).unwrap();
    let credentials = dir.path().join("credentials");
    std::fs::create_dir(&credentials).unwrap();
    for user in ["postgres@db-1", "identity@db-1", "controller"] {
        std::fs::write(credentials.join(user), format!("pw-{user}")).unwrap();
    }
    let render = || async {
        let cli = <Cli as clap::Parser>::try_parse_from([
            "mesh-controller",
            "--declaration",
            declaration.to_str().unwrap(),
            "permissions",
            "--format",
            "nats",
            "--credentials",
            credentials.to_str().unwrap(),
        ])
        .unwrap();
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let mut io = Io {
            out: &mut out,
            err: &mut err,
            now: Timestamp::now(),
        };
        let result = run(&cli, &mut io, &mesh_runtime::Stop::new()).await;
        let code = exit(result, &mut io);
        (
            code,
            String::from_utf8(out).unwrap(),
            String::from_utf8(err).unwrap(),
        )
    };
    let (code, out, err) = render().await;
    assert_eq!(code, EXIT_OK, "{err}");
    assert!(
        err.contains("_grants@app-1"),
        "the agent is warned of: {err}"
    );
    assert!(!err.contains("forge@app-1"), "an idle user is not: {err}");
    let config: serde_json::Value = serde_json::from_str(&out).unwrap();
    let nats = NatsServer::start_with_config(config);
    let connect = |user: &str| {
        async_nats::ConnectOptions::with_user_and_password(user.into(), format!("pw-{user}"))
            .connect(nats.url())
    };
    for user in ["postgres@db-1", "identity@db-1", "controller"] {
        let client = connect(user)
            .await
            .unwrap_or_else(|e| panic!("{user} connects: {e}"));
        client.flush().await.unwrap();
    }
    for user in ["forge@app-1", "_grants@app-1"] {
        let refused = connect(user).await;
        assert!(refused.is_err(), "{user} was left out: it cannot connect");
    }

    std::fs::remove_file(credentials.join("identity@db-1")).unwrap();
    let (code, out, err) = render().await;
    assert_eq!(code, mesh_controller::EXIT_CANNOT);
    assert!(out.is_empty(), "{out}");
    assert!(err.contains("identity@db-1"), "{err}");
}
