//! Clients of the provider's realm: find, make, change, list, delete.

use std::collections::HashMap;

use mesh_sdk::{ModuleId, Secret};
use serde::Deserialize;
use serde_json::{json, Value};

use super::{Auth, Keycloak, Kind};
use crate::error::{IdentityError, INSTANCE, MARK};

/// Clients asked for per page when listing.
pub(super) const PAGE: usize = 100;

/// A client as Keycloak lists it (the fields this provider reads).
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
pub struct ClientRep {
    /// Keycloak's id of the client (a UUID).
    pub id: String,
    /// The client's `clientId`.
    #[serde(rename = "clientId")]
    pub client_id: String,
    /// Whether it is enabled (retired clients are not).
    #[serde(default = "enabled_by_default")]
    pub enabled: bool,
    /// Its attributes.
    #[serde(default)]
    pub attributes: HashMap<String, Value>,
}

fn enabled_by_default() -> bool {
    true
}

/// Who made a client, as its attributes say.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Maker<'a> {
    /// Not mesh-identity: no [`MARK`].
    Other,
    /// mesh-identity before instance marks: [`MARK`] without [`INSTANCE`].
    Unowned,
    /// The instance it names in [`INSTANCE`] (`module@machine`).
    Instance(&'a str),
}

impl ClientRep {
    /// Whether mesh-identity made it (attribute [`MARK`] is `"true"`).
    pub fn is_marked(&self) -> bool {
        self.attributes.get(MARK).and_then(Value::as_str) == Some("true")
    }

    /// Who made it.
    pub fn maker(&self) -> Maker<'_> {
        if !self.is_marked() {
            return Maker::Other;
        }
        match self.attributes.get(INSTANCE) {
            None => Maker::Unowned,
            // Keycloak keeps one string; anything else is no instance's.
            Some(value) => Maker::Instance(value.as_str().unwrap_or_default()),
        }
    }

    /// Whether the instance `provider` made it.
    pub fn is_of(&self, provider: &ModuleId) -> bool {
        matches!(self.maker(), Maker::Instance(by) if by == provider.to_string())
    }
}

/// What making a client did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Created {
    /// Made, with Keycloak's id.
    Made(String),
    /// A client with that `clientId` already exists (409).
    Exists,
}

impl Keycloak {
    /// The client whose `clientId` is exactly `client_id`, if any.
    ///
    /// # Errors
    /// Keycloak's refusal or failure.
    pub async fn find_client(&self, client_id: &str) -> Result<Option<ClientRep>, IdentityError> {
        let what = format!("looking up client {client_id}");
        let mut url = self.realm_url(&["clients"]);
        url.query_pairs_mut().append_pair("clientId", client_id);
        self.calls.count(Kind::Lookup);
        let answer = self
            .call(&what, Auth::Admin, |http| http.get(url.clone()))
            .await?;
        let answer = answer.checked(&what)?;
        let clients: Vec<ClientRep> = answer.json(&what)?;
        Ok(clients.into_iter().find(|c| c.client_id == client_id))
    }

    /// Makes a confidential client `client_id` with the given secret (stored
    /// as is), its service account enabled, marked as made by mesh.
    ///
    /// # Errors
    /// Keycloak's refusal or failure (a 409 is [`Created::Exists`], not an error).
    pub async fn create_client(
        &self,
        client_id: &str,
        secret: &Secret,
        provider: &ModuleId,
    ) -> Result<Created, IdentityError> {
        let what = format!("making client {client_id}");
        let url = self.realm_url(&["clients"]);
        let body = json!({
            "clientId": client_id,
            "description": format!("made by mesh for consumer {client_id}"),
            "enabled": true,
            "protocol": "openid-connect",
            "publicClient": false,
            "bearerOnly": false,
            "serviceAccountsEnabled": true,
            "clientAuthenticatorType": "client-secret",
            "secret": secret.expose(),
            "attributes": { MARK: "true", INSTANCE: provider.to_string() },
        });
        self.calls.count(Kind::Create);
        let answer = self
            .call(&what, Auth::Admin, |http| {
                http.post(url.clone()).json(&body)
            })
            .await?;
        match answer.status {
            409 => Ok(Created::Exists),
            201 => {
                let id = answer
                    .location
                    .as_deref()
                    .and_then(|l| l.trim_end_matches('/').rsplit('/').next())
                    .filter(|id| !id.is_empty())
                    .ok_or_else(|| IdentityError::Unexpected {
                        what: what.clone(),
                        reason: "201 without a Location naming the new client".into(),
                    })?;
                Ok(Created::Made(id.to_owned()))
            }
            _ => Err(answer.error(&what)),
        }
    }

