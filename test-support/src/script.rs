//! Executable scripts a test writes and then runs.

use std::io::Write;
use std::path::Path;

/// Writes the executable script `path` holding `text` (its `#!` line
/// included). A `sh` child writes it, not the test process: a file the
/// test process held open for writing is inherited by a child another test
/// thread forks meanwhile, and running the script before that child's exec
/// closes it fails with `Text file busy` (ETXTBSY).
///
/// Panics when the script cannot be written.
pub fn write_script(path: &Path, text: &str) {
    let mut writer = std::process::Command::new("/bin/sh")
        .arg("-c")
        .arg("cat > \"$0\" && chmod 0755 \"$0\"")
        .arg(path)
        .stdin(std::process::Stdio::piped())
        .spawn()
        .expect("starting sh to write a script");
    writer
        .stdin
        .take()
        .expect("its stdin")
        .write_all(text.as_bytes())
        .expect("writing the script");
    assert!(
        writer.wait().expect("sh ends").success(),
        "writing {path:?}"
    );
}
