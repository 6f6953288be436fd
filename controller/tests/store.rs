//! The store's rules on a real PostgreSQL, and `status` / `node show` (in
//! process and through the binary) on a live store.

use std::process::Command;
use std::time::Duration;

use mesh_controller::cli::{run, Cli, Io, EXIT_CANNOT, EXIT_OK};
use mesh_controller::declaration::{parse, Parsed};
use mesh_controller::status::{compose, compose_paged, Clock, Scope, DEFAULT_SILENT_AFTER};
use mesh_controller::store::{migrate, DatabaseOptions, PgStore, Store, Word};
use mesh_controller::ModuleId;
use mesh_sdk::event::RecoveredReason;
use mesh_sdk::event::{Failing, Recovered, Repair, RepairOutcome, Retirement, RetirementAction};
use mesh_sdk::{Class, Event, Name, Timestamp};
use mesh_test_support::PgCluster;

fn name(s: &str) -> Name {
    Name::parse(s).unwrap()
}

fn ts(s: &str) -> Timestamp {
    Timestamp::parse(s).unwrap()
}

fn at(minute: u32) -> Timestamp {
    ts(&format!("2026-10-05T00:{minute:02}:00Z"))
}

fn failing(provider: &str, consumer: &str, said: u32, attempts: u64, seq: u64) -> Word {
    Word {
        seq,
        emitter: ModuleId::parse(provider).unwrap(),
        event: Event::Failing(Failing {
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
    }
}

fn recovered(provider: &str, consumer: &str, said: u32, seq: u64) -> Word {
    Word {
        seq,
        emitter: ModuleId::parse(provider).unwrap(),
        event: Event::Recovered(Recovered {
            v: 1,
            consumer: name(consumer),
            consumer_machine: None,
            provision: None,
            reason: RecoveredReason::Success,
            said_at: at(said),
        }),
    }
}

fn repair(provider: &str, fault: &str, outcome: RepairOutcome, said: u32, seq: u64) -> Word {
    Word {
        seq,
        emitter: ModuleId::parse(provider).unwrap(),
        event: Event::Repair(Repair {
            v: 1,
            fault: name(fault),
            outcome,
            detail: format!("{fault} {outcome:?}"),
            next_attempt_at: (outcome == RepairOutcome::Braked).then(|| at(59)),
            said_at: at(said),
        }),
    }
}

async fn store_at(pg: &PgCluster, db: &str) -> (DatabaseOptions, tokio_postgres::Client) {
    let conninfo = pg.create_database(db).await;
    let options = DatabaseOptions::new(
        &format!(
            "host=127.0.0.1 port={} user=postgres dbname={db}",
            pg.port()
        ),
        Some(&pg.superuser_password_file()),
    )
    .unwrap();
    let (admin, connection) = tokio_postgres::connect(&conninfo, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    (options, admin)
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

#[tokio::test]
async fn store_rules_hold_on_postgres() {
    let pg = PgCluster::start();
    let (options, admin) = store_at(&pg, "rules").await;
    assert_eq!(migrate(&options).await.unwrap(), 2);
    assert_eq!(migrate(&options).await.unwrap(), 0, "migrations run once");
    let mut store = PgStore::new(options);

    // (case, rounds of words applied in order, expected rows of the case's provider)
    type Case = (&'static str, Vec<Vec<Word>>, Vec<(&'static str, i64)>);
    let p = |n: u32| format!("p{n}@db-1");
    let cases: Vec<Case> = vec![
        (
            "failing stored, the newest kept",
            vec![
                vec![failing(&p(1), "forge", 9, 61, 1)],
                vec![failing(&p(1), "forge", 8, 50, 2)],
                vec![failing(&p(1), "wiki", 9, 3, 3)],
            ],
            vec![("forge", 61), ("wiki", 3)],
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
            "a recovered older than the stored failing deletes nothing",
            vec![
                vec![failing(&p(4), "forge", 20, 5, 1)],
                vec![recovered(&p(4), "forge", 15, 2)],
            ],
            vec![("forge", 5)],
        ),
        (
            "a failing older than a stored recovered does not come back",
            vec![
                vec![recovered(&p(5), "forge", 11, 1)],
                vec![failing(&p(5), "forge", 10, 9, 2)],
            ],
            vec![],
        ),
        (
            "same second: the later in the stream wins (recovered last)",
            vec![
                vec![failing(&p(6), "forge", 9, 1, 1)],
                vec![recovered(&p(6), "forge", 9, 2)],
            ],
            vec![],
        ),
        (
            "same second: the later in the stream wins (failing last)",
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
        for words in rounds {
            store
                .apply(&words)
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

    // Repairs: the newest word per fault, cleared by `repaired`.
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
        .apply(&[repair(r, "admin-refused", RepairOutcome::Failed, 8, 23)])
        .await
        .unwrap();
    let snapshot = store.snapshot().await.unwrap();
    let open: Vec<(&str, &str, Option<Timestamp>)> = snapshot
        .open_repairs
        .iter()
        .map(|r| (r.fault.as_str(), r.outcome.as_str(), r.next_attempt_at))
        .collect();
    assert_eq!(open, [("disk-full", "braked", Some(at(59)))]);

    // Retirements are kept, newest per (provider, consumer, action).
    let retired = |said, seq, detail: &str| Word {
        seq,
        emitter: ModuleId::parse(r).unwrap(),
        event: Event::Retirement(Retirement {
            v: 1,
            consumer: name("old"),
            action: RetirementAction::Retired,
            detail: detail.into(),
            said_at: at(said),
        }),
    };
    store.apply(&[retired(10, 30, "newer")]).await.unwrap();
    store.apply(&[retired(9, 31, "older")]).await.unwrap();
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
        let code = run(&cli, &mut io).await;
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
    let database = format!(
        "host=127.0.0.1 port={} user=postgres dbname=status",
        pg.port()
    );
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

    // Migrated through the command; empty store: all well.
    let (code, out, err) = env.run(&["migrate"], now).await;
    assert_eq!(code, EXIT_OK, "{err}");
    assert!(out.contains("2 migrations applied"), "{out}");
    let (code, out, _) = env.run(&["status"], now).await;
    assert_eq!(code, EXIT_OK);
    assert_eq!(
        out.lines().next().unwrap(),
        "all well: none of the 2 providers assigned in the declaration says it keeps failing a \
         consumer, and no repair fault is open; this does not prove that a consumer can reach \
         its provider"
    );
    assert_eq!(out.lines().count(), 1);

    // Standings: two on db-1, one silent, one of a provider not assigned there,
    // one of a provider nobody declared, an open repair fault on id-1.
    let options = DatabaseOptions::new(&database, Some(&password_file)).unwrap();
    let mut store = PgStore::new(options);
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
        "not all well: 2 consumers failing (1 not said again for more than 30m), 1 repair fault open"
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
    assert_eq!(keys, ["all_well", "failing", "repairs", "sentence"]);

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
        lines[2].contains("fails wiki@app-2") && lines[2].contains("silent for 1h 10m"),
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
        ("db-9", &[], 0),
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
    let (_, out, _) = env.run(&["node", "show", "db-9"], now).await;
    assert!(out.starts_with("all well: no provider says it keeps failing a consumer whose provider or consumer is on db-9"), "{out}");

    // A recovery clears its standing.
    store
        .apply(&[recovered("postgres@db-1", "forge", 10, 6)])
        .await
        .unwrap();
    let report = env.json(&["status", "--json"], now).await;
    assert_eq!(consumers(&report), ["postgres@db-1>wiki"]);

    // A store without status pages (migrated by an older controller): the
    // rows are read, the report is the same.
    admin
        .batch_execute("DROP TABLE status_page CASCADE")
        .await
        .unwrap();
    assert_eq!(env.json(&["status", "--json"], now).await, report);

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

/// A migrated store `db`, the declaration, and the report's clock (at
/// 00:40, silence after 30 minutes).
async fn pages_store(
    pg: &PgCluster,
    db: &str,
) -> (DatabaseOptions, tokio_postgres::Client, Parsed, Clock) {
    let (options, admin) = store_at(pg, db).await;
    migrate(&options).await.unwrap();
    let clock = Clock {
        now: ts("2026-10-05T00:40:00Z"),
        silent_after: DEFAULT_SILENT_AFTER,
    };
    (options, admin, parse(DECLARATION).unwrap(), clock)
}

/// `status --json` from the pages and from the rows, which must be the same
/// bytes; returns the report.
async fn paged_is_rows(
    store: &mut PgStore,
    declaration: &Parsed,
    clock: &Clock,
) -> serde_json::Value {
    let rows = compose(
        declaration,
        store.snapshot().await.unwrap(),
        clock,
        &Scope::All,
    );
    let mut expected = Vec::new();
    rows.write_json(&mut expected).unwrap();
    let snapshot = store.paged_snapshot().await.unwrap().expect("status pages");
    let paged = compose_paged(declaration, snapshot, clock);
    let mut got = Vec::new();
    paged.write_json(&mut got).unwrap();
    assert_eq!(
        String::from_utf8_lossy(&got),
        String::from_utf8_lossy(&expected)
    );
    serde_json::from_slice(&expected).unwrap()
}

/// Pages written until none is stale; returns how many were written.
async fn build_all(store: &mut PgStore) -> usize {
    let mut written = 0;
    loop {
        let built = store.build_pages(16).await.unwrap();
        written += built.written;
        if built.taken < 16 {
            return written;
        }
    }
}

/// `(stale pages, clean pages, standings in clean pages)`.
async fn page_counts(admin: &tokio_postgres::Client) -> (i64, i64, i64) {
    let row = admin
        .query_one(
            "SELECT count(*) FILTER (WHERE stale), count(*) FILTER (WHERE NOT stale), \
             coalesce(sum(standings) FILTER (WHERE NOT stale), 0) FROM status_page",
            &[],
        )
        .await
        .unwrap();
    (row.get(0), row.get(1), row.get(2))
}

fn attempts_of(report: &serde_json::Value, consumer: &str) -> Option<i64> {
    report["failing"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["consumer"] == consumer)
        .map(|s| s["attempts"].as_i64().unwrap())
}

#[tokio::test]
async fn status_pages_list_exactly_what_the_rows_list() {
    let pg = PgCluster::start();
    let (options, admin, declaration, clock) = pages_store(&pg, "pages").await;
    let mut store = PgStore::new(options);
    // 300 standings of the assigned postgres@db-1 (every third silent, one
    // with awkward words), 40 of postgres@db-9, which is not assigned there.
    let mut words = Vec::new();
    for i in 0..300u64 {
        let said = if i % 3 == 0 { 1 } else { 30 };
        words.push(failing("postgres@db-1", &format!("c{i}"), said, i, i + 1));
    }
    for i in 0..40u64 {
        words.push(failing("postgres@db-9", &format!("d{i}"), 30, i, 400 + i));
    }
    if let Event::Failing(f) = &mut words[7].event {
        f.error = "quote \" backslash \\ newline \n tab \t unicode é ✓ \u{7f}".into();
        f.consumer_machine = None;
        f.provision = None;
    }
    for round in words.chunks(64) {
        store.apply(round).await.unwrap();
    }

    // Nothing written yet: every word is read from the rows.
    let (stale, clean, _) = page_counts(&admin).await;
    assert_eq!(clean, 0);
    assert!(stale > 64, "{stale} stale pages for two providers");
    let report = paged_is_rows(&mut store, &declaration, &clock).await;
    assert_eq!(report["failing"].as_array().unwrap().len(), 300);
    assert_eq!(
        report["sentence"],
        "not all well: 300 consumers failing (100 not said again for more than 30m)"
    );

    // Written: every word is read from the pages.
    assert_eq!(build_all(&mut store).await, usize::try_from(stale).unwrap());
    assert_eq!(page_counts(&admin).await, (0, stale, 340));
    paged_is_rows(&mut store, &declaration, &clock).await;

    // Changes: a newer word, a recovery, a new consumer, an older word
    // (ignored). Only their pages turn stale.
    store
        .apply(&[
            failing("postgres@db-1", "c5", 35, 99, 1000),
            recovered("postgres@db-1", "c8", 35, 1001),
            failing("postgres@db-1", "new-one", 35, 1, 1002),
            failing("postgres@db-1", "c10", 20, 0, 1003),
        ])
        .await
        .unwrap();
    let (now_stale, _, _) = page_counts(&admin).await;
    assert!(
        (1..=3).contains(&now_stale),
        "{now_stale} pages turned stale"
    );
    let report = paged_is_rows(&mut store, &declaration, &clock).await;
    assert_eq!(attempts_of(&report, "c5"), Some(99));
    assert_eq!(attempts_of(&report, "c8"), None);
    assert_eq!(attempts_of(&report, "new-one"), Some(1));
    assert_eq!(attempts_of(&report, "c10"), Some(10));
    build_all(&mut store).await;
    assert_eq!(page_counts(&admin).await.0, 0);
    let again = paged_is_rows(&mut store, &declaration, &clock).await;
    assert_eq!(again, report);

    // Every word of db-9 recovered: its pages are dropped once written.
    let gone: Vec<Word> = (0..40u64)
        .map(|i| recovered("postgres@db-9", &format!("d{i}"), 36, 2000 + i))
        .collect();
    store.apply(&gone).await.unwrap();
    build_all(&mut store).await;
    let left: i64 = admin
        .query_one(
            "SELECT count(*) FROM status_page WHERE provider_machine = 'db-9'",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(left, 0);

    // A page that does not read whole: its words come from the rows.
    admin
        .execute(
            "UPDATE status_page SET body = '\\x0a000000ffff' WHERE page = \
             (SELECT min(page) FROM status_page WHERE NOT stale)",
            &[],
        )
        .await
        .unwrap();
    let broken = paged_is_rows(&mut store, &declaration, &clock).await;
    assert_eq!(broken, report);

    // A word written by hand (not through the link) marks its page too.
    admin
        .execute(
            "INSERT INTO failing (provider_module, provider_machine, consumer, class, error, \
             since, attempts, said_at, stream_seq) \
             VALUES ('postgres', 'db-1', 'by-hand', 'unreachable', 'e', now(), 1, now(), 9999)",
            &[],
        )
        .await
        .unwrap();
    let report = paged_is_rows(&mut store, &declaration, &clock).await;
    assert_eq!(attempts_of(&report, "by-hand"), Some(1));
}

/// A word committed while a page is being written keeps the page stale:
/// the writer's update waits for the word's transaction, then finds the
/// page's version moved on.
#[tokio::test]
async fn a_page_is_never_written_over_a_word_it_did_not_see() {
    let pg = PgCluster::start();
    let (options, admin, declaration, clock) = pages_store(&pg, "race").await;
    let mut store = PgStore::new(options.clone());
    store
        .apply(&[failing("postgres@db-1", "forge", 30, 1, 1)])
        .await
        .unwrap();

    // A second session changes the word and holds its transaction open.
    admin.batch_execute("BEGIN").await.unwrap();
    admin
        .execute(
            "UPDATE failing SET attempts = 2 WHERE consumer = 'forge'",
            &[],
        )
        .await
        .unwrap();
    let mut builder = PgStore::new(options);
    let building = tokio::spawn(async move { builder.build_pages(16).await.unwrap() });
    // Until the page writer waits for that transaction's lock.
    let (watch, connection) =
        tokio_postgres::connect(&pg.create_database("watch").await, tokio_postgres::NoTls)
            .await
            .unwrap();
    tokio::spawn(connection);
    let waiting = "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' \
                   AND application_name = 'mesh-controller' AND datname = 'race'";
    let started = std::time::Instant::now();
    while watch
        .query_one(waiting, &[])
        .await
        .unwrap()
        .get::<_, i64>(0)
        == 0
    {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "the writer never waited"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    admin.batch_execute("COMMIT").await.unwrap();
    let built = building.await.unwrap();
    assert_eq!((built.taken, built.written), (1, 0));
    assert_eq!(page_counts(&admin).await, (1, 0, 0));
    let report = paged_is_rows(&mut store, &declaration, &clock).await;
    assert_eq!(attempts_of(&report, "forge"), Some(2));
    // The next turn writes it.
    assert_eq!(build_all(&mut store).await, 1);
    let report = paged_is_rows(&mut store, &declaration, &clock).await;
    assert_eq!(attempts_of(&report, "forge"), Some(2));
}
