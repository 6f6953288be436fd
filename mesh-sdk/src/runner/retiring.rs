//! Consumers the mesh stopped asking for: retirement after the thresholds
//! or on a person's approval, re-enabling, deletion on approval, and
//! `recovered` (`withdrawn`) for those the backend does not hold.

use std::sync::Arc;
use std::time::Duration;

use mesh_protocol::event::{Event, Retirement as RetirementBody, RetirementAction, VERSION};
use mesh_protocol::{ApproveReply, ApproveRequest, Class, ModuleId, Name, Timestamp};
use tokio::time::Instant;

use super::{publish, standing_event, Runner};
use crate::classify::classify_message;
use crate::contributions::Contributions;
use crate::fault::AdminSeen;
use crate::name_map::{NameRefs, NameSet};
use crate::provisioner::{Held, Provisioner};
use crate::retire::{Action, Approval};
use crate::standing::Standing;
use mesh_runtime::redact::{error_text, redact_within};

impl<P: Provisioner> Runner<P> {
    /// Retirement for this pass, before the consumers are attempted (so a
    /// consumer listed again is enabled before its check): `held` is what
    /// the backend holds (`None`: it could not be listed, or the file could
    /// not be read, and the pass counts for nothing); retire, re-enable.
    pub(super) async fn retirement_actions(
        &mut self,
        contributions: &Arc<Contributions>,
        fresh: bool,
        held: Option<&[Held]>,
    ) -> usize {
        let listed = self.listed.of(contributions);
        let actions = self.retirement.pass(
            fresh.then_some(listed),
            held,
            Instant::now(),
            &self.settings.retire,
        );
        let mut published = 0;
        for action in actions {
            published += match action {
                Action::Retire(name) => {
                    self.retire_now(
                        &contributions.provider,
                        &name,
                        "withdrawn from the contributions file long enough",
                        self.settings.call_timeout,
                    )
                    .await
                }
                Action::ReEnable(name) => self.re_enable(&contributions.provider, &name).await,
                Action::Countdown { name, since } => {
                    let retire = &self.settings.retire;
                    let at = retire.retire_at(since, self.settings.pass_every);
                    let retire_at = self.clock.at(at);
                    tracing::info!(consumer = %name, retire_at = %retire_at, "withdrawn and still held: retired then unless listed again");
                    let detail = format!(
                        "withdrawn from the contributions file and still held: retired after \
                         {} passes and {} unless listed again",
                        retire.after_passes,
                        humantime::format_duration(retire.after)
                    );
                    let retirement = (RetirementAction::Retiring, detail, Some(retire_at));
                    self.publish_retirement(&contributions.provider, &name, retirement, since);
                    1
                }
                Action::Cancel(name, why) => {
                    tracing::info!(consumer = %name, why = why.detail(), "countdown to retire ended");
                    let retirement = (RetirementAction::Cancelled, why.detail().to_owned(), None);
                    self.publish_retirement(
                        &contributions.provider,
                        &name,
                        retirement,
                        Instant::now(),
                    );
                    1
                }
            };
        }
        published
    }

    /// What the backend holds, for a pass whose file was read; `None`
    /// when it cannot be listed (logged once per change). With it, what
    /// the listing (the pass's first administrator work) found of the
    /// administrator.
    pub(super) async fn held_for_pass(
        &mut self,
        provider: &ModuleId,
        fresh: bool,
    ) -> (Option<Vec<Held>>, AdminSeen) {
        match fresh {
            true => self.fetch_held(provider).await,
            false => (None, AdminSeen::Unknown),
        }
    }

    /// After the attempts: withdrawn consumers the backend does not hold.
    pub(super) fn withdrawn_after(
        &mut self,
        contributions: &Arc<Contributions>,
        held: &[Held],
    ) -> usize {
        // Every served consumer has a standing (each is observed every
        // pass), so a standing of a consumer not listed exists only when
        // there are more standings than served consumers.
        if self.entries.len() <= contributions.consumers.len() {
            return 0;
        }
        let mut listed = std::mem::take(&mut self.listed);
        let published = self.withdrawn(&contributions.provider, listed.of(contributions), held);
        self.listed = listed;
        published
    }

