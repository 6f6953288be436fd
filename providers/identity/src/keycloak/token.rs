//! The token endpoint: the administrator's login (cached), a temporary
//! administrator's login, and the consumer's client-credentials check.

use std::time::Duration;

use mesh_sdk::Secret;
use serde::Deserialize;
use tokio::time::Instant;

use super::{Keycloak, Kind};
use crate::error::IdentityError;

/// After the administrator's login was refused, consumers' calls fail at
/// once with that refusal for this long instead of trying again: a pass
/// with many consumers must not become a burst of failed logins (which
/// brute-force protection, when on, counts towards a lockout). The repair
/// hook's probe always tries.
pub const REFUSED_HOLD: Duration = Duration::from_secs(30);

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
    /// The last login was refused at `at`, with this answer.
    Refused {
        at: Instant,
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
        let url = self.url(&["realms", "master", "protocol", "openid-connect", "token"]);
        let form = [
            ("grant_type", "password"),
            ("client_id", ADMIN_CLI),
            ("username", username),
            ("password", password.expose()),
        ];
        let answer = self.send(what, self.http.post(url).form(&form)).await?;
        if !answer.success() {
            return Err(answer.error(what));
        }
        let token: TokenAnswer = answer.json(what)?;
        let renew_at = Instant::now() + renew_after(token.expires_in.unwrap_or(60));
        Ok((Secret::new(token.access_token), renew_at))
    }

    fn admin_what(&self) -> String {
        format!("administrator login as {}", self.admin_user)
    }

    /// Logs the mesh's administrator in now, whatever is cached (the repair
    /// hook's probe), and caches the outcome.
    ///
    /// # Errors
    /// The login's refusal ([`IdentityError::is_invalid_grant`]) or failure.
    pub async fn admin_login(&self) -> Result<(), IdentityError> {
        let mut cached = self.token.lock().await;
        self.login_into(&mut cached).await.map(|_| ())
    }

    async fn login_into(&self, cached: &mut Cached) -> Result<AccessToken, IdentityError> {
        let what = self.admin_what();
        self.calls.count(Kind::AdminLogin);
        match self
            .password_grant(&what, &self.admin_user, &self.admin_password)
            .await
        {
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
                    if error.is_invalid_grant() {
                        *cached = Cached::Refused {
                            at: Instant::now(),
                            status: *status,
                            error: code.clone(),
                            description: description.clone(),
                        };
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
        let now = Instant::now();
        match &*cached {
            Cached::Token { access, renew_at } if now < *renew_at => return Ok(access.clone()),
            Cached::Refused {
                at,
                status,
                error,
                description,
            } if now.saturating_duration_since(*at) < REFUSED_HOLD => {
                // The same words as the refusal itself, so a consumer's
                // failure reads the same whether or not Keycloak was asked.
                return Err(IdentityError::Status {
                    what: self.admin_what(),
                    status: *status,
                    error: error.clone(),
                    description: description.clone(),
                });
            }
            _ => {}
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

    /// Forgets the administrator's last login (its token or its refusal),
    /// so the next call logs in again: after its password was set.
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
        if answer.success() {
            Ok(())
        } else {
            Err(answer.error(&what))
        }
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
