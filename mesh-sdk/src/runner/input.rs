//! What the loop's input refused, said in `alive`: the contributions file
//! as a whole (the last good list is served), or entries of it; and who the
//! provider is before a good file named it, so that even a provider that
//! restarted with a broken file says so.

use mesh_protocol::ModuleId;

use super::Runner;
use crate::contributions::read_said;
use crate::provisioner::Provisioner;

impl<P: Provisioner> Runner<P> {
    /// Tells the runner which provider it is before any good contributions
    /// file names it: then, while no good file was read, its `alive` (0
    /// consumers, `contributions.readable` false with the file's problem)
    /// says that the file cannot be taken, instead of saying nothing.
    pub fn for_provider(mut self, provider: ModuleId) -> Self {
        self.told_provider = Some(provider);
        self
    }

    /// The provider named by the last good contributions file, if one was
    /// read; else the one it was told it is ([`Runner::for_provider`]).
    pub fn provider(&self) -> Option<&ModuleId> {
        self.source
            .last_good()
            .map(|c| &c.provider)
            .or(self.told_provider.as_ref())
    }

    /// Tells the herald what the read just done refused (redacted with the
    /// provider's secrets); when that changed since the last `alive`,
    /// publishes one at once (when it may at all). Returns the events
    /// published.
    pub(super) fn file_read_said(&self) -> usize {
        let secrets = self.provisioner.secrets();
        let secrets: Vec<&str> = secrets.iter().map(|s| s.expose()).collect();
        let said = read_said(
            self.source.file_problem(),
            self.source.last_good(),
            &secrets,
        );
        self.herald.file_read(self.provider(), said);
        usize::from(self.herald.publish_if_changed())
    }
}
