//! Imports go one way inside every crate of the workspace: no module
//! circle anywhere. Each crate has a layer table (below): for the crate
//! root and for each module that is a folder, its child modules from the
//! bottom up, one layer a row. A module may name a module of a lower layer
//! under the same parent, its own ancestors (the folder's `mod.rs` that
//! declares it) and its own descendants; naming a module of its own layer
//! or above is refused, so no two siblings can name each other. Every
//! module is in its folder's table, whether or not anything names it yet
//! (test-only modules, `tests` and `*_tests`, aside).
//!
//! The test reads every `src/` file of every crate the workspace lists,
//! outside comments, strings and `#[cfg(test)] mod` blocks (as
//! tests/workspace_src reads them for every test of the workspace's own
//! code), and follows `crate::`, `super::` and `self::` paths (`use` trees
//! included) to the module they name. A name a folder module (or the crate root)
//! re-exports from one of its children counts as that child's, so a
//! re-export does not hide an edge. It asserts that it found files and
//! imports in each crate, so it cannot pass vacuously. `LAYERS_DUMP=1`
//! prints every edge it checks.
//!
//! Why a check of our own: modules of one crate may name each other in a
//! circle as far as rustc and clippy are concerned; only a crate boundary
//! forbids it, and splitting every layer into a crate would cost more than
//! this test.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

mod workspace_src;

use workspace_src::{code_of, ident_before, rust_files, workspace_members};

