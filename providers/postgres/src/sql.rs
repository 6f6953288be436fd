//! The SQL the provider sends, built from names without any I/O.
//!
//! Identifiers cannot be bound as parameters, so every name is quoted with
//! [`escape_identifier`] (on top of the SDK's name rule) and refused when
//! PostgreSQL would cut it (over 63 bytes). Literals are quoted with
//! [`escape_literal`]. A password never appears here in plaintext: only its
//! SCRAM verifier, computed on the client.

use postgres_protocol::escape::{escape_identifier, escape_literal};

use crate::error::PostgresError;

/// Longest identifier PostgreSQL keeps whole, in bytes (`NAMEDATALEN - 1`);
/// a longer one is cut silently, so it is refused.
pub const MAX_IDENTIFIER_BYTES: usize = 63;

/// The role every role the provider made is a member of: its mark.
pub const MARKER_ROLE: &str = "mesh_provisioned";

/// The comment the provider puts on every database it made.
pub fn database_comment(name: &str) -> String {
    format!("made by mesh-postgres for consumer {name}; owned by the role of the same name")
}

/// The comment the provider puts on every role it made.
pub fn role_comment(name: &str) -> String {
    format!("made by mesh-postgres for consumer {name}")
}

/// `name` as a quoted SQL identifier.
///
/// # Errors
/// [`PostgresError::BadName`] when the name is empty or longer than 63 bytes
/// (PostgreSQL would silently cut it and name something else).
pub fn ident(name: &str) -> Result<String, PostgresError> {
    if name.is_empty() {
        return Err(PostgresError::BadName {
            name: shown(name),
            reason: "it is empty",
        });
    }
    if name.len() > MAX_IDENTIFIER_BYTES {
        return Err(PostgresError::BadName {
            name: shown(name),
            reason: "it is longer than 63 bytes, and PostgreSQL would cut it",
        });
    }
    Ok(escape_identifier(name))
}

/// A bounded, escaped copy of a name for error messages.
pub(crate) fn shown(name: &str) -> String {
    let cut: String = name.chars().take(80).collect();
    let mut out = format!("{cut:?}");
    if cut.len() < name.len() {
        out.push('…');
    }
    out
}

/// Makes the marker role, as one implicit transaction.
pub fn create_marker() -> String {
    let marker = escape_identifier(MARKER_ROLE);
    format!(
        "CREATE ROLE {marker} WITH NOLOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS; \
         COMMENT ON ROLE {marker} IS {}",
        escape_literal(
            "mesh-postgres marks every role it made by membership in this role; \
             it never lists, alters, retires or deletes any other role. Do not grant it by hand."
        )
    )
}

/// Makes the consumer's role with its password verifier and its mark, as
/// one implicit transaction: a role is never made without its mark. With
/// `admin_joins` (an administrator that is not a superuser) the
/// administrator is made a member of the role in the same transaction
/// (see [`grant_to_admin`]).
///
/// # Errors
/// [`PostgresError::BadName`] when the name cannot be an identifier.
pub fn create_role(name: &str, verifier: &str, admin_joins: bool) -> Result<String, PostgresError> {
    let role = ident(name)?;
    let join = if admin_joins {
        format!("{}; ", grant_to_admin(name)?)
    } else {
        String::new()
    };
    Ok(format!(
        "CREATE ROLE {role} WITH LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS \
         PASSWORD {} IN ROLE {}; {join}COMMENT ON ROLE {role} IS {}",
        escape_literal(verifier),
        escape_identifier(MARKER_ROLE),
        escape_literal(&role_comment(name)),
    ))
}

/// Makes the administrator (`CURRENT_USER`) a member of the consumer's
/// role. An administrator that is not a superuser needs it for what only
/// the role's owner or members may do: `CREATE DATABASE ... OWNER`, closing
/// and commenting the database, ending the role's sessions, dropping the
/// database. PostgreSQL 15 lets a `CREATEROLE` role grant it; granting it
/// again only says a notice.
///
/// # Errors
/// [`PostgresError::BadName`] when the name cannot be an identifier.
pub fn grant_to_admin(name: &str) -> Result<String, PostgresError> {
    Ok(format!("GRANT {} TO CURRENT_USER", ident(name)?))
}

/// Sets the role's password verifier.
///
/// # Errors
/// [`PostgresError::BadName`] when the name cannot be an identifier.
pub fn set_password(name: &str, verifier: &str) -> Result<String, PostgresError> {
    Ok(format!(
        "ALTER ROLE {} WITH PASSWORD {}",
        ident(name)?,
        escape_literal(verifier)
    ))
}

