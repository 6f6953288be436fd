//! The SDK's public surface stays small: every public item is a promise to
//! provider authors, so a build with default features offers at most
//! `LIMIT` names at its root, and at most `LIMIT` items in all, counted as
//! `cargo doc`'s "all items" page counts them (a public module's items in
//! place of the module).
//!
//! The test reads `src/lib.rs` and counts the names its root makes public:
//! each `pub mod`, each item declared `pub` there, each leaf of a `pub use`
//! tree; for all items it reads each public module's file the same way.
//! Items behind a `#[cfg(...)]` that names a feature (`testing`, `conform`)
//! are not in a default build and are not counted; `testing` has a limit
//! of its own. It asserts that it found the names it knows must be there,
//! so it cannot pass vacuously.
//!
//! Why a check of our own: no lint counts a crate's public names (clippy
//! and `unreachable_pub` find what is public by accident, not how much is
//! promised), and a semver checker compares releases rather than bounding
//! one.

use std::collections::BTreeSet;

/// The most public names a default build of `mesh-sdk` offers at its root,
/// and the most items in all (26 since `ModuleId`: the provider instance
/// every `Provisioner` call is made for is in the trait's signature; 27
/// since `Served`, what `ensure` and `check` return, where `take_mended`
/// was a method beside them).
const LIMIT: usize = 27;

/// The most names `mesh_sdk::testing` (feature `testing`) offers: what a
/// provider author's tests need, a promise like the root's. The SDK's own
/// fakes and rules, for its tests and the simulator, are in the
/// undocumented `internals` (feature `internals`) and not counted.
const TESTING_LIMIT: usize = 24;

/// The public names at the root of `source` (a crate's `lib.rs`, or a
/// module's file) in a build with default features: items at brace depth
/// 0 only (a method in an `impl` block is its type's, not a name).
fn root_names(source: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let mut gated = false;
    let mut statement = String::new();
    let mut depth = 0i64;
    for line in source.lines().map(str::trim) {
        if line.starts_with("//") || line.is_empty() {
            continue;
        }
        let at = depth;
        let code = line.split("//").next().unwrap_or(line);
        depth += code.matches('{').count() as i64 - code.matches('}').count() as i64;
        if statement.is_empty() && at > 0 {
            continue;
        }
        if statement.is_empty() {
            if line.starts_with("#[cfg(") && line.contains("feature") {
                gated = true;
                continue;
            }
            if line.starts_with("#") {
                continue;
            }
            if !line.starts_with("pub ") {
                gated = false;
                continue;
            }
        }
        statement.push_str(line);
        statement.push(' ');
        // A `use` tree ends at its `;`; another item at its body or `;`.
        let ended = match statement.starts_with("pub use ") {
            true => line.ends_with(';'),
            false => line.ends_with(';') || line.ends_with('{') || line.ends_with('}'),
        };
        if !ended {
            continue;
        }
        let item = std::mem::take(&mut statement);
        if !std::mem::take(&mut gated) {
            names.extend(item_names(item.trim()));
        }
    }
    names
}

/// The names one `pub` item declares at the root.
fn item_names(item: &str) -> Vec<String> {
    let item = item.strip_prefix("pub ").unwrap_or(item);
    if let Some(tree) = item.strip_prefix("use ") {
        return use_leaves(tree.trim_end_matches(';'));
    }
    const KEYWORDS: &[&str] = &[
        "mod", "fn", "struct", "enum", "trait", "type", "const", "static", "union",
    ];
    // `const fn`, `async fn`, `unsafe trait`: the name follows the last keyword.
    let tokens: Vec<&str> = item.split_whitespace().collect();
    for pair in tokens.windows(2) {
        if KEYWORDS.contains(&pair[0]) && !KEYWORDS.contains(&pair[1]) {
            let name = pair[1]
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            return vec![name];
        }
    }
    panic!("a public item this test cannot read: {item}")
}

