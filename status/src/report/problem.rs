//! The one list of problems (pure): each thing that makes a report not
//! all well is a [`Problem`], and every surface derives from the list —
//! the sentence, `all_well`, `status --json`, `node show`, the Prometheus
//! series and the console's pages. A new kind of problem is one variant
//! here: every `match` on it (the sentence's counts, the series' labels,
//! the human lines) stops compiling until it says the new kind.
//!
//! Each problem has a [`Kind`] (one word, the `clause` label of the
//! series and the anchor of its entry in the runbook), its subject (the
//! provider, and the consumer or grant where there is one), since when it
//! holds where that is known, how many it counts (a group of failing
//! consumers counts each), and a cause (the class, the fault, or why).

use mesh_protocol::event::RetirementAction;
use mesh_protocol::{ModuleId, Timestamp};
use serde::Serialize;

use crate::model::RepairRow;
use crate::store::FailingGroup;

use std::time::Duration;

use super::history::window_text;
use super::runbook;
use super::{CatchingUp, Faulted, InputRefused, Retired, Unheard, UnreachableGrant};

/// What kind of problem: one word each.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    /// No `serve` follows the event stream (cause `never` when none ever
    /// did, else `stopped`).
    ControllerNotFollowing,
    /// Consumers a provider says it keeps failing, by provider and class.
    ConsumersFailing,
    /// A provider assigned and not heard from (cause `never` or `silent`).
    ProvidersUnheard,
    /// A required consumer its provider counts down to retire.
    ConsumersRetiring,
    /// A required consumer its provider retired.
    ConsumersRetired,
    /// A required consumer its provider deleted.
    ConsumersDeleted,
    /// A provider a new store does not fully know yet.
    ProvidersCatchingUp,
    /// A provider that cannot work as its administrator (cause: the class).
    ProviderFaults,
    /// Refused input holding back required consumers: a provider's
    /// contributions file it cannot take (cause `file`), or an entry of
    /// it (cause `entry`).
    InputRefused,
    /// An open repair fault (cause: the fault).
    RepairFaultsOpen,
    /// A grant its consumer cannot reach (provider: the grant's `from`).
    GrantsUnreachable,
    /// A declaration entry refused (not checked).
    DeclarationRefused,
}

impl Kind {
    /// Every kind, in the order the list holds them.
    pub const ALL: [Kind; 12] = [
        Kind::ControllerNotFollowing,
        Kind::ConsumersFailing,
        Kind::ProvidersUnheard,
        Kind::ConsumersRetiring,
        Kind::ConsumersRetired,
        Kind::ConsumersDeleted,
        Kind::ProvidersCatchingUp,
        Kind::ProviderFaults,
        Kind::InputRefused,
        Kind::RepairFaultsOpen,
        Kind::GrantsUnreachable,
        Kind::DeclarationRefused,
    ];

    /// The word: the series' `clause` label and the JSON's `kind`.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::ControllerNotFollowing => "controller_not_following",
            Kind::ConsumersFailing => "consumers_failing",
            Kind::ProvidersUnheard => "providers_unheard",
            Kind::ConsumersRetiring => "consumers_retiring",
            Kind::ConsumersRetired => "consumers_retired",
            Kind::ConsumersDeleted => "consumers_deleted",
            Kind::ProvidersCatchingUp => "providers_catching_up",
            Kind::ProviderFaults => "provider_faults",
            Kind::InputRefused => "input_refused",
            Kind::RepairFaultsOpen => "repair_faults_open",
            Kind::GrantsUnreachable => "grants_unreachable",
            Kind::DeclarationRefused => "declaration_refused",
        }
    }

    /// The anchor of its entry in the runbook (docs/runbook.md): the
    /// word with dashes.
    pub fn anchor(self) -> String {
        self.as_str().replace('_', "-")
    }
}

