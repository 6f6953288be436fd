//! `--metrics-listen` on a provider run by `run_until` against a real
//! nats-server: `/metrics` scraped with a real HTTP client and parsed by a
//! Prometheus text parser, `/readyz` once on the bus, and `/healthz` going
//! unhealthy while the loop is stuck in a provider's blocking call (which no
//! call timeout can interrupt) and healthy again once it moves.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mesh_sdk::{
    async_trait, run_until, Consumer, Held, Name, ProviderArgs, Provisioner, Secret, Served,
};
use mesh_test_support::{free_port, NatsServer};

/// A backend that holds what it made; while `block` is set, `check` blocks
/// its thread for `BLOCK` (a provider calling blocking code).
#[derive(Clone, Default)]
struct Blocking {
    block: Arc<AtomicBool>,
}

const BLOCK: Duration = Duration::from_secs(4);

#[async_trait]
impl Provisioner for Blocking {
    type Error = std::io::Error;

    async fn ensure(&self, _: &Consumer, _: &Secret) -> Result<Served, Self::Error> {
        Ok(Served::AsIs)
    }

    async fn check(&self, _: &Consumer, _: &Secret) -> Result<Served, Self::Error> {
        if self.block.swap(false, Ordering::SeqCst) {
            std::thread::sleep(BLOCK);
        }
        Ok(Served::AsIs)
    }

    async fn held(&self, _: &mesh_sdk::ModuleId) -> Result<Vec<Held>, Self::Error> {
        Ok(Vec::new())
    }

    async fn retire(&self, _: &mesh_sdk::ModuleId, _: &Name) -> Result<(), Self::Error> {
        Ok(())
    }

    async fn re_enable(&self, _: &mesh_sdk::ModuleId, _: &Name) -> Result<(), Self::Error> {
        Ok(())
    }

    async fn delete(&self, _: &mesh_sdk::ModuleId, _: &Name) -> Result<(), Self::Error> {
        Ok(())
    }
}

struct Scrape {
    http: reqwest::Client,
    base: String,
}

impl Scrape {
    async fn get(&self, path: &str) -> (u16, String) {
        match self.http.get(format!("{}{path}", self.base)).send().await {
            Ok(response) => (response.status().as_u16(), response.text().await.unwrap()),
            Err(_) => (0, String::new()),
        }
    }

