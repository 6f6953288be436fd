//! Running a parsed command line.

use std::io::Write;
use std::path::Path;
use std::time::Duration;

use mesh_sdk::Timestamp;

use super::error::{CliError, EXIT_OK};
use super::{Cli, Command, Format, NodeCommand};
use crate::approve::approve;
use crate::bus::{connect, Reconnect};
use crate::link::{self, LinkSettings};
use crate::permissions;
use crate::render::listing;
use crate::report::{self, Clock, Scope};
use crate::store::{migrate, PgStore};

/// Where a command writes, and its wall time.
pub struct Io<'a> {
    /// Standard output.
    pub out: &'a mut dyn Write,
    /// Standard error.
    pub err: &'a mut dyn Write,
    /// Now.
    pub now: Timestamp,
}

/// Runs the command.
///
/// # Errors
/// [`CliError`] when it was not done; [`exit`] says it and gives the code.
pub async fn run(cli: &Cli, io: &mut Io<'_>) -> Result<(), CliError> {
    match &cli.command {
        Command::Migrate => {
            let options = cli.database_options()?;
            let applied = migrate(&options).await.map_err(CliError::Migrate)?;
            writeln!(io.out, "store {options}: {applied} migrations applied")
                .map_err(CliError::Output)
        }
        Command::Serve {
            batch,
            stream_max_age,
        } => {
            let options = cli.database_options()?;
            let settings = LinkSettings {
                batch: *batch,
                stream_max_age: *stream_max_age,
                ..LinkSettings::default()
            };
            Ok(link::serve(&options, &cli.nats_options(), settings).await?)
        }
        Command::Status { json, silent_after } => {
            status(cli, io, Scope::All, *json, *silent_after).await
        }
        Command::Node {
            command:
                NodeCommand::Show {
                    machine,
                    json,
                    silent_after,
                },
        } => {
            let scope = Scope::Machine(machine.to_string());
            status(cli, io, scope, *json, *silent_after).await
        }
        Command::Permissions {
            format,
            credentials,
        } => permissions_command(cli, io, *format, credentials.as_deref()),
        Command::Approve {
            provider,
            consumer,
            delete,
            timeout,
        } => {
            let client = connect(&cli.nats_options(), Reconnect::FailFast).await?;
            let answer = approve(&client, provider, consumer, *delete, *timeout).await?;
            let text = answer.describe(provider);
            if !answer.is_done() {
                return Err(CliError::NotDone(text));
            }
            writeln!(io.out, "{text}").map_err(CliError::Output)
        }
    }
}

/// Says why the command was not done (if it is worth saying) on stderr and
/// returns the exit code: the one place a result becomes an exit code.
pub fn exit(result: Result<(), CliError>, io: &mut Io<'_>) -> u8 {
    let _ = io.out.flush();
    match result {
        Ok(()) => EXIT_OK,
        Err(error) => {
            if error.is_said() {
                let _ = writeln!(io.err, "mesh-controller: {error}");
            }
            error.exit_code()
        }
    }
}

/// `status` and `node show`: in one snapshot of the store, the sentence
/// first, then each standing as it is read.
async fn status(
    cli: &Cli,
    io: &mut Io<'_>,
    scope: Scope,
    json: bool,
    silent_after: Duration,
) -> Result<(), CliError> {
    let declaration = cli.load_declaration()?;
    let mut store = PgStore::new(cli.database_options()?);
    let clock = Clock {
        now: io.now,
        silent_after,
    };
    let filter = report::filter(&declaration, &scope, &clock);
    let mut read = store.read_status(&filter).await.map_err(CliError::Read)?;
    let repairs = std::mem::take(&mut read.repairs);
    let head = report::head(
        &declaration,
        &scope,
        read.counts,
        repairs,
        &read.alive,
        &clock,
    );
    let mut listing = listing(json);
    listing.head(io.out, &head).map_err(CliError::Output)?;
    while let Some(row) = read.next().await.map_err(CliError::Read)? {
        let standing = report::standing(row, &clock);
        listing
            .standing(io.out, &standing)
            .map_err(CliError::Output)?;
    }
    read.finish().await.map_err(CliError::Read)?;
    listing.finish(io.out, &head).map_err(CliError::Output)
}

fn permissions_command(
    cli: &Cli,
    io: &mut Io<'_>,
    format: Format,
    credentials: Option<&Path>,
) -> Result<(), CliError> {
    let parsed = cli.load_declaration()?;
    for refused in &parsed.refused {
        let _ = writeln!(
            io.err,
            "mesh-controller: declaration entry refused (it gets no permissions): {refused}"
        );
    }
    let users = permissions::derive(&parsed.declaration);
    let value = match (format, credentials) {
        (Format::Json, _) => permissions::render_json(&users),
        (Format::Nats, None) => return Err(CliError::NoCredentials),
        (Format::Nats, Some(dir)) => {
            let passwords = permissions::read_credentials(dir, &users)?;
            permissions::render_nats(&users, &passwords)
        }
    };
    let text = serde_json::to_string_pretty(&value).expect("JSON values serialize");
    writeln!(io.out, "{text}").map_err(CliError::Output)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::EXIT_CANNOT;

    fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
        <Cli as clap::Parser>::try_parse_from(
            std::iter::once("mesh-controller").chain(args.iter().copied()),
        )
    }

    #[tokio::test]
    async fn missing_inputs_exit_2_with_the_reason() {
        // The cases need these unset (clap reads them as fallbacks).
        if ["MESH_DATABASE_URL", "MESH_DECLARATION"]
            .iter()
            .any(|v| std::env::var_os(v).is_some())
        {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let declaration = dir.path().join("d.json");
        std::fs::write(&declaration, r#"{"modules":[]}"#).unwrap();
        let decl = declaration.to_str().unwrap();
        let cases: &[(&[&str], &str)] = &[
            (&["status"], "no declaration given"),
            (&["--declaration", "/nope.json", "status"], "/nope.json"),
            (&["--declaration", decl, "status"], "no database given"),
            (
                &["--declaration", decl, "node", "show", "m"],
                "no database given",
            ),
            (&["permissions"], "no declaration given"),
            (
                &["--declaration", decl, "permissions", "--format", "nats"],
                "needs --credentials",
            ),
            (&["migrate"], "no database given"),
        ];
        for (args, reason) in cases {
            let cli = parse(args).unwrap();
            let (mut out, mut err) = (Vec::new(), Vec::new());
            let mut io = Io {
                out: &mut out,
                err: &mut err,
                now: Timestamp::parse("2026-10-05T00:00:00Z").unwrap(),
            };
            let result = run(&cli, &mut io).await;
            assert_eq!(exit(result, &mut io), EXIT_CANNOT, "{args:?}");
            let err = String::from_utf8(err).unwrap();
            assert!(err.contains(reason), "{args:?}: {err}");
            assert!(out.is_empty(), "{args:?}");
        }
    }
}
