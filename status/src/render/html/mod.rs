//! The console's pages as HTML (`mesh-console`): server-rendered,
//! readable without JavaScript, every text escaped ([`escape`]).
//!
//! A page is its `<main>` fragment ([`mesh::overview`] for the mesh and a
//! machine, [`detail::provider`], [`detail::consumer`]) inside the one
//! [`document`] around it. The document links the embedded [`CSS`] and
//! [`JS`]; the script follows `/events?page=PATH` and puts each fragment
//! the console sends for the page in place of its `<main>`, so a page
//! without the script is whole and a page with it stays current.
//!
//! What a page says comes from the status engine's report, as `status`
//! prints it: untrusted text (errors, details) is what the store keeps,
//! secrets already removed by the provider, cut to its bound.

pub mod act;
pub mod consumers;
pub mod detail;
pub mod mesh;

use std::fmt::Write as _;

use mesh_protocol::Timestamp;

use crate::report::history::duration_text;

/// The console's style sheet, served at `/assets/console.css`.
pub const CSS: &str = include_str!("console.css");

/// The console's script, served at `/assets/console.js`: it follows the
/// page's events and replaces its `<main>` with each fragment sent.
pub const JS: &str = include_str!("console.js");

/// `text` with `&`, `<`, `>`, `"` and `'` written as entities: safe in an
/// element's text and in a quoted attribute.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// A link to `href` (a console path) reading `text`, both escaped.
pub(crate) fn link(href: &str, text: &str) -> String {
    format!("<a href=\"{}\">{}</a>", escape(href), escape(text))
}

/// `at` as a `<time>`: its RFC 3339 form in `datetime`, how long before
/// (or after) `now` it is as its text (`21 min ago`, `in 2 h 5 min`;
/// whole minutes, down for a time past and up for one to come, `under a
/// minute ago` below one), and the time in UTC on hover, so a page read
/// without the script still says it. The script brings the text up to date
/// as the page stays open, and says the local time too.
pub(crate) fn time(at: Timestamp, now: Timestamp) -> String {
    let (before, seconds) = match now.system_time().duration_since(at.system_time()) {
        Ok(ago) => (true, ago.as_secs()),
        Err(ahead) => (false, ahead.duration().as_secs()),
    };
    // To the minute: down for a time past, up for one to come (an hour
    // from now says `in 1 h` until 59 minutes are left), as the
    // page's script says them afterwards.
    let text = match (before, seconds) {
        (true, 0..60) => "under a minute ago".to_owned(),
        (false, 0..60) => "in under a minute".to_owned(),
        (true, _) => format!("{} ago", duration_text(seconds / 60 * 60)),
        (false, _) => format!("in {}", duration_text(seconds.div_ceil(60) * 60)),
    };
    // `2026-12-04T21:09:00Z`, and for the hover `2026-12-04 21:09:00 UTC`.
    let iso = at.to_string();
    let (day, clock) = iso.split_once('T').unwrap_or((&iso, ""));
    let clock = clock.trim_end_matches('Z');
    format!("<time datetime=\"{iso}\" title=\"{day} {clock} UTC\">{text}</time>")
}

/// The path of the page of machine `machine`.
pub fn machine_path(machine: &str) -> String {
    format!("/machine/{machine}")
}

/// The path of the page of a provider `module@machine`.
pub fn provider_path(provider: &str) -> String {
    format!("/provider/{provider}")
}

/// The path of the page of a consumer `consumer@machine`.
pub fn consumer_path(consumer: &str, machine: &str) -> String {
    format!("/consumer/{consumer}@{machine}")
}

/// One page: its title, its own path (what its events are asked by; empty
/// for a page nothing follows) and its `<main>` fragment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Page {
    /// The title (plain text; escaped when written).
    pub title: String,
    /// The page's path, e.g. `/machine/app-1`.
    pub path: String,
    /// The `<main>` element's content (HTML).
    pub main: String,
    /// Where it is: the pages above it and itself, outermost first, each
    /// its text and path; the one whose path is the page's own (or empty)
    /// is said, not linked.
    pub crumbs: Vec<(String, String)>,
}

/// The whole document of `page`: the head with its title, the embedded
/// assets' links and the icon, a navigation bar (where the page is, and the
/// consumer table), the `<main>`.
pub fn document(page: &Page) -> String {
    document_for(page, None)
}

/// [`document`] for a logged-in session: `session` (its name and its
/// forms' CSRF value) is named in the bar beside a log-out button.
pub fn document_for(page: &Page, session: Option<(&str, &str)>) -> String {
    let mut nav = navigation(page);
    if let Some((name, csrf)) = session {
        let _ = write!(
            nav,
            "<form class=\"logout\" method=\"post\" action=\"/logout\"><span>{}</span> \
             <input type=\"hidden\" name=\"csrf\" value=\"{}\">\
             <button type=\"submit\">log out</button></form> ",
            escape(name),
            escape(csrf)
        );
    }
    let mut out = String::with_capacity(page.main.len() + 1024);
    let _ = write!(
        out,
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{} · mesh console</title>\n\
         <link rel=\"icon\" href=\"/assets/favicon.svg\" type=\"image/svg+xml\">\n\
         <link rel=\"stylesheet\" href=\"/assets/console.css\">\n\
         <script src=\"/assets/console.js\" defer></script>\n</head>\n\
         <body data-page=\"{}\">\n<header><nav>{}\
         <span class=\"live\" id=\"live\" role=\"status\" hidden>live</span></nav></header>\n\
         <main id=\"main\">\n{}</main>\n</body>\n</html>\n",
        escape(&page.title),
        escape(&page.path),
        nav,
        page.main
    );
    out
}

