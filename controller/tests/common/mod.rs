//! What the controller's store tests share: a store database of their own
//! on the test cluster, and an administrator's connection to it.

// Each test crate that includes this uses some of it.
#![allow(dead_code)]

use mesh_pg_store::DatabaseOptions;
use mesh_test_support::PgCluster;

/// How the controller reaches database `db` of `pg` (made already): as
/// `postgres`, with the cluster's password file.
pub fn options_of(pg: &PgCluster, db: &str) -> DatabaseOptions {
    DatabaseOptions::new(&pg.database(db), Some(&pg.superuser_password_file())).unwrap()
}

/// Makes database `db` on `pg`: how the controller reaches it, and an
/// administrator's connection to it (not migrated).
pub async fn store_at(pg: &PgCluster, db: &str) -> (DatabaseOptions, tokio_postgres::Client) {
    let conninfo = pg.create_database(db).await;
    let (admin, connection) = tokio_postgres::connect(&conninfo, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    (options_of(pg, db), admin)
}
