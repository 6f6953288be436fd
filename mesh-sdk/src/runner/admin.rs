//! The provider fault in a pass: what the pass's administrator work found
//! ([`AdminSeen`]), fed to the pure [`FaultWatch`](crate::fault::FaultWatch)
//! at the pass's end; then metered, logged, and published at once in an
//! `alive` when it began, changed class or cleared.

use mesh_protocol::Class;

use super::Runner;
use crate::fault::{AdminSeen, Change};
use crate::provisioner::Provisioner;

impl<P: Provisioner> Runner<P> {
    /// What the pass's administrator work found: a known fault's closed
    /// `gate` is the provider fault too; else the provider's own word
    /// ([`Provisioner::fault`]) wins over what `listed` (the listing of
    /// held provisions) found.
    pub(super) fn admin_seen(
        &self,
        gate: Option<&(Class, String)>,
        listed: AdminSeen,
    ) -> AdminSeen {
        if let Some((class, error)) = gate {
            return AdminSeen::Failed {
                class: *class,
                error: error.clone(),
                reported: true,
            };
        }
        match self.provisioner.fault() {
            // The provider's own word, whole (a fix at its end is kept),
            // within what the controller keeps of an event's text.
            Some((class, error)) => AdminSeen::Failed {
                class,
                error: self.redacted_within(&error, mesh_runtime::redact::MAX_FAULT_CHARS),
                reported: true,
            },
            None => listed,
        }
    }

    /// After the pass's `alive` state is known: the metric set, the change
    /// logged and, when there is one, an `alive` published at once. Returns the
    /// events published.
    pub(super) fn fault_after_pass(&self, change: Change) -> usize {
        self.metrics.fault(self.admin.current().map(|f| f.class));
        match (change, self.admin.current()) {
            (Change::None, _) => {}
            (Change::Cleared, _) => {
                tracing::info!("the administrator works again: the provider fault cleared")
            }
            (_, Some(f)) => {
                tracing::warn!(class = %f.class, error = %f.error, "cannot work as the administrator: a provider fault")
            }
            (_, None) => {}
        }
        usize::from(change.publish_now() && self.herald.publish_now())
    }
}
