//! `contributions --out DIR`: each provider's contributions file written
//! from the declaration, and the secrets it names minted where missing.
//!
//! Named like `permissions`, its sibling: both derive one thing every
//! provider needs from the declaration, and are called after it.

use std::io::Write;
use std::path::PathBuf;

use clap::Args;

use super::error::CliError;
use super::{Cli, NAME};
use crate::contributions::{self, write};

/// `contributions`' flags.
#[derive(Args, Debug, Clone, PartialEq, Eq)]
pub struct ContributionsArgs {
    /// Folder to write into: OUT/MODULE@MACHINE/contributions.json and
    /// OUT/MODULE@MACHINE/secrets/CONSUMER (made 0700 if missing).
    #[arg(long, value_name = "OUT")]
    pub out: PathBuf,
}

/// Writes the files; says on `out` what was done for each provider (never
/// a secret) and on `err` what the operator should look at.
pub(super) fn run(
    cli: &Cli,
    out: &mut dyn Write,
    err: &mut dyn Write,
    args: &ContributionsArgs,
) -> Result<(), CliError> {
    let parsed = cli.load_declaration()?;
    for refused in &parsed.refused {
        let _ = writeln!(
            err,
            "{NAME}: declaration entry refused (nobody's contributions list it): {refused}"
        );
    }
    let files = contributions::derive(&parsed.declaration);
    for file in &files {
        for (name, entries) in &file.repeated {
            let _ = writeln!(
                err,
                "{NAME}: warning: {} is asked for consumer {name} {} times ({}): a provider serves one entry per consumer name and uses none of these (it keeps {name} listed, so nothing is retired); give the modules distinct names",
                file.id(),
                entries.len(),
                entries.join(", ")
            );
        }
    }
    let report = write::write_all(&args.out, &files).map_err(CliError::Contributions)?;
    for done in &report.providers {
        let file = match done.file {
            write::FileChange::Created => "written",
            write::FileChange::Updated => "updated",
            write::FileChange::Unchanged => "unchanged",
        };
        let mut line = format!(
            "{}: {} ({} {}) {file}",
            done.provider,
            done.folder.join(write::FILE_NAME).display(),
            done.consumers,
            if done.consumers == 1 {
                "consumer"
            } else {
                "consumers"
            },
        );
        if !done.minted.is_empty() {
            let names: Vec<&str> = done.minted.iter().map(|n| n.as_str()).collect();
            line.push_str(&format!(
                ", {} {} minted ({})",
                names.len(),
                if names.len() == 1 {
                    "secret"
                } else {
                    "secrets"
                },
                names.join(", ")
            ));
        }
        writeln!(out, "{line}").map_err(CliError::Output)?;
        for name in &done.unlisted {
            writeln!(
                out,
                "{}: secrets/{name} is no longer listed (no module requires from it under that name); left alone",
                done.provider
            )
            .map_err(CliError::Output)?;
        }
        for path in &done.exposed {
            let _ = writeln!(
                err,
                "{NAME}: warning: the secret {} may be read by its group or others (chmod 0600 it)",
                path.display()
            );
        }
    }
    for folder in &report.stale {
        writeln!(
            out,
            "{}: no provider of the declaration any more; left alone",
            folder.display()
        )
        .map_err(CliError::Output)?;
    }
    Ok(())
}
