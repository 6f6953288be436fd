//! `approve`: a person approves retiring (or deleting) a withdrawn consumer;
//! the request goes to the provider's approve subject and its answer is shown.
//!
//! With a declaration, the provider is looked up first ([`check_declared`]):
//! one the declaration does not assign, or a module that answers no
//! approvals, is an error before anything is sent. The consumer is not
//! looked up for retiring: an approval is for a consumer withdrawn from the
//! provider's contributions, which the declaration rightly no longer lists.
//! Deleting one the declaration still requires from that provider is
//! refused unless `--force` ([`check_deletion`]).

use mesh_protocol::{ModuleId, Name};
use mesh_runtime::nats::ApproveAnswer;

use mesh_status::model::{Declaration, ParsedDeclaration};

/// What the declaration said of the provider before the request was sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Declared {
    /// The declaration assigns it, and it answers approvals (it receives
    /// contributions).
    Assigned,
    /// No declaration was given: whether the provider exists was not checked.
    NotChecked,
}

/// The declaration says no provider of that name answers approvals; nothing
/// was sent (exit 2).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum UnknownProvider {
    /// The declaration does not list the module on that machine.
    #[error(
        "the declaration assigns no provider {provider} (it assigns {assigned}); nothing was \
         sent{refused}"
    )]
    Undeclared {
        /// The provider asked for.
        provider: ModuleId,
        /// The providers it assigns, sorted (at most ten named), or `none`.
        assigned: String,
        /// A note on refused declaration entries, or "".
        refused: String,
    },
    /// The module is declared but provides nothing and nobody requires
    /// anything from it: it has no contributions and answers no approvals.
    #[error(
        "the declaration lists {provider}, but it provides nothing and no module requires \
         anything from it, so it answers no approvals; nothing was sent"
    )]
    NoContributions {
        /// The module asked for.
        provider: ModuleId,
    },
}

/// How many assigned providers an [`UnknownProvider::Undeclared`] names.
const NAMED_AT_MOST: usize = 10;

/// Whether the declaration lets `provider` answer an approval: it lists it
/// and it receives contributions (only such a module may listen on its
/// approve subject, see the derived permissions).
///
/// # Errors
/// [`UnknownProvider`] naming the provider and, when it is not declared,
/// the providers that are.
pub(crate) fn check_declared(
    parsed: &ParsedDeclaration,
    provider: &ModuleId,
) -> Result<Declared, UnknownProvider> {
    let declaration = &parsed.declaration;
    if declaration.receives_contributions(provider) {
        return Ok(Declared::Assigned);
    }
    if declaration.module(provider).is_some() {
        return Err(UnknownProvider::NoContributions {
            provider: provider.clone(),
        });
    }
    let providers: Vec<String> = declaration
        .ids()
        .into_iter()
        .filter(|id| declaration.receives_contributions(id))
        .map(ToString::to_string)
        .collect();
    let mut assigned = providers
        .iter()
        .take(NAMED_AT_MOST)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if providers.is_empty() {
        assigned = "none".to_owned();
    } else if providers.len() > NAMED_AT_MOST {
        assigned.push_str(&format!(", … ({} in all)", providers.len()));
    }
    let refused = match parsed.refused.len() {
        0 => String::new(),
        1 => "; 1 declaration entry was refused (see status)".to_owned(),
        n => format!("; {n} declaration entries were refused (see status)"),
    };
    Err(UnknownProvider::Undeclared {
        provider: provider.clone(),
        assigned,
        refused,
    })
}

/// A deletion the declaration forbids without `--force`: it still requires
/// the consumer from the provider; nothing was sent (exit 2).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "the declaration still requires {consumer} from {provider} ({machines}): deleting its \
     provision would take data a declared consumer needs; withdraw it from the declaration \
     first, or add --force to delete it anyway; nothing was sent"
)]
pub struct RequiredDeletion {
    /// The provider asked to delete.
    pub provider: ModuleId,
    /// The consumer.
    pub consumer: String,
    /// The consumer's declared instances that require it (`module@machine`, sorted).
    pub machines: String,
}

/// `Ok` unless the approval deletes (`delete`) a consumer the declaration
/// still requires from `provider` and `force` is not given (pure).
///
/// # Errors
/// [`RequiredDeletion`], naming the declared consumers that require it.
pub(crate) fn check_deletion(
    declaration: &Declaration,
    provider: &ModuleId,
    consumer: &Name,
    delete: bool,
    force: bool,
) -> Result<(), RequiredDeletion> {
    if !delete || force {
        return Ok(());
    }
    let requiring: Vec<String> = declaration
        .requiring(provider, consumer)
        .into_iter()
        .map(ToString::to_string)
        .collect();
    if requiring.is_empty() {
        return Ok(());
    }
    Err(RequiredDeletion {
        provider: provider.clone(),
        consumer: consumer.to_string(),
        machines: requiring.join(", "),
    })
}

/// For a person: what the provider said, or why there is no answer
/// (and, when nobody listens, what the declaration said of it).
pub(crate) fn describe(answer: &ApproveAnswer, provider: &ModuleId, declared: Declared) -> String {
    let unheard = match declared {
        Declared::Assigned => "the declaration assigns it: is it running and connected?",
        Declared::NotChecked => {
            "is it running and connected? no --declaration was given, so whether it exists was \
             not checked"
        }
    };
    answer.describe(provider, unheard)
}

#[cfg(test)]
mod tests {
    use super::*;
    use mesh_protocol::ApproveReply;
    use std::time::Duration;

