//! `serve --stream-replicas`: on a real three-server JetStream cluster
//! configured with the rendered permissions (the same authorization block
//! on every member), the controller, with its narrowed JetStream API, makes
//! the stream and consumer with N replicas, raises an existing stream in
//! place (the same stream: its `created` time and so its epoch are kept),
//! and never lowers it.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};

use async_nats::ServerAddr;
use mesh_controller::ensure_consumer;
use mesh_controller::{derive, read_credentials, render_nats};
use mesh_protocol::subject::CONTROLLER_INBOX;
use mesh_status::model::declaration::parse;
use mesh_status::model::Received;
use mesh_status::{LinkSettings, Store, StoreError};
use mesh_test_support::{NatsCluster, CLUSTER_SIZE};

const DECLARATION: &str = r#"{"modules":[
  {"module":"postgres","machine":"db-1","provides":["postgres-database"]},
  {"module":"forge","machine":"app-1","requires":[
    {"provision":"postgres-database","from":"postgres@db-1"}]}
]}"#;

/// Registers epochs by the stream's `created` time, as the store does.
#[derive(Default)]
struct Epochs(BTreeMap<SystemTime, u64>);

#[async_trait::async_trait]
impl Store for Epochs {
    async fn apply(&mut self, events: &[Received]) -> Result<(), StoreError> {
        assert!(events.is_empty(), "setting the stream up applies no event");
        Ok(())
    }

    async fn stream_epoch(
        &mut self,
        _stream: &str,
        created: SystemTime,
    ) -> Result<u64, StoreError> {
        let next = self.0.len() as u64 + 1;
        Ok(*self.0.entry(created).or_insert(next))
    }
}

#[tokio::test]
async fn replicas_are_raised_in_place_and_never_lowered_with_the_rendered_permissions() {
    let dir = tempfile::tempdir().unwrap();
    let users = derive(&parse(DECLARATION).unwrap().declaration);
    for user in &users {
        std::fs::write(dir.path().join(&user.user), format!("pw-{}", user.user)).unwrap();
    }
    let config = render_nats(&users, &read_credentials(dir.path(), &users).unwrap().found);
    let cluster = NatsCluster::start_with_config(config);
    let servers: Vec<ServerAddr> = (0..CLUSTER_SIZE)
        .map(|i| cluster.url(i).parse().unwrap())
        .collect();
    let client = async_nats::ConnectOptions::with_user_and_password(
        "controller".into(),
        "pw-controller".into(),
    )
    .custom_inbox_prefix(CONTROLLER_INBOX)
    .connect(servers)
    .await
    .unwrap();
    let mut epochs = Epochs::default();
    let logs = || {
        (0..CLUSTER_SIZE)
            .map(|i| cluster.log(i))
            .collect::<Vec<_>>()
            .join("\n")
    };
    tokio::time::timeout(Duration::from_secs(120), async {
        let with = |replicas| LinkSettings {
            replicas,
            ..LinkSettings::default()
        };
        // Right after a stream is made or its replicas change, the cluster
        // may not answer for a few seconds (its peers elect a leader, new
        // peers catch up): `serve` tries again after a pause, so does this.
        let mut ensure = async |replicas, step: &str| {
            let mut tries = 0;
            loop {
                tries += 1;
                match ensure_consumer(&client, &with(replicas), &mut epochs).await {
                    Ok(following) => break following,
                    Err(error) if tries < 10 => {
                        eprintln!("{step}: trying again: {error}");
                        tokio::time::sleep(Duration::from_millis(500)).await;
                    }
                    Err(error) => panic!("{step}: {error}\n{}", logs()),
                }
            }
        };
        let one = ensure(1, "making the stream").await;
        let mut one_info = one.consumer.clone();
        let before = one_info.info().await.unwrap().clone();
        assert_eq!(before.config.num_replicas, 1);
        let js = async_nats::jetstream::new(client.clone());
        let stream_info = || async {
            js.get_stream("MESH_EVENTS")
                .await
                .unwrap()
                .info()
                .await
                .unwrap()
                .clone()
        };
        let first = stream_info().await;
        assert_eq!(first.config.num_replicas, 1);

        // Raised in place: same stream, same epoch, consumer on three servers.
        let three = ensure(3, "raising replicas").await;
        let raised = stream_info().await;
        assert_eq!(raised.config.num_replicas, 3);
        assert_eq!(raised.created, first.created, "the same stream");
        assert_eq!(three.epoch, one.epoch, "no new epoch");
        // The server took the consumer's three replicas (its answer to the
        // update says so); its own leader may still answer an info with
        // the old ones for a moment (the meta layer answers the update,
        // the consumer's group applies it after: a clean-clone CI run read
        // 1 here), so the info is awaited below with the replicas.
        assert_eq!(three.consumer.cached_info().config.num_replicas, 3);

        // A controller asking for fewer never lowers them.
        let again = ensure(1, "asking for fewer").await;
        assert_eq!(stream_info().await.config.num_replicas, 3);
        assert_eq!(again.epoch, one.epoch);
        assert_eq!(again.consumer.cached_info().config.num_replicas, 3);
        let mut consumer = again.consumer.clone();
        // Every replica is in place: the stream's leader and two current
        // followers, and the consumer's own leader says three replicas.
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        loop {
            let info = stream_info().await;
            let cluster_info = info.cluster.expect("clustered stream info");
            let current = cluster_info.replicas.iter().filter(|r| r.current).count();
            let consumer_replicas = consumer.info().await.unwrap().config.num_replicas;
            if cluster_info.leader.is_some() && current == 2 && consumer_replicas == 3 {
                break;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "replicas never current: {cluster_info:?}, the consumer's: {consumer_replicas}"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    })
    .await
    .expect("the cluster did not answer within 120 s");
}
