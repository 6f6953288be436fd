//! The build's commit and profile, for `--version` and `mesh_build_info`.
//!
//! The commit comes from `MESH_BUILD_COMMIT`, which `scripts/package` sets
//! from `git rev-parse` (`unknown` outside a git checkout); a build without
//! it says `unknown`. Reading git here instead would rebuild this crate,
//! and every crate above it, at each commit of a development checkout.

fn main() {
    println!("cargo:rerun-if-env-changed=MESH_BUILD_COMMIT");
    let commit = std::env::var("MESH_BUILD_COMMIT").unwrap_or_default();
    // Only what may stand in a label value and a version line, cut short.
    let commit: String = commit
        .trim()
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_'))
        .take(64)
        .collect();
    let commit = if commit.is_empty() {
        "unknown".to_owned()
    } else {
        commit
    };
    println!("cargo:rustc-env=MESH_BUILD_COMMIT={commit}");
    // `release` for --release (and profiles inheriting it), `debug` otherwise.
    let profile = match std::env::var("PROFILE").as_deref() {
        Ok("release") => "release",
        _ => "debug",
    };
    println!("cargo:rustc-env=MESH_BUILD_PROFILE={profile}");
}
