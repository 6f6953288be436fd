//! The SQL the provider sends, built from names without any I/O.
//!
//! Identifiers cannot be bound as parameters, so every name is quoted with
//! [`escape_identifier`] (on top of the SDK's name rule) and refused when
//! PostgreSQL would cut it (over 63 bytes). Literals are quoted with
//! [`escape_literal`]. A password never appears here in plaintext: only its
//! SCRAM verifier, computed on the client.

use mesh_sdk::ModuleId;
use postgres_protocol::escape::{escape_identifier, escape_literal};

use crate::error::PostgresError;

/// Longest identifier PostgreSQL keeps whole, in bytes (`NAMEDATALEN - 1`);
/// a longer one is cut silently, so it is refused.
pub const MAX_IDENTIFIER_BYTES: usize = 63;

/// The role every role the provider made is a member of: its mark.
pub const MARKER_ROLE: &str = "mesh_provisioned";

/// How every instance's marker role begins (a consumer name holds no `:`,
/// so none is ever a consumer's role).
pub const INSTANCE_MARKER_PREFIX: &str = "mesh_provisioned:";

/// The marker role of the provider instance `provider`: every role that
/// instance made is a member of it too. `mesh_provisioned:postgres@db-1`;
/// one that PostgreSQL would cut (over 63 bytes) is cut here instead and
/// ends in `~` and a 64-bit FNV-1a hash of the whole instance name, so two
/// instances never share one.
pub fn instance_marker(provider: &ModuleId) -> String {
    let instance = provider.to_string();
    let whole = format!("{INSTANCE_MARKER_PREFIX}{instance}");
    if whole.len() <= MAX_IDENTIFIER_BYTES {
        return whole;
    }
    let hash = instance.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    // Names are ASCII: any byte index is a character boundary.
    let keep = MAX_IDENTIFIER_BYTES - INSTANCE_MARKER_PREFIX.len() - 17;
    format!("{INSTANCE_MARKER_PREFIX}{}~{hash:016x}", &instance[..keep])
}

/// Makes the marker role of `provider` unless it exists, as one statement;
/// refuses one that can log in or is a superuser (it would not be a mark).
pub fn create_instance_marker(provider: &ModuleId) -> String {
    let name = instance_marker(provider);
    let (marker, literal) = (escape_identifier(&name), escape_literal(&name));
    let comment = escape_literal(&format!(
        "mesh-postgres instance {provider} marks every role it made by membership in this role; \
         it lists, retires, re-enables and deletes no other. Do not grant it by hand."
    ));
    format!(
        "DO $mesh$ BEGIN \
         IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = {literal}) THEN \
         CREATE ROLE {marker} WITH NOLOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS; \
         COMMENT ON ROLE {marker} IS {comment}; \
         ELSIF EXISTS (SELECT FROM pg_roles WHERE rolname = {literal} AND (rolcanlogin OR rolsuper)) THEN \
         RAISE EXCEPTION 'the marker role % can log in or is a superuser: it is no mark', {literal}; \
         END IF; END $mesh$"
    )
}

/// Adopts a role an older version made (marked `mesh_provisioned` alone)
/// as `provider`'s: only for a consumer that instance lists.
///
/// # Errors
/// [`PostgresError::BadName`] when the name cannot be an identifier.
pub fn adopt(name: &str, provider: &ModuleId) -> Result<String, PostgresError> {
    Ok(format!(
        "GRANT {} TO {}",
        escape_identifier(&instance_marker(provider)),
        ident(name)?
    ))
}

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

