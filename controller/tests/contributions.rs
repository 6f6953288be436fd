//! `mesh-controller contributions --out DIR`, the built binary: each
//! provider's contributions file written from the declaration and read back
//! with the SDK's own reader (what the provider's loop reads), secrets
//! minted 0600 in 0700 folders, none printed, a second run a no-op, an
//! added consumer one new secret, a removed one no longer listed but its
//! secret left alone and said.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::SystemTime;

use mesh_sdk::internals::Source;
use serde_json::json;

/// Runs the binary: (exit code, stdout, stderr).
fn contributions(declaration: &Path, out: &Path) -> (i32, String, String) {
    let run = Command::new(env!("CARGO_BIN_EXE_mesh-controller"))
        .arg("--declaration")
        .arg(declaration)
        .arg("contributions")
        .arg("--out")
        .arg(out)
        .env_remove("RUST_LOG")
        .output()
        .unwrap();
    (
        run.status.code().unwrap_or(-1),
        String::from_utf8(run.stdout).unwrap(),
        String::from_utf8(run.stderr).unwrap(),
    )
}

fn declare(path: &Path, consumers: &[(&str, &str, &str, &str)]) {
    let mut modules = vec![
        json!({"module": "postgres", "machine": "db-1", "provides": ["postgres-database"]}),
        json!({"module": "identity", "machine": "id-1", "provides": ["oidc-client"]}),
    ];
    let mut requires: BTreeMap<(&str, &str), Vec<serde_json::Value>> = BTreeMap::new();
    for (module, machine, provision, from) in consumers {
        requires
            .entry((module, machine))
            .or_default()
            .push(json!({"provision": provision, "from": from}));
    }
    for ((module, machine), requires) in requires {
        modules.push(json!({"module": module, "machine": machine, "requires": requires}));
    }
    std::fs::write(path, json!({"modules": modules}).to_string()).unwrap();
}

/// Every file and folder under `dir`: its mode, modification time and content.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, (u32, SystemTime, Vec<u8>)> {
    let mut all = BTreeMap::new();
    let mut folders = vec![dir.to_owned()];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder).unwrap() {
            let path = entry.unwrap().path();
            let meta = std::fs::metadata(&path).unwrap();
            let content = if meta.is_dir() {
                folders.push(path.clone());
                Vec::new()
            } else {
                std::fs::read(&path).unwrap()
            };
            all.insert(
                path,
                (
                    meta.permissions().mode() & 0o777,
                    meta.modified().unwrap(),
                    content,
                ),
            );
        }
    }
    all
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

/// A consumer as the SDK reads it: name, machine, provision, secret file.
type Read = (String, String, String, PathBuf);

/// The provider, the consumers and the consumers held back (listed, not
/// served) the SDK's reader finds in `folder`.
fn read_back(folder: &Path) -> (String, Vec<Read>, Vec<String>) {
    let mut source = Source::new(folder.join("contributions.json"));
    let loaded = source.load().expect("the SDK reads the file");
    assert!(loaded.fresh);
    let c = loaded.list;
    let consumers = c
        .consumers
        .iter()
        .map(|e| {
            (
                e.name.to_string(),
                e.machine.to_string(),
                e.provision.clone(),
                e.secret_file.clone(),
            )
        })
        .collect();
    let held_back = c.held_back.iter().map(|n| n.to_string()).collect();
    (c.provider.to_string(), consumers, held_back)
}

