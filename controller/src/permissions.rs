//! Bus permissions derived from the declaration (docs/contracts.md, 4.6),
//! never written by hand.
//!
//! [`derive()`] is pure: one [`UserPermissions`] per declared module
//! (`<module>@<machine>`) and one for the controller. [`render_json`] prints
//! the sets; [`render_nats`] renders a nats-server configuration (JSON) with
//! each user's credential read from a credentials folder
//! ([`read_credentials`]): a bcrypt hash of its password, or its public
//! nkey. No plain password is ever rendered.
//!
//! On nats-server an empty `allow` list grants everything, so a user that may
//! publish (or subscribe to) nothing gets `"deny": [">"]`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use mesh_protocol::subject::{
    below, commands_of, event_subject, grant_events_of, grants_inbox_prefix, grants_user,
    inbox_prefix,
};
use mesh_protocol::{EventKind, ModuleId};
use serde::Serialize;
use serde_json::json;

use crate::bus::{CONTROLLER_INBOX, CONTROLLER_USER, DURABLE, STREAM};
use mesh_status::model::Declaration;

/// Every provider's approve subject (`mesh.cmd.<machine>.<module>.provisioner.approve`).
pub const APPROVE_ANY: &str = mesh_protocol::subject::APPROVE_ANY;

/// Allowed and denied subjects of one direction (publish or subscribe).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Rules {
    /// Subjects (with wildcards) allowed. Empty means *everything* to
    /// nats-server, so it is never left empty without a deny-all.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub allow: Vec<String>,
    /// Subjects denied.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub deny: Vec<String>,
}

impl Rules {
    fn allow(subjects: Vec<String>) -> Rules {
        Rules {
            allow: subjects,
            deny: Vec::new(),
        }
    }

    fn nothing() -> Rules {
        Rules {
            allow: Vec::new(),
            deny: vec![">".to_owned()],
        }
    }
}

/// What a bus user is for, as the declaration tells it; it decides whether
/// the user's credentials must be given ([`Role::needs_credentials`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// A module that receives contributions: it says its words and
    /// answers approvals.
    Provider,
    /// A module that may do nothing on the bus (it neither provides nor is
    /// required from): nothing it could do needs a connection.
    Idle,
    /// The grant agent (`mesh-grants`) of a machine with consumers. The
    /// declaration cannot tell whether the operator runs it there.
    GrantAgent,
    /// The controller (`serve`, `approve`).
    Controller,
}

/// Whether a user's credentials file must be there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CredentialNeed {
    /// A missing file is an error: the user has work to do on the bus.
    Required,
    /// A missing file leaves the user out (it then cannot connect) with a
    /// warning: it may or may not be run.
    Warned,
    /// A missing file leaves the user out without a word: it could do
    /// nothing on the bus anyway.
    IfGiven,
}

impl Role {
    /// Providers and the controller must have credentials; a grant agent's
    /// missing file is warned of; an idle module's is not asked for.
    pub fn needs_credentials(self) -> CredentialNeed {
        match self {
            Role::Provider | Role::Controller => CredentialNeed::Required,
            Role::GrantAgent => CredentialNeed::Warned,
            Role::Idle => CredentialNeed::IfGiven,
        }
    }
}

/// The permissions of one bus user.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct UserPermissions {
    /// The user: `<module>@<machine>` or `controller`.
    pub user: String,
    /// What it is for (not rendered).
    #[serde(skip)]
    pub role: Role,
    /// What it may publish.
    pub publish: Rules,
    /// What it may subscribe to.
    pub subscribe: Rules,
    /// Whether it may answer requests sent to it (publish to their reply subject).
    pub allow_responses: bool,
}