/// The navigation bar's links: the page's crumbs (itself said, not
/// linked), then the consumer table unless the page is it.
fn navigation(page: &Page) -> String {
    let mut out = String::from("<ol class=\"crumbs\" aria-label=\"where this page is\">");
    for (text, path) in &page.crumbs {
        if path.is_empty() || *path == page.path {
            let _ = write!(out, "<li aria-current=\"page\">{}</li>", escape(text));
        } else {
            let _ = write!(out, "<li>{}</li>", link(path, text));
        }
    }
    out.push_str("</ol>");
    let table_above = page.crumbs.iter().any(|(_, path)| path == "/consumers");
    if !page.path.starts_with("/consumers") && !table_above {
        out.push_str(" <a class=\"table\" href=\"/consumers\">consumers</a>");
    }
    out.push(' ');
    out
}

/// The crumbs of a page below the mesh's: the mesh, then `trail`.
pub fn crumbs(trail: &[(String, String)]) -> Vec<(String, String)> {
    let mut all = vec![("mesh".to_owned(), "/".to_owned())];
    all.extend(trail.iter().cloned());
    all
}

/// The console's icon, served at `/assets/favicon.svg`.
pub const FAVICON: &str = include_str!("favicon.svg");

/// A page saying why there is nothing at a path (404) or why it cannot be
/// shown now (the store away: 503), with a link home. `path` is the page
/// it stands for, followed by the script as that page would be (so it
/// mends itself when the store is back); empty for none (a 404).
pub fn notice(path: &str, title: &str, text: &str) -> Page {
    Page {
        title: title.to_owned(),
        path: path.to_owned(),
        main: format!(
            "<h1>{}</h1>\n<p class=\"notice\">{}</p>\n<p><a href=\"/\">the mesh</a></p>\n",
            escape(title),
            escape(text)
        ),
        crumbs: crumbs(&[(title.to_owned(), String::new())]),
    }
}

/// The page asking for the console's token (`GET /login`, and the body of
/// a refused request): a form that posts it to `/login`, and the page to
/// go to after (`next`, a path of the console's: a refused request's own).
/// `refused` says the token given was not the console's.
pub fn login(refused: bool, next: &str) -> Page {
    let said = if refused {
        "<p class=\"notice\">That is not the console's token.</p>\n"
    } else {
        "<p>This console needs its token (the file given to <code>--token-file</code>).</p>\n"
    };
    Page {
        title: "log in".to_owned(),
        // Not followed: nothing on it changes.
        path: String::new(),
        main: format!(
            "<h1>log in</h1>\n{said}<form method=\"post\" action=\"/login\">\n\
             <label for=\"token\">token</label>\n\
             <input id=\"token\" name=\"token\" type=\"password\" autocomplete=\"current-password\" required>\n\
             <input type=\"hidden\" name=\"next\" value=\"{}\">\n\
             <button type=\"submit\">log in</button>\n</form>\n",
            escape(next)
        ),
        crumbs: crumbs(&[("log in".to_owned(), String::new())]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_time_says_how_long_ago_in_its_text_and_utc_on_hover() {
        let ts = |s: &str| Timestamp::parse(s).unwrap();
        let now = ts("2026-12-04T21:30:37Z");
        assert_eq!(
            time(ts("2026-12-04T21:09:00Z"), now),
            "<time datetime=\"2026-12-04T21:09:00Z\" title=\"2026-12-04 21:09:00 UTC\">21 min ago</time>"
        );
        assert!(time(now, now).contains(">under a minute ago<"));
        assert!(time(ts("2026-12-03T20:00:00Z"), now).contains(">1 d 1 h ago<"));
        // A time to come is rounded up to the minute, a time past down, as
        // the page's script says them.
        assert!(time(ts("2026-12-04T23:40:00Z"), now).contains(">in 2 h 10 min<"));
        assert!(time(ts("2026-12-04T22:30:36Z"), now).contains(">in 1 h<"));
        assert!(time(ts("2026-12-04T22:29:37Z"), now).contains(">in 59 min<"));
        assert!(time(ts("2026-12-04T21:31:36Z"), now).contains(">in under a minute<"));
        assert!(time(ts("2026-12-04T20:30:38Z"), now).contains(">59 min ago<"));
    }

    #[test]
    fn escape_leaves_no_markup() {
        assert_eq!(
            escape(r#"<script>alert("x") & 'y'</script>"#),
            "&lt;script&gt;alert(&quot;x&quot;) &amp; &#39;y&#39;&lt;/script&gt;"
        );
        assert_eq!(escape("wiki@app-1"), "wiki@app-1");
    }

    #[test]
    fn the_document_escapes_its_title_and_path_and_links_only_its_own_assets() {
        let page = Page {
            title: "<b>".into(),
            path: "/machine/\"x".into(),
            main: "<p>kept</p>".into(),
            crumbs: crumbs(&[("machine \"x".into(), "/machine/\"x".into())]),
        };
        let html = document(&page);
        assert!(
            html.contains("<title>&lt;b&gt; · mesh console</title>"),
            "{html}"
        );
        assert!(html.contains("data-page=\"/machine/&quot;x\""), "{html}");
        assert!(
            html.contains("<main id=\"main\">\n<p>kept</p></main>"),
            "{html}"
        );
        assert!(
            html.contains(
                "<li><a href=\"/\">mesh</a></li><li aria-current=\"page\">machine &quot;x</li>"
            ),
            "where it is, itself not linked: {html}"
        );
        let links: Vec<&str> = html.match_indices("=\"").map(|(i, _)| &html[i..]).collect();
        for l in links {
            assert!(!l.starts_with("=\"http"), "nothing fetched elsewhere: {l}");
        }
    }
}
