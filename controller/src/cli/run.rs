//! Running a parsed command line.

use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

use mesh_protocol::Timestamp;
use mesh_runtime::endpoints::Endpoints;
use mesh_runtime::{ProgramFailure, Secret, Stop};
use tokio_util::task::AbortOnDropHandle;

use super::error::{CliError, EXIT_OK};
use super::{Cli, Command, NodeCommand, ReportArgs, NAME};
use crate::approve::{check_declared, check_deletion, describe, Declared};
use crate::bus::{connect, Reconnect};
use crate::link;
use mesh_pg_store::{grant_reader, migrate, DatabaseOptions, PgStore, ReaderMade, ReaderRights};
use mesh_runtime::nats::approve;
use mesh_status::model::ParsedDeclaration;
use mesh_status::render::human::next_steps;
use mesh_status::render::{listing, series};
use mesh_status::report::{self, Clock, Scope};
use mesh_status::store::{HistoryFilter, Order};
use mesh_status::{LinkSettings, LinkState};

/// Where a command writes, and its wall time.
pub struct Io<'a> {
    /// Standard output.
    pub out: &'a mut dyn Write,
    /// Standard error.
    pub err: &'a mut dyn Write,
    /// Now.
    pub now: Timestamp,
}

/// Runs the command; `serve` follows the events until `stop` is requested
/// (the one-shot commands do not watch it).
///
/// # Errors
/// [`CliError`] when it was not done; [`outcome`] gives the code and the
/// message to say.
pub async fn run(cli: &Cli, io: &mut Io<'_>, stop: &Stop) -> Result<(), CliError> {
    match &cli.command {
        Command::Migrate {
            reader,
            reader_password_file,
            reader_records,
        } => {
            let options = cli.database_options()?;
            // Read before migrating: a bad file changes nothing.
            let password = reader_password_file
                .as_deref()
                .map(|file| Secret::from_file(file, "reader password"))
                .transpose()
                .map_err(CliError::ReaderPassword)?;
            let applied = migrate(&options).await.map_err(CliError::Migrate)?;
            writeln!(io.out, "store {options}: {applied} migrations applied")
                .map_err(CliError::Output)?;
            let Some(role) = reader else { return Ok(()) };
            let rights = match reader_records {
                true => ReaderRights::ReadAndRecord,
                false => ReaderRights::Read,
            };
            let made = grant_reader(
                &options,
                role,
                password.as_ref().map(Secret::expose),
                rights,
            )
            .await
            .map_err(CliError::Reader)?;
            let how = match (made, rights) {
                (ReaderMade::Made, ReaderRights::Read) => {
                    "made now; it may read the store, nothing more"
                }
                (ReaderMade::Granted, ReaderRights::Read) => "it may read the store, nothing more",
                (ReaderMade::Made, ReaderRights::ReadAndRecord) => {
                    "made now; it may read the store and add rows to history, nothing more"
                }
                (ReaderMade::Granted, ReaderRights::ReadAndRecord) => {
                    "it may read the store and add rows to history, nothing more"
                }
            };
            writeln!(io.out, "role {role}: {how}").map_err(CliError::Output)
        }
        Command::Serve {
            batch,
            stream_max_age,
            stream_replicas,
            keep_history,
            status_every,
            endpoints,
        } => {
            let options = cli.database_options()?;
            let settings = LinkSettings {
                batch: *batch,
                stream_max_age: *stream_max_age,
                replicas: *stream_replicas,
                keep_history: *keep_history,
                ..LinkSettings::default()
            };
            let state = Arc::new(LinkState::new());
            let listen = &endpoints.metrics_listen;
            let _observers =
                observe(cli, &options, &settings, &state, listen, *status_every).await?;
            Ok(link::serve(&options, &cli.nats_options(), settings, &state, stop).await?)
        }
        Command::Status { report } => status(cli, io, Scope::All, report).await,
        Command::Console { .. } => Err(CliError::ConsoleMoved),
        Command::Why {
            consumer: (consumer, machine),
            recurrence_window,
            json,
        } => {
            super::why::run(
                cli,
                io.out,
                io.now,
                (consumer, machine.as_ref()),
                *recurrence_window,
                *json,
            )
            .await
        }
        Command::Note {
            consumer: (consumer, machine),
            text,
            provider,
            by,
        } => {
            let by = by.clone().or_else(|| std::env::var("USER").ok());
            super::note::run(
                cli,
                io.out,
                (consumer, machine.as_ref()),
                text,
                provider.as_ref(),
                by.as_deref(),
            )
            .await
        }
        Command::History {
            consumer,
            provider,
            machine,
            since,
            json,
        } => {
            let filter = HistoryFilter {
                consumer: consumer.clone(),
                provider: provider.clone(),
                machine: machine.clone(),
                since: io.now,
            };
            super::history::run(cli, io.out, io.now, filter, *since, *json).await
        }
        Command::Node {
            command: NodeCommand::Show { machine, report },
        } => {
            let scope = Scope::Machine(machine.to_string());
            status(cli, io, scope, report).await
        }
        Command::Permissions {
            format,
            credentials,
            watchers,
            consoles,
        } => super::permissions::run(
            cli,
            io.out,
            io.err,
            *format,
            credentials.as_deref(),
            watchers,
            consoles,
        ),
        Command::Plan {
            new,
            json,
            retire_after_passes,
            pass_every,
            retire_after,
        } => {
            let retirement = crate::plan::RetireTiming {
                after_passes: *retire_after_passes,
                pass_every: *pass_every,
                after: *retire_after,
            };
            super::plan::run(cli, io.out, io.err, new, *json, retirement)
        }
        Command::Contributions(args) => super::contributions::run(cli, io.out, io.err, args),
        Command::Approve {
            provider,
            consumer,
            delete,
            force,
            timeout,
        } => {
            let declared = match &cli.declaration {
                Some(_) => {
                    let parsed = cli.load_declaration()?;
                    let declared = check_declared(&parsed, provider)?;
                    check_deletion(&parsed.declaration, provider, consumer, *delete, *force)?;
                    declared
                }
                None => Declared::NotChecked,
            };
            let client = connect(&cli.nats_options(), Reconnect::FailFast).await?;
            let answer = approve(&client, provider, consumer, *delete, *timeout, io.now).await?;
            let text = describe(&answer, provider, declared);
            if !answer.is_done() {
                return Err(CliError::NotDone(text));
            }
            writeln!(io.out, "{text}").map_err(CliError::Output)
        }
    }
}

