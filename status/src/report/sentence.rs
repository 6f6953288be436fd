//! The first line of `status` and `node show` (pure).

use std::time::Duration;

use mesh_protocol::Timestamp;

/// What the sentence is made of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tally<'a> {
    /// Listed standings.
    pub failing: u64,
    /// Of which silent.
    pub silent: u64,
    /// Open repair faults.
    pub repairs: usize,
    /// Refused declaration entries.
    pub refused: usize,
    /// Providers assigned (in scope).
    pub providers: usize,
    /// Of which not heard from (never, or not recently enough).
    pub unheard: usize,
    /// Of which not heard from recently, but not called unheard: their
    /// silence is not yet 3 `alive`s long while the controller followed
    /// (it follows again since recently).
    pub awaiting: usize,
    /// How long ago the least recently heard of the others was heard
    /// (`None` when none was heard from).
    pub heard_within: Option<Duration>,
    /// The silence threshold.
    pub silent_after: Duration,
    /// The machine of `node show`.
    pub machine: Option<&'a str>,
    /// Grants in scope last published `reachable`.
    pub grants_reachable: u64,
    /// Grants in scope last published `unreachable`.
    pub grants_unreachable: u64,
    /// Grants in scope last published `unchecked`.
    pub grants_unchecked: u64,
    /// `None` while the controller follows the bus; else since when it
    /// follows nothing (`Some(None)`: it never did).
    pub controller_silent: Option<Option<Timestamp>>,
    /// Consumers the declaration requires that their provider retired.
    pub retired: usize,
    /// ... or deleted.
    pub deleted: usize,
    /// ... or counts down to retire.
    pub retiring: usize,
    /// Providers not fully known yet (a new store).
    pub catching_up: usize,
    /// When the store's record begins (a new store).
    pub record_begins: Option<Timestamp>,
    /// Providers heard from that cannot work as their administrator.
    pub faults: usize,
    /// Providers heard from whose refused input (the file, or an entry)
    /// holds back a consumer the declaration requires from them.
    pub input_refused: usize,
}

impl Tally<'_> {
    /// Nothing failing, no repair fault open, the declaration read whole.
    pub fn all_well(&self) -> bool {
        self.failing == 0
            && self.repairs == 0
            && self.refused == 0
            && self.unheard == 0
            && self.grants_unreachable == 0
            && self.controller_silent.is_none()
            && self.retired == 0
            && self.deleted == 0
            && self.retiring == 0
            && self.catching_up == 0
            && self.faults == 0
            && self.input_refused == 0
    }

    fn grants(&self) -> u64 {
        self.grants_reachable + self.grants_unreachable + self.grants_unchecked
    }
}

