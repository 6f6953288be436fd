//! The store's rules on a real PostgreSQL, and `status` / `node show` (in
//! process and through the binary) on a live store.

use std::process::Command;
use std::time::Duration;

use mesh_controller::{exit, run, Cli, Io, EXIT_CANNOT, EXIT_NOT_DONE, EXIT_OK};
mod common;
#[path = "store/consumer_table.rs"]
mod consumer_table;
#[path = "store/reach.rs"]
mod reach;

use common::store_at;
use mesh_pg_store::{migrate, DatabaseOptions, PgStore};
use mesh_protocol::event::RecoveredReason;
use mesh_protocol::event::{
    Alive, Failing, Recovered, RepairOutcome, RepairReport, Retirement, RetirementAction,
};
use mesh_protocol::{Class, Event, ModuleId, Name, Timestamp};
use mesh_sdk::testing::LogCapture;
use mesh_status::model::{Received, RepairRow};
use mesh_status::store::{ControllerRecordUpdate, Order, StatusFilter};
use mesh_status::testing::received;
use mesh_status::Store;
use mesh_test_support::PgCluster;

/// What a record says: `instance` runs, caught up or not, a round applied
/// since its last record or not, its first record or not.
fn instance_record(
    instance: &mesh_status::model::Instance,
    caught_up: bool,
    applied: bool,
    first: bool,
) -> ControllerRecordUpdate<'_> {
    ControllerRecordUpdate {
        instance,
        caught_up,
        applied,
        first,
    }
}

fn name(s: &str) -> Name {
    Name::parse(s).unwrap()
}

fn ts(s: &str) -> Timestamp {
    Timestamp::parse(s).unwrap()
}

fn at(minute: u32) -> Timestamp {
    ts(&format!("2026-10-05T00:{minute:02}:00Z"))
}

fn failing(provider: &str, consumer: &str, said: u32, attempts: u64, seq: u64) -> Received {
    received(
        provider,
        seq,
        Event::Failing(Failing {
            v: 1,
            consumer: name(consumer),
            consumer_machine: Some(name("app-1")),
            provision: Some("postgres-database".into()),
            class: Class::CredentialsRejected,
            error: format!("password authentication failed for user \"{consumer}\""),
            since: at(4),
            attempts,
            said_at: at(said),
        }),
    )
}

fn recovered(provider: &str, consumer: &str, said: u32, seq: u64) -> Received {
    mesh_status::testing::recovered(provider, consumer, at(said), seq)
}

/// `alive` of `provider`, said at minute `said`, started at minute
/// `started`, settled at minute `settled` (if any), every 60 s.
fn alive(provider: &str, said: u32, started: u32, settled: Option<u32>, seq: u64) -> Received {
    received(
        provider,
        seq,
        Event::Alive(Alive {
            v: 1,
            started_at: at(started),
            alive_every_seconds: 60,
            failing_after_seconds: 300,
            repeat_every_seconds: Some(900),
            settled_at: settled.map(at),
            consumers: 2,
            failing: 1,
            pass_seconds: 0.25,
            said_at: at(said),
            fault: None,
            contributions: None,
        }),
    )
}

fn repair(provider: &str, fault: &str, outcome: RepairOutcome, said: u32, seq: u64) -> Received {
    received(
        provider,
        seq,
        Event::Repair(RepairReport {
            v: 1,
            fault: name(fault),
            outcome,
            detail: format!("{fault} {outcome:?}"),
            next_attempt_at: (outcome == RepairOutcome::Braked).then(|| at(59)),
            said_at: at(said),
        }),
    )
}

/// `consumer -> attempts` of every failing row of `provider`.
async fn failing_rows(admin: &tokio_postgres::Client, provider: &ModuleId) -> Vec<(String, i64)> {
    admin
        .query(
            "SELECT consumer, attempts FROM failing WHERE provider_module = $1 \
             AND provider_machine = $2 ORDER BY consumer",
            &[&provider.module.as_str(), &provider.machine.as_str()],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect()
}

/// The open repair faults of `provider` as `status` reads them.
async fn open_repairs(store: &mut PgStore, provider: &str) -> Vec<RepairRow> {
    let filter = StatusFilter {
        providers: vec![ModuleId::parse(provider).unwrap()],
        providers_chosen: false,
        machine: None,
        silent_before: at(0),
        required: vec![],
        order: Order::Key,
        consumer: None,
        per_group: None,
    };
    let read = store.read_status(&filter).await.unwrap();
    let repairs = read.repairs.clone();
    read.finish().await.unwrap();
    repairs
}

/// How many migrations the store has: the files in pg-store/migrations.
fn migrations() -> usize {
    std::fs::read_dir(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../pg-store/migrations"
    ))
    .expect("pg-store/migrations")
    .filter(|e| {
        e.as_ref()
            .is_ok_and(|e| e.file_name().to_string_lossy().ends_with(".sql"))
    })
    .count()
}

#[tokio::test]
async fn store_rules_hold_on_postgres() {
    let pg = PgCluster::start();
    let (options, admin) = store_at(&pg, "rules").await;
    assert_eq!(migrate(&options).await.unwrap(), migrations());
    assert_eq!(migrate(&options).await.unwrap(), 0, "migrations run once");
    let mut store = PgStore::new(options);

    // (case, rounds of events applied in order, expected rows of the case's provider)
    type Case = (&'static str, Vec<Vec<Received>>, Vec<(&'static str, i64)>);
    let p = |n: u32| format!("p{n}@db-1");
    let cases: Vec<Case> = vec![
        (
            "failing stored; an event earlier in the stream, delivered late, changes nothing",
            vec![
                vec![failing(&p(1), "forge", 9, 61, 2)],
                vec![failing(&p(1), "forge", 10, 50, 1)],
                vec![failing(&p(1), "wiki", 9, 3, 3)],
            ],
            vec![("forge", 61), ("wiki", 3)],
        ),
        (
            "the later in the stream wins though its provider's clock stepped back",
            vec![
                vec![failing(&p(10), "forge", 9, 61, 1)],
                vec![failing(&p(10), "forge", 8, 50, 2)],
            ],
            vec![("forge", 50)],
        ),
        (
            "a recovered from a clock stepped back lands",
            vec![
                vec![failing(&p(11), "forge", 20, 5, 1)],
                vec![recovered(&p(11), "forge", 15, 2)],
            ],
            vec![],
        ),
        (
            "a failing stamped in the future pins nothing",
            vec![
                vec![failing(&p(12), "forge", 59, 5, 1)],
                vec![recovered(&p(12), "forge", 1, 2)],
            ],
            vec![],
        ),
        (
            "a newer failing replaces",
            vec![
                vec![failing(&p(2), "forge", 9, 61, 1)],
                vec![failing(&p(2), "forge", 10, 70, 2)],
            ],
            vec![("forge", 70)],
        ),
        (
            "recovered removes only its own row",
            vec![
                vec![failing(&p(3), "forge", 9, 1, 1)],
                vec![failing(&p(3), "wiki", 9, 2, 2)],
                vec![recovered(&p(3), "forge", 10, 3)],
            ],
            vec![("wiki", 2)],
        ),
        (
            "a recovered earlier in the stream than the stored failing deletes nothing",
            vec![
                vec![failing(&p(4), "forge", 20, 5, 2)],
                vec![recovered(&p(4), "forge", 25, 1)],
            ],
            vec![("forge", 5)],
        ),
        (
            "a failing earlier in the stream than a stored recovered does not come back",
            vec![
                vec![recovered(&p(5), "forge", 11, 2)],
                vec![failing(&p(5), "forge", 12, 9, 1)],
            ],
            vec![],
        ),
        (
            "the later in the stream wins (recovered last)",
            vec![
                vec![failing(&p(6), "forge", 9, 1, 1)],
                vec![recovered(&p(6), "forge", 9, 2)],
            ],
            vec![],
        ),
        (
            "the later in the stream wins (failing last)",
            vec![
                vec![recovered(&p(7), "forge", 9, 1)],
                vec![failing(&p(7), "forge", 9, 4, 2)],
            ],
            vec![("forge", 4)],
        ),
        (
            "a redelivered failing does not undo a later recovered",
            vec![
                vec![failing(&p(8), "forge", 9, 1, 10)],
                vec![recovered(&p(8), "forge", 9, 11)],
                vec![failing(&p(8), "forge", 9, 1, 10)],
            ],
            vec![],
        ),
        (
            "one round, in order, in one transaction",
            vec![vec![
                failing(&p(9), "forge", 9, 1, 1),
                recovered(&p(9), "forge", 10, 2),
                failing(&p(9), "forge", 11, 3, 3),
                failing(&p(9), "wiki", 11, 4, 4),
                recovered(&p(9), "wiki", 12, 5),
            ]],
            vec![("forge", 3)],
        ),
    ];
    for (case, rounds, expected) in cases {
        let provider = rounds[0][0].emitter.clone();
        for round in rounds {
            store
                .apply(&round)
                .await
                .unwrap_or_else(|e| panic!("{case}: {e}"));
        }
        let rows = failing_rows(&admin, &provider).await;
        let expected: Vec<(String, i64)> = expected
            .into_iter()
            .map(|(c, a)| (c.to_owned(), a))
            .collect();
        assert_eq!(rows, expected, "{case}");
    }

    // The same consumer of another provider is another row.
    store
        .apply(&[
            failing("postgres@db-1", "forge", 9, 1, 1),
            failing("postgres@db-2", "forge", 9, 2, 2),
            recovered("postgres@db-1", "forge", 10, 3),
        ])
        .await
        .unwrap();
    let db2 = ModuleId::parse("postgres@db-2").unwrap();
    assert_eq!(failing_rows(&admin, &db2).await, [("forge".to_owned(), 2)]);

    // Repairs: the newest event per fault, cleared by `repaired`.
    let r = "postgres@db-1";
    store
        .apply(&[
            repair(r, "admin-refused", RepairOutcome::Failed, 9, 20),
            repair(r, "disk-full", RepairOutcome::Braked, 9, 21),
        ])
        .await
        .unwrap();
    store
        .apply(&[repair(r, "admin-refused", RepairOutcome::Repaired, 10, 22)])
        .await
        .unwrap();
    store
        .apply(&[repair(r, "admin-refused", RepairOutcome::Failed, 11, 19)])
        .await
        .unwrap();
    let open_repairs = open_repairs(&mut store, r).await;
    let open: Vec<(&str, &str, Option<Timestamp>)> = open_repairs
        .iter()
        .map(|r| (r.fault.as_str(), r.outcome.as_str(), r.next_attempt_at))
        .collect();
    assert_eq!(open, [("disk-full", "braked", Some(at(59)))]);

    // Retirements are kept, newest per (provider, consumer, action).
    let retired = |said, seq, detail: &str| {
        received(
            r,
            seq,
            Event::Retirement(Retirement {
                v: 1,
                consumer: name("old"),
                action: RetirementAction::Retired,
                detail: detail.into(),
                retire_at: None,
                said_at: at(said),
            }),
        )
    };
    store.apply(&[retired(10, 31, "newer")]).await.unwrap();
    store.apply(&[retired(11, 30, "older")]).await.unwrap();
    let detail: String = admin
        .query_one("SELECT detail FROM retirement WHERE consumer = 'old'", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(detail, "newer");

    // Text PostgreSQL cannot hold is stored rather than refused.
    let mut odd = failing("postgres@db-3", "forge", 9, 1, 40);
    if let Event::Failing(f) = &mut odd.event {
        f.error = "nul \0 inside".into();
    }
    store.apply(&[odd]).await.unwrap();

    // A round the store refuses in its last statement keeps nothing of its
    // earlier ones (its COMMIT, sent behind them, ends in a rollback), and
    // the connection takes the next round.
    admin
        .batch_execute(
            "ALTER TABLE failing ADD CONSTRAINT refused_by_test CHECK (consumer <> 'refused')",
        )
        .await
        .unwrap();
    let refused_round = [
        recovered(r, "kept-out", 12, 41),
        failing(r, "refused", 12, 1, 42),
    ];
    let error = store.apply(&refused_round).await.unwrap_err();
    // The statement's own error, not the aborted transaction's after it.
    assert!(error.to_string().contains("refused_by_test"), "{error}");
    assert!(!error.is_transient(), "{error}");
    let kept: i64 = admin
        .query_one(
            "SELECT count(*) FROM recovered WHERE consumer = 'kept-out'",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(kept, 0, "the refused round's recovered was rolled back");
    store
        .apply(&[recovered(r, "kept-out", 12, 41)])
        .await
        .unwrap();
    let kept: i64 = admin
        .query_one(
            "SELECT count(*) FROM recovered WHERE consumer = 'kept-out'",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(kept, 1, "the next round is applied on the same connection");
    admin
        .batch_execute("ALTER TABLE failing DROP CONSTRAINT refused_by_test")
        .await
        .unwrap();

    // Away: a transient error, and the same store works again afterwards.
    let mut pg = pg;
    pg.stop();
    let error = store
        .apply(&[failing(r, "late", 30, 1, 50)])
        .await
        .unwrap_err();
    assert!(error.is_transient(), "{error}");
    pg.start_again();
    store.apply(&[failing(r, "late", 30, 1, 50)]).await.unwrap();
}

const DECLARATION: &str = r#"{"modules":[
  {"module":"postgres","machine":"db-1","provides":["postgres-database"]},
  {"module":"identity","machine":"id-1","provides":["oidc-client"]},
  {"module":"forge","machine":"app-1","requires":[
    {"provision":"postgres-database","from":"postgres@db-1"},
    {"provision":"oidc-client","from":"identity@id-1"}]},
  {"module":"wiki","machine":"app-2","requires":[
    {"provision":"postgres-database","from":"postgres@db-1"}]}
]}"#;