/// A crate's layer tables: for each folder module (`""` for the crate
/// root), its children from the bottom layer up.
type Tables = &'static [(&'static str, &'static [&'static [&'static str]])];

/// Every crate with a `src/`, by its folder, and its layer tables.
const CRATES: &[(&str, Tables)] = &[
    (
        "protocol",
        &[(
            "",
            &[
                &["one_of", "name", "time"],
                &["class"],
                &["alive"],
                &["module_id", "event"],
                &["subject"],
                &["approve"],
            ],
        )],
    ),
    ("listfile", &[("", &[&["entries", "list"], &["last_good"]])]),
    (
        "runtime",
        &[
            (
                "",
                &[
                    &[
                        "backoff",
                        "clock",
                        "credentials",
                        "log",
                        "redact",
                        "secret",
                        "stop",
                        "streak",
                    ],
                    &["endpoints", "nats", "secret_file"],
                    &["outbox"],
                    &["testing"],
                    &["program"],
                ],
            ),
            ("endpoints", &[&["progress", "build", "format"]]),
            (
                "nats",
                &[
                    &["servers", "outage"],
                    &["error", "callback"],
                    &["args"],
                    &["connect", "approve"],
                ],
            ),
            ("outbox", &[&["publisher", "jetstream"]]),
            ("program", &[&["failure", "signals", "service"]]),
        ],
    ),
    (
        "mesh-sdk",
        &[
            (
                "",
                &[
                    &[
                        "alive",
                        "brake",
                        "classify",
                        "contributions",
                        "fault",
                        "metrics",
                        "name_map",
                        "redact",
                        "standing",
                    ],
                    &["secret", "repair"],
                    &["provisioner"],
                    &["retire", "conform"],
                    &["settings"],
                    &["args"],
                    &["runner"],
                    &["program"],
                    &["testing"],
                    &["internals"],
                ],
            ),
            ("conform", &[&["rules"], &["oracle", "instances"]]),
            (
                "runner",
                &[
                    &["attempt", "herald", "entries"],
                    &["repairing", "retiring", "admin", "input"],
                    &["serve"],
                ],
            ),
        ],
    ),
    (
        "test-support",
        &[
            (
                "",
                &[
                    &["scratch"],
                    &[
                        "browser",
                        "certs",
                        "cmdline",
                        "contributions",
                        "proxy",
                        "netns",
                        "redis",
                        "mariadb",
                        "rabbitmq",
                        "script",
                        "tier",
                        "whole",
                    ],
                    &["nats", "pg"],
                    &["cluster", "keycloak"],
                    &["mesh"],
                ],
            ),
            ("browser", &[&["axe", "launch", "screenshot"]]),
            ("keycloak", &[&["dist", "admin"]]),
            (
                "mesh",
                &[&["process"], &["hook", "metrics", "run", "status"]],
            ),
            ("pg", &[&["host"], &["cluster", "sql", "template"]]),
        ],
    ),
    (
        "pg-tls",
        &[("", &[&["params", "verify", "shown"], &["connect"]])],
    ),
    (
        "status",
        &[
            (
                "",
                &[
                    &["model"],
                    &["store", "testing"],
                    &["link", "report"],
                    &["render"],
                ],
            ),
            (
                "model",
                &[
                    &["text", "received", "row", "declaration", "consumers"],
                    &["reduce", "recoveries"],
                    &["history"],
                ],
            ),
            (
                "link",
                &[
                    &["gauges", "progress", "pulls"],
                    &["decode", "observe", "record", "prune", "source"],
                    &["outage_tests"],
                ],
            ),
            (
                "report",
                &[
                    &[
                        "grants",
                        "controller",
                        "catching_up",
                        "retired",
                        "group",
                        "history",
                        "faults",
                        "input",
                        "runbook",
                    ],
                    &["problem"],
                    &["sentence"],
                    &["days", "why"],
                ],
            ),
            (
                "render",
                &[&["human", "json", "series"], &["history", "why"], &["html"]],
            ),
            (
                "render::html",
                &[&["act"], &["consumers", "mesh"], &["detail"]],
            ),
        ],
    ),
    (
        "pg-store",
        &[(
            "",
            &[
                &["options", "column_list", "history_row", "locks", "selected"],
                &["columns", "history"],
                &["statements"],
                &["connection"],
                &["rows"],
                &[
                    "apply",
                    "consumers",
                    "epoch",
                    "migrate",
                    "notes",
                    "read",
                    "reader",
                    "record",
                ],
                &["history_read"],
            ],
        )],
    ),
    (
        "console",
        &[(
            "",
            &[
                &["sessions", "tokens", "limits", "pages", "tls", "watch"],
                &["auth"],
                &["act", "conns", "live"],
                &["server"],
                &["cli"],
            ],
        )],
    ),
    (
        "controller",
        &[
            (
                "",
                &[
                    &["bus"],
                    &["link", "approve", "permissions", "contributions"],
                    &["plan"],
                    &["cli"],
                ],
            ),
            ("link", &[&["source", "stream"]]),
            ("contributions", &[&["write"]]),
            ("permissions", &[&["credentials"], &["render"]]),
            (
                "cli",
                &[
                    &["error"],
                    &["permissions", "contributions", "history", "plan", "why"],
                    &["note"],
                    &["run"],
                ],
            ),
        ],
    ),
    (
        "providers/postgres",
        &[(
            "",
            &[
                &["error"],
                &["sql", "classify"],
                &["plan", "config"],
                &["admin"],
                &["provisioner"],
                &["cli"],
            ],
        )],
    ),
    (
        "providers/identity",
        &[
            (
                "",
                &[
                    &["error", "login_backoff"],
                    &["classify", "bootstrap"],
                    &["config"],
                    &["keycloak"],
                    &["known", "repair"],
                    &["provisioner"],
                    &["cli"],
                ],
            ),
            ("keycloak", &[&["calls"], &["token", "clients", "users"]]),
        ],
    ),
    (
        "grants",
        &[(
            "",
            &[&["file", "standing"], &["dial"], &["agent"], &["cli"]],
        )],
    ),
    (
        "provide",
        &[
            (
                "",
                &[
                    &["wire", "scrub", "down"],
                    &["error", "process"],
                    &["metrics"],
                    &["exec", "serve"],
                    &["hook"],
                    &["provisioner", "args"],
                    &["by_hand"],
                    &["conform", "bench"],
                    &["cli"],
                ],
            ),
            ("serve", &[&["rules"], &["session"]]),
            ("wire", &[&["verb"], &["ask", "reply"]]),
            (
                "wire::reply",
                &[&["bad"], &["field"], &["parse", "verbs"], &["judge"]],
            ),
        ],
    ),
    (
        "sim",
        &[(
            "",
            &[
                &["rng", "store", "cost", "timings"],
                &["plan", "bus"],
                &["status"],
                &["backend"],
                &["world"],
                &["check"],
            ],
        )],
    ),
    (
        "demo",
        &[
            ("", &[&["interrupt", "expect"], &["narrate"], &["story"]]),
            (
                "story",
                &[&["secret", "grants", "identity", "console", "hooks"]],
            ),
        ],
    ),
    ("xtask", &[("", &[&["environment"]])]),
];

/// Known circles, each to be removed by the change named beside it; an
/// entry that no longer matches fails the test, so it cannot outlive its fix.
const KNOWN: &[(&str, &str, &str)] = &[];

#[test]
fn imports_go_down_only_in_every_crate() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let members = workspace_members(root);
    let tabled: BTreeSet<&str> = CRATES.iter().map(|(dir, _)| *dir).collect();
    for member in &members {
        // A crate of one file (xtask) has no modules to layer.
        let src = root.join(member).join("src");
        let files = std::fs::read_dir(&src).map_or(0, |dir| dir.count());
        if files > 1 {
            assert!(
                tabled.contains(member.as_str()),
                "crate {member} has no layer table: add it to CRATES"
            );
        }
    }
    let mut wrong = Vec::new();
    let mut known_seen = BTreeSet::new();
    for (dir, tables) in CRATES {
        let found = read_crate(&root.join(dir).join("src"));
        assert!(
            found.files.len() > 1,
            "{dir}: only {} files found",
            found.files.len()
        );
        // Every module is in its folder's table, whether or not anything
        // names it yet (test-only modules aside).
        for module in found.files.keys() {
            let (parent, name) = module.rsplit_once("::").unwrap_or(("", module.as_str()));
            if module.is_empty() || name == "tests" || name.ends_with("_tests") {
                continue;
            }
            let listed = tables
                .iter()
                .find(|(folder, _)| *folder == parent)
                .is_some_and(|(_, layers)| layers.iter().any(|l| l.contains(&name)));
            if !listed {
                wrong.push(format!("{dir}: module {module} is in no layer: add it"));
            }
        }
        let mut edges = 0;
        for (module, file) in &found.files {
            for target in &file.names {
                let Some(target) = found.resolve(target) else {
                    continue;
                };
                if related(module, &target) {
                    continue;
                }
                edges += 1;
                if std::env::var_os("LAYERS_DUMP").is_some() {
                    eprintln!("EDGE {dir} {module} {target}");
                }
                if let Err(why) = check(tables, module, &target) {
                    if KNOWN.contains(&(*dir, module.as_str(), target.as_str())) {
                        known_seen.insert((*dir, module.clone(), target.clone()));
                        continue;
                    }
                    wrong.push(format!(
                        "{dir}: {} names {target}: {why}",
                        file.path.display()
                    ));
                }
            }
        }
        // A crate of one module besides its root has no two to join.
        let modules: usize = tables
            .iter()
            .map(|(_, layers)| layers.iter().map(|l| l.len()).sum::<usize>())
            .sum();
        assert!(
            edges > 0 || modules < 2,
            "{dir}: no import between its modules was found"
        );
    }
    wrong.sort();
    wrong.dedup();
    assert!(wrong.is_empty(), "imports going up or sideways: {wrong:#?}");
    for (dir, from, to) in KNOWN {
        assert!(
            known_seen.contains(&(*dir, from.to_string(), to.to_string())),
            "{dir}: {from} no longer names {to}: remove the entry from KNOWN"
        );
    }
}

