//! The provider's error: every failure of one call for one consumer.
//!
//! Each error is a failure of that consumer for the pass (or, from `held`,
//! a pass that does not count towards retirement) and is retried on the next
//! pass; none ends the loop. Errors keep the server's messages in their sources
//! (the loop walks them), never a password: the administrator's password and
//! the minted secrets are only ever sent inside the SCRAM exchange, and
//! statements carry verifiers only. Its class comes from [`crate::classify`].

/// A failed call to PostgreSQL, or a refusal to touch what mesh did not make.
#[derive(Debug, thiserror::Error)]
pub enum PostgresError {
    /// Logging in as the administrator failed.
    #[error("{restart}cannot log in as the administrator at {admin}")]
    AdminConnect {
        /// What to do first, when the password was refused and comes from
        /// a systemd credential (`restart mesh-postgres@db-1 to read the
        /// new admin password (…); `), else empty: said before the rest,
        /// so a text cut short keeps it.
        restart: String,
        /// The administrator's URL, without its password.
        admin: String,
        /// Why.
        #[source]
        source: tokio_postgres::Error,
    },
    /// Logging in as the administrator took longer than the connect timeout.
    #[error("logging in as the administrator at {admin} timed out after {after}")]
    AdminTimeout {
        /// The administrator's URL, without its password.
        admin: String,
        /// The timeout, human readable.
        after: String,
    },
    /// The last login as the administrator failed moments ago; its message
    /// and class are repeated rather than waiting for the server again.
    #[error("{message}")]
    AdminUnavailable {
        /// The failed login's message.
        message: String,
        /// The failed login's class.
        class: mesh_sdk::Class,
    },
    /// A statement sent as the administrator failed.
    #[error("{what} failed")]
    Statement {
        /// What the statement was for, e.g. `creating role "forge"`.
        what: String,
        /// Why, with the server's message.
        #[source]
        source: tokio_postgres::Error,
    },
    /// A statement sent as the administrator took longer than its timeout.
    #[error("{what} timed out after {after}")]
    StatementTimeout {
        /// What the statement was for.
        what: String,
        /// The timeout, human readable.
        after: String,
    },
    /// The check could not log in as the consumer, or `SELECT 1` failed.
    #[error("cannot log in as {consumer} to database {consumer} at {address}")]
    Login {
        /// The consumer (role and database).
        consumer: String,
        /// Where consumers connect (`host:port`).
        address: String,
        /// Why, with the server's message.
        #[source]
        source: tokio_postgres::Error,
    },
    /// The check's login or `SELECT 1` took longer than its timeout.
    #[error("logging in as {consumer} at {address} timed out after {after}")]
    LoginTimeout {
        /// The consumer.
        consumer: String,
        /// Where consumers connect.
        address: String,
        /// The timeout, human readable.
        after: String,
    },
    /// The login was refused, the password was reset to the minted secret,
    /// and the login still fails.
    #[error("the role's password was reset to the minted secret and the login still fails")]
    AfterReset(#[source] Box<PostgresError>),
    /// A role of that name exists and the provider did not make it (or it is
    /// a superuser): it is never altered.
    #[error("role \"{name}\" exists but {why}; it is left untouched")]
    NotOurs {
        /// The role.
        name: String,
        /// Why it is not the provider's.
        why: &'static str,
    },
    /// The role was made by another instance of mesh-postgres (a member
    /// of its marker role): this one neither changes, retires nor deletes
    /// it (docs/operating.md, "Two instances, one server").
    #[error(
        "role \"{name}\" was made by another mesh-postgres instance ({by}); it is left untouched"
    )]
    OtherInstance {
        /// The role.
        name: String,
        /// The other instances, `module@machine`.
        by: String,
    },
    /// A database of that name exists and is not owned by the provider's
    /// role of the same name: it is never altered.
    #[error("database \"{name}\" exists and is not owned by a role mesh-postgres made; it is left untouched")]
    DatabaseNotOurs {
        /// The database.
        name: String,
    },
    /// No role of that name exists (it was dropped by someone else).
    #[error("role \"{name}\" does not exist")]
    NoRole {
        /// The role.
        name: String,
    },
    /// The name is reserved (by PostgreSQL or for the provider's marker).
    #[error("{name} cannot be a consumer of mesh-postgres: {reason}; nothing was touched")]
    Reserved {
        /// The name, quoted and bounded.
        name: String,
        /// Why.
        reason: &'static str,
    },
    /// The name cannot be a PostgreSQL identifier.
    #[error("{name} cannot be a PostgreSQL identifier: {reason}")]
    BadName {
        /// The name, quoted and bounded.
        name: String,
        /// Why.
        reason: &'static str,
    },
    /// The consumer asks for a provision this provider does not serve.
    #[error("consumer {consumer} asks for provision {provision}; mesh-postgres serves only postgres-database")]
    WrongProvision {
        /// The consumer.
        consumer: String,
        /// The provision asked for, quoted and bounded.
        provision: String,
    },
    /// The administrator is no superuser and lacks an attribute the
    /// provider needs to make any consumer's provision.
    #[error(
        "the administrator \"{admin}\" lacks {missing}; mesh-postgres makes a role and a database \
         per consumer and needs a superuser or LOGIN CREATEROLE CREATEDB INHERIT: \
         run ALTER ROLE \"{admin}\" {grant} as a superuser"
    )]
    AdminLacks {
        /// The administrator's role.
        admin: String,
        /// What it lacks, as a phrase (`CREATEROLE and CREATEDB`).
        missing: String,
        /// What it lacks, as `ALTER ROLE` attributes (`CREATEROLE CREATEDB`).
        grant: String,
    },
    /// The marker role exists but is not the NOLOGIN role the provider makes.
    #[error("role mesh_provisioned exists but {why}; mesh-postgres marks the roles it made with it and refuses to work until it is a NOLOGIN, non-superuser role")]
    MarkerUnusable {
        /// What is wrong with it.
        why: &'static str,
    },
}

impl PostgresError {
    /// Whether this is a refused password at login (SQLSTATE 28P01): the
    /// check then resets the role's password once.
    pub fn is_invalid_password(&self) -> bool {
        match self {
            PostgresError::Login { source, .. } => {
                source.code() == Some(&tokio_postgres::error::SqlState::INVALID_PASSWORD)
            }
            _ => false,
        }
    }
}