/// Makes the consumer's database, owned by its role (cannot run inside a
/// transaction, so it is a statement of its own).
///
/// # Errors
/// [`PostgresError::BadName`] when the name cannot be an identifier.
pub fn create_database(name: &str) -> Result<String, PostgresError> {
    let quoted = ident(name)?;
    Ok(format!("CREATE DATABASE {quoted} OWNER {quoted}"))
}

/// Finishes a new database: only its owner (and superusers) may connect or
/// make temporary tables, and the comment says who made it. One implicit
/// transaction; the comment comes last, so its presence proves the rest.
///
/// # Errors
/// [`PostgresError::BadName`] when the name cannot be an identifier.
pub fn finish_database(name: &str) -> Result<String, PostgresError> {
    let quoted = ident(name)?;
    Ok(format!(
        "REVOKE CONNECT, TEMPORARY ON DATABASE {quoted} FROM PUBLIC; \
         COMMENT ON DATABASE {quoted} IS {}",
        escape_literal(&database_comment(name))
    ))
}

/// Retires a role: no new logins, and its sessions ended.
///
/// # Errors
/// [`PostgresError::BadName`] when the name cannot be an identifier.
pub fn retire(name: &str) -> Result<String, PostgresError> {
    Ok(format!(
        "ALTER ROLE {} WITH NOLOGIN; \
         SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
         WHERE usename = {} AND pid <> pg_backend_pid()",
        ident(name)?,
        escape_literal(name)
    ))
}

/// Lets a retired role log in again.
///
/// # Errors
/// [`PostgresError::BadName`] when the name cannot be an identifier.
pub fn re_enable(name: &str) -> Result<String, PostgresError> {
    Ok(format!("ALTER ROLE {} WITH LOGIN", ident(name)?))
}

/// Drops the consumer's database, ending its sessions.
///
/// # Errors
/// [`PostgresError::BadName`] when the name cannot be an identifier.
pub fn drop_database(name: &str) -> Result<String, PostgresError> {
    Ok(format!(
        "DROP DATABASE IF EXISTS {} WITH (FORCE)",
        ident(name)?
    ))
}

/// Drops the consumer's role.
///
/// # Errors
/// [`PostgresError::BadName`] when the name cannot be an identifier.
pub fn drop_role(name: &str) -> Result<String, PostgresError> {
    Ok(format!("DROP ROLE IF EXISTS {}", ident(name)?))
}

/// What the backend holds under one name: `$1` is the name (text).
/// One row, always. The administrator itself is never marked (a hand-made
/// grant of `mesh_provisioned` to it must not make it a consumer's role).
pub const FIND: &str = "\
SELECT r.oid IS NOT NULL AS role_exists,
       COALESCE(r.rolcanlogin, false) AS can_login,
       COALESCE(r.rolsuper, false) AS superuser,
       r.rolname <> current_user
         AND EXISTS (SELECT 1 FROM pg_auth_members m JOIN pg_roles g ON g.oid = m.roleid
                     WHERE m.member = r.oid AND g.rolname = 'mesh_provisioned') AS marked,
       d.oid IS NOT NULL AS database_exists,
       COALESCE(d.datdba = r.oid, false) AS database_owned,
       shobj_description(d.oid, 'pg_database') AS database_comment,
       COALESCE(pg_has_role(current_user, r.oid, 'USAGE'), false) AS admin_member,
       (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) AS admin_superuser
FROM (SELECT $1::text AS name) AS wanted
LEFT JOIN pg_roles r ON r.rolname = wanted.name
LEFT JOIN pg_database d ON d.datname = wanted.name";

/// The administrator's own attributes: its name, whether it is a superuser,
/// may create roles, may create databases, inherits its roles' privileges.
pub const ADMIN_RIGHTS: &str = "\
SELECT rolname::text, rolsuper, rolcreaterole, rolcreatedb, rolinherit
FROM pg_roles WHERE rolname = current_user";

/// The marker role, if it exists: whether it can log in, whether it is a superuser.
pub const FIND_MARKER: &str =
    "SELECT rolcanlogin, rolsuper FROM pg_roles WHERE rolname = 'mesh_provisioned'";