/// Derives every user's permissions from the declaration: the modules
/// sorted by user, then the grant agents by machine, the controller last.
///
/// - A module that receives contributions ([`Declaration::receives_contributions`])
///   may publish its own four event subjects and nothing else, subscribe to its
///   own `mesh.cmd.<machine>.<module>.>` and its own inbox
///   `_INBOX.<machine>.<module>.>` (JetStream acks and request replies), and
///   answer requests.
/// - Any other module may publish nothing and subscribe to nothing.
/// - The grant agent of every machine the declaration puts a consumer on
///   (`_grants@<machine>`) may publish `mesh.event.<machine>.<consumer>.grant.*`
///   for those consumers only, and subscribe to its own inbox
///   `_INBOX.<machine>._grants.>` (JetStream acks).
/// - The controller: the JetStream API narrowed to the `MESH_EVENTS` stream
///   (create, update, info) and its durable consumer (create, info, next
///   message), acks of that consumer, approve requests to any provider, and
///   subscriptions only on its own inbox.
pub fn derive(declaration: &Declaration) -> Vec<UserPermissions> {
    let mut users: Vec<UserPermissions> = declaration
        .ids()
        .into_iter()
        .map(|id| module_permissions(declaration, id))
        .collect();
    users.sort_by(|a, b| a.user.cmp(&b.user));
    users.extend(grants_permissions(declaration));
    users.push(controller_permissions());
    users
}

fn module_permissions(declaration: &Declaration, id: &ModuleId) -> UserPermissions {
    let user = id.to_string();
    if !declaration.receives_contributions(id) {
        return UserPermissions {
            user,
            role: Role::Idle,
            publish: Rules::nothing(),
            subscribe: Rules::nothing(),
            allow_responses: false,
        };
    }
    let (machine, module) = (&id.machine, &id.module);
    UserPermissions {
        user,
        role: Role::Provider,
        publish: Rules::allow(
            EventKind::ALL
                .iter()
                .map(|kind| event_subject(machine, module, *kind))
                .collect(),
        ),
        subscribe: Rules::allow(vec![
            commands_of(machine, module),
            below(&inbox_prefix(machine, module)),
        ]),
        allow_responses: true,
    }
}

/// One grant agent per machine with a consumer: it speaks for the
/// consumers the declaration puts on that machine.
fn grants_permissions(declaration: &Declaration) -> Vec<UserPermissions> {
    let mut consumers: BTreeMap<&mesh_protocol::Name, Vec<&mesh_protocol::Name>> = BTreeMap::new();
    for module in declaration
        .modules
        .iter()
        .filter(|m| !m.requires.is_empty())
    {
        let on = consumers.entry(&module.id.machine).or_default();
        if !on.contains(&&module.id.module) {
            on.push(&module.id.module);
        }
    }
    consumers
        .into_iter()
        .map(|(machine, mut modules)| {
            modules.sort();
            UserPermissions {
                user: grants_user(machine),
                role: Role::GrantAgent,
                publish: Rules::allow(
                    modules
                        .iter()
                        .map(|c| grant_events_of(machine, c))
                        .collect(),
                ),
                subscribe: Rules::allow(vec![below(&grants_inbox_prefix(machine))]),
                allow_responses: false,
            }
        })
        .collect()
}

/// The controller's user: `serve`'s routine work (make and update the
/// stream and its durable consumer, fetch, acknowledge) and `approve`'s
/// requests. Least privilege: it may not delete or purge the stream, nor
/// read stored messages by sequence (`STREAM.MSG.GET`, `DIRECT.GET`).
fn controller_permissions() -> UserPermissions {
    let api = "$JS.API";
    UserPermissions {
        user: CONTROLLER_USER.to_owned(),
        role: Role::Controller,
        publish: Rules::allow(vec![
            format!("{api}.STREAM.CREATE.{STREAM}"),
            format!("{api}.STREAM.UPDATE.{STREAM}"),
            format!("{api}.STREAM.INFO.{STREAM}"),
            format!("{api}.CONSUMER.CREATE.{STREAM}.{DURABLE}"),
            format!("{api}.CONSUMER.CREATE.{STREAM}.{DURABLE}.>"),
            format!("{api}.CONSUMER.DURABLE.CREATE.{STREAM}.{DURABLE}"),
            format!("{api}.CONSUMER.INFO.{STREAM}.{DURABLE}"),
            format!("{api}.CONSUMER.MSG.NEXT.{STREAM}.{DURABLE}"),
            format!("$JS.ACK.{STREAM}.{DURABLE}.>"),
            APPROVE_ANY.to_owned(),
        ]),
        subscribe: Rules::allow(vec![below(CONTROLLER_INBOX)]),
        allow_responses: false,
    }
}