struct Env {
    args: Vec<String>,
}

/// The arguments that point the controller at the database `db` of `pg`
/// (as its superuser) and at `declaration`.
fn declared(pg: &PgCluster, db: &str, declaration: &std::path::Path) -> Vec<String> {
    let mut args = pg.database_flags(db).to_vec();
    args.extend([
        "--declaration".to_owned(),
        declaration.display().to_string(),
    ]);
    args
}

impl Env {
    async fn run(&self, command: &[&str], now: &str) -> (u8, String, String) {
        let args = std::iter::once("mesh-controller")
            .chain(self.args.iter().map(String::as_str))
            .chain(command.iter().copied());
        let cli = <Cli as clap::Parser>::try_parse_from(args).unwrap();
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let mut io = Io {
            out: &mut out,
            err: &mut err,
            now: ts(now),
        };
        let result = run(&cli, &mut io, &mesh_runtime::Stop::new()).await;
        let code = exit(result, &mut io);
        (
            code,
            String::from_utf8(out).unwrap(),
            String::from_utf8(err).unwrap(),
        )
    }

    async fn json(&self, command: &[&str], now: &str) -> serde_json::Value {
        let (code, out, err) = self.run(command, now).await;
        assert_eq!(code, EXIT_OK, "{command:?}: {err}");
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("{command:?}: {e}: {out}"))
    }
}

fn consumers(report: &serde_json::Value) -> Vec<String> {
    report["failing"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            format!(
                "{}@{}>{}",
                s["provider_module"].as_str().unwrap(),
                s["provider_machine"].as_str().unwrap(),
                s["consumer"].as_str().unwrap()
            )
        })
        .collect()
}