/// Whether one module is the other's ancestor (or the same).
fn related(a: &str, b: &str) -> bool {
    let inside = |outer: &str, inner: &str| {
        outer.is_empty() || inner == outer || inner.starts_with(&format!("{outer}::"))
    };
    inside(a, b) || inside(b, a)
}

/// `Ok` when `from` may name `to` by the layer tables.
fn check(tables: Tables, from: &str, to: &str) -> Result<(), String> {
    let (a, b): (Vec<&str>, Vec<&str>) = (from.split("::").collect(), to.split("::").collect());
    let common = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let parent = a[..common].join("::");
    let (mine, theirs) = (a[common], b[common]);
    let table = tables
        .iter()
        .find(|(folder, _)| *folder == parent)
        .map(|(_, layers)| *layers)
        .ok_or_else(|| format!("no layer table for the children of {parent:?}"))?;
    let layer = |name: &str| {
        table
            .iter()
            .position(|layer| layer.contains(&name))
            .ok_or_else(|| format!("{name} (under {parent:?}) is in no layer: add it"))
    };
    let (own, other) = (layer(mine)?, layer(theirs)?);
    match other < own {
        true => Ok(()),
        false => Err(format!(
            "{theirs} is in layer {other}, {mine} in layer {own} (under {parent:?})"
        )),
    }
}

/// One source file: its path, and every module path it names (absolute,
/// from the crate root, possibly ending in an item name).
struct File {
    path: PathBuf,
    names: Vec<Vec<String>>,
}

/// A crate's files by module path, and the names its folder modules
/// re-export from their children.
struct Crate {
    files: BTreeMap<String, File>,
    /// (module, name) → the child module of `module` the name comes from.
    reexports: BTreeMap<(String, String), String>,
}

impl Crate {
    /// The module a path names: its longest prefix that is a module, a
    /// re-exported name followed into the child it comes from.
    fn resolve(&self, path: &[String]) -> Option<String> {
        let mut module = String::new();
        for segment in path {
            let child = match module.is_empty() {
                true => segment.clone(),
                false => format!("{module}::{segment}"),
            };
            if self.files.contains_key(&child) {
                module = child;
            } else if let Some(from) = self
                .reexports
                .get(&(module.clone(), segment.clone()))
                .filter(|from| self.files.contains_key(*from))
            {
                module = from.clone();
                break;
            } else {
                break;
            }
        }
        Some(module)
    }
}

