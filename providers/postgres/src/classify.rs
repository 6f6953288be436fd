//! Classification of the provider's errors from typed facts, never their messages:
//! the SQLSTATE the server sent, the kind of the io error underneath, a
//! timeout, and which step failed.
//!
//! | fact | class |
//! |---|---|
//! | SQLSTATE 28P01, 28000 | `credentials-rejected` |
//! | SQLSTATE 08xxx, 57P01, 57P02, 57P03, 53300 | `unreachable` |
//! | any other SQLSTATE (42501 ...) | `refused` |
//! | connection closed; io error refused / reset / aborted / timed out / unreachable ... | `unreachable` |
//! | a timeout of ours | `unreachable` |
//! | a failed admin login repeated to the callers queued behind it | that login's class |
//! | any other failure to connect (name resolution ...) | `unreachable` |
//! | a refusal to touch what mesh did not make, a reserved name | `refused` |
//! | an administrator lacking CREATEROLE, CREATEDB or INHERIT | `refused` |

use std::io::ErrorKind;

use mesh_sdk::Class;
use tokio_postgres::error::SqlState;

use crate::error::PostgresError;

/// The class of one of the provider's errors.
pub fn classify(error: &PostgresError) -> Class {
    match error {
        PostgresError::AdminConnect { source, .. } | PostgresError::Login { source, .. } => {
            postgres(source, SessionStep::Connect)
        }
        PostgresError::Statement { source, .. } => postgres(source, SessionStep::Statement),
        PostgresError::AdminTimeout { .. }
        | PostgresError::StatementTimeout { .. }
        | PostgresError::LoginTimeout { .. } => Class::Unreachable,
        PostgresError::AfterReset(inner) => classify(inner),
        PostgresError::AdminUnavailable { class, .. } => *class,
        PostgresError::NotOurs { .. }
        | PostgresError::OtherInstance { .. }
        | PostgresError::DatabaseNotOurs { .. }
        | PostgresError::NoRole { .. }
        | PostgresError::Reserved { .. }
        | PostgresError::BadName { .. }
        | PostgresError::WrongProvision { .. }
        | PostgresError::MarkerUnusable { .. }
        | PostgresError::AdminLacks { .. } => Class::Refused,
    }
}

/// Where a tokio-postgres error happened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SessionStep {
    /// Opening a session (socket, startup, authentication).
    Connect,
    /// A statement on an open session.
    Statement,
}

/// The class of a tokio-postgres error: its SQLSTATE when the server sent
/// one, else whether the connection is gone (closed, or an io error of a
/// network kind). A failure to open a session with neither (a host name that
/// does not resolve) is `unreachable`; a statement failing that way `refused`.
pub fn postgres(error: &tokio_postgres::Error, step: SessionStep) -> Class {
    if let Some(code) = error.code() {
        return sqlstate(code);
    }
    if error.is_closed() {
        return Class::Unreachable;
    }
    match io_kind(error) {
        Some(kind) if network(kind) => Class::Unreachable,
        Some(ErrorKind::InvalidInput | ErrorKind::InvalidData) => Class::Refused,
        Some(_) if step == SessionStep::Connect => Class::Unreachable,
        _ if has_elapsed(error) => Class::Unreachable,
        _ => Class::Refused,
    }
}

/// The class of a SQLSTATE.
pub fn sqlstate(code: &SqlState) -> Class {
    let code = code.code();
    match code {
        "28P01" | "28000" => Class::CredentialsRejected,
        "57P01" | "57P02" | "57P03" | "53300" => Class::Unreachable,
        _ if code.starts_with("08") => Class::Unreachable,
        _ => Class::Refused,
    }
}

/// Whether an io error kind means the server cannot be reached (now).
pub fn network(kind: ErrorKind) -> bool {
    matches!(
        kind,
        ErrorKind::ConnectionRefused
            | ErrorKind::ConnectionReset
            | ErrorKind::ConnectionAborted
            | ErrorKind::NotConnected
            | ErrorKind::BrokenPipe
            | ErrorKind::TimedOut
            | ErrorKind::UnexpectedEof
            | ErrorKind::AddrNotAvailable
            | ErrorKind::HostUnreachable
            | ErrorKind::NetworkUnreachable
            | ErrorKind::NetworkDown
    )
}

