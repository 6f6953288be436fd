//! No source file of the workspace grows past `LIMIT` lines of non-test
//! code, so a file stays one concern a reader can hold.
//!
//! The test walks the workspace (every `.rs` file outside `target/`,
//! hidden folders and `tests/` folders, which hold only tests) and counts
//! the lines of each file before its first `#[cfg(test)]`: the code that
//! ships, with its docs and comments. A file in `ALLOWED` may stay over
//! the limit until it is split; the list may only shrink, so a listed
//! file that is back under the limit (or gone) fails the test until it
//! leaves the list. It asserts that it found the workspace's files, so it
//! cannot pass vacuously.

use std::path::{Path, PathBuf};

/// The most lines of non-test code a source file may hold.
const LIMIT: usize = 600;

/// Files over the limit that are yet to be split, by their path from the
/// workspace root (none today).
const ALLOWED: &[&str] = &[];

/// The lines of `source` before its first `#[cfg(test)]`.
fn non_test_lines(source: &str) -> usize {
    source
        .lines()
        .take_while(|line| !line.trim_start().starts_with("#[cfg(test)]"))
        .count()
}

/// Every `.rs` file under `dir`, outside `target/`, hidden folders and
/// `tests/` folders.
fn source_files(dir: &Path, found: &mut Vec<PathBuf>) {
    let entries =
        std::fs::read_dir(dir).unwrap_or_else(|error| panic!("reading {}: {error}", dir.display()));
    for entry in entries {
        let path = entry.expect("a directory entry").path();
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        if path.is_dir() {
            let skipped = name.starts_with('.')
                || matches!(name.as_ref(), "target" | "tests" | "node_modules");
            if !skipped {
                source_files(&path, found);
            }
        } else if name.ends_with(".rs") {
            found.push(path);
        }
    }
}

#[test]
fn no_source_file_holds_more_than_the_limit_of_non_test_code() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    source_files(root, &mut files);
    let relative = |path: &Path| {
        path.strip_prefix(root)
            .expect("a file under the root")
            .to_string_lossy()
            .into_owned()
    };
    let names: Vec<String> = files.iter().map(|path| relative(path)).collect();
    for known in [
        "mesh-sdk/src/lib.rs",
        "status/src/lib.rs",
        "controller/build.rs",
    ] {
        assert!(
            names.iter().any(|name| name == known),
            "the walk missed {known}, so it cannot be trusted ({} files found)",
            names.len()
        );
    }
    assert!(
        !names.iter().any(|name| name.starts_with("tests/")),
        "test files were counted"
    );
    let mut over = Vec::new();
    for (path, name) in files.iter().zip(&names) {
        let source =
            std::fs::read_to_string(path).unwrap_or_else(|error| panic!("reading {name}: {error}"));
        let lines = non_test_lines(&source);
        let allowed = ALLOWED.contains(&name.as_str());
        if lines > LIMIT && !allowed {
            over.push(format!("{name}: {lines} lines"));
        }
        if allowed && lines <= LIMIT {
            over.push(format!(
                "{name}: {lines} lines, under the limit now: take it off ALLOWED"
            ));
        }
    }
    for listed in ALLOWED {
        assert!(
            names.iter().any(|name| name == listed),
            "{listed} is on ALLOWED but no longer exists: take it off"
        );
    }
    assert!(
        over.is_empty(),
        "source files over {LIMIT} lines of non-test code (lines before the first \
         #[cfg(test)]); split them by concern:\n{}",
        over.join("\n")
    );
}

#[test]
fn the_count_stops_at_the_first_test_module() {
    let cases = [
        ("", 0),
        ("fn a() {}\n", 1),
        ("fn a() {}\n\n// note\nfn b() {}\n", 4),
        ("fn a() {}\n#[cfg(test)]\nmod tests {\n}\n", 1),
        (
            "fn a() {}\n    #[cfg(test)]\n    fn helper() {}\n#[cfg(test)]\nmod tests {}\n",
            1,
        ),
        ("#[cfg(test)]\nmod tests {}\n", 0),
        ("#[cfg(not(test))]\nfn a() {}\n", 2),
    ];
    for (source, lines) in cases {
        assert_eq!(non_test_lines(source), lines, "{source:?}");
    }
}
