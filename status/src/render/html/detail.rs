//! A provider's page (its consumers, failing or not, and what its newest
//! `alive` says) and a consumer's page (what fails it now, a bar per day
//! over 7 and 30 days, its history's entries and totals).

use std::fmt::Write as _;

use mesh_protocol::{ModuleId, Name, Timestamp};

use super::mesh::standing_item;
use super::{consumer_path, escape, link, provider_path};
use crate::model::AliveRow;
use crate::render::history::{line, summary_line};
use crate::render::why::WhyLines;
use crate::report::days::{failing_days, failing_hours, uptime, Bar};
use crate::report::history::{duration_text, ConsumerSummary, EntryKind, HistoryEntry};
use crate::report::{Head, Listed};

/// What a provider's page shows.
#[derive(Clone, Copy, Debug)]
pub struct ProviderView<'a> {
    /// The provider.
    pub provider: &'a ModuleId,
    /// The mesh's report (whether the provider is unheard, its fault).
    pub head: &'a Head,
    /// Its newest `alive`, if it was heard from.
    pub alive: Option<&'a AliveRow>,
    /// The consumers the declaration gives it, `(consumer, machine)`, in order.
    pub consumers: &'a [(String, String)],
    /// Its standings listed, in order.
    pub standings: &'a [Listed],
    /// The store's clock, for how long ago each time is.
    pub now: Timestamp,
}

/// The `<main>` fragment of a provider's page.
pub fn provider(v: &ProviderView<'_>) -> String {
    let name = v.provider.to_string();
    let mut out = format!("<h1>provider {}</h1>\n", escape(&name));
    let unheard = v.head.unheard().any(|u| &u.provider == v.provider);
    let refused = v.head.input_refused().any(|i| &i.provider == v.provider);
    let state = if unheard {
        "<p class=\"sentence unwell\">not heard from: a provider that is down says nothing</p>"
    } else if refused && v.standings.is_empty() {
        "<p class=\"sentence unwell\">heard from, failing no consumer, but its input refused \
         holds back a required one</p>"
    } else if v.standings.is_empty() {
        "<p class=\"sentence well\">heard from, failing no consumer</p>"
    } else {
        ""
    };
    out.push_str(state);
    if !unheard && !v.standings.is_empty() {
        let _ = write!(
            out,
            "<p class=\"sentence unwell\">failing {} of the {} consumers the declaration gives it</p>",
            v.standings.len(),
            v.consumers.len()
        );
    }
    out.push('\n');
    out.push_str("<h2>Its newest alive</h2>\n<dl class=\"facts\">\n");
    match v.alive {
        None => out.push_str("<dt>heard</dt><dd>never</dd>\n"),
        Some(a) => {
            let settled = a.settled_at.map_or("not yet".to_owned(), |t| t.to_string());
            let _ = write!(
                out,
                "<dt>heard</dt><dd>{}</dd>\n<dt>started</dt><dd>{}</dd>\n\
                 <dt>settled</dt><dd>{}</dd>\n<dt>alive every</dt><dd>{} s</dd>\n\
                 <dt>pass duration</dt><dd>not kept by the store</dd>\n",
                a.heard_at(),
                a.started_at,
                escape(&settled),
                a.alive_every_seconds
            );
        }
    }
    out.push_str("</dl>\n");
    for f in v.head.faults().filter(|f| &f.provider == v.provider) {
        let _ = writeln!(out, "<p class=\"notice\">{}</p>", escape(&f.line()));
    }
    for i in v.head.input_refused().filter(|i| &i.provider == v.provider) {
        let _ = writeln!(out, "<p class=\"notice\">{}</p>", escape(&i.line()));
    }
    out.push_str("<h2>Its consumers</h2>\n<ul class=\"consumers\">\n");
    for (consumer, machine) in v.consumers {
        let failing = v.standings.iter().find(|s| {
            s.row.said.consumer.as_str() == consumer
                && s.row.said.consumer_machine.as_ref().map(Name::as_str) == Some(machine)
        });
        match failing {
            Some(s) => out.push_str(&standing_item(s, v.now, true)),
            None => {
                let _ = writeln!(
                    out,
                    "<li class=\"ok\">{} <span>not failing</span></li>",
                    link(
                        &consumer_path(consumer, machine),
                        &format!("{consumer}@{machine}")
                    )
                );
            }
        }
    }
    for s in v.standings.iter().filter(|s| {
        !v.consumers.iter().any(|(c, m)| {
            s.row.said.consumer.as_str() == c
                && s.row.said.consumer_machine.as_ref().map(Name::as_str) == Some(m)
        })
    }) {
        out.push_str(&standing_item(s, v.now, true));
    }
    out.push_str("</ul>\n");
    out
}

