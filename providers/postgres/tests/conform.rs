//! The conformance suite (`mesh_sdk::conform`, the rules `mesh-provide
//! conform` runs against a hook) against mesh-postgres and a real private
//! PostgreSQL, as a provider author would run it, with a by-hand oracle
//! that acts as a person at psql would (`ALTER ROLE`, `CREATE ROLE … LOGIN`,
//! connecting as a consumer).

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::provisioner;
use mesh_provider_postgres::PROVISION;
use mesh_sdk::conform::{conform, ByHand, ByHandError, Suite};
use mesh_sdk::{async_trait, Name, Secret};
use mesh_test_support::PgCluster;
use postgres_protocol::escape::{escape_identifier, escape_literal};

/// A person at psql as the superuser, and a consumer's login.
struct Psql {
    admin: tokio_postgres::Client,
    host: String,
    port: u16,
}

/// A SCRAM verifier of `password` (the password itself never goes in a statement).
fn verifier(password: &str) -> String {
    postgres_protocol::password::scram_sha_256(password.as_bytes())
}

fn failed(error: impl std::fmt::Display) -> ByHandError {
    ByHandError::Failed(error.to_string())
}

impl Psql {
    async fn run(&self, statement: &str) -> Result<(), ByHandError> {
        self.admin.batch_execute(statement).await.map_err(failed)
    }

    /// Whether `user` with `secret` connects to `database`; an error other
    /// than a refusal of the login or the database is a failure.
    async fn connects(
        &self,
        user: &Name,
        secret: &Secret,
        database: &Name,
    ) -> Result<bool, ByHandError> {
        let mut config = tokio_postgres::Config::new();
        config
            .host(&self.host)
            .port(self.port)
            .user(user.as_str())
            .password(secret.expose())
            .dbname(database.as_str())
            .connect_timeout(Duration::from_secs(5));
        match config.connect(tokio_postgres::NoTls).await {
            Ok((client, connection)) => {
                drop(client);
                drop(connection);
                Ok(true)
            }
            Err(error) => match error.code().map(|c| c.code()) {
                // invalid_password, invalid_authorization_specification,
                // insufficient_privilege, invalid_catalog_name (no database)
                Some("28P01" | "28000" | "42501" | "3D000") => Ok(false),
                _ => Err(failed(error)),
            },
        }
    }
}

#[async_trait]
impl ByHand for Psql {
    async fn change(&self, consumer: &Name) -> Result<(), ByHandError> {
        let other = verifier("changed by hand");
        self.run(&format!(
            "ALTER ROLE {} PASSWORD {}",
            escape_identifier(consumer.as_str()),
            escape_literal(&other)
        ))
        .await
    }

    async fn make(&self, consumer: &Name, secret: &Secret) -> Result<(), ByHandError> {
        let role = escape_identifier(consumer.as_str());
        self.run(&format!(
            "CREATE ROLE {role} LOGIN PASSWORD {}",
            escape_literal(&verifier(secret.expose()))
        ))
        .await?;
        self.run(&format!("CREATE DATABASE {role} OWNER {role}"))
            .await
    }

    async fn works(&self, consumer: &Name, secret: &Secret) -> Result<bool, ByHandError> {
        self.connects(consumer, secret, consumer).await
    }

    async fn reach(&self, who: &Name, secret: &Secret, to: &Name) -> Result<bool, ByHandError> {
        self.connects(who, secret, to).await
    }

    async fn remove(&self, consumer: &Name) -> Result<(), ByHandError> {
        let role = escape_identifier(consumer.as_str());
        self.run(&format!("DROP DATABASE IF EXISTS {role} WITH (FORCE)"))
            .await?;
        self.run(&format!("DROP ROLE IF EXISTS {role}")).await
    }

    /// A role or a database of that name, whoever made it.
    async fn left(&self, consumer: &Name) -> Result<bool, ByHandError> {
        let row = self
            .admin
            .query_one(
                "SELECT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = $1) \
                 OR EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)",
                &[&consumer.as_str()],
            )
            .await
            .map_err(|e| ByHandError::Failed(e.to_string()))?;
        Ok(row.get(0))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mesh_postgres_passes_conform_every_rule_by_hand_too() {
    let pg = PgCluster::start();
    let psql = Psql {
        admin: pg.connect_admin().await,
        host: pg.host().to_owned(),
        port: pg.port(),
    };
    let suite = Suite::new(PROVISION).with_by_hand(Arc::new(psql));
    let report = tokio::time::timeout(Duration::from_secs(300), conform(&provisioner(&pg), &suite))
        .await
        .expect("the suite took over 5 minutes: is the test PostgreSQL stuck?");
    println!("{report}");
    report.assert_passed();
    assert_eq!(report.skipped(), 0, "{report}");
}
