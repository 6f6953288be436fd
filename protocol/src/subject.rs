//! The subject grammar, written once: every subject, wildcard filter, inbox
//! prefix and bus user name of the mesh is built here from the same tokens,
//! and an event subject is parsed here (docs/contracts/bus.md#subjects
//! and docs/contracts/bus.md#connections-and-inbox-prefixes).
//!
//! The emitter (machine, module) is in the subject, never in the body: a
//! reader takes it from [`parse_event_subject`]. Names hold no `.`, `*` or
//! `>` and cannot start with `_`, so a name is always one token and no
//! module's subjects, inbox or user overlap another's or the mesh's own
//! (`_INBOX._controller`, `_grants@<machine>`).

use crate::event::EventKind;
use crate::name::Name;

/// The fixed tokens as literals, so that the constant filters below are
/// built from the same tokens as the subjects (`concat!` takes literals only).
macro_rules! token {
    (mesh) => {
        "mesh"
    };
    (event) => {
        "event"
    };
    (cmd) => {
        "cmd"
    };
    (provisioner) => {
        "provisioner"
    };
    (grant) => {
        "grant"
    };
    (approve) => {
        "approve"
    };
    (inbox) => {
        "_INBOX"
    };
    (grants) => {
        "_grants"
    };
    (controller) => {
        "_controller"
    };
    (console) => {
        "_console"
    };
    (any) => {
        "*"
    };
    (rest) => {
        ">"
    };
}

/// Fixed tokens joined with dots, as a literal.
macro_rules! subject {
    ($first:tt $(, $more:tt)*) => {
        concat!(token!($first) $(, ".", token!($more))*)
    };
}

/// The first token of every mesh subject.
pub const MESH: &str = token!(mesh);

/// The second token of an event subject (`mesh.event...`).
pub const EVENT: &str = token!(event);

/// The second token of a command subject (`mesh.cmd...`).
pub const COMMAND: &str = token!(cmd);

/// The family token of a provisioner's events and commands.
pub const PROVISIONER_FAMILY: &str = token!(provisioner);

/// The family token of the grant agent's events.
pub const GRANT_FAMILY: &str = token!(grant);

/// The last token of the approve command.
pub const APPROVE: &str = token!(approve);

/// The first token of every inbox prefix.
pub const INBOX: &str = token!(inbox);

/// The grant agent's token: in its inbox prefix, and its user's module.
pub const GRANTS_AGENT: &str = token!(grants);

/// A wildcard for one token.
pub const ANY: &str = token!(any);

/// A wildcard for every remaining token (at least one).
pub const REST: &str = token!(rest);

/// Every provisioner event, `mesh.event.*.*.provisioner.*`: a wildcard for
/// the emitter (machine, module) and the kind.
pub const PROVISIONER_EVENTS: &str = subject!(mesh, event, any, any, provisioner, any);

/// Every grant event, `mesh.event.*.*.grant.*`: a wildcard for the emitter
/// (machine, consumer) and the kind.
pub const GRANT_EVENTS: &str = subject!(mesh, event, any, any, grant, any);

/// Every event, `mesh.event.>`.
pub const ALL_EVENTS: &str = subject!(mesh, event, rest);

/// Every provider's approve subject, `mesh.cmd.*.*.provisioner.approve`.
pub const APPROVE_ANY: &str = subject!(mesh, cmd, any, any, provisioner, approve);

/// The controller's inbox prefix, `_INBOX._controller` (a name cannot start
/// with `_`, so no provider's prefix reaches it).
pub const CONTROLLER_INBOX: &str = subject!(inbox, controller);

/// The console's inbox prefix, `_INBOX._console`: where the providers'
/// answers to its approvals come back.
pub const CONSOLE_INBOX: &str = subject!(inbox, console);

/// The controller's bus user.
pub const CONTROLLER_USER: &str = "controller";

fn join<const N: usize>(tokens: [&str; N]) -> String {
    tokens.join(".")
}

/// The `N` tokens of `subject`, if it has exactly `N`.
fn tokens<const N: usize>(subject: &str) -> Option<[&str; N]> {
    let mut parts = subject.split('.');
    let mut tokens = [""; N];
    for token in &mut tokens {
        *token = parts.next()?;
    }
    parts.next().is_none().then_some(tokens)
}