/// How long `serve`'s loop may go without turning (a pull finished, or a
/// turn of waiting for the store or the bus at setup) before `/healthz`
/// says it is stuck: 3 × the pull wait + 60 s (a round's store work is
/// bounded by 30 s, a reconnection by 10 s more; a pull while the bus is
/// away ends by the client's own expiry, the wait + 5 s).
pub(super) fn serve_stuck_after(settings: &LinkSettings) -> Duration {
    settings.wait * 3 + Duration::from_secs(60)
}

/// How often `serve` asks the store for `/readyz` (with `--metrics-listen`).
const READY_CHECK_EVERY: Duration = Duration::from_secs(1);

/// How long the store may take to answer it: with [`READY_CHECK_EVERY`],
/// `/readyz` fails within 3 s of the store going away.
const READY_CHECK_WITHIN: Duration = Duration::from_secs(2);

/// Asks the store every [`READY_CHECK_EVERY`] whether it answers, for
/// `/readyz`: the rounds touch the store only when events come.
async fn check_store(options: DatabaseOptions, state: Arc<LinkState>) {
    let mut store = PgStore::new(options);
    loop {
        match store.answers(READY_CHECK_WITHIN).await {
            Ok(()) => state.store_answered(),
            Err(error) => {
                tracing::debug!(error = %error, "the store does not answer the readiness check");
                state.store_unanswered();
            }
        }
        tokio::time::sleep(READY_CHECK_EVERY).await;
    }
}

