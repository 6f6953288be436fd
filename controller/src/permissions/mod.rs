//! Bus permissions derived from the declaration (docs/contracts/permissions.md), never written by hand.
//!
//! [`derive()`] is pure: one [`UserPermissions`] per declared module
//! (`<module>@<machine>`), one per grant agent and one for the controller.
//! [`credentials`] reads each user's credential from a credentials folder
//! (a bcrypt hash of its password, or its public nkey); [`render`] prints
//! the sets ([`render_json`]) or a nats-server configuration
//! ([`render_nats`]). No plain password is ever rendered.
//!
//! On nats-server an empty `allow` list grants everything, so a user that may
//! publish (or subscribe to) nothing gets `"deny": [">"]`.

mod credentials;
mod render;

use std::collections::BTreeMap;

use mesh_protocol::subject::{
    below, commands_of, event_subject, grant_events_of, grants_inbox_prefix, grants_read_subject,
    grants_user, inbox_prefix,
};
use mesh_protocol::{EventKind, ModuleId, Name};
use serde::Serialize;

use crate::bus::{CONTROLLER_INBOX, CONTROLLER_USER, DURABLE, STREAM};
use mesh_status::model::Declaration;

pub use credentials::{read_credentials, Credential, Credentials, CredentialsError, LeftOut};
pub(crate) use render::render_json;
pub use render::render_nats;

/// Every provider's approve subject (`mesh.cmd.<machine>.<module>.provisioner.approve`).
pub(crate) const APPROVE_ANY: &str = mesh_protocol::subject::APPROVE_ANY;

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
    /// A module that receives contributions: it publishes its events and
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
    /// A read-only watcher of the events (`permissions --watcher NAME`).
    Watcher,
    /// The console, which may ask providers for approvals and nothing
    /// else (`permissions --console NAME`).
    Console,
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
            Role::Provider | Role::Controller | Role::Watcher | Role::Console => {
                CredentialNeed::Required
            }
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
///   may publish its own five event subjects ([`EventKind::PROVISIONER`])
///   and nothing else, subscribe to its own `mesh.cmd.<machine>.<module>.>`
///   and its own inbox `_INBOX.<machine>.<module>.>` (JetStream acks and
///   request replies), and answer requests.
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
            EventKind::PROVISIONER
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
                // Each consumer's grant words, and its own read of the file.
                publish: Rules::allow(
                    modules
                        .iter()
                        .map(|c| grant_events_of(machine, c))
                        .chain([grants_read_subject(machine)])
                        .collect(),
                ),
                subscribe: Rules::allow(vec![below(&grants_inbox_prefix(machine))]),
                allow_responses: false,
            }
        })
        .collect()
}

/// A read-only user `name` (`permissions --watcher NAME`): it may
/// subscribe to every provider's and grant agent's events
/// (`mesh.event.*.*.provisioner.*`, `mesh.event.*.*.grant.*`), and publish
/// nothing: no event, no approval, no JetStream API call (so it cannot
/// read or change the stream either).
///
/// # Errors
/// [`WatcherRefused::ControllersUser`] when `name` is the controller's user.
pub(crate) fn watcher(name: &Name) -> Result<UserPermissions, WatcherRefused> {
    if name.as_str() == CONTROLLER_USER {
        return Err(WatcherRefused::ControllersUser("--watcher", name.clone()));
    }
    Ok(UserPermissions {
        user: name.to_string(),
        role: Role::Watcher,
        publish: Rules::nothing(),
        subscribe: Rules::allow(vec![
            mesh_protocol::subject::PROVISIONER_EVENTS.to_owned(),
            mesh_protocol::subject::GRANT_EVENTS.to_owned(),
        ]),
        allow_responses: false,
    })
}