#[tokio::test]
async fn status_and_node_show_on_a_live_store() {
    let mut pg = PgCluster::start();
    let (_, admin) = store_at(&pg, "status").await;
    let dir = tempfile::tempdir().unwrap();
    let declaration = dir.path().join("declaration.json");
    std::fs::write(&declaration, DECLARATION).unwrap();
    let database = pg.database("status");
    let password_file = pg.superuser_password_file();
    let env = Env {
        args: vec![
            "--database".into(),
            database.clone(),
            "--database-password-file".into(),
            password_file.display().to_string(),
            "--declaration".into(),
            declaration.display().to_string(),
        ],
    };
    let now = "2026-10-05T00:10:00Z";

    // Migrated through the command; empty store: nobody heard from, which
    // is not all well (silence is not health).
    let (code, out, err) = env.run(&["migrate"], now).await;
    assert_eq!(code, EXIT_OK, "{err}");
    assert!(
        out.contains(&format!("{} migrations applied", migrations())),
        "{out}"
    );
    // No serve ever followed the stream into it: that is said first, and
    // no provider is blamed for the silence.
    let (code, out, _) = env.run(&["status"], now).await;
    assert_eq!(code, EXIT_OK);
    assert_eq!(
        out.lines().collect::<Vec<_>>(),
        [
            "not all well: the controller has never followed events (is mesh-controller serve \
             running and on the bus?), 0 consumers failing",
            "  no mesh-controller serve has recorded itself in this store",
        ]
    );
    let (code, _, err) = env.run(&["status", "--check"], now).await;
    assert_eq!(
        (code, err.as_str()),
        (1, "mesh-controller: not all well (--check)\n")
    );
    // From here on a serve follows (its catch-up stamped ahead of the
    // store's clock, which counts as now), and the store is an old one:
    // its record is as complete as the stream made it.
    follow_forever(&admin).await;
    admin
        .batch_execute("UPDATE store_record SET begun_at = NULL")
        .await
        .unwrap();
    let (code, out, _) = env.run(&["status"], now).await;
    assert_eq!(code, EXIT_OK);
    assert_eq!(
        out.lines().collect::<Vec<_>>(),
        [
            "not all well: 0 consumers failing, 2 providers not heard from",
            "  identity@id-1 never heard from",
            "  postgres@db-1 never heard from",
        ]
    );
    let report = env.json(&["status", "--json"], now).await;
    assert_eq!(
        report["unheard"],
        serde_json::json!([
            {"provider_module": "identity", "provider_machine": "id-1", "heard_at": null, "started_at": null},
            {"provider_module": "postgres", "provider_machine": "db-1", "heard_at": null, "started_at": null}
        ])
    );

    // Both say alive: all well, and how recently they were heard from. An
    // older alive changes nothing.
    let options = DatabaseOptions::new(&database, Some(&password_file)).unwrap();
    let mut store = PgStore::new(options);
    store
        .apply(&[
            alive("postgres@db-1", 9, 0, None, 100),
            alive("identity@id-1", 8, 0, None, 102),
            alive("identity@id-1", 6, 0, None, 101),
        ])
        .await
        .unwrap();
    let (code, out, _) = env.run(&["status"], now).await;
    assert_eq!(code, EXIT_OK);
    assert_eq!(
        out,
        "all well: none of the 2 providers assigned in the declaration says it keeps failing a \
         consumer (all 2 were heard from within the last 2 min), and no repair fault is open; this \
         does not prove that a consumer can reach its provider\n"
    );
    // Three alive_every later, identity is not heard from.
    let (_, out, _) = env.run(&["status"], "2026-10-05T00:11:01Z").await;
    assert_eq!(
        out.lines().collect::<Vec<_>>(),
        [
            "not all well: 0 consumers failing, 1 provider not heard from",
            "  identity@id-1 not heard from since 2026-10-05T00:08:00Z (its process started \
             2026-10-05T00:00:00Z)",
        ]
    );

    // Standings: two on db-1, one silent, one of a provider not assigned there,
    // one of a provider nobody declared, an open repair fault on id-1.
    let mut wiki = failing("postgres@db-1", "wiki", 9, 3, 2);
    if let Event::Failing(f) = &mut wiki.event {
        f.consumer_machine = Some(name("app-2"));
        f.said_at = ts("2026-10-04T23:00:00Z");
    }
    store
        .apply(&[
            failing("postgres@db-1", "forge", 9, 61, 1),
            wiki,
            failing("postgres@db-9", "forge", 9, 7, 3),
            failing("ghost@db-1", "forge", 9, 7, 4),
            repair(
                "identity@id-1",
                "admin-refused",
                RepairOutcome::Failed,
                9,
                5,
            ),
        ])
        .await
        .unwrap();

    let report = env.json(&["status", "--json"], now).await;
    assert_eq!(report["all_well"], false);
    assert_eq!(
        report["sentence"],
        "not all well: 2 consumers failing (1 not said again for more than 30 min), 1 repair fault open"
    );
    assert_eq!(
        consumers(&report),
        ["postgres@db-1>forge", "postgres@db-1>wiki"],
        "providers not assigned where they ran are not listed"
    );
    let forge = &report["failing"][0];
    let expected = serde_json::json!({
        "provider_module": "postgres", "provider_machine": "db-1", "consumer": "forge",
        "consumer_machine": "app-1", "provision": "postgres-database",
        "class": "credentials-rejected",
        "error": "password authentication failed for user \"forge\"",
        "since": "2026-10-05T00:04:00Z", "attempts": 61, "said_at": "2026-10-05T00:09:00Z",
        "silent_for_seconds": null
    });
    assert_eq!(forge, &expected);
    assert_eq!(report["failing"][1]["silent_for_seconds"], 4200);
    assert_eq!(report["repairs"][0]["fault"], "admin-refused");
    let keys: Vec<&String> = report.as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        [
            "all_well",
            "catching_up",
            "controller",
            "failing",
            "grants",
            "problems",
            "repairs",
            "retired",
            "retiring",
            "sentence",
            "unheard"
        ]
    );
    // The list every member is drawn from: the standings by provider and
    // class (the store's count), then the repair fault.
    let problems: Vec<(&str, &str, &str, u64)> = report["problems"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["kind"].as_str().unwrap(),
                p["provider"].as_str().unwrap(),
                p["cause"].as_str().unwrap(),
                p["count"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        problems,
        [
            (
                "consumers_failing",
                "postgres@db-1",
                "credentials-rejected",
                2
            ),
            ("repair_faults_open", "identity@id-1", "admin-refused", 1)
        ],
        "{}",
        report["problems"]
    );
    assert_eq!(report["controller"]["following"], true);
    assert_eq!(report["controller"]["host"], "ctl-1");
    assert_eq!(
        report["problems"][0]["runbook"],
        "class-credentials-rejected"
    );

    // --explain: after the report, each problem's next step from the runbook.
    let (code, out, err) = env.run(&["status", "--explain"], now).await;
    assert_eq!(code, 0, "{err}");
    let steps: Vec<&str> = out
        .lines()
        .skip_while(|l| !l.starts_with("what to do"))
        .collect();
    assert_eq!(steps.len(), 3, "{out}");
    assert!(
        steps[1].starts_with("  #class-credentials-rejected: "),
        "{out}"
    );
    assert!(steps[2].starts_with("  #repair-faults-open: "), "{out}");

    // why: one verdict on one consumer, its providers and the next step.
    let (code, out, err) = env.run(&["why", "forge"], now).await;
    assert_eq!(code, EXIT_NOT_DONE, "not served: {err}");
    assert!(err.contains("forge@app-1 is not served"), "{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert!(
        lines[0].starts_with(
            "forge@app-1: failing: postgres@db-1 says credentials-rejected since \
             2026-10-05T00:04:00Z (61 attempts"
        ),
        "{out}"
    );
    assert!(
        lines.contains(&"  postgres@db-1 gives it postgres-database: heard from"),
        "{out}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("  identity@id-1 repair fault admin-refused")),
        "its other provider's open repair fault concerns it: {out}"
    );
    assert!(
        lines
            .last()
            .unwrap()
            .starts_with("  next step (#class-credentials-rejected in "),
        "{out}"
    );
    let (code, out, err) = env.run(&["why", "forge@app-1", "--json"], now).await;
    assert_eq!(code, EXIT_NOT_DONE, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["consumer"], "forge@app-1");
    assert_eq!(v["well"], false);
    assert_eq!(v["runbook"], "class-credentials-rejected");
    assert_eq!(v["providers"].as_array().unwrap().len(), 2, "{v}");
    let (code, _, err) = env.run(&["why", "nobody"], now).await;
    assert_eq!(code, 2);
    assert!(
        err.contains("the declaration names no module nobody"),
        "{err}"
    );
    let (code, _, err) = env.run(&["why", "forge@app-9"], now).await;
    assert_eq!(code, 2);
    assert!(err.contains("no module forge on app-9"), "{err}");

    // note: what a person learnt, a row of history by its author.
    let (code, _, err) = env
        .run(
            &["note", "forge", "reset from the vault", "--by", "ana"],
            now,
        )
        .await;
    assert_eq!(code, 2);
    assert!(err.contains("say which with --provider"), "{err}");
    let (code, out, err) = env
        .run(
            &[
                "note",
                "forge@app-1",
                "admin password\treset from the vault",
                "--provider",
                "postgres@db-1",
                "--by",
                "ana",
            ],
            now,
        )
        .await;
    assert_eq!(code, EXIT_OK, "{err}");
    assert!(
        out.starts_with("note on forge@app-1 from postgres@db-1 by ana at "),
        "{out}"
    );
    let (code, out, err) = env
        .run(&["history", "forge@app-1", "--since", "30d"], now)
        .await;
    assert_eq!(code, EXIT_OK, "{err}");
    assert!(
        out.contains("forge@app-1 from postgres@db-1: note by ana ")
            && out.contains(": \"admin password reset from the vault\""),
        "{out}"
    );

    // --silent-after changes the marking.
    let report = env
        .json(&["status", "--json", "--silent-after", "2h"], now)
        .await;
    assert_eq!(
        report["failing"][1]["silent_for_seconds"],
        serde_json::Value::Null
    );

    // Human form: the sentence, then one line per standing and repair.
    let (code, out, _) = env.run(&["status"], now).await;
    assert_eq!(code, EXIT_OK);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 4, "{out}");
    assert!(lines[0].starts_with("not all well: 2 consumers failing"));
    assert!(lines[1].contains("postgres@db-1 fails forge@app-1 (postgres-database): credentials-rejected since 2026-10-05T00:04:00Z, 61 attempts"), "{out}");
    assert!(
        lines[2].contains("fails wiki@app-2") && lines[2].contains("silent for 1 h 10 min"),
        "{out}"
    );
    assert!(
        lines[3].contains("identity@id-1 repair fault admin-refused: failed"),
        "{out}"
    );

    // node show: the provider's machine, each consumer's machine, elsewhere.
    let cases: &[(&str, &[&str], usize)] = &[
        ("db-1", &["postgres@db-1>forge", "postgres@db-1>wiki"], 0),
        ("app-1", &["postgres@db-1>forge"], 0),
        ("app-2", &["postgres@db-1>wiki"], 0),
        ("id-1", &[], 1),
    ];
    for (machine, listed, repairs) in cases {
        let report = env.json(&["node", "show", machine, "--json"], now).await;
        assert_eq!(consumers(&report), *listed, "{machine}");
        assert_eq!(report["machine"], *machine);
        assert_eq!(
            report["repairs"].as_array().unwrap().len(),
            *repairs,
            "{machine}"
        );
        assert_eq!(
            report["all_well"],
            listed.is_empty() && *repairs == 0,
            "{machine}"
        );
    }
    let (code, out, _) = env.run(&["node", "show", "app-1"], now).await;
    assert_eq!(code, EXIT_OK);
    assert!(
        out.starts_with("not all well: 1 consumer failing on app-1\n"),
        "{out}"
    );
    // A machine the declaration does not name (postgres@db-9 published
    // from there, but is not declared) is an error naming those it does.
    let (code, out, err) = env.run(&["node", "show", "db-9"], now).await;
    assert_eq!((code, out.as_str()), (EXIT_CANNOT, ""));
    assert_eq!(
        err,
        "mesh-controller: the declaration names no machine db-9 (it names: app-1, app-2, db-1, \
         id-1)\n"
    );
    let (_, out, _) = env.run(&["node", "show", "id-1", "--check"], now).await;
    assert!(
        out.starts_with("not all well: 0 consumers failing on id-1, 1 repair fault open"),
        "{out}"
    );

    // A recovery clears its standing.
    store
        .apply(&[recovered("postgres@db-1", "forge", 10, 6)])
        .await
        .unwrap();
    let report = env.json(&["status", "--json"], now).await;
    assert_eq!(consumers(&report), ["postgres@db-1>wiki"]);

    // postgres@db-1 restarted at 00:05 (after wiki's event, said the day
    // before): until it is settled wiki stays listed; once it is, an event
    // said before its start is one it no longer has.
    store
        .apply(&[alive("postgres@db-1", 9, 5, None, 103)])
        .await
        .unwrap();
    let still = env.json(&["status", "--json"], now).await;
    assert_eq!(consumers(&still), ["postgres@db-1>wiki"]);
    store
        .apply(&[alive("postgres@db-1", 10, 5, Some(10), 104)])
        .await
        .unwrap();
    let settled = env.json(&["status", "--json"], now).await;
    assert_eq!(consumers(&settled), Vec::<String>::new());
    assert_eq!(
        settled["sentence"],
        "not all well: 0 consumers failing, 1 repair fault open"
    );
    // An event said again after the start is listed again.
    store
        .apply(&[failing("postgres@db-1", "forge", 10, 62, 105)])
        .await
        .unwrap();
    let report = env.json(&["status", "--json"], now).await;
    assert_eq!(consumers(&report), ["postgres@db-1>forge"]);
    // Restarted again in the very second forge was said (times are whole
    // seconds): once settled, that event is gone too.
    store
        .apply(&[alive("postgres@db-1", 11, 10, Some(11), 106)])
        .await
        .unwrap();
    let report = env
        .json(
            &["status", "--json", "--silent-after", "1h"],
            "2026-10-05T00:11:00Z",
        )
        .await;
    assert_eq!(consumers(&report), Vec::<String>::new());

    // The binary: exit 0 with the report, and exit 2 with the reason when
    // the declaration or the store cannot be read.
    let binary = env!("CARGO_BIN_EXE_mesh-controller");
    let output = Command::new(binary)
        .args(&env.args)
        .args(["status", "--json"])
        .env_remove("RUST_LOG")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(EXIT_OK.into()));
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["all_well"], false);

    let mut missing = env.args.clone();
    missing[5] = dir.path().join("nope.json").display().to_string();
    let output = Command::new(binary)
        .args(&missing)
        .arg("status")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(EXIT_CANNOT.into()));
    assert!(output.stdout.is_empty());
    assert!(String::from_utf8_lossy(&output.stderr).contains("nope.json"));

    pg.stop();
    let output = tokio::time::timeout(Duration::from_secs(30), async {
        tokio::process::Command::new(binary)
            .args(&env.args)
            .arg("status")
            .output()
            .await
            .unwrap()
    })
    .await
    .expect("status with the store away must not hang");
    assert_eq!(output.status.code(), Some(EXIT_CANNOT.into()));
    assert!(output.stdout.is_empty());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("cannot read the store"), "{stderr}");
    assert!(
        !stderr.contains(pg.superuser_password()),
        "no password in errors: {stderr}"
    );
}

/// Records a `serve` on `ctl-1` that caught up a day ahead of the store's
/// clock, following since before the test's events: it counts as following
/// for the whole test.
async fn follow_forever(admin: &tokio_postgres::Client) {
    admin
        .batch_execute(
            "INSERT INTO controller_instance (instance, host, pid, started_at, pull_wait_ms,
                 pulled_at, applied_at, following_since, seen_at)
             VALUES ('ctl-1 pid 1 started 2026-10-05T00:00:00Z', 'ctl-1', 1,
                 '2026-10-05T00:00:00Z', 2000, now() + interval '1 day', now(),
                 '2026-10-01T00:00:00Z', now())",
        )
        .await
        .unwrap();
}

