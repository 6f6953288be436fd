//! What the loop's input refused, said in `alive`: the contributions file
//! as a whole (the last good list is served), or entries of it; and who the
//! provider is before a good file named it, so that even a provider that
//! restarted with a broken file says so.

use std::sync::Arc;

use mesh_protocol::ModuleId;

use super::Runner;
use crate::contributions::{read_said, Contributions, Source};
use crate::provisioner::Provisioner;

impl<P: Provisioner> Runner<P> {
    /// Tells the runner which provider instance it is (`--provider`):
    /// then, while no good file was read, its `alive` (0 consumers,
    /// `contributions.readable` false with the file's problem) says that
    /// the file cannot be taken, instead of saying nothing; and a file
    /// whose `provider` block names another instance is not served.
    pub fn for_provider(mut self, provider: ModuleId) -> Self {
        self.told_provider = Some(provider);
        self
    }

    /// The provider instance: the one it was told it is
    /// ([`Runner::for_provider`]), else the one the last good contributions
    /// file named, if one was read.
    pub fn provider(&self) -> Option<&ModuleId> {
        self.told_provider
            .as_ref()
            .or_else(|| self.source.last_good().map(|c| &c.provider))
    }

    /// The last good contributions list, read again now, and whether this
    /// read was good; `None` when none was ever good, or when the file
    /// names another instance than the one it was told it is (logged once
    /// per name).
    pub(crate) fn load(&mut self) -> Option<(bool, Arc<Contributions>)> {
        let (fresh, list) = self
            .source
            .load()
            .map(|loaded| (loaded.fresh, Arc::clone(loaded.list)))?;
        match &self.told_provider {
            Some(me) if me != &list.provider => {
                if self.misnamed.as_ref() != Some(&list.provider) {
                    tracing::error!(path = %self.source.path().display(), names = %list.provider, provider = %me, "the contributions file names another provider instance; nothing is served until it names this one");
                    self.misnamed = Some(list.provider.clone());
                }
                // Its list is no last good of this instance's: forgotten,
                // so a file naming this one is taken again.
                self.source = Source::new(self.source.path().to_owned());
                None
            }
            _ => {
                self.misnamed = None;
                Some((fresh, list))
            }
        }
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
