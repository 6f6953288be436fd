//! Where screenshots are kept, and what a PNG says its size is.

use std::path::{Path, PathBuf};

/// Where a test's screenshots are kept: `screenshots/{test}` in the
/// target folder the test binary was built in (`target/` of the workspace,
/// or `CARGO_TARGET_DIR`), made when missing.
pub fn screenshots_dir(test: &str) -> PathBuf {
    let target = std::env::current_exe()
        .ok()
        .and_then(|exe| target_of(&exe))
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../target"));
    let dir = target.join("screenshots").join(test);
    std::fs::create_dir_all(&dir).unwrap_or_else(|err| panic!("creating {}: {err}", dir.display()));
    dir
}

/// The target folder of a test binary at `TARGET/PROFILE/deps/NAME`.
fn target_of(exe: &Path) -> Option<PathBuf> {
    let deps = exe.parent()?;
    if deps.file_name()? != "deps" {
        return None;
    }
    Some(deps.parent()?.parent()?.to_path_buf())
}

/// The width and height a PNG's header says, or `None` when `png` is not
/// a PNG (its signature, then the IHDR chunk).
pub fn png_size(png: &[u8]) -> Option<(u32, u32)> {
    const SIGNATURE: &[u8] = b"\x89PNG\r\n\x1a\n";
    if png.len() < 24 || !png.starts_with(SIGNATURE) || &png[12..16] != b"IHDR" {
        return None;
    }
    let word = |at: usize| u32::from_be_bytes([png[at], png[at + 1], png[at + 2], png[at + 3]]);
    Some((word(16), word(20)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(width: u32, height: u32) -> Vec<u8> {
        let mut png = b"\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR".to_vec();
        png.extend(width.to_be_bytes());
        png.extend(height.to_be_bytes());
        png.extend([8, 6, 0, 0, 0]);
        png
    }

    #[test]
    fn a_png_header_gives_its_size() {
        assert_eq!(png_size(&header(1280, 900)), Some((1280, 900)));
        assert_eq!(png_size(&header(390, 1)), Some((390, 1)));
    }

    #[test]
    fn what_is_not_a_png_has_no_size() {
        let good = header(1280, 900);
        assert_eq!(png_size(&good[..23]), None, "cut short");
        let mut wrong_signature = good.clone();
        wrong_signature[1] = b'J';
        assert_eq!(png_size(&wrong_signature), None);
        let mut wrong_chunk = good.clone();
        wrong_chunk[12..16].copy_from_slice(b"IDAT");
        assert_eq!(png_size(&wrong_chunk), None);
        assert_eq!(png_size(b""), None);
    }

    #[test]
    fn a_test_binary_names_its_target_folder() {
        let exe = Path::new("/w/target/debug/deps/browser-0123abcd");
        assert_eq!(target_of(exe), Some(PathBuf::from("/w/target")));
        assert_eq!(target_of(Path::new("/usr/bin/cargo")), None);
        assert_eq!(target_of(Path::new("deps")), None);
    }
}
