//! Keycloak's admin REST API as the tests use it, as the server's first
//! administrator: tokens, calls, realms, and administrators of realm
//! `master` (users and service-account clients).

use std::time::Duration;

use serde_json::{json, Value};

use super::{KeycloakServer, KEYCLOAK_ADMIN};
use crate::random_hex;

impl KeycloakServer {
    /// A fresh access token of the first administrator.
    pub async fn admin_token(&self) -> String {
        let answer = self.login(KEYCLOAK_ADMIN, &self.admin_password).await;
        let status = answer.status();
        let body: Value = answer.json().await.unwrap_or(Value::Null);
        assert!(
            status.is_success(),
            "the administrator's login answered {status}: {}",
            body.get("error").unwrap_or(&Value::Null)
        );
        body["access_token"]
            .as_str()
            .expect("an access_token in the login's answer")
            .to_owned()
    }

    /// Whether `username` of realm `master` logs in with `password`
    /// (`admin-cli`, the password grant).
    pub async fn logs_in(&self, username: &str, password: &str) -> bool {
        self.login(username, password).await.status().is_success()
    }

    /// Keycloak's answer to a password-grant login of `username` of realm
    /// `master` through `admin-cli`.
    async fn login(&self, username: &str, password: &str) -> reqwest::Response {
        let url = format!("{}/realms/master/protocol/openid-connect/token", self.url());
        let form = [
            ("grant_type", "password"),
            ("client_id", "admin-cli"),
            ("username", username),
            ("password", password),
        ];
        http()
            .post(url)
            .form(&form)
            .send()
            .await
            .expect("the login reaches Keycloak")
    }

    /// An admin REST call as the first administrator: `method` on
    /// `/admin/realms/{path}` with an optional JSON body; the status and
    /// the JSON answer (`Null` when there is none).
    pub async fn admin(&self, method: &str, path: &str, body: Option<&Value>) -> (u16, Value) {
        let url = format!(
            "{}/admin/realms/{}",
            self.url(),
            path.trim_start_matches('/')
        );
        let method = reqwest::Method::from_bytes(method.as_bytes()).expect("an HTTP method");
        let mut request = http()
            .request(method, url)
            .bearer_auth(self.admin_token().await);
        if let Some(body) = body {
            request = request.json(body);
        }
        let answer = request
            .send()
            .await
            .expect("the admin call reaches Keycloak");
        let status = answer.status().as_u16();
        let body = answer.json().await.unwrap_or(Value::Null);
        (status, body)
    }

    /// Makes a new administrator of realm `master` (role `admin`) named
    /// `{prefix}-{random}` with a random password; returns its name,
    /// password and id. Tests that change an administrator's password use
    /// their own, never the server's first one.
    pub async fn new_master_admin(&self, prefix: &str) -> (String, String, String) {
        let username = format!("{prefix}-{}", random_hex(4));
        let password = random_hex(12);
        let user = json!({
            "username": username,
            "enabled": true,
            "credentials": [{"type": "password", "value": password, "temporary": false}],
        });
        let (status, body) = self.admin("POST", "master/users", Some(&user)).await;
        assert_eq!(status, 201, "making administrator {username}: {body}");
        let (_, found) = self
            .admin(
                "GET",
                &format!("master/users?username={username}&exact=true"),
                None,
            )
            .await;
        let id = found[0]["id"]
            .as_str()
            .expect("the new user's id")
            .to_owned();
        self.grant_admin_role(&id).await;
        (username, password, id)
    }

    /// Gives user `id` of realm `master` that realm's role `admin`.
    async fn grant_admin_role(&self, id: &str) {
        let (status, role) = self.admin("GET", "master/roles/admin", None).await;
        assert_eq!(status, 200, "reading role admin: {role}");
        let (status, body) = self
            .admin(
                "POST",
                &format!("master/users/{id}/role-mappings/realm"),
                Some(&json!([role])),
            )
            .await;
        assert_eq!(status, 204, "giving user {id} role admin: {body}");
    }

    /// Makes a new service-account client of realm `master` named
    /// `{prefix}-{random}` with a random secret, its service account given
    /// role `admin`; returns its `clientId`, secret and id.
    pub async fn new_master_admin_client(&self, prefix: &str) -> (String, String, String) {
        let client_id = format!("{prefix}-{}", random_hex(4));
        let secret = random_hex(16);
        let client = json!({
            "clientId": client_id,
            "enabled": true,
            "publicClient": false,
            "secret": secret,
            "serviceAccountsEnabled": true,
            "standardFlowEnabled": false,
            "directAccessGrantsEnabled": false,
        });
        let (status, body) = self.admin("POST", "master/clients", Some(&client)).await;
        assert_eq!(status, 201, "making client {client_id}: {body}");
        let (_, found) = self
            .admin("GET", &format!("master/clients?clientId={client_id}"), None)
            .await;
        let id = found[0]["id"]
            .as_str()
            .expect("the new client's id")
            .to_owned();
        let (status, user) = self
            .admin(
                "GET",
                &format!("master/clients/{id}/service-account-user"),
                None,
            )
            .await;
        assert_eq!(status, 200, "the service account of {client_id}: {user}");
        let user_id = user["id"].as_str().expect("the service account's id");
        self.grant_admin_role(user_id).await;
        (client_id, secret, id)
    }

    /// Makes a new, enabled realm named `{prefix}-{random}` and returns its
    /// name: each test its own realm on the shared server.
    pub async fn new_realm(&self, prefix: &str) -> String {
        let realm = format!("{prefix}-{}", random_hex(4));
        let (status, body) = self
            .admin("POST", "", Some(&json!({"realm": realm, "enabled": true})))
            .await;
        assert_eq!(status, 201, "making realm {realm}: {body}");
        realm
    }
}

/// How long an admin call of the harness may take. Making a realm is
/// Keycloak's heaviest: with a binary's tests each making one at once
/// beside two other test binaries on two cores, one took over 30 s.
const ADMIN_CALL_TIMEOUT: Duration = Duration::from_secs(120);

/// A new HTTP client for one call: each `#[tokio::test]` has its own
/// runtime, and a pooled connection dies with the runtime that opened it.
fn http() -> reqwest::Client {
    // Plain HTTP only; but reqwest built with "rustls-no-provider" (feature
    // unification with mesh-provider-identity) wants a provider installed.
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .timeout(ADMIN_CALL_TIMEOUT)
        .build()
        .expect("building an HTTP client")
}
