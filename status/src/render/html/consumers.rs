//! The consumer table (`/consumers`, and a machine's consumers on its
//! page): the counts by state in its header, each a link that filters by
//! it; a filter form that works without a script (a `GET` with query
//! parameters); the page's lines; links to the pages before and after.

use std::fmt::Write as _;

use mesh_protocol::{Class, ModuleId, Timestamp};

use super::act::approve_path;
use super::{consumer_path, escape, link, machine_path, provider_path, time};
use crate::model::consumers::{ConsumerLine, ConsumerQuery, ConsumerState, ConsumerTable};

/// What the table shows.
#[derive(Clone, Copy, Debug)]
pub struct TableView<'a> {
    /// What was asked.
    pub query: &'a ConsumerQuery,
    /// The page read, with the counts.
    pub table: &'a ConsumerTable,
    /// The declared providers (each a link and a choice of the filter).
    pub providers: &'a [ModuleId],
    /// The declared machines (each a link and a choice of the filter).
    pub machines: &'a [String],
    /// The store's clock, for how long ago each line's time is.
    pub now: Timestamp,
    /// Whether the console asks providers for approvals: a retiring line
    /// then links the approval of its retirement, a retired one of its
    /// deletion.
    pub approvals: bool,
}

/// A state's mark: a sign beside its word, so its colour is never the only
/// signal.
fn mark(state: ConsumerState) -> &'static str {
    match state {
        ConsumerState::Failing => "✕",
        ConsumerState::Retiring => "◔",
        ConsumerState::Retired => "−",
        ConsumerState::Deleted => "∅",
        ConsumerState::Ok => "✓",
    }
}

/// The counts in the header: `2 failing · 1 retiring · 47 ok` (states with
/// none left out), each a link to the table narrowed to it, and `all N`
/// back to every state; on the table itself (`here`) the one shown now is
/// no link.
fn counts(query: &ConsumerQuery, table: &ConsumerTable, here: bool) -> String {
    let mut parts: Vec<String> = Vec::new();
    let item = |state: Option<ConsumerState>, text: String| {
        if here && query.state == state {
            format!("<strong aria-current=\"page\">{}</strong>", escape(&text))
        } else {
            link(&query.in_state(state).path(), &text)
        }
    };
    for (state, n) in &table.counts {
        if *n > 0 || query.state == Some(*state) {
            parts.push(item(Some(*state), format!("{n} {state}")));
        }
    }
    parts.push(item(None, format!("all {}", table.count(None))));
    format!("<p class=\"counts\">{}</p>\n", parts.join(" · "))
}

fn select(
    id: &str,
    label: &str,
    choices: impl IntoIterator<Item = String>,
    chosen: Option<String>,
) -> String {
    let mut out = format!(
        "<span class=\"field\"><label for=\"{id}\">{label}</label>\n\
         <select id=\"{id}\" name=\"{label}\">\n<option value=\"\">any</option>\n"
    );
    for c in choices {
        let selected = if chosen.as_deref() == Some(c.as_str()) {
            " selected"
        } else {
            ""
        };
        let _ = writeln!(
            out,
            "<option value=\"{0}\"{selected}>{0}</option>",
            escape(&c)
        );
    }
    out.push_str("</select></span>\n");
    out
}

