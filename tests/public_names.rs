//! No two public types of the workspace share a name, so a type's name
//! alone (in a doc, in `cargo doc`'s search, on a `use` line, in a review)
//! says which type it is.
//!
//! The test reads every `.rs` file under the `src/` of every crate the
//! workspace lists, outside comments, strings and `#[cfg(test)] mod`
//! blocks (`workspace_src::code_of`, shared with tests/layers.rs), and
//! collects each `pub struct`, `pub enum`, `pub trait`, `pub type` and
//! `pub union` (plain `pub`: not `pub(crate)`, `pub(super)` or
//! `pub(in …)`). It fails listing every name that two or more of them
//! declare, each with its file and line. There is no allow-list. It
//! asserts that it found a workspace's worth of items, and items it knows
//! are there, so it cannot pass by reading nothing.
//!
//! Why a check of our own: neither rustc nor clippy looks across crates
//! (each crate is compiled alone), and no crate boundary forbids two crates
//! from naming a type alike.

use std::collections::BTreeMap;
use std::path::Path;

mod workspace_src;

use workspace_src::{code_of, rust_files, workspace_members};

/// Fewer public types than this means the walk missed files.
const AT_LEAST: usize = 200;

/// The item kinds counted, as the keyword that declares them.
const KINDS: &[&str] = &["struct", "enum", "trait", "type", "union"];

/// Each public type `code` (as `code_of` gives it) declares: its name and
/// its line, from 1.
fn public_types(code: &str) -> Vec<(String, usize)> {
    let word_at = |at: usize| -> &str {
        let rest = &code[at..];
        let end = rest
            .find(|c: char| !(c.is_alphanumeric() || c == '_'))
            .unwrap_or(rest.len());
        &rest[..end]
    };
    let skip_space = |at: usize| at + (code[at..].len() - code[at..].trim_start().len());
    let mut found = Vec::new();
    for (at, _) in code.match_indices("pub") {
        let before = code[..at].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') || word_at(at) != "pub" {
            continue;
        }
        // Plain `pub`: `pub(crate)` and the like stop here, at the `(`.
        let mut next = skip_space(at + 3);
        if next == at + 3 {
            continue;
        }
        if word_at(next) == "unsafe" {
            next = skip_space(next + "unsafe".len());
        }
        let kind = word_at(next);
        if !KINDS.contains(&kind) {
            continue;
        }
        let name_at = skip_space(next + kind.len());
        let name = word_at(name_at);
        if name_at == next + kind.len() || name.is_empty() {
            continue;
        }
        let line = code[..at].matches('\n').count() + 1;
        found.push((name.to_owned(), line));
    }
    found
}

#[test]
fn no_two_public_types_share_a_name() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut by_name: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut items = 0;
    for member in workspace_members(root) {
        let src = root.join(&member).join("src");
        // The root package holds only tests and examples.
        if !src.is_dir() {
            continue;
        }
        let mut files = Vec::new();
        rust_files(&src, &mut files);
        files.sort();
        assert!(!files.is_empty(), "{member}: no file under src/");
        for path in files {
            let text = std::fs::read_to_string(&path)
                .unwrap_or_else(|error| panic!("reading {}: {error}", path.display()));
            let relative = path.strip_prefix(root).unwrap().display().to_string();
            for (name, line) in public_types(&code_of(&text)) {
                items += 1;
                by_name
                    .entry(name)
                    .or_default()
                    .push(format!("{relative}:{line}"));
            }
        }
    }
    assert!(
        items >= AT_LEAST,
        "only {items} public types found (at least {AT_LEAST} expected): the walk missed files"
    );
    for known in ["Provisioner", "Declaration", "Secret", "Timestamp"] {
        assert!(
            by_name.contains_key(known),
            "the walk missed `{known}`, so it cannot be trusted ({items} public types found)"
        );
    }
    let shared: Vec<String> = by_name
        .iter()
        .filter(|(_, places)| places.len() > 1)
        .map(|(name, places)| format!("{name}\n    {}", places.join("\n    ")))
        .collect();
    assert!(
        shared.is_empty(),
        "{} names are each declared by more than one public type ({items} public types read); \
         give each type a name that says what it is in its crate's terms:\n{}",
        shared.len(),
        shared.join("\n")
    );
}

#[test]
fn the_reading_finds_plain_pub_types_on_their_lines() {
    let source = r##"//! Docs: pub struct InDocs;
pub struct Plain;
pub(crate) struct Crate;
pub(super) enum Super {}
pub(in crate::a) struct In;
pub enum Generic<T> { A(T) }
pub   type
    Spread = u8;
/* pub struct InBlock;
   pub struct StillInBlock; */
pub trait Bound: Send {}
pub unsafe trait Unsafe {}
pub union Joined { a: u8 }
pub fn function() {}
pub mod module {}
pub const Constant: u8 = 0;
const TEXT: &str = "pub struct InString;";
const RAW: &str = r#"pub struct InRaw;"#;
macro_rules! make { ($name:ident) => { pub struct $name; } }
repub struct NotPub;
    pub struct Nested;
#[cfg(test)]
mod tests {
    pub struct InTests;
}
pub struct AfterTests;
"##;
    let found = public_types(&code_of(source));
    let expected: Vec<(String, usize)> = [
        ("Plain", 2),
        ("Generic", 6),
        ("Spread", 7),
        ("Bound", 11),
        ("Unsafe", 12),
        ("Joined", 13),
        ("Nested", 21),
        ("AfterTests", 26),
    ]
    .into_iter()
    .map(|(name, line)| (name.to_owned(), line))
    .collect();
    assert_eq!(found, expected);
}