/// `serve`'s endpoints (with `--metrics-listen`) and, with a declaration,
/// the task that makes the report `status` prints into the gauges every
/// `status_every`.
async fn observe(
    cli: &Cli,
    options: &DatabaseOptions,
    settings: &LinkSettings,
    state: &Arc<LinkState>,
    listen: &Option<String>,
    status_every: Duration,
) -> Result<Vec<AbortOnDropHandle<()>>, CliError> {
    let mut tasks = Vec::new();
    let Some(addr) = listen else {
        return Ok(tasks);
    };
    let listener = mesh_runtime::endpoints::listen(addr).await?;
    let bound = serve_stuck_after(settings);
    let (m, h, r) = (Arc::clone(state), Arc::clone(state), Arc::clone(state));
    let endpoints = Endpoints {
        metrics: Arc::new(move || m.encode()),
        health: Arc::new(move || h.health(bound)),
        ready: Arc::new(move || r.ready()),
    };
    tasks.push(AbortOnDropHandle::new(
        mesh_runtime::endpoints::serve(listener, endpoints).1,
    ));
    tasks.push(AbortOnDropHandle::new(tokio::spawn(check_store(
        options.clone(),
        Arc::clone(state),
    ))));
    if cli.declaration.is_some() {
        let declaration = cli.load_declaration()?;
        series::init(&state.status);
        let (options, state) = (options.clone(), Arc::clone(state));
        tasks.push(AbortOnDropHandle::new(tokio::spawn(async move {
            let mut store = PgStore::new(options);
            loop {
                // Not before the link has migrated the store: a read beside
                // the migration may deadlock with it. Then, until the store
                // answers, try every second.
                if !state.is_migrated() {
                    tokio::time::sleep(Duration::from_millis(200)).await;
                    continue;
                }
                let read = summarize(&mut store, &declaration, &state).await;
                let next = if read {
                    status_every
                } else {
                    status_every.min(Duration::from_secs(1))
                };
                tokio::time::sleep(next).await;
            }
        })));
    }
    Ok(tasks)
}

/// Makes the report `status` prints (the same read, the same engine: its
/// standings counted by provider and class, none listed) and sets the
/// gauges from its problems ([`series`]); a store away leaves them as they
/// were. Returns whether the store was read.
async fn summarize(
    store: &mut PgStore,
    declaration: &ParsedDeclaration,
    state: &LinkState,
) -> bool {
    let clock = Clock {
        now: Timestamp::now(),
        silent_after: report::DEFAULT_SILENT_AFTER,
    };
    let filter = report::filter(declaration, &Scope::All, &clock, Order::Key);
    let report = async {
        let mut read = store.read_status(&filter).await?;
        let head = report::head(declaration, &Scope::All, read.facts(), &clock);
        read.finish().await?;
        Ok::<_, mesh_pg_store::PgError>(head)
    };
    let head = match report.await {
        Ok(head) => head,
        Err(error) => {
            tracing::debug!(error = %error, "cannot read the store for the status metrics");
            return false;
        }
    };
    state.store_answered();
    series::export(&state.status, &series::series(&head), clock.now);
    true
}

/// What the command's result ends the program with, once its output is
/// flushed: the one place a result becomes an exit code and the message the
/// program shell says on stderr (none when the command counts as done, as
/// for a closed output pipe).
///
/// # Errors
/// The [`ProgramFailure`] to end with: [`CliError::exit_code`] and its message.
pub fn outcome(result: Result<(), CliError>, io: &mut Io<'_>) -> Result<(), ProgramFailure> {
    let _ = io.out.flush();
    match result {
        Err(error) if error.is_said() => {
            Err(ProgramFailure::new(error.exit_code(), error.to_string()))
        }
        _ => Ok(()),
    }
}

/// [`outcome`] as the binary ends with it: the failure said on `io.err` as
/// `mesh-controller: <message>`; returns the exit code.
pub fn exit(result: Result<(), CliError>, io: &mut Io<'_>) -> u8 {
    match outcome(result, io) {
        Ok(()) => EXIT_OK,
        Err(failure) => {
            failure.report(NAME, io.err);
            failure.code()
        }
    }
}

