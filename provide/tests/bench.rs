//! `mesh-provide bench` over a real hook (tests/hooks/folders.sh, exec
//! mode; a serve hook of a few lines): it measures each size, prints one
//! line per mode and size, and leaves nothing of its own behind.

use std::path::Path;
use std::process::Command;

fn bench(root: &Path, hook: &Path, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_mesh-provide"))
        .arg("bench")
        .arg("--hook")
        .arg(hook)
        .args(args)
        .env("FOLDERS_ROOT", root)
        .output()
        .expect("mesh-provide runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The folders under `root` whose name (or whose children's) starts `bench-`.
fn left(root: &Path) -> Vec<String> {
    let mut left = Vec::new();
    for entry in walk(root) {
        let name = entry.file_name().unwrap().to_string_lossy().into_owned();
        if name.starts_with("bench-") {
            left.push(name);
        }
    }
    left
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut all = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            all.extend(walk(&path));
        }
        all.push(path);
    }
    all
}

#[test]
fn a_bench_of_an_exec_hook_prints_each_size_and_leaves_nothing() {
    let root = tempfile::tempdir().unwrap();
    let hook = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/hooks/folders.sh");
    let (code, out, err) = bench(
        root.path(),
        &hook,
        &["--hook-mode", "exec", "--consumers", "3,5", "--runs", "2"],
    );
    assert_eq!(code, 0, "{out}{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines[0].starts_with("mesh-provide bench: "), "{out}");
    assert!(
        lines[0].ends_with("(2 counted passes a size, 16 calls at once)"),
        "{out}"
    );
    assert!(
        lines[1].starts_with("exec       3 consumers: a pass "),
        "{out}"
    );
    assert!(
        lines[2].starts_with("exec       5 consumers: a pass "),
        "{out}"
    );
    for line in &lines[1..] {
        assert!(
            line.contains(" ms median, ") && line.contains(" ms p99"),
            "{line}"
        );
    }
    assert_eq!(lines.len(), 3, "{out}");
    assert_eq!(left(root.path()), Vec::<String>::new(), "cleaned up");
}

#[test]
fn a_bench_of_a_serve_hook_and_one_whose_check_fails() {
    let dir = tempfile::tempdir().unwrap();
    let hook = dir.path().join("serve.sh");
    std::fs::write(
        &hook,
        r#"#!/bin/sh
[ "$1" = serve ] || { echo '{"unsupported":true}'; exit 0; }
while IFS= read -r line; do
  id=$(printf '%s' "$line" | sed -n 's/.*"id":\([0-9]*\).*/\1/p')
  case "$line" in
    *'"verb":"held"'*) printf '{"id":%s,"held":[]}\n' "$id" ;;
    *'"verb":"check"'*'"name":"bench-'*'-0002"'*) printf '{"id":%s,"ok":false,"class":"refused","error":"no"}\n' "$id" ;;
    *) printf '{"id":%s,"ok":true}\n' "$id" ;;
  esac
done
"#,
    )
    .unwrap();
    Command::new("chmod")
        .arg("0755")
        .arg(&hook)
        .status()
        .unwrap();
    let (code, out, err) = bench(
        dir.path(),
        &hook,
        &["--hook-mode", "serve", "--consumers", "2", "--runs", "1"],
    );
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("\nserve      2 consumers: a pass "), "{out}");
    let (code, out, err) = bench(
        dir.path(),
        &hook,
        &["--hook-mode", "serve", "--consumers", "3", "--runs", "1"],
    );
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        err.contains("serve mode: check of bench-") && err.contains("-0002 failed"),
        "{err}"
    );
}