/// The filter: a form that asks `/consumers` with its fields as query
/// parameters (a script is not needed).
fn filter(v: &TableView<'_>) -> String {
    let q = v.query;
    let mut out = String::from(
        "<form class=\"filter\" method=\"get\" action=\"/consumers\" role=\"search\">\n",
    );
    out.push_str(&select(
        "f-state",
        "state",
        ConsumerState::ALL.iter().map(|s| s.to_string()),
        q.state.map(|s| s.to_string()),
    ));
    out.push_str(&select(
        "f-provider",
        "provider",
        v.providers.iter().map(ToString::to_string),
        q.provider.as_ref().map(ToString::to_string),
    ));
    out.push_str(&select(
        "f-machine",
        "machine",
        v.machines.iter().cloned(),
        q.machine.as_ref().map(ToString::to_string),
    ));
    out.push_str(&select(
        "f-class",
        "class",
        Class::ALL.iter().map(|c| c.to_string()),
        q.class.map(|c| c.to_string()),
    ));
    let _ = write!(
        out,
        "<span class=\"field\"><label for=\"f-name\">name</label>\n<input id=\"f-name\" \
         name=\"name\" value=\"{}\" pattern=\"[a-z0-9_\\-]*\" maxlength=\"63\" \
         title=\"a part of a consumer's name: a-z 0-9 _ -\"></span>\n\
         <button type=\"submit\">filter</button>\n",
        escape(q.name.as_deref().unwrap_or(""))
    );
    if *q != ConsumerQuery::default() {
        out.push_str("<a href=\"/consumers\">every consumer</a>\n");
    }
    out.push_str("</form>\n");
    out
}

/// One line's row.
fn row(line: &ConsumerLine, v: &TableView<'_>) -> String {
    let state = line.state;
    let consumer = match &line.machine {
        Some(m) if line.declared => link(
            &consumer_path(line.consumer.as_str(), m.as_str()),
            &format!("{}@{m}", line.consumer),
        ),
        Some(m) => escape(&format!("{}@{m}", line.consumer)),
        None => escape(line.consumer.as_str()),
    };
    let provider = line.provider.to_string();
    let provider = if v.providers.contains(&line.provider) {
        link(&provider_path(&provider), &provider)
    } else {
        escape(&provider)
    };
    // A table narrowed to a machine (as on its page) leaves its name plain.
    let machine = match &line.machine {
        Some(m)
            if v.query.machine.as_ref() != Some(m)
                && v.machines.iter().any(|x| x == m.as_str()) =>
        {
            link(&machine_path(m.as_str()), m.as_str())
        }
        Some(m) => escape(m.as_str()),
        None => "?".to_owned(),
    };
    let act = match (v.approvals, state) {
        (true, ConsumerState::Retiring) => Some((false, "approve retiring…")),
        (true, ConsumerState::Retired) => Some((true, "approve deleting…")),
        _ => None,
    };
    let act = act.map_or_else(String::new, |(delete, text)| {
        format!(
            " <a class=\"act\" href=\"{}\">{text}</a>",
            escape(&approve_path(&line.provider, &line.consumer, delete))
        )
    });
    let since = line.since.map_or_else(String::new, |at| time(at, v.now));
    let class = line.class.map_or_else(String::new, |c| c.to_string());
    format!(
        "<tr class=\"{state}\"><td class=\"state\"><span class=\"mark\" aria-hidden=\"true\">{}</span> \
         {state}{act}</td><td>{consumer}</td><td>{since}</td><td>{provider}</td><td>{machine}</td>\
         <td>{class}</td></tr>\n",
        mark(state)
    )
}

/// The links to the pages before and after, and where this one is.
fn pages(v: &TableView<'_>) -> String {
    let (page, last) = (v.query.page, v.table.pages(v.query));
    if last <= 1 && page <= 1 {
        return String::new();
    }
    let mut out = String::from("<nav class=\"pages\" aria-label=\"pages of the table\">");
    if page > 1 {
        let back = page.min(last.saturating_add(1)) - 1;
        let _ = write!(
            out,
            "<a rel=\"prev\" href=\"{}\">‹ previous</a> ",
            escape(&v.query.on_page(back).path())
        );
    }
    let _ = write!(out, "<span>page {page} of {last}</span>");
    if page < last {
        let _ = write!(
            out,
            " <a rel=\"next\" href=\"{}\">next ›</a>",
            escape(&v.query.on_page(page + 1).path())
        );
    }
    out.push_str("</nav>\n");
    out
}

