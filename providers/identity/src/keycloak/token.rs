//! The token endpoint: the administrator's login (cached, and not tried
//! again for a while after a refusal: [`crate::login_backoff`]), a temporary administrator's login, and
//! the consumer's client-credentials check.

use std::time::Duration;

use mesh_sdk::Secret;
use serde::Deserialize;
use tokio::time::Instant;

use super::{Keycloak, Kind};
use crate::config::AdminLogin;
use crate::error::IdentityError;

/// The admin client of realm `master` (FACTS.md: the password grant goes to it).
const ADMIN_CLI: &str = "admin-cli";

/// An access token. `Debug` never shows it.
pub type AccessToken = Secret;

/// What the provider knows of the administrator's login.
#[derive(Debug)]
pub(super) enum Cached {
    /// Nothing yet (or the token was refused).
    None,
    /// A token, used until `renew_at`.
    Token {
        access: AccessToken,
        renew_at: Instant,
    },
    /// The last `refusals` logins in a row were refused, the last with
    /// this answer; the password is not tried again before `until`.
    Refused {
        refusals: u32,
        until: Instant,
        status: u16,
        error: Option<String>,
        description: Option<String>,
    },
}

#[derive(Deserialize)]
struct TokenAnswer {
    access_token: String,
    expires_in: Option<u64>,
}

/// When a token that lives `expires_in` seconds should be renewed: at three
/// quarters of its life, and at least 5 seconds before its end.
fn renew_after(expires_in: u64) -> Duration {
    let quarter = expires_in / 4;
    Duration::from_secs(expires_in.saturating_sub(quarter.max(5)).max(1))
}

impl Keycloak {
    /// Logs in to realm `master` through `admin-cli` with a password
    /// (the password grant); returns the access token and when to renew it.
    async fn password_grant(
        &self,
        what: &str,
        username: &str,
        password: &Secret,
    ) -> Result<(AccessToken, Instant), IdentityError> {
        let form = [
            ("grant_type", "password"),
            ("client_id", ADMIN_CLI),
            ("username", username),
            ("password", password.expose()),
        ];
        self.master_token(what, &form).await
    }

    /// Logs in to realm `master` as the service-account client
    /// `client_id` (the client-credentials grant).
    async fn client_grant(
        &self,
        what: &str,
        client_id: &str,
        secret: &Secret,
    ) -> Result<(AccessToken, Instant), IdentityError> {
        let form = [
            ("grant_type", "client_credentials"),
            ("client_id", client_id),
            ("client_secret", secret.expose()),
        ];
        self.master_token(what, &form).await
    }

    /// A token of realm `master` for the login `form`, and when to renew it.
    async fn master_token(
        &self,
        what: &str,
        form: &[(&str, &str)],
    ) -> Result<(AccessToken, Instant), IdentityError> {
        let url = self.url(&["realms", "master", "protocol", "openid-connect", "token"]);
        let answer = self.send(what, self.http.post(url).form(form)).await?;
        let token: TokenAnswer = answer.checked(what)?.json(what)?;
        let renew_at = Instant::now() + renew_after(token.expires_in.unwrap_or(60));
        Ok((Secret::new(token.access_token), renew_at))
    }

    fn admin_what(&self) -> String {
        match self.admin_login {
            AdminLogin::Password => format!("administrator login as {}", self.admin_user),
            AdminLogin::ClientCredentials => {
                format!("administrator login as client {}", self.admin_user)
            }
        }
    }

    /// What a refused login was doing, first what to do when the password
    /// is a systemd credential (copied at the unit's start: a rotation
    /// needs a restart), so a message cut short keeps it.
    fn refused_what(&self) -> String {
        match self.admin_password.restart_hint() {
            Some(hint) => format!("{hint}; {}", self.admin_what()),
            None => self.admin_what(),
        }
    }

    /// Whether `error` is Keycloak refusing the administrator's
    /// credentials: `invalid_grant` for a user's password; for a client,
    /// `invalid_client` (unknown or disabled) or `unauthorized_client`
    /// (wrong secret), status 400 or 401.
    pub fn refuses_admin(&self, error: &IdentityError) -> bool {
        match self.admin_login {
            AdminLogin::Password => error.is_invalid_grant(),
            AdminLogin::ClientCredentials => matches!(error,
                IdentityError::Status { status: 400 | 401, error: Some(code), .. }
                    if code == "invalid_client" || code == "unauthorized_client"),
        }
    }

    /// Logs the mesh's administrator in now, whatever token is cached (the
    /// repair hook's probe), and caches the outcome; during the login
    /// backoff after a refusal ([`crate::login_backoff`]) it answers that
    /// refusal without asking.
    ///
    /// # Errors
    /// The login's refusal ([`IdentityError::is_invalid_grant`]) or failure.
    pub async fn admin_login(&self) -> Result<(), IdentityError> {
        let mut cached = self.token.lock().await;
        self.rotated(&mut cached);
        if let Some(held) = self.held_refusal(&cached) {
            return Err(held);
        }
        self.login_into(&mut cached).await.map(|_| ())
    }