    /// Consumers no longer listed that the backend does not hold (never
    /// made, or removed by a person): nothing to retire. A `failing` said
    /// for one is answered by `recovered` (`withdrawn`); its standing is
    /// forgotten either way. Only on a pass whose file and held list were read.
    fn withdrawn(&mut self, provider: &ModuleId, listed: &NameSet, held: &[Held]) -> usize {
        let held: NameRefs<'_> = held.iter().map(|h| &h.name).collect();
        let gone: Vec<Name> = self
            .entries
            .names()
            .filter(|name| !listed.contains(name) && !held.contains(name))
            .cloned()
            .collect();
        let now = Instant::now();
        let mut published = 0;
        for name in gone {
            let Some(entry) = self.entries.remove(&name) else {
                continue;
            };
            let Some(recovered) = entry.standing.withdraw() else {
                continue;
            };
            tracing::info!(consumer = %name, "withdrawn and not held: its failing is over");
            let event = standing_event(
                &name,
                Some(&entry.machine),
                Some(&entry.provision),
                recovered,
                &self.clock,
                now,
            );
            publish(&self.outbox, &self.metrics, provider, &event);
            published += 1;
        }
        published
    }

    async fn fetch_held(&mut self, provider: &ModuleId) -> (Option<Vec<Held>>, AdminSeen) {
        let timeout = self.settings.call_timeout;
        let listing = self.provisioner.held(provider);
        let (class, error) = match tokio::time::timeout(timeout, listing).await {
            Ok(Ok(held)) => {
                if self.held_error.take().is_some() {
                    tracing::info!("held provisions can be listed again");
                }
                return (Some(held), AdminSeen::Good);
            }
            Ok(Err(error)) => {
                let text = self.redacted(&error_text(&error));
                let class = self
                    .provisioner
                    .classify(&error)
                    .unwrap_or_else(|| classify_message(&text));
                (class, text)
            }
            Err(_) => (
                Class::Unreachable,
                format!(
                    "listing held provisions timed out after {}",
                    humantime::format_duration(timeout)
                ),
            ),
        };
        if self.held_error.as_ref() != Some(&error) {
            tracing::warn!(error = %error, class = %class, "cannot list held provisions; passes do not count towards retirement until it can");
            self.held_error = Some(error.clone());
        }
        (
            None,
            AdminSeen::Failed {
                class,
                error,
                reported: false,
            },
        )
    }

    pub(super) fn redacted(&self, text: &str) -> String {
        self.redacted_within(text, mesh_runtime::redact::MAX_ERROR_CHARS)
    }

    /// `text` without the provider's secrets, cut to `max` characters.
    pub(super) fn redacted_within(&self, text: &str, max: usize) -> String {
        let secrets = self.provisioner.secrets();
        let values: Vec<&str> = secrets.iter().map(|s| s.expose()).collect();
        redact_within(text, &values, max)
    }

    /// Calls one retirement method, waiting at most `within`; errors are
    /// logged and returned redacted.
    async fn call<F>(
        &self,
        what: &str,
        name: &Name,
        within: Duration,
        call: F,
    ) -> Result<(), String>
    where
        F: std::future::Future<Output = Result<(), P::Error>>,
    {
        let result = match tokio::time::timeout(within, call).await {
            Ok(Ok(())) => return Ok(()),
            Ok(Err(error)) => self.redacted(&error_text(&error)),
            Err(_) => format!(
                "{what} timed out after {}",
                humantime::format_duration(within)
            ),
        };
        tracing::warn!(consumer = %name, error = %result, "{what} failed; tried again on a later pass");
        Err(result)
    }