impl Serialize for Kind {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// One thing that makes the report not all well, with what each kind
/// says of it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Problem {
    /// No `serve` follows the event stream since then (`None`: none ever did).
    ControllerNotFollowing(Option<Timestamp>),
    /// A provider's standings of one class.
    ConsumersFailing(FailingGroup),
    /// A provider assigned and not heard from.
    ProviderUnheard(Unheard),
    /// A required consumer retiring, retired or deleted by its provider
    /// (its [`Retired::action`] says which).
    Retirement(Retired),
    /// A provider a new store does not fully know yet.
    ProviderCatchingUp(CatchingUp),
    /// A provider that cannot work as its administrator.
    ProviderFault(Faulted),
    /// Refused input holding back required consumers.
    InputRefused(InputRefused),
    /// An open repair fault.
    RepairFault(RepairRow),
    /// A grant its consumer cannot reach.
    GrantUnreachable(UnreachableGrant),
    /// A declaration entry refused, as the reason says.
    DeclarationRefused(String),
}

impl Problem {
    /// Its kind.
    pub fn kind(&self) -> Kind {
        match self {
            Problem::ControllerNotFollowing(_) => Kind::ControllerNotFollowing,
            Problem::ConsumersFailing(_) => Kind::ConsumersFailing,
            Problem::ProviderUnheard(_) => Kind::ProvidersUnheard,
            Problem::Retirement(r) => match r.action {
                RetirementAction::Retiring => Kind::ConsumersRetiring,
                RetirementAction::Deleted => Kind::ConsumersDeleted,
                _ => Kind::ConsumersRetired,
            },
            Problem::ProviderCatchingUp(_) => Kind::ProvidersCatchingUp,
            Problem::ProviderFault(_) => Kind::ProviderFaults,
            Problem::InputRefused(_) => Kind::InputRefused,
            Problem::RepairFault(_) => Kind::RepairFaultsOpen,
            Problem::GrantUnreachable(_) => Kind::GrantsUnreachable,
            Problem::DeclarationRefused(_) => Kind::DeclarationRefused,
        }
    }

    /// The provider it is about, when it is about one (a grant's: the
    /// provider it grants from).
    pub fn provider(&self) -> Option<ModuleId> {
        match self {
            Problem::ControllerNotFollowing(_) | Problem::DeclarationRefused(_) => None,
            Problem::ConsumersFailing(g) => Some(g.provider.clone()),
            Problem::ProviderUnheard(u) => Some(u.provider.clone()),
            Problem::Retirement(r) => Some(r.provider.clone()),
            Problem::ProviderCatchingUp(c) => Some(c.provider.clone()),
            Problem::ProviderFault(f) => Some(f.provider.clone()),
            Problem::InputRefused(i) => Some(i.provider.clone()),
            Problem::RepairFault(r) => Some(r.provider.clone()),
            Problem::GrantUnreachable(g) => ModuleId::parse(&g.from).ok(),
        }
    }

    /// Its cause in one word or phrase, when its kind has one.
    pub fn cause(&self) -> Option<&str> {
        match self {
            Problem::ControllerNotFollowing(since) => {
                Some(if since.is_some() { "stopped" } else { "never" })
            }
            Problem::ConsumersFailing(g) => Some(g.class.as_str()),
            Problem::ProviderUnheard(u) => Some(if u.heard_at.is_some() {
                "silent"
            } else {
                "never"
            }),
            Problem::ProviderFault(f) => Some(f.class.as_str()),
            Problem::InputRefused(i) => Some(if i.index.is_some() { "entry" } else { "file" }),
            Problem::RepairFault(r) => Some(r.fault.as_str()),
            Problem::Retirement(_)
            | Problem::ProviderCatchingUp(_)
            | Problem::GrantUnreachable(_)
            | Problem::DeclarationRefused(_) => None,
        }
    }

    /// How many it counts: the standings of a failing group, else one.
    pub fn count(&self) -> u64 {
        match self {
            Problem::ConsumersFailing(g) => g.standings,
            _ => 1,
        }
    }