fn read_crate(src: &Path) -> Crate {
    let mut paths = Vec::new();
    rust_files(src, &mut paths);
    let has_lib = src.join("lib.rs").exists();
    let mut files = BTreeMap::new();
    let mut reexports = BTreeMap::new();
    for path in paths {
        let relative = path.strip_prefix(src).unwrap();
        let mut parts: Vec<String> = relative
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        let last = parts.pop().unwrap();
        match last.as_str() {
            // A binary beside a library is a crate of its own.
            "main.rs" if has_lib && parts.is_empty() => continue,
            "lib.rs" | "main.rs" | "mod.rs" => {}
            other => parts.push(other.trim_end_matches(".rs").to_owned()),
        }
        let module = parts.join("::");
        let code = code_of(&std::fs::read_to_string(&path).unwrap());
        let names = paths_named(&code, &parts);
        for (name, child) in reexported(&code) {
            let child = match module.is_empty() {
                true => child,
                false => format!("{module}::{child}"),
            };
            reexports.insert((module.clone(), name), child);
        }
        files.insert(module, File { path, names });
    }
    Crate { files, reexports }
}

/// Every absolute path the code names through `crate::`, `super::` or
/// `self::`, `use` trees expanded; `module` is the file's own module path.
fn paths_named(code: &str, module: &[String]) -> Vec<Vec<String>> {
    let chars: Vec<char> = code.chars().collect();
    let mut found = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let starts = !ident_before(&chars, i) && (i == 0 || chars[i - 1] != '$');
        let word: String = chars[i..]
            .iter()
            .take_while(|c| c.is_alphanumeric() || **c == '_')
            .collect();
        if starts && ["crate", "super", "self"].contains(&word.as_str()) {
            let (paths, end) = tree(&chars, i);
            for path in paths {
                if let Some(absolute) = absolute(&path, module) {
                    found.push(absolute);
                }
            }
            i = end.max(i + word.len());
        } else if word.is_empty() {
            i += 1;
        } else {
            i += word.len();
        }
    }
    found
}

/// Parses a path or `use` tree at `i` (`a::b::{c, d::e}`): each path, and
/// where the tree ends.
fn tree(chars: &[char], mut i: usize) -> (Vec<Vec<String>>, usize) {
    let mut prefix = Vec::new();
    loop {
        let word: String = chars[i..]
            .iter()
            .take_while(|c| c.is_alphanumeric() || **c == '_')
            .collect();
        if word.is_empty() {
            break;
        }
        prefix.push(word.clone());
        i += word.len();
        if chars.get(i) == Some(&':') && chars.get(i + 1) == Some(&':') {
            i += 2;
            if chars.get(i) == Some(&'{') {
                i += 1;
                let mut all = Vec::new();
                loop {
                    while chars.get(i).is_some_and(|c| c.is_whitespace() || *c == ',') {
                        i += 1;
                    }
                    match chars.get(i) {
                        None => break,
                        Some('}') => {
                            i += 1;
                            break;
                        }
                        Some(_) => {
                            let (inner, end) = tree(chars, i);
                            for path in inner {
                                all.push(prefix.iter().cloned().chain(path).collect());
                            }
                            // Skip what is not a path (`as x`, `*`).
                            i = end.max(i + 1);
                            while chars.get(i).is_some_and(|c| !matches!(c, ',' | '}')) {
                                i += 1;
                            }
                        }
                    }
                }
                return (all, i);
            }
        } else {
            break;
        }
    }
    match prefix.is_empty() {
        true => (Vec::new(), i),
        false => (vec![prefix], i),
    }
}

/// `path` (starting with `crate`, `super` or `self`) from the crate root,
/// for a file of module `module`.
fn absolute(path: &[String], module: &[String]) -> Option<Vec<String>> {
    let mut base: Vec<String> = module.to_vec();
    let mut rest = path;
    match rest.first().map(String::as_str) {
        Some("crate") => {
            base.clear();
            rest = &rest[1..];
        }
        Some("self") => rest = &rest[1..],
        Some("super") => {
            while rest.first().map(String::as_str) == Some("super") {
                base.pop()?;
                rest = &rest[1..];
            }
        }
        _ => return None,
    }
    Some(base.into_iter().chain(rest.iter().cloned()).collect())
}

/// What a file re-exports from its child modules: `pub use child::…::Name`
/// (and `use` trees of them), as (name, child).
fn reexported(code: &str) -> Vec<(String, String)> {
    let mut found = Vec::new();
    for statement in code.split(';') {
        let statement = statement.trim();
        let Some(rest) = statement
            .strip_prefix("pub use ")
            .or_else(|| statement.strip_prefix("pub(crate) use "))
        else {
            continue;
        };
        let rest = rest.trim_start_matches("self::");
        let chars: Vec<char> = rest.chars().collect();
        for path in tree(&chars, 0).0 {
            if path.len() >= 2 {
                let name = path.last().unwrap().clone();
                found.push((name, path[0].clone()));
            }
        }
    }
    found
}