#[test]
fn contributions_are_written_from_the_declaration_and_secrets_minted_once() {
    let dir = tempfile::tempdir().unwrap();
    let declaration = dir.path().join("declaration.json");
    let out = dir.path().join("out");
    declare(
        &declaration,
        &[
            ("forge", "app-1", "postgres-database", "postgres@db-1"),
            ("forge", "app-1", "oidc-client", "identity@id-1"),
            ("wiki", "app-2", "postgres-database", "postgres@db-1"),
        ],
    );
    let (code, stdout, stderr) = contributions(&declaration, &out);
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(stderr.is_empty(), "{stderr}");
    let pg = out.join("postgres@db-1");
    assert!(
        stdout.contains("postgres@db-1: ")
            && stdout.contains("(2 consumers) written, 2 secrets minted (forge, wiki)"),
        "{stdout}"
    );
    let (provider, consumers, held_back) = read_back(&pg);
    assert_eq!(provider, "postgres@db-1");
    assert!(held_back.is_empty(), "{held_back:?}");
    let names: Vec<(&str, &str, &str)> = consumers
        .iter()
        .map(|(n, m, p, _)| (n.as_str(), m.as_str(), p.as_str()))
        .collect();
    assert_eq!(
        names,
        [
            ("forge", "app-1", "postgres-database"),
            ("wiki", "app-2", "postgres-database")
        ]
    );
    // The secret files resolve where they were minted.
    for (name, _, _, secret_file) in &consumers {
        assert_eq!(secret_file, &pg.join("secrets").join(name));
    }
    let (_, id_consumers, _) = read_back(&out.join("identity@id-1"));
    assert_eq!(id_consumers.len(), 1);

    // Modes, and no secret on stdout or stderr.
    for folder in [
        out.clone(),
        pg.clone(),
        pg.join("secrets"),
        out.join("identity@id-1/secrets"),
    ] {
        assert_eq!(mode(&folder), 0o700, "{}", folder.display());
    }
    let secrets: Vec<String> = [
        "postgres@db-1/secrets/forge",
        "postgres@db-1/secrets/wiki",
        "identity@id-1/secrets/forge",
    ]
    .iter()
    .map(|p| {
        let path = out.join(p);
        assert_eq!(mode(&path), 0o600, "{p}");
        let secret = std::fs::read_to_string(&path).unwrap().trim().to_owned();
        assert_eq!(secret.len(), 64, "{p}: 256 bits as hex");
        assert!(!stdout.contains(&secret) && !stderr.contains(&secret));
        secret
    })
    .collect();
    assert_ne!(secrets[0], secrets[1]);
    assert_ne!(
        secrets[0], secrets[2],
        "one secret per provider and consumer"
    );
    assert_eq!(mode(&pg.join("contributions.json")), 0o600);

    // A second run changes nothing, and says so.
    let before = snapshot(&out);
    let (code, stdout, stderr) = contributions(&declaration, &out);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(stdout.matches(" unchanged").count(), 2, "{stdout}");
    assert!(!stdout.contains("minted"), "{stdout}");
    assert_eq!(snapshot(&out), before, "a second run is a no-op");

    // An added consumer adds one secret; the others stay as they were.
    declare(
        &declaration,
        &[
            ("forge", "app-1", "postgres-database", "postgres@db-1"),
            ("forge", "app-1", "oidc-client", "identity@id-1"),
            ("wiki", "app-2", "postgres-database", "postgres@db-1"),
            ("blog", "app-3", "postgres-database", "postgres@db-1"),
        ],
    );
    let (code, stdout, _) = contributions(&declaration, &out);
    assert_eq!(code, 0);
    assert!(
        stdout.contains("(3 consumers) updated, 1 secret minted (blog)"),
        "{stdout}"
    );
    let after = snapshot(&out);
    let added: Vec<&PathBuf> = after.keys().filter(|p| !before.contains_key(*p)).collect();
    assert_eq!(added, [&pg.join("secrets/blog")]);
    for secret in ["secrets/forge", "secrets/wiki"] {
        assert_eq!(
            after[&pg.join(secret)],
            before[&pg.join(secret)],
            "{secret}"
        );
    }

    // A removed consumer is no longer listed; its secret is left alone and said.
    declare(
        &declaration,
        &[
            ("forge", "app-1", "postgres-database", "postgres@db-1"),
            ("blog", "app-3", "postgres-database", "postgres@db-1"),
        ],
    );
    let (code, stdout, _) = contributions(&declaration, &out);
    assert_eq!(code, 0);
    let (_, consumers, _) = read_back(&pg);
    let names: Vec<&str> = consumers.iter().map(|c| c.0.as_str()).collect();
    assert_eq!(names, ["blog", "forge"]);
    assert_eq!(
        std::fs::read_to_string(pg.join("secrets/wiki"))
            .unwrap()
            .trim(),
        secrets[1]
    );
    assert!(
        stdout.contains("postgres@db-1: secrets/wiki is no longer listed")
            && stdout.contains("left alone"),
        "{stdout}"
    );
    // identity@id-1 still provides (an empty list); its secret of forge is said.
    assert!(
        stdout.contains("identity@id-1: secrets/forge is no longer listed"),
        "{stdout}"
    );
}

#[test]
fn a_consumer_name_asked_twice_of_one_provider_is_warned_of_and_stays_listed() {
    let dir = tempfile::tempdir().unwrap();
    let declaration = dir.path().join("declaration.json");
    let out = dir.path().join("out");
    declare(
        &declaration,
        &[
            ("forge", "app-1", "postgres-database", "postgres@db-1"),
            ("forge", "app-2", "postgres-database", "postgres@db-1"),
        ],
    );
    let (code, _, stderr) = contributions(&declaration, &out);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stderr.contains("postgres@db-1 is asked for consumer forge 2 times")
            && stderr.contains("forge@app-1 (postgres-database), forge@app-2 (postgres-database)"),
        "{stderr}"
    );
    // The provider's reader uses neither entry and keeps forge listed.
    let (_, consumers, held_back) = read_back(&out.join("postgres@db-1"));
    assert!(consumers.is_empty(), "{consumers:?}");
    assert_eq!(held_back, ["forge"]);

    // An unwritable folder is an error naming it, exit 2.
    let blocked = dir.path().join("file");
    std::fs::write(&blocked, "").unwrap();
    let (code, _, stderr) = contributions(&declaration, &blocked.join("out"));
    assert_eq!(code, 2);
    assert!(stderr.contains(&blocked.display().to_string()), "{stderr}");
}
