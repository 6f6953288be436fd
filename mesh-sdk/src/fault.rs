//! The provider fault, decided without I/O: whether the provider can work
//! as its administrator.
//!
//! Each pass the loop tells [`FaultWatch`] what its administrator's work
//! found ([`AdminSeen`]): the repair hook's gate closed on a known fault,
//! the provider's own report ([`Provisioner::fault`](crate::Provisioner::fault)),
//! or the listing of held provisions (its first admin work each pass).
//!
//! | seen | no fault before | fault of class C before |
//! | --- | --- | --- |
//! | failed, class C (credentials-rejected or unreachable, or a gate or report) | begins (since now) | kept (since kept, message updated) |
//! | failed, class D ≠ C | begins | changes (since now) |
//! | failed, another class (refused, secret-unreadable) | nothing | kept: no good login proves it over |
//! | good | nothing | clears |
//! | nothing known (the file or the listing was not tried) | nothing | kept |
//!
//! A fault that begins, changes class or clears is published at once (an
//! extra `alive`); one that is kept is carried by every `alive`.

use mesh_protocol::Class;
use tokio::time::Instant;

/// What the administrator's work of one pass found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum AdminSeen {
    /// It failed with this class and this (redacted) message.
    Failed {
        /// The failure's class.
        class: Class,
        /// The start of its message, redacted.
        error: String,
        /// Whether any class counts (a known fault's gate, the provider's
        /// own report), not only credentials-rejected and unreachable.
        reported: bool,
    },
    /// It worked: the administrator logged in.
    Good,
    /// Nothing was tried (the contributions file was not read this pass).
    Unknown,
}

/// The fault as it stands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Fault {
    /// Its class.
    pub(crate) class: Class,
    /// The newest failure's message, redacted.
    pub(crate) error: String,
    /// When it began (or last changed class).
    pub(crate) since: Instant,
}

/// What to publish after an observation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Change {
    /// Nothing new to publish at once.
    None,
    /// A fault began.
    Began,
    /// The fault changed class.
    Changed,
    /// The fault cleared.
    Cleared,
}

impl Change {
    /// Whether an `alive` is published at once for it.
    pub(crate) fn publish_now(self) -> bool {
        self != Change::None
    }
}

/// Whether a failure of `class` is a provider fault: the administrator
/// refused or not reached.
pub(crate) fn is_fault_class(class: Class) -> bool {
    matches!(class, Class::CredentialsRejected | Class::Unreachable)
}

/// The provider fault's state: begin, keep, change, clear.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct FaultWatch {
    current: Option<Fault>,
}

impl FaultWatch {
    /// The fault as it stands, if there is one.
    pub(crate) fn current(&self) -> Option<&Fault> {
        self.current.as_ref()
    }

    /// Feeds what a pass's administrator work found at `now`.
    pub(crate) fn observe(&mut self, seen: AdminSeen, now: Instant) -> Change {
        match seen {
            AdminSeen::Unknown => Change::None,
            AdminSeen::Good => match self.current.take() {
                Some(_) => Change::Cleared,
                None => Change::None,
            },
            AdminSeen::Failed {
                class,
                error,
                reported,
            } => {
                if !reported && !is_fault_class(class) {
                    return Change::None;
                }
                match &mut self.current {
                    Some(fault) if fault.class == class => {
                        fault.error = error;
                        Change::None
                    }
                    Some(fault) => {
                        *fault = Fault {
                            class,
                            error,
                            since: now,
                        };
                        Change::Changed
                    }
                    None => {
                        self.current = Some(Fault {
                            class,
                            error,
                            since: now,
                        });
                        Change::Began
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn failed(class: Class, error: &str) -> AdminSeen {
        AdminSeen::Failed {
            class,
            error: error.into(),
            reported: false,
        }
    }

    fn reported(class: Class, error: &str) -> AdminSeen {
        AdminSeen::Failed {
            class,
            error: error.into(),
            reported: true,
        }
    }

    /// (second, seen, change, fault after: (class, message, since)).
    type Step = (u64, AdminSeen, Change, Option<(Class, &'static str, u64)>);

    #[test]
    fn fault_table() {
        use Class::*;
        let t0 = Instant::now();
        let at = |s: u64| t0 + Duration::from_secs(s);
        let refused = "password authentication failed for user \"mesh_admin\"";
        let steps: Vec<Step> = vec![
            (0, AdminSeen::Good, Change::None, None),
            (5, AdminSeen::Unknown, Change::None, None),
            // A refusal that is no administrator's trouble is no fault.
            (10, failed(Refused, "must be superuser"), Change::None, None),
            (15, failed(SecretUnreadable, "x"), Change::None, None),
            (
                20,
                failed(CredentialsRejected, refused),
                Change::Began,
                Some((CredentialsRejected, refused, 20)),
            ),
            // Kept: since stays, the message is the newest.
            (
                25,
                failed(CredentialsRejected, "again"),
                Change::None,
                Some((CredentialsRejected, "again", 20)),
            ),
            (
                30,
                AdminSeen::Unknown,
                Change::None,
                Some((CredentialsRejected, "again", 20)),
            ),
            // Another refusal proves no good login: kept.
            (
                35,
                failed(Refused, "syntax"),
                Change::None,
                Some((CredentialsRejected, "again", 20)),
            ),
            // Another class: changed, since now.
            (
                40,
                failed(Unreachable, "connection refused"),
                Change::Changed,
                Some((Unreachable, "connection refused", 40)),
            ),
            (45, AdminSeen::Good, Change::Cleared, None),
            (50, AdminSeen::Good, Change::None, None),
            (
                55,
                failed(Unreachable, "timed out"),
                Change::Began,
                Some((Unreachable, "timed out", 55)),
            ),
            // A gate or the provider's own report counts whatever its class.
            (
                60,
                reported(Refused, "hook says so"),
                Change::Changed,
                Some((Refused, "hook says so", 60)),
            ),
            (
                65,
                reported(Refused, "still"),
                Change::None,
                Some((Refused, "still", 60)),
            ),
            (70, AdminSeen::Good, Change::Cleared, None),
            (
                75,
                reported(SecretUnreadable, "admin password file missing"),
                Change::Began,
                Some((SecretUnreadable, "admin password file missing", 75)),
            ),
        ];
        let mut watch = FaultWatch::default();
        for (second, seen, change, after) in steps {
            let what = format!("{seen:?} at {second}");
            assert_eq!(watch.observe(seen, at(second)), change, "{what}");
            let now = watch
                .current()
                .map(|f| (f.class, f.error.as_str(), f.since));
            assert_eq!(now, after.map(|(c, e, s)| (c, e, at(s))), "{what}");
        }
    }

    #[test]
    fn only_news_is_published_at_once() {
        assert!(!Change::None.publish_now());
        for change in [Change::Began, Change::Changed, Change::Cleared] {
            assert!(change.publish_now(), "{change:?}");
        }
    }
}
