//! The rule on instances: a provision one instance made is not another's.
//! Two provider instances may share one backend (a move in progress, two
//! machines' providers on one cluster); the loop retires what `held`
//! lists, so an instance that listed another's would retire it.

use mesh_protocol::{ModuleId, Name};
use mesh_runtime::Secret;

use super::rules::Run;
use super::{instance, Outcome, OTHER_PROVIDER};
use crate::provisioner::Provisioner;

impl<P: Provisioner> Run<'_, P> {
    /// Makes a provision as the suite's instance, then asks as another:
    /// `held` must not list it; and after `ensure` (with another secret:
    /// refused, or made apart where the backend keeps each instance's
    /// apart), retire, re-enable and delete it must still work with its own
    /// secret and be listed, active, by its maker.
    pub(super) async fn rule_other_instance(&self) -> Outcome {
        let other = instance(OTHER_PROVIDER);
        let (x, secret, theirs) = (self.name("inst"), self.secret(), self.secret());
        let outcome = match self.other_instance(&other, &x, &secret, &theirs).await {
            Ok(said) => Outcome::Passed(Some(said)),
            Err(why) => Outcome::Failed(why),
        };
        // Whatever the other instance may wrongly have made is removed.
        let _ = self.bounded("retire", self.p.retire(&other, &x)).await;
        let _ = self.bounded("delete", self.p.delete(&other, &x)).await;
        let removed = async {
            self.retire(&x).await?;
            self.delete(&x).await
        };
        match (outcome, removed.await) {
            (Outcome::Passed(_), Err(why)) => Outcome::Failed(format!("cleaning up: {why}")),
            (outcome, _) => outcome,
        }
    }

    async fn other_instance(
        &self,
        other: &ModuleId,
        x: &Name,
        secret: &Secret,
        theirs: &Secret,
    ) -> Result<String, String> {
        let maker = &self.provider;
        self.ensure(x, secret).await?;
        self.check(x, secret).await?;
        let still_its_own = |after: String| async move {
            let consumer = self.consumer(x);
            if let Err((class, message)) = self
                .bounded("check", self.p.check(&consumer, secret))
                .await?
            {
                return Err(format!(
                    "{x}, made by {maker}, no longer works with its own secret {after} ({class}: {message})"
                ));
            }
            match self.held_as(x).await? {
                Some(false) => Ok(()),
                Some(true) => Err(format!("{x} is retired {after}")),
                None => Err(format!("held as {maker} no longer lists {x} {after}")),
            }
        };
        let listed = self.must("held", self.p.held(other)).await?;
        if listed.iter().any(|h| &h.name == x) {
            return Err(format!(
                "held as {other} lists {x}, which {maker} made: {other} would retire it once its contributions file does not list it"
            ));
        }
        let mut said = Vec::new();
        let consumer = self.consumer_of(other, x);
        // Refused (one name, one provision: another instance's), or made
        // apart (a backend that keeps each instance's apart): either way
        // the maker's must still work with its own secret.
        match self
            .bounded("ensure", self.p.ensure(&consumer, theirs))
            .await?
        {
            Ok(_) => said.push("ensure made its own, apart".to_owned()),
            Err((class, _)) => said.push(format!("ensure refused ({class})")),
        }
        still_its_own(format!("after ensure as {other}")).await?;
        for what in ["retire", "re-enable", "delete"] {
            let call = match what {
                "retire" => self.p.retire(other, x),
                "re-enable" => self.p.re_enable(other, x),
                _ => self.p.delete(other, x),
            };
            said.push(match self.bounded(what, call).await? {
                Ok(()) => format!("{what} did nothing"),
                Err(_) => format!("{what} refused"),
            });
            still_its_own(format!("after {what} as {other}")).await?;
        }
        Ok(format!("as {other}: {}", said.join(", ")))
    }
}
