//! What a new declaration would change for each provider, before anything
//! is written (`mesh-controller plan`): the consumers its contributions
//! file would list anew, those it would no longer list (each one the
//! provider would retire once its file says so), those whose entry changes,
//! and those it would hold back (listed twice). Pure: two declarations in,
//! one [`DeclarationPlan`] out; the CLI reads the files and prints it.
//!
//! The entries are the ones `mesh-controller contributions` writes
//! ([`crate::contributions::derive`]), so the plan is what the providers
//! would be given, not a second reading of the declaration.

use std::collections::BTreeMap;
use std::time::Duration;

use mesh_protocol::{ModuleId, Name};
use serde::Serialize;

use crate::contributions::{derive, ConsumerEntry, ProviderFile};
use mesh_status::model::Declaration;

/// One consumer entry, as the plan names it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub(crate) struct PlanEntry {
    /// The consumer module.
    pub consumer: Name,
    /// Its machine.
    pub machine: Name,
    /// What it requires.
    pub provision: Name,
}

impl From<&ConsumerEntry> for PlanEntry {
    fn from(entry: &ConsumerEntry) -> PlanEntry {
        PlanEntry {
            consumer: entry.consumer.clone(),
            machine: entry.machine.clone(),
            provision: entry.provision.clone(),
        }
    }
}

/// A consumer whose entry changes (another machine or provision): still
/// listed, so nothing is retired; the provider serves the new entry.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub(crate) struct Changed {
    /// As it is listed now.
    pub from: PlanEntry,
    /// As it would be listed.
    pub to: PlanEntry,
}

/// What the new declaration changes for one provider.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub(crate) struct ProviderPlan {
    /// The provider, `module@machine`.
    pub provider: ModuleId,
    /// Whether the new declaration still gives it a contributions file.
    /// `false`: its file is no longer written, and it goes on serving the
    /// last one it read until it is stopped (nothing is withdrawn by it).
    pub declared: bool,
    /// Whether only the new declaration gives it a contributions file.
    pub new: bool,
    /// Consumers it would list anew.
    pub added: Vec<PlanEntry>,
    /// Consumers it would no longer list: retired once its file says so.
    pub withdrawn: Vec<PlanEntry>,
    /// Consumers whose entry changes.
    pub changed: Vec<Changed>,
    /// Consumer names the new file would list twice: held back (neither
    /// served nor retired) until the declaration is fixed.
    pub held_back: Vec<Name>,
}

impl ProviderPlan {
    /// Whether it changes nothing for this provider.
    pub(crate) fn is_unchanged(&self) -> bool {
        self.declared
            && !self.new
            && self.added.is_empty()
            && self.withdrawn.is_empty()
            && self.changed.is_empty()
            && self.held_back.is_empty()
    }
}

/// What a new declaration changes, provider by provider (sorted).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub(crate) struct DeclarationPlan {
    /// One per provider either declaration gives a contributions file.
    pub providers: Vec<ProviderPlan>,
}

impl DeclarationPlan {
    /// Consumers withdrawn, over every provider.
    pub(crate) fn withdrawn(&self) -> usize {
        self.providers.iter().map(|p| p.withdrawn.len()).sum()
    }

    /// Consumers added, over every provider.
    pub(crate) fn added(&self) -> usize {
        self.providers.iter().map(|p| p.added.len()).sum()
    }
}

/// When a provider retires a consumer its file no longer lists (its
/// `--retire-after-passes`, `--pass-every` and `--retire-after`): after
/// both, whichever is later.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct RetireTiming {
    /// `--retire-after-passes`.
    pub after_passes: u32,
    /// `--pass-every`.
    pub pass_every: Duration,
    /// `--retire-after`.
    pub after: Duration,
}

impl Default for RetireTiming {
    /// The providers' defaults: 5 passes, 5 s apart, and 10 minutes.
    fn default() -> RetireTiming {
        RetireTiming {
            after_passes: 5,
            pass_every: Duration::from_secs(5),
            after: Duration::from_secs(600),
        }
    }
}

