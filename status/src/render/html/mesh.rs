//! The mesh page and a machine's page (`status` and `node show` as HTML):
//! the sentence; the consumers failing, grouped by provider and class; then
//! every other line `status` prints (the controller, providers unheard,
//! required consumers retired, faults, grants, repairs, refused entries),
//! as `status` says them; then links to the providers and machines.

use std::fmt::Write as _;

use mesh_protocol::{Class, ModuleId, Name, Timestamp};

use super::{consumer_path, escape, link, machine_path, provider_path, time};
use crate::render::human::{recurrence, Human};
use crate::render::write_all;
use crate::report::{Head, Listed};
use crate::store::FailingGroup;

/// What the mesh page or a machine's page shows.
#[derive(Clone, Copy, Debug)]
pub struct Overview<'a> {
    /// The report's head (its `machine` set for a machine's page).
    pub head: &'a Head,
    /// The standings listed, in cause order (by provider, class, error):
    /// all of them, or at most [`GROUP_ITEMS`] of each provider and class
    /// (the head's failing groups count them all).
    pub standings: &'a [Listed],
    /// The providers in scope, in order (each gets a link).
    pub providers: &'a [ModuleId],
    /// The machines to link to, in order.
    pub machines: &'a [String],
    /// The store's clock, for how long ago each time is.
    pub now: Timestamp,
}

/// The lines `status` prints beside its sentence and its standings, in its
/// wording: the human listing of the head with no standing, less its first
/// line (the sentence).
pub(crate) fn other_lines(head: &Head) -> Vec<String> {
    let mut out = Vec::new();
    // Writing into a Vec cannot fail.
    let _ = write_all(&mut Human::default(), &mut out, head, &[]);
    String::from_utf8_lossy(&out)
        .lines()
        .skip(1)
        .map(|l| l.trim().to_owned())
        .filter(|l| !l.is_empty())
        .collect()
}

/// One standing's item: the consumer (a link to its page unless `linked`
/// is false: on its own page, which says when it was said too), since
/// when, how often, its recurrence, whether it went silent, and its error;
/// times as `<time>`, from `now`.
pub(crate) fn standing_item(s: &Listed, now: Timestamp, linked: bool) -> String {
    let r = &s.row;
    let machine = r.said.consumer_machine.as_ref().map_or("?", Name::as_str);
    let who = match &r.said.consumer_machine {
        Some(m) if linked => link(
            &consumer_path(r.said.consumer.as_str(), m.as_str()),
            &format!("{}@{m}", r.said.consumer),
        ),
        Some(m) => escape(&format!("{}@{m}", r.said.consumer)),
        None => escape(&format!("{}@?", r.said.consumer)),
    };
    let since = match r.first_since {
        Some(first) => format!(
            "since {}, said again since the restart {}",
            time(first, now),
            time(r.said.since, now)
        ),
        None => format!("since {}", time(r.said.since, now)),
    };
    // When it was said, on the consumer's own page; a list (the mesh's, a
    // machine's, a provider's) leaves it out: a page of a thousand
    // standings stays small, and one no longer said is marked silent.
    let said = if linked {
        String::new()
    } else {
        format!(", said {}", time(r.said.said_at, now))
    };
    let mut item = format!(
        "<li class=\"failing\" data-consumer=\"{}@{}\">{who} <span class=\"since\">{since}</span>, \
         {} attempts{said}",
        escape(r.said.consumer.as_str()),
        escape(machine),
        r.said.attempts,
    );
    if let Some(secs) = s.silent_for_seconds {
        let _ = write!(
            item,
            ", <span class=\"silent\">silent for {}</span>",
            crate::report::history::duration_text(secs)
        );
    }
    if let Some(again) = &s.recurrence {
        let _ = write!(
            item,
            " <span class=\"recurrence\">({})</span>",
            escape(&recurrence(again))
        );
    }
    // On the consumer's own page it is said under its provider.
    if let Some(ack) = s.acknowledged.as_ref().filter(|_| linked) {
        let _ = write!(
            item,
            "<br><span class=\"ack\">{}</span>",
            being_worked_on(&ack.reason, &ack.by, ack.until, now)
        );
    }
    let _ = writeln!(
        item,
        "<br><span class=\"error\">{}</span></li>",
        escape(&r.said.error)
    );
    item
}

