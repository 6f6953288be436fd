//! What the tests that read the workspace's own code share: the members
//! the workspace lists, the `.rs` files under a folder, and a file's code
//! with its comments, the contents of its string and char literals and its
//! `#[cfg(test)] mod … { … }` blocks blanked. Blanking keeps every line
//! break, so an offset in the code is on the same line as in the file.

use std::path::{Path, PathBuf};

/// The members listed in the workspace's `Cargo.toml`.
pub fn workspace_members(root: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with("members"))
        .expect("a members line");
    let members: Vec<String> = line
        .split('"')
        .skip(1)
        .step_by(2)
        .map(str::to_owned)
        .collect();
    assert!(members.len() > 5, "the workspace lists its crates: {line}");
    members
}

/// Every `.rs` file under `dir`, pushed onto `found`.
pub fn rust_files(dir: &Path, found: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, found);
        } else if path.extension().is_some_and(|e| e == "rs") {
            found.push(path);
        }
    }
}

/// The code of a file: comments and the contents of string and char
/// literals blanked, `#[cfg(test)] mod … { … }` blocks cut; each line
/// break of what is blanked or cut is kept.
pub fn code_of(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    // Drops `chars[from..to]`, keeping its line breaks.
    let breaks = |out: &mut String, from: usize, to: usize| {
        let to = to.min(chars.len());
        let from = from.min(to);
        out.extend(chars[from..to].iter().filter(|c| **c == '\n'));
    };
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let start = i;
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            breaks(&mut out, start, i);
        } else if c == 'r' && (next == Some('"') || next == Some('#')) && !raw_prefixed(&chars, i) {
            // A raw string: r"…" or r#"…"# (br"…" too).
            let mut j = i + 1;
            let mut hashes = 0;
            while chars.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            if chars.get(j) != Some(&'"') {
                out.push(c);
                i += 1;
                continue;
            }
            j += 1;
            let start = j;
            let closing: String = std::iter::once('"')
                .chain("#".repeat(hashes).chars())
                .collect();
            while j < chars.len() && !chars[j..].iter().collect::<String>().starts_with(&closing) {
                j += 1;
            }
            out.push_str("\"\"");
            breaks(&mut out, start, j);
            i = j + closing.len();
        } else if c == '"' {
            i += 1;
            let start = i;
            while i < chars.len() && chars[i] != '"' {
                if chars[i] == '\\' {
                    i += 1;
                }
                i += 1;
            }
            out.push_str("\"\"");
            breaks(&mut out, start, i);
            i += 1;
        } else if c == '\'' {
            // A char literal ('x', '\n', '\'', '\u{..}') or a lifetime ('a).
            if next == Some('\\') {
                i += 3;
                while i < chars.len() && chars[i] != '\'' {
                    i += 1;
                }
                i += 1;
                out.push_str("' '");
            } else if chars.get(i + 2) == Some(&'\'') {
                i += 3;
                out.push_str("' '");
            } else {
                out.push(c);
                i += 1;
            }
        } else {
            out.push(c);
            i += 1;
        }
    }
    cut_test_modules(&out)
}

/// Whether the character before `i` is part of an identifier or a number.
pub fn ident_before(chars: &[char], i: usize) -> bool {
    i > 0 && (chars[i - 1].is_alphanumeric() || chars[i - 1] == '_')
}

/// Whether the `r` at `i` is part of a word rather than a raw string's
/// start (`br"…"` is a raw byte string).
fn raw_prefixed(chars: &[char], i: usize) -> bool {
    let byte = i > 0 && chars[i - 1] == 'b' && !ident_before(chars, i - 1);
    ident_before(chars, i) && !byte
}

/// The code without its `#[cfg(test)] mod name { … }` blocks (their line
/// breaks kept).
fn cut_test_modules(code: &str) -> String {
    let mut out = String::new();
    let mut rest = code;
    while let Some(at) = rest.find("#[cfg(test)]") {
        let after = &rest[at + "#[cfg(test)]".len()..];
        let trimmed = after.trim_start();
        let is_block = trimmed
            .strip_prefix("mod ")
            .and_then(|m| m.find(['{', ';']).map(|end| m.as_bytes()[end] == b'{'))
            .unwrap_or(false);
        if !is_block {
            out.push_str(&rest[..at + "#[cfg(test)]".len()]);
            rest = after;
            continue;
        }
        out.push_str(&rest[..at]);
        let open =
            at + "#[cfg(test)]".len() + (after.len() - trimmed.len()) + trimmed.find('{').unwrap();
        let mut depth = 0;
        let mut end = rest.len();
        for (offset, ch) in rest[open..].char_indices() {
            match ch {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = open + offset + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        out.extend(rest[at..end].chars().filter(|c| *c == '\n'));
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}
