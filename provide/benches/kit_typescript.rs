//! What the process boundary costs a hook on the TypeScript kit: a loop
//! pass (`ensure` then `check` for each consumer, at most 16 at once, the
//! loop's default `--concurrency`) over examples/hooks/mariadb, a hook doing
//! real MariaDB work (its state and the user's password hash read in one
//! query, then a login as the consumer into its database: a new
//! connection), on a private MariaDB, measured two ways in the same run:
//!
//! - direct: the hook's handlers called in one node process, no
//!   mesh-provide (benches/kit_typescript.mjs): the hook's own work;
//! - serve: mesh-provide's `HookProvisioner` (what the loop calls) over the
//!   hook in serve mode: a JSON line round trip a call, through the kit's
//!   serve().
//!
//! Each at 50, 200 and 1,000 consumers; the target: a serve pass within
//! 1.2 × the direct one.
//!
//! ```text
//! cargo bench -p mesh-provide --bench kit_typescript
//! MESH_BENCH_CONSUMERS=50,200 MESH_BENCH_RUNS=3 cargo bench -p mesh-provide --bench kit_typescript
//! ```
//!
//! `scripts/test` runs it as a smoke (`MESH_BENCH_CONSUMERS=5
//! MESH_BENCH_RUNS=1 cargo test -p mesh-provide --bench kit_typescript`, a
//! debug build): every call must succeed; its figures mean nothing.
//!
//! Needs mariadb-server, node, and the kit and the example built
//! (`bash -c '. scripts/lib.sh; ensure_kit_typescript'`).

#[path = "boundary/mod.rs"]
mod boundary;

use std::process::{Command, Stdio};
use std::sync::Arc;

use boundary::{compare, consumers, env_list, provisioner, repo, Direct, CONCURRENCY};
use mesh_provide::hook::Mode;
use mesh_test_support::MariaDbServer;

#[tokio::main]
async fn main() {
    let sizes = env_list("MESH_BENCH_CONSUMERS", &[50, 200, 1000]);
    let runs = env_list("MESH_BENCH_RUNS", &[9])[0].max(1);
    let hook = repo().join("examples/hooks/mariadb/dist/mariadb.js");
    assert!(
        hook.exists()
            && repo()
                .join("examples/hooks/mariadb/dist/backend.js")
                .exists(),
        "the MariaDB example is not built: bash -c '. scripts/lib.sh; ensure_kit_typescript'"
    );
    let db = MariaDbServer::start();
    let env = db.hook_env();
    for (key, value) in &env {
        // The hooks mesh-provide starts inherit its environment.
        std::env::set_var(key, value);
    }
    println!(
        "kit_typescript: examples/hooks/mariadb (the TypeScript kit's serve()) on a private MariaDB, \
         a pass = ensure + check a consumer, {CONCURRENCY} at once, {runs} rounds (median)"
    );
    let mut driver = Command::new("node");
    driver
        .env("MESH_PROVIDER", boundary::PROVIDER)
        .arg(repo().join("provide/benches/kit_typescript.mjs"))
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stderr(Stdio::inherit());
    let mut direct = Direct::start(driver);
    let serve = provisioner(&hook, Mode::Serve).await;
    for &n in &sizes {
        let all = Arc::new(consumers(n, "mariadb"));
        let compared = compare(&mut direct, &serve, &all, runs).await;
        println!("\n{n} consumers ({} calls a pass)", 2 * n);
        compared.print(n, "the hook's own work");
    }
}
