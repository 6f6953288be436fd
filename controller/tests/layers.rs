//! The controller's modules import only downwards: model, then the I/O
//! edges (store, bus), then what drives them (link, approve, permissions),
//! then report, render and cli. A module that names a module of its own
//! layer or above (other than itself) would allow a cycle; this test reads
//! every source file and refuses it.

use std::collections::BTreeMap;
use std::path::Path;

const LAYERS: &[&[&str]] = &[
    &["model"],
    &["store", "bus"],
    &["link", "approve", "permissions"],
    &["report"],
    &["render"],
    &["cli"],
];

fn layer(module: &str) -> Option<usize> {
    LAYERS.iter().position(|layer| layer.contains(&module))
}

/// Every `crate::<module>` a text names.
fn named(text: &str) -> Vec<String> {
    text.match_indices("crate::")
        .map(|(at, _)| {
            text[at + "crate::".len()..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect()
        })
        .collect()
}

fn files(dir: &Path, found: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files(&path, found);
        } else if path.extension().is_some_and(|e| e == "rs") {
            found.push(path);
        }
    }
}

#[test]
fn imports_go_down_only() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut found = Vec::new();
    files(&src, &mut found);
    let mut modules = BTreeMap::new();
    let mut wrong = Vec::new();
    for path in found {
        let relative = path.strip_prefix(&src).unwrap();
        let top = relative
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_string_lossy()
            .trim_end_matches(".rs")
            .to_owned();
        if top == "lib" || top == "main" {
            continue;
        }
        let own = layer(&top).unwrap_or_else(|| panic!("{top} is in no layer: add it to LAYERS"));
        let text = std::fs::read_to_string(&path).unwrap();
        for name in named(&text) {
            if name == top {
                continue;
            }
            *modules.entry(top.clone()).or_insert(0) += 1;
            match layer(&name) {
                Some(theirs) if theirs < own => {}
                _ => wrong.push(format!("{} names crate::{name}", relative.display())),
            }
        }
    }
    assert!(wrong.is_empty(), "imports going up or sideways: {wrong:#?}");
    // The test reads what it should: the upper layers do name lower ones.
    for module in ["store", "link", "report", "render", "cli"] {
        assert!(
            modules.get(module).is_some_and(|&n| n > 0),
            "{module} names nothing below it"
        );
    }
}