impl RetireTiming {
    /// How long after its file stops listing a consumer the provider retires it.
    pub(crate) fn delay(&self) -> Duration {
        self.after.max(self.pass_every * self.after_passes)
    }
}

/// The plan of going from `current` to `new`.
pub(crate) fn plan(current: &Declaration, new: &Declaration) -> DeclarationPlan {
    let mut files: BTreeMap<ModuleId, (Option<ProviderFile>, Option<ProviderFile>)> =
        BTreeMap::new();
    for file in derive(current) {
        let id = file.id();
        files.entry(id).or_default().0 = Some(file);
    }
    for file in derive(new) {
        let id = file.id();
        files.entry(id).or_default().1 = Some(file);
    }
    let providers = files
        .into_iter()
        .map(|(provider, (now, then))| provider_plan(provider, now.as_ref(), then.as_ref()))
        .collect();
    DeclarationPlan { providers }
}

fn provider_plan(
    provider: ModuleId,
    now: Option<&ProviderFile>,
    then: Option<&ProviderFile>,
) -> ProviderPlan {
    let by_name = |file: Option<&ProviderFile>| -> BTreeMap<Name, Vec<PlanEntry>> {
        let mut names: BTreeMap<Name, Vec<PlanEntry>> = BTreeMap::new();
        for entry in file.map(|f| f.consumers.as_slice()).unwrap_or_default() {
            names
                .entry(entry.consumer.clone())
                .or_default()
                .push(entry.into());
        }
        names
    };
    let (listed, will_list) = (by_name(now), by_name(then));
    let mut plan = ProviderPlan {
        provider,
        declared: then.is_some(),
        new: now.is_none(),
        added: Vec::new(),
        withdrawn: Vec::new(),
        changed: Vec::new(),
        held_back: then
            .map(|f| f.repeated.iter().map(|(name, _)| name.clone()).collect())
            .unwrap_or_default(),
    };
    // A provider no longer declared keeps serving its last file: nothing
    // is withdrawn by it.
    if then.is_none() {
        return plan;
    }
    for (name, entries) in &listed {
        match will_list.get(name) {
            None => plan.withdrawn.extend(entries.iter().cloned()),
            Some(next) if next != entries && next.len() == 1 && entries.len() == 1 => {
                plan.changed.push(Changed {
                    from: entries[0].clone(),
                    to: next[0].clone(),
                })
            }
            Some(_) => {}
        }
    }
    for (name, entries) in &will_list {
        if !listed.contains_key(name) {
            plan.added.extend(entries.iter().cloned());
        }
    }
    plan
}

#[cfg(test)]
mod tests {
    use super::*;
    use mesh_status::model::declaration::parse;

