//! Secrets handed over by systemd: a unit's `LoadCredential=NAME:PATH`
//! copies the file PATH (root's, mode 0600, which the unit's user cannot
//! read) into a folder only that unit's processes may read, named in
//! `$CREDENTIALS_DIRECTORY`, as the file `NAME` there.
//!
//! A binary's secrets stay `*_FILE` flags and variables. Before it parses
//! its command line, [`into_environment`] sets each such variable that is
//! not set to the file of the credential standing in for it, when the
//! process has that credential. So a secret's file is, in this order: its
//! flag, its `MESH_*_FILE` variable, its systemd credential. The shipped
//! units load each one from `/etc/mesh/credentials/<unit>/<name>`.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

/// The variable systemd names the unit's credentials folder in.
pub const DIRECTORY_VARIABLE: &str = "CREDENTIALS_DIRECTORY";

/// A systemd credential standing in for a `*_FILE` variable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StandIn {
    /// The variable, e.g. `MESH_NATS_PASSWORD_FILE`.
    pub variable: &'static str,
    /// The credential's name, e.g. `nats-password`.
    pub credential: &'static str,
    /// Only when this variable is set too (the user a password goes with).
    pub with: Option<&'static str>,
    /// Never when this variable is set (another way of logging in).
    pub unless: Option<&'static str>,
}

/// The bus user's password, when the bus user is given (`MESH_NATS_USER`).
pub const NATS_PASSWORD: StandIn = StandIn {
    variable: "MESH_NATS_PASSWORD_FILE",
    credential: "nats-password",
    with: Some("MESH_NATS_USER"),
    unless: None,
};

/// The store user's password (`--database-password-file`): the
/// controller's and the console's.
pub const DATABASE_PASSWORD: StandIn = StandIn {
    variable: "MESH_DATABASE_PASSWORD_FILE",
    credential: "database-password",
    with: None,
    unless: None,
};

/// Sets each variable of `stand_ins` that is not set to its credential's
/// file, when this process has that credential (a file of its name in
/// `$CREDENTIALS_DIRECTORY`) and the stand-in's conditions hold.
///
/// Call it first in `main`, before any thread starts: it changes the
/// process's environment, which threads must not read meanwhile.
pub fn into_environment(stand_ins: &[StandIn]) {
    let dir = std::env::var_os(DIRECTORY_VARIABLE);
    let set = |name: &str| std::env::var_os(name).is_some_and(|v| !v.is_empty());
    for (variable, file) in chosen(stand_ins, dir.as_deref(), set, Path::is_file) {
        std::env::set_var(variable, file);
    }
}

/// The variables to set and the files they name: pure, for the tests.
fn chosen(
    stand_ins: &[StandIn],
    dir: Option<&OsStr>,
    set: impl Fn(&str) -> bool,
    exists: impl Fn(&Path) -> bool,
) -> Vec<(&'static str, PathBuf)> {
    let Some(dir) = dir.map(Path::new).filter(|dir| dir.is_absolute()) else {
        return Vec::new();
    };
    stand_ins
        .iter()
        .filter(|s| !set(s.variable))
        .filter(|s| s.with.is_none_or(&set))
        .filter(|s| !s.unless.is_some_and(&set))
        .filter(|s| is_plain_name(s.credential))
        .map(|s| (s.variable, dir.join(s.credential)))
        .filter(|(_, file)| exists(file))
        .collect()
}

/// When `path` is a file of a unit's credentials folder `dir` (what
/// systemd names in `$CREDENTIALS_DIRECTORY`, `/run/credentials/UNIT.service`):
/// the unit, without `.service`, and the credential's name. Such a file is
/// the copy systemd made when the unit started: a secret changed in its
/// `LoadCredential=` file reaches the program at the unit's next start only.
pub fn unit_credential(path: &Path, dir: Option<&Path>) -> Option<(String, String)> {
    let dir = dir.filter(|d| d.is_absolute())?;
    let name = path.strip_prefix(dir).ok()?.to_str()?;
    if !is_plain_name(name) {
        return None;
    }
    let unit = dir.file_name()?.to_str()?;
    let unit = unit.strip_suffix(".service").unwrap_or(unit);
    Some((unit.to_owned(), name.to_owned()))
}