/// The permission sets as JSON: `{"users": [...]}`, no passwords.
pub fn render_json(users: &[UserPermissions]) -> serde_json::Value {
    json!({ "users": users })
}

/// The bcrypt cost of the rendered password hashes (nats-server's own
/// `nats server passwd` uses the same): each client login costs the server
/// one bcrypt check of this cost.
pub const BCRYPT_COST: u32 = 11;

/// How one user proves who it is in the rendered configuration. Never a
/// plain password: the configuration may be read by whoever runs the server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Credential {
    /// A bcrypt hash (`$2b$11$...`) of the user's password: nats-server
    /// checks the password a client sends against it.
    PasswordHash(String),
    /// The user's public nkey (`U...`): the client proves it holds the
    /// matching seed by signing the server's nonce; no secret is rendered.
    Nkey(String),
}

/// A credentials folder could not give a user's credential; nothing is
/// rendered (exit 2). No variant quotes a file's content.
#[derive(Debug, thiserror::Error)]
pub enum CredentialsError {
    /// `DIR/<user>` or `DIR/<user>.pub` could not be read.
    #[error("credentials file {path} of user {user} cannot be read: {source}")]
    Read {
        /// The user.
        user: String,
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// `DIR/<user>` holds only whitespace.
    #[error("password file {path} of user {user} is empty")]
    Empty {
        /// The user.
        user: String,
        /// The file.
        path: PathBuf,
    },
    /// The password is longer than bcrypt's 72 bytes (it would be cut).
    #[error("password file {path} of user {user} holds {len} bytes; bcrypt takes at most 72")]
    TooLong {
        /// The user.
        user: String,
        /// The file.
        path: PathBuf,
        /// Its length in bytes.
        len: usize,
    },
    /// The password could not be hashed.
    #[error("the password of user {user} cannot be hashed: {reason}")]
    Hash {
        /// The user.
        user: String,
        /// Why (bcrypt's words, which hold no password).
        reason: String,
    },
    /// `DIR/<user>.pub` holds no public user nkey.
    #[error("{path} of user {user} holds no public user nkey (one line starting with U)")]
    NotAnNkey {
        /// The user.
        user: String,
        /// The file.
        path: PathBuf,
    },
    /// Both `DIR/<user>` and `DIR/<user>.pub` exist.
    #[error("user {user} has both a password file and a public nkey ({path}): keep one")]
    Both {
        /// The user.
        user: String,
        /// The nkey file.
        path: PathBuf,
    },
}

/// A user left out of the rendered configuration: neither `DIR/<user>`
/// nor `DIR/<user>.pub` exists, and its [`Role`] does not require one. It
/// cannot connect to a server started with the configuration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeftOut {
    /// The user.
    pub user: String,
    /// Its password file, as it was looked for.
    pub path: PathBuf,
    /// Whether its absence is to be warned of ([`CredentialNeed::Warned`]).
    pub need: CredentialNeed,
}

impl LeftOut {
    /// Whether the operator is to be told (a grant agent).
    pub fn is_warned(&self) -> bool {
        self.need == CredentialNeed::Warned
    }
}

impl std::fmt::Display for LeftOut {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "no credentials file {} (nor {}.pub) for user {}: left out, it cannot connect",
            self.path.display(),
            self.path.display(),
            self.user
        )?;
        if self.need == CredentialNeed::Warned {
            write!(f, " (write the file if mesh-grants runs on that machine)")?;
        }
        Ok(())
    }
}