/// The table's lines under their header, or a line saying none are.
fn lines(v: &TableView<'_>) -> String {
    if v.table.lines.is_empty() {
        let said = if v.table.count(v.query.state) == 0 {
            "No consumer is in this table's selection."
        } else {
            "No line on this page: the selection ends before it."
        };
        return format!("<p class=\"none\">{said}</p>\n");
    }
    let mut out = String::from(
        "<div class=\"scroll\"><table class=\"consumers\">\n<thead><tr><th scope=\"col\">state</th>\
         <th scope=\"col\">consumer</th><th scope=\"col\">since</th><th scope=\"col\">provider</th>\
         <th scope=\"col\">machine</th><th scope=\"col\">class</th></tr></thead>\n<tbody>\n",
    );
    for line in &v.table.lines {
        out.push_str(&row(line, v));
    }
    out.push_str("</tbody>\n</table></div>\n");
    out
}

/// The `<main>` fragment of `/consumers`.
pub fn table(v: &TableView<'_>) -> String {
    let mut out = String::from("<h1>consumers</h1>\n");
    out.push_str(&counts(v.query, v.table, true));
    out.push_str(&filter(v));
    out.push_str(&lines(v));
    out.push_str(&pages(v));
    out
}

/// A machine's consumers, on its page: the counts and the first page of
/// the table narrowed to the machine (`v.query`), and a link to the rest.
pub fn on_machine(v: &TableView<'_>) -> String {
    let mut out = String::from("<h2>Consumers on this machine</h2>\n");
    out.push_str(&counts(v.query, v.table, false));
    out.push_str(&lines(v));
    if v.table.pages(v.query) > 1 {
        let _ = writeln!(
            out,
            "<p>{}</p>",
            link(
                &v.query.path(),
                &format!("all {} in the consumer table", v.table.count(None))
            )
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use mesh_protocol::Name;

    fn ts(s: &str) -> Timestamp {
        Timestamp::parse(s).unwrap()
    }

    fn line(consumer: &str, state: ConsumerState, declared: bool) -> ConsumerLine {
        ConsumerLine {
            provider: ModuleId::parse("postgres@db-1").unwrap(),
            consumer: Name::parse(consumer).unwrap(),
            machine: Some(Name::parse("app-1").unwrap()),
            state,
            since: Some(ts("2026-12-04T21:00:00Z")),
            class: (state == ConsumerState::Failing).then_some(Class::CredentialsRejected),
            declared,
        }
    }

    fn table_of(lines: Vec<ConsumerLine>, counts: [u64; 5]) -> ConsumerTable {
        ConsumerTable {
            counts: ConsumerState::ALL.into_iter().zip(counts).collect(),
            lines,
        }
    }

    fn view<'a>(q: &'a ConsumerQuery, t: &'a ConsumerTable, p: &'a [ModuleId]) -> TableView<'a> {
        TableView {
            query: q,
            table: t,
            providers: p,
            machines: &[],
            now: ts("2026-12-04T21:30:00Z"),
            approvals: true,
        }
    }

    #[test]
    fn the_header_counts_each_state_and_links_all_but_the_one_shown() {
        let t = table_of(vec![], [2, 1, 0, 0, 47]);
        let q = ConsumerQuery::default();
        let html = counts(&q, &t, true);
        assert!(
            html.contains(
                "<a href=\"/consumers?state=failing\">2 failing</a> · \
                           <a href=\"/consumers?state=retiring\">1 retiring</a> · \
                           <a href=\"/consumers?state=ok\">47 ok</a> · \
                           <strong aria-current=\"page\">all 50</strong>"
            ),
            "{html}"
        );
        let q = q.in_state(Some(ConsumerState::Failing)).on_page(2);
        let html = counts(&q, &t, true);
        assert!(
            html.contains("<strong aria-current=\"page\">2 failing</strong>"),
            "{html}"
        );
        assert!(html.contains("<a href=\"/consumers\">all 50</a>"), "{html}");
    }

    #[test]
    fn a_line_says_its_state_in_words_and_links_only_pages_that_exist() {
        let p = [ModuleId::parse("postgres@db-1").unwrap()];
        let t = table_of(
            vec![
                line("wiki", ConsumerState::Failing, true),
                line("ghost", ConsumerState::Ok, false),
            ],
            [1, 0, 0, 0, 1],
        );
        let q = ConsumerQuery::default();
        let html = table(&view(&q, &t, &p));
        assert!(
            html.contains("<td class=\"state\"><span class=\"mark\" aria-hidden=\"true\">✕</span> failing</td>"),
            "{html}"
        );
        assert!(
            html.contains("<a href=\"/consumer/wiki@app-1\">wiki@app-1</a>"),
            "{html}"
        );
        assert!(
            html.contains("<td>ghost@app-1</td>"),
            "undeclared: no page\n{html}"
        );
        assert!(html.contains("credentials-rejected"), "{html}");
        assert!(html.contains(">30 min ago</time>"), "{html}");
        assert!(
            !html.contains("pages of the table"),
            "one page: no paging\n{html}"
        );
        // No link to the page it is.
        assert!(!html.contains("href=\"/consumers\""), "{html}");
    }

    #[test]
    fn pages_link_before_and_after_and_keep_the_filter() {
        let t = table_of(
            vec![line("wiki", ConsumerState::Failing, true)],
            [250, 0, 0, 0, 0],
        );
        let q = ConsumerQuery {
            state: Some(ConsumerState::Failing),
            page: 2,
            ..ConsumerQuery::default()
        };
        let html = table(&view(&q, &t, &[]));
        assert!(
            html.contains(
                "<a rel=\"prev\" href=\"/consumers?state=failing\">‹ previous</a> \
                           <span>page 2 of 3</span> \
                           <a rel=\"next\" href=\"/consumers?state=failing&amp;page=3\">next ›</a>"
            ),
            "{html}"
        );
        assert!(
            html.contains("<option value=\"failing\" selected>"),
            "{html}"
        );
    }

    #[test]
    fn a_page_past_the_end_says_so_and_links_back() {
        let t = table_of(vec![], [3, 0, 0, 0, 0]);
        let q = ConsumerQuery::default().on_page(9);
        let html = table(&view(&q, &t, &[]));
        assert!(html.contains("the selection ends before it"), "{html}");
        assert!(
            html.contains("<a rel=\"prev\" href=\"/consumers\">"),
            "{html}"
        );
        let none = table(&view(
            &ConsumerQuery::default(),
            &table_of(vec![], [0; 5]),
            &[],
        ));
        assert!(
            none.contains("No consumer is in this table's selection."),
            "{none}"
        );
    }

    #[test]
    fn a_machine_page_links_every_count_and_the_rest_of_its_table() {
        let t = table_of(
            vec![line("wiki", ConsumerState::Failing, true)],
            [1, 0, 0, 0, 150],
        );
        let q = ConsumerQuery {
            machine: Some(Name::parse("app-1").unwrap()),
            ..ConsumerQuery::default()
        };
        let html = on_machine(&view(&q, &t, &[]));
        assert!(
            html.contains("<a href=\"/consumers?machine=app-1\">all 151</a>"),
            "{html}"
        );
        assert!(
            html.contains("<a href=\"/consumers?machine=app-1\">all 151 in the consumer table</a>"),
            "{html}"
        );
        assert!(html.contains("wiki@app-1"), "{html}");
    }

    #[test]
    fn what_was_typed_is_escaped() {
        let t = table_of(vec![], [0; 5]);
        let q = ConsumerQuery {
            name: Some("\"><script>".to_owned()),
            ..ConsumerQuery::default()
        };
        let html = table(&view(&q, &t, &[]));
        assert!(!html.contains("<script>"), "{html}");
    }
}