    fn declaration(modules: &str) -> Declaration {
        let parsed = parse(&format!(r#"{{"modules": [{modules}]}}"#)).unwrap();
        assert!(parsed.refused.is_empty(), "{:?}", parsed.refused);
        parsed.declaration
    }

    const POSTGRES: &str =
        r#"{"module":"postgres","machine":"db-1","provides":["postgres-database"]}"#;
    const IDENTITY: &str = r#"{"module":"identity","machine":"id-1","provides":["oidc-client"]}"#;

    fn needs(module: &str, machine: &str, from: &[(&str, &str)]) -> String {
        let requires: Vec<String> = from
            .iter()
            .map(|(provision, by)| format!(r#"{{"provision":"{provision}","from":"{by}"}}"#))
            .collect();
        format!(
            r#"{{"module":"{module}","machine":"{machine}","requires":[{}]}}"#,
            requires.join(",")
        )
    }

    fn entry(consumer: &str, machine: &str, provision: &str) -> PlanEntry {
        PlanEntry {
            consumer: Name::parse(consumer).unwrap(),
            machine: Name::parse(machine).unwrap(),
            provision: Name::parse(provision).unwrap(),
        }
    }

    const PG: (&str, &str) = ("postgres-database", "postgres@db-1");
    const OIDC: (&str, &str) = ("oidc-client", "identity@id-1");

    #[test]
    fn the_same_declaration_changes_nothing() {
        let d = declaration(&[POSTGRES, IDENTITY, &needs("forge", "app-1", &[PG, OIDC])].join(","));
        let plan = plan(&d, &d);
        assert_eq!(plan.providers.len(), 2);
        assert!(
            plan.providers.iter().all(ProviderPlan::is_unchanged),
            "{plan:?}"
        );
        assert_eq!((plan.added(), plan.withdrawn()), (0, 0));
    }

    #[test]
    fn a_dropped_requirement_is_withdrawn_from_its_provider_alone() {
        let now = declaration(
            &[
                POSTGRES,
                IDENTITY,
                &needs("forge", "app-1", &[PG, OIDC]),
                &needs("wiki", "app-2", &[PG]),
            ]
            .join(","),
        );
        // A typo: forge's postgres requirement is gone; wiki moves; chat is new.
        let then = declaration(
            &[
                POSTGRES,
                IDENTITY,
                &needs("forge", "app-1", &[OIDC]),
                &needs("wiki", "app-3", &[PG]),
                &needs("chat", "app-1", &[PG]),
            ]
            .join(","),
        );
        let plan = plan(&now, &then);
        let postgres = &plan.providers[1];
        assert_eq!(postgres.provider.to_string(), "postgres@db-1");
        assert_eq!(
            postgres.withdrawn,
            [entry("forge", "app-1", "postgres-database")]
        );
        assert_eq!(
            postgres.added,
            [entry("chat", "app-1", "postgres-database")]
        );
        assert_eq!(
            postgres.changed,
            [Changed {
                from: entry("wiki", "app-2", "postgres-database"),
                to: entry("wiki", "app-3", "postgres-database"),
            }]
        );
        assert!(plan.providers[0].is_unchanged(), "identity keeps forge");
        assert_eq!((plan.added(), plan.withdrawn()), (1, 1));
    }

    #[test]
    fn a_provider_no_longer_declared_withdraws_nothing_and_a_new_one_adds_all() {
        let now = declaration(&[POSTGRES, &needs("forge", "app-1", &[PG])].join(","));
        let then = declaration(&[IDENTITY, &needs("forge", "app-1", &[OIDC])].join(","));
        let plan = plan(&now, &then);
        let (identity, postgres) = (&plan.providers[0], &plan.providers[1]);
        assert!(
            !postgres.declared && postgres.withdrawn.is_empty(),
            "{postgres:?}"
        );
        assert!(identity.new && identity.declared);
        assert_eq!(identity.added, [entry("forge", "app-1", "oidc-client")]);
        assert_eq!(plan.withdrawn(), 0);
    }

    #[test]
    fn a_name_listed_twice_is_held_back_not_withdrawn() {
        let now = declaration(&[POSTGRES, &needs("forge", "app-1", &[PG])].join(","));
        let then = declaration(
            &[
                POSTGRES,
                &needs("forge", "app-1", &[PG]),
                &needs("forge", "app-2", &[PG]),
            ]
            .join(","),
        );
        let plan = plan(&now, &then);
        let postgres = &plan.providers[0];
        assert_eq!(postgres.held_back, [Name::parse("forge").unwrap()]);
        assert!(
            postgres.withdrawn.is_empty() && postgres.added.is_empty(),
            "{postgres:?}"
        );
    }

    #[test]
    fn retirement_waits_for_both_the_passes_and_the_time() {
        let cases = [
            (5, 5, 600, 600),
            (5, 300, 600, 1500),
            (1, 5, 0, 5),
            (200, 5, 600, 1000),
        ];
        for (after_passes, pass_every, after, delay) in cases {
            let r = RetireTiming {
                after_passes,
                pass_every: Duration::from_secs(pass_every),
                after: Duration::from_secs(after),
            };
            assert_eq!(r.delay(), Duration::from_secs(delay), "{r:?}");
        }
        assert_eq!(RetireTiming::default().delay(), Duration::from_secs(600));
    }
}