/// What [`read_credentials`] found: each user's credential, and the users
/// left out.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Credentials {
    /// The credential of each user that has one.
    pub found: BTreeMap<String, Credential>,
    /// The users without a file that did not need one, in `users` order.
    pub left_out: Vec<LeftOut>,
}

/// Reads each user's credential from the folder `dir`:
///
/// - `dir/<user>.pub`, when it exists: the user's public nkey (`U...`, as
///   `nk -inkey seed -pubout` prints it); the user connects with the seed
///   (`--nats-nkey-file`), which the controller never needs;
/// - otherwise `dir/<user>`: the user's password (surrounding whitespace
///   trimmed), hashed with bcrypt at once.
///
/// Only users that can do something need a file ([`Role::needs_credentials`]):
/// a user with neither file whose role does not require one is
/// [left out](Credentials::left_out).
///
/// # Errors
/// [`CredentialsError`] naming the first file that is missing (for a user
/// that needs one), unreadable, empty or not a public user nkey, or a user
/// with both files.
pub fn read_credentials(
    dir: &Path,
    users: &[UserPermissions],
) -> Result<Credentials, CredentialsError> {
    let mut credentials = Credentials::default();
    for user in users {
        let password_path = dir.join(&user.user);
        let nkey_path = dir.join(format!("{}.pub", user.user));
        let need = user.role.needs_credentials();
        if need != CredentialNeed::Required && !password_path.exists() && !nkey_path.exists() {
            credentials.left_out.push(LeftOut {
                user: user.user.clone(),
                path: password_path,
                need,
            });
            continue;
        }
        let credential = read_credential(&user.user, &password_path, &nkey_path)?;
        credentials.found.insert(user.user.clone(), credential);
    }
    Ok(credentials)
}

/// One user's credential: its public nkey if `nkey_path` exists, else its
/// hashed password.
fn read_credential(
    name: &str,
    password_path: &Path,
    nkey_path: &Path,
) -> Result<Credential, CredentialsError> {
    let read = |path: &Path| {
        std::fs::read_to_string(path).map_err(|source| CredentialsError::Read {
            user: name.to_owned(),
            path: path.to_owned(),
            source,
        })
    };
    if nkey_path.exists() {
        if password_path.exists() {
            return Err(CredentialsError::Both {
                user: name.to_owned(),
                path: nkey_path.to_owned(),
            });
        }
        let text = read(nkey_path)?;
        let key = text.trim();
        let is_user_key = key.starts_with('U') && nkeys::KeyPair::from_public_key(key).is_ok();
        if !is_user_key {
            return Err(CredentialsError::NotAnNkey {
                user: name.to_owned(),
                path: nkey_path.to_owned(),
            });
        }
        return Ok(Credential::Nkey(key.to_owned()));
    }
    let text = read(password_path)?;
    let password = text.trim();
    if password.is_empty() {
        return Err(CredentialsError::Empty {
            user: name.to_owned(),
            path: password_path.to_owned(),
        });
    }
    if password.len() > 72 {
        return Err(CredentialsError::TooLong {
            user: name.to_owned(),
            path: password_path.to_owned(),
            len: password.len(),
        });
    }
    let hash =
        bcrypt::non_truncating_hash(password, BCRYPT_COST).map_err(|e| CredentialsError::Hash {
            user: name.to_owned(),
            reason: e.to_string(),
        })?;
    Ok(Credential::PasswordHash(hash))
}