/// Every order of the same events gives the same store: applied one by one
/// in each of the 120 orders of five events (two of them said in the same
/// second), and in rounds of two and three, the failing row left is the one
/// of the newest event in the stream, `(stream epoch, stream sequence)`,
/// whatever came first.
#[tokio::test]
async fn the_result_does_not_depend_on_the_order_events_are_applied_in() {
    let pg = PgCluster::start();
    let (options, admin) = store_at(&pg, "orders").await;
    migrate(&options).await.unwrap();
    let mut store = PgStore::new(options);
    // (kind, said minute, seq): the newest is the failing said at 12, seq 5;
    // the recovered at 12 but seq 4 is older than it.
    let events = [
        ("f", 9, 1),
        ("r", 10, 2),
        ("f", 11, 3),
        ("r", 12, 4),
        ("f", 12, 5),
    ];
    let expected = [("forge".to_owned(), 5)];
    // Every arrangement of 0..5: the five-digit base-5 numbers with distinct digits.
    let n = events.len();
    let orders: Vec<Vec<usize>> = (0..n.pow(n as u32))
        .map(|mut k| {
            (0..n)
                .map(|_| {
                    let digit = k % n;
                    k /= n;
                    digit
                })
                .collect::<Vec<usize>>()
        })
        .filter(|order| (0..n).all(|i| order.contains(&i)))
        .collect();
    assert_eq!(orders.len(), 120);
    let received = |provider: &str, i: usize| {
        let (kind, said, seq) = events[i];
        if kind == "f" {
            failing(provider, "forge", said, seq, seq)
        } else {
            recovered(provider, "forge", said, seq)
        }
    };
    for (n, order) in orders.iter().enumerate() {
        // One by one, and in rounds split after the second event.
        let one = format!("one{n}@db-1");
        for &i in order {
            store.apply(&[received(&one, i)]).await.unwrap();
        }
        let rounds = format!("rounds{n}@db-1");
        let (first, second) = order.split_at(2);
        for part in [first, second] {
            let round: Vec<Received> = part.iter().map(|&i| received(&rounds, i)).collect();
            store.apply(&round).await.unwrap();
        }
        for provider in [one, rounds] {
            let id = ModuleId::parse(&provider).unwrap();
            assert_eq!(
                failing_rows(&admin, &id).await,
                expected,
                "{provider}: {order:?}"
            );
        }
    }
}

/// A store connection that ends says why in its log line: the server's own
/// message and SQLSTATE (here an administrator ended the session), never
/// `db error` alone, and never a password.
#[tokio::test]
async fn a_store_connection_that_ends_logs_the_servers_reason() {
    let (capture, _guard) = LogCapture::start();
    let pg = PgCluster::start();
    pg.create_database("ended").await;
    let options = DatabaseOptions::new(
        &format!("postgres://postgres@127.0.0.1:{}/ended", pg.port()),
        Some(&pg.superuser_password_file()),
    )
    .unwrap();
    migrate(&options).await.unwrap();
    let mut store = PgStore::new(options);
    store
        .stream_epoch("MESH_EVENTS", std::time::SystemTime::UNIX_EPOCH)
        .await
        .expect("the store answers");

    let admin = pg.connect_admin().await;
    let ended = admin
        .execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
             WHERE datname = 'ended' AND pid <> pg_backend_pid()",
            &[],
        )
        .await
        .unwrap();
    assert_eq!(ended, 1, "the store's one session was ended");
    let line = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            let text = capture.text();
            if let Some(line) = text.lines().find(|l| l.contains("store connection ended")) {
                return line.to_owned();
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("no line says the connection ended:\n{}", capture.text()));
    assert!(
        line.contains("terminating connection due to administrator command (57P01)")
            && line.contains("127.0.0.1"),
        "{line}"
    );
    assert!(!line.contains(pg.superuser_password()), "{line}");
}

/// A value in the store that is none of its column's values (written by
/// another program, or another version) stops `status` with an error that
/// names the column and quotes the value: never a panic, never a default.
#[tokio::test]
async fn a_stored_value_that_does_not_decode_is_named_with_its_column() {
    let pg = PgCluster::start();
    let (_, admin) = store_at(&pg, "strange").await;
    let dir = tempfile::tempdir().unwrap();
    let declaration = dir.path().join("declaration.json");
    std::fs::write(&declaration, DECLARATION).unwrap();
    let env = Env {
        args: declared(&pg, "strange", &declaration),
    };
    let now = "2026-10-05T00:10:00Z";
    assert_eq!(env.run(&["migrate"], now).await.0, EXIT_OK);
    let failing = "INSERT INTO failing (provider_module, provider_machine, consumer, \
        consumer_machine, provision, class, error, since, attempts, said_at, stream_seq, \
        stream_epoch) VALUES ('postgres', 'db-1', 'forge', 'app-1', 'p', 'credentials-rejected', \
        'e', '2026-10-05T00:04:00Z', 1, '2026-10-05T00:09:00Z', 1, 1)";
    let repair = "INSERT INTO repair (provider_module, provider_machine, fault, outcome, \
        detail, next_attempt_at, said_at, stream_seq, stream_epoch) VALUES ('identity', 'id-1', \
        'admin-refused', 'failed', 'd', NULL, '2026-10-05T00:09:00Z', 2, 1)";
    let grant = "INSERT INTO grant_event (machine, consumer, provision, provider, kind, reason, \
        said_at, stream_seq, stream_epoch) VALUES ('app-1', 'forge', 'p', 'postgres@db-1', \
        'unchecked', 'no port', '2026-10-05T00:09:00Z', 3, 1)";
    for statement in [failing, repair, grant] {
        admin.execute(statement, &[]).await.unwrap();
    }
    let (code, out, err) = env.run(&["status", "--json"], now).await;
    assert_eq!(code, EXIT_OK, "the store as written reads: {err}");
    assert!(out.contains("credentials-rejected"), "{out}");

    // (what is changed and back, the column named, what is said of the value)
    let cases = [
        (
            "UPDATE failing SET class = 'bogus'",
            "UPDATE failing SET class = 'refused'",
            "failing.class",
            "\"bogus\" is not a failure class (one of credentials-rejected, unreachable, \
             secret-unreadable, refused)",
        ),
        (
            "UPDATE repair SET outcome = 'Fixed'",
            "UPDATE repair SET outcome = 'failed'",
            "repair.outcome",
            "\"Fixed\" is not a repair outcome (one of repaired, failed, braked)",
        ),
    ];
    for (change, back, column, said) in cases {
        admin.batch_execute(change).await.unwrap();
        let (code, out, err) = env.run(&["status"], now).await;
        assert_eq!(code, EXIT_CANNOT, "{change}: {out}");
        assert!(
            err.contains(&format!(
                "holds a value this controller cannot read: column {column}: {said}"
            )),
            "{change}: {err}"
        );
        assert!(!err.contains("panicked"), "{err}");
        admin.batch_execute(back).await.unwrap();
        assert_eq!(env.run(&["status"], now).await.0, EXIT_OK, "{back}");
    }
    // The grant's state is checked by the table itself: no other value gets in.
    let refused = admin
        .batch_execute("UPDATE grant_event SET kind = 'broken'")
        .await
        .unwrap_err();
    assert_eq!(
        refused.code(),
        Some(&tokio_postgres::error::SqlState::CHECK_VIOLATION)
    );
}

#[tokio::test]
async fn an_alive_keeps_when_the_stream_stored_it_and_its_provider_fault() {
    let pg = PgCluster::start();
    let (options, _admin) = store_at(&pg, "stored_at").await;
    migrate(&options).await.unwrap();
    let mut store = PgStore::new(options);
    // A provider whose clock is an hour behind: said 00:00:09 less an hour,
    // stored by the stream at 00:00:09.
    let mut received = alive("postgres@db-1", 9, 0, None, 1);
    if let Event::Alive(body) = &mut received.event {
        body.said_at = Timestamp::from_system(at(9).system_time() - Duration::from_secs(3600));
    }
    received.stored_at = Some(at(9));
    store.apply(&[received]).await.unwrap();
    let filter = StatusFilter {
        providers: vec![ModuleId::parse("postgres@db-1").unwrap()],
        providers_chosen: false,
        machine: None,
        silent_before: at(0),
        required: vec![],
        order: Order::Key,
        consumer: None,
        per_group: None,
    };
    let read = store.read_status(&filter).await.unwrap();
    assert_eq!(read.alive.len(), 1);
    assert_eq!(read.alive[0].stored_at, Some(at(9)));
    let (heard, _) = mesh_status::report::heard(&read.alive[0], at(10));
    assert!(
        heard,
        "judged by when the stream stored it: {:?}",
        read.alive[0]
    );
    assert_eq!(read.alive[0].fault, None);
    read.finish().await.unwrap();

    // Its provider fault is kept with its newest alive, and goes with the
    // next alive that carries none.
    let fault = mesh_protocol::event::ProviderFault {
        class: Class::CredentialsRejected,
        error: "password authentication failed for user \"mesh_admin\"".into(),
        since: at(9),
    };
    let mut received = alive("postgres@db-1", 10, 0, None, 2);
    if let Event::Alive(body) = &mut received.event {
        body.fault = Some(fault.clone());
    }
    store.apply(&[received]).await.unwrap();
    let read = store.read_status(&filter).await.unwrap();
    assert_eq!(read.alive[0].fault.as_ref(), Some(&fault));
    read.finish().await.unwrap();
    store
        .apply(&[alive("postgres@db-1", 11, 0, None, 3)])
        .await
        .unwrap();
    let read = store.read_status(&filter).await.unwrap();
    assert_eq!(read.alive[0].fault, None, "cleared by an alive without one");
    read.finish().await.unwrap();
}