    #[test]
    fn deleting_a_consumer_the_declaration_still_requires_from_that_provider_needs_force() {
        let parsed = mesh_status::model::declaration::parse(
            r#"{"modules":[
                {"module":"postgres","machine":"db-1","provides":["postgres-database"]},
                {"module":"postgres","machine":"db-2","provides":["postgres-database"]},
                {"module":"wiki","machine":"app-1","requires":[{"provision":"postgres-database","from":"postgres@db-1"}]},
                {"module":"wiki","machine":"app-2","requires":[{"provision":"postgres-database","from":"postgres@db-1"}]},
                {"module":"forge","machine":"app-1","requires":[{"provision":"postgres-database","from":"postgres@db-2"}]}
            ]}"#,
        )
        .unwrap();
        let d = &parsed.declaration;
        let db1 = ModuleId::parse("postgres@db-1").unwrap();
        let db2 = ModuleId::parse("postgres@db-2").unwrap();
        let name = |n: &str| Name::parse(n).unwrap();
        // (provider, consumer, delete, force, refused naming)
        let cases = [
            (&db1, "wiki", true, false, Some("wiki@app-1, wiki@app-2")),
            (&db1, "wiki", true, true, None),
            (&db1, "wiki", false, false, None),
            (&db1, "forge", true, false, None),
            (&db2, "forge", true, false, Some("forge@app-1")),
            (&db2, "wiki", true, false, None),
            (&db1, "docs", true, false, None),
        ];
        for (provider, consumer, delete, force, refused) in cases {
            let outcome = check_deletion(d, provider, &name(consumer), delete, force);
            assert_eq!(
                outcome.as_ref().err().map(|e| e.machines.as_str()),
                refused,
                "{provider} {consumer} delete={delete} force={force}"
            );
            if let Err(error) = outcome {
                let text = error.to_string();
                assert!(
                    text.contains(&format!("still requires {consumer} from {provider}"))
                        && text.contains("--force")
                        && text.contains("nothing was sent"),
                    "{text}"
                );
            }
        }
    }

    #[test]
    fn answers_say_which() {
        let p = ModuleId::parse("postgres@db-1").unwrap();
        let cases = [
            (
                ApproveAnswer::Replied(ApproveReply {
                    ok: true,
                    detail: "retired forge".into(),
                }),
                true,
                "done by postgres@db-1: retired forge",
            ),
            (
                ApproveAnswer::Replied(ApproveReply {
                    ok: false,
                    detail: "forge is still listed".into(),
                }),
                false,
                "refused by postgres@db-1: forge is still listed",
            ),
            (
                ApproveAnswer::NoResponders,
                false,
                "unanswered: no provider postgres@db-1 listens",
            ),
            (
                ApproveAnswer::TimedOut(Duration::from_secs(30)),
                false,
                "unanswered: postgres@db-1 did not answer within 30s",
            ),
        ];
        for (answer, done, text) in cases {
            assert_eq!(answer.is_done(), done);
            for declared in [Declared::Assigned, Declared::NotChecked] {
                let said = describe(&answer, &p, declared);
                assert!(said.starts_with(text), "{said}");
            }
        }
        let nobody = |declared| describe(&ApproveAnswer::NoResponders, &p, declared);
        assert!(nobody(Declared::Assigned).contains("the declaration assigns it"));
        assert!(nobody(Declared::NotChecked).contains("no --declaration was given"));
    }

    #[test]
    fn the_declaration_names_a_provider_that_cannot_answer() {
        let parsed = mesh_status::model::declaration::parse(
            r#"{"modules":[
              {"module":"postgres","machine":"db-1","provides":["postgres-database"]},
              {"module":"identity","machine":"id-1","provides":["oidc-client"]},
              {"module":"forge","machine":"app-1","requires":[
                {"provision":"postgres-database","from":"postgres@db-1"}]},
              {"module":"BAD","machine":"x"}
            ]}"#,
        )
        .unwrap();
        let id = |text: &str| ModuleId::parse(text).unwrap();
        assert_eq!(
            check_declared(&parsed, &id("postgres@db-1")),
            Ok(Declared::Assigned)
        );
        assert_eq!(
            check_declared(&parsed, &id("identity@id-1")),
            Ok(Declared::Assigned)
        );
        let cases = [
            (
                "ghost@nowhere",
                "the declaration assigns no provider ghost@nowhere (it assigns identity@id-1, \
                 postgres@db-1); nothing was sent; 1 declaration entry was refused (see status)",
            ),
            ("postgres@db-2", "assigns no provider postgres@db-2"),
            (
                "forge@app-1",
                "the declaration lists forge@app-1, but it provides nothing",
            ),
        ];
        for (provider, expected) in cases {
            let error = check_declared(&parsed, &id(provider))
                .unwrap_err()
                .to_string();
            assert!(error.contains(expected), "{error}");
        }

        let many: Vec<String> = (0..12)
            .map(|n| format!(r#"{{"module":"p{n:02}","machine":"m","provides":["x"]}}"#))
            .collect();
        let parsed = mesh_status::model::declaration::parse(&format!(
            r#"{{"modules":[{}]}}"#,
            many.join(",")
        ))
        .unwrap();
        let error = check_declared(&parsed, &id("ghost@nowhere"))
            .unwrap_err()
            .to_string();
        assert!(error.contains("p09@m, … (12 in all)"), "{error}");
        assert!(!error.contains("p10@m"), "{error}");
        let empty = mesh_status::model::declaration::parse(r#"{"modules":[]}"#).unwrap();
        let error = check_declared(&empty, &id("ghost@nowhere"))
            .unwrap_err()
            .to_string();
        assert!(error.contains("(it assigns none)"), "{error}");
    }
}