/// What a consumer's page shows.
#[derive(Clone, Copy, Debug)]
pub struct ConsumerView<'a> {
    /// The consumer.
    pub consumer: &'a str,
    /// Its machine.
    pub machine: &'a str,
    /// The providers the declaration says it requires from, in order.
    pub providers: &'a [ModuleId],
    /// Its standings listed now.
    pub standings: &'a [Listed],
    /// Its history's entries over the last 30 days, newest first.
    pub entries: &'a [HistoryEntry],
    /// Its totals over the last 30 days.
    pub summaries: &'a [ConsumerSummary],
    /// Now (the store's clock).
    pub now: Timestamp,
    /// `why`'s verdict on it (`mesh-controller why`'s lines).
    pub why: &'a WhyLines,
    /// When the store's record began (the bars before are no data); none
    /// when the store does not say.
    pub known_from: Option<Timestamp>,
    /// Whether the console takes notes (a token may act): each provider's
    /// section then links the note form.
    pub notes: bool,
}

/// `why`'s verdict as a section: the verdict, what it is joined from, and
/// the runbook's next step with its entry's anchor.
fn why_section(w: &WhyLines) -> String {
    let mut out =
        String::from("<section class=\"why\" aria-labelledby=\"why\">\n<h2 id=\"why\">why</h2>\n");
    let _ = writeln!(out, "<p class=\"verdict\">{}</p>", escape(&w.verdict));
    if !w.lines.is_empty() {
        out.push_str("<ul>\n");
        for l in &w.lines {
            let _ = writeln!(out, "<li>{}</li>", escape(l));
        }
        out.push_str("</ul>\n");
    }
    if let Some((anchor, step)) = &w.next_step {
        let _ = writeln!(
            out,
            "<p class=\"next-step\"><strong>Next step</strong> (runbook, \
             <code>#{}</code>): {}</p>",
            escape(anchor),
            escape(step)
        );
    }
    out.push_str("</section>\n");
    out
}

/// What one bar of a row stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Unit {
    /// A UTC hour.
    Hour,
    /// A UTC day.
    Day,
}

/// A bar's level: `none` (no data: before the store's record began),
/// `ok` (not failing), `some` (failing under 1/24 of its known time: under
/// an hour a day), `much` (failing more). The style sheet gives each a
/// colour and a pattern: colour is never the only signal.
fn level(b: &Bar) -> &'static str {
    if b.no_data() {
        return "none";
    }
    match (b.known_seconds, b.failing_seconds) {
        (_, 0) => "ok",
        (k, f) if f * 24 < k => "some",
        _ => "much",
    }
}

/// A row of bars, oldest first: each says its day (or hour) and how long
/// it failed on hover (`title`), on focus and tap (it is focusable; the
/// style sheet shows its label), and to a screen reader (`aria-label`);
/// under it the first bar's time, the failing total and the uptime over
/// the known time.
pub(crate) fn bars(bars: &[Bar], unit: Unit) -> String {
    let mut out = String::from("<div class=\"bars\">");
    let when = |b: &Bar| {
        let t = b.start.to_string();
        match unit {
            Unit::Day => t.chars().take(10).collect::<String>(),
            Unit::Hour => format!("{} {} UTC", &t[..10], &t[11..16]),
        }
    };
    for b in bars {
        let said = match (b.no_data(), b.failing_seconds) {
            (true, _) => "no data (before the store knew anything)".to_owned(),
            (false, 0) => "not failing".to_owned(),
            (false, f) => format!("failing {}", duration_text(f)),
        };
        let label = format!("{}: {said}", when(b));
        let _ = write!(
            out,
            "<span class=\"day {}\" tabindex=\"0\" role=\"img\" title=\"{label}\" aria-label=\"{label}\" data-label=\"{label}\"></span>",
            level(b)
        );
    }
    out.push_str("</div>\n");
    if let Some(first) = bars.first() {
        let (one, many, last) = match unit {
            Unit::Day => ("day", "days", "today"),
            Unit::Hour => ("hour", "hours", "now"),
        };
        let failing = bars.iter().filter(|b| b.failing_seconds > 0).count();
        let total: u64 = bars.iter().map(|b| b.failing_seconds).sum();
        let known = bars.iter().filter(|b| !b.no_data()).count();
        let said = match (known, failing) {
            (0, _) => "no data yet".to_owned(),
            (_, 0) => format!("not failing on any {one}"),
            (_, n) => format!(
                "failing on {n} of {} {many}, {} in all",
                bars.len(),
                duration_text(total)
            ),
        };
        let up = uptime(bars)
            .map(|u| format!(" · {}.{:02} % up", u / 100, u % 100))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "<p class=\"axis\"><span>{}</span> <span>{said}{up}</span> <span>{last}</span></p>",
            when(first)
        );
    }
    out
}

