//! Keycloak 26's token endpoint and admin REST API, as this provider uses
//! them (see FACTS.md): the administrator's token (cached, renewed), the
//! client-credentials check, clients, and the users of realm `master`.
//!
//! Secrets travel only in request bodies (form or JSON), never in a URL, so
//! no error or log line built from a URL can hold one.

mod calls;
mod clients;
mod token;
mod users;

use std::time::Duration;

use bytes::Bytes;
use mesh_sdk::{Secret, SecretFile};
use reqwest::{RequestBuilder, Url};

use crate::config::{AdminLogin, IdentityConfig};
use crate::error::IdentityError;
use crate::login_backoff::LoginBackoff;

pub(crate) use calls::Kind;
pub use calls::{CallCounts, Calls};
pub use clients::{ClientRep, Created, Maker};
pub use token::AccessToken;

/// Longest wait for a TCP connection to Keycloak.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// Whose token an admin call carries.
#[derive(Clone, Copy, Debug)]
pub enum Auth<'a> {
    /// The mesh's administrator: the cached token, renewed when it is near
    /// its end, and fetched again once when Keycloak answers 401.
    Admin,
    /// A given token (the temporary administrator's), used as is.
    Bearer(&'a AccessToken),
}

/// An answer read whole.
#[derive(Debug)]
pub(crate) struct Answer {
    pub(crate) status: u16,
    pub(crate) location: Option<String>,
    pub(crate) body: Bytes,
}

impl Answer {
    fn success(&self) -> bool {
        (200..300).contains(&self.status)
    }

    /// This answer when it is a success, else it as an error of `what`.
    fn checked(self, what: &str) -> Result<Answer, IdentityError> {
        match self.success() {
            true => Ok(self),
            false => Err(self.error(what)),
        }
    }

    /// This answer as an error of `what`.
    fn error(&self, what: &str) -> IdentityError {
        IdentityError::from_answer(what, self.status, &self.body)
    }

    /// The body as JSON of type `T`.
    fn json<T: serde::de::DeserializeOwned>(&self, what: &str) -> Result<T, IdentityError> {
        serde_json::from_slice(&self.body).map_err(|error| IdentityError::Unexpected {
            what: what.to_owned(),
            reason: format!("the body is not the expected JSON ({error})"),
        })
    }
}

/// A Keycloak server, its realm, and the mesh's administrator of it.
pub struct Keycloak {
    http: reqwest::Client,
    base: Url,
    realm: String,
    admin_user: String,
    /// Read again from its file at each administrator login.
    admin_password: SecretFile,
    admin_login: AdminLogin,
    backoff: LoginBackoff,
    token: tokio::sync::Mutex<token::Cached>,
    calls: Calls,
}

impl std::fmt::Debug for Keycloak {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Keycloak")
            .field("base", &self.base.as_str())
            .field("realm", &self.realm)
            .field("admin_user", &self.admin_user)
            .finish_non_exhaustive()
    }
}

impl Keycloak {
    /// A client for the Keycloak `config` names (TLS through rustls).
    ///
    /// # Errors
    /// When the HTTP client cannot be built (its TLS setup).
    pub fn new(config: &IdentityConfig) -> Result<Keycloak, reqwest::Error> {
        // reqwest is built without a default crypto provider (ring is the one
        // already in the workspace); install it unless the process has one.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let http = reqwest::Client::builder()
            .timeout(config.http_timeout())
            .connect_timeout(CONNECT_TIMEOUT.min(config.http_timeout()))
            .user_agent(concat!("mesh-identity/", env!("CARGO_PKG_VERSION")))
            .redirect(reqwest::redirect::Policy::none())
            .build()?;
        Ok(Keycloak {
            http,
            base: config.url().clone(),
            realm: config.realm().to_owned(),
            admin_user: config.admin_user().to_owned(),
            admin_password: SecretFile::new(
                Some(config.admin_password().clone()),
                config.admin_password_file().map(Into::into),
                "admin password",
            ),
            admin_login: config.admin_login(),
            backoff: config.login_backoff(),
            token: tokio::sync::Mutex::new(token::Cached::None),
            calls: Calls::default(),
        })
    }

    /// The realm clients are made in.
    pub fn realm(&self) -> &str {
        &self.realm
    }

    /// How the administrator logs in.
    pub fn admin_login_kind(&self) -> AdminLogin {
        self.admin_login
    }

    /// The administrator's user name, or its client's `clientId` (realm `master`).
    pub fn admin_user(&self) -> &str {
        &self.admin_user
    }

    /// The mesh's administrator password now: its file read again (the
    /// last good one if the file cannot be read).
    pub fn admin_password(&self) -> Secret {
        self.admin_password_now().0
    }

    /// The administrator's password now, and whether it changed since the
    /// last read (a rotation written into its file).
    pub(crate) fn admin_password_now(&self) -> (Secret, bool) {
        let (secret, changed) = self.admin_password.current();
        (
            secret.expect("the administrator's password is always given at start"),
            changed,
        )
    }

    /// Every administrator password held lately: removed from every error text.
    pub fn admin_passwords(&self) -> Vec<Secret> {
        self.admin_password.known()
    }

    /// The calls made so far, by kind (for the benchmark).
    #[doc(hidden)]
    pub fn calls(&self) -> CallCounts {
        self.calls.snapshot()
    }

    /// `base` + the path `segments`, each percent-encoded.
    fn url(&self, segments: &[&str]) -> Url {
        let mut url = self.base.clone();
        if let Ok(mut path) = url.path_segments_mut() {
            path.pop_if_empty().extend(segments);
        }
        url
    }

    /// `/admin/realms/{realm}/...` for the provider's realm.
    fn realm_url(&self, rest: &[&str]) -> Url {
        let mut segments = vec!["admin", "realms", self.realm.as_str()];
        segments.extend_from_slice(rest);
        self.url(&segments)
    }

    /// `/admin/realms/master/...`.
    fn master_url(&self, rest: &[&str]) -> Url {
        let mut segments = vec!["admin", "realms", "master"];
        segments.extend_from_slice(rest);
        self.url(&segments)
    }

    /// Sends a request and reads its answer whole.
    async fn send(&self, what: &str, request: RequestBuilder) -> Result<Answer, IdentityError> {
        let unreachable = |source| IdentityError::Unreachable {
            what: what.to_owned(),
            source,
        };
        let response = request.send().await.map_err(unreachable)?;
        let status = response.status().as_u16();
        let location = response
            .headers()
            .get(reqwest::header::LOCATION)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let body = response.bytes().await.map_err(unreachable)?;
        Ok(Answer {
            status,
            location,
            body,
        })
    }

    /// An admin API call as `auth`; `build` makes the request for a bearer token.
    async fn call(
        &self,
        what: &str,
        auth: Auth<'_>,
        build: impl Fn(&reqwest::Client) -> RequestBuilder,
    ) -> Result<Answer, IdentityError> {
        let with = |token: &AccessToken| build(&self.http).bearer_auth(token.expose());
        match auth {
            Auth::Bearer(token) => self.send(what, with(token)).await,
            Auth::Admin => {
                let token = self.admin_token().await?;
                let answer = self.send(what, with(&token)).await?;
                if answer.status != 401 {
                    return Ok(answer);
                }
                // The token ended early (revoked, server restarted): a new one, once.
                tracing::debug!(
                    what,
                    "the administrator's token was refused; logging in again"
                );
                self.forget(&token).await;
                self.calls.count(Kind::Resent);
                let token = self.admin_token().await?;
                self.send(what, with(&token)).await
            }
        }
    }
}
