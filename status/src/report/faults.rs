//! Provider faults (pure): a provider heard from whose newest `alive`
//! carries a fault cannot work as its administrator (its login refused,
//! its backend not reached). It breaks all-well at once, without waiting
//! for each consumer's `failing_after`: no consumer of it can be made or
//! mended meanwhile, and one that looks well may only be riding on a
//! session that outlived a changed password.
//!
//! Rule: only a provider *heard from* is named so (an unheard provider's
//! line says more: it is not heard at all, and its last fault is old
//! news); the fault is its newest `alive`'s, so it clears with the first
//! `alive` that carries none.

use mesh_protocol::{Class, ModuleId, Timestamp};
use serde::Serialize;

use crate::model::row::provider_members;
use crate::model::AliveRow;

/// A provider that cannot work as its administrator. Its JSON is an entry
/// of `faults` in `status --json`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Faulted {
    /// The provider, written as `provider_module` and `provider_machine`.
    #[serde(flatten, serialize_with = "provider_members")]
    pub provider: ModuleId,
    /// The fault's class (`credentials-rejected`, `unreachable`, ...).
    pub class: Class,
    /// The start of the newest failure's message, as the provider said it.
    pub error: String,
    /// When it began.
    pub since: Timestamp,
    /// When the `alive` that carries it was published.
    pub said_at: Timestamp,
}

impl Faulted {
    /// The line of the human listing (without its indent).
    pub fn line(&self) -> String {
        format!(
            "{} cannot work as its administrator since {} ({}: {}); none of its consumers can be \
             made or mended meanwhile",
            self.provider, self.since, self.class, self.error
        )
    }
}

/// The fault the newest `alive` of a provider heard from carries, if any.
pub fn faulted(alive: &AliveRow) -> Option<Faulted> {
    let fault = alive.fault.as_ref()?;
    Some(Faulted {
        provider: alive.provider.clone(),
        class: fault.class,
        error: fault.error.clone(),
        since: fault.since,
        said_at: alive.said_at,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use mesh_protocol::event::ProviderFault;

    fn ts(s: &str) -> Timestamp {
        Timestamp::parse(s).unwrap()
    }

    fn alive(fault: Option<ProviderFault>) -> AliveRow {
        AliveRow {
            provider: ModuleId::parse("postgres@db-1").unwrap(),
            started_at: ts("2026-10-05T00:00:00Z"),
            alive_every_seconds: 60,
            settled_at: None,
            repeat_every_seconds: Some(900),
            said_at: ts("2026-10-05T00:05:00Z"),
            stored_at: None,
            fault,
            contributions: None,
        }
    }

    #[test]
    fn a_fault_is_named_with_its_cause_and_none_is_nothing() {
        assert_eq!(faulted(&alive(None)), None);
        let f = faulted(&alive(Some(ProviderFault {
            class: Class::CredentialsRejected,
            error: "password authentication failed for user \"mesh_admin\"".into(),
            since: ts("2026-10-05T00:04:00Z"),
        })))
        .unwrap();
        assert_eq!(
            f.line(),
            "postgres@db-1 cannot work as its administrator since 2026-10-05T00:04:00Z \
             (credentials-rejected: password authentication failed for user \"mesh_admin\"); \
             none of its consumers can be made or mended meanwhile"
        );
        assert_eq!(
            serde_json::to_string(&f).unwrap(),
            r#"{"provider_module":"postgres","provider_machine":"db-1","class":"credentials-rejected","error":"password authentication failed for user \"mesh_admin\"","since":"2026-10-05T00:04:00Z","said_at":"2026-10-05T00:05:00Z"}"#
        );
    }
}
