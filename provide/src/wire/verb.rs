//! The verbs of the hook protocol, its version and the request ids.

use std::fmt;

/// The protocol's version, `"v"` in every request.
pub const VERSION: u32 = 1;

/// Request ids, unique across a provider's life, from 1.
#[derive(Debug, Default)]
pub struct Ids(std::sync::atomic::AtomicU64);

impl Ids {
    /// The next id.
    pub fn next(&self) -> u64 {
        self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1
    }
}

/// What mesh-provide asks of a hook.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Verb {
    /// Who the hook is: its name, its known faults, its own secrets.
    Hello,
    /// Make the consumer's provision if missing, and bring its secret.
    Ensure,
    /// Prove the provision works, as the consumer would use it.
    Check,
    /// List every provision the hook made.
    Held,
    /// Disable a provision (reversible).
    Retire,
    /// Enable a retired provision again.
    ReEnable,
    /// Delete a retired provision and its data.
    Delete,
    /// Whether a known fault is present.
    Probe,
    /// Repair a known fault.
    Repair,
    /// Conform only (never the loop): act on the backend as a person would.
    ByHand,
}

impl Verb {
    /// Every verb, in the contract's order.
    pub const ALL: [Verb; 10] = [
        Verb::Hello,
        Verb::Ensure,
        Verb::Check,
        Verb::Held,
        Verb::Retire,
        Verb::ReEnable,
        Verb::Delete,
        Verb::Probe,
        Verb::Repair,
        Verb::ByHand,
    ];

    /// The verb as it is written: `"verb"` of a request, and the exec
    /// mode's argument (`PATH <verb>`).
    pub fn as_str(self) -> &'static str {
        match self {
            Verb::Hello => "hello",
            Verb::Ensure => "ensure",
            Verb::Check => "check",
            Verb::Held => "held",
            Verb::Retire => "retire",
            Verb::ReEnable => "re-enable",
            Verb::Delete => "delete",
            Verb::Probe => "probe",
            Verb::Repair => "repair",
            Verb::ByHand => "by-hand",
        }
    }

    /// Whether its reply must say `ok` (serve mode; exec mode has the exit
    /// status): every verb but `hello` and `held`, whose reply is its data.
    pub(super) fn says_ok(self) -> bool {
        !matches!(self, Verb::Hello | Verb::Held)
    }
}

impl fmt::Display for Verb {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