/// A nats-server configuration (JSON) with one user per entry of `users`:
/// `{"user", "password": <bcrypt hash>, "permissions"}` for a password,
/// `{"nkey", "permissions"}` for an nkey. Users without a credential are
/// left out.
pub fn render_nats(
    users: &[UserPermissions],
    credentials: &BTreeMap<String, Credential>,
) -> serde_json::Value {
    let users: Vec<serde_json::Value> = users
        .iter()
        .filter_map(|user| {
            let mut permissions = json!({
                "publish": user.publish,
                "subscribe": user.subscribe,
            });
            if user.allow_responses {
                permissions["allow_responses"] = json!(true);
            }
            Some(match credentials.get(&user.user)? {
                Credential::PasswordHash(hash) => json!({
                    "user": user.user,
                    "password": hash,
                    "permissions": permissions,
                }),
                Credential::Nkey(key) => json!({
                    "nkey": key,
                    "permissions": permissions,
                }),
            })
        })
        .collect();
    json!({ "authorization": { "users": users } })
}

#[cfg(test)]
mod tests {
    use super::*;
    use mesh_status::model::declaration::parse;

    /// Whether a subscription `pattern` (with `*` and `>`) covers `subject`.
    fn covers(pattern: &str, subject: &str) -> bool {
        let (mut p, mut s) = (pattern.split('.'), subject.split('.'));
        loop {
            match (p.next(), s.next()) {
                (Some(">"), Some(_)) => return true,
                (Some("*"), Some(_)) => {}
                (Some(a), Some(b)) if a == b => {}
                (None, None) => return true,
                _ => return false,
            }
        }
    }

