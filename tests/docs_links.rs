//! Every relative link of the project's docs leads somewhere: each
//! `[text](path#anchor)` in README.md and docs/**/*.md names a file or
//! folder of the repository, and its anchor, when it has one, a heading of
//! that file (or an `<a id>` / `<a name>` in it). An anchor alone
//! (`#anchor`) is one of the linking file's own. Links inside code (fenced
//! blocks and code spans) are text, not links; links with a scheme
//! (`https:`, `mailto:`, ...) are not followed.
//!
//! Anchors are GitHub's: a heading's text, its inline code's backticks and
//! a link's target dropped, lowercased, every character that is neither a
//! letter, a digit, `_`, `-` nor a space dropped, each space made `-`; a
//! second heading of the same slug gets `-1`, a third `-2`.
//!
//! The test only reads files (no process, no network). It asserts
//! that it read the index of docs/contracts/ and found links there, so it
//! cannot pass by reading nothing.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// GitHub's anchor of a heading whose (rendered) text is `text`.
fn slug(text: &str) -> String {
    text.chars()
        .flat_map(char::to_lowercase)
        .filter(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | ' '))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The text of a markdown file without its code: fenced code blocks
/// blanked and code spans removed.
fn prose(markdown: &str) -> String {
    without_code_spans(&outside_fences(markdown))
}

/// The text of a markdown file with its fenced code blocks blanked (their
/// lines kept empty, so line numbers stay).
fn outside_fences(markdown: &str) -> String {
    let mut out = String::new();
    let mut fence: Option<(char, usize)> = None;
    for line in markdown.lines() {
        let trimmed = line.trim_start();
        let indent = line.len() - trimmed.len();
        let marker = trimmed.chars().next().filter(|c| *c == '`' || *c == '~');
        let run = marker.map_or(0, |m| trimmed.chars().take_while(|c| *c == m).count());
        match (fence, marker) {
            (None, Some(m)) if indent <= 3 && run >= 3 => fence = Some((m, run)),
            (Some((m, n)), Some(c)) if c == m && run >= n && trimmed.trim_end().len() == run => {
                fence = None
            }
            (None, _) => out.push_str(line),
            _ => {}
        }
        out.push('\n');
    }
    out
}

/// `text` without its code spans: a run of backticks up to the next run of
/// the same length (CommonMark); a run never closed is literal text.
fn without_code_spans(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find('`') {
        out.push_str(&rest[..start]);
        let run = rest[start..].chars().take_while(|c| *c == '`').count();
        let after = &rest[start + run..];
        match closing_run(after, run) {
            Some(end) => rest = &after[end + run..],
            None => {
                out.push_str(&rest[start..start + run]);
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// Where in `text` a run of exactly `run` backticks begins, if any.
fn closing_run(text: &str, run: usize) -> Option<usize> {
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'`' {
            let n = bytes[i..].iter().take_while(|b| **b == b'`').count();
            if n == run {
                return Some(i);
            }
            i += n;
        } else {
            i += 1;
        }
    }
    None
}

/// Every link destination of `prose` (as [`prose`] gives it), with its line
/// number: what stands between `](` and the closing `)`, a title left out.
fn destinations(prose: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    for (number, line) in prose.lines().enumerate() {
        let mut rest = line;
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            let Some(end) = after.find(')') else { break };
            let target = after[..end].split_whitespace().next().unwrap_or("");
            let target = target.trim_start_matches('<').trim_end_matches('>');
            found.push((number + 1, target.to_string()));
            rest = &after[end..];
        }
    }
    found
}

/// The anchors a markdown file offers: its headings' slugs (repeats
/// numbered) and its `<a id="…">` / `<a name="…">`.
fn anchors(markdown: &str) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    for line in outside_fences(markdown).lines() {
        let trimmed = line.trim_start();
        let level = trimmed.chars().take_while(|c| *c == '#').count();
        if line.len() - trimmed.len() <= 3
            && (1..=6).contains(&level)
            && trimmed[level..].chars().next().is_none_or(|c| c == ' ')
        {
            let text = heading_text(trimmed[level..].trim().trim_end_matches('#').trim());
            let base = slug(&text);
            let mut anchor = base.clone();
            let mut n = 0;
            while seen.contains(&anchor) {
                n += 1;
                anchor = format!("{base}-{n}");
            }
            seen.insert(anchor);
        }
        for key in ["<a id=\"", "<a name=\""] {
            let mut rest = line;
            while let Some(at) = rest.find(key) {
                let after = &rest[at + key.len()..];
                let Some(end) = after.find('"') else { break };
                seen.insert(after[..end].to_string());
                rest = &after[end..];
            }
        }
    }
    seen
}

/// A heading's rendered text: links `[text](target)` kept as `text`,
/// code spans' backticks and emphasis markers `*` dropped.
fn heading_text(raw: &str) -> String {
    let mut out = String::new();
    let mut rest = raw;
    while let Some(at) = rest.find("](") {
        let after = &rest[at + 2..];
        let Some(end) = after.find(')') else { break };
        out.push_str(&rest[..at]);
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    out.replace(['[', '*', '`'], "")
}

/// The markdown files the test reads: README.md and docs/**/*.md.
fn markdown_files(root: &Path) -> Vec<PathBuf> {
    fn walk(dir: &Path, into: &mut Vec<PathBuf>) {
        let mut entries: Vec<_> = std::fs::read_dir(dir)
            .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
            .map(|entry| entry.unwrap().path())
            .collect();
        entries.sort();
        for path in entries {
            if path.is_dir() {
                walk(&path, into);
            } else if path.extension().is_some_and(|e| e == "md") {
                into.push(path);
            }
        }
    }
    let mut files = vec![root.join("README.md")];
    walk(&root.join("docs"), &mut files);
    files
}

/// What is wrong with the link `target` of the file `from` (None: nothing).
fn broken(from: &Path, text: &str, target: &str) -> Option<String> {
    if target.is_empty() {
        return Some("an empty link".to_string());
    }
    let scheme = target.split_once(':').map(|(s, _)| s);
    if scheme.is_some_and(|s| {
        !s.is_empty()
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || "+.-".contains(c))
    }) {
        return None;
    }
    let (path, anchor) = match target.split_once('#') {
        Some((path, anchor)) => (path, Some(anchor)),
        None => (target, None),
    };
    let file = if path.is_empty() {
        from.to_path_buf()
    } else {
        from.parent().unwrap().join(path)
    };
    if !file.exists() {
        return Some(format!("{} does not exist", file.display()));
    }
    let anchor = anchor?;
    let markdown = if file.is_dir() {
        file.join("README.md")
    } else {
        file.clone()
    };
    if path.is_empty() {
        return (!anchors(text).contains(anchor)).then(|| format!("no heading #{anchor} here"));
    }
    if markdown.extension().is_none_or(|e| e != "md") || !markdown.is_file() {
        return Some(format!(
            "#{anchor} on {}, which is no markdown file",
            file.display()
        ));
    }
    let target_text = std::fs::read_to_string(&markdown).unwrap();
    (!anchors(&target_text).contains(anchor))
        .then(|| format!("{} has no heading #{anchor}", markdown.display()))
}

#[test]
fn every_relative_link_of_the_docs_names_a_file_and_a_heading_that_exist() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let files = markdown_files(root);
    let index = root.join("docs/contracts/README.md");
    assert!(
        files.contains(&index),
        "the contracts' index {} is not read",
        index.display()
    );
    let mut problems = Vec::new();
    let mut links_in_index = 0;
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        for (line, target) in destinations(&prose(&text)) {
            if *file == index {
                links_in_index += 1;
            }
            if let Some(why) = broken(file, &text, &target) {
                let shown = file.strip_prefix(root).unwrap().display();
                let why = why.replace(&format!("{}/", root.display()), "");
                problems.push(format!("{shown}:{line}: ({target}): {why}"));
            }
        }
    }
    assert!(
        links_in_index > 10,
        "the contracts' index has {links_in_index} links"
    );
    assert!(
        problems.is_empty(),
        "broken links:\n{}",
        problems.join("\n")
    );
}

