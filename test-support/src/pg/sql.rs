//! Reaching a [`PgCluster`] over SQL: connection strings, the superuser's
//! session, a database of its own.

use super::{PgCluster, HOST, SUPERUSER};
use crate::tail;

impl PgCluster {
    /// `postgres://postgres@127.0.0.1:PORT/postgres`, without the password
    /// (see [`PgCluster::superuser_password`]).
    pub fn admin_url(&self) -> String {
        format!("postgres://{SUPERUSER}@{HOST}:{}/postgres", self.port)
    }

    /// A tokio-postgres / libpq key-value connection string for the
    /// superuser, password included:
    /// `host=127.0.0.1 port=N user=postgres password=... dbname=postgres`.
    pub fn admin_conninfo(&self) -> String {
        self.conninfo("postgres")
    }

    /// A key-value connection string for the superuser to the database
    /// `db`, without the password: `host=127.0.0.1 port=N user=postgres
    /// dbname=DB`, as a mesh program's `--database` takes it beside
    /// `--database-password-file` ([`PgCluster::superuser_password_file`]).
    pub fn database(&self, db: &str) -> String {
        format!(
            "host={HOST} port={} user={SUPERUSER} dbname={}",
            self.port,
            conninfo_value(db)
        )
    }

    /// The flags that point a mesh program (`mesh-controller`,
    /// `mesh-console`) at the database `db` as the superuser:
    /// `--database` ([`PgCluster::database`]) and
    /// `--database-password-file`.
    pub fn database_flags(&self, db: &str) -> [String; 4] {
        [
            "--database".to_owned(),
            self.database(db),
            "--database-password-file".to_owned(),
            self.superuser_password_file().display().to_string(),
        ]
    }

    /// Connects as the superuser to the database `postgres` with
    /// tokio-postgres and spawns the connection task on the current tokio
    /// runtime. Panics if the connection fails.
    pub async fn connect_admin(&self) -> tokio_postgres::Client {
        let (client, connection) =
            tokio_postgres::connect(&self.admin_conninfo(), tokio_postgres::NoTls)
                .await
                .unwrap_or_else(|error| {
                    panic!(
                        "connecting to the test PostgreSQL as {SUPERUSER} on port {} failed: \
                         {error}; is the cluster stopped?\n--- log tail ---\n{}",
                        self.port,
                        tail(&self.log(), 20)
                    )
                });
        tokio::spawn(async move {
            let _ = connection.await;
        });
        client
    }

    /// Whether each live session of the program named `application` (its
    /// `application_name`) is encrypted, as `pg_stat_ssl` says.
    pub async fn sessions_encrypted(&self, application: &str) -> Vec<bool> {
        self.connect_admin()
            .await
            .query(
                "SELECT s.ssl FROM pg_stat_ssl s JOIN pg_stat_activity a ON a.pid = s.pid \
                 WHERE a.application_name = $1",
                &[&application],
            )
            .await
            .expect("reading pg_stat_ssl")
            .iter()
            .map(|row| row.get(0))
            .collect()
    }

    /// Creates the database `name` (as the superuser) and returns a
    /// connection string for it, as the superuser with the password.
    ///
    /// Panics if the name is empty or longer than 63 bytes (PostgreSQL would
    /// cut it), or if the database cannot be created (e.g. it exists).
    pub async fn create_database(&self, name: &str) -> String {
        assert!(
            !name.is_empty() && name.len() <= 63,
            "database name {name:?} must be 1 to 63 bytes long"
        );
        let admin = self.connect_admin().await;
        admin
            .batch_execute(&format!("CREATE DATABASE {}", quote_identifier(name)))
            .await
            .unwrap_or_else(|error| panic!("CREATE DATABASE {name:?} failed: {error}"));
        self.conninfo(name)
    }

    /// [`PgCluster::database`] with the superuser's password: a
    /// tokio-postgres / libpq key-value connection string to `dbname`.
    pub fn conninfo(&self, dbname: &str) -> String {
        format!(
            "{} password={}",
            self.database(dbname),
            conninfo_value(&self.password)
        )
    }
}

/// A double-quoted SQL identifier.
fn quote_identifier(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// A value for a key-value connection string, quoted when needed.
fn conninfo_value(value: &str) -> String {
    let plain = !value.is_empty()
        && value
            .chars()
            .all(|c| !c.is_whitespace() && c != '\'' && c != '\\');
    if plain {
        value.to_string()
    } else {
        format!("'{}'", value.replace('\\', "\\\\").replace('\'', "\\'"))
    }
}
