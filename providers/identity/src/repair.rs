//! The known fault `admin-refused`: Keycloak refuses the mesh's
//! administrator password (the original outage: the server's database was
//! moved and the realm's administrator kept an old password).
//!
//! # Expected flow
//! - probe: the administrator's login to realm `master`: its password
//!   through `admin-cli`, or, for a service-account client, its secret.
//!   Keycloak's refusal (`invalid_grant`; for a client `invalid_client` or
//!   `unauthorized_client`; status 400 or 401) is the fault; any other
//!   failure (unreachable, 5xx) says nothing about it (`Unknown`).
//!   During the login backoff after a refusal ([`crate::login_backoff`]) the probe answers it
//!   without asking Keycloak, so a braked fault never locks the
//!   administrator out.
//! - repair, through Keycloak's own bootstrap command, in its container or
//!   on this host, beside the live server ([`crate::bootstrap`]): a
//!   temporary administrator with a random name and password → its token →
//!   the real administrator's id → its password set to the mesh's
//!   (`reset-password`, not temporary) → its brute-force record cleared (a
//!   lockout outlives a new password) → the temporary administrator
//!   deleted, also when a step failed (and, when the repair is cancelled
//!   midway, by a task spawned as it is dropped). The loop then verifies
//!   with a new probe.
//! - Only the temporary administrator this repair made is ever removed.
//!   Keycloak marks the first administrator of a server (made from
//!   `KC_BOOTSTRAP_ADMIN_*`) as temporary too, and that one is often the
//!   mesh's own administrator.
//! - A temporary administrator whose login is refused is not taken as
//!   never made (it may be locked out, or made in another database than
//!   the server's): it is looked up as the mesh's administrator, and when
//!   that cannot be done either, the repair's message says so.
//!
//! # Secrets
//! The mesh's administrator password never leaves this process but as the
//! `reset-password` body. The temporary administrator's password is made
//! before the repair that uses it, so [`Repair::secrets`] already names it
//! when the loop reads them just before the repair.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use mesh_sdk::redact::error_text;
use mesh_sdk::{Name, Probe, Repair, Secret};

use crate::bootstrap::{Bootstrap, BootstrapError, Runtime, TempAdmin};
use crate::config::{AdminLogin, IdentityConfig};
use crate::keycloak::{AccessToken, Auth, Keycloak};

/// The fault's name, as said on `provisioner.repair`.
pub const FAULT: &str = "admin-refused";

/// Why a repair of a refused administrator did not succeed.
#[derive(Debug, thiserror::Error)]
pub enum RepairError {
    /// Nowhere is given to run Keycloak's bootstrap command.
    #[error("neither --container nor --kc-sh is given, so {admin} cannot be repaired here: set its {what} to the mesh's by hand")]
    NoRuntime {
        /// The administrator: `administrator X` or `administrator client X`.
        admin: String,
        /// `password` or `secret`.
        what: &'static str,
    },
    /// A step failed (its message), and what became of the temporary administrator.
    #[error("{step}; {cleanup}")]
    Step {
        /// The failed step's message.
        step: String,
        /// What became of the temporary administrator.
        cleanup: String,
    },
    /// The password was set, but the temporary administrator may remain.
    #[error("{credential} set to the mesh's, but {left}")]
    TemporaryAdminLeft {
        /// Whose password or secret: `password of administrator X`.
        credential: String,
        /// What remains, and why.
        left: String,
    },
}

/// The repair of a refused administrator.
#[derive(Debug)]
pub struct AdminRepair {
    keycloak: Arc<Keycloak>,
    runtime: Option<Runtime>,
    bootstrap_timeout: Duration,
    /// The temporary administrator the next repair makes, and the last one made.
    temps: Mutex<(TempAdmin, Option<TempAdmin>)>,
}

/// What became of a temporary administrator.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Removal {
    /// It was deleted.
    Removed,
    /// None was made: the bootstrap command never started, or realm
    /// `master` does not list it.
    NoneMade,
    /// It cannot log in, and cannot be looked up either (the mesh's
    /// administrator is refused): most likely never made.
    Unconfirmed(String),
}

impl AdminRepair {
    /// The repair for `keycloak`, through the runtime `config` names.
    pub fn new(keycloak: Arc<Keycloak>, config: &IdentityConfig) -> AdminRepair {
        AdminRepair {
            keycloak,
            runtime: config.runtime().cloned(),
            bootstrap_timeout: config.bootstrap_timeout(),
            temps: Mutex::new((TempAdmin::random(), None)),
        }
    }