/// The tokens of a kind in a subject.
impl EventKind {
    /// The subject token before the kind: `provisioner` or `grant`.
    pub fn family(self) -> &'static str {
        if EventKind::GRANT.contains(&self) || self == EventKind::GrantsRead {
            GRANT_FAMILY
        } else {
            PROVISIONER_FAMILY
        }
    }

    /// The kind named by a subject's family and kind tokens.
    pub fn from_tokens(family: &str, token: &str) -> Option<EventKind> {
        EventKind::ALL
            .into_iter()
            .find(|k| k.family() == family && k.as_str() == token)
    }
}

/// `mesh.event.<machine>.<module>.provisioner.<kind>`, or for a grant kind
/// `mesh.event.<machine>.<consumer>.grant.<kind>`, or for the agent's own
/// [`EventKind::GrantsRead`] [`grants_read_subject`] (`module` unread).
pub fn event_subject(machine: &Name, module: &Name, kind: EventKind) -> String {
    let module = match kind {
        EventKind::GrantsRead => GRANTS_AGENT,
        _ => module.as_str(),
    };
    join([
        MESH,
        EVENT,
        machine.as_str(),
        module,
        kind.family(),
        kind.as_str(),
    ])
}

/// The grant events the agent of `machine` publishes for `consumer`,
/// `mesh.event.<machine>.<consumer>.grant.*`.
pub fn grant_events_of(machine: &Name, consumer: &Name) -> String {
    join([
        MESH,
        EVENT,
        machine.as_str(),
        consumer.as_str(),
        GRANT_FAMILY,
        ANY,
    ])
}

/// `mesh.event.<machine>._grants.grant.read`: what the grant agent of
/// `machine` says of its own grants file (a name cannot start with `_`, so
/// no consumer's subject is this one).
pub fn grants_read_subject(machine: &Name) -> String {
    event_subject(machine, &grants_agent_emitter(), EventKind::GrantsRead)
}

/// The "module" of the grant agent as an emitter of its own words
/// ([`EventKind::GrantsRead`]): `mesh-grants`, the program. A reader tells
/// the agent's word from a module's by its kind, never by this name.
pub fn grants_agent_emitter() -> Name {
    Name::parse("mesh-grants").expect("a valid name")
}

/// The emitter and kind read from an event subject, if it is one (for a
/// grant event the emitter's "module" is the consumer it speaks for; for
/// the agent's own `grant.read`, [`grants_agent_emitter`]).
pub fn parse_event_subject(subject: &str) -> Option<(Name, Name, EventKind)> {
    let [MESH, EVENT, machine, module, family, kind] = tokens(subject)? else {
        return None;
    };
    let kind = EventKind::from_tokens(family, kind)?;
    let module = match (module == GRANTS_AGENT, kind == EventKind::GrantsRead) {
        (true, true) => grants_agent_emitter(),
        (false, false) => Name::parse(module).ok()?,
        _ => return None,
    };
    Some((Name::parse(machine).ok()?, module, kind))
}

/// `mesh.cmd.<machine>.<module>.provisioner.approve`.
pub fn approve_subject(machine: &Name, module: &Name) -> String {
    join([
        MESH,
        COMMAND,
        machine.as_str(),
        module.as_str(),
        PROVISIONER_FAMILY,
        APPROVE,
    ])
}

/// The provider read from an approve subject, `(machine, module)`, if it is one.
pub fn parse_approve_subject(subject: &str) -> Option<(Name, Name)> {
    let [MESH, COMMAND, machine, module, PROVISIONER_FAMILY, APPROVE] = tokens(subject)? else {
        return None;
    };
    Some((Name::parse(machine).ok()?, Name::parse(module).ok()?))
}

/// Every command to the provider `module` on `machine`,
/// `mesh.cmd.<machine>.<module>.>`.
pub fn commands_of(machine: &Name, module: &Name) -> String {
    join([MESH, COMMAND, machine.as_str(), module.as_str(), REST])
}

/// The inbox prefix of a provider, `_INBOX.<machine>.<module>`. Names
/// cannot hold a dot, so no two providers' prefixes overlap (the earlier
/// `_INBOX_<machine>_<module>` did: `c@a_b` and `b_c@a` shared one).
pub fn inbox_prefix(machine: &Name, module: &Name) -> String {
    join([INBOX, machine.as_str(), module.as_str()])
}

/// The inbox prefix of the grant agent of `machine`, `_INBOX.<machine>._grants`
/// (a name cannot start with `_`, so no module's prefix overlaps it).
pub fn grants_inbox_prefix(machine: &Name) -> String {
    join([INBOX, machine.as_str(), GRANTS_AGENT])
}

