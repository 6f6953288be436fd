//! axe-core (the npm package, `test-support/axe`, installed by `npm ci`
//! in scripts/lib.sh) run inside the page open in the browser: the
//! accessibility rules of WCAG 2.1 A and AA, and what each violation is
//! and where.

use std::path::PathBuf;

use serde_json::Value;

use super::{Browser, REQUIRE_BROWSER};

/// axe-core's script, from this crate's `axe/node_modules`.
fn axe_script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("axe/node_modules/axe-core/axe.min.js")
}

/// One rule a page breaks, as axe-core says it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AxeViolation {
    /// The rule (`color-contrast`, `label`, …).
    pub id: String,
    /// `minor`, `moderate`, `serious` or `critical`.
    pub impact: String,
    /// What the rule asks.
    pub help: String,
    /// Where: the first elements' selectors.
    pub nodes: Vec<String>,
}

impl AxeViolation {
    /// Whether it is `serious` or `critical`.
    pub fn is_grave(&self) -> bool {
        matches!(self.impact.as_str(), "serious" | "critical")
    }
}

impl std::fmt::Display for AxeViolation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} ({}): {} at {}",
            self.id,
            self.impact,
            self.help,
            self.nodes.join(", ")
        )
    }
}

/// How axe-core is run, and what of its answer comes back.
const RUN: &str = "
var done = arguments[arguments.length - 1];
axe.run(document, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'] } })
  .then(function (r) {
    done(r.violations.map(function (v) {
      return { id: v.id, impact: v.impact || '', help: v.help,
               nodes: v.nodes.slice(0, 5).map(function (n) { return n.target.join(' '); }) };
    }));
  })
  .catch(function (e) { done({ error: String(e) }); });";

impl Browser {
    /// The accessibility rules the page open now breaks, by axe-core run
    /// inside it; `None` after printing `SKIPPED {test}: …` when axe-core
    /// is not installed.
    ///
    /// # Panics
    /// When axe-core is not installed and [`REQUIRE_BROWSER`] is set (CI),
    /// or when it fails in the page.
    pub async fn axe(&self, test: &str) -> Option<Vec<AxeViolation>> {
        let path = axe_script();
        let script = match std::fs::read_to_string(&path) {
            Ok(script) => script,
            Err(error) => {
                assert!(
                    std::env::var_os(REQUIRE_BROWSER).is_none(),
                    "axe-core is missing ({}: {error}; scripts/test runs npm ci in test-support/axe), \
                     and {REQUIRE_BROWSER} is set",
                    path.display()
                );
                eprintln!(
                    "SKIPPED {test}'s accessibility check: {} is missing",
                    path.display()
                );
                return None;
            }
        };
        self.execute(&format!("{script}\nreturn true;"), vec![])
            .await;
        let answer = self
            .client()
            .execute_async(RUN, vec![])
            .await
            .unwrap_or_else(|err| panic!("browser: running axe-core: {err}"));
        let Value::Array(found) = answer else {
            panic!("browser: axe-core failed: {answer}");
        };
        let text = |v: &Value, key: &str| v[key].as_str().unwrap_or_default().to_owned();
        Some(
            found
                .iter()
                .map(|v| AxeViolation {
                    id: text(v, "id"),
                    impact: text(v, "impact"),
                    help: text(v, "help"),
                    nodes: v["nodes"]
                        .as_array()
                        .map(|n| {
                            n.iter()
                                .filter_map(|s| s.as_str().map(str::to_owned))
                                .collect()
                        })
                        .unwrap_or_default(),
                })
                .collect(),
        )
    }
}
