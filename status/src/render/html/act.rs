//! The console's pages for acting (each for one session, never followed):
//! a confirmation that names what an approval will do, the note form, the
//! answer of an action, and why one is refused. Every form posts the
//! session's CSRF value (`csrf`) with it.

use std::fmt::Write as _;

use mesh_protocol::{ModuleId, Name};

use super::{consumer_path, crumbs, escape, link, provider_path, Page};
use crate::model::history::ActionWord;

/// The path of an approval's confirmation.
/// (`delete`: of a deletion, else of a retirement).
pub fn approve_path(provider: &ModuleId, consumer: &Name, delete: bool) -> String {
    let delete = if delete { "&delete=1" } else { "" };
    format!("/act/approve?provider={provider}&consumer={consumer}{delete}")
}

/// The path of the note form for `consumer`@`machine`'s interval from
/// `provider`.
pub fn note_path(consumer: &str, machine: &str, provider: &ModuleId) -> String {
    format!("/act/note?consumer={consumer}@{machine}&provider={provider}")
}

/// The path of the acknowledgement form for `consumer`@`machine`'s
/// problem from `provider`.
pub fn acknowledge_path(consumer: &str, machine: &str, provider: &ModuleId) -> String {
    format!("/act/acknowledge?consumer={consumer}@{machine}&provider={provider}")
}

/// How long an acknowledgement may hold, as the form offers it.
pub const ACKNOWLEDGE_FOR: [&str; 4] = ["1h", "4h", "1d", "3d"];

fn hidden(name: &str, value: &str) -> String {
    format!(
        "<input type=\"hidden\" name=\"{name}\" value=\"{}\">\n",
        escape(value)
    )
}

fn page(title: String, main: String) -> Page {
    Page {
        crumbs: crumbs(&[
            ("consumers".to_owned(), "/consumers".to_owned()),
            (title.clone(), String::new()),
        ]),
        title,
        path: String::new(),
        main,
    }
}

/// What an approval (`delete`: of a deletion) will do, for a person.
fn what_it_does(provider: &ModuleId, consumer: &Name, delete: bool) -> String {
    match delete {
        false => format!(
            "{provider} retires {consumer} now instead of when its countdown ends: it disables \
             what it made for {consumer} (a PostgreSQL role may no longer log in) and deletes \
             nothing. Listing {consumer} in the provider's contributions again re-enables it."
        ),
        true => format!(
            "{provider} deletes what it made for the retired {consumer} (a PostgreSQL database \
             and its role). This cannot be undone."
        ),
    }
}

/// The confirmation of an approval (`delete`: of a deletion): what it
/// will do and a button that does it, or, when the declaration still
/// requires the consumer from the provider (`requiring`, its instances),
/// why the console will not delete it.
pub fn approve_confirm(
    provider: &ModuleId,
    consumer: &Name,
    delete: bool,
    requiring: &[String],
    csrf: &str,
) -> Page {
    let (title, button) = match delete {
        false => (
            format!("retire {consumer}"),
            format!("retire {consumer} now"),
        ),
        true => (
            format!("delete {consumer}"),
            format!("delete {consumer}'s data"),
        ),
    };
    let mut main = format!(
        "<h1>{}</h1>\n<p class=\"confirm\">{}</p>\n",
        escape(&title),
        escape(&what_it_does(provider, consumer, delete))
    );
    if delete && !requiring.is_empty() {
        let _ = writeln!(
            main,
            "<p class=\"notice\" role=\"alert\">The declaration still requires {} from {} ({}): \
             deleting it would take data a declared consumer needs. Withdraw it from the \
             declaration first; the console deletes no consumer the declaration requires \
             (<code>mesh-controller approve --delete --force</code> does, from a terminal).</p>",
            escape(consumer.as_str()),
            escape(&provider.to_string()),
            escape(&requiring.join(", "))
        );
    } else {
        main.push_str("<form method=\"post\" action=\"/act/approve\" class=\"act\">\n");
        main.push_str(&hidden("csrf", csrf));
        main.push_str(&hidden("provider", &provider.to_string()));
        main.push_str(&hidden("consumer", consumer.as_str()));
        if delete {
            main.push_str(&hidden("delete", "1"));
        }
        let _ = writeln!(
            main,
            "<button type=\"submit\" class=\"danger\">{}</button>\n</form>",
            escape(&button)
        );
    }
    let _ = writeln!(
        main,
        "<p>{} · {}</p>",
        link("/consumers", "back to the consumers"),
        link(&provider_path(&provider.to_string()), &provider.to_string())
    );
    page(title, main)
}

/// A form's page up to its fields: the title, what it does (`said`), and
/// the form posting to `action` with the session's value and the consumer
/// and provider it is about.
fn form_head(
    title: &str,
    said: &str,
    action: &str,
    consumer: &ModuleId,
    provider: &ModuleId,
    csrf: &str,
) -> String {
    let mut main = format!(
        "<h1>{}</h1>\n<p>{}</p>\n<form method=\"post\" action=\"{action}\" class=\"act\">\n",
        escape(title),
        escape(said)
    );
    main.push_str(&hidden("csrf", csrf));
    main.push_str(&hidden("consumer", &consumer.to_string()));
    main.push_str(&hidden("provider", &provider.to_string()));
    main
}

