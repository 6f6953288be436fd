//! The store's read-only role (`migrate --reader ROLE`): what `status`,
//! `node show`, `history` and the console log in as, so that whoever may
//! read the store cannot change or drop it.
//!
//! Run as the store's owner (the user `serve` logs in as), `migrate
//! --reader` grants the role `CONNECT` on the store's database, `USAGE` on
//! schema `public`, `SELECT` on every table there, and, as a default
//! privilege of the owner, `SELECT` on each table a later migration makes;
//! it revokes any other table privilege the role held. A role that is
//! missing is made (`LOGIN`, no attribute) when a password is given, which
//! needs a runner that may create roles (`CREATEROLE`); the password goes
//! to the server as a SCRAM-SHA-256 verifier, never in clear. A role that
//! is a superuser or a member of the owner is refused: it would not be
//! read-only. With `--reader-records` (the console's role, when a person
//! may note and act from it) the role may also insert rows into
//! `history`, and change or remove none.

use std::fmt;

use super::connection::{classify, connect_client};
use super::options::DatabaseOptions;
use super::PgError;

/// A role name `migrate --reader` takes: 1 to 63 bytes of `a-z`, `0-9` and
/// `_`, not starting with a digit, and not `pg_`-prefixed (PostgreSQL's
/// own), so it never needs quoting beyond the double quotes it gets.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RoleName(String);

impl RoleName {
    /// Checks `text`.
    ///
    /// # Errors
    /// [`RoleNameError`], which says what is wrong with it.
    pub fn parse(text: &str) -> Result<RoleName, RoleNameError> {
        let valid = (1..=63).contains(&text.len())
            && text
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
            && !text.starts_with(|c: char| c.is_ascii_digit());
        if !valid {
            return Err(RoleNameError::Characters);
        }
        if text.starts_with("pg_") {
            return Err(RoleNameError::PostgresOwn);
        }
        Ok(RoleName(text.to_owned()))
    }

    /// The name.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A text that cannot be a [`RoleName`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RoleNameError {
    /// Too long, empty, or other characters.
    #[error("a role name is 1 to 63 of a-z, 0-9 and _, not starting with a digit")]
    Characters,
    /// `pg_` names are reserved.
    #[error("names starting with pg_ are PostgreSQL's own")]
    PostgresOwn,
}

impl fmt::Display for RoleName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// What `grant_reader` did to the role.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReaderMade {
    /// The role was there; its privileges were set.
    Granted,
    /// The role was made with the password given, then granted.
    Made,
}

/// Why the reader role could not be set up. None is retried: each needs a
/// person (or a store that answers).
#[derive(Debug, thiserror::Error)]
pub enum ReaderError {
    /// The store failed.
    #[error(transparent)]
    Store(#[from] PgError),
    /// The role is missing and no password was given to make it with.
    #[error(
        "the role {role} does not exist: give --reader-password-file to make it, or make it \
         as a superuser (CREATE ROLE {role} LOGIN; then \\password {role} in psql)"
    )]
    Missing {
        /// The role.
        role: RoleName,
    },
    /// The role is missing and the runner may not create roles.
    #[error(
        "the role {role} does not exist and {runner} may not make it (it lacks CREATEROLE): \
         make it as a superuser (CREATE ROLE {role} LOGIN; then \\password {role} in psql) \
         and run migrate --reader {role} again"
    )]
    CannotMake {
        /// The role.
        role: RoleName,
        /// Who ran migrate.
        runner: String,
    },
    /// The role could write or drop the store through its attributes or
    /// memberships.
    #[error("the role {role} is not read-only ({why}): give a role of its own to --reader")]
    NotReadOnly {
        /// The role.
        role: RoleName,
        /// What it has.
        why: &'static str,
    },
}

/// What the reader may do besides reading.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReaderRights {
    /// Read, nothing more (`status`, `node show`, `history`, a console
    /// that only looks).
    Read,
    /// Read, and add rows to `history` (a person's notes and actions from
    /// the console, `migrate --reader-records`): never change or remove one.
    ReadAndRecord,
}

/// The statements that make `role` a reader of database `database`, in
/// order: the grants, the revokes of what else it held on tables, then
/// with [`ReaderRights::ReadAndRecord`] the one insert it may do.
pub(crate) fn grant_statements(
    role: &RoleName,
    database: &str,
    rights: ReaderRights,
) -> Vec<String> {
    let role = quoted(role.as_str());
    let database = quoted(database);
    let record = (rights == ReaderRights::ReadAndRecord)
        .then(|| format!("GRANT INSERT ON history TO {role}"));
    let mut statements = vec![
        format!("GRANT CONNECT ON DATABASE {database} TO {role}"),
        format!("GRANT USAGE ON SCHEMA public TO {role}"),
        format!(
            "REVOKE INSERT, UPDATE, DELETE, TRUNCATE, REFERENCES, TRIGGER \
             ON ALL TABLES IN SCHEMA public FROM {role}"
        ),
        format!("GRANT SELECT ON ALL TABLES IN SCHEMA public TO {role}"),
        format!("ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT SELECT ON TABLES TO {role}"),
    ];
    statements.extend(record);
    statements
}