    /// Its line for a person (without indent; a text it quotes may hold a
    /// line break, which the human listing flattens).
    pub fn line(&self) -> String {
        match self {
            Problem::ControllerNotFollowing(Some(at)) => {
                format!("the controller has followed no events since {at}")
            }
            Problem::ControllerNotFollowing(None) => {
                "the controller has never followed events".to_owned()
            }
            Problem::ConsumersFailing(g) => format!(
                "{} fails {} {} {}",
                g.provider,
                g.standings,
                if g.standings == 1 {
                    "consumer"
                } else {
                    "consumers"
                },
                g.class
            ),
            Problem::ProviderUnheard(u) => match (u.heard_at, u.started_at) {
                (Some(heard), Some(started)) => format!(
                    "{} not heard from since {heard} (its process started {started})",
                    u.provider
                ),
                _ => format!("{} never heard from", u.provider),
            },
            Problem::Retirement(r) => r.line(),
            Problem::ProviderCatchingUp(c) => c.line(),
            Problem::ProviderFault(f) => f.line(),
            Problem::InputRefused(i) => i.line(),
            Problem::RepairFault(r) => {
                let mut line = format!(
                    "{} repair fault {}: {}, said {}",
                    r.provider, r.fault, r.outcome, r.said_at
                );
                if let Some(next) = r.next_attempt_at {
                    line.push_str(&format!(", next attempt {next}"));
                }
                if let Some(done) = &r.repaired {
                    let times = if done.count == 1 { "time" } else { "times" };
                    line.push_str(&format!(
                        " (repaired {} {times} in {}, last {})",
                        done.count,
                        window_text(Duration::from_secs(done.window_seconds)),
                        done.last_at
                    ));
                }
                format!("{line}: {}", r.detail)
            }
            Problem::GrantUnreachable(g) => {
                let attempts = if g.failures == 1 { "check" } else { "checks" };
                format!(
                    "{}@{} cannot reach {} ({}:{}) from its own network: {} {attempts} failed \
                     since {}, last reachable {}: {}",
                    g.consumer,
                    g.machine,
                    g.from,
                    g.address,
                    g.port.map_or("?".to_owned(), |p| p.to_string()),
                    g.failures,
                    g.failing_since.map_or("?".to_owned(), |t| t.to_string()),
                    g.last_reachable_at
                        .map_or("never".to_owned(), |t| t.to_string()),
                    g.error,
                )
            }
            Problem::DeclarationRefused(e) => format!("declaration entry refused: {e}"),
        }
    }

    /// The anchor of its runbook entry: a failing group's class's entry
    /// (what to do depends on the class), else its kind's.
    pub fn runbook(&self) -> String {
        match self {
            Problem::ConsumersFailing(g) => runbook::class_anchor(g.class),
            _ => self.kind().anchor(),
        }
    }

    /// What to do next, from its runbook entry.
    pub fn next_step(&self) -> Option<&'static str> {
        runbook::entry(&self.runbook()).map(|e| e.next_step)
    }

    /// Since when it holds, where the report knows.
    pub fn since(&self) -> Option<Timestamp> {
        match self {
            Problem::ControllerNotFollowing(since) => *since,
            Problem::ProviderUnheard(u) => u.heard_at,
            Problem::Retirement(r) => Some(r.said_at),
            Problem::ProviderCatchingUp(c) => Some(c.record_begins_at),
            Problem::ProviderFault(f) => Some(f.since),
            Problem::InputRefused(i) => Some(i.said_at),
            Problem::RepairFault(r) => Some(r.said_at),
            Problem::GrantUnreachable(g) => g.failing_since,
            Problem::ConsumersFailing(_) | Problem::DeclarationRefused(_) => None,
        }
    }
}

/// A problem's JSON: an entry of `problems` in `status --json`.
#[derive(Serialize)]
pub struct ProblemEntry<'a> {
    /// Its kind.
    pub kind: Kind,
    /// Its provider, `module@machine`, or null.
    pub provider: Option<String>,
    /// Its cause, or null.
    pub cause: Option<&'a str>,
    /// How many it counts.
    pub count: u64,
    /// Since when it holds, or null.
    pub since: Option<Timestamp>,
    /// The anchor of its entry in the runbook (docs/runbook.md).
    pub runbook: String,
    /// What to do next, as the runbook's entry says it.
    pub next_step: Option<&'static str>,
}

impl<'a> From<&'a Problem> for ProblemEntry<'a> {
    fn from(p: &'a Problem) -> Self {
        ProblemEntry {
            kind: p.kind(),
            provider: p.provider().map(|p| p.to_string()),
            cause: p.cause(),
            count: p.count(),
            since: p.since(),
            runbook: p.runbook(),
            next_step: p.next_step(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_has_its_own_word_and_anchor() {
        let mut words: Vec<&str> = Kind::ALL.iter().map(|k| k.as_str()).collect();
        words.sort_unstable();
        words.dedup();
        assert_eq!(words.len(), Kind::ALL.len());
        for kind in Kind::ALL {
            assert!(!kind.anchor().contains('_'));
        }
    }
}
