//! Users of realm `master`: the administrator whose password the repair
//! resets (and whose lockout it clears), and the temporary administrator it
//! removes.

use mesh_sdk::Secret;
use serde::Deserialize;
use serde_json::json;

use super::{Auth, Keycloak};
use crate::error::IdentityError;

#[derive(Deserialize)]
struct UserRep {
    id: String,
    username: String,
}

impl Keycloak {
    /// The id of user `username` of realm `master`, if there is one.
    ///
    /// # Errors
    /// Keycloak's refusal or failure.
    pub async fn find_user(
        &self,
        auth: Auth<'_>,
        username: &str,
    ) -> Result<Option<String>, IdentityError> {
        let what = format!("looking up user {username} of realm master");
        let mut url = self.master_url(&["users"]);
        url.query_pairs_mut()
            .append_pair("username", username)
            .append_pair("exact", "true");
        let answer = self.call(&what, auth, |http| http.get(url.clone())).await?;
        let answer = answer.checked(&what)?;
        let users: Vec<UserRep> = answer.json(&what)?;
        // Keycloak keeps user names in lower case.
        Ok(users
            .into_iter()
            .find(|u| u.username.eq_ignore_ascii_case(username))
            .map(|u| u.id))
    }

    /// Sets the password of user `id` of realm `master` (not temporary).
    ///
    /// # Errors
    /// Keycloak's refusal (a password policy: 400) or failure.
    pub async fn reset_password(
        &self,
        auth: Auth<'_>,
        username: &str,
        id: &str,
        password: &Secret,
    ) -> Result<(), IdentityError> {
        let what = format!("resetting the password of {username}");
        let url = self.master_url(&["users", id, "reset-password"]);
        let body = json!({"type": "password", "value": password.expose(), "temporary": false});
        let answer = self
            .call(&what, auth, |http| http.put(url.clone()).json(&body))
            .await?;
        answer.checked(&what).map(drop)
    }

    /// Clears the brute-force record of user `id` of realm `master`: a user
    /// locked out by failed logins can log in again (Keycloak 26: a reset
    /// password alone does not end a lockout). Harmless when brute-force
    /// protection is off or the user has no failures.
    ///
    /// # Errors
    /// Keycloak's refusal or failure.
    pub async fn clear_login_failures(
        &self,
        auth: Auth<'_>,
        username: &str,
        id: &str,
    ) -> Result<(), IdentityError> {
        let what = format!("clearing the login failures of {username}");
        let url = self.master_url(&["attack-detection", "brute-force", "users", id]);
        let answer = self
            .call(&what, auth, |http| http.delete(url.clone()))
            .await?;
        answer.checked(&what).map(drop)
    }

    /// Deletes user `id` of realm `master`; `false` when it was already gone.
    ///
    /// # Errors
    /// Keycloak's refusal or failure.
    pub async fn delete_user(
        &self,
        auth: Auth<'_>,
        username: &str,
        id: &str,
    ) -> Result<bool, IdentityError> {
        let what = format!("deleting user {username} of realm master");
        let url = self.master_url(&["users", id]);
        let answer = self
            .call(&what, auth, |http| http.delete(url.clone()))
            .await?;
        match answer.status {
            404 => Ok(false),
            _ if answer.success() => Ok(true),
            _ => Err(answer.error(&what)),
        }
    }
}