#[test]
fn slugs_follow_github() {
    assert_eq!(slug("The `MESH_EVENTS` stream"), "the-mesh_events-stream");
    assert_eq!(
        slug("Standing: what is said per consumer"),
        "standing-what-is-said-per-consumer"
    );
    assert_eq!(
        slug("Conformance (`mesh-provide conform`)"),
        "conformance-mesh-provide-conform"
    );
    assert_eq!(
        slug("Grants (`mesh-grants`, record 143)"),
        "grants-mesh-grants-record-143"
    );
    assert_eq!(slug("A — B"), "a--b");
    assert_eq!(slug("Écrit 2.0"), "écrit-20");
}

#[test]
fn headings_give_anchors_and_repeats_are_numbered() {
    let text = "# Title\n\n## `history`\n\n## Setup\n\n```\n# not a heading\n```\n\n## Setup\n\
                ## [Linked](x.md) *term*\n#nospace\n<a id=\"kept\"></a>\n";
    let got: Vec<String> = anchors(text).into_iter().collect();
    assert_eq!(
        got,
        [
            "history",
            "kept",
            "linked-term",
            "setup",
            "setup-1",
            "title"
        ]
    );
}

#[test]
fn links_in_code_are_text() {
    let text = "see [a](a.md#x) and `[b](b.md)`\n```\n[c](c.md)\n```\n``[d](d.md)`` [e](<e.md> \"title\")\n";
    let got: Vec<String> = destinations(&prose(text))
        .into_iter()
        .map(|(_, t)| t)
        .collect();
    assert_eq!(got, ["a.md#x", "e.md"]);
}

#[test]
fn a_link_is_broken_when_its_file_or_heading_is_missing() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let from = root.join("docs/contracts/README.md");
    let text = "# Here\n";
    assert_eq!(broken(&from, text, "bus.md#bodies"), None);
    assert_eq!(broken(&from, text, "#here"), None);
    assert_eq!(broken(&from, text, "https://example.org/#nothing"), None);
    assert_eq!(broken(&from, text, "../kits"), None);
    assert!(broken(&from, text, "bus.md#no-such-heading")
        .unwrap()
        .contains("no heading #no-such-heading"));
    assert!(broken(&from, text, "nowhere.md")
        .unwrap()
        .contains("does not exist"));
    assert!(broken(&from, text, "#elsewhere")
        .unwrap()
        .contains("no heading #elsewhere"));
}
