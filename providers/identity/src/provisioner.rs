//! The [`Provisioner`]: per consumer a confidential client whose `clientId`
//! is the consumer's name and whose secret is its minted secret.
//!
//! Only clients this provider instance made are ever changed, listed,
//! retired or deleted: it marks them with the attributes [`MARK`] =
//! `"true"` and [`INSTANCE`] = its `module@machine` when it makes them. A
//! client of the same `clientId` without the mark is someone else's, and
//! one naming another instance is that instance's: the consumer fails with
//! class `refused` and the client is never touched. A client an older
//! release made ([`MARK`] alone) is adopted by the `ensure` of an instance
//! that lists it, and by no other call.
//!
//! # What a healthy pass costs
//! The provisioner remembers which of its own clients it last saw exist,
//! and whether each is enabled (`src/known.rs`): the ones the realm's
//! listing showed, the ones a lookup found, the ones it made, kept true by
//! its own changes. `ensure` does not look those up again, and `held()`
//! (which the loop asks once a pass, before the consumers' attempts) lists
//! the realm only when the last listing is older than `--list-every` (1
//! minute) and otherwise answers from what it knows. So a pass over clients
//! that work is one client-credentials login per consumer, plus the
//! listing's few pages (100 clients a page) once a minute. A name is
//! forgotten as soon as a call shows it wrong: a refused check looks the
//! client up afresh (as it always did, to set the secret), a lookup that
//! finds no client of ours, a 404 on a change; a listing that fails forgets
//! everything. So a client deleted by hand fails one check and is made
//! again by the next pass's `ensure`; a change by hand that no check meets
//! (a client disabled or deleted whose consumer is no longer listed) is
//! seen by the next listing. Retiring, re-enabling and deleting still look
//! the client up first, so they never act on a client whose mark was taken
//! away since it was seen.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use mesh_sdk::{Class, Consumer, Held, KnownFault, ModuleId, Name, Provisioner, Secret, Served};
use serde_json::json;
use tokio::time::Instant;

use crate::classify::classify;
use crate::config::IdentityConfig;
pub use crate::error::PROVISION;
use crate::error::{IdentityError, INSTANCE, MARK};
use crate::keycloak::{ClientRep, Created, Keycloak, Maker};
use crate::known::KnownClients;
use crate::repair::AdminRepair;

/// The identity provider over one Keycloak realm.
///
/// ```no_run
/// use mesh_provider_identity::{IdentityConfig, IdentityProvisioner};
///
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// let config = IdentityConfig::new("http://127.0.0.1:8080", "mesh", "admin",
///     mesh_sdk::Secret::new("the-mesh-admin-password"))?;
/// let provisioner = IdentityProvisioner::new(config)?;
/// let args = mesh_sdk::ProviderArgs::with_defaults("/etc/mesh/identity/contributions.json");
/// mesh_sdk::run(provisioner, &args).await?;
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct IdentityProvisioner {
    keycloak: Arc<Keycloak>,
    repair: Arc<AdminRepair>,
    /// The own clients last seen: `ensure` does not look these up.
    known: KnownClients,
    /// Longest time `held()` answers from `known` instead of listing.
    list_every: Duration,
}

impl IdentityProvisioner {
    /// A provisioner for the Keycloak and realm `config` names.
    ///
    /// # Errors
    /// When the HTTP client cannot be built.
    pub fn new(config: IdentityConfig) -> Result<IdentityProvisioner, reqwest::Error> {
        let keycloak = Arc::new(Keycloak::new(&config)?);
        let repair = Arc::new(AdminRepair::new(Arc::clone(&keycloak), &config));
        Ok(IdentityProvisioner {
            keycloak,
            repair,
            known: KnownClients::default(),
            list_every: config.list_every(),
        })
    }

    /// The Keycloak it speaks to.
    pub fn keycloak(&self) -> &Arc<Keycloak> {
        &self.keycloak
    }

    /// Its known fault, `admin-refused` (also returned by `repairs()`).
    pub fn admin_repair(&self) -> &Arc<AdminRepair> {
        &self.repair
    }

