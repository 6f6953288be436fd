//! The privileges docs/operating.md gives, end to end over the built
//! binaries: `mesh-controller` with a store user that is no superuser and
//! holds no attribute, only the ownership of the store's database, and
//! `mesh-postgres` with an administrator holding `CREATEROLE CREATEDB` and
//! nothing more. The controller migrates, follows the provider's events and
//! reports them; the provider makes and checks its consumers. `serve` and
//! the provider take their passwords as a systemd unit hands them over
//! (`$CREDENTIALS_DIRECTORY/database-password`, `.../admin-password`), the
//! one-shot commands from `--database-password-file`. `status` works as
//! the read-only role `migrate --reader` sets up, which cannot write.

use std::process::Command;
use std::time::{Duration, Instant};

use mesh_test_support::mesh::{binary, Process};
use mesh_test_support::{NatsServer, PgCluster};
use serde_json::{json, Value};

const STORE_PASSWORD: &str = "store-user-pw-5c1a";
const ADMIN_PASSWORD: &str = "provider-admin-pw-93be";
const READER_PASSWORD: &str = "store-reader-pw-7d20";

/// Runs `future` to its end on a runtime of its own.
fn block_on<T>(future: impl std::future::Future<Output = T>) -> T {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(future)
}

/// Runs `statements` one by one as the cluster's superuser.
fn as_superuser(pg: &PgCluster, statements: &[&str]) {
    block_on(async {
        let client = pg.connect_admin().await;
        for statement in statements {
            client
                .batch_execute(statement)
                .await
                .unwrap_or_else(|e| panic!("{statement}: {e}"));
        }
    });
}

/// Runs each of `statements` in the store's database as `user`, over one
/// session (a SCRAM login takes a while in a debug build): the server's
/// SQLSTATE for each it refuses.
fn in_store_as(
    pg: &PgCluster,
    user: &str,
    password: &str,
    statements: &[&str],
) -> Vec<Result<(), String>> {
    block_on(async {
        let conninfo = format!(
            "host=127.0.0.1 port={} user={user} password={password} dbname=mesh_store",
            pg.port()
        );
        let (client, connection) = tokio_postgres::connect(&conninfo, tokio_postgres::NoTls)
            .await
            .unwrap_or_else(|e| panic!("{user} logs in: {e}"));
        tokio::spawn(connection);
        let mut said = Vec::new();
        for statement in statements {
            said.push(
                client
                    .batch_execute(statement)
                    .await
                    .map_err(|e| e.code().map(|c| c.code().to_owned()).unwrap_or_default()),
            );
        }
        said
    })
}

/// The owner of each of the store's tables, as `table:owner`, sorted.
fn table_owners(pg: &PgCluster) -> Vec<String> {
    block_on(async {
        let (client, connection) = tokio_postgres::connect(
            &format!(
                "host=127.0.0.1 port={} user=postgres password={} dbname=mesh_store",
                pg.port(),
                pg.superuser_password()
            ),
            tokio_postgres::NoTls,
        )
        .await
        .unwrap();
        tokio::spawn(connection);
        client
            .query(
                "SELECT tablename || ':' || tableowner FROM pg_tables \
                 WHERE schemaname = 'public' ORDER BY 1",
                &[],
            )
            .await
            .unwrap()
            .iter()
            .map(|row| row.get(0))
            .collect()
    })
}

