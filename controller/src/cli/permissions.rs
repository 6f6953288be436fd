//! `permissions`: the bus permissions derived from the declaration, as
//! JSON or as a nats-server configuration with each user's credential.

use std::io::Write;
use std::path::Path;

use super::error::CliError;
use super::{Cli, PermissionsFormat, NAME};
use crate::permissions::{self, WatcherRefused};
use mesh_protocol::Name;

/// Prints the permissions; refused declaration entries and users left out
/// of a nats-server configuration for want of a credentials file (a grant
/// agent: [`permissions::CredentialNeed::Warned`]) are said on stderr.
pub(super) fn run(
    cli: &Cli,
    out: &mut dyn Write,
    err: &mut dyn Write,
    format: PermissionsFormat,
    credentials: Option<&Path>,
    watchers: &[Name],
    consoles: &[Name],
) -> Result<(), CliError> {
    let parsed = cli.load_declaration()?;
    for refused in &parsed.refused {
        let _ = writeln!(
            err,
            "{NAME}: declaration entry refused (it gets no permissions): {refused}"
        );
    }
    let mut users = permissions::derive(&parsed.declaration);
    let extra = watchers
        .iter()
        .map(|n| ("--watcher", n, permissions::watcher(n)))
        .chain(
            consoles
                .iter()
                .map(|n| ("--console", n, permissions::console(n))),
        );
    for (flag, name, user) in extra {
        let user = user?;
        if users.iter().any(|u| u.user == user.user) {
            return Err(WatcherRefused::Taken(flag, name.clone()).into());
        }
        users.push(user);
    }
    let value = match (format, credentials) {
        (PermissionsFormat::Json, _) => permissions::render_json(&users),
        (PermissionsFormat::Nats, None) => return Err(CliError::NoCredentials),
        (PermissionsFormat::Nats, Some(dir)) => {
            let credentials = permissions::read_credentials(dir, &users)?;
            for left_out in credentials.left_out.iter().filter(|l| l.is_warned()) {
                let _ = writeln!(err, "{NAME}: warning: {left_out}");
            }
            permissions::render_nats(&users, &credentials.found)
        }
    };
    let text = serde_json::to_string_pretty(&value).expect("JSON values serialize");
    writeln!(out, "{text}").map_err(CliError::Output)
}