    /// The client named after `consumer`, looked up now (and noted in
    /// `known`), refused when the instance `provider` did not make it. One
    /// an older release made (marked without an instance) is adopted as
    /// `provider`'s when `adopt` (an `ensure`: the instance lists it), and
    /// refused otherwise.
    async fn own_client(
        &self,
        provider: &ModuleId,
        consumer: &str,
        adopt: bool,
    ) -> Result<Option<ClientRep>, IdentityError> {
        let found = self.keycloak.find_client(consumer).await?;
        let realm = || self.keycloak.realm().to_owned();
        let client = match found {
            None => None,
            Some(client) => match client.maker() {
                Maker::Other => {
                    self.known.found(consumer, Some(&client), provider);
                    return Err(self.foreign(consumer));
                }
                Maker::Instance(by) if by != provider.to_string() => {
                    self.known.found(consumer, Some(&client), provider);
                    return Err(IdentityError::OtherInstance {
                        client: consumer.to_owned(),
                        realm: realm(),
                        by: by.to_owned(),
                    });
                }
                Maker::Instance(_) => Some(client),
                Maker::Unowned if !adopt => {
                    self.known.found(consumer, Some(&client), provider);
                    return Err(IdentityError::NotAdopted {
                        client: consumer.to_owned(),
                        realm: realm(),
                    });
                }
                Maker::Unowned => Some(self.adopt(provider, client).await?),
            },
        };
        self.known.found(consumer, client.as_ref(), provider);
        Ok(client)
    }

    /// Marks `client`, made by an older release, as `provider`'s.
    async fn adopt(
        &self,
        provider: &ModuleId,
        mut client: ClientRep,
    ) -> Result<ClientRep, IdentityError> {
        let name = client.client_id.clone();
        let what = format!("adopting client {name} as {provider}'s");
        let fields = json!({ "attributes": { INSTANCE: provider.to_string() } });
        self.update(&name, &what, &client.id, &fields).await?;
        tracing::info!(consumer = %name, realm = %self.keycloak.realm(), provider = %provider, "adopted the client an older version made (marked without an instance): this instance lists it");
        client
            .attributes
            .insert(INSTANCE.to_owned(), json!(provider.to_string()));
        Ok(client)
    }

    fn foreign(&self, consumer: &str) -> IdentityError {
        IdentityError::Foreign {
            client: consumer.to_owned(),
            realm: self.keycloak.realm().to_owned(),
        }
    }

    async fn set_enabled(
        &self,
        provider: &ModuleId,
        consumer: &Name,
        enabled: bool,
    ) -> Result<(), IdentityError> {
        let Some(client) = self.own_client(provider, consumer.as_str(), false).await? else {
            return Ok(());
        };
        if client.enabled == enabled {
            return Ok(());
        }
        let what = match enabled {
            true => format!("enabling client {consumer}"),
            false => format!("disabling client {consumer}"),
        };
        self.update(
            consumer.as_str(),
            &what,
            &client.id,
            &json!({ "enabled": enabled }),
        )
        .await?;
        self.known.set_enabled(consumer.as_str(), enabled);
        tracing::info!(consumer = %consumer, realm = %self.keycloak.realm(), enabled, "client changed");
        Ok(())
    }

    /// Changes `fields` of the own client `consumer` of Keycloak id `id`; a
    /// 404 (deleted meanwhile) drops it from `known`.
    async fn update(
        &self,
        consumer: &str,
        what: &str,
        id: &str,
        fields: &serde_json::Value,
    ) -> Result<(), IdentityError> {
        let result = self.keycloak.update_client(what, id, fields).await;
        if matches!(&result, Err(error) if error.status() == Some(404)) {
            self.known.forget(consumer);
        }
        result
    }
}

/// Whether a failed client-credentials check is Keycloak refusing the
/// client or its secret (which resetting the secret may mend).
fn is_refusal(error: &IdentityError) -> bool {
    matches!(error, IdentityError::Status { .. })
        && classify(error) == Some(Class::CredentialsRejected)
}

#[async_trait]
impl Provisioner for IdentityProvisioner {
    type Error = IdentityError;

    async fn ensure(&self, consumer: &Consumer, secret: &Secret) -> Result<Served, IdentityError> {
        if consumer.provision != PROVISION {
            return Err(IdentityError::WrongProvision {
                consumer: consumer.name.to_string(),
                provision: consumer.provision.clone(),
            });
        }
        let name = consumer.name.as_str();
        // Seen to exist (by the last listing, lookup or making): the check
        // that follows proves it still does, and a refused check looks it up.
        let provider = &consumer.provider;
        if self.known.has(name, provider) || self.own_client(provider, name, true).await?.is_some()
        {
            return Ok(Served::AsIs);
        }
        match self.keycloak.create_client(name, secret, provider).await? {
            Created::Made(id) => {
                self.known.made(name, provider, true);
                tracing::info!(consumer = %name, realm = %self.keycloak.realm(), id = %id, "client made");
                Ok(Served::AsIs)
            }
            // Made meanwhile (by this provider a moment ago, or by someone else).
            Created::Exists => match self.own_client(provider, name, true).await? {
                Some(_) => Ok(Served::AsIs),
                None => Err(IdentityError::Unexpected {
                    what: format!("making client {name}"),
                    reason: "409 (exists), yet no client of that clientId can be found".into(),
                }),
            },
        }
    }