fn plural(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

fn count(n: usize) -> u64 {
    u64::try_from(n).unwrap_or(u64::MAX)
}

/// The first line of the report: `all well: ...` or `not all well: ...`.
pub fn sentence(t: &Tally<'_>) -> String {
    if t.all_well() {
        let providers = plural(count(t.providers), "provider", "providers");
        // Never "all were heard" while some were not: those the controller
        // may have missed (it follows again since recently) are said apart.
        let heard_n = t.providers.saturating_sub(t.awaiting);
        let age = |age: Duration| humantime::format_duration(Duration::from_secs(age.as_secs()));
        let awaiting = format!(
            "{} not heard from since the controller follows again",
            plural(count(t.awaiting), "provider", "providers")
        );
        let heard = match (t.heard_within.filter(|_| heard_n > 0), t.awaiting) {
            (Some(within), 0) => Some(format!(
                "{} heard from within the last {}",
                match t.providers {
                    1 => "it was".to_owned(),
                    n => format!("all {n} were"),
                },
                age(within)
            )),
            (Some(within), _) => Some(format!(
                "{heard_n} of the {} heard from within the last {}, {awaiting}",
                t.providers,
                age(within)
            )),
            (None, n) if n > 0 => Some(awaiting),
            (None, _) => None,
        };
        let checked = match t.machine {
            None => format!(
                "none of the {providers} assigned in the declaration says it keeps failing a \
                 consumer{}, and no repair fault is open",
                heard.map(|h| format!(" ({h})")).unwrap_or_default()
            ),
            Some(m) => format!(
                "no provider says it keeps failing a consumer whose provider or consumer is on \
                 {m} ({providers} on it or serving it{}), and no repair fault is open there",
                heard.map(|h| format!(", {h}")).unwrap_or_default()
            ),
        };
        let grants = t.grants();
        let reach = (grants > 0).then(|| {
            format!(
                "; {} of {} checked reachable from their consumers' own network positions{}",
                t.grants_reachable,
                plural(grants, "grant", "grants"),
                match t.grants_unchecked {
                    0 => String::new(),
                    n => format!(" ({n} unchecked)"),
                }
            )
        });
        // Only a check from every consumer's own position says it can reach.
        let proven = grants > 0 && t.grants_reachable == grants;
        return format!(
            "all well: {checked}{}{}",
            reach.unwrap_or_default(),
            if proven {
                ""
            } else {
                "; this does not prove that a consumer can reach its provider"
            }
        );
    }
    let on = t.machine.map(|m| format!(" on {m}")).unwrap_or_default();
    let mut parts = Vec::new();
    // A new store first: what it does not know yet is no provider's fault.
    let mut new_store = String::new();
    let not_known = plural(count(t.catching_up), "provider", "providers");
    match (t.catching_up, t.record_begins) {
        (0, _) => {}
        (_, Some(at)) => {
            new_store = format!("the store is new since {at}; ");
            parts.push(format!("{not_known} not fully known yet"));
        }
        (_, None) => parts.push(format!("{not_known} not fully known yet")),
    }
    // The controller first: while it follows nothing, the rest is what the
    // store knew when it stopped.
    match t.controller_silent {
        None => {}
        Some(since) => parts.push(format!(
            "the controller has {} (is mesh-controller serve running and on the bus?)",
            match since {
                Some(at) => format!("followed no events since {at}"),
                None => "never followed events".to_owned(),
            }
        )),
    }
    let mut failing = format!("{} failing{on}", plural(t.failing, "consumer", "consumers"));
    if t.silent > 0 {
        failing.push_str(&format!(
            " ({} not said again for more than {})",
            t.silent,
            humantime::format_duration(t.silent_after)
        ));
    }
    parts.push(failing);
    if t.faults > 0 {
        parts.push(format!(
            "{} as {} administrator",
            match t.faults {
                1 => "1 provider cannot work".to_owned(),
                n => format!("{n} providers cannot work"),
            },
            if t.faults == 1 { "its" } else { "their" }
        ));
    }
    if t.input_refused > 0 {
        parts.push(match t.input_refused {
            1 => "1 provider's input refused".to_owned(),
            n => format!("{n} providers' input refused"),
        });
    }
    if t.grants_unreachable > 0 {
        let mut grants = format!(
            "{} unreachable",
            plural(t.grants_unreachable, "grant", "grants")
        );
        if t.grants_unchecked > 0 {
            grants.push_str(&format!(" ({} unchecked)", t.grants_unchecked));
        }
        parts.push(grants);
    }
    if t.repairs > 0 {
        parts.push(format!(
            "{} open",
            plural(count(t.repairs), "repair fault", "repair faults")
        ));
    }
    let retirements = [
        (t.retiring, "retiring"),
        (t.retired, "retired"),
        (t.deleted, "deleted"),
    ];
    for (n, what) in retirements {
        if n > 0 {
            parts.push(format!(
                "{} {what}",
                plural(count(n), "required consumer", "required consumers")
            ));
        }
    }
    if t.unheard > 0 {
        parts.push(format!(
            "{} not heard from",
            plural(count(t.unheard), "provider", "providers")
        ));
    }
    if t.refused > 0 {
        parts.push(format!(
            "{} refused (not checked)",
            plural(count(t.refused), "declaration entry", "declaration entries")
        ));
    }
    format!("not all well: {new_store}{}", parts.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tally() -> Tally<'static> {
        Tally {
            failing: 0,
            silent: 0,
            repairs: 0,
            refused: 0,
            providers: 2,
            unheard: 0,
            awaiting: 0,
            heard_within: Some(Duration::from_millis(45_800)),
            silent_after: Duration::from_secs(1800),
            machine: None,
            grants_reachable: 0,
            grants_unreachable: 0,
            grants_unchecked: 0,
            controller_silent: None,
            retired: 0,
            deleted: 0,
            retiring: 0,
            catching_up: 0,
            record_begins: None,
            faults: 0,
            input_refused: 0,
        }
    }

    #[test]
    fn sentence_table() {
        let cases: Vec<(Tally<'static>, &str)> = vec![
            (
                tally(),
                "all well: none of the 2 providers assigned in the declaration says it keeps \
                 failing a consumer (all 2 were heard from within the last 45s), and no repair \
                 fault is open; this does not prove that a consumer can reach its provider",
            ),
            (
                Tally {
                    providers: 0,
                    heard_within: None,
                    ..tally()
                },
                "all well: none of the 0 providers assigned in the declaration says it keeps \
                 failing a consumer, and no repair fault is open; this does not prove that a \
                 consumer can reach its provider",
            ),
            (
                Tally {
                    unheard: 1,
                    ..tally()
                },
                "not all well: 0 consumers failing, 1 provider not heard from",
            ),
            // A provider fault breaks all-well with no consumer failing yet.
            (
                Tally {
                    faults: 1,
                    ..tally()
                },
                "not all well: 0 consumers failing, 1 provider cannot work as its administrator",
            ),
            // Refused input breaks all-well with no consumer failing yet.
            (
                Tally {
                    input_refused: 1,
                    ..tally()
                },
                "not all well: 0 consumers failing, 1 provider's input refused",
            ),
            (
                Tally {
                    input_refused: 2,
                    faults: 1,
                    grants_unreachable: 1,
                    ..tally()
                },
                "not all well: 0 consumers failing, 1 provider cannot work as its administrator, \
                 2 providers' input refused, 1 grant unreachable",
            ),
            (
                Tally {
                    faults: 2,
                    failing: 3,
                    unheard: 1,
                    ..tally()
                },
                "not all well: 3 consumers failing, 2 providers cannot work as their \
                 administrator, 1 provider not heard from",
            ),
            // Never "all were heard" while one was not (the controller
            // follows again since recently: it may have missed it).
            (
                Tally {
                    awaiting: 1,
                    ..tally()
                },
                "all well: none of the 2 providers assigned in the declaration says it keeps \
                 failing a consumer (1 of the 2 heard from within the last 45s, 1 provider not \
                 heard from since the controller follows again), and no repair fault is open; \
                 this does not prove that a consumer can reach its provider",
            ),
            (
                Tally {
                    awaiting: 2,
                    heard_within: None,
                    ..tally()
                },
                "all well: none of the 2 providers assigned in the declaration says it keeps \
                 failing a consumer (2 providers not heard from since the controller follows \
                 again), and no repair fault is open; this does not prove that a consumer can \
                 reach its provider",
            ),
            (
                Tally {
                    failing: 3,
                    unheard: 2,
                    refused: 1,
                    ..tally()
                },
                "not all well: 3 consumers failing, 2 providers not heard from, 1 declaration \
                 entry refused (not checked)",
            ),
            (
                Tally {
                    providers: 1,
                    machine: Some("db-1"),
                    ..tally()
                },
                "all well: no provider says it keeps failing a consumer whose provider or \
                 consumer is on db-1 (1 provider on it or serving it, it was heard from within the \
                 last 45s), and no repair fault is open there; this does not prove that a \
                 consumer can reach its provider",
            ),
            (
                Tally {
                    failing: 1,
                    machine: Some("app-1"),
                    ..tally()
                },
                "not all well: 1 consumer failing on app-1",
            ),
            (
                Tally {
                    failing: 2,
                    silent: 1,
                    repairs: 1,
                    ..tally()
                },
                "not all well: 2 consumers failing (1 not said again for more than 30m), \
                 1 repair fault open",
            ),
            (
                Tally {
                    refused: 2,
                    repairs: 3,
                    ..tally()
                },
                "not all well: 0 consumers failing, 3 repair faults open, 2 declaration \
                 entries refused (not checked)",
            ),
            (
                Tally {
                    controller_silent: Some(Some(
                        Timestamp::parse("2026-10-05T00:09:00Z").unwrap(),
                    )),
                    ..tally()
                },
                "not all well: the controller has followed no events since 2026-10-05T00:09:00Z \
                 (is mesh-controller serve running and on the bus?), 0 consumers failing",
            ),
            (
                Tally {
                    controller_silent: Some(None),
                    failing: 1,
                    machine: Some("app-1"),
                    unheard: 1,
                    ..tally()
                },
                "not all well: the controller has never followed events (is mesh-controller \
                 serve running and on the bus?), 1 consumer failing on app-1, 1 provider not \
                 heard from",
            ),
            (
                Tally {
                    retired: 1,
                    deleted: 2,
                    ..tally()
                },
                "not all well: 0 consumers failing, 1 required consumer retired, 2 required \
                 consumers deleted",
            ),
            (
                Tally {
                    retiring: 1,
                    ..tally()
                },
                "not all well: 0 consumers failing, 1 required consumer retiring",
            ),
            (
                Tally {
                    retiring: 2,
                    retired: 1,
                    ..tally()
                },
                "not all well: 0 consumers failing, 2 required consumers retiring, 1 required \
                 consumer retired",
            ),
            (
                Tally {
                    catching_up: 2,
                    record_begins: Some(Timestamp::parse("2026-10-05T00:00:00Z").unwrap()),
                    ..tally()
                },
                "not all well: the store is new since 2026-10-05T00:00:00Z; 2 providers not \
                 fully known yet, 0 consumers failing",
            ),
            // The store new is said first, before the controller.
            (
                Tally {
                    catching_up: 1,
                    failing: 1,
                    controller_silent: Some(None),
                    record_begins: Some(Timestamp::parse("2026-10-05T00:00:00Z").unwrap()),
                    ..tally()
                },
                "not all well: the store is new since 2026-10-05T00:00:00Z; 1 provider not fully \
                 known yet, the controller has never followed events (is mesh-controller serve \
                 running and on the bus?), 1 consumer failing",
            ),
        ];
        for (tally, expected) in cases {
            assert_eq!(sentence(&tally), expected, "{tally:?}");
            assert_eq!(tally.all_well(), expected.starts_with("all well"));
        }
    }
}