    fn temps(&self) -> std::sync::MutexGuard<'_, (TempAdmin, Option<TempAdmin>)> {
        self.temps
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The steps between the bootstrap command and the removal; the
    /// temporary administrator's token, once it has one, goes to `guard`.
    async fn steps(
        &self,
        runtime: &Runtime,
        temp: &TempAdmin,
        guard: &mut TempAdminGuard,
    ) -> Result<(), String> {
        let kc = &self.keycloak;
        let ran = Bootstrap::new(runtime, temp)
            .run(self.bootstrap_timeout)
            .await;
        if let Err(BootstrapError::Spawn { .. }) = &ran {
            guard.temp = None; // it never started, so it made no one
        }
        ran.map_err(|e| error_text(&e))?;
        let token = kc
            .login_as(&temp.username, &temp.password)
            .await
            .map_err(|e| match e.is_invalid_grant() {
                true => format!(
                    "{}: kc.sh bootstrap-admin succeeded, yet its administrator is refused; \
                     it most likely reached another database than the server's \
                     (give it the server's KC_DB* settings)",
                    error_text(&e)
                ),
                false => error_text(&e),
            })?;
        guard.token = Some(token.clone());
        let admin = kc.admin_user();
        let auth = Auth::Bearer(&token);
        match kc.admin_login_kind() {
            AdminLogin::Password => {
                let id = kc
                    .find_user(auth, admin)
                    .await
                    .map_err(|e| error_text(&e))?
                    .ok_or_else(|| {
                        format!("administrator {admin} is not a user of realm master")
                    })?;
                kc.reset_password(auth, admin, &id, &kc.admin_password())
                    .await
                    .map_err(|e| error_text(&e))?;
                kc.clear_login_failures(auth, admin, &id)
                    .await
                    .map_err(|e| error_text(&e))?;
            }
            AdminLogin::ClientCredentials => {
                let id = kc
                    .find_master_client(auth, admin)
                    .await
                    .map_err(|e| error_text(&e))?
                    .ok_or_else(|| {
                        format!("administrator client {admin} is not a client of realm master")
                    })?;
                kc.set_master_client_secret(auth, admin, &id, &kc.admin_password())
                    .await
                    .map_err(|e| error_text(&e))?;
            }
        }
        kc.forget_admin_login().await;
        tracing::info!(admin = %admin, "{} set to the mesh's", self.credential());
        Ok(())
    }

    /// `password of administrator X`, or `secret of administrator client X`.
    fn credential(&self) -> String {
        let (admin, what) = self.administrator();
        format!("{what} of {admin}")
    }

    /// `administrator X` and `password`, or `administrator client X` and `secret`.
    fn administrator(&self) -> (String, &'static str) {
        let user = self.keycloak.admin_user();
        match self.keycloak.admin_login_kind() {
            AdminLogin::Password => (format!("administrator {user}"), "password"),
            AdminLogin::ClientCredentials => (format!("administrator client {user}"), "secret"),
        }
    }
}

#[async_trait]
impl Repair for AdminRepair {
    type Error = RepairError;

    fn fault(&self) -> Name {
        Name::parse(FAULT).expect("the fault's name is a valid name")
    }

    async fn probe(&self) -> Probe {
        match self.keycloak.admin_login().await {
            Ok(()) => Probe::Healthy,
            Err(error) if self.keycloak.refuses_admin(&error) => Probe::Fault(error_text(&error)),
            Err(error) => Probe::Unknown(error_text(&error)),
        }
    }

    async fn repair(&self) -> Result<String, RepairError> {
        let admin = self.keycloak.admin_user().to_owned();
        let Some(runtime) = self.runtime.as_ref() else {
            let (admin, what) = self.administrator();
            return Err(RepairError::NoRuntime { admin, what });
        };
        // The next repair's temporary administrator is made now, so the
        // loop knows its password before that repair.
        let temp = {
            let mut temps = self.temps();
            let temp = std::mem::replace(&mut temps.0, TempAdmin::random());
            temps.1 = Some(temp.clone());
            temp
        };
        tracing::warn!(admin = %admin, runtime = %runtime, temporary_admin = %temp.username,
            "repairing a refused administrator through a temporary administrator made with kc.sh bootstrap-admin");
        let mut guard = TempAdminGuard {
            keycloak: Arc::clone(&self.keycloak),
            temp: Some(temp.clone()),
            token: None,
        };
        let steps = self.steps(runtime, &temp, &mut guard).await;
        let removal = guard.finish().await;
        let name = &temp.username;
        match (steps, removal) {
            (Ok(()), Ok(_)) => Ok(format!(
                "{} set to the mesh's through temporary administrator {name} (kc.sh bootstrap-admin {runtime}), which was removed",
                self.credential()
            )),
            (Ok(()), Err(left)) => Err(RepairError::TemporaryAdminLeft {
                credential: self.credential(),
                left,
            }),
            (Err(step), Ok(Removal::Unconfirmed(cleanup))) => {
                Err(RepairError::Step { step, cleanup })
            }
            (Err(step), Ok(Removal::Removed)) => Err(RepairError::Step {
                step,
                cleanup: format!("temporary administrator {name} removed"),
            }),
            (Err(step), Ok(Removal::NoneMade)) => Err(RepairError::Step {
                step,
                cleanup: "no temporary administrator remains".into(),
            }),
            (Err(step), Err(cleanup)) => Err(RepairError::Step { step, cleanup }),
        }
    }