#[tokio::test]
async fn a_provider_fault_begins_changes_class_and_clears_as_history_rows_of_its_rounds() {
    use mesh_status::model::history::{Change, TransitionKind};
    let pg = PgCluster::start();
    let (options, admin) = store_at(&pg, "fault_history").await;
    migrate(&options).await.unwrap();
    let mut store = PgStore::new(options);
    let with_fault = |said: u32, seq: u64, fault: Option<(Class, u32)>| {
        let mut received = alive("postgres@db-1", said, 0, None, seq);
        if let Event::Alive(body) = &mut received.event {
            body.fault = fault.map(|(class, since)| mesh_protocol::event::ProviderFault {
                class,
                error: "password authentication failed for user \"mesh_admin\"\0".into(),
                since: at(since),
            });
        }
        received
    };
    let rows = || async {
        admin
            .query(
                "SELECT kind, class, error, since, stream_seq, provider_module, provider_machine \
                 FROM history ORDER BY id",
                &[],
            )
            .await
            .unwrap()
            .iter()
            .map(|r| {
                (
                    r.get::<_, String>(0),
                    r.get::<_, Option<String>>(1),
                    r.get::<_, Option<String>>(2).is_some(),
                    r.get::<_, Option<std::time::SystemTime>>(3)
                        .map(Timestamp::from_system),
                    r.get::<_, Option<i64>>(4),
                    format!("{}@{}", r.get::<_, String>(5), r.get::<_, String>(6)),
                )
            })
            .collect::<Vec<_>>()
    };
    // Healthy, then a fault begins and is said again (one round: no repeat).
    store.apply(&[with_fault(1, 1, None)]).await.unwrap();
    let rejected = Some((Class::CredentialsRejected, 2));
    store
        .apply(&[with_fault(2, 2, rejected), with_fault(3, 3, rejected)])
        .await
        .unwrap();
    // Redelivered: nothing more.
    store.apply(&[with_fault(2, 2, rejected)]).await.unwrap();
    // Its class changes, then it clears.
    store
        .apply(&[with_fault(4, 4, Some((Class::Unreachable, 4)))])
        .await
        .unwrap();
    // Still lasting, begun before the window: read whole.
    let provider_filter = |since| mesh_status::store::HistoryFilter {
        consumer: None,
        provider: Some(ModuleId::parse("postgres@db-1").unwrap()),
        machine: None,
        since,
    };
    let within = Timestamp::from_system(at(4).system_time() + Duration::from_secs(30));
    let (transitions, _) = store.read_history(&provider_filter(within)).await.unwrap();
    let kinds: Vec<_> = transitions
        .iter()
        .map(|t| match &t.change {
            Change::ProviderFaultBegan { class, .. } => (t.kind(), Some(*class)),
            _ => (t.kind(), None),
        })
        .collect();
    assert_eq!(
        kinds,
        [(TransitionKind::ProviderFaultBegan, Some(Class::Unreachable))]
    );
    store.apply(&[with_fault(5, 5, None)]).await.unwrap();
    store.apply(&[with_fault(6, 6, None)]).await.unwrap();
    let p = "postgres@db-1".to_owned();
    let (rejected, unreachable) = (
        Some("credentials-rejected".to_owned()),
        Some("unreachable".to_owned()),
    );
    assert_eq!(
        rows().await,
        [
            (
                "provider-fault-began".to_owned(),
                rejected,
                true,
                Some(at(2)),
                Some(2),
                p.clone()
            ),
            (
                "provider-fault-began".to_owned(),
                unreachable.clone(),
                true,
                Some(at(4)),
                Some(4),
                p.clone()
            ),
            (
                "provider-fault-cleared".to_owned(),
                unreachable,
                false,
                Some(at(4)),
                Some(5),
                p
            ),
        ]
    );
    // `history --provider` reads them back as one interval each.
    let (transitions, _) = store.read_history(&provider_filter(at(0))).await.unwrap();
    let entries = mesh_status::report::history::entries(&transitions, at(10));
    assert_eq!(entries.len(), 2, "{entries:#?}");
    // Cleared, it is not read before the window any more.
    let (transitions, _) = store.read_history(&provider_filter(within)).await.unwrap();
    assert_eq!(transitions.len(), 1, "only its clearing: {transitions:#?}");
    assert!(entries
        .iter()
        .all(|e| e.kind == mesh_status::report::history::EntryKind::ProviderFault));
    assert_eq!(entries[0].reason.as_deref(), Some("cleared"));
}

#[tokio::test]
async fn an_alive_keeps_what_the_contributions_file_refused_until_the_next_one() {
    use mesh_protocol::event::{ContributionsRead, RefusedContribution};
    let pg = PgCluster::start();
    let (options, _admin) = store_at(&pg, "contributions_read").await;
    migrate(&options).await.unwrap();
    let mut store = PgStore::new(options);
    let filter = StatusFilter {
        providers: vec![ModuleId::parse("postgres@db-1").unwrap()],
        providers_chosen: false,
        machine: None,
        silent_before: at(0),
        required: vec![],
        order: Order::Key,
        consumer: None,
        per_group: None,
    };
    let refused = ContributionsRead {
        readable: false,
        problem: Some("contributions file /etc/mesh/c.json cannot be read: denied\0".into()),
        refused: vec![RefusedContribution {
            index: 3,
            consumer: Some(name("forge")),
            reason: "provision: it is empty".into(),
        }],
        more: 2,
    };
    // (what the alive carries, what is read back)
    let cases = [
        (None, None),
        (Some(refused.clone()), {
            let mut kept = refused;
            kept.problem =
                Some("contributions file /etc/mesh/c.json cannot be read: denied\u{FFFD}".into());
            Some(kept)
        }),
        (
            Some(ContributionsRead::good()),
            Some(ContributionsRead::good()),
        ),
    ];
    for (seq, (carried, read_back)) in (1..).zip(cases) {
        let mut received = alive(
            "postgres@db-1",
            9 + u32::try_from(seq).unwrap(),
            0,
            None,
            seq,
        );
        if let Event::Alive(body) = &mut received.event {
            body.contributions = carried;
        }
        store.apply(&[received]).await.unwrap();
        let read = store.read_status(&filter).await.unwrap();
        assert_eq!(read.alive[0].contributions, read_back, "alive {seq}");
        read.finish().await.unwrap();
    }
}

/// The settled rule reads "before the provider's newest start" on the
/// stream's clock: a provider restarted with its clock stepped back (found
/// by the simulator) still has the standings of its earlier run left out,
/// and one stepped ahead keeps those of its new run.
#[tokio::test]
async fn the_settled_rule_holds_through_a_clock_stepped_between_two_runs() {
    let pg = PgCluster::start();
    let (options, _admin) = store_at(&pg, "stepped").await;
    migrate(&options).await.unwrap();
    let mut store = PgStore::new(options);
    let stored = |mut received: Received, minute: u32| {
        received.stored_at = Some(at(minute));
        received
    };
    // Back: "forge" failing said and stored at minute 30 (a clock right);
    // the provider then starts again with its clock 20 minutes behind:
    // started at 20 by its clock (40 by the stream's), settled, its alive
    // said at 25 and stored at 45. "wiki" failing was said by the new run.
    store
        .apply(&[
            stored(failing("postgres@db-1", "forge", 30, 3, 1), 30),
            stored(alive("postgres@db-1", 25, 20, Some(25), 2), 45),
            stored(failing("postgres@db-1", "wiki", 26, 3, 3), 46),
        ])
        .await
        .unwrap();
    // Ahead: identity's new run's clock is 20 minutes ahead: started at 50
    // by its clock (30 by the stream's); "forge" failing said at 56 by it,
    // stored at 36: its own, kept.
    store
        .apply(&[
            stored(alive("identity@id-1", 55, 50, Some(55), 4), 35),
            stored(failing("identity@id-1", "forge", 56, 3, 5), 36),
        ])
        .await
        .unwrap();
    let filter = StatusFilter {
        providers: vec![
            ModuleId::parse("identity@id-1").unwrap(),
            ModuleId::parse("postgres@db-1").unwrap(),
        ],
        providers_chosen: false,
        machine: None,
        silent_before: at(0),
        required: vec![],
        order: Order::Key,
        consumer: None,
        per_group: None,
    };
    let mut read = store.read_status(&filter).await.unwrap();
    let mut listed = Vec::new();
    while let Some(row) = read.next().await.unwrap() {
        listed.push(format!("{} {}", row.provider, row.said.consumer));
    }
    read.finish().await.unwrap();
    assert_eq!(listed, ["identity@id-1 forge", "postgres@db-1 wiki"]);
}

/// `secs` seconds before the wall clock now (the store's clock, here).
fn ago(secs: u64) -> Timestamp {
    Timestamp::from_system(std::time::SystemTime::now() - Duration::from_secs(secs))
}

fn retirement(consumer: &str, action: RetirementAction, seq: u64) -> Received {
    let event = Event::Retirement(Retirement {
        v: 1,
        consumer: name(consumer),
        action,
        detail: format!("{consumer} {}", action.as_str()),
        retire_at: (action == RetirementAction::Retiring).then(|| ago(0)),
        said_at: ago(600),
    });
    received("postgres@db-1", seq, event)
}

/// Three consumers failing for one cause, and one for another, said now.
fn refused(consumer: &str, machine: &str, error: &str, seq: u64) -> Received {
    let event = Event::Failing(Failing {
        v: 1,
        consumer: name(consumer),
        consumer_machine: Some(name(machine)),
        provision: Some("postgres-database".into()),
        class: Class::Unreachable,
        error: error.into(),
        since: ago(300),
        attempts: 9,
        said_at: ago(1),
    });
    received("postgres@db-1", seq, event)
}