/// `◷ being worked on: "…" — ana, until in 3 h`: an acknowledgement that
/// holds, said beside the problem it leaves standing (on the lists, and on
/// the consumer's page under its provider).
pub(crate) fn being_worked_on(reason: &str, by: &str, until: Timestamp, now: Timestamp) -> String {
    format!(
        "<span class=\"mark\" aria-hidden=\"true\">◷</span> being worked on: \"{}\" — {}, \
         until {}",
        escape(reason),
        escape(by),
        time(until, now)
    )
}

/// How many standings of one provider and class the mesh page lists
/// (the rest are counted, and on the provider's page): a mesh page stays
/// small whatever fails.
pub const GROUP_ITEMS: usize = 10;

/// The standings of one provider failing for one class.
type ClassGroup<'a> = (mesh_protocol::Class, Vec<&'a Listed>);

/// The failing consumers grouped: one section per provider, within it one
/// list per class.
pub(crate) fn failing<'a>(
    standings: &[Listed],
    now: Timestamp,
    counts: impl Iterator<Item = &'a FailingGroup> + Clone,
) -> String {
    if standings.is_empty() {
        // None listed: none failing, unless the store counted some.
        let counted: u64 = counts.map(|g| g.standings).sum();
        return match counted {
            0 => "<p class=\"none\">No consumer is failing.</p>\n".to_owned(),
            n => format!("<p>{n} failing; none of them listed here.</p>\n"),
        };
    }
    let mut groups: Vec<(&ModuleId, Vec<ClassGroup<'_>>)> = Vec::new();
    for s in standings {
        let provider = &s.row.provider;
        if groups.last().is_none_or(|(p, _)| *p != provider) {
            groups.push((provider, Vec::new()));
        }
        let classes = &mut groups.last_mut().expect("pushed above").1;
        match classes.iter_mut().find(|(c, _)| *c == s.row.said.class) {
            Some((_, list)) => list.push(s),
            None => classes.push((s.row.said.class, vec![s])),
        }
    }
    let mut out = String::new();
    // A group's whole count: the store's, else the standings listed.
    let count_of = |provider: &ModuleId, class: Class, listed: usize| {
        counts
            .clone()
            .find(|g| &g.provider == provider && g.class == class)
            .map_or(listed, |g| {
                usize::try_from(g.standings).unwrap_or(usize::MAX)
            })
    };
    for (provider, classes) in groups {
        let p = provider.to_string();
        let count: usize = classes
            .iter()
            .map(|(c, l)| count_of(provider, *c, l.len()))
            .sum();
        let _ = writeln!(
            out,
            "<section class=\"provider\"><h3>{} fails {count}</h3>",
            link(&provider_path(&p), &p)
        );
        for (class, list) in classes {
            let n = count_of(provider, class, list.len());
            let _ = writeln!(
                out,
                "<h4 class=\"class\">{class} ({n})</h4>\n<ul class=\"standings\">"
            );
            let shown = list.len().min(GROUP_ITEMS);
            for s in &list[..shown] {
                out.push_str(&standing_item(s, now, true));
            }
            if n > shown {
                let _ = writeln!(
                    out,
                    "<li class=\"more\">… and {} more: see {}</li>",
                    n - shown,
                    link(&provider_path(&p), &format!("{p}'s page"))
                );
            }
            out.push_str("</ul>\n");
        }
        out.push_str("</section>\n");
    }
    out
}

/// The `<main>` fragment of the mesh page (`head.machine` unset) or of a
/// machine's page.
pub fn overview(o: &Overview<'_>) -> String {
    let head = o.head;
    let mut out = String::new();
    let title = match &head.machine {
        Some(m) => format!("machine {m}"),
        None => "the mesh".to_owned(),
    };
    let class = if head.all_well() { "well" } else { "unwell" };
    let _ = writeln!(
        out,
        "<h1>{}</h1>\n<p class=\"sentence {class}\" id=\"sentence\">{}</p>",
        escape(&title),
        escape(&head.sentence)
    );
    out.push_str("<h2>Failing</h2>\n");
    out.push_str(&failing(o.standings, o.now, head.failing()));
    let others = other_lines(head);
    if !others.is_empty() {
        out.push_str("<h2>Also</h2>\n<ul class=\"others\">\n");
        for line in others {
            let _ = writeln!(out, "<li>{}</li>", escape(&line));
        }
        out.push_str("</ul>\n");
    }
    out.push_str("<h2>Providers</h2>\n<ul class=\"links\">\n");
    for p in o.providers {
        let unheard = head.unheard().any(|u| &u.provider == p);
        let text = p.to_string();
        let said = if unheard { " (not heard from)" } else { "" };
        let _ = writeln!(out, "<li>{}{said}</li>", link(&provider_path(&text), &text));
    }
    out.push_str("</ul>\n");
    if !o.machines.is_empty() {
        out.push_str("<h2>Machines</h2>\n<ul class=\"links\">\n");
        for m in o.machines {
            let _ = writeln!(out, "<li>{}</li>", link(&machine_path(m), m));
        }
        out.push_str("</ul>\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::FailingRow;
    use crate::report::{Controller, Problem, Unheard};
    use mesh_protocol::event::Failing;
    use mesh_protocol::{Class, Timestamp};

    fn ts(s: &str) -> Timestamp {
        Timestamp::parse(s).unwrap()
    }

    fn head() -> Head {
        Head {
            machine: None,
            sentence: "not all well: 2 consumers failing".into(),
            controller: Controller::following_for_tests(),
            problems: vec![Problem::ProviderUnheard(Unheard {
                provider: ModuleId::parse("identity@id-1").unwrap(),
                heard_at: None,
                started_at: None,
            })],
            grants_reachable: 0,
            grants_unchecked: vec![],
        }
    }

    fn listed(consumer: &str, class: Class, error: &str) -> Listed {
        Listed {
            row: FailingRow {
                provider: ModuleId::parse("postgres@db-1").unwrap(),
                said: Failing {
                    v: 1,
                    consumer: Name::parse(consumer).unwrap(),
                    consumer_machine: Some(Name::parse("app-1").unwrap()),
                    provision: Some("postgres-database".into()),
                    class,
                    error: error.into(),
                    since: ts("2026-10-05T00:04:00Z"),
                    attempts: 61,
                    said_at: ts("2026-10-05T00:09:00Z"),
                },
                first_since: None,
            },
            silent_for_seconds: None,
            recurrence: None,
            acknowledged: None,
        }
    }

    #[test]
    fn failing_consumers_are_grouped_by_provider_and_class_and_their_errors_escaped() {
        let standings = [
            listed(
                "forge",
                Class::CredentialsRejected,
                "<img src=x onerror=alert(1)>",
            ),
            listed(
                "wiki",
                Class::CredentialsRejected,
                "password authentication failed",
            ),
            listed("chat", Class::Unreachable, "connection refused"),
        ];
        let providers = [
            ModuleId::parse("identity@id-1").unwrap(),
            ModuleId::parse("postgres@db-1").unwrap(),
        ];
        let machines = ["app-1".to_owned()];
        let html = overview(&Overview {
            head: &head(),
            standings: &standings,
            providers: &providers,
            machines: &machines,
            now: Timestamp::from_system(std::time::UNIX_EPOCH),
        });
        assert!(!html.contains("<img"), "{html}");
        assert!(
            html.contains("&lt;img src=x onerror=alert(1)&gt;"),
            "{html}"
        );
        assert_eq!(html.matches("<section class=\"provider\">").count(), 1);
        assert!(html.contains("<a href=\"/provider/postgres@db-1\">postgres@db-1</a> fails 3"));
        let credentials = html.find("credentials-rejected (2)").expect(&html);
        let unreachable = html.find("unreachable (1)").expect(&html);
        assert!(credentials < html.find("wiki@app-1").unwrap());
        assert!(html.find("wiki@app-1").unwrap() < unreachable);
        assert!(html.contains("<a href=\"/consumer/forge@app-1\">forge@app-1</a>"));
        assert!(
            html.contains("identity@id-1 never heard from"),
            "status's line: {html}"
        );
        assert!(
            html.contains("identity@id-1</a> (not heard from)"),
            "{html}"
        );
        assert!(html.contains("<a href=\"/machine/app-1\">app-1</a>"));
        assert!(html.contains("class=\"sentence unwell\""));
    }

    #[test]
    fn an_acknowledgement_is_said_on_the_lists_and_left_to_its_provider_on_the_own_page() {
        let mut s = listed("forge", Class::CredentialsRejected, "refused");
        s.acknowledged = Some(crate::model::AckRow::for_tests("forge", "<b>restoring</b>"));
        let now = ts("2026-10-05T01:00:00Z");
        let item = standing_item(&s, now, true);
        assert!(
            item.contains(
                "<span class=\"ack\"><span class=\"mark\" aria-hidden=\"true\">◷</span> being \
                 worked on: \"&lt;b&gt;restoring&lt;/b&gt;\" — ana, until <time \
                 datetime=\"2026-10-05T04:00:00Z\""
            ),
            "{item}"
        );
        assert!(!standing_item(&s, now, false).contains("being worked on"));
    }

    #[test]
    fn a_large_group_lists_its_first_standings_and_counts_the_rest() {
        let standings: Vec<Listed> = (0..GROUP_ITEMS + 7)
            .map(|i| {
                listed(
                    &format!("c{i:03}"),
                    Class::Unreachable,
                    "connection refused",
                )
            })
            .collect();
        let html = failing(&standings, ts("2026-12-04T21:30:00Z"), [].iter());
        assert_eq!(html.matches("<li class=\"failing\"").count(), GROUP_ITEMS);
        assert!(
            html.contains(&format!("unreachable ({})", GROUP_ITEMS + 7)),
            "{html}"
        );
        assert!(
            html.contains("… and 7 more: see <a href=\"/provider/postgres@db-1\">postgres@db-1&#39;s page</a>"),
            "{html}"
        );
        // Capped by the store: its counts are said, not the standings'.
        let provider = ModuleId::parse("postgres@db-1").unwrap();
        let counts = [FailingGroup {
            provider,
            class: Class::Unreachable,
            standings: 1_000,
            silent: 0,
        }];
        let html = failing(
            &standings[..GROUP_ITEMS],
            ts("2026-12-04T21:30:00Z"),
            counts.iter(),
        );
        assert_eq!(html.matches("<li class=\"failing\"").count(), GROUP_ITEMS);
        assert!(html.contains("postgres@db-1</a> fails 1000"), "{html}");
        assert!(html.contains("unreachable (1000)"), "{html}");
        assert!(
            html.contains(&format!("… and {} more", 1_000 - GROUP_ITEMS)),
            "{html}"
        );
    }

    #[test]
    fn no_standing_says_so() {
        let mut h = head();
        h.problems.clear();
        h.sentence = "all well: ...".into();
        let html = overview(&Overview {
            head: &h,
            standings: &[],
            providers: &[],
            machines: &[],
            now: Timestamp::from_system(std::time::UNIX_EPOCH),
        });
        assert!(html.contains("No consumer is failing."));
        assert!(html.contains("class=\"sentence well\""));
        assert!(!html.contains("<h2>Also</h2>"), "{html}");
    }
}