    fn secrets(&self) -> Vec<Secret> {
        let temps = self.temps();
        let mut secrets = self.keycloak.admin_passwords();
        secrets.push(temps.0.password.clone());
        secrets.extend(temps.1.as_ref().map(|t| t.password.clone()));
        secrets
    }
}

/// Removes the temporary administrator: by [`finish`](Self::finish), or,
/// when the repair is dropped before that, by a task spawned on drop.
struct TempAdminGuard {
    keycloak: Arc<Keycloak>,
    temp: Option<TempAdmin>,
    token: Option<AccessToken>,
}

impl TempAdminGuard {
    async fn finish(mut self) -> Result<Removal, String> {
        let Some(temp) = self.temp.take() else {
            return Ok(Removal::NoneMade);
        };
        remove(&self.keycloak, &temp, self.token.take()).await
    }
}

impl Drop for TempAdminGuard {
    fn drop(&mut self) {
        let Some(temp) = self.temp.take() else {
            return;
        };
        let (keycloak, token) = (Arc::clone(&self.keycloak), self.token.take());
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                runtime.spawn(async move {
                    if let Err(left) = remove(&keycloak, &temp, token).await {
                        tracing::error!(problem = %left, "repair cancelled; the temporary administrator may remain");
                    }
                });
            }
            Err(_) => tracing::error!(temporary_admin = %temp.username,
                "repair dropped outside a runtime; the temporary administrator may remain: remove it by hand"),
        }
    }
}

/// Deletes `temp` from realm `master`: with its own token (logging in when
/// there is none yet), else with the mesh's administrator (whose password
/// may just have been set). A temporary administrator that cannot log in
/// may still exist (locked out, or made in another database): it is looked
/// up as the mesh's administrator before it is taken as never made.
async fn remove(
    keycloak: &Keycloak,
    temp: &TempAdmin,
    token: Option<AccessToken>,
) -> Result<Removal, String> {
    let name = &temp.username;
    let mut refused = false;
    let token = match token {
        Some(token) => Some(token),
        None => match keycloak.login_as(name, &temp.password).await {
            Ok(token) => Some(token),
            Err(error) => {
                refused = error.is_invalid_grant();
                tracing::info!(temporary_admin = %name, error = %error_text(&error),
                    "cannot log in as the temporary administrator; looking it up as the mesh's administrator");
                None
            }
        },
    };
    let mut why = String::new();
    let mut ways = Vec::new();
    if let Some(token) = &token {
        ways.push(Auth::Bearer(token));
    }
    ways.push(Auth::Admin);
    for auth in ways {
        let deleted = async {
            match keycloak.find_user(auth, name).await? {
                Some(id) => keycloak
                    .delete_user(auth, name, &id)
                    .await
                    .map(|_| Removal::Removed),
                None => Ok(Removal::NoneMade),
            }
        };
        match deleted.await {
            Ok(removal) => {
                match removal {
                    Removal::Removed => {
                        tracing::info!(temporary_admin = %name, "temporary administrator removed")
                    }
                    Removal::NoneMade => {
                        tracing::info!(temporary_admin = %name, "no temporary administrator to remove")
                    }
                    Removal::Unconfirmed(_) => {}
                }
                return Ok(removal);
            }
            Err(error) => why = error_text(&error),
        }
    }
    if refused {
        tracing::warn!(temporary_admin = %name, error = %why,
            "the temporary administrator cannot log in and cannot be looked up: most likely it was never made");
        return Ok(Removal::Unconfirmed(format!(
            "temporary administrator {name} cannot log in nor be looked up, so most likely was never made"
        )));
    }
    tracing::error!(temporary_admin = %name, error = %why, "the temporary administrator could not be removed: remove it by hand");
    Err(format!(
        "temporary administrator {name} could not be removed ({why}): remove it by hand"
    ))
}