#[tokio::test]
async fn the_controller_record_retired_consumers_and_a_new_store_on_a_live_store() {
    let pg = PgCluster::start();
    let (options, admin) = store_at(&pg, "record").await;
    let dir = tempfile::tempdir().unwrap();
    let declaration = dir.path().join("declaration.json");
    let required = [
        ("forge", "app-1"),
        ("wiki", "app-1"),
        ("docs", "app-2"),
        ("blog", "app-2"),
        ("site", "app-2"),
    ];
    let mut modules = vec![
        r#"{"module":"postgres","machine":"db-1","provides":["postgres-database"]}"#.to_owned(),
    ];
    modules.extend(required.iter().map(|(c, m)| {
        format!(
            r#"{{"module":"{c}","machine":"{m}","requires":[{{"provision":"postgres-database","from":"postgres@db-1"}}]}}"#
        )
    }));
    std::fs::write(
        &declaration,
        format!(r#"{{"modules":[{}]}}"#, modules.join(",")),
    )
    .unwrap();
    let env = Env {
        args: declared(&pg, "record", &declaration),
    };
    let now = Timestamp::now().to_string();
    let now = now.as_str();

    // A store no migration made yet: said plainly.
    let (code, out, err) = env.run(&["status"], now).await;
    assert_eq!((code, out.as_str()), (EXIT_CANNOT, ""), "{err}");
    assert!(
        err.contains("is not migrated to this release of mesh-controller")
            && err.contains("mesh-controller migrate"),
        "{err}"
    );
    migrate(&options).await.unwrap();
    let begun: Option<std::time::SystemTime> = admin
        .query_one("SELECT begun_at FROM store_record", &[])
        .await
        .unwrap()
        .get(0);
    assert!(begun.is_some(), "a new store's record begins now");

    // When serve meets its first stream: a durable consumer that had
    // acknowledged events keeps the record beginning now (a store that was
    // there took them); a new consumer gets every event, so the record is
    // whole; once a stream is met, what was said stays.
    let mut store = PgStore::new(options.clone());
    let begun = || async {
        admin
            .query_one("SELECT begun_at FROM store_record", &[])
            .await
            .unwrap()
            .get::<_, Option<std::time::SystemTime>>(0)
    };
    let said = store.record_begins(true).await.unwrap();
    assert!(begun().await.is_some(), "acknowledged before: begins now");
    assert_eq!(said, begun().await, "and says when: the store is new");
    assert_eq!(store.record_begins(false).await.unwrap(), None);
    assert_eq!(begun().await, None, "a new consumer: the record is whole");
    store
        .stream_epoch("MESH_EVENTS", std::time::SystemTime::UNIX_EPOCH)
        .await
        .unwrap();
    assert_eq!(store.record_begins(true).await.unwrap(), None, "not new");
    assert_eq!(begun().await, None, "a stream met: the record is kept");
    admin
        .batch_execute("DELETE FROM stream_epoch; UPDATE store_record SET begun_at = now()")
        .await
        .unwrap();

    // A serve that has not caught up yet, then one that has.
    let mut store = PgStore::new(options);
    let instance = mesh_status::model::Instance {
        host: "ctl-1".into(),
        pid: 4242,
        started_at: ts("2026-10-05T00:00:00Z"),
        pull_wait: Duration::from_secs(2),
    };
    Store::record(&mut store, instance_record(&instance, false, false, true))
        .await
        .unwrap();
    let (_, out, _) = env.run(&["status"], now).await;
    assert_eq!(
        out.lines().collect::<Vec<_>>(),
        [
            "not all well: the controller has never followed events (is mesh-controller serve \
             running and on the bus?), 0 consumers failing",
            "  mesh-controller serve on ctl-1 (pid 4242, started 2026-10-05T00:00:00Z) has not \
             caught up with the event stream yet",
        ]
    );
    Store::record(&mut store, instance_record(&instance, true, true, false))
        .await
        .unwrap();
    let report = env.json(&["status", "--json"], now).await;
    assert_eq!(report["controller"]["following"], true, "{report}");
    assert_eq!(report["controller"]["host"], "ctl-1");
    // A run of catch-ups goes on while they come within the bound, and a
    // catch-up after a gap begins a new one.
    let since = || async {
        admin
            .query_one(
                "SELECT following_since = pulled_at, following_since > now() - interval '1 minute'
                 FROM controller_instance",
                &[],
            )
            .await
            .map(|r| (r.get::<_, bool>(0), r.get::<_, bool>(1)))
            .unwrap()
    };
    admin
        .batch_execute("UPDATE controller_instance SET following_since = now() - interval '1 hour'")
        .await
        .unwrap();
    Store::record(&mut store, instance_record(&instance, true, false, false))
        .await
        .unwrap();
    assert_eq!(since().await, (false, false), "the run goes on");
    admin
        .batch_execute("UPDATE controller_instance SET pulled_at = now() - interval '7 seconds'")
        .await
        .unwrap();
    Store::record(&mut store, instance_record(&instance, true, false, false))
        .await
        .unwrap();
    assert_eq!(since().await, (true, true), "a new run after a gap");
    // Forgotten after 7 days unseen, but never the last to catch up.
    admin
        .batch_execute(
            "INSERT INTO controller_instance (instance, host, pid, started_at, pull_wait_ms,
                 pulled_at, seen_at)
             VALUES ('old', 'ctl-0', 1, now(), 2000, now() - interval '9 days',
                     now() - interval '8 days')",
        )
        .await
        .unwrap();
    Store::record(&mut store, instance_record(&instance, true, false, true))
        .await
        .unwrap();
    let left: i64 = admin
        .query_one("SELECT count(*) FROM controller_instance", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(left, 1, "the instance gone for 8 days is forgotten");
    assert_eq!(report["controller"]["pid"], 4242);
    assert!(report["controller"]["pulled_at"].is_string(), "{report}");
    assert!(report["controller"]["applied_at"].is_string(), "{report}");

    // A provider that started before this new store's record began: not
    // fully known until it has said again what it keeps failing.
    let alive = |said: u64, every: u64, seq: u64| {
        let event = Event::Alive(Alive {
            v: 1,
            started_at: ago(3600),
            alive_every_seconds: every,
            failing_after_seconds: 300,
            repeat_every_seconds: Some(900),
            settled_at: Some(ago(3000)),
            consumers: 5,
            failing: 0,
            pass_seconds: 0.1,
            said_at: ago(said),
            fault: None,
            contributions: None,
        });
        received("postgres@db-1", seq, event)
    };
    store.apply(&[alive(1, 60, 1)]).await.unwrap();
    let report = env.json(&["status", "--json"], now).await;
    let begins = report["controller"]["record_begins_at"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(
        report["sentence"],
        format!(
            "not all well: the store is new since {begins}; 1 provider not fully known yet, 0 \
             consumers failing"
        )
    );
    assert_eq!(report["catching_up"][0]["provider_machine"], "db-1");
    admin
        .batch_execute("UPDATE store_record SET begun_at = now() - interval '20 minutes'")
        .await
        .unwrap();
    let report = env.json(&["status", "--json"], now).await;
    assert_eq!(report["all_well"], true, "{report}");
    assert_eq!(report["catching_up"], serde_json::json!([]));

    // Retirements of required consumers: the newest (in stream order) counts.
    store
        .apply(&[
            // forge: retired.
            retirement("forge", RetirementAction::Retired, 10),
            // wiki: retired, then listed again and re-enabled.
            retirement("wiki", RetirementAction::Retired, 11),
            retirement("wiki", RetirementAction::ReEnabled, 12),
            // docs: retired, a person approved, deleted.
            retirement("docs", RetirementAction::Retired, 13),
            retirement("docs", RetirementAction::Approved, 14),
            retirement("docs", RetirementAction::Deleted, 15),
            // blog: deleted, then listed again and made anew.
            retirement("blog", RetirementAction::Retired, 16),
            retirement("blog", RetirementAction::Deleted, 17),
            received(
                "postgres@db-1",
                18,
                Event::Recovered(Recovered {
                    v: 1,
                    consumer: name("blog"),
                    consumer_machine: Some(name("app-2")),
                    provision: None,
                    reason: RecoveredReason::FirstSuccessAfterStart,
                    said_at: ago(60),
                }),
            ),
            // site: retired, then attempted again and failing.
            retirement("site", RetirementAction::Retired, 19),
            refused("site", "app-2", "connection refused", 20),
            // old: not required by the declaration.
            retirement("old", RetirementAction::Retired, 21),
            // wiki: withdrawn again, counted down to retire.
            retirement("wiki", RetirementAction::Retiring, 22),
        ])
        .await
        .unwrap();
    let report = env.json(&["status", "--json"], now).await;
    assert_eq!(
        report["sentence"],
        "not all well: 1 consumer failing, 1 required consumer retiring, 1 required consumer \
         retired, 1 required consumer deleted"
    );
    assert_eq!(report["retiring"][0]["consumer"], "wiki", "{report}");
    assert_eq!(report["retiring"][0]["action"], "retiring", "{report}");
    assert!(report["retiring"][0]["retire_at"].is_string(), "{report}");
    // Listed again before it was retired: the countdown is over.
    store
        .apply(&[retirement("wiki", RetirementAction::Cancelled, 23)])
        .await
        .unwrap();
    let report = env.json(&["status", "--json"], now).await;
    assert_eq!(report["retiring"], serde_json::json!([]), "{report}");
    assert_eq!(
        report["sentence"],
        "not all well: 1 consumer failing, 1 required consumer retired, 1 required consumer \
         deleted"
    );
    let retired: Vec<String> = report["retired"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            format!(
                "{}@{} {}",
                r["consumer"], r["consumer_machine"], r["action"]
            )
        })
        .collect();
    assert_eq!(
        retired,
        [
            r#""docs"@"app-2" "deleted""#,
            r#""forge"@"app-1" "retired""#
        ]
    );
    let (code, out, _) = env.run(&["status", "--check"], now).await;
    assert_eq!(code, 1, "{out}");
    let lines: Vec<&str> = out.lines().collect();
    assert!(
        lines.contains(
            &"  forge@app-1 retired by postgres@db-1 although the declaration requires it (its \
              contributions file no longer lists it?)"
        ),
        "{out}"
    );
    let node = env.json(&["node", "show", "app-1", "--json"], now).await;
    assert_eq!(node["retired"].as_array().unwrap().len(), 1, "{node}");

    // Many failing for one cause: one line, in the human listing only.
    store
        .apply(&[
            refused("forge", "app-1", "connection refused", 30),
            refused("wiki", "app-1", "connection refused", 31),
            refused("docs", "app-2", "timed out", 32),
            retirement("forge", RetirementAction::ReEnabled, 33),
            retirement("docs", RetirementAction::ReEnabled, 34),
        ])
        .await
        .unwrap();
    let (_, out, _) = env.run(&["status"], now).await;
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], "not all well: 4 consumers failing", "{out}");
    assert_eq!(
        lines[1],
        "  postgres@db-1 fails 3 consumers unreachable: \"connection refused\" — forge@app-1, \
         site@app-2, wiki@app-1"
    );
    assert!(
        lines[2].starts_with("  postgres@db-1 fails docs@app-2 (postgres-database): unreachable")
    );
    assert_eq!(lines.len(), 3, "{out}");
    let report = env.json(&["status", "--json"], now).await;
    assert_eq!(
        consumers(&report),
        [
            "postgres@db-1>docs",
            "postgres@db-1>forge",
            "postgres@db-1>site",
            "postgres@db-1>wiki"
        ],
        "one entry per consumer, in key order"
    );

    // The controller stops following: said first; a provider silent since
    // is not blamed, one silent for three alives before it is.
    store.apply(&[alive(40, 10, 2)]).await.unwrap();
    admin
        .batch_execute(
            "UPDATE controller_instance SET pulled_at = now() - interval '35 seconds',
                 following_since = now() - interval '1 hour'",
        )
        .await
        .unwrap();
    let report = env.json(&["status", "--json"], now).await;
    let pulled = report["controller"]["pulled_at"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(
        report["sentence"],
        format!(
            "not all well: the controller has followed no events since {pulled} (is \
             mesh-controller serve running and on the bus?), 4 consumers failing"
        )
    );
    assert_eq!(report["controller"]["following"], false);
    assert_eq!(
        report["unheard"],
        serde_json::json!([]),
        "not blamed: {report}"
    );
    store.apply(&[alive(200, 10, 3)]).await.unwrap();
    let report = env.json(&["status", "--json"], now).await;
    assert_eq!(
        report["unheard"].as_array().unwrap().len(),
        1,
        "silent for 3 alives before the controller stopped: {report}"
    );

    // 500 more failing for the same cause: still one human line, naming
    // the first ten and counting the rest; the JSON has every one.
    let many: Vec<Received> = (0..500)
        .map(|i| refused(&format!("c{i:03}"), "app-3", "connection refused", 1000 + i))
        .collect();
    store.apply(&many).await.unwrap();
    let (_, out, _) = env.run(&["status"], now).await;
    let fails: Vec<&str> = out.lines().filter(|l| l.contains(" fails ")).collect();
    let first_ten: Vec<String> = (0..10).map(|i| format!("c{i:03}@app-3")).collect();
    assert_eq!(
        fails[0],
        format!(
            "  postgres@db-1 fails 503 consumers unreachable: \"connection refused\" — {}, … (and \
             493 more)",
            first_ten.join(", ")
        ),
        "{out}"
    );
    assert_eq!(fails.len(), 2, "the group and docs' own line: {out}");
    let report = env.json(&["status", "--json"], now).await;
    assert_eq!(report["failing"].as_array().unwrap().len(), 504);
}