/// Every role marked as made by the provider (direct members of the marker
/// role, never a superuser, never the administrator itself), with whether
/// it can log in.
pub const HELD: &str = "\
SELECT r.rolname::text, r.rolcanlogin
FROM pg_auth_members m
JOIN pg_roles g ON g.oid = m.roleid
JOIN pg_roles r ON r.oid = m.member
WHERE g.rolname = 'mesh_provisioned' AND NOT r.rolsuper AND r.rolname <> current_user
ORDER BY r.rolname";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_are_quoted_whatever_they_hold() {
        let cases = [
            ("forge", "\"forge\""),
            ("Forge", "\"Forge\""),
            ("a.b", "\"a.b\""),
            ("a b", "\"a b\""),
            ("a\"b", "\"a\"\"b\""),
            (
                "x\"; DROP ROLE postgres; --",
                "\"x\"\"; DROP ROLE postgres; --\"",
            ),
            ("é", "\"é\""),
        ];
        for (name, quoted) in cases {
            assert_eq!(ident(name).unwrap(), quoted, "{name}");
        }
    }

    #[test]
    fn names_postgres_would_cut_are_refused() {
        assert!(ident(&"x".repeat(63)).is_ok());
        let error = ident(&"x".repeat(64)).unwrap_err().to_string();
        assert!(error.contains("longer than 63 bytes"), "{error}");
        // 32 two-byte characters are 64 bytes.
        assert!(ident(&"é".repeat(32)).is_err());
        assert!(ident("").is_err());
    }

    #[test]
    fn every_statement_refuses_a_long_name() {
        let long = "y".repeat(64);
        type Build = fn(&str) -> Result<String, PostgresError>;
        let builders: [Build; 6] = [
            create_database,
            finish_database,
            retire,
            re_enable,
            drop_database,
            drop_role,
        ];
        for build in builders {
            assert!(build(&long).is_err());
        }
        assert!(create_role(&long, "v", false).is_err());
        assert!(create_role(&long, "v", true).is_err());
        assert!(grant_to_admin(&long).is_err());
        assert!(set_password(&long, "v").is_err());
    }

    #[test]
    fn statements_quote_names_and_literals() {
        let verifier = "SCRAM-SHA-256$4096:c2FsdA==$c3RvcmVk:c2VydmVy";
        assert_eq!(
            create_role("forge", verifier, false).unwrap(),
            format!(
                "CREATE ROLE \"forge\" WITH LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION \
                 NOBYPASSRLS PASSWORD '{verifier}' IN ROLE \"mesh_provisioned\"; \
                 COMMENT ON ROLE \"forge\" IS 'made by mesh-postgres for consumer forge'"
            )
        );
        // The administrator joins in the same transaction, before the comment that proves it.
        assert_eq!(
            create_role("forge", verifier, true).unwrap(),
            format!(
                "CREATE ROLE \"forge\" WITH LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION \
                 NOBYPASSRLS PASSWORD '{verifier}' IN ROLE \"mesh_provisioned\"; \
                 GRANT \"forge\" TO CURRENT_USER; \
                 COMMENT ON ROLE \"forge\" IS 'made by mesh-postgres for consumer forge'"
            )
        );
        assert_eq!(
            grant_to_admin("a\"b").unwrap(),
            "GRANT \"a\"\"b\" TO CURRENT_USER"
        );
        assert_eq!(
            create_database("a\"b").unwrap(),
            "CREATE DATABASE \"a\"\"b\" OWNER \"a\"\"b\""
        );
        let retire = retire("o'brien").unwrap();
        assert!(retire.starts_with("ALTER ROLE \"o'brien\" WITH NOLOGIN; "));
        assert!(retire.contains("usename = 'o''brien'"), "{retire}");
        assert_eq!(
            drop_database("forge").unwrap(),
            "DROP DATABASE IF EXISTS \"forge\" WITH (FORCE)"
        );
        assert_eq!(
            set_password("forge", "v'x").unwrap(),
            "ALTER ROLE \"forge\" WITH PASSWORD 'v''x'"
        );
        let finish = finish_database("forge").unwrap();
        assert!(finish.starts_with("REVOKE CONNECT, TEMPORARY ON DATABASE \"forge\" FROM PUBLIC; COMMENT ON DATABASE \"forge\" IS 'made by mesh-postgres"));
        assert!(create_marker().contains("CREATE ROLE \"mesh_provisioned\" WITH NOLOGIN"));
    }

    #[test]
    fn a_verifier_is_not_the_password() {
        let verifier = postgres_protocol::password::scram_sha_256(b"minted-secret");
        assert!(verifier.starts_with("SCRAM-SHA-256$4096:"));
        let statement = create_role("forge", &verifier, true).unwrap();
        assert!(!statement.contains("minted-secret"));
    }
}
