//! The permission sets rendered: as JSON for a person ([`render_json`]),
//! and as a nats-server configuration ([`render_nats`]), through serde
//! types shaped like nats-server's `authorization` block.

use std::collections::BTreeMap;

use serde::Serialize;

use super::{Credential, Rules, UserPermissions};

/// The permission sets as JSON: `{"users": [...]}`, no passwords.
pub(crate) fn render_json(users: &[UserPermissions]) -> serde_json::Value {
    to_value(&Listing { users })
}

/// A nats-server configuration (JSON) with one user per entry of `users`:
/// `{"user", "password": <bcrypt hash>, "permissions"}` for a password,
/// `{"nkey", "permissions"}` for an nkey. Users without a credential are
/// left out.
pub fn render_nats(
    users: &[UserPermissions],
    credentials: &BTreeMap<String, Credential>,
) -> serde_json::Value {
    let users = users
        .iter()
        .filter_map(|user| {
            let permissions = Permissions {
                publish: &user.publish,
                subscribe: &user.subscribe,
                allow_responses: user.allow_responses,
            };
            Some(match credentials.get(&user.user)? {
                Credential::PasswordHash(hash) => NatsUser::Password {
                    user: &user.user,
                    password: hash,
                    permissions,
                },
                Credential::Nkey(nkey) => NatsUser::Nkey { nkey, permissions },
            })
        })
        .collect();
    to_value(&NatsConfig {
        authorization: Authorization { users },
    })
}

/// `render_json`'s document.
#[derive(Serialize)]
struct Listing<'a> {
    users: &'a [UserPermissions],
}

/// A nats-server configuration: only its `authorization` block.
#[derive(Serialize)]
struct NatsConfig<'a> {
    authorization: Authorization<'a>,
}

#[derive(Serialize)]
struct Authorization<'a> {
    users: Vec<NatsUser<'a>>,
}

/// One user as nats-server reads it: a name and a bcrypt hash, or a public
/// nkey alone.
#[derive(Serialize)]
#[serde(untagged)]
enum NatsUser<'a> {
    Password {
        user: &'a str,
        password: &'a str,
        permissions: Permissions<'a>,
    },
    Nkey {
        nkey: &'a str,
        permissions: Permissions<'a>,
    },
}

#[derive(Serialize)]
struct Permissions<'a> {
    publish: &'a Rules,
    subscribe: &'a Rules,
    /// Rendered only when granted, as before.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    allow_responses: bool,
}

/// The value of a document of plain strings, vectors and structs, which
/// always serializes.
fn to_value(document: &impl Serialize) -> serde_json::Value {
    serde_json::to_value(document).expect("strings, vectors and structs serialize")
}

#[cfg(test)]
mod tests {
    use super::super::tests::declaration;
    use super::super::{derive, read_credentials};
    use super::*;
    use serde_json::json;

    #[test]
    fn nats_rendering_carries_hashes_or_nkeys_and_deny_all() {
        let users = derive(&declaration());
        let nkey = nkeys::KeyPair::new_user().public_key();
        let credentials: BTreeMap<String, Credential> = users
            .iter()
            .map(|u| {
                let credential = if u.user == "identity@db-1" {
                    Credential::Nkey(nkey.clone())
                } else {
                    Credential::PasswordHash(format!("$2b$11$hash-of-{}", u.user))
                };
                (u.user.clone(), credential)
            })
            .collect();
        let config = render_nats(&users, &credentials);
        let rendered = &config["authorization"]["users"];
        assert_eq!(rendered.as_array().unwrap().len(), 5);
        let forge = &rendered[0];
        assert_eq!(forge["user"], "forge@app-1");
        assert_eq!(forge["password"], "$2b$11$hash-of-forge@app-1");
        assert_eq!(
            forge["permissions"],
            json!({"publish":{"deny":[">"]},"subscribe":{"deny":[">"]}})
        );
        let identity = &rendered[1];
        assert_eq!(identity["nkey"], json!(nkey));
        assert!(identity.get("user").is_none() && identity.get("password").is_none());
        assert_eq!(identity["permissions"]["allow_responses"], json!(true));
        assert_eq!(rendered[2]["permissions"]["allow_responses"], json!(true));
        let json = render_json(&users).to_string();
        assert!(!json.contains("hash-of"), "json output holds no credential");
    }

    #[test]
    fn the_rendered_configuration_holds_no_plain_password() {
        let dir = tempfile::tempdir().unwrap();
        let users = derive(&declaration());
        let nkey = nkeys::KeyPair::new_user();
        for u in &users {
            if u.user == "identity@db-1" {
                std::fs::write(
                    dir.path().join("identity@db-1.pub"),
                    format!("{}\n", nkey.public_key()),
                )
                .unwrap();
            } else {
                std::fs::write(dir.path().join(&u.user), format!("  secret-{}\n", u.user)).unwrap();
            }
        }
        let credentials = read_credentials(dir.path(), &users).unwrap().found;
        let text = render_nats(&users, &credentials).to_string();
        assert!(!text.contains("secret-"), "a plain password: {text}");
        assert!(!text.contains(&nkey.seed().unwrap()), "a seed: {text}");
        for user in ["forge@app-1", "postgres@db-1", "controller"] {
            let Credential::PasswordHash(hash) = &credentials[user] else {
                panic!("{user} has a password")
            };
            assert!(hash.starts_with("$2b$11$"), "{hash}");
            assert!(bcrypt::verify(format!("secret-{user}"), hash).unwrap());
            assert!(!bcrypt::verify("secret-other", hash).unwrap());
        }
        assert_eq!(
            credentials["identity@db-1"],
            Credential::Nkey(nkey.public_key())
        );
    }
}