    async fn check(&self, consumer: &Consumer, secret: &Secret) -> Result<Served, IdentityError> {
        let name = consumer.name.as_str();
        let refused = match self.keycloak.client_credentials(name, secret).await {
            Ok(()) => return Ok(Served::AsIs),
            Err(error) if is_refusal(&error) => error,
            Err(error) => return Err(error),
        };
        // Refused: the client is looked up afresh (a client deleted behind
        // the provider's back is forgotten, and made again by the next
        // pass's ensure); its secret is set to the minted one, once, then
        // checked again.
        let Some(client) = self.own_client(&consumer.provider, name, false).await? else {
            return Err(refused);
        };
        // A disabled (retired) client is refused whatever its secret
        // (Keycloak 26: 401 `invalid_client`): nothing to mend, nothing written.
        if !client.enabled {
            return Err(refused);
        }
        let fields = json!({
            "secret": secret.expose(),
            "publicClient": false,
            "serviceAccountsEnabled": true,
        });
        let what = format!("setting the secret of client {name} to the minted one");
        self.update(name, &what, &client.id, &fields).await?;
        tracing::info!(consumer = %name, realm = %self.keycloak.realm(), "check refused; client secret set to the minted one");
        self.keycloak.client_credentials(name, secret).await?;
        // A rotated secret or one changed by hand: the loop tells which.
        Ok(Served::mended(
            "the client's secret was refused and set to the minted one",
        ))
    }

    /// The clients `provider` made (attribute `mesh.provider`), and no other.
    async fn held(&self, provider: &ModuleId) -> Result<Vec<Held>, IdentityError> {
        let listed = self
            .known
            .listing_within(self.list_every, Instant::now(), provider);
        if let Some(own) = listed {
            return Ok(own
                .into_iter()
                .filter_map(|(client_id, enabled)| {
                    Name::parse(&client_id).ok().map(|name| Held {
                        name,
                        retired: !enabled,
                    })
                })
                .collect());
        }
        let clients = match self.keycloak.list_clients().await {
            Ok(clients) => clients,
            Err(error) => {
                // What was known may be stale, and a failing administrator
                // must show in the consumers' own lookups as before.
                self.known.clear();
                return Err(error);
            }
        };
        self.known.replace(&clients, provider, Instant::now());
        let mut held = Vec::new();
        for client in clients.into_iter().filter(|c| c.is_of(provider)) {
            match Name::parse(&client.client_id) {
                Ok(name) => held.push(Held {
                    name,
                    retired: !client.enabled,
                }),
                Err(error) => {
                    tracing::debug!(error = %error, "a client marked {MARK} has a clientId that is no consumer name; ignored");
                }
            }
        }
        Ok(held)
    }

    async fn retire(&self, provider: &ModuleId, consumer: &Name) -> Result<(), IdentityError> {
        self.set_enabled(provider, consumer, false).await
    }

    async fn re_enable(&self, provider: &ModuleId, consumer: &Name) -> Result<(), IdentityError> {
        self.set_enabled(provider, consumer, true).await
    }

    async fn delete(&self, provider: &ModuleId, consumer: &Name) -> Result<(), IdentityError> {
        let Some(client) = self.own_client(provider, consumer.as_str(), false).await? else {
            return Ok(());
        };
        self.keycloak
            .delete_client(consumer.as_str(), &client.id)
            .await?;
        self.known.forget(consumer.as_str());
        tracing::info!(consumer = %consumer, realm = %self.keycloak.realm(), "client deleted");
        Ok(())
    }

    fn classify(&self, error: &IdentityError) -> Option<Class> {
        classify(error)
    }

    fn secrets(&self) -> Vec<Secret> {
        self.keycloak.admin_passwords()
    }

    fn repairs(&self) -> Vec<KnownFault> {
        vec![KnownFault::new(Arc::clone(&self.repair))]
    }
}
