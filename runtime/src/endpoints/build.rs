//! `mesh_build_info{binary, version} 1`: which binary, of which version,
//! answers a scrape. Set once per process by the program shell
//! ([`crate::Program::version`]); a program that serves the endpoints
//! without the shell says its executable's name and version `unknown`.
//!
//! No git commit: the package is built from a source tree that need not be
//! a git checkout (a release tarball, a Debian source package), so a commit
//! read at build time would be missing or wrong there; the version is the
//! package's.

use std::sync::OnceLock;

use prometheus_client::encoding::text::encode_registry;
use prometheus_client::metrics::info::Info;
use prometheus_client::registry::Registry;

/// Which binary of which version this process is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BuildInfo {
    /// The binary's name, e.g. `mesh-controller`.
    pub binary: String,
    /// Its version, e.g. `0.1.0`.
    pub version: String,
}

static BUILD: OnceLock<BuildInfo> = OnceLock::new();

impl BuildInfo {
    /// Sets this process's build info; the first call wins.
    pub fn set(binary: &str, version: &str) {
        let _ = BUILD.set(BuildInfo {
            binary: binary.to_owned(),
            version: version.to_owned(),
        });
    }

    /// This process's build info: as set, else the executable's file name
    /// and version `unknown`.
    pub fn current() -> BuildInfo {
        BUILD.get().cloned().unwrap_or_else(|| BuildInfo {
            binary: std::env::current_exe()
                .ok()
                .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
                .unwrap_or_else(|| "unknown".to_owned()),
            version: "unknown".to_owned(),
        })
    }

    /// The `mesh_build` family in OpenMetrics text, without `# EOF`.
    pub fn openmetrics(&self) -> String {
        let mut registry = Registry::with_prefix("mesh");
        registry.register(
            "build",
            "Which mesh binary and version answers (always 1)",
            Info::new(vec![
                ("binary".to_owned(), self.binary.clone()),
                ("version".to_owned(), self.version.clone()),
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
        };
        let text = with_build_info("# TYPE mesh_x gauge\nmesh_x 1\n# EOF\n", &build);
        assert_eq!(
            text,
            "# TYPE mesh_x gauge\nmesh_x 1\n\
             # HELP mesh_build Which mesh binary and version answers (always 1).\n\
             # TYPE mesh_build info\n\
             mesh_build_info{binary=\"mesh-grants\",version=\"0.1.0\"} 1\n\
             # EOF\n"
        );
        assert_eq!(
            with_build_info("# EOF\n", &build).matches("# EOF").count(),
            1
        );
    }
}