/// `status` and `node show`: in one snapshot of the store, the sentence
/// first, then each standing as it is read (grouped by cause for a person,
/// one by one in key order as JSON). With `check`, a report that is not
/// all well ends with [`CliError::NotAllWell`] once it is printed.
async fn status(
    cli: &Cli,
    io: &mut Io<'_>,
    scope: Scope,
    report: &ReportArgs,
) -> Result<(), CliError> {
    let declaration = cli.load_declaration()?;
    if let Scope::Machine(machine) = &scope {
        declaration.declaration.check_machine(machine)?;
    }
    let mut store = PgStore::new(cli.database_options()?);
    let clock = Clock {
        now: io.now,
        silent_after: report.silent_after,
    };
    let order = if report.json {
        Order::Key
    } else {
        Order::Cause
    };
    let filter = report::filter(&declaration, &scope, &clock, order);
    let mut read = store.read_status(&filter).await.map_err(CliError::Read)?;
    let window = report.recurrence_window;
    read.count_repairs(io.now, window)
        .await
        .map_err(CliError::Read)?;
    let facts = read.facts();
    let head = report::head(&declaration, &scope, facts, &clock);
    let mut listing = listing(report.json);
    listing.head(io.out, &head).map_err(CliError::Output)?;
    // The sentence is out; the standings' history comes before the first.
    let recurrences = read
        .recurrences(io.now, window)
        .await
        .map_err(CliError::Read)?;
    while let Some(row) = read.next().await.map_err(CliError::Read)? {
        let standing = report::recurring_standing(row, &clock, &recurrences);
        listing
            .standing(io.out, standing)
            .map_err(CliError::Output)?;
    }
    read.finish().await.map_err(CliError::Read)?;
    listing.finish(io.out, &head).map_err(CliError::Output)?;
    if report.explain && !report.json {
        next_steps(io.out, &head).map_err(CliError::Output)?;
    }
    if report.check && !head.all_well() {
        return Err(CliError::NotAllWell);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::EXIT_CANNOT;

    fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
        Cli::parse_args(std::iter::once("mesh-controller").chain(args.iter().copied()))
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
        std::fs::write(
            &declaration,
            r#"{"modules":[{"module":"a","machine":"m"}]}"#,
        )
        .unwrap();
        let decl = declaration.to_str().unwrap();
        let cases: &[(&[&str], &str)] = &[
            (&["status"], "no declaration given"),
            (&["--declaration", "/nope.json", "status"], "/nope.json"),
            (&["--declaration", decl, "status"], "no database given"),
            (
                &["--declaration", decl, "node", "show", "m"],
                "no database given",
            ),
            (
                &["--declaration", decl, "node", "show", "m1", "--check"],
                "the declaration names no machine m1 (it names: m)",
            ),
            (&["permissions"], "no declaration given"),
            (
                &["--declaration", decl, "permissions", "--format", "nats"],
                "needs --credentials",
            ),
            (&["migrate"], "no database given"),
        ];
        for (args, reason) in cases {
            let (code, out, err) = exit_of(args).await;
            assert_eq!(code, EXIT_CANNOT, "{args:?}");
            assert!(err.contains(reason), "{args:?}: {err}");
            assert!(out.is_empty(), "{args:?}");
        }
    }

    /// Runs a command line: its exit code, stdout and stderr.
    async fn exit_of(args: &[&str]) -> (u8, String, String) {
        let cli = parse(args).unwrap();
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let mut io = Io {
            out: &mut out,
            err: &mut err,
            now: Timestamp::parse("2026-10-05T00:00:00Z").unwrap(),
        };
        let result = run(&cli, &mut io, &Stop::new()).await;
        let code = exit(result, &mut io);
        let text = |bytes: Vec<u8>| String::from_utf8(bytes).unwrap();
        (code, text(out), text(err))
    }

    #[tokio::test]
    async fn a_password_in_the_nats_url_is_not_shown_when_connecting_fails() {
        let port = mesh_test_support::free_port();
        let url = format!("nats://mesh:Pw-In-Url-5@127.0.0.1:{port}");
        let (code, _, err) = exit_of(&["--nats", &url, "approve", "p@m", "c"]).await;
        assert_eq!(code, EXIT_CANNOT);
        assert!(err.contains("nats://mesh:***@127.0.0.1"), "{err}");
        assert!(!err.contains("Pw-In-Url-5"), "{err}");
    }
}