/// `CREATE ROLE` for a reader logging in with the password whose SCRAM
/// verifier is `verifier`.
pub(crate) fn create_statement(role: &RoleName, verifier: &str) -> String {
    format!(
        "CREATE ROLE {} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS \
         PASSWORD {}",
        quoted(role.as_str()),
        literal(verifier)
    )
}

fn quoted(identifier: &str) -> String {
    format!("\"{}\"", identifier.replace('"', "\"\""))
}

fn literal(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

/// Makes `role` the store's reader (see the module docs), making the role
/// first when it is missing and `password` is given.
///
/// # Errors
/// [`ReaderError`]: the store failed, or the role is missing and cannot be
/// made, or it is not read-only.
pub async fn grant_reader(
    options: &DatabaseOptions,
    role: &RoleName,
    password: Option<&str>,
    rights: ReaderRights,
) -> Result<ReaderMade, ReaderError> {
    let client = connect_client(options).await?;
    let failed = |source| ReaderError::Store(classify(options.shown.clone(), source));
    let row = client
        .query_one("SELECT current_user::text, current_database()::text", &[])
        .await
        .map_err(failed)?;
    let (runner, database): (String, String) = (row.get(0), row.get(1));
    let found = client
        .query_opt(
            "SELECT rolsuper OR rolbypassrls OR rolcreaterole, pg_has_role($1::name, current_user, 'MEMBER') \
             FROM pg_roles WHERE rolname = $1::name",
            &[&role.as_str()],
        )
        .await
        .map_err(failed)?;
    let made = match found {
        Some(row) => {
            if row.get::<_, bool>(0) {
                return Err(ReaderError::NotReadOnly {
                    role: role.clone(),
                    why: "it is a superuser, bypasses row security or may create roles",
                });
            }
            if row.get::<_, bool>(1) {
                return Err(ReaderError::NotReadOnly {
                    role: role.clone(),
                    why: "it is a member of the store's owner",
                });
            }
            ReaderMade::Granted
        }
        None => {
            let password = password.ok_or_else(|| ReaderError::Missing { role: role.clone() })?;
            let verifier = postgres_protocol::password::scram_sha_256(password.as_bytes());
            match client
                .batch_execute(&create_statement(role, &verifier))
                .await
            {
                Ok(()) => ReaderMade::Made,
                Err(error)
                    if error.code()
                        == Some(&tokio_postgres::error::SqlState::INSUFFICIENT_PRIVILEGE) =>
                {
                    return Err(ReaderError::CannotMake {
                        role: role.clone(),
                        runner,
                    })
                }
                Err(error) => return Err(failed(error)),
            }
        }
    };
    for statement in grant_statements(role, &database, rights) {
        client.batch_execute(&statement).await.map_err(failed)?;
    }
    Ok(made)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn role_names_are_plain_lowercase_identifiers() {
        for good in ["mesh_reader", "r", "reader_2", &"a".repeat(63)] {
            assert_eq!(RoleName::parse(good).unwrap().as_str(), good);
        }
        for bad in [
            "",
            "Mesh",
            "mesh-reader",
            "2reader",
            "a b",
            "r\"x",
            &"a".repeat(64),
            "pg_read_all_data",
        ] {
            assert!(RoleName::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn the_reader_may_connect_and_select_and_nothing_more() {
        let role = RoleName::parse("mesh_reader").unwrap();
        assert_eq!(
            grant_statements(&role, "mesh \"store\"", ReaderRights::Read),
            [
                "GRANT CONNECT ON DATABASE \"mesh \"\"store\"\"\" TO \"mesh_reader\"",
                "GRANT USAGE ON SCHEMA public TO \"mesh_reader\"",
                "REVOKE INSERT, UPDATE, DELETE, TRUNCATE, REFERENCES, TRIGGER ON ALL TABLES IN \
                 SCHEMA public FROM \"mesh_reader\"",
                "GRANT SELECT ON ALL TABLES IN SCHEMA public TO \"mesh_reader\"",
                "ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT SELECT ON TABLES TO \"mesh_reader\"",
            ]
        );
        let recording = grant_statements(&role, "mesh", ReaderRights::ReadAndRecord);
        assert_eq!(
            recording.last().map(String::as_str),
            Some("GRANT INSERT ON history TO \"mesh_reader\""),
            "the one insert, after the revoke: {recording:?}"
        );
        assert_eq!(recording.len(), 6);
        assert_eq!(
            create_statement(&role, "SCRAM-SHA-256$4096:c2FsdA==$a'b"),
            "CREATE ROLE \"mesh_reader\" LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION \
             NOBYPASSRLS PASSWORD 'SCRAM-SHA-256$4096:c2FsdA==$a''b'"
        );
    }
}
