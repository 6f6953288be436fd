//! `mesh_build_info{binary, version, commit, profile} 1`: which binary, of
//! which version, built from which commit with which cargo profile, answers
//! a scrape; [`BuildInfo::version_text`] is the same for `--version`. The binary and
//! version are set once per process by the program shell
//! ([`crate::Program::version`]); a program that serves the endpoints
//! without the shell says its executable's name and version `unknown`.
//!
//! The commit is the one `scripts/package` read with `git rev-parse` and
//! handed to the build in `MESH_BUILD_COMMIT` (with `-dirty` when tracked
//! files had changes); a build without it (a plain `cargo build`, a source
//! tree that is no git checkout) says `unknown`. The profile is `release`
//! or `debug`.

use std::sync::OnceLock;

use prometheus_client::encoding::text::encode_registry;
use prometheus_client::metrics::info::Info;
use prometheus_client::registry::Registry;

/// Which binary of which version and build this process is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BuildInfo {
    /// The binary's name, e.g. `mesh-controller`.
    pub binary: String,
    /// Its version, e.g. `0.1.0`.
    pub version: String,
    /// The commit it was built from, e.g. `cfd4883a1b2c`, or `unknown`.
    pub commit: String,
    /// The cargo profile it was built with: `release` or `debug`.
    pub profile: String,
}

fn version_line(version: &str, commit: &str, profile: &str) -> String {
    format!("{version} (commit {commit}, {profile} build)")
}

static BUILD: OnceLock<BuildInfo> = OnceLock::new();

impl BuildInfo {
    /// The commit this build is of (`MESH_BUILD_COMMIT` at build time), or `unknown`.
    pub const COMMIT: &'static str = env!("MESH_BUILD_COMMIT");

    /// The cargo profile of this build: `release` or `debug`.
    pub const PROFILE: &'static str = env!("MESH_BUILD_PROFILE");

    /// What `--version` prints after the binary's name: `version` with this
    /// build's commit and profile, e.g. `0.1.0 (commit cfd4883a1b2c, release
    /// build)`. The first call's text is kept for the process (one process,
    /// one version).
    pub fn version_text(version: &str) -> &'static str {
        static TEXT: OnceLock<String> = OnceLock::new();
        TEXT.get_or_init(|| version_line(version, Self::COMMIT, Self::PROFILE))
    }

    /// Sets this process's build info; the first call wins.
    pub fn set(binary: &str, version: &str) {
        let _ = BUILD.set(BuildInfo {
            binary: binary.to_owned(),
            version: version.to_owned(),
            commit: Self::COMMIT.to_owned(),
            profile: Self::PROFILE.to_owned(),
        });
    }

    /// This process's build info: as set, else the executable's file name
    /// and version `unknown` (the commit and profile are this build's).
    pub fn current() -> BuildInfo {
        BUILD.get().cloned().unwrap_or_else(|| BuildInfo {
            binary: std::env::current_exe()
                .ok()
                .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
                .unwrap_or_else(|| "unknown".to_owned()),
            version: "unknown".to_owned(),
            commit: Self::COMMIT.to_owned(),
            profile: Self::PROFILE.to_owned(),
        })
    }

    /// The `mesh_build` family in OpenMetrics text, without `# EOF`.
    pub fn openmetrics(&self) -> String {
        let mut registry = Registry::with_prefix("mesh");
        registry.register(
            "build",
            "Which mesh binary, version, commit and build profile answers (always 1)",
            Info::new(vec![
                ("binary".to_owned(), self.binary.clone()),
                ("version".to_owned(), self.version.clone()),
                ("commit".to_owned(), self.commit.clone()),
                ("profile".to_owned(), self.profile.clone()),
            ]),
        );
        let mut text = String::new();
        encode_registry(&mut text, &registry).expect("writing to a String cannot fail");
        text
    }
}

/// `openmetrics` (a whole OpenMetrics text, ending in `# EOF`) with the
/// `mesh_build` family of `build` added before its end.
pub(crate) fn with_build_info(openmetrics: &str, build: &BuildInfo) -> String {
    let body = openmetrics
        .strip_suffix("# EOF\n")
        .or_else(|| openmetrics.strip_suffix("# EOF"))
        .unwrap_or(openmetrics);
    let mut text = String::with_capacity(body.len() + 200);
    text.push_str(body);
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str(&build.openmetrics());
    text.push_str("# EOF\n");
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_build_family_goes_before_the_end() {
        let build = BuildInfo {
            binary: "mesh-grants".into(),
            version: "0.1.0".into(),
            commit: "cfd4883a1b2c".into(),
            profile: "release".into(),
        };
        let text = with_build_info("# TYPE mesh_x gauge\nmesh_x 1\n# EOF\n", &build);
        assert_eq!(
            text,
            "# TYPE mesh_x gauge\nmesh_x 1\n\
             # HELP mesh_build Which mesh binary, version, commit and build profile answers (always 1).\n\
             # TYPE mesh_build info\n\
             mesh_build_info{binary=\"mesh-grants\",version=\"0.1.0\",commit=\"cfd4883a1b2c\",profile=\"release\"} 1\n\
             # EOF\n"
        );
        assert_eq!(
            with_build_info("# EOF\n", &build).matches("# EOF").count(),
            1
        );
    }

    #[test]
    fn the_version_line_says_the_commit_and_the_profile() {
        for (version, commit, profile, line) in [
            (
                "0.1.0",
                "cfd4883a1b2c",
                "release",
                "0.1.0 (commit cfd4883a1b2c, release build)",
            ),
            (
                "0.1.0",
                "cfd4883a1b2c-dirty",
                "release",
                "0.1.0 (commit cfd4883a1b2c-dirty, release build)",
            ),
            (
                "0.2.0",
                "unknown",
                "debug",
                "0.2.0 (commit unknown, debug build)",
            ),
        ] {
            assert_eq!(version_line(version, commit, profile), line);
        }
        // This build's: a commit (or `unknown`) and a profile, never empty.
        assert!(
            !BuildInfo::COMMIT.is_empty() && BuildInfo::COMMIT.chars().all(|c| !c.is_whitespace())
        );
        assert!(
            BuildInfo::PROFILE == "debug" || BuildInfo::PROFILE == "release",
            "{}",
            BuildInfo::PROFILE
        );
        assert_eq!(
            BuildInfo::version_text("0.1.0"),
            format!(
                "0.1.0 (commit {}, {} build)",
                BuildInfo::COMMIT,
                BuildInfo::PROFILE
            )
        );
        assert_eq!(BuildInfo::current().profile, BuildInfo::PROFILE);
    }
}