    #[test]
    fn no_two_users_share_an_inbox() {
        // `c@a_b` and `b_c@a` once both had `_INBOX_a_b_c`.
        let declaration = parse(
            r#"{"modules":[
              {"module":"c","machine":"a_b","provides":["p"]},
              {"module":"b_c","machine":"a","provides":["p"]},
              {"module":"c","machine":"a-b","provides":["p"]}
            ]}"#,
        )
        .unwrap()
        .declaration;
        let users = derive(&declaration);
        // An inbox subject of each user, as async-nats makes them.
        let inbox = |u: &UserPermissions| {
            let allow = u
                .subscribe
                .allow
                .iter()
                .find(|s| s.starts_with("_INBOX"))
                .unwrap();
            format!("{}reply-1", allow.trim_end_matches('>'))
        };
        for a in &users {
            for b in users.iter().filter(|b| b.user != a.user) {
                assert!(
                    !b.subscribe.allow.iter().any(|p| covers(p, &inbox(a))),
                    "{} may read {}'s inbox {}",
                    b.user,
                    a.user,
                    inbox(a)
                );
            }
        }
        assert!(covers("_INBOX.a_b.c.>", "_INBOX.a_b.c.x"));
        assert!(!covers("_INBOX.a.b_c.>", "_INBOX.a_b.c.x"));
    }

    fn declaration() -> Declaration {
        parse(
            r#"{"modules":[
              {"module":"postgres","machine":"db-1","provides":["postgres-database"]},
              {"module":"identity","machine":"db-1","provides":["oidc-client"]},
              {"module":"forge","machine":"app-1","requires":[
                {"provision":"postgres-database","from":"postgres@db-1"}]}
            ]}"#,
        )
        .unwrap()
        .declaration
    }

    fn user<'a>(users: &'a [UserPermissions], name: &str) -> &'a UserPermissions {
        users.iter().find(|u| u.user == name).unwrap()
    }

    #[test]
    fn the_grant_agent_speaks_only_for_the_consumers_on_its_machine() {
        let users = derive(&declaration());
        let agent = user(&users, "_grants@app-1");
        assert_eq!(agent.publish.allow, ["mesh.event.app-1.forge.grant.*"]);
        assert!(agent.publish.deny.is_empty());
        assert_eq!(agent.subscribe.allow, ["_INBOX.app-1._grants.>"]);
        assert!(!agent.allow_responses);
        assert!(
            users.iter().all(|u| u.user != "_grants@db-1"),
            "no consumer on db-1, no agent"
        );
    }

    #[test]
    fn one_user_per_module_and_the_controller_last() {
        let users = derive(&declaration());
        let names: Vec<&str> = users.iter().map(|u| u.user.as_str()).collect();
        assert_eq!(
            names,
            [
                "forge@app-1",
                "identity@db-1",
                "postgres@db-1",
                "_grants@app-1",
                "controller"
            ]
        );
    }

    #[test]
    fn a_provider_publishes_only_its_own_events() {
        let users = derive(&declaration());
        let pg = user(&users, "postgres@db-1");
        assert_eq!(
            pg.publish.allow,
            [
                "mesh.event.db-1.postgres.provisioner.failing",
                "mesh.event.db-1.postgres.provisioner.recovered",
                "mesh.event.db-1.postgres.provisioner.retirement",
                "mesh.event.db-1.postgres.provisioner.repair",
                "mesh.event.db-1.postgres.provisioner.alive",
            ]
        );
        assert!(pg.publish.deny.is_empty());
        assert_eq!(
            pg.subscribe.allow,
            ["mesh.cmd.db-1.postgres.>", "_INBOX.db-1.postgres.>"]
        );
        assert!(pg.allow_responses);
    }

    #[test]
    fn every_allow_is_exact_to_its_owner() {
        // Table: which users may publish which event subject.
        let users = derive(&declaration());
        let cases = [
            (
                "mesh.event.db-1.postgres.provisioner.failing",
                "postgres@db-1",
            ),
            (
                "mesh.event.db-1.identity.provisioner.repair",
                "identity@db-1",
            ),
        ];
        for (subject, owner) in cases {
            for u in &users {
                let allowed = u.publish.allow.iter().any(|a| a == subject);
                assert_eq!(allowed, u.user == owner, "{} on {subject}", u.user);
            }
        }
    }

    #[test]
    fn a_module_without_contributions_may_do_nothing() {
        let users = derive(&declaration());
        let forge = user(&users, "forge@app-1");
        assert!(forge.publish.allow.is_empty());
        assert_eq!(forge.publish.deny, [">"]);
        assert!(forge.subscribe.allow.is_empty());
        assert_eq!(forge.subscribe.deny, [">"]);
        assert!(!forge.allow_responses);
    }

    #[test]
    fn the_controller_is_narrowed_to_its_stream_and_inbox() {
        let users = derive(&declaration());
        let c = user(&users, "controller");
        assert_eq!(c.subscribe.allow, ["_INBOX._controller.>"]);
        assert!(c
            .publish
            .allow
            .contains(&"mesh.cmd.*.*.provisioner.approve".to_owned()));
        for subject in &c.publish.allow {
            let narrowed = subject.starts_with("$JS.API.STREAM.")
                && subject.ends_with(".MESH_EVENTS")
                || subject.starts_with("$JS.API.CONSUMER.")
                    && subject.contains(".MESH_EVENTS.controller")
                || subject == "$JS.ACK.MESH_EVENTS.controller.>"
                || subject == "mesh.cmd.*.*.provisioner.approve";
            assert!(narrowed, "{subject}");
            for api in ["DELETE", "PURGE", "STREAM.MSG.", "DIRECT."] {
                assert!(!subject.contains(api), "{subject}");
            }
        }
        assert!(!c.publish.allow.iter().any(|s| s.starts_with("mesh.event")));
    }

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

    #[test]
    fn only_users_that_can_do_something_need_a_credentials_file() {
        // forge@app-1 may do nothing; _grants@app-1 may be run or not (the
        // declaration cannot tell); the providers and the controller work.
        let dir = tempfile::tempdir().unwrap();
        let users = derive(&declaration());
        for user in ["identity@db-1", "postgres@db-1", "controller"] {
            std::fs::write(dir.path().join(user), format!("secret-{user}")).unwrap();
        }
        let read = read_credentials(dir.path(), &users).unwrap();
        let found: Vec<&str> = read.found.keys().map(String::as_str).collect();
        assert_eq!(found, ["controller", "identity@db-1", "postgres@db-1"]);
        let left_out: Vec<(&str, bool)> = read
            .left_out
            .iter()
            .map(|l| (l.user.as_str(), l.is_warned()))
            .collect();
        assert_eq!(left_out, [("forge@app-1", false), ("_grants@app-1", true)]);
        let warning = read.left_out[1].to_string();
        assert!(
            warning.contains("_grants@app-1")
                && warning.contains(&dir.path().join("_grants@app-1").display().to_string())
                && warning.contains("cannot connect"),
            "{warning}"
        );
        let rendered = render_nats(&users, &read.found).to_string();
        assert!(!rendered.contains("forge@app-1") && !rendered.contains("_grants@app-1"));

        // Given, a file of either is used; a provider's missing file is an error.
        std::fs::write(dir.path().join("forge@app-1"), "f").unwrap();
        std::fs::write(dir.path().join("_grants@app-1"), "g").unwrap();
        let read = read_credentials(dir.path(), &users).unwrap();
        assert_eq!(read.found.len(), 5);
        assert!(read.left_out.is_empty());
        std::fs::remove_file(dir.path().join("postgres@db-1")).unwrap();
        let error = read_credentials(dir.path(), &users)
            .unwrap_err()
            .to_string();
        assert!(error.contains("postgres@db-1"), "{error}");
        // A file that is there but wrong is an error for an idle user too.
        std::fs::write(dir.path().join("postgres@db-1"), "p").unwrap();
        std::fs::write(dir.path().join("forge@app-1"), " ").unwrap();
        let error = read_credentials(dir.path(), &users)
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("forge@app-1") && error.contains("empty"),
            "{error}"
        );
    }

    #[test]
    fn credentials_are_read_per_user_and_a_bad_file_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let users = derive(&declaration());
        for u in &users[..2] {
            std::fs::write(dir.path().join(&u.user), format!("  secret-{}\n", u.user)).unwrap();
        }
        let error = read_credentials(dir.path(), &users)
            .unwrap_err()
            .to_string();
        assert!(error.contains("postgres@db-1"), "{error}");
        assert!(error.contains(&dir.path().display().to_string()), "{error}");
        std::fs::write(dir.path().join("postgres@db-1"), "pg").unwrap();
        std::fs::write(dir.path().join("_grants@app-1"), "g").unwrap();
        std::fs::write(dir.path().join("controller"), " \n").unwrap();
        let error = read_credentials(dir.path(), &users)
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("controller") && error.contains("empty"),
            "{error}"
        );
        std::fs::write(dir.path().join("controller"), "x".repeat(73)).unwrap();
        let error = read_credentials(dir.path(), &users)
            .unwrap_err()
            .to_string();
        assert!(error.contains("73 bytes"), "{error}");
        std::fs::write(dir.path().join("controller"), "c").unwrap();

        // A public nkey beside a password is ambiguous; a seed or an account
        // key is not a public user nkey, and is never quoted.
        let key = nkeys::KeyPair::new_user();
        let pub_file = dir.path().join("postgres@db-1.pub");
        std::fs::write(&pub_file, key.public_key()).unwrap();
        let error = read_credentials(dir.path(), &users)
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("both") && error.contains("postgres@db-1"),
            "{error}"
        );
        std::fs::remove_file(dir.path().join("postgres@db-1")).unwrap();
        let seed = key.seed().unwrap();
        for wrong in [seed.clone(), nkeys::KeyPair::new_account().public_key()] {
            std::fs::write(&pub_file, &wrong).unwrap();
            let error = read_credentials(dir.path(), &users)
                .unwrap_err()
                .to_string();
            assert!(error.contains("no public user nkey"), "{error}");
            assert!(!error.contains(&wrong), "{error}");
        }
        std::fs::write(&pub_file, key.public_key()).unwrap();
        let credentials = read_credentials(dir.path(), &users).unwrap().found;
        assert!(
            matches!(&credentials["forge@app-1"], Credential::PasswordHash(h)
            if bcrypt::verify("secret-forge@app-1", h).unwrap())
        );
        assert_eq!(
            credentials["postgres@db-1"],
            Credential::Nkey(key.public_key())
        );
    }
}