/// What the bars' colours and patterns mean.
const LEGEND: &str = "<p class=\"legend\">\
    <span class=\"item\"><span class=\"key ok\"></span> not failing</span> \
    <span class=\"item\"><span class=\"key some\"></span> failing under a 24th of the bar \
    (an hour a day)</span> \
    <span class=\"item\"><span class=\"key much\"></span> failing longer</span> \
    <span class=\"item\"><span class=\"key none\"></span> no data (before the store knew \
    anything)</span> <span class=\"item\">times are UTC</span></p>\n";

/// The newest acknowledgement among `entries` (one provider's) that still
/// holds at `now`, said: who is on it, why, until when. It changes no
/// verdict; the page still says what fails.
fn acknowledged(entries: &[HistoryEntry], now: Timestamp) -> Option<String> {
    let ack = entries
        .iter()
        .filter(|e| e.kind == EntryKind::Action && e.reason.as_deref() == Some("acknowledge"))
        .filter(|e| e.until.is_some_and(|u| u > now))
        .max_by_key(|e| e.from)?;
    Some(format!(
        "<p class=\"ack\">{}</p>\n",
        super::mesh::being_worked_on(
            ack.detail.as_deref().unwrap_or(""),
            ack.by.as_deref().unwrap_or("?"),
            ack.until?,
            now
        )
    ))
}