/// `failing` of wiki said at minute `said`, failing since minute `since`.
fn wiki_failing(since: u32, said: u32, seq: u64) -> Received {
    let mut received = failing("postgres@db-1", "wiki", said, 3, seq);
    if let Event::Failing(body) = &mut received.event {
        body.since = at(since);
    }
    received
}

async fn history_kinds(admin: &tokio_postgres::Client) -> Vec<(String, i64)> {
    admin
        .query(
            "SELECT kind, count(*) FROM history GROUP BY kind ORDER BY kind",
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect()
}

#[tokio::test]
async fn history_is_kept_with_each_round_read_back_and_pruned_in_batches() {
    let pg = PgCluster::start();
    let (options, admin) = store_at(&pg, "history").await;
    migrate(&options).await.unwrap();
    let mut store = PgStore::new(options);
    let dir = tempfile::tempdir().unwrap();
    let declaration = dir.path().join("declaration.json");
    std::fs::write(&declaration, DECLARATION).unwrap();
    let env = Env {
        args: declared(&pg, "history", &declaration),
    };
    let wiki_line = |out: &str| {
        out.lines()
            .find(|l| l.contains("fails wiki@"))
            .unwrap_or_else(|| panic!("no line for wiki: {out}"))
            .to_owned()
    };

    // Failing said three times, the third after a restart that reset its
    // since: one transition, and the interval keeps its first since.
    store
        .apply(&[wiki_failing(4, 5, 1), wiki_failing(4, 6, 2)])
        .await
        .unwrap();
    store.apply(&[wiki_failing(20, 21, 3)]).await.unwrap();
    let (_, out, _) = env.run(&["status"], "2026-10-05T00:25:00Z").await;
    assert!(
        wiki_line(&out).contains(
            "credentials-rejected since 2026-10-05T00:04:00Z, said again since the restart at \
             2026-10-05T00:20:00Z, 3 attempts"
        ),
        "{out}"
    );
    assert!(
        !out.contains("time in"),
        "a first failure is no recurrence: {out}"
    );
    // Recovered (delivered twice), failing again: the 2nd time.
    let recovery = recovered("postgres@db-1", "wiki", 30, 4);
    store.apply(std::slice::from_ref(&recovery)).await.unwrap();
    store.apply(&[recovery]).await.unwrap();
    store.apply(&[wiki_failing(40, 45, 5)]).await.unwrap();
    let (_, out, _) = env.run(&["status"], "2026-10-05T00:50:00Z").await;
    assert!(
        wiki_line(&out).contains(
            "said 2026-10-05T00:45:00Z (2nd time in 7 days; last 2026-10-05, \
             credentials-rejected, 26 min)"
        ),
        "{out}"
    );
    let json = env
        .json(&["status", "--json"], "2026-10-05T00:50:00Z")
        .await;
    let wiki = &json["failing"][0];
    assert_eq!(wiki["recurrence"]["count"], 2, "{json}");
    assert_eq!(wiki["recurrence"]["last_seconds"], 26 * 60, "{json}");
    assert!(wiki.get("first_since").is_none(), "a new interval: {json}");
    // A window too short for the first interval: no recurrence.
    let (_, out, _) = env
        .run(
            &["status", "--recurrence-window", "10m"],
            "2026-10-05T00:50:00Z",
        )
        .await;
    assert!(!wiki_line(&out).contains("time in"), "{out}");

    // Repairs done and braked (a failed attempt is none), a retirement,
    // a provider heard again after 9 minutes of silence while a `serve`
    // followed throughout (since 00:00).
    admin
        .execute(
            "INSERT INTO controller_instance (instance, host, pid, started_at, pull_wait_ms,
                 pulled_at, applied_at, following_since, seen_at)
             VALUES ('ctl-0 pid 1', 'ctl-0', 1, now(), 1000, now(), now(),
                     '2026-10-05T00:00:00Z', now())",
            &[],
        )
        .await
        .unwrap();
    store
        .apply(&[
            repair(
                "identity@id-1",
                "admin-refused",
                RepairOutcome::Repaired,
                46,
                6,
            ),
            repair(
                "identity@id-1",
                "admin-refused",
                RepairOutcome::Failed,
                47,
                7,
            ),
            repair(
                "identity@id-1",
                "admin-refused",
                RepairOutcome::Braked,
                48,
                8,
            ),
            retirement("forge", RetirementAction::Retired, 9),
            alive("postgres@db-1", 1, 0, None, 10),
        ])
        .await
        .unwrap();
    store
        .apply(&[alive("postgres@db-1", 10, 0, None, 11)])
        .await
        .unwrap();
    // A grant unreachable (said twice), then reachable again.
    let grant = |seq: u64, reachable: bool| {
        let (provision, from) = ("postgres-database".to_owned(), "postgres@db-1".to_owned());
        let event = match reachable {
            false => Event::Unreachable(mesh_protocol::event::GrantUnreachable {
                v: 1,
                provision,
                from,
                address: "10.10.0.1".into(),
                port: 6852,
                failures: 4,
                failing_since: at(11),
                last_reachable_at: None,
                error: "connect timed out after 3s".into(),
                said_at: at(12),
            }),
            true => Event::Reachable(mesh_protocol::event::GrantReachable {
                v: 1,
                provision,
                from,
                address: "10.10.0.1".into(),
                port: 6852,
                reason: mesh_protocol::event::ReachableReason::Success,
                said_at: at(14),
            }),
        };
        received("wiki@app-1", seq, event)
    };
    store
        .apply(&[grant(12, false), grant(13, false)])
        .await
        .unwrap();
    store.apply(&[grant(14, true)]).await.unwrap();
    // An open repair says how often it was done in the window.
    let (_, out, _) = env.run(&["status"], "2026-10-05T00:50:00Z").await;
    assert!(
        out.contains("identity@id-1 repair fault admin-refused: braked")
            && out.contains("(repaired 1 time in 7 days, last 2026-10-05T00:46:00Z)"),
        "{out}"
    );
    // The controller: a catch-up after an hour of none follows again.
    let instance = mesh_status::model::Instance {
        host: "ctl-1".into(),
        pid: 7,
        started_at: at(0),
        pull_wait: Duration::from_secs(1),
    };
    store
        .record(instance_record(&instance, true, true, true))
        .await
        .unwrap();
    admin
        .execute(
            "UPDATE controller_instance SET pulled_at = now() - interval '1 hour'",
            &[],
        )
        .await
        .unwrap();
    store
        .record(instance_record(&instance, true, false, false))
        .await
        .unwrap();
    store
        .record(instance_record(&instance, true, false, false))
        .await
        .unwrap();
    let kinds = |list: &[(&str, i64)]| -> Vec<(String, i64)> {
        list.iter().map(|(k, n)| ((*k).to_owned(), *n)).collect()
    };
    assert_eq!(
        history_kinds(&admin).await,
        kinds(&[
            ("failing-began", 2),
            ("following-again", 1),
            ("grant-reachable", 1),
            ("grant-unreachable", 1),
            ("heard-again", 1),
            ("recovered", 1),
            ("repair-braked", 1),
            ("repair-done", 1),
            ("retired", 1),
        ])
    );

    // `history CONSUMER`: its intervals, newest first, and its totals.
    let (code, out, err) = env
        .run(
            &["history", "wiki", "--since", "3650d"],
            "2026-10-05T00:50:00Z",
        )
        .await;
    assert_eq!(code, EXIT_OK, "{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert!(
        lines[0].starts_with("history since ") && lines[0].ends_with(": 3 changes"),
        "{out}"
    );
    assert!(
        lines[1].starts_with(
            "  wiki@app-1 from postgres@db-1: failing credentials-rejected 2026-10-05 00:40 → now"
        ) && lines[1].ends_with(", still failing"),
        "{out}"
    );
    // Its grant's interval is the consumer's history too.
    assert!(
        lines[2].starts_with("  wiki@app-1 grant from postgres@db-1"),
        "{out}"
    );
    assert_eq!(
        lines[3],
        "  wiki@app-1 from postgres@db-1: failing credentials-rejected 2026-10-05 00:04 → 00:30 \
         (26 min), recovered (success)"
    );
    assert!(
        lines[4].starts_with("  wiki@app-1 from postgres@db-1: failed 2 times in 3650 days"),
        "{out}"
    );
    let json = env
        .json(
            &["history", "wiki@app-1", "--since", "3650d", "--json"],
            "2026-10-05T00:50:00Z",
        )
        .await;
    assert_eq!(json["entries"].as_array().map(Vec::len), Some(3), "{json}");
    assert_eq!(json["consumers"][0]["intervals"], 2, "{json}");
    // An interval that began before the window is listed from its
    // beginning, for the consumer asked and no other.
    let (code, out, err) = env
        .run(
            &["history", "wiki@app-1", "--since", "2m"],
            "2026-10-05T00:50:00Z",
        )
        .await;
    assert_eq!(code, EXIT_OK, "{err}");
    assert!(
        out.contains(
            "wiki@app-1 from postgres@db-1: failing credentials-rejected 2026-10-05 00:40"
        ),
        "{out}"
    );
    assert!(
        out.lines().skip(1).all(|l| l.contains("wiki@app-1")),
        "{out}"
    );
    let (_, out, _) = env
        .run(
            &["history", "--provider", "identity@id-1", "--since", "3650d"],
            "2026-10-05T00:50:00Z",
        )
        .await;
    assert!(
        out.contains("identity@id-1: repair admin-refused braked 2026-10-05 00:48"),
        "{out}"
    );
    assert!(!out.contains("wiki"), "{out}");
    let (_, out, _) = env
        .run(&["history", "--since", "3650d"], "2026-10-05T00:50:00Z")
        .await;
    assert!(
        out.contains("postgres@db-1: not heard from 2026-10-05 00:04 → 00:10 (6 min), heard again"),
        "{out}"
    );
    assert!(
        out.contains("mesh-controller: followed no events "),
        "{out}"
    );
    assert!(out.contains("forge from postgres@db-1: retired "), "{out}");
    assert!(
        out.contains(
            "wiki@app-1 grant from postgres@db-1 (10.10.0.1:6852): unreachable 2026-10-05 00:11 \
             → 00:14 (3 min), reachable again (success)"
        ),
        "{out}"
    );

    // Retention: rows recorded before it go, a batch at a time, the rest stay.
    admin
        .execute(
            "UPDATE history SET recorded_at = now() - interval '100 days' \
             WHERE kind IN ('repair-done', 'repair-braked', 'retired')",
            &[],
        )
        .await
        .unwrap();
    let keep = Duration::from_secs(90 * 24 * 3600);
    let mut removed = Vec::new();
    for _ in 0..3 {
        removed.push(Store::prune_history(&mut store, keep, 2).await.unwrap());
    }
    assert_eq!(removed, [2, 1, 0]);
    let left: i64 = admin
        .query_one("SELECT count(*) FROM history", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(left, 7);
}

/// Undoes V19 to V13 on a migrated store (its table and constraints
/// named as V12 left them); the caller deletes them from the migration
/// history.
const UNDO_V19_V13: &str = "DROP TABLE grants_read; \
     ALTER TABLE history DROP COLUMN done, DROP COLUMN until; \
     ALTER TABLE history DROP COLUMN by_name; \
     ALTER TABLE alive DROP COLUMN contributions; DROP INDEX failing_by_provider_key, failing_by_provider_machine, \
     failing_by_consumer_machine; DROP STATISTICS failing_group; \
     ALTER TABLE grant_event RENAME CONSTRAINT grant_event_pkey TO grant_word_pkey; \
     ALTER TABLE grant_event RENAME CONSTRAINT grant_event_kind_check TO grant_word_kind_check; \
     ALTER TABLE grant_event RENAME TO grant_word;";

#[tokio::test]
async fn a_migration_that_loses_a_deadlock_to_a_reader_may_be_tried_again() {
    let pg = PgCluster::start();
    let (options, admin) = store_at(&pg, "deadlock").await;
    assert_eq!(migrate(&options).await.unwrap(), migrations());
    // The newest migrations not applied yet: V12 adds
    // `retirement.retire_at`, V13 renames `grant_word` to `grant_event`, V14
    // adds statistics, V15 an index, V16 and V17 a column each, V18 two, V19 a table.
    admin
        .batch_execute(&format!(
            "{UNDO_V19_V13} ALTER TABLE retirement DROP COLUMN retire_at; \
             DELETE FROM refinery_schema_history WHERE version >= 12"
        ))
        .await
        .unwrap();
    // A reader holding `retirement` that then waits on the migrations' lock:
    // the migration waits on the reader, the reader on the migration.
    let conninfo = pg
        .admin_conninfo()
        .replace("dbname=postgres", "dbname=deadlock");
    let (reader, connection) = tokio_postgres::connect(&conninfo, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    reader
        .batch_execute("BEGIN; SELECT count(*) FROM retirement")
        .await
        .unwrap();
    let migration = tokio::spawn({
        let options = options.clone();
        async move { migrate(&options).await }
    });
    let waited = async {
        // Once the migration waits on the reader's lock of `retirement` ...
        loop {
            assert!(
                !migration.is_finished(),
                "the migration ended before it waited on the reader"
            );
            let waiting = admin
                .query_one(
                    "SELECT count(*) FROM pg_stat_activity \
                     WHERE wait_event_type = 'Lock' AND query LIKE '%retire_at%'",
                    &[],
                )
                .await
                .unwrap();
            if waiting.get::<_, i64>(0) > 0 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        // ... the reader waits on the migration's session lock ("mesh").
        reader
            .query_one("SELECT pg_advisory_xact_lock(1835365224)", &[])
            .await
    }
    .await;
    let error = migration
        .await
        .unwrap()
        .expect_err("the migration lost the deadlock (it waited first)");
    assert!(waited.is_ok(), "the reader went on: {waited:?}");
    assert!(error.is_migration_retryable(), "{error}");
    let text = error.to_string();
    assert!(
        text.contains("V12__retiring") && text.contains("deadlock detected (40P01)"),
        "the server's own message is said, not only `db error`: {text}"
    );
    reader.batch_execute("ROLLBACK").await.unwrap();
    assert_eq!(
        migrate(&options).await.unwrap(),
        migrations() - 11,
        "tried again, it passes (and V13 to the newest after it)"
    );

    // A migration the server refuses for what it is: not tried again.
    let (options, admin) = store_at(&pg, "refused").await;
    admin
        .batch_execute("CREATE TABLE failing (x int)")
        .await
        .unwrap();
    let error = migrate(&options)
        .await
        .expect_err("the table is in the way");
    assert!(!error.is_migration_retryable(), "{error}");
    assert!(
        error.to_string().contains("V1__store")
            && error.to_string().contains("already exists (42P07)"),
        "{error}"
    );
}

#[tokio::test]
async fn v13_renames_grant_word_to_grant_event_keeping_its_rows_constraints_and_readers() {
    let pg = PgCluster::start();
    let (options, admin) = store_at(&pg, "grant_rename").await;
    assert_eq!(migrate(&options).await.unwrap(), migrations());
    // The store as V12 left it, holding a grant event and a reader of it.
    admin
        .batch_execute(&format!(
            "{UNDO_V19_V13} \
             DELETE FROM refinery_schema_history WHERE version >= 13; \
             INSERT INTO grant_word (machine, consumer, provision, provider, kind, reason, \
                 said_at, stream_seq, stream_epoch) VALUES ('app-1', 'forge', 'p', \
                 'postgres@db-1', 'unchecked', 'no port', '2026-10-05T00:09:00Z', 3, 1); \
             CREATE ROLE grant_rename_reader NOLOGIN; \
             GRANT SELECT ON grant_word TO grant_rename_reader"
        ))
        .await
        .unwrap();

    assert_eq!(
        migrate(&options).await.unwrap(),
        migrations() - 12,
        "V13 to the newest alone"
    );

    let rows = admin
        .query("SELECT consumer, kind FROM grant_event", &[])
        .await
        .unwrap();
    let rows: Vec<(String, String)> = rows.iter().map(|r| (r.get(0), r.get(1))).collect();
    assert_eq!(rows, [("forge".to_owned(), "unchecked".to_owned())]);
    let names = |sql: &'static str| {
        let admin = &admin;
        async move {
            let rows = admin.query(sql, &[]).await.unwrap();
            let mut names: Vec<String> = rows.iter().map(|r| r.get(0)).collect();
            names.sort();
            names
        }
    };
    assert_eq!(
        names("SELECT conname::text FROM pg_constraint WHERE conrelid = 'grant_event'::regclass")
            .await,
        ["grant_event_kind_check", "grant_event_pkey"]
    );
    assert_eq!(
        names("SELECT indexname::text FROM pg_indexes WHERE tablename = 'grant_event'").await,
        ["grant_event_pkey"]
    );
    let old = names(
        "SELECT relname::text FROM pg_class WHERE relname LIKE 'grant_word%' \
         UNION ALL SELECT conname::text FROM pg_constraint WHERE conname LIKE 'grant_word%'",
    )
    .await;
    assert!(
        old.is_empty(),
        "nothing in the schema says grant_word: {old:?}"
    );
    let may_read: bool = admin
        .query_one(
            "SELECT has_table_privilege('grant_rename_reader', 'grant_event', 'SELECT')",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert!(may_read, "a reader of grant_word reads grant_event");
}

#[tokio::test]
async fn a_store_that_asks_for_a_password_none_was_given_for_says_which_flag_and_variable_give_it()
{
    let pg = PgCluster::start();
    let dir = tempfile::tempdir().unwrap();
    let declaration = dir.path().join("declaration.json");
    std::fs::write(&declaration, DECLARATION).unwrap();
    let env = Env {
        args: vec![
            "--database".into(),
            pg.database("postgres"),
            "--declaration".into(),
            declaration.display().to_string(),
        ],
    };
    let (code, _, err) = env.run(&["status"], "2026-10-05T00:25:00Z").await;
    assert_eq!(code, EXIT_CANNOT, "{err}");
    assert!(
        err.contains("--database-password-file")
            && err.contains("MESH_DATABASE_PASSWORD_FILE")
            && err.contains("user postgres"),
        "names the user, the flag and the variable: {err}"
    );
}

/// A session holding the migration lock (any role can take an advisory
/// lock, the reader's too) is named while a migrating controller waits for
/// it, and stalls no start that has nothing to apply.
#[tokio::test]
async fn a_held_migration_lock_is_named_and_stalls_no_store_up_to_date() {
    let (capture, _guard) = LogCapture::start();
    let pg = PgCluster::start();
    let (options, holder) = store_at(&pg, "locked").await;
    const LOCK: i64 = 0x6d65_7368;
    holder
        .batch_execute("SET application_name = 'a-stuck-script'")
        .await
        .unwrap();
    holder
        .execute("SELECT pg_advisory_lock($1)", &[&LOCK])
        .await
        .unwrap();
    let waiting = options.clone();
    let migrating = tokio::spawn(async move { migrate(&waiting).await });
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(!migrating.is_finished(), "it waits for the lock");
    let said = capture.text();
    assert!(
        said.contains("waiting for the store's migration lock")
            && said.contains("application a-stuck-script"),
        "{said}"
    );
    holder
        .execute("SELECT pg_advisory_unlock($1)", &[&LOCK])
        .await
        .unwrap();
    assert_eq!(migrating.await.unwrap().unwrap(), migrations());
    assert!(capture.text().contains("took the store's migration lock"));

    // Up to date: the lock held again stalls nothing.
    holder
        .execute("SELECT pg_advisory_lock($1)", &[&LOCK])
        .await
        .unwrap();
    let done = tokio::time::timeout(Duration::from_secs(10), migrate(&options)).await;
    assert_eq!(done.expect("not stalled").unwrap(), 0);
}