/// The leaves of a `use` tree: `a::{b, c::{d, e as f}}` gives `b`, `d`, `f`.
fn use_leaves(tree: &str) -> Vec<String> {
    let tree = tree.trim();
    let Some(open) = tree.find('{') else {
        return match tree.split_once(" as ") {
            Some((_, alias)) => vec![alias.trim().to_owned()],
            None if tree.is_empty() => Vec::new(),
            None => vec![tree.rsplit("::").next().unwrap_or(tree).to_owned()],
        };
    };
    let inner = &tree[open + 1..tree.rfind('}').expect("a closed use tree")];
    let mut leaves = Vec::new();
    let (mut depth, mut start) = (0usize, 0usize);
    for (at, c) in inner.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                leaves.extend(use_leaves(&inner[start..at]));
                start = at + 1;
            }
            _ => {}
        }
    }
    leaves.extend(use_leaves(&inner[start..]));
    leaves
}

#[test]
fn the_root_offers_at_most_the_limit_by_default() {
    let source = include_str!("../src/lib.rs");
    let names = root_names(source);
    for known in [
        "Provisioner",
        "ProviderMain",
        "Secret",
        "run_until",
        "async_trait",
    ] {
        assert!(
            names.contains(known),
            "the count missed `{known}`, so it cannot be trusted: {names:?}"
        );
    }
    for gated in ["testing", "conform"] {
        assert!(
            !names.contains(gated),
            "`{gated}` is behind a feature and not in a default build: {names:?}"
        );
    }
    assert!(
        names.len() <= LIMIT,
        "mesh-sdk offers {} public names at its root by default, more than {LIMIT}: {names:?}",
        names.len()
    );
}

/// The items of a default build as `cargo doc`'s "all items" page lists
/// them: the root's names, each public module of the crate replaced by its
/// own items (`redact::cut`).
fn all_items(source: &str) -> BTreeSet<String> {
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut items = BTreeSet::new();
    for name in root_names(source) {
        let declared = source
            .lines()
            .any(|line| line.trim() == format!("pub mod {name};"));
        if !declared {
            items.insert(name);
            continue;
        }
        let file = [
            src.join(format!("{name}.rs")),
            src.join(&name).join("mod.rs"),
        ]
        .into_iter()
        .find(|path| path.exists())
        .unwrap_or_else(|| panic!("the file of `pub mod {name}`"));
        let inner = std::fs::read_to_string(&file).unwrap();
        items.extend(
            root_names(&inner)
                .into_iter()
                .map(|item| format!("{name}::{item}")),
        );
    }
    items
}

#[test]
fn all_items_are_at_most_the_limit_by_default() {
    let items = all_items(include_str!("../src/lib.rs"));
    for known in ["Provisioner", "redact::error_text", "redact::cut"] {
        assert!(
            items.contains(known),
            "the count missed `{known}`, so it cannot be trusted: {items:?}"
        );
    }
    assert!(
        !items.contains("redact"),
        "a module is counted by its items, not itself: {items:?}"
    );
    assert!(
        items.len() <= LIMIT,
        "mesh-sdk offers {} public items by default (cargo doc's all items), more than \
         {LIMIT}: {items:?}",
        items.len()
    );
}

#[test]
fn testing_offers_what_a_provider_authors_tests_need_within_its_limit() {
    let names = root_names(include_str!("../src/testing.rs"));
    for known in [
        "Runner",
        "Settings",
        "Outbox",
        "LogCapture",
        "hold_clock",
        "conform",
        "passes",
    ] {
        assert!(
            names.contains(known),
            "the count missed `{known}`, so it cannot be trusted: {names:?}"
        );
    }
    for internal in ["FakeProvisioner", "Standing", "Source", "RecordingSink"] {
        assert!(
            !names.contains(internal),
            "`{internal}` is the SDK's own, not a provider author's: {names:?}"
        );
    }
    assert!(
        names.len() <= TESTING_LIMIT,
        "mesh_sdk::testing offers {} names, more than {TESTING_LIMIT}: {names:?}",
        names.len()
    );
}

#[test]
fn the_count_reads_use_trees_items_and_gates() {
    let source = r#"
//! Docs.
mod private;
#[cfg(feature = "testing")]
pub mod testing;
pub mod open;
pub use a::{b, c::{d, e as renamed}};
pub use f::G;
pub use h::{
    i,
    j::K,
};
pub const fn made() {}
pub struct Plain;
"#;
    let names: Vec<String> = root_names(source).into_iter().collect();
    assert_eq!(
        names,
        ["G", "K", "Plain", "b", "d", "i", "made", "open", "renamed"]
    );
}