/// Makes the consumer's role with its password verifier and its marks
/// (`mesh_provisioned` and `provider`'s marker), as one implicit
/// transaction: a role is never made without them. With
/// `admin_joins` (an administrator that is not a superuser) the
/// administrator is made a member of the role in the same transaction
/// (see [`grant_to_admin`]).
///
/// # Errors
/// [`PostgresError::BadName`] when the name cannot be an identifier.
pub fn create_role(
    name: &str,
    verifier: &str,
    admin_joins: bool,
    provider: &ModuleId,
) -> Result<String, PostgresError> {
    let role = ident(name)?;
    let join = if admin_joins {
        format!("{}; ", grant_to_admin(name)?)
    } else {
        String::new()
    };
    Ok(format!(
        "CREATE ROLE {role} WITH LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS \
         PASSWORD {} IN ROLE {}, {}; {join}COMMENT ON ROLE {role} IS {}",
        escape_literal(verifier),
        escape_identifier(MARKER_ROLE),
        escape_identifier(&instance_marker(provider)),
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

/// What the backend holds under one name: `$1` is the name (text), `$2`
/// the asking instance's marker role ([`instance_marker`]). One row,
/// always. The administrator itself is never marked (a hand-made grant of
/// `mesh_provisioned` to it must not make it a consumer's role). `own`:
/// a member of `$2`; `others`: the other instances whose marker it is a
/// member of (null when none).
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
       (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) AS admin_superuser,
       COALESCE(EXISTS (SELECT 1 FROM pg_auth_members m JOIN pg_roles g ON g.oid = m.roleid
                        WHERE m.member = r.oid AND g.rolname = $2::text), false) AS own,
       (SELECT string_agg(substr(g.rolname, 18), ', ' ORDER BY g.rolname)
        FROM pg_auth_members m JOIN pg_roles g ON g.oid = m.roleid
        WHERE m.member = r.oid AND starts_with(g.rolname, 'mesh_provisioned:')
          AND g.rolname <> $2::text) AS others
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

/// Every role the instance whose marker role is `$1` made, with whether
/// it can log in: direct members of both `mesh_provisioned` and `$1`, and
/// of no other instance's marker (a role two instances claim is neither's
/// to retire), never a superuser, never the administrator itself.
pub const HELD: &str = "\
SELECT r.rolname::text, r.rolcanlogin
FROM pg_auth_members m
JOIN pg_roles g ON g.oid = m.roleid
JOIN pg_roles r ON r.oid = m.member
WHERE g.rolname = $1::text AND NOT r.rolsuper AND r.rolname <> current_user
  AND EXISTS (SELECT 1 FROM pg_auth_members mm JOIN pg_roles gm ON gm.oid = mm.roleid
              WHERE mm.member = r.oid AND gm.rolname = 'mesh_provisioned')
  AND NOT EXISTS (SELECT 1 FROM pg_auth_members mo JOIN pg_roles gx ON gx.oid = mo.roleid
                  WHERE mo.member = r.oid AND starts_with(gx.rolname, 'mesh_provisioned:')
                    AND gx.rolname <> $1::text)
ORDER BY r.rolname";

#[cfg(test)]
mod tests {
    use super::*;

    fn provider(text: &str) -> ModuleId {
        text.parse().unwrap()
    }

    #[test]
    fn each_instance_has_a_marker_of_its_own_that_postgres_keeps_whole() {
        assert_eq!(
            instance_marker(&provider("postgres@db-1")),
            "mesh_provisioned:postgres@db-1"
        );
        let long = |machine: &str| provider(&format!("{}@{machine}", "p".repeat(40)));
        let (a, b) = (
            instance_marker(&long("machine-a")),
            instance_marker(&long("machine-b")),
        );
        assert_ne!(a, b, "cut names differ by their hash");
        for marker in [&a, &b] {
            assert_eq!(marker.len(), MAX_IDENTIFIER_BYTES, "{marker}");
            assert!(marker.starts_with(INSTANCE_MARKER_PREFIX), "{marker}");
            assert!(ident(marker).is_ok());
        }
        // The same instance, the same marker: a restart finds its roles.
        assert_eq!(a, instance_marker(&long("machine-a")));
        let made = create_instance_marker(&provider("postgres@db-1"));
        assert!(
            made.contains(
                "CREATE ROLE \"mesh_provisioned:postgres@db-1\" WITH NOLOGIN NOSUPERUSER"
            ),
            "{made}"
        );
        assert!(made.contains("IF NOT EXISTS"), "{made}");
        assert_eq!(
            adopt("forge", &provider("postgres@db-1")).unwrap(),
            "GRANT \"mesh_provisioned:postgres@db-1\" TO \"forge\""
        );
    }

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
        let p = provider("postgres@db-1");
        assert!(create_role(&long, "v", false, &p).is_err());
        assert!(create_role(&long, "v", true, &p).is_err());
        assert!(adopt(&long, &p).is_err());
        assert!(grant_to_admin(&long).is_err());
        assert!(set_password(&long, "v").is_err());
    }

    #[test]
    fn statements_quote_names_and_literals() {
        let verifier = "SCRAM-SHA-256$4096:c2FsdA==$c3RvcmVk:c2VydmVy";
        assert_eq!(
            create_role("forge", verifier, false, &provider("postgres@db-1")).unwrap(),
            format!(
                "CREATE ROLE \"forge\" WITH LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION \
                 NOBYPASSRLS PASSWORD '{verifier}' IN ROLE \"mesh_provisioned\", \"mesh_provisioned:postgres@db-1\"; \
                 COMMENT ON ROLE \"forge\" IS 'made by mesh-postgres for consumer forge'"
            )
        );
        // The administrator joins in the same transaction, before the comment that proves it.
        assert_eq!(
            create_role("forge", verifier, true, &provider("postgres@db-1")).unwrap(),
            format!(
                "CREATE ROLE \"forge\" WITH LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION \
                 NOBYPASSRLS PASSWORD '{verifier}' IN ROLE \"mesh_provisioned\", \"mesh_provisioned:postgres@db-1\"; \
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
        let statement = create_role("forge", &verifier, true, &provider("postgres@db-1")).unwrap();
        assert!(!statement.contains("minted-secret"));
    }
}