/// The bus user of the grant agent of `machine`, `_grants@<machine>` (a
/// module's user is its `module@machine`, [`crate::ModuleId`]).
pub fn grants_user(machine: &Name) -> String {
    format!("{GRANTS_AGENT}@{machine}")
}

/// Every subject below `prefix` (an inbox prefix), `<prefix>.>`.
pub fn below(prefix: &str) -> String {
    join([prefix, REST])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(s: &str) -> Name {
        Name::parse(s).unwrap()
    }

    /// Whether the NATS filter `filter` takes `subject` (`*` one token, `>`
    /// the rest, at least one).
    fn takes(filter: &str, subject: &str) -> bool {
        let mut subject = subject.split('.');
        for token in filter.split('.') {
            match (token, subject.next()) {
                (REST, Some(_)) => return true,
                (_, None) => return false,
                (ANY, Some(_)) => {}
                (token, Some(s)) if token == s => {}
                _ => return false,
            }
        }
        subject.next().is_none()
    }

    #[test]
    fn subjects() {
        assert_eq!(
            event_subject(&name("db-1"), &name("postgres"), EventKind::Failing),
            "mesh.event.db-1.postgres.provisioner.failing"
        );
        assert_eq!(
            approve_subject(&name("db-1"), &name("postgres")),
            "mesh.cmd.db-1.postgres.provisioner.approve"
        );
        assert_eq!(
            inbox_prefix(&name("db-1"), &name("postgres")),
            "_INBOX.db-1.postgres"
        );
        assert_eq!(
            parse_event_subject("mesh.event.db-1.postgres.provisioner.recovered"),
            Some((name("db-1"), name("postgres"), EventKind::Recovered))
        );
        for bad in [
            "mesh.event.db-1.postgres.provisioner",
            "mesh.event.db-1.postgres.provisioner.other",
            "mesh.event.DB.postgres.provisioner.failing",
            "mesh.event.db-1.postgres.provisioner.failing.x",
            "mesh.cmd.db-1.postgres.provisioner.failing",
        ] {
            assert_eq!(parse_event_subject(bad), None, "{bad}");
        }
    }

    #[test]
    fn grant_subjects_are_exactly_the_design() {
        assert_eq!(
            event_subject(&name("app-1"), &name("forge"), EventKind::Unreachable),
            "mesh.event.app-1.forge.grant.unreachable"
        );
        assert_eq!(
            parse_event_subject("mesh.event.app-1.forge.grant.unchecked"),
            Some((name("app-1"), name("forge"), EventKind::Unchecked))
        );
        assert_eq!(
            grants_read_subject(&name("app-1")),
            "mesh.event.app-1._grants.grant.read"
        );
        assert_eq!(
            parse_event_subject("mesh.event.app-1._grants.grant.read"),
            Some((name("app-1"), grants_agent_emitter(), EventKind::GrantsRead))
        );
        assert!(takes(GRANT_EVENTS, &grants_read_subject(&name("app-1"))));
        for bad in [
            "mesh.event.app-1.forge.grant.failing",
            "mesh.event.app-1.forge.provisioner.unreachable",
            "mesh.event.app-1.forge.grants.reachable",
            // The agent's read is its own; a consumer says none, and the
            // agent says no grant's word under its own token.
            "mesh.event.app-1.forge.grant.read",
            "mesh.event.app-1._grants.grant.unreachable",
            "mesh.event.app-1._grants.provisioner.read",
            "mesh.event.app-1.mesh-grants.grant.read",
        ] {
            assert_eq!(parse_event_subject(bad), None, "{bad}");
        }
        assert_eq!(grants_inbox_prefix(&name("app-1")), "_INBOX.app-1._grants");
        assert_eq!(grants_user(&name("app-1")), "_grants@app-1");
    }

    #[test]
    fn filters_prefixes_and_users_are_exactly_the_design() {
        let (m, n) = (name("db-1"), name("postgres"));
        let cases = [
            (PROVISIONER_EVENTS, "mesh.event.*.*.provisioner.*"),
            (GRANT_EVENTS, "mesh.event.*.*.grant.*"),
            (ALL_EVENTS, "mesh.event.>"),
            (APPROVE_ANY, "mesh.cmd.*.*.provisioner.approve"),
            (CONTROLLER_INBOX, "_INBOX._controller"),
            (CONTROLLER_USER, "controller"),
            (&commands_of(&m, &n), "mesh.cmd.db-1.postgres.>"),
            (&grant_events_of(&m, &n), "mesh.event.db-1.postgres.grant.*"),
            (&below(&inbox_prefix(&m, &n)), "_INBOX.db-1.postgres.>"),
            (&below(CONTROLLER_INBOX), "_INBOX._controller.>"),
            (CONSOLE_INBOX, "_INBOX._console"),
        ];
        for (built, expected) in cases {
            assert_eq!(built, expected);
        }
    }

    #[test]
    fn every_built_event_subject_parses_back_and_its_filters_take_it() {
        let pairs = [
            ("db-1", "postgres"),
            ("a_b", "c"),
            ("a", "b_c"),
            ("0", "x-9"),
        ];
        for (machine, module) in pairs {
            let (machine, module) = (name(machine), name(module));
            for kind in EventKind::ALL {
                let subject = event_subject(&machine, &module, kind);
                let emitter = match kind {
                    EventKind::GrantsRead => grants_agent_emitter(),
                    _ => module.clone(),
                };
                assert_eq!(
                    parse_event_subject(&subject),
                    Some((machine.clone(), emitter, kind)),
                    "{subject}"
                );
                assert_eq!(parse_approve_subject(&subject), None, "{subject}");
                assert!(takes(ALL_EVENTS, &subject), "{subject}");
                let grant = kind.family() == GRANT_FAMILY;
                assert_eq!(takes(PROVISIONER_EVENTS, &subject), !grant, "{subject}");
                assert_eq!(takes(GRANT_EVENTS, &subject), grant, "{subject}");
                // A consumer's grant subjects are not the agent's own.
                assert_eq!(
                    takes(&grant_events_of(&machine, &module), &subject),
                    EventKind::GRANT.contains(&kind),
                    "{subject}"
                );
            }
            let approve = approve_subject(&machine, &module);
            assert_eq!(
                parse_approve_subject(&approve),
                Some((machine.clone(), module.clone())),
                "{approve}"
            );
            assert_eq!(parse_event_subject(&approve), None, "{approve}");
            assert!(takes(APPROVE_ANY, &approve), "{approve}");
            assert!(
                takes(&commands_of(&machine, &module), &approve),
                "{approve}"
            );
            assert!(!takes(ALL_EVENTS, &approve), "{approve}");
        }
    }

    #[test]
    fn no_prefix_or_filter_of_one_reaches_another() {
        // The earlier `_INBOX_<machine>_<module>` gave `c@a_b` and `b_c@a` one prefix.
        let (ab, c, a, bc) = (name("a_b"), name("c"), name("a"), name("b_c"));
        let first = below(&inbox_prefix(&ab, &c));
        let second = below(&inbox_prefix(&a, &bc));
        assert!(takes(&first, "_INBOX.a_b.c.x"));
        assert!(!takes(&second, "_INBOX.a_b.c.x"));
        assert!(!takes(&first, &format!("{}.x", grants_inbox_prefix(&ab))));
        assert!(!takes(&first, "_INBOX._controller.x"));
        assert!(!takes(&commands_of(&ab, &c), &approve_subject(&a, &bc)));
        assert!(!takes(
            &grant_events_of(&ab, &c),
            &event_subject(&a, &bc, EventKind::Reachable)
        ));
    }

    #[test]
    fn bad_approve_subjects_are_refused() {
        for bad in [
            "mesh.cmd.db-1.postgres.provisioner",
            "mesh.cmd.db-1.postgres.provisioner.approve.x",
            "mesh.cmd.db-1.postgres.grant.approve",
            "mesh.cmd.db-1.Postgres.provisioner.approve",
            "mesh.cmd.*.*.provisioner.approve",
            "mesh.event.db-1.postgres.provisioner.approve",
            "x.cmd.db-1.postgres.provisioner.approve",
        ] {
            assert_eq!(parse_approve_subject(bad), None, "{bad}");
        }
        for bad in [
            PROVISIONER_EVENTS,
            GRANT_EVENTS,
            ALL_EVENTS,
            "mesh.event.*.postgres.provisioner.failing",
            "mesh.event.db-1..provisioner.failing",
            "",
        ] {
            assert_eq!(parse_event_subject(bad), None, "{bad}");
        }
    }
}