/// The form that attaches a note to `consumer`'s interval from `provider`.
pub fn note_form(consumer: &ModuleId, provider: &ModuleId, max_chars: usize, csrf: &str) -> Page {
    let title = format!("note on {consumer}");
    let said = format!(
        "What was learnt about {consumer} failing from {provider}: it is kept in history, and \
         the next time it fails its line quotes it."
    );
    let mut main = form_head(&title, &said, "/act/note", consumer, provider, csrf);
    let _ = writeln!(
        main,
        "<label for=\"note\">note</label>\n<textarea id=\"note\" name=\"text\" rows=\"3\" \
         maxlength=\"{max_chars}\" required></textarea>\n\
         <button type=\"submit\">keep the note</button>\n</form>\n<p>{}</p>",
        link(
            &consumer_path(consumer.module.as_str(), consumer.machine.as_str()),
            "back to the consumer"
        )
    );
    page(title, main)
}

/// The form that acknowledges `consumer`'s problem from `provider`: a
/// reason and how long it holds.
pub fn acknowledge_form(
    consumer: &ModuleId,
    provider: &ModuleId,
    max_chars: usize,
    csrf: &str,
) -> Page {
    let title = format!("acknowledge {consumer}");
    let said = format!(
        "Say that {consumer} failing from {provider} is being worked on, and why. It changes no \
         verdict: status, the metrics and the alerts still say the problem; its page says who is \
         on it until the time given."
    );
    let mut main = form_head(&title, &said, "/act/acknowledge", consumer, provider, csrf);
    let _ = write!(
        main,
        "<label for=\"reason\">reason</label>\n<input id=\"reason\" name=\"reason\" \
         maxlength=\"{max_chars}\" required>\n<label for=\"for\">for</label>\n\
         <select id=\"for\" name=\"for\">\n"
    );
    for (i, d) in ACKNOWLEDGE_FOR.iter().enumerate() {
        let selected = if i == 1 { " selected" } else { "" };
        let _ = writeln!(main, "<option value=\"{d}\"{selected}>{d}</option>");
    }
    let _ = writeln!(
        main,
        "</select>\n<button type=\"submit\">acknowledge</button>\n</form>\n<p>{}</p>",
        link(
            &consumer_path(consumer.module.as_str(), consumer.machine.as_str()),
            "back to the consumer"
        )
    );
    page(title, main)
}

/// The answer of an approval: what the provider said (`said`, `done`),
/// and whether history recorded it (`recorded`: `Err` says why not).
pub fn answer(
    provider: &ModuleId,
    consumer: &Name,
    delete: bool,
    done: bool,
    said: &str,
    recorded: Result<&str, &str>,
) -> Page {
    let title = match (delete, done) {
        (false, true) => format!("{consumer} retired"),
        (true, true) => format!("{consumer} deleted"),
        (false, false) => format!("{consumer} not retired"),
        (true, false) => format!("{consumer} not deleted"),
    };
    let action = if delete {
        ActionWord::ApproveDelete
    } else {
        ActionWord::Approve
    };
    let class = if done { "well" } else { "unwell" };
    let mut main = format!(
        "<h1>{}</h1>\n<p class=\"sentence {class}\" role=\"status\">{}</p>\n",
        escape(&title),
        escape(said)
    );
    let _ = writeln!(
        main,
        "<p>{}</p>",
        escape(&match recorded {
            Ok(by) => format!("Recorded in history: {action} by {by}."),
            Err(why) => format!("Not recorded in history: {why}"),
        })
    );
    let _ = writeln!(
        main,
        "<p>{} · {}</p>",
        link("/consumers", "the consumers"),
        link(&provider_path(&provider.to_string()), &provider.to_string())
    );
    page(title, main)
}

/// Why an action is refused (not logged in as a token that may act, a
/// form without its session's value, a bad field): `title` and `text`.
pub fn refused(title: &str, text: &str) -> Page {
    page(
        title.to_owned(),
        format!(
            "<h1>{}</h1>\n<p class=\"notice\">{}</p>\n<p>{}</p>\n",
            escape(title),
            escape(text),
            link("/", "the mesh")
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(s: &str) -> ModuleId {
        ModuleId::parse(s).unwrap()
    }

    #[test]
    fn a_confirmation_names_what_happens_and_carries_the_session_value() {
        let (p, c) = (id("postgres@db-1"), Name::parse("docs").unwrap());
        let retire = approve_confirm(&p, &c, false, &[], "f<1>");
        assert!(
            retire.main.contains("postgres@db-1 retires docs now"),
            "{}",
            retire.main
        );
        assert!(retire.main.contains("name=\"csrf\" value=\"f&lt;1&gt;\""));
        assert!(retire.main.contains(">retire docs now</button>"));
        assert!(!retire.main.contains("name=\"delete\""));
        let delete = approve_confirm(&p, &c, true, &[], "f");
        assert!(delete.main.contains("This cannot be undone."));
        assert!(delete.main.contains("name=\"delete\" value=\"1\""));
        let required = approve_confirm(&p, &c, true, &["docs@app-1".into()], "f");
        assert!(
            !required.main.contains("<form"),
            "no button for a required consumer: {}",
            required.main
        );
        assert!(required
            .main
            .contains("still requires docs from postgres@db-1 (docs@app-1)"));
        assert_eq!(
            approve_path(&p, &c, true),
            "/act/approve?provider=postgres@db-1&consumer=docs&delete=1"
        );
    }

    #[test]
    fn an_answer_says_what_the_provider_said_and_whether_history_has_it() {
        let (p, c) = (id("postgres@db-1"), Name::parse("docs").unwrap());
        let done = answer(
            &p,
            &c,
            false,
            true,
            "done by postgres@db-1: retired <docs>",
            Ok("ana"),
        );
        assert_eq!(done.title, "docs retired");
        assert!(done.main.contains("retired &lt;docs&gt;"));
        assert!(done.main.contains("Recorded in history: approve by ana."));
        let not = answer(&p, &c, true, false, "refused", Err("the store is away"));
        assert_eq!(not.title, "docs not deleted");
        assert!(not
            .main
            .contains("Not recorded in history: the store is away"));
    }
}
