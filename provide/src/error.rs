//! [`HookError`]: why a call to the hook did not succeed, in a message that
//! names the hook and the verb, and the class the loop gives it.

use mesh_sdk::Class;

use crate::wire::{Bad, Verb};

/// A call to the hook that did not succeed. Every one is a failure of that
/// call only: the loop retries it on a later pass (a consumer's attempt, a
/// retirement), and a `held` that fails is a pass whose backend could not
/// be read (nothing is retired on it). The message never holds a secret: the
/// hook's text is scrubbed before it is put here.
#[derive(Debug, thiserror::Error)]
pub enum HookError {
    /// The hook said no: `"ok": false` or a failing exit, with its own
    /// message (or, in exec mode, the last line of its stderr).
    #[error("{message}")]
    Refused {
        /// The class the hook gave, if it gave one.
        class: Option<Class>,
        /// Its message.
        message: String,
    },
    /// The hook answered `{"unsupported": true}` to a verb the loop needs
    /// an answer to.
    #[error("hook {hook} does not support {verb}")]
    Unsupported {
        /// The hook, as `--hook` names it.
        hook: String,
        /// The verb.
        verb: Verb,
    },
    /// The hook's output was no reply.
    #[error("hook {hook} {verb}: {what}")]
    BadReply {
        /// The hook.
        hook: String,
        /// The verb.
        verb: Verb,
        /// What was wrong.
        what: Bad,
    },
    /// The hook could not be started (missing, not executable).
    #[error("hook {hook} {verb} cannot be started: {why}")]
    Spawn {
        /// The hook.
        hook: String,
        /// The verb.
        verb: Verb,
        /// The system's message.
        why: String,
    },
    /// No answer within the hook timeout (exec: the process group was killed).
    #[error("hook {hook} {verb} timed out after {after}")]
    TimedOut {
        /// The hook.
        hook: String,
        /// The verb.
        verb: Verb,
        /// The timeout, as humantime writes it.
        after: String,
    },
    /// Serve mode: the hook ended, or was killed as stuck or babbling, with
    /// the call in flight.
    #[error("hook {hook} {verb}: {why}")]
    Lost {
        /// The hook.
        hook: String,
        /// The verb.
        verb: Verb,
        /// What happened to the hook.
        why: String,
    },
    /// Serve mode: the hook is down and braked; it is started again later.
    #[error("hook {hook} is down (next start in {left}): {why}{}", quoted_stderr(.stderr))]
    Down {
        /// The hook.
        hook: String,
        /// Why it went down.
        why: String,
        /// How long until the next start, as humantime writes it.
        left: String,
        /// The last lines of its stderr (scrubbed), ` | ` between them;
        /// empty when it wrote none.
        stderr: String,
        /// The class its failed hello gave (`secret-unreadable` for an
        /// administrator password file it cannot read), when it went down
        /// failing its hello with one; `refused` otherwise.
        class: Option<Class>,
    },
}

fn quoted_stderr(stderr: &str) -> String {
    match stderr.is_empty() {
        true => String::new(),
        false => format!("; its stderr: {stderr}"),
    }
}

impl HookError {
    /// The class of this failure: the hook's own when it gave one;
    /// `unreachable` for a timeout (as the loop's own timeouts); `None`
    /// (the loop reads the message) for a refusal without a class; `refused`
    /// for every fault of the hook itself.
    pub fn class(&self) -> Option<Class> {
        match self {
            HookError::Refused { class, .. } => *class,
            HookError::TimedOut { .. } => Some(Class::Unreachable),
            HookError::Unsupported { .. }
            | HookError::BadReply { .. }
            | HookError::Spawn { .. }
            | HookError::Lost { .. }
            | HookError::Down { class: None, .. } => Some(Class::Refused),
            HookError::Down {
                class: Some(class), ..
            } => Some(*class),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hooks_own_class_wins_and_its_faults_are_refused() {
        let hook = || "/usr/lib/mesh/redis-acl.sh".to_owned();
        let cases = [
            (
                HookError::Refused {
                    class: Some(Class::CredentialsRejected),
                    message: "WRONGPASS".into(),
                },
                Some(Class::CredentialsRejected),
                "WRONGPASS",
            ),
            (
                HookError::Refused {
                    class: None,
                    message: "connection refused".into(),
                },
                None,
                "connection refused",
            ),
            (
                HookError::TimedOut {
                    hook: hook(),
                    verb: Verb::Check,
                    after: "30s".into(),
                },
                Some(Class::Unreachable),
                "hook /usr/lib/mesh/redis-acl.sh check timed out after 30s",
            ),
            (
                HookError::BadReply {
                    hook: hook(),
                    verb: Verb::Held,
                    what: Bad::NoId,
                },
                Some(Class::Refused),
                "hook /usr/lib/mesh/redis-acl.sh held: reply has no id (each reply carries its request's id)",
            ),
            (
                HookError::Unsupported {
                    hook: hook(),
                    verb: Verb::Check,
                },
                Some(Class::Refused),
                "hook /usr/lib/mesh/redis-acl.sh does not support check",
            ),
            (
                HookError::Down {
                    hook: hook(),
                    why: "failed its hello: the hook exited with status 2".into(),
                    left: "4s".into(),
                    stderr: "mariadb-hook: ENOENT: /etc/mesh/admin-password".into(),
                    class: None,
                },
                Some(Class::Refused),
                "hook /usr/lib/mesh/redis-acl.sh is down (next start in 4s): failed its hello: the hook exited with status 2; its stderr: mariadb-hook: ENOENT: /etc/mesh/admin-password",
            ),
        ];
        for (error, class, message) in cases {
            assert_eq!(error.class(), class, "{error}");
            assert_eq!(error.to_string(), message);
        }
    }
}