    /// Waits until `path` answers `status`; returns its text.
    async fn wait(&self, path: &str, status: u16, within: Duration) -> String {
        let deadline = Instant::now() + within;
        loop {
            let (got, text) = self.get(path).await;
            if got == status {
                return text;
            }
            assert!(
                Instant::now() < deadline,
                "{path} answered {got} ({text}), not {status}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Waits until the sample `key` of `/metrics` reads `value`.
    async fn wait_metric(&self, key: &str, value: f64, within: Duration) {
        let deadline = Instant::now() + within;
        loop {
            let m = self.metrics().await;
            if m.get(key) == Some(&value) {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "{key} is {:?}, not {value}",
                m.get(key)
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// The samples of `/metrics`, by name and labels.
    async fn metrics(&self) -> HashMap<String, f64> {
        let (status, text) = self.get("/metrics").await;
        assert_eq!(status, 200);
        let lines = text.lines().map(|l| Ok(l.to_owned()));
        let scrape = prometheus_parse::Scrape::parse(lines).expect("Prometheus text");
        scrape
            .samples
            .into_iter()
            .map(|s| {
                let mut labels: Vec<String> =
                    s.labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
                labels.sort();
                let value = match s.value {
                    prometheus_parse::Value::Counter(v)
                    | prometheus_parse::Value::Gauge(v)
                    | prometheus_parse::Value::Untyped(v) => v,
                    prometheus_parse::Value::Histogram(h) => {
                        h.iter().map(|b| b.count).fold(0.0, f64::max)
                    }
                    prometheus_parse::Value::Summary(_) => f64::NAN,
                };
                (format!("{}{{{}}}", s.metric, labels.join(",")), value)
            })
            .collect()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_health_and_readiness_over_http() {
    let mut nats = NatsServer::start();
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("secrets")).unwrap();
    for c in ["forge", "wiki"] {
        std::fs::write(dir.path().join("secrets").join(c), format!("pw-{c}")).unwrap();
    }
    let contributions = dir.path().join("contributions.json");
    mesh_sdk::testing::write_contributions(
        &contributions,
        ("postgres", "db-1"),
        "postgres-database",
        &["forge", "wiki"],
    );
    let port = free_port();
    let mut args = ProviderArgs::with_defaults(&contributions);
    args.service.nats.url = nats.url();
    args.pass_every = Duration::from_millis(100);
    args.call_timeout = Duration::from_millis(200);
    args.alive_every = Duration::from_secs(1);
    args.service.endpoints.metrics_listen = Some(format!("127.0.0.1:{port}"));
    let provisioner = Blocking::default();
    let block = Arc::clone(&provisioner.block);
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let running = tokio::spawn(async move {
        run_until(provisioner, &args, async {
            let _ = stopped.await;
        })
        .await
    });
    let _ = rustls::crypto::ring::default_provider().install_default();
    let scrape = Scrape {
        http: reqwest::Client::new(),
        base: format!("http://127.0.0.1:{port}"),
    };

    let ready = scrape.wait("/readyz", 200, Duration::from_secs(20)).await;
    assert!(ready.starts_with("ready"), "{ready}");
    assert!(scrape
        .wait("/healthz", 200, Duration::from_secs(5))
        .await
        .starts_with("ok"));
    // A few passes in: what the metrics say.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let m = scrape.metrics().await;
    let get = |key: &str| *m.get(key).unwrap_or_else(|| panic!("no {key} in {m:?}"));
    assert!(get("mesh_passes_total{}") >= 2.0, "{m:?}");
    // The last pass ended within the last few seconds, on the wall clock.
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    let ended = get("mesh_pass_ended_timestamp_seconds{}");
    assert!((now - 5.0..=now + 1.0).contains(&ended), "{ended} {now}");
    assert_eq!(get("mesh_consumers{state=ok}"), 2.0);
    assert_eq!(get("mesh_consumers{state=failing}"), 0.0);
    assert_eq!(get("mesh_consumers{state=retiring}"), 0.0);
    assert_eq!(get("mesh_events_published_total{kind=recovered}"), 2.0);
    assert!(get("mesh_events_published_total{kind=alive}") >= 1.0);
    assert_eq!(get("mesh_events_published_total{kind=failing}"), 0.0);
    assert_eq!(get("mesh_repairs_total{outcome=failed}"), 0.0);
    assert!(m.contains_key("mesh_events_pending{kind=alive}"), "{m:?}");
    // The names before 0.2.0 are there too, one release, with the same values.
    for kind in ["failing", "recovered", "retirement", "repair", "alive"] {
        assert_eq!(
            get(&format!("mesh_words_said_total{{kind={kind}}}")),
            get(&format!("mesh_events_published_total{{kind={kind}}}")),
            "{kind}"
        );
        assert_eq!(
            get(&format!("mesh_words_held{{kind={kind}}}")),
            get(&format!("mesh_events_pending{{kind={kind}}}")),
            "{kind}"
        );
    }
    // The histogram's +Inf bucket counts every pass.
    assert_eq!(
        get("mesh_pass_duration_seconds{}"),
        get("mesh_passes_total{}")
    );
    assert!(
        !m.keys().any(|k| k.contains("consumer=")),
        "no per-consumer label"
    );

    // The contributions file: an entry refused (its consumer held back), then
    // the file as a whole (the last good list served), then good again.
    assert_eq!(get("mesh_contributions_entries_refused{}"), 0.0);
    assert_eq!(get("mesh_contributions_file_refused{}"), 0.0);
    let good = std::fs::read_to_string(&contributions).unwrap();
    let mut refused: serde_json::Value = serde_json::from_str(&good).unwrap();
    let mut bad = refused["consumers"][0].clone();
    bad["consumer"] = "Not A Name".into();
    refused["consumers"].as_array_mut().unwrap().push(bad);
    std::fs::write(&contributions, refused.to_string()).unwrap();
    let within = Duration::from_secs(5);
    scrape
        .wait_metric("mesh_contributions_entries_refused{}", 1.0, within)
        .await;
    std::fs::write(&contributions, "{ not json").unwrap();
    scrape
        .wait_metric("mesh_contributions_file_refused{}", 1.0, within)
        .await;
    std::fs::write(&contributions, &good).unwrap();
    scrape
        .wait_metric("mesh_contributions_file_refused{}", 0.0, within)
        .await;
    scrape
        .wait_metric("mesh_contributions_entries_refused{}", 0.0, within)
        .await;

    // Stuck: a check blocks its thread for 4 s; no timeout can end it.
    // The bound is 3 × 100 ms + 2 × 200 ms = 700 ms.
    block.store(true, Ordering::SeqCst);
    let stuck = scrape.wait("/healthz", 503, Duration::from_secs(3)).await;
    assert!(
        stuck.starts_with("stuck: the loop has not turned for"),
        "{stuck}"
    );
    let again = scrape
        .wait("/healthz", 200, BLOCK + Duration::from_secs(5))
        .await;
    assert!(again.starts_with("ok"), "{again}");

    // The bus away (issue 31): not ready within 5 s, and healthy all the
    // while (the loop turns; a restart would not help); ready again once
    // the bus is back.
    nats.stop();
    let away = Instant::now();
    let not_ready = scrape.wait("/readyz", 503, Duration::from_secs(5)).await;
    assert!(
        not_ready.starts_with("not connected to the bus"),
        "{not_ready}"
    );
    while away.elapsed() < Duration::from_secs(3) {
        let (status, health) = scrape.get("/healthz").await;
        assert_eq!(status, 200, "healthy while the bus is away: {health}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    nats.start_again();
    let ready = scrape.wait("/readyz", 200, Duration::from_secs(20)).await;
    assert!(ready.starts_with("ready"), "{ready}");

    let _ = stop.send(());
    tokio::time::timeout(Duration::from_secs(20), running)
        .await
        .expect("the provider stops")
        .unwrap()
        .unwrap();
}