    /// Retires `name` (its backend call bounded by `within`); returns the events published.
    async fn retire_now(
        &mut self,
        provider: &ModuleId,
        name: &Name,
        why: &str,
        within: Duration,
    ) -> usize {
        let provisioner = Arc::clone(&self.provisioner);
        if self
            .call("retire", name, within, provisioner.retire(provider, name))
            .await
            .is_err()
        {
            return 0;
        }
        self.retirement.retired(name);
        tracing::info!(consumer = %name, why, "retired");
        let now = Instant::now();
        let detail = format!("disabled, nothing deleted: {why}");
        self.publish_retirement(
            provider,
            name,
            (RetirementAction::Retired, detail, None),
            now,
        );
        let (machine, provision, recovered) = match self.entries.get_mut(name) {
            Some(entry) => (
                Some(entry.machine.clone()),
                Some(entry.provision.clone()),
                entry.standing.retire(),
            ),
            None => (None, None, Standing::new().retire()),
        };
        self.entries.remove(name);
        let event = standing_event(
            name,
            machine.as_ref(),
            provision.as_deref(),
            recovered,
            &self.clock,
            now,
        );
        publish(&self.outbox, &self.metrics, provider, &event);
        2
    }

    /// Enables a listed consumer the backend holds retired. One the loop
    /// serves since start and never retired was disabled by hand: that is
    /// a mend (logged and counted in `mesh_provisions_mended_total`), not a
    /// retirement undone, and no `retirement` event is published for it.
    async fn re_enable(&mut self, provider: &ModuleId, name: &Name) -> usize {
        let provisioner = Arc::clone(&self.provisioner);
        if self
            .call(
                "re-enable",
                name,
                self.settings.call_timeout,
                provisioner.re_enable(provider, name),
            )
            .await
            .is_err()
        {
            return 0;
        }
        // The loop forgets a consumer's entry when it retires it, so one it
        // still has was served and never retired since start.
        if self.entries.contains_key(name) {
            tracing::warn!(consumer = %name, what = "found disabled while listed (not retired by this provider); enabled again", "mended");
            self.metrics.mended();
            return 0;
        }
        tracing::info!(consumer = %name, "re-enabled");
        self.re_enabled.insert(name.clone());
        let retirement = (
            RetirementAction::ReEnabled,
            "listed again: enabled again".into(),
            None,
        );
        self.publish_retirement(provider, name, retirement, Instant::now());
        1
    }

    /// Publishes `retirement` (the action, its detail, and for `retiring`
    /// when) of `name`.
    fn publish_retirement(
        &self,
        provider: &ModuleId,
        name: &Name,
        retirement: (RetirementAction, String, Option<Timestamp>),
        now: Instant,
    ) {
        let (action, detail, retire_at) = retirement;
        let event = Event::Retirement(RetirementBody {
            v: VERSION,
            consumer: name.clone(),
            action,
            detail,
            retire_at,
            said_at: self.clock.at(now),
        });
        publish(&self.outbox, &self.metrics, provider, &event);
    }

    /// Why `request` must not be acted on now, if its deadline passed.
    fn expired(&self, request: &ApproveRequest) -> Option<String> {
        let deadline = request.expires_at?;
        let now = self.clock.at(Instant::now());
        (now > deadline).then(|| {
            tracing::warn!(consumer = %request.consumer, expires_at = %deadline, "approval came after its deadline; not acted on");
            format!("the request expired at {deadline} (the asker stopped waiting); nothing was done")
        })
    }

    /// How long an approved action may take: the call timeout, and never
    /// past the request's `expires_at` (the asker has stopped waiting then).
    fn act_within(&self, request: &ApproveRequest) -> Duration {
        let bound = self.settings.call_timeout;
        let Some(deadline) = request.expires_at else {
            return bound;
        };
        let now = self.clock.at(Instant::now());
        deadline
            .system_time()
            .duration_since(now.system_time())
            .map_or(Duration::ZERO, |left| left.min(bound))
    }

