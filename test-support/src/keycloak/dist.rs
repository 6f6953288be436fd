//! Where a Keycloak distribution and its JDK are, and whether it is built
//! for the tests ([`KEYCLOAK_BUILD`]).

use std::path::{Path, PathBuf};

use super::KEYCLOAK_BUILD;

/// Where a Keycloak distribution and its JDK are.
#[derive(Clone, Debug)]
pub struct KeycloakDist {
    /// The unpacked distribution (holding `bin/kc.sh`).
    pub home: PathBuf,
    /// The JDK to run it on; `None`: `kc.sh` finds `java` itself.
    pub java_home: Option<PathBuf>,
}

impl KeycloakDist {
    /// `MESH_KEYCLOAK_HOME` (and `MESH_KEYCLOAK_JAVA_HOME`), else the newest
    /// `keycloak-*` folder of `${XDG_CACHE_HOME:-~/.cache}/mesh/keycloak`;
    /// `Err` says why there is none.
    pub fn find() -> Result<KeycloakDist, String> {
        let java_home = env_path("MESH_KEYCLOAK_JAVA_HOME");
        if let Some(home) = env_path("MESH_KEYCLOAK_HOME") {
            if !home.join("bin/kc.sh").is_file() {
                return Err(format!(
                    "MESH_KEYCLOAK_HOME={} holds no bin/kc.sh",
                    home.display()
                ));
            }
            return KeycloakDist { home, java_home }.built();
        }
        let cache = env_path("XDG_CACHE_HOME")
            .or_else(|| env_path("HOME").map(|home| home.join(".cache")))
            .ok_or("neither MESH_KEYCLOAK_HOME nor HOME is set")?
            .join("mesh/keycloak");
        let mut found: Vec<PathBuf> = std::fs::read_dir(&cache)
            .map(|entries| {
                entries
                    .filter_map(Result::ok)
                    .map(|entry| entry.path())
                    .filter(|path| {
                        let name = path.file_name().unwrap_or_default().to_string_lossy();
                        name.starts_with("keycloak-")
                            && !name.ends_with(".partial")
                            && path.join("bin/kc.sh").is_file()
                    })
                    .collect()
            })
            .unwrap_or_default();
        found.sort_by_key(|path| version_key(path));
        match found.pop() {
            Some(home) => KeycloakDist { home, java_home }.built(),
            None => Err(format!(
                "MESH_KEYCLOAK_HOME is unset and {} holds no unpacked Keycloak; \
                 run scripts/test (its ensure_keycloak fetches one with Maven)",
                cache.display()
            )),
        }
    }
}

impl KeycloakDist {
    /// This distribution when it is built with [`KEYCLOAK_BUILD`].
    fn built(self) -> Result<KeycloakDist, String> {
        let marker = self.home.join(".mesh-build");
        match std::fs::read_to_string(&marker) {
            Ok(built) if built.trim() == KEYCLOAK_BUILD => Ok(self),
            _ => Err(format!(
                "{} is not built for these tests ({} does not say {KEYCLOAK_BUILD:?}); \
                 run scripts/test, whose ensure_keycloak runs `kc.sh build {KEYCLOAK_BUILD}` once",
                self.home.display(),
                marker.display()
            )),
        }
    }
}

fn env_path(name: &str) -> Option<PathBuf> {
    std::env::var_os(name)
        .filter(|value| !value.is_empty())
        .map(PathBuf::from)
}

/// `keycloak-26.5.6` → `[26, 5, 6]`, for picking the newest.
fn version_key(path: &Path) -> Vec<u64> {
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    name.trim_start_matches("keycloak-")
        .split('.')
        .map(|part| part.parse().unwrap_or(0))
        .collect()
}
