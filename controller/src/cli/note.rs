//! `mesh-controller note CONSUMER[@MACHINE] TEXT`: what a person learnt,
//! attached to the consumer's failing interval as a history row (its
//! rules, pure, in [`checked`]; the row's writing in `mesh-pg-store`).

use std::io::Write;

use mesh_pg_store::{note_text, Note, PgStore};
use mesh_protocol::{ModuleId, Name};
use mesh_status::model::ParsedDeclaration;

use super::error::CliError;
use super::why::resolve;
use super::Cli;

/// The longest author's name kept, in characters.
const MAX_BY_CHARS: usize = 64;

/// The note's text and author as kept (control characters made spaces,
/// trimmed), and the provider it is about: the one given, which the
/// consumer must require from, or the only one it requires from.
///
/// # Errors
/// [`CliError::NoteRefused`] saying what is wrong.
fn checked(
    declaration: &ParsedDeclaration,
    consumer: &ModuleId,
    text: &str,
    provider: Option<&ModuleId>,
    by: Option<&str>,
) -> Result<(String, ModuleId, String), CliError> {
    let clean = |s: &str| -> String {
        s.chars()
            .map(|c| if c.is_control() { ' ' } else { c })
            .collect::<String>()
            .trim()
            .to_owned()
    };
    let refused = |why: String| Err(CliError::NoteRefused(why));
    let text = match note_text(text) {
        Ok(text) => text,
        Err(error) => return refused(error.to_string()),
    };
    let by = clean(by.unwrap_or_default());
    if by.is_empty() {
        return refused("say who writes the note: --by NAME (no $USER here)".to_owned());
    }
    if by.chars().count() > MAX_BY_CHARS {
        return refused(format!("--by is longer than {MAX_BY_CHARS} characters"));
    }
    let mut from: Vec<&ModuleId> = declaration
        .declaration
        .module(consumer)
        .map(|m| m.requires.iter().map(|r| &r.from).collect())
        .unwrap_or_default();
    from.sort_unstable();
    from.dedup();
    let names = || {
        from.iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    };
    let provider = match (provider, from.as_slice()) {
        (Some(p), _) if from.contains(&p) => p.clone(),
        (Some(p), []) => {
            return refused(format!("{consumer} requires nothing, not from {p}"));
        }
        (Some(p), _) => {
            return refused(format!(
                "{consumer} does not require from {p}; it requires from {}",
                names()
            ))
        }
        (None, [one]) => (*one).clone(),
        (None, []) => return refused(format!("{consumer} requires nothing: no interval to note")),
        (None, _) => {
            return refused(format!(
                "{consumer} requires from {}: say which with --provider",
                names()
            ))
        }
    };
    Ok((text, provider, by))
}

/// Writes the note and says so.
///
/// # Errors
/// [`CliError::UnknownConsumer`], [`CliError::NoteRefused`],
/// [`CliError::Note`] when the store does not take it.
pub(super) async fn run(
    cli: &Cli,
    out: &mut dyn Write,
    (consumer, machine): (&Name, Option<&Name>),
    text: &str,
    provider: Option<&ModuleId>,
    by: Option<&str>,
) -> Result<(), CliError> {
    let declaration = cli.load_declaration()?;
    let id = resolve(&declaration, consumer, machine)?;
    let (text, provider, by) = checked(&declaration, &id, text, provider, by)?;
    let mut store = PgStore::new(cli.database_options()?);
    let at = store
        .add_note(&Note {
            provider: &provider,
            consumer: &id,
            text: &text,
            by: &by,
        })
        .await
        .map_err(|error| CliError::Note { error })?;
    writeln!(
        out,
        "note on {id} from {provider} by {by} at {at}: \"{text}\""
    )
    .map_err(CliError::Output)
}

#[cfg(test)]
mod tests {
    use mesh_status::testing::declaration;

    use super::*;

    fn id(s: &str) -> ModuleId {
        ModuleId::parse(s).unwrap()
    }

    fn said(r: Result<(String, ModuleId, String), CliError>) -> String {
        match r {
            Ok((text, provider, by)) => format!("ok {text} | {provider} | {by}"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn note_table() {
        let d = declaration();
        let (wiki, forge, lone) = (id("wiki@app-1"), id("forge@app-1"), id("lone@app-1"));
        let pg = id("postgres@db-1");
        let long = "x".repeat(mesh_pg_store::MAX_NOTE_CHARS + 1);
        // (consumer, text, --provider, --by, what is said)
        type Case<'a> = (
            &'a ModuleId,
            &'a str,
            Option<&'a ModuleId>,
            Option<&'a str>,
            &'a str,
        );
        let cases: [Case<'_>; 9] = [
            (
                &wiki,
                " reset\tfrom the vault\n",
                None,
                Some("jochen"),
                "ok reset from the vault | postgres@db-1 | jochen",
            ),
            (
                &forge,
                "x",
                Some(&pg),
                Some("ana"),
                "ok x | postgres@db-1 | ana",
            ),
            (
                &forge,
                "x",
                None,
                Some("ana"),
                "forge@app-1 requires from identity@id-1, postgres@db-1: say which with --provider",
            ),
            (
                &wiki,
                "x",
                Some(&forge),
                Some("ana"),
                "wiki@app-1 does not require from forge@app-1; it requires from postgres@db-1",
            ),
            (
                &lone,
                "x",
                None,
                Some("ana"),
                "lone@app-1 requires nothing: no interval to note",
            ),
            (&wiki, " \n", None, Some("ana"), "the note is empty"),
            (
                &wiki,
                &long,
                None,
                Some("ana"),
                "the note is 501 characters long; at most 500 are kept: say it shorter",
            ),
            (
                &wiki,
                "x",
                None,
                None,
                "say who writes the note: --by NAME (no $USER here)",
            ),
            (
                &wiki,
                "x",
                None,
                Some("\t"),
                "say who writes the note: --by NAME (no $USER here)",
            ),
        ];
        for (consumer, text, provider, by, expected) in cases {
            assert_eq!(
                said(checked(&d, consumer, text, provider, by)),
                expected,
                "{consumer} {text:?}"
            );
        }
    }
}