/// The console's user `name` (`permissions --console NAME`): it may
/// publish approve requests to any provider
/// (`mesh.cmd.*.*.provisioner.approve`) and subscribe only to its own
/// inbox (`_INBOX._console.>`) for their answers: no event, no JetStream.
///
/// # Errors
/// [`WatcherRefused::ControllersUser`] when `name` is the controller's user.
pub(crate) fn console(name: &Name) -> Result<UserPermissions, WatcherRefused> {
    if name.as_str() == CONTROLLER_USER {
        return Err(WatcherRefused::ControllersUser("--console", name.clone()));
    }
    Ok(UserPermissions {
        user: name.to_string(),
        role: Role::Console,
        publish: Rules::allow(vec![mesh_protocol::subject::APPROVE_ANY.to_owned()]),
        subscribe: Rules::allow(vec![below(mesh_protocol::subject::CONSOLE_INBOX)]),
        allow_responses: false,
    })
}

/// A `--watcher` or `--console` name that cannot be given (the flag, the name).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum WatcherRefused {
    /// It is the controller's own user.
    #[error("{0} {1}: that is the controller's user; choose another name")]
    ControllersUser(&'static str, Name),
    /// A user of that name is in the permissions already.
    #[error("{0} {1}: a user of that name is in the permissions already")]
    Taken(&'static str, Name),
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
    fn the_console_may_ask_for_approvals_and_hear_their_answers_and_nothing_else() {
        let name = mesh_protocol::Name::parse("console").unwrap();
        let console = console(&name).unwrap();
        assert_eq!(console.role.needs_credentials(), CredentialNeed::Required);
        let publishes = |s: &str| console.publish.allow.iter().any(|p| covers(p, s));
        let hears = |s: &str| console.subscribe.allow.iter().any(|p| covers(p, s));
        assert!(publishes("mesh.cmd.db-1.postgres.provisioner.approve"));
        assert!(hears("_INBOX._console.abc.1"));
        for subject in [
            "mesh.event.db-1.postgres.provisioner.failing",
            "mesh.cmd.db-1.postgres.provisioner.other",
            "$JS.API.STREAM.INFO.MESH_EVENTS",
            "_INBOX._controller.x",
        ] {
            assert!(!publishes(subject) && !hears(subject), "{subject}");
        }
        let controller = mesh_protocol::Name::parse(CONTROLLER_USER).unwrap();
        assert!(super::console(&controller)
            .unwrap_err()
            .to_string()
            .starts_with("--console controller:"));
    }

    #[test]
    fn a_watcher_subscribes_to_every_event_and_publishes_nothing() {
        let name = mesh_protocol::Name::parse("dashboard").unwrap();
        let watcher = watcher(&name).unwrap();
        assert_eq!(watcher.user, "dashboard");
        assert_eq!(watcher.role.needs_credentials(), CredentialNeed::Required);
        assert_eq!(
            watcher.publish,
            Rules::nothing(),
            "deny-all, never an empty allow"
        );
        assert!(!watcher.allow_responses);
        for subject in [
            "mesh.event.db-1.postgres.provisioner.failing",
            "mesh.event.app-1.forge.grant.unreachable",
        ] {
            assert!(
                watcher.subscribe.allow.iter().any(|p| covers(p, subject)),
                "{subject}"
            );
        }
        for subject in [
            "mesh.cmd.db-1.postgres.provisioner.approve",
            "$JS.API.STREAM.INFO.MESH_EVENTS",
        ] {
            assert!(
                !watcher.subscribe.allow.iter().any(|p| covers(p, subject)),
                "{subject}"
            );
        }
        let controller = mesh_protocol::Name::parse("controller").unwrap();
        assert!(super::watcher(&controller)
            .unwrap_err()
            .to_string()
            .contains("the controller's user"));
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

    pub(super) fn declaration() -> Declaration {
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
        assert_eq!(
            agent.publish.allow,
            [
                "mesh.event.app-1.forge.grant.*",
                "mesh.event.app-1._grants.grant.read"
            ]
        );
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
}
