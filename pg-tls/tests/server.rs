//! Against a real PostgreSQL speaking TLS: every sslmode connects or
//! refuses as libpq would, the session really is encrypted
//! (`pg_stat_ssl`), SCRAM channel binding works, and a refused certificate
//! says why without a password.

use std::time::Duration;

use mesh_test_support::{PgCluster, TestCa};

/// Connects with `url`; on success whether the session is encrypted (`pg_stat_ssl`).
async fn encrypted(url: &str) -> Result<bool, tokio_postgres::Error> {
    let (config, tls) = mesh_pg_tls::parse(url).unwrap_or_else(|e| panic!("{url}: {e}"));
    let connecting = config.connect(tls.connector());
    let (client, connection) = tokio::time::timeout(Duration::from_secs(20), connecting)
        .await
        .expect("a login to the test PostgreSQL hung")?;
    tokio::spawn(connection);
    let row = client
        .query_one(
            "SELECT s.ssl FROM pg_stat_ssl s JOIN pg_stat_activity a ON a.pid = s.pid \
             WHERE a.pid = pg_backend_pid()",
            &[],
        )
        .await?;
    Ok(row.get(0))
}

fn url(pg: &PgCluster, host: &str, query: &str) -> String {
    format!(
        "postgres://postgres:{}@{host}:{}/postgres?{query}",
        pg.superuser_password(),
        pg.port()
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn every_mode_against_a_tls_server() {
    let ca = TestCa::new("pg-tls test ca");
    let other = TestCa::new("another ca");
    let mut pg = PgCluster::start_with_tls(&ca.server("pg", &["localhost", "127.0.0.1"]));
    let root = ca.ca_file().display().to_string();
    let wrong_root = other.ca_file().display().to_string();

    let encrypted_ok = [
        format!("sslmode=verify-full&sslrootcert={root}"),
        format!("sslmode=verify-full&sslrootcert={root}&channel_binding=require"),
        format!("sslmode=verify-ca&sslrootcert={root}"),
        format!("sslmode=require&sslrootcert={root}"),
        "sslmode=require".to_owned(),
        "sslmode=prefer".to_owned(),
        String::new(),
    ];
    for query in &encrypted_ok {
        for host in ["127.0.0.1", "localhost"] {
            let url = url(&pg, host, query);
            let ssl = encrypted(&url)
                .await
                .unwrap_or_else(|e| panic!("{host} {query}: {}", error_chain(&e)));
            assert!(ssl, "{host} {query}: not encrypted");
        }
    }
    assert!(!encrypted(&url(&pg, "127.0.0.1", "sslmode=disable"))
        .await
        .unwrap());

    // Another authority: refused by every mode that checks the chain.
    for mode in ["verify-full", "verify-ca", "require"] {
        let query = format!("sslmode={mode}&sslrootcert={wrong_root}");
        let error = encrypted(&url(&pg, "127.0.0.1", &query)).await.unwrap_err();
        let text = error_chain(&error);
        assert!(
            text.contains(&format!(
                "unknown authority: the server's certificate is not signed by the authority in {wrong_root}"
            )),
            "{mode}: {text}"
        );
        assert!(mesh_pg_tls::is_tls_refusal(&error), "{mode}: {text}");
        assert!(!text.contains(pg.superuser_password()), "{text}");
    }

    // A certificate for another name: only verify-full refuses it.
    pg.use_server_cert(&ca.server("elsewhere", &["db.example"]));
    let query = format!("sslmode=verify-full&sslrootcert={root}");
    for host in ["127.0.0.1", "localhost"] {
        let error = encrypted(&url(&pg, host, &query)).await.unwrap_err();
        let text = error_chain(&error);
        assert!(
            text.contains(&format!(
                "name mismatch: the server's certificate is not for {host} (only for db.example)"
            )),
            "{text}"
        );
        assert!(mesh_pg_tls::is_tls_refusal(&error), "{text}");
        assert!(!text.contains(pg.superuser_password()), "{text}");
    }
    for query in [
        format!("sslmode=verify-ca&sslrootcert={root}"),
        format!("sslmode=require&sslrootcert={root}"),
        "sslmode=require".to_owned(),
    ] {
        assert!(encrypted(&url(&pg, "127.0.0.1", &query)).await.unwrap());
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_plain_server() {
    let pg = PgCluster::start();
    let error = encrypted(&url(&pg, "127.0.0.1", "sslmode=require"))
        .await
        .unwrap_err();
    assert!(
        error_chain(&error).contains("server does not support TLS"),
        "{}",
        error_chain(&error)
    );
    assert!(mesh_pg_tls::is_tls_refusal(&error));
    for query in ["sslmode=prefer", "", "sslmode=disable"] {
        assert!(!encrypted(&url(&pg, "127.0.0.1", query)).await.unwrap());
    }
    // A wrong password is no TLS refusal.
    let wrong = format!("postgres://postgres:wrong@127.0.0.1:{}/postgres", pg.port());
    let error = encrypted(&wrong).await.unwrap_err();
    assert!(!mesh_pg_tls::is_tls_refusal(&error));
}

/// The error and its sources.
fn error_chain(error: &tokio_postgres::Error) -> String {
    let mut text = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(inner) = source {
        text.push_str(": ");
        text.push_str(&inner.to_string());
        source = inner.source();
    }
    text
}