/// The kind of the first io error among the error's sources.
fn io_kind(error: &(dyn std::error::Error + 'static)) -> Option<ErrorKind> {
    sources(error).find_map(|e| e.downcast_ref::<std::io::Error>().map(std::io::Error::kind))
}

/// Whether a tokio timeout elapsed somewhere among the error's sources.
fn has_elapsed(error: &(dyn std::error::Error + 'static)) -> bool {
    sources(error).any(|e| e.is::<tokio::time::error::Elapsed>())
}

/// The error and its sources, outermost first.
fn sources<'a>(
    error: &'a (dyn std::error::Error + 'static),
) -> impl Iterator<Item = &'a (dyn std::error::Error + 'static)> {
    std::iter::successors(Some(error), |e| e.source())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sqlstates_map_to_classes() {
        let cases = [
            (SqlState::INVALID_PASSWORD, Class::CredentialsRejected),
            (
                SqlState::INVALID_AUTHORIZATION_SPECIFICATION,
                Class::CredentialsRejected,
            ),
            (SqlState::CONNECTION_EXCEPTION, Class::Unreachable),
            (SqlState::CONNECTION_FAILURE, Class::Unreachable),
            (
                SqlState::SQLCLIENT_UNABLE_TO_ESTABLISH_SQLCONNECTION,
                Class::Unreachable,
            ),
            (SqlState::PROTOCOL_VIOLATION, Class::Unreachable),
            (SqlState::ADMIN_SHUTDOWN, Class::Unreachable),
            (SqlState::CRASH_SHUTDOWN, Class::Unreachable),
            (SqlState::CANNOT_CONNECT_NOW, Class::Unreachable),
            (SqlState::TOO_MANY_CONNECTIONS, Class::Unreachable),
            (SqlState::INSUFFICIENT_PRIVILEGE, Class::Refused),
            (SqlState::INVALID_CATALOG_NAME, Class::Refused),
            (SqlState::DUPLICATE_OBJECT, Class::Refused),
            (SqlState::DEPENDENT_OBJECTS_STILL_EXIST, Class::Refused),
            (SqlState::OBJECT_IN_USE, Class::Refused),
            (SqlState::QUERY_CANCELED, Class::Refused),
            (SqlState::from_code("XX000"), Class::Refused),
        ];
        for (code, class) in cases {
            assert_eq!(sqlstate(&code), class, "{}", code.code());
        }
    }

    #[test]
    fn network_kinds_are_unreachable() {
        for kind in [
            ErrorKind::ConnectionRefused,
            ErrorKind::ConnectionReset,
            ErrorKind::ConnectionAborted,
            ErrorKind::TimedOut,
            ErrorKind::UnexpectedEof,
            ErrorKind::BrokenPipe,
            ErrorKind::HostUnreachable,
            ErrorKind::NetworkUnreachable,
        ] {
            assert!(network(kind), "{kind:?}");
        }
        for kind in [
            ErrorKind::InvalidInput,
            ErrorKind::InvalidData,
            ErrorKind::PermissionDenied,
            ErrorKind::Other,
        ] {
            assert!(!network(kind), "{kind:?}");
        }
    }

    #[test]
    fn refusals_and_timeouts_of_ours() {
        let refused = [
            PostgresError::NotOurs {
                name: "postgres".into(),
                why: "it is a superuser, which mesh-postgres never manages",
            },
            PostgresError::DatabaseNotOurs {
                name: "template1".into(),
            },
            PostgresError::Reserved {
                name: "\"pg_x\"".into(),
                reason: "reserved",
            },
            PostgresError::NoRole { name: "x".into() },
        ];
        for error in &refused {
            assert_eq!(classify(error), Class::Refused, "{error}");
        }
        let timeouts = [
            PostgresError::AdminTimeout {
                admin: "postgres://postgres@127.0.0.1:5432/postgres".into(),
                after: "10s".into(),
            },
            PostgresError::LoginTimeout {
                consumer: "forge".into(),
                address: "127.0.0.1:5432".into(),
                after: "10s".into(),
            },
            PostgresError::StatementTimeout {
                what: "x".into(),
                after: "1s".into(),
            },
        ];
        for error in &timeouts {
            assert_eq!(classify(error), Class::Unreachable, "{error}");
        }
        let after_reset = PostgresError::AfterReset(Box::new(PostgresError::LoginTimeout {
            consumer: "forge".into(),
            address: "127.0.0.1:1".into(),
            after: "1s".into(),
        }));
        assert_eq!(classify(&after_reset), Class::Unreachable);
    }

    #[test]
    fn a_bad_connection_string_is_refused() {
        let error = "host=/nonexistent port=notaport"
            .parse::<tokio_postgres::Config>()
            .unwrap_err();
        assert_eq!(postgres(&error, SessionStep::Statement), Class::Refused);
    }
}