/// The `<main>` fragment of a consumer's page.
pub fn consumer(v: &ConsumerView<'_>) -> String {
    let who = format!("{}@{}", v.consumer, v.machine);
    let mut out = format!("<h1>consumer {}</h1>\n", escape(&who));
    if v.standings.is_empty() {
        out.push_str("<p class=\"sentence well\">no provider says it is failing</p>\n");
    } else {
        out.push_str("<p class=\"sentence unwell\">failing</p>\n<ul class=\"standings\">\n");
        for s in v.standings {
            out.push_str(&standing_item(s, v.now, false));
        }
        out.push_str("</ul>\n");
    }
    out.push_str(&why_section(v.why));
    for p in v.providers {
        let name = p.to_string();
        let mine: Vec<HistoryEntry> = v
            .entries
            .iter()
            .filter(|e| e.provider().as_deref() == Some(name.as_str()))
            .cloned()
            .collect();
        let _ = writeln!(out, "<h2>from {}</h2>", link(&provider_path(&name), &name));
        if let Some(ack) = acknowledged(&mine, v.now) {
            out.push_str(&ack);
        }
        if v.notes {
            let _ = writeln!(
                out,
                "<p class=\"act\">{} · {}</p>",
                link(
                    &super::act::note_path(v.consumer, v.machine, p),
                    "add a note…"
                ),
                link(
                    &super::act::acknowledge_path(v.consumer, v.machine, p),
                    "acknowledge…"
                )
            );
        }
        out.push_str("<h3 class=\"span\">24 hours</h3>\n");
        out.push_str(&bars(
            &failing_hours(&mine, v.now, 24, v.known_from),
            Unit::Hour,
        ));
        for days in [7, 30] {
            let _ = writeln!(out, "<h3 class=\"span\">{days} days</h3>");
            out.push_str(&bars(
                &failing_days(&mine, v.now, days, v.known_from),
                Unit::Day,
            ));
        }
    }
    if !v.providers.is_empty() {
        out.push_str(LEGEND);
    }
    out.push_str("<h2>History (30 days)</h2>\n");
    if v.summaries.is_empty() {
        out.push_str("<p class=\"none\">It did not fail in the last 30 days.</p>\n");
    }
    let window = std::time::Duration::from_secs(30 * 86_400);
    for s in v.summaries {
        let _ = writeln!(
            out,
            "<p class=\"summary\">{}</p>",
            escape(&summary_line(s, window))
        );
    }
    if !v.entries.is_empty() {
        out.push_str("<ul class=\"entries\">\n");
        for e in v.entries {
            let open = if e.is_open() { " open" } else { "" };
            let _ = writeln!(out, "<li class=\"entry{open}\">{}</li>", escape(&line(e)));
        }
        out.push_str("</ul>\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::history::EntryKind;
    use crate::report::{Controller, Problem};

    fn ts(s: &str) -> Timestamp {
        Timestamp::parse(s).unwrap()
    }

    #[test]
    fn a_consumer_page_has_bars_for_7_and_30_days_per_provider_and_its_intervals_escaped() {
        let entries = [HistoryEntry {
            kind: EntryKind::Failing,
            provider_module: Some("postgres".into()),
            provider_machine: Some("db-1".into()),
            consumer: Some("wiki".into()),
            consumer_machine: Some("app-1".into()),
            from: Some(ts("2026-11-27T00:12:00Z")),
            to: Some(ts("2026-11-27T21:40:00Z")),
            seconds: Some(77_280),
            class: Some(mesh_protocol::Class::CredentialsRejected),
            error: Some("<script>x</script>".into()),
            reason: Some("success".into()),
            fault: None,
            detail: None,
            by: None,
            done: None,
            until: None,
        }];
        let providers = [ModuleId::parse("postgres@db-1").unwrap()];
        let why = WhyLines {
            verdict: "failing: postgres@db-1 says <b>credentials-rejected</b>".into(),
            lines: vec!["postgres@db-1 gives it postgres-database: heard from".into()],
            next_step: Some(("class-credentials-rejected".into(), "Wait one pass.")),
        };
        let html = consumer(&ConsumerView {
            consumer: "wiki",
            machine: "app-1",
            providers: &providers,
            standings: &[],
            entries: &entries,
            summaries: &[],
            now: ts("2026-11-28T06:00:00Z"),
            why: &why,
            known_from: Some(ts("2026-11-20T12:00:00Z")),
            notes: true,
        });
        assert!(
            html.contains(
                "<p class=\"verdict\">failing: postgres@db-1 says &lt;b&gt;credentials-rejected&lt;/b&gt;</p>"
            ),
            "{html}"
        );
        assert!(
            html.contains("<li>postgres@db-1 gives it postgres-database: heard from</li>"),
            "{html}"
        );
        assert!(
            html.contains("<code>#class-credentials-rejected</code>): Wait one pass.</p>"),
            "{html}"
        );
        assert_eq!(html.matches("<div class=\"bars\">").count(), 3, "{html}");
        // 24 hours, 7 and 30 days; before the store's record began (the
        // 20th at noon) no data, never green.
        assert_eq!(html.matches("class=\"day ").count(), 61);
        assert_eq!(html.matches("class=\"day none\"").count(), 30 - 9, "{html}");
        assert!(
            html.contains("title=\"2026-11-19: no data (before the store knew anything)\""),
            "{html}"
        );
        assert!(html.contains("class=\"legend\""), "{html}");
        assert!(html.contains("tabindex=\"0\""), "{html}");
        assert!(
            html.contains("failing on 1 of 30 days, 21 h 28 min in all · 88.45 % up"),
            "{html}"
        );
        assert!(
            html.contains("title=\"2026-11-27: failing 21 h 28 min\""),
            "{html}"
        );
        assert!(
            html.contains("failing on 1 of 7 days, 21 h 28 min in all"),
            "{html}"
        );
        assert!(
            html.contains("failing on 1 of 30 days, 21 h 28 min in all"),
            "{html}"
        );
        assert!(
            html.contains("failing credentials-rejected 2026-11-27 00:12 → 21:40"),
            "{html}"
        );
        assert!(!html.contains("<script>"), "{html}");
    }

    #[test]
    fn an_acknowledgement_says_who_is_on_it_until_it_ends_and_changes_no_verdict() {
        let ack = |from: &str, until: &str, why: &str| HistoryEntry {
            kind: EntryKind::Action,
            provider_module: Some("postgres".into()),
            provider_machine: Some("db-1".into()),
            consumer: Some("wiki".into()),
            consumer_machine: Some("app-1".into()),
            from: Some(ts(from)),
            to: Some(ts(from)),
            seconds: Some(0),
            class: None,
            error: None,
            reason: Some("acknowledge".into()),
            fault: None,
            detail: Some(why.into()),
            by: Some("ana".into()),
            done: Some(true),
            until: Some(ts(until)),
        };
        let now = ts("2026-12-05T12:00:00Z");
        let older = ack(
            "2026-12-05T10:00:00Z",
            "2026-12-05T14:00:00Z",
            "first <look>",
        );
        let newer = ack("2026-12-05T11:00:00Z", "2026-12-05T13:00:00Z", "restoring");
        let over = ack("2026-12-05T11:30:00Z", "2026-12-05T11:59:00Z", "done");
        let said = acknowledged(&[older.clone(), newer, over.clone()], now).unwrap();
        assert!(
            said.contains("being worked on: \"restoring\" — ana, until"),
            "{said}"
        );
        assert!(said.contains("datetime=\"2026-12-05T13:00:00Z\""), "{said}");
        let said = acknowledged(&[older], now).unwrap();
        assert!(said.contains("first &lt;look&gt;"), "{said}");
        assert_eq!(acknowledged(&[over], now), None, "ended: not said");
    }

    #[test]
    fn a_provider_page_says_its_consumers_and_alive() {
        let head = Head {
            machine: None,
            sentence: "all well".into(),
            controller: Controller::following_for_tests(),
            problems: vec![],
            grants_reachable: 0,
            grants_unchecked: vec![],
        };
        let p = ModuleId::parse("postgres@db-1").unwrap();
        let alive = AliveRow {
            provider: p.clone(),
            started_at: ts("2026-11-28T05:00:00Z"),
            alive_every_seconds: 60,
            settled_at: None,
            repeat_every_seconds: None,
            said_at: ts("2026-11-28T05:59:00Z"),
            stored_at: Some(ts("2026-11-28T05:59:01Z")),
            fault: None,
            contributions: None,
        };
        let consumers = [("wiki".to_owned(), "app-1".to_owned())];
        let html = provider(&ProviderView {
            provider: &p,
            head: &head,
            alive: Some(&alive),
            consumers: &consumers,
            standings: &[],
            now: ts("2026-12-04T21:30:00Z"),
        });
        assert!(
            html.contains("<dd>2026-11-28T05:59:01Z</dd>"),
            "heard by the bus's clock: {html}"
        );
        assert!(html.contains("<dt>settled</dt><dd>not yet</dd>"), "{html}");
        assert!(html.contains("<a href=\"/consumer/wiki@app-1\">wiki@app-1</a> <span>not failing"));

        // Its refused input: a notice, escaped, and it is not "well".
        let mut head = head;
        head.problems.extend(
            [crate::report::InputRefused {
                input: crate::report::Input::Contributions,
                provider: p.clone(),
                index: Some(0),
                reason: "consumer: \"<b>\" is not a valid name".into(),
                required: vec![ModuleId::parse("wiki@app-1").unwrap()],
                said_at: ts("2026-11-28T05:59:00Z"),
            }]
            .map(Problem::InputRefused),
        );
        let html = provider(&ProviderView {
            provider: &p,
            head: &head,
            alive: Some(&alive),
            consumers: &consumers,
            standings: &[],
            now: ts("2026-12-04T21:30:00Z"),
        });
        assert!(
            html.contains(
                "<p class=\"notice\">wiki@app-1 is held back by postgres@db-1: its contributions \
                 entry 0 was refused: consumer: &quot;&lt;b&gt;&quot; is not a valid name</p>"
            ),
            "{html}"
        );
        assert!(!html.contains("class=\"sentence well\""), "{html}");
    }
}