/// [`unit_credential`] of this process's `$CREDENTIALS_DIRECTORY`.
pub fn credential_of(path: &Path) -> Option<(String, String)> {
    let dir = std::env::var_os(DIRECTORY_VARIABLE)?;
    unit_credential(path, Some(Path::new(&dir)))
}

fn is_plain_name(name: &str) -> bool {
    !name.is_empty() && !name.contains('/') && name != "." && name != ".."
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_file_of_the_units_credentials_names_the_unit_and_the_credential() {
        use super::unit_credential;
        let dir = Path::new("/run/credentials/mesh-postgres@db-1.service");
        let cases = [
            (
                "/run/credentials/mesh-postgres@db-1.service/admin-password",
                Some(dir),
                Some(("mesh-postgres@db-1", "admin-password")),
            ),
            ("/etc/mesh/admin-password", Some(dir), None),
            (
                "/run/credentials/mesh-postgres@db-1.service/a/b",
                Some(dir),
                None,
            ),
            (
                "/run/credentials/mesh-postgres@db-1.service/admin-password",
                None,
                None,
            ),
            ("x/admin-password", Some(Path::new("x")), None),
        ];
        for (path, dir, expected) in cases {
            let got = unit_credential(Path::new(path), dir);
            let expected = expected.map(|(u, n)| (u.to_owned(), n.to_owned()));
            assert_eq!(got, expected, "{path}");
        }
    }

    use super::*;

    const ADMIN: StandIn = StandIn {
        variable: "MESH_KEYCLOAK_ADMIN_PASSWORD_FILE",
        credential: "admin-password",
        with: None,
        unless: Some("MESH_KEYCLOAK_ADMIN_CLIENT_ID"),
    };
    const DIR: &str = "/run/credentials/mesh-identity@id-1.service";

    #[test]
    fn a_credential_stands_in_for_an_unset_variable_when_its_conditions_hold() {
        let loaded = |file: &Path| {
            [
                format!("{DIR}/nats-password"),
                format!("{DIR}/admin-password"),
            ]
            .iter()
            .any(|f| Path::new(f) == file)
        };
        let nats = || {
            (
                NATS_PASSWORD.variable,
                PathBuf::from(format!("{DIR}/nats-password")),
            )
        };
        let admin = || {
            (
                ADMIN.variable,
                PathBuf::from(format!("{DIR}/admin-password")),
            )
        };
        let both = [NATS_PASSWORD, ADMIN];
        for (dir, set, expected) in [
            // Under a unit with both credentials and the bus user set.
            (Some(DIR), &["MESH_NATS_USER"][..], vec![nats(), admin()]),
            // No bus user: its password would be half of a login.
            (Some(DIR), &[], vec![admin()]),
            // A variable already set wins over the credential.
            (
                Some(DIR),
                &["MESH_NATS_USER", "MESH_NATS_PASSWORD_FILE"],
                vec![admin()],
            ),
            // Another way of logging in is given.
            (
                Some(DIR),
                &["MESH_NATS_USER", "MESH_KEYCLOAK_ADMIN_CLIENT_ID"],
                vec![nats()],
            ),
            // Not under systemd, or a folder that is not absolute.
            (None, &["MESH_NATS_USER"], vec![]),
            (Some("run/credentials/x"), &["MESH_NATS_USER"], vec![]),
            (Some(""), &["MESH_NATS_USER"], vec![]),
        ] {
            let is_set = |name: &str| set.contains(&name);
            assert_eq!(
                chosen(&both, dir.map(OsStr::new), is_set, loaded),
                expected,
                "{dir:?} {set:?}"
            );
        }
        // A credential the unit does not load is no stand-in.
        let none_loaded = |_: &Path| false;
        assert!(chosen(&both, Some(OsStr::new(DIR)), |_| true, none_loaded).is_empty());
        let odd = StandIn {
            credential: "../other.service/nats-password",
            ..NATS_PASSWORD
        };
        assert!(chosen(
            &[odd],
            Some(OsStr::new(DIR)),
            |n| n == "MESH_NATS_USER",
            |_| true
        )
        .is_empty());
    }
}
