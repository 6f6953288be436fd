//! The conformance suite (`mesh_sdk::conform`, the rules `mesh-provide
//! conform` runs against a hook) against mesh-postgres and a real private
//! PostgreSQL, as a provider author would run it.

mod common;

use common::provisioner;
use mesh_provider_postgres::PROVISION;
use mesh_sdk::conform::{conform, Suite};
use mesh_test_support::PgCluster;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mesh_postgres_passes_conform() {
    let pg = PgCluster::start();
    let report = conform(&provisioner(&pg), &Suite::new(PROVISION)).await;
    println!("{report}");
    report.assert_passed();
}