#[test]
fn a_store_user_owning_its_database_and_a_createrole_createdb_admin_are_enough() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let nats = NatsServer::start();
    let store = PgCluster::start();
    let backend = PgCluster::start();
    as_superuser(
        &store,
        &[
            &format!("CREATE ROLE mesh_store LOGIN PASSWORD '{STORE_PASSWORD}'"),
            "CREATE DATABASE mesh_store OWNER mesh_store",
            "REVOKE ALL ON DATABASE mesh_store FROM PUBLIC",
        ],
    );
    as_superuser(
        &backend,
        &[&format!(
            "CREATE ROLE mesh_admin LOGIN CREATEROLE CREATEDB PASSWORD '{ADMIN_PASSWORD}'"
        )],
    );
    std::fs::write(d.join("store.pw"), STORE_PASSWORD).unwrap();
    std::fs::write(d.join("reader.pw"), READER_PASSWORD).unwrap();
    // What systemd's LoadCredential= makes of each unit's secrets.
    for (unit, name, secret) in [
        ("controller", "database-password", STORE_PASSWORD),
        (
            "mesh-postgres@db-1.service",
            "admin-password",
            ADMIN_PASSWORD,
        ),
    ] {
        std::fs::create_dir_all(d.join("credentials").join(unit)).unwrap();
        std::fs::write(d.join("credentials").join(unit).join(name), secret).unwrap();
    }
    std::fs::create_dir(d.join("secrets")).unwrap();
    std::fs::write(d.join("secrets/forge"), "minted-forge-lp-e2e").unwrap();
    let declaration = json!({"modules": [
        {"module": "postgres", "machine": "db-1", "provides": ["postgres-database"]},
        {"module": "forge", "machine": "app-1",
         "requires": [{"provision": "postgres-database", "from": "postgres@db-1"}]},
        {"module": "wiki", "machine": "app-1",
         "requires": [{"provision": "postgres-database", "from": "postgres@db-1"}]},
    ]});
    std::fs::write(d.join("declaration.json"), declaration.to_string()).unwrap();
    // wiki's secret was never minted: it fails, and status must say so.
    let contributions = json!({
        "provider": {"module": "postgres", "machine": "db-1"},
        "consumers": [
            {"consumer": "forge", "machine": "app-1", "provision": "postgres-database", "secret_file": "secrets/forge"},
            {"consumer": "wiki", "machine": "app-1", "provision": "postgres-database", "secret_file": "secrets/wiki"},
        ]
    });
    std::fs::write(d.join("contributions.json"), contributions.to_string()).unwrap();

    // The controller logging in as `user`, its password not given yet.
    let controller_as = |user: &str| {
        let mut command = Command::new(binary("mesh-controller"));
        command
            .env_remove("MESH_DATABASE_PASSWORD_FILE")
            .env_remove("CREDENTIALS_DIRECTORY")
            .arg("--database")
            .arg(format!(
                "postgres://{user}@127.0.0.1:{}/mesh_store",
                store.port()
            ))
            .arg("--declaration")
            .arg(d.join("declaration.json"))
            .args(["--nats", &nats.url()]);
        command
    };
    let bare_controller = || controller_as("mesh_store");
    let controller = || {
        let mut command = bare_controller();
        command
            .arg("--database-password-file")
            .arg(d.join("store.pw"));
        command
    };
    let migrated = controller().arg("migrate").output().unwrap();
    assert!(
        migrated.status.success(),
        "migrate as the store user: {}",
        String::from_utf8_lossy(&migrated.stderr)
    );
    let owners = table_owners(&store);
    assert!(!owners.is_empty());
    assert!(
        owners.iter().all(|t| t.ends_with(":mesh_store")),
        "{owners:?}"
    );

    let mut serve = bare_controller();
    serve
        .env("CREDENTIALS_DIRECTORY", d.join("credentials/controller"))
        .arg("serve");
    let serve = Process::spawn("controller", serve, d.join("controller.log"));
    let mut provider = Command::new(binary("mesh-postgres"));
    provider
        .arg("--admin-url")
        .arg(format!(
            "postgres://mesh_admin@127.0.0.1:{}/postgres",
            backend.port()
        ))
        .env_remove("MESH_POSTGRES_ADMIN_PASSWORD_FILE")
        .env(
            "CREDENTIALS_DIRECTORY",
            d.join("credentials/mesh-postgres@db-1.service"),
        )
        .arg("--contributions")
        .arg(d.join("contributions.json"))
        .args(["--nats", &nats.url()])
        .args(["--pass-every", "250ms", "--failing-after", "1s"]);
    let provider_command = provider;
    let mut provider = Process::spawn("provider", clone(&provider_command), d.join("provider.log"));

    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        let out = controller().args(["status", "--json"]).output().unwrap();
        if out.status.success() {
            let status: Value = serde_json::from_slice(&out.stdout).unwrap();
            let failing: Vec<&str> = status["failing"]
                .as_array()
                .unwrap()
                .iter()
                .filter_map(|f| f["consumer"].as_str())
                .collect();
            if failing == ["wiki"] && status["unheard"].as_array().unwrap().is_empty() {
                break status;
            }
        }
        assert!(
            Instant::now() < deadline,
            "status never named wiki failing\n--- controller:\n{}\n--- provider:\n{}",
            serve.log_text(),
            provider.log_text()
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    assert_eq!(status["failing"][0]["class"], "secret-unreadable");

    // The read-only role. The store user may not make roles: migrate says
    // so and what to run instead, and has made nothing.
    let reader = || {
        let mut command = controller_as("mesh_reader");
        command
            .arg("--database-password-file")
            .arg(d.join("reader.pw"));
        command
    };
    let refused = controller()
        .args([
            "migrate",
            "--reader",
            "mesh_reader",
            "--reader-password-file",
        ])
        .arg(d.join("reader.pw"))
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(2), "{said}");
    assert!(
        said.contains("mesh_store may not make it (it lacks CREATEROLE)")
            && said.contains("CREATE ROLE mesh_reader LOGIN"),
        "{said}"
    );
    // A role that may (here the superuser) makes it with the password's
    // verifier; the store user then sets its privileges as the owner.
    let mut made = controller_as(store.superuser());
    made.arg("--database-password-file")
        .arg(store.superuser_password_file())
        .args([
            "migrate",
            "--reader",
            "mesh_reader",
            "--reader-password-file",
        ])
        .arg(d.join("reader.pw"));
    let made = made.output().unwrap();
    let out = String::from_utf8_lossy(&made.stdout);
    assert!(
        made.status.success(),
        "{out}{}",
        String::from_utf8_lossy(&made.stderr)
    );
    assert!(out.contains("role mesh_reader: made now"), "{out}");
    let granted = controller()
        .args(["migrate", "--reader", "mesh_reader"])
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&granted.stdout);
    assert!(
        granted.status.success(),
        "{out}{}",
        String::from_utf8_lossy(&granted.stderr)
    );
    assert!(
        out.contains("role mesh_reader: it may read the store, nothing more"),
        "{out}"
    );
    // status as the reader says what it said as the owner.
    let read = reader().args(["status", "--json"]).output().unwrap();
    assert!(
        read.status.success(),
        "{}",
        String::from_utf8_lossy(&read.stderr)
    );
    let as_reader: Value = serde_json::from_slice(&read.stdout).unwrap();
    assert_eq!(as_reader["failing"], status["failing"]);
    // It cannot write, empty or drop a table, nor make one; a table a
    // later migration makes (as the owner) it may read.
    let refused = [
        "INSERT INTO store_record (begun_at) VALUES (now())",
        "DELETE FROM failing",
        "TRUNCATE failing",
        "DROP TABLE failing",
        "CREATE TABLE mine (x int)",
    ];
    let said = in_store_as(&store, "mesh_reader", READER_PASSWORD, &refused);
    for (statement, said) in refused.iter().zip(&said) {
        assert_eq!(said, &Err("42501".to_owned()), "{statement}");
    }
    // With --reader-records (the console's role) it may add a history row,
    // and change or remove none, nor write any other table; run without
    // it again, the insert is taken away.
    let note = "INSERT INTO history (kind, at, provider_module, provider_machine, consumer, \
                consumer_machine, detail, by_name) VALUES ('note', now(), 'postgres', 'db-1', \
                'forge', 'app-1', 'seen', 'ana')";
    let recording = controller()
        .args(["migrate", "--reader", "mesh_reader", "--reader-records"])
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&recording.stdout);
    assert!(
        out.contains(
            "role mesh_reader: it may read the store and add rows to history, nothing more"
        ),
        "{out}{}",
        String::from_utf8_lossy(&recording.stderr)
    );
    let said = in_store_as(
        &store,
        "mesh_reader",
        READER_PASSWORD,
        &[
            note,
            "UPDATE history SET detail = 'x'",
            "DELETE FROM history",
            "INSERT INTO store_record (begun_at) VALUES (now())",
        ],
    );
    let denied = Err("42501".to_owned());
    assert_eq!(
        said,
        [Ok(()), denied.clone(), denied.clone(), denied.clone()]
    );
    let again = controller()
        .args(["migrate", "--reader", "mesh_reader"])
        .output()
        .unwrap();
    assert!(again.status.success());
    assert_eq!(
        in_store_as(&store, "mesh_reader", READER_PASSWORD, &[note]),
        [denied]
    );
    let made = in_store_as(
        &store,
        "mesh_store",
        STORE_PASSWORD,
        &["CREATE TABLE later_one (x int)"],
    );
    assert_eq!(made, [Ok(())]);
    let read = in_store_as(
        &store,
        "mesh_reader",
        READER_PASSWORD,
        &["SELECT * FROM later_one"],
    );
    assert_eq!(read, [Ok(())]);
    // forge was made by the least-privileged administrator and works.
    block_on(async {
        let conninfo = format!(
            "host=127.0.0.1 port={} user=forge password=minted-forge-lp-e2e dbname=forge",
            backend.port()
        );
        let (client, connection) = tokio_postgres::connect(&conninfo, tokio_postgres::NoTls)
            .await
            .expect("forge logs into its database");
        tokio::spawn(connection);
        client.simple_query("SELECT 1").await.unwrap();
    });
    let provider_log = provider.log_text();
    assert!(
        provider_log.contains("the administrator may make roles and databases"),
        "{provider_log}"
    );
    assert!(
        !provider_log.contains("must be member of role"),
        "{provider_log}"
    );
    for secret in [STORE_PASSWORD, ADMIN_PASSWORD, READER_PASSWORD] {
        assert!(!serve.log_text().contains(secret));
        assert!(!provider_log.contains(secret));
    }

    // Rotated as deployed: the administrator's password changed at the
    // server (and in the unit's LoadCredential= file), while the unit still
    // reads the copy systemd made at its start. The fault says what to do
    // first: restart the unit.
    const ROTATED: &str = "provider-admin-pw-rotated-41b7";
    as_superuser(
        &backend,
        &[&format!("ALTER ROLE mesh_admin PASSWORD '{ROTATED}'")],
    );
    let fault = wait_for(&controller, "the provider fault", |s| {
        s["faults"][0]["error"].as_str().map(str::to_owned)
    });
    assert!(
        fault.starts_with(
            "restart mesh-postgres@db-1 to read the new admin password (the systemd credential \
             admin-password, copied at the unit's start from its LoadCredential= file); cannot \
             log in as the administrator"
        ),
        "{fault}"
    );
    let (_, human) = {
        let out = controller().arg("status").output().unwrap();
        (
            out.status,
            String::from_utf8_lossy(&out.stdout).into_owned(),
        )
    };
    assert!(
        human.contains("(credentials-rejected: restart mesh-postgres@db-1 to read the new"),
        "{human}"
    );
    // The restart: systemd copies the new file, the fault clears.
    provider.stop();
    std::fs::write(
        d.join("credentials/mesh-postgres@db-1.service/admin-password"),
        ROTATED,
    )
    .unwrap();
    let provider = Process::spawn(
        "provider",
        clone(&provider_command),
        d.join("provider2.log"),
    );
    wait_for(&controller, "the fault cleared after the restart", |s| {
        s["faults"].is_null().then_some(())
    });
    assert!(!provider.log_text().contains(ROTATED));
}

/// A command like `command` (program, arguments, environment changes).
fn clone(command: &Command) -> Command {
    let mut copy = Command::new(command.get_program());
    copy.args(command.get_args());
    for (key, value) in command.get_envs() {
        match value {
            Some(value) => copy.env(key, value),
            None => copy.env_remove(key),
        };
    }
    copy
}

/// Polls `status --json` (by `controller`) until `found` says what it
/// waited for, for 60 s.
fn wait_for<T>(
    controller: &dyn Fn() -> Command,
    what: &str,
    found: impl Fn(&Value) -> Option<T>,
) -> T {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let out = controller().args(["status", "--json"]).output().unwrap();
        if out.status.success() {
            let status: Value = serde_json::from_slice(&out.stdout).unwrap();
            if let Some(found) = found(&status) {
                return found;
            }
        }
        assert!(Instant::now() < deadline, "status never said {what}");
        std::thread::sleep(Duration::from_millis(200));
    }
}