    /// Changes the fields given in `fields` of client `id` (Keycloak leaves
    /// the others as they are).
    ///
    /// # Errors
    /// Keycloak's refusal or failure.
    pub async fn update_client(
        &self,
        what: &str,
        id: &str,
        fields: &Value,
    ) -> Result<(), IdentityError> {
        let url = self.realm_url(&["clients", id]);
        self.calls.count(Kind::Update);
        let answer = self
            .call(what, Auth::Admin, |http| http.put(url.clone()).json(fields))
            .await?;
        answer.checked(what).map(drop)
    }

    /// Deletes client `id`; one already gone is fine.
    ///
    /// # Errors
    /// Keycloak's refusal or failure.
    pub async fn delete_client(&self, client_id: &str, id: &str) -> Result<(), IdentityError> {
        let what = format!("deleting client {client_id}");
        let url = self.realm_url(&["clients", id]);
        self.calls.count(Kind::Delete);
        let answer = self
            .call(&what, Auth::Admin, |http| http.delete(url.clone()))
            .await?;
        if answer.success() || answer.status == 404 {
            Ok(())
        } else {
            Err(answer.error(&what))
        }
    }

    /// The id of client `client_id` of realm `master` (the administrator's
    /// own service-account client), if there is one.
    ///
    /// # Errors
    /// Keycloak's refusal or failure.
    pub async fn find_master_client(
        &self,
        auth: Auth<'_>,
        client_id: &str,
    ) -> Result<Option<String>, IdentityError> {
        let what = format!("looking up client {client_id} of realm master");
        let mut url = self.master_url(&["clients"]);
        url.query_pairs_mut().append_pair("clientId", client_id);
        let answer = self.call(&what, auth, |http| http.get(url.clone())).await?;
        let answer = answer.checked(&what)?;
        let clients: Vec<ClientRep> = answer.json(&what)?;
        Ok(clients
            .into_iter()
            .find(|c| c.client_id == client_id)
            .map(|c| c.id))
    }

    /// Sets the secret of client `id` of realm `master` (stored as is; the
    /// old one is refused at once).
    ///
    /// # Errors
    /// Keycloak's refusal or failure.
    pub async fn set_master_client_secret(
        &self,
        auth: Auth<'_>,
        client_id: &str,
        id: &str,
        secret: &Secret,
    ) -> Result<(), IdentityError> {
        let what = format!("setting the secret of client {client_id} of realm master");
        let url = self.master_url(&["clients", id]);
        let body = json!({ "secret": secret.expose() });
        let answer = self
            .call(&what, auth, |http| http.put(url.clone()).json(&body))
            .await?;
        answer.checked(&what).map(drop)
    }

    /// Every client of the realm, page by page.
    ///
    /// Keycloak 26 pages by `first`/`max` over clients ordered by
    /// `clientId`, so a client made or deleted while the pages are read
    /// shifts the later pages: a client may then come twice (kept once,
    /// by id) or be missed until the next listing. The listing ends at a
    /// short page, or at a page that brings nothing new (a server that
    /// ignores `first` and answers the same clients again).
    ///
    /// # Errors
    /// Keycloak's refusal or failure.
    pub async fn list_clients(&self) -> Result<Vec<ClientRep>, IdentityError> {
        let what = format!("listing the clients of realm {}", self.realm);
        let mut all: Vec<ClientRep> = Vec::new();
        let mut seen = std::collections::HashSet::new();
        let mut first = 0;
        loop {
            let mut url = self.realm_url(&["clients"]);
            url.query_pairs_mut()
                .append_pair("first", &first.to_string())
                .append_pair("max", &PAGE.to_string());
            self.calls.count(Kind::ListPage);
            let answer = self
                .call(&what, Auth::Admin, |http| http.get(url.clone()))
                .await?;
            let answer = answer.checked(&what)?;
            let page: Vec<ClientRep> = answer.json(&what)?;
            let (len, before) = (page.len(), all.len());
            first += len;
            all.extend(page.into_iter().filter(|c| seen.insert(c.id.clone())));
            if len < PAGE || all.len() == before {
                return Ok(all);
            }
        }
    }
}
