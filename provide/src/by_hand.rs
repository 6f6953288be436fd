//! The `by-hand` verb as conform's oracle ([`mesh_sdk::conform::ByHand`]),
//! and a hook's processes killed when conform cut a call off
//! ([`mesh_sdk::conform::Interrupt`]).
//!
//! The loop never calls `by-hand`: only `mesh-provide conform` does, to act
//! on the backend as a person would (docs/hooks.md, "Conformance"). A hook
//! answering `{"unsupported": true}` has the rules needing it skipped.

use std::sync::Arc;

use mesh_sdk::conform::{ByHand, ByHandError, Interrupt};
use mesh_sdk::{async_trait, Name, Secret};

use crate::provisioner::HookProvisioner;
use crate::wire::{Answer, Ask, ByHandAction, Done};

/// `by-hand` calls to the hook of a [`HookProvisioner`], and its kill.
#[derive(Clone, Debug)]
pub struct HookByHand {
    provisioner: Arc<HookProvisioner>,
}

impl HookByHand {
    /// The oracle (and interrupt) over `provisioner`'s hook.
    pub fn new(provisioner: Arc<HookProvisioner>) -> HookByHand {
        HookByHand { provisioner }
    }

    /// One `by-hand` request: what it answered when it did it.
    async fn act(
        &self,
        action: ByHandAction,
        consumer: &Name,
        secret: Option<&Secret>,
        target: Option<&Name>,
    ) -> Result<Done, ByHandError> {
        let hook = self.provisioner.hook();
        let ask = Ask::ByHand {
            action,
            consumer,
            secret,
            target,
        };
        let what = action.as_str();
        match hook.call(&ask).await {
            Ok(Answer::Done(done)) => Ok(done),
            Ok(Answer::Unsupported) => Err(ByHandError::Unsupported(format!(
                "hook {} answers by-hand unsupported",
                hook.label()
            ))),
            Ok(Answer::Refused { error, .. }) => {
                Err(ByHandError::Failed(error.unwrap_or_else(|| {
                    format!("hook {} refused by-hand {what}", hook.label())
                })))
            }
            Ok(_) => Err(ByHandError::Failed(format!(
                "hook {} answered by-hand {what} with another verb's reply",
                hook.label()
            ))),
            Err(error) => Err(ByHandError::Failed(hook.scrub().text(&error.to_string()))),
        }
    }

    /// A yes or no the reply must carry in `field`.
    fn answer(&self, field: &str, value: Option<bool>) -> Result<bool, ByHandError> {
        value.ok_or_else(|| {
            ByHandError::Failed(format!(
                "hook {}'s by-hand reply has no \"{field}\"",
                self.provisioner.hook().label()
            ))
        })
    }
}

#[async_trait]
impl ByHand for HookByHand {
    async fn change(&self, consumer: &Name) -> Result<(), ByHandError> {
        self.act(ByHandAction::Change, consumer, None, None)
            .await
            .map(drop)
    }

    async fn make(&self, consumer: &Name, secret: &Secret) -> Result<(), ByHandError> {
        self.act(ByHandAction::Make, consumer, Some(secret), None)
            .await
            .map(drop)
    }

    async fn works(&self, consumer: &Name, secret: &Secret) -> Result<bool, ByHandError> {
        let done = self
            .act(ByHandAction::Works, consumer, Some(secret), None)
            .await?;
        self.answer("works", done.works)
    }

    async fn reach(&self, who: &Name, secret: &Secret, to: &Name) -> Result<bool, ByHandError> {
        let done = self
            .act(ByHandAction::Reach, who, Some(secret), Some(to))
            .await?;
        self.answer("reaches", done.reaches)
    }

    async fn remove(&self, consumer: &Name) -> Result<(), ByHandError> {
        self.act(ByHandAction::Remove, consumer, None, None)
            .await
            .map(drop)
    }

    async fn left(&self, consumer: &Name) -> Result<bool, ByHandError> {
        let done = self.act(ByHandAction::Left, consumer, None, None).await?;
        self.answer("left", done.left)
    }
}

/// Kills the hook's running process(es) ([`Hook::kill`](crate::hook::Hook::kill)):
/// exec, the cut call's process (already gone when its future was
/// dropped); serve, the long-running one, started again behind its brake.
#[async_trait]
impl Interrupt for HookByHand {
    async fn interrupt(&self) {
        self.provisioner.hook().kill().await;
    }
}