    /// Answers a person's approval request (its raw JSON body).
    /// A malformed request is answered `ok: false`, never a crash.
    pub async fn approve(&mut self, body: &[u8]) -> ApproveReply {
        let refuse = |detail: String| ApproveReply { ok: false, detail };
        let request: ApproveRequest = match serde_json::from_slice(body) {
            Ok(request) => request,
            Err(error) => return refuse(format!("malformed approve request: {error}")),
        };
        if request.v != VERSION {
            return refuse(format!("unsupported approve request version {}", request.v));
        }
        if let Some(expired) = self.expired(&request) {
            return refuse(expired);
        }
        let Some((fresh, contributions)) = self.load() else {
            return refuse("no contributions file naming this provider was read yet".into());
        };
        if !fresh {
            return refuse("the contributions file cannot be read now, so whether the consumer is withdrawn is unknown; try again later".into());
        }
        let provider = contributions.provider.clone();
        let (Some(held), _) = self.fetch_held(&provider).await else {
            return refuse(
                "the provisions held at the backend cannot be listed now; try again later".into(),
            );
        };
        let name = &request.consumer;
        // A consumer the running pass attempts (its file was read before
        // this one) counts as listed: the pass may make it again.
        let listed =
            contributions.lists(name) || self.in_flight.as_ref().is_some_and(|c| c.lists(name));
        let entry = held.iter().find(|h| &h.name == name);
        let provider = &provider;
        // Listing what the backend holds took time: the deadline again,
        // right before acting; the action itself is not waited for past it.
        if let Some(expired) = self.expired(&request) {
            return refuse(expired);
        }
        let within = self.act_within(&request);
        match self.retirement.approve(name, request.delete, listed, entry) {
            Approval::Refused(detail) => {
                tracing::info!(consumer = %name, delete = request.delete, reason = %detail, "approval refused");
                refuse(detail)
            }
            Approval::RetireNow(name) => {
                let retirement = (
                    RetirementAction::Approved,
                    "a person approved retiring it now".into(),
                    None,
                );
                self.publish_retirement(provider, &name, retirement, Instant::now());
                if self
                    .retire_now(provider, &name, "a person approved it", within)
                    .await
                    == 0
                {
                    return refuse(format!("retiring {name} failed; see the provider's log"));
                }
                ApproveReply {
                    ok: true,
                    detail: format!("{name} retired: disabled, nothing deleted"),
                }
            }
            Approval::Delete(name) => {
                let retirement = (
                    RetirementAction::Approved,
                    "a person approved deleting its data".into(),
                    None,
                );
                self.publish_retirement(provider, &name, retirement, Instant::now());
                let provisioner = Arc::clone(&self.provisioner);
                if let Err(error) = self
                    .call("delete", &name, within, provisioner.delete(provider, &name))
                    .await
                {
                    return refuse(format!("deleting {name} failed: {error}"));
                }
                tracing::info!(consumer = %name, "deleted on approval");
                let retirement = (
                    RetirementAction::Deleted,
                    "its provision and data were deleted".into(),
                    None,
                );
                self.publish_retirement(provider, &name, retirement, Instant::now());
                ApproveReply {
                    ok: true,
                    detail: format!("{name} deleted"),
                }
            }
        }
    }
}

/// The names a contributions list lists (served and held back), made once
/// per list rather than twice a pass: retirement looks every held
/// provision up in it, and a list stays the same pass after pass until
/// the file changes.
#[derive(Debug, Default)]
pub(super) struct Listed {
    of: Option<Arc<Contributions>>,
    names: NameSet,
}

impl Listed {
    /// The names `list` lists.
    fn of(&mut self, list: &Arc<Contributions>) -> &NameSet {
        if !self.of.as_ref().is_some_and(|of| Arc::ptr_eq(of, list)) {
            self.names = list.listed().cloned().collect();
            self.of = Some(Arc::clone(list));
        }
        &self.names
    }
}