    /// A new password in the administrator's file ends a held refusal:
    /// it is tried at once, whatever the backoff.
    fn rotated(&self, cached: &mut Cached) {
        if matches!(cached, Cached::Refused { .. }) && self.admin_password_now().1 {
            *cached = Cached::None;
        }
    }

    /// The last refusal, while it is held.
    fn held_refusal(&self, cached: &Cached) -> Option<IdentityError> {
        match cached {
            Cached::Refused {
                until,
                status,
                error,
                description,
                ..
            } if Instant::now() < *until => {
                // The same message as the refusal itself, so a failure reads
                // the same whether or not Keycloak was asked.
                Some(IdentityError::Status {
                    what: self.refused_what(),
                    status: *status,
                    error: error.clone(),
                    description: description.clone(),
                })
            }
            _ => None,
        }
    }

    async fn login_into(&self, cached: &mut Cached) -> Result<AccessToken, IdentityError> {
        let what = self.admin_what();
        self.calls.count(Kind::AdminLogin);
        let (password, _) = self.admin_password_now();
        let login = match self.admin_login {
            AdminLogin::Password => {
                self.password_grant(&what, &self.admin_user, &password)
                    .await
            }
            AdminLogin::ClientCredentials => {
                self.client_grant(&what, &self.admin_user, &password).await
            }
        };
        match login {
            Ok((access, renew_at)) => {
                *cached = Cached::Token {
                    access: access.clone(),
                    renew_at,
                };
                Ok(access)
            }
            Err(error) => {
                if let IdentityError::Status {
                    status,
                    error: code,
                    description,
                    ..
                } = &error
                {
                    if self.refuses_admin(&error) {
                        let refusals = match cached {
                            Cached::Refused { refusals, .. } => refusals.saturating_add(1),
                            _ => 1,
                        };
                        let until = Instant::now() + self.backoff.after(refusals);
                        tracing::debug!(refusals, hold = ?self.backoff.after(refusals),
                            "the administrator's password is held back after its refusal");
                        *cached = Cached::Refused {
                            refusals,
                            until,
                            status: *status,
                            error: code.clone(),
                            description: description.clone(),
                        };
                        return Err(IdentityError::Status {
                            what: self.refused_what(),
                            status: *status,
                            error: code.clone(),
                            description: description.clone(),
                        });
                    }
                }
                Err(error)
            }
        }
    }

    /// The administrator's token: the cached one while it is fresh, else a
    /// new login (one at a time: callers wait for the login in progress).
    pub(super) async fn admin_token(&self) -> Result<AccessToken, IdentityError> {
        let mut cached = self.token.lock().await;
        if let Cached::Token { access, renew_at } = &*cached {
            if Instant::now() < *renew_at {
                return Ok(access.clone());
            }
        }
        self.rotated(&mut cached);
        if let Some(held) = self.held_refusal(&cached) {
            return Err(held);
        }
        self.login_into(&mut cached).await
    }

    /// Forgets `used` when it is still the cached token (it was refused).
    pub(super) async fn forget(&self, used: &AccessToken) {
        let mut cached = self.token.lock().await;
        if matches!(&*cached, Cached::Token { access, .. } if access == used) {
            *cached = Cached::None;
        }
    }

    /// Forgets the administrator's last login (its token, or its refusal
    /// and its backoff), so the next call logs in again: after its password was set.
    pub async fn forget_admin_login(&self) {
        *self.token.lock().await = Cached::None;
    }

    /// Logs a temporary administrator in (realm `master`, `admin-cli`).
    ///
    /// # Errors
    /// The login's refusal or failure.
    pub async fn login_as(
        &self,
        username: &str,
        password: &Secret,
    ) -> Result<AccessToken, IdentityError> {
        let what = format!("login as temporary administrator {username}");
        self.password_grant(&what, username, password)
            .await
            .map(|(access, _)| access)
    }

    /// Proves a consumer's client works as the consumer would use it: the
    /// client-credentials grant in the provider's realm with its own secret.
    ///
    /// # Errors
    /// Keycloak's refusal (`invalid_client`, `unauthorized_client`, 401) or
    /// failure.
    pub async fn client_credentials(
        &self,
        client_id: &str,
        secret: &Secret,
    ) -> Result<(), IdentityError> {
        let what = format!("client-credentials login of client {client_id}");
        let url = self.url(&["realms", &self.realm, "protocol", "openid-connect", "token"]);
        let form = [
            ("grant_type", "client_credentials"),
            ("client_id", client_id),
            ("client_secret", secret.expose()),
        ];
        self.calls.count(Kind::Grant);
        let answer = self.send(&what, self.http.post(url).form(&form)).await?;
        answer.checked(&what).map(drop)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_renewed_before_their_end() {
        assert_eq!(renew_after(60), Duration::from_secs(45));
        assert_eq!(renew_after(300), Duration::from_secs(225));
        assert_eq!(renew_after(10), Duration::from_secs(5));
        assert_eq!(renew_after(2), Duration::from_secs(1));
        assert_eq!(renew_after(0), Duration::from_secs(1));
    }
}
