//! The runbook (docs/runbook.md), compiled in: each entry's anchor, title
//! and next step, so `status --explain`, `why` and the JSON say the very
//! line a person reads in the runbook (pure).
//!
//! The file's format: an entry is `<a id="ANCHOR"></a>`, then its `### `
//! heading, then its parts, one of them the one-line `**Next step.** …`.

use std::sync::OnceLock;

/// The runbook's text.
const RUNBOOK: &str = include_str!("../../../docs/runbook.md");

/// Where the runbook is installed (the Debian package's copy).
pub const INSTALLED_AT: &str = "/usr/share/doc/mesh/docs/runbook.md";

/// One entry of the runbook.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RunbookEntry {
    /// Its anchor (`providers-unheard`).
    pub anchor: &'static str,
    /// Its heading.
    pub title: &'static str,
    /// What to do next, one line.
    pub next_step: &'static str,
}

/// Every entry of `text`, in order; an anchor without a heading or a next
/// step is left out (the runbook's own test names it).
fn parse(text: &'static str) -> Vec<RunbookEntry> {
    let mut entries = Vec::new();
    let mut anchor: Option<&'static str> = None;
    let mut title: Option<&'static str> = None;
    for line in text.lines() {
        if let Some(rest) = line.trim().strip_prefix("<a id=\"") {
            anchor = rest.split('"').next();
            title = None;
        } else if let Some(heading) = line.strip_prefix("### ") {
            title = Some(heading.trim());
        } else if let Some(step) = line.strip_prefix("**Next step.**") {
            if let (Some(anchor), Some(title)) = (anchor.take(), title.take()) {
                entries.push(RunbookEntry {
                    anchor,
                    title,
                    next_step: step.trim(),
                });
            }
        }
    }
    entries
}

/// Every entry of the runbook, in order.
pub fn entries() -> &'static [RunbookEntry] {
    static ENTRIES: OnceLock<Vec<RunbookEntry>> = OnceLock::new();
    ENTRIES.get_or_init(|| parse(RUNBOOK))
}

/// The entry of `anchor`, if the runbook has one.
pub fn entry(anchor: &str) -> Option<&'static RunbookEntry> {
    entries().iter().find(|e| e.anchor == anchor)
}

/// The anchor of a failure class's entry (`class-credentials-rejected`).
pub fn class_anchor(class: mesh_protocol::Class) -> String {
    format!("class-{}", class.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::Kind;
    use mesh_protocol::Class;

    #[test]
    fn every_kind_and_class_has_an_entry_with_a_one_line_next_step() {
        let anchors = Kind::ALL
            .iter()
            .map(|k| k.anchor())
            .chain(Class::ALL.iter().map(|c| class_anchor(*c)));
        for anchor in anchors {
            let e = entry(&anchor).unwrap_or_else(|| panic!("no runbook entry {anchor}"));
            assert!(!e.next_step.is_empty(), "{anchor}");
            assert!(!e.title.is_empty(), "{anchor}");
        }
    }

    /// The text of `anchor`'s entry: from its anchor to the next one.
    fn section(anchor: &str) -> &'static str {
        let start = RUNBOOK
            .find(&format!("<a id=\"{anchor}\">"))
            .unwrap_or_else(|| panic!("no anchor {anchor}"));
        let rest = &RUNBOOK[start + 1..];
        let end = rest
            .find("<a id=\"")
            .map_or(RUNBOOK.len(), |e| start + 1 + e);
        &RUNBOOK[start..end]
    }

    /// A kind's or a class's entry is whole: what it means, how to confirm
    /// it, what causes it, how to fix it, how it clears, and the next step
    /// — each once, in that order.
    #[test]
    fn every_kind_and_class_entry_says_means_confirm_causes_fix_clears_and_next_step() {
        let parts = [
            "**Means.**",
            "**Confirm.**",
            "**Causes.**",
            "**Fix.**",
            "**Clears.**",
            "**Next step.**",
        ];
        let anchors = Kind::ALL
            .iter()
            .map(|k| k.anchor())
            .chain(Class::ALL.iter().map(|c| class_anchor(*c)));
        for anchor in anchors {
            let text = section(&anchor);
            let mut at = 0;
            for part in parts {
                assert_eq!(text.matches(part).count(), 1, "{anchor}: {part} once");
                let found = text.find(part).unwrap();
                assert!(found > at, "{anchor}: {part} out of order");
                at = found;
            }
        }
    }

    #[test]
    fn an_entry_is_its_anchor_heading_and_next_step() {
        let text = "intro\n<a id=\"a\"></a>\n### The A\n\n**Means.** x\n**Next step.** Do a.\n\
                    <a id=\"b\"></a>\n### No step\n<a id=\"c\"></a>\n### C\n**Next step.**  Do c. \n";
        assert_eq!(
            parse(text),
            [
                RunbookEntry {
                    anchor: "a",
                    title: "The A",
                    next_step: "Do a."
                },
                RunbookEntry {
                    anchor: "c",
                    title: "C",
                    next_step: "Do c."
                }
            ]
        );
    }
}
