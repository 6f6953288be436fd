//! `plan NEW`: what deploying the declaration `NEW` would change for each
//! provider, against the current one (`--declaration`), printed as lines or
//! JSON; exit 1 when it withdraws a consumer, so a deploy pipeline can stop
//! and ask.

use std::io::Write;
use std::path::Path;

use serde_json::json;

use super::error::CliError;
use super::{Cli, NAME};
use crate::plan::{plan, DeclarationPlan, ProviderPlan, RetireTiming};
use mesh_status::model::declaration;

/// Prints the plan from the current declaration to the one at `new`.
///
/// # Errors
/// [`CliError::Declaration`] when either cannot be used (exit 2);
/// [`CliError::Withdraws`] after the plan was printed, when it withdraws a
/// consumer (exit 1).
pub(super) fn run(
    cli: &Cli,
    out: &mut dyn Write,
    err: &mut dyn Write,
    new: &Path,
    json: bool,
    retirement: RetireTiming,
) -> Result<(), CliError> {
    let current = cli.load_declaration()?;
    let next = declaration::load(new)?;
    for refused in &next.refused {
        let _ = writeln!(
            err,
            "{NAME}: the new declaration's entry is refused (its requirements are dropped): {refused}"
        );
    }
    let plan = plan(&current.declaration, &next.declaration);
    let text = match json {
        true => {
            let refused: Vec<String> = next.refused.iter().map(ToString::to_string).collect();
            let value = json!({
                "withdrawn": plan.withdrawn(),
                "added": plan.added(),
                "retired_after_seconds": retirement.delay().as_secs(),
                "providers": plan.providers,
                "refused": refused,
            });
            serde_json::to_string_pretty(&value).expect("JSON values serialize")
        }
        false => human(&plan, &retirement),
    };
    writeln!(out, "{text}").map_err(CliError::Output)?;
    match plan.withdrawn() {
        0 => Ok(()),
        n => Err(CliError::Withdraws(n)),
    }
}

/// The plan as lines: a sentence, then each provider and what changes for it.
fn human(plan: &DeclarationPlan, retirement: &RetireTiming) -> String {
    let mut lines = vec![format!(
        "plan: {} withdrawn, {} added",
        count(plan.withdrawn(), "consumer"),
        plan.added()
    )];
    for provider in &plan.providers {
        lines.extend(provider_lines(provider, retirement));
    }
    lines.join("\n")
}

fn provider_lines(p: &ProviderPlan, retirement: &RetireTiming) -> Vec<String> {
    let id = &p.provider;
    if p.is_unchanged() {
        return vec![format!("{id}: no change")];
    }
    if !p.declared {
        return vec![format!(
            "{id}: no longer declared: its contributions file is no longer written, and it goes on serving the last one until it is stopped (nothing is withdrawn by it)"
        )];
    }
    let mut lines = vec![match p.new {
        true => format!("{id}: new provider"),
        false => format!("{id}:"),
    }];
    for e in &p.added {
        lines.push(format!(
            "  + {}@{} ({})",
            e.consumer, e.machine, e.provision
        ));
    }
    let after = humantime::format_duration(retirement.delay());
    for e in &p.withdrawn {
        lines.push(format!(
            "  - {}@{} ({}): withdrawn; {id} retires it (disabled, nothing deleted) {after} after its contributions file no longer lists it ({} passes and {}), unless listed again; at once with `mesh-controller approve {id} {}`; its data is deleted only with `mesh-controller approve {id} {} --delete`",
            e.consumer,
            e.machine,
            e.provision,
            retirement.after_passes,
            humantime::format_duration(retirement.after),
            e.consumer,
            e.consumer,
        ));
    }
    for c in &p.changed {
        lines.push(format!(
            "  ~ {}@{} ({}) -> {}@{} ({}): served with the new entry, nothing retired",
            c.from.consumer,
            c.from.machine,
            c.from.provision,
            c.to.consumer,
            c.to.machine,
            c.to.provision
        ));
    }
    for name in &p.held_back {
        lines.push(format!(
            "  ! {name} is listed twice: held back (neither served nor retired) until the declaration names it once"
        ));
    }
    lines
}

/// `1 consumer`, `2 consumers`.
fn count(n: usize, what: &str) -> String {
    match n {
        1 => format!("1 {what}"),
        n => format!("{n} {what}s"),
    }
}
