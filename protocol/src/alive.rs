//! The `alive` body and what it carries: the provider fault and what the
//! provider's last read of its contributions file refused (re-exported by
//! [`crate::event`], where the other bodies are).

use serde::{Deserialize, Serialize};

use crate::class::Class;
use crate::name::Name;
use crate::time::Timestamp;

/// `alive` body: published after the provider's first pass and then every
/// `alive_every`, so that silence is never read as health.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Alive {
    /// Body version, 1.
    pub v: u32,
    /// When this provider process started.
    pub started_at: Timestamp,
    /// How often it publishes `alive`, in seconds.
    pub alive_every_seconds: u64,
    /// Its `failing_after`, in seconds.
    pub failing_after_seconds: u64,
    /// Its `repeat_every`, in seconds: every `failing` it keeps saying is
    /// said again at least this often. Absent from the events of providers
    /// older than this field (read as `None`; not written when `None`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeat_every_seconds: Option<u64>,
    /// The end of its first pass that began at least `failing_after` after
    /// its first pass ended; null until then. From then on every consumer
    /// it keeps failing has had `failing` published since it started.
    pub settled_at: Option<Timestamp>,
    /// Consumers it serves (listed in its contributions file).
    pub consumers: u64,
    /// Of which failing (published `failing` or not yet).
    pub failing: u64,
    /// How long its last pass took, in seconds.
    pub pass_seconds: f64,
    /// When this was published.
    pub said_at: Timestamp,
    /// The provider cannot work as its administrator (refused or
    /// unreachable): a provider fault, which holds every consumer back
    /// however each one's own standing reads. `None` when there is none;
    /// not written then, and read as `None` from the events of providers
    /// older than the field.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fault: Option<ProviderFault>,
    /// What its last read of its contributions file refused: the file as a
    /// whole (it serves its last good list), or entries of it. Providers
    /// since this field always write it; `None` (absent) from older ones:
    /// unknown, not "nothing refused".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contributions: Option<ContributionsRead>,
}

/// The most refused entries an `alive` lists; the rest are counted in
/// [`ContributionsRead::more`].
pub const MAX_REFUSED_LISTED: usize = 20;

/// What a provider's last read of its contributions file refused (the
/// `contributions` of its `alive`). Every text is redacted and cut by the
/// provider as its errors are.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContributionsRead {
    /// Whether the last read took the file: `false` when it could not be
    /// read, parsed or taken (it names another provider); the provider then
    /// serves its last good list, if it has one.
    pub readable: bool,
    /// Why it was not taken, naming the file; `None` when it was.
    #[serde(default)]
    pub problem: Option<String>,
    /// The entries refused in the list it serves, in file order, at most
    /// [`MAX_REFUSED_LISTED`].
    #[serde(default)]
    pub refused: Vec<RefusedContribution>,
    /// How many more entries were refused than `refused` lists; not written
    /// when none.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub more: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl ContributionsRead {
    /// A read that refused nothing.
    pub fn good() -> ContributionsRead {
        ContributionsRead {
            readable: true,
            problem: None,
            refused: Vec::new(),
            more: 0,
        }
    }

    /// `refused` capped at [`MAX_REFUSED_LISTED`], the rest counted in `more`.
    pub fn capped(mut self) -> ContributionsRead {
        if self.refused.len() > MAX_REFUSED_LISTED {
            let left_off = self.refused.len() - MAX_REFUSED_LISTED;
            self.refused.truncate(MAX_REFUSED_LISTED);
            self.more = self
                .more
                .saturating_add(u64::try_from(left_off).unwrap_or(u64::MAX));
        }
        self
    }

    /// Whether it refused anything: the file, or an entry.
    pub fn refuses_anything(&self) -> bool {
        !self.readable || !self.refused.is_empty() || self.more > 0
    }
}

/// One refused entry of a contributions file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RefusedContribution {
    /// Its place in `consumers`, from 0.
    pub index: u64,
    /// Its consumer, when its `consumer` could be read as a name (that
    /// consumer stays listed: served from its last good entry, or held
    /// back); `None` when it could not.
    pub consumer: Option<Name>,
    /// Why it was refused.
    pub reason: String,
}

/// What keeps a provider from working as its administrator (the `fault`
/// of its `alive`): its administrator's login or session refused or
/// unreachable. It is published at once when it begins, changes class, or
/// clears (an extra `alive`), and in every `alive` while it lasts.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProviderFault {
    /// Its class: `credentials-rejected` or `unreachable` from the loop;
    /// a hook may report another.
    pub class: Class,
    /// The start of the newest failure's message, redacted.
    pub error: String,
    /// When it began (kept while its class stays the same).
    pub since: Timestamp,
}
