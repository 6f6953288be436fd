//! Each provider's contributions file, derived from the declaration
//! (docs/contracts/contributions.md), and the secrets it names, minted where
//! missing ([`write`](mod@write)).
//!
//! [`derive()`] is pure: one [`ProviderFile`] per module that receives
//! contributions, listing every declared module that requires a provision
//! from it, each with the secret file `secrets/<consumer>` (relative to the
//! contributions file's folder). Options are `{}`: the declaration has none.
//!
//! A provider keeps one entry per consumer *name*. When the declaration
//! asks one provider for two entries of one name (the module `forge` on two
//! machines, or one module requiring two provisions from it), both are
//! written, as the declaration says, and named in
//! [`ProviderFile::repeated`]: the provider refuses both (the file's
//! contract) and keeps the consumer listed, so neither is retired, while
//! the operator is told to fix the declaration.

pub(crate) mod write;

use std::collections::BTreeMap;

use mesh_protocol::{ModuleId, Name};
use serde::Serialize;

use mesh_status::model::Declaration;

/// One consumer entry of a contributions file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub(crate) struct ConsumerEntry {
    /// The consumer module.
    pub consumer: Name,
    /// Its machine.
    pub machine: Name,
    /// What it requires.
    pub provision: Name,
    /// Its secret file, relative to the contributions file's folder:
    /// `secrets/<consumer>`.
    pub secret_file: String,
    /// Passed through to the provider; the declaration has none.
    pub options: serde_json::Map<String, serde_json::Value>,
}

/// The `provider` block.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub(crate) struct ProviderBlock {
    /// The provider module.
    pub module: Name,
    /// Its machine.
    pub machine: Name,
}

/// One provider's contributions file, as written.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub(crate) struct ProviderFile {
    /// The provider itself.
    pub provider: ProviderBlock,
    /// Its consumers, sorted by name, machine and provision.
    pub consumers: Vec<ConsumerEntry>,
    /// Consumer names listed more than once (the provider uses none of
    /// their entries): each with the `module@machine (provision)` entries.
    #[serde(skip)]
    pub repeated: Vec<(Name, Vec<String>)>,
}

impl ProviderFile {
    /// The provider, `module@machine`.
    pub(crate) fn id(&self) -> ModuleId {
        ModuleId::new(self.provider.module.clone(), self.provider.machine.clone())
    }

    /// The file's text: pretty JSON and a final newline.
    pub(crate) fn text(&self) -> String {
        let mut text = serde_json::to_string_pretty(self).expect("the file serializes");
        text.push('\n');
        text
    }

    /// The consumer names, each once, sorted (one secret each).
    pub(crate) fn consumer_names(&self) -> Vec<&Name> {
        let mut names: Vec<&Name> = self.consumers.iter().map(|e| &e.consumer).collect();
        names.dedup();
        names
    }
}

/// The secret file of `consumer`, relative to the contributions file's folder.
pub(crate) fn secret_file(consumer: &Name) -> String {
    format!("secrets/{consumer}")
}

/// Every provider's contributions file, sorted by provider: each module
/// that receives contributions ([`Declaration::receives_contributions`]),
/// with the modules that require something from it. A requirement declared
/// twice is listed once.
pub(crate) fn derive(declaration: &Declaration) -> Vec<ProviderFile> {
    declaration
        .ids()
        .into_iter()
        .filter(|id| declaration.receives_contributions(id))
        .map(|id| provider_file(declaration, id))
        .collect()
}

fn provider_file(declaration: &Declaration, id: &ModuleId) -> ProviderFile {
    let mut consumers: Vec<ConsumerEntry> = declaration
        .modules
        .iter()
        .flat_map(|m| m.requires.iter().map(move |r| (m, r)))
        .filter(|(_, r)| &r.from == id)
        .map(|(m, r)| ConsumerEntry {
            consumer: m.id.module.clone(),
            machine: m.id.machine.clone(),
            provision: r.provision.clone(),
            secret_file: secret_file(&m.id.module),
            options: serde_json::Map::new(),
        })
        .collect();
    consumers.sort_by(|a, b| {
        (&a.consumer, &a.machine, &a.provision).cmp(&(&b.consumer, &b.machine, &b.provision))
    });
    consumers.dedup();
    let mut by_name: BTreeMap<&Name, Vec<String>> = BTreeMap::new();
    for entry in &consumers {
        by_name.entry(&entry.consumer).or_default().push(format!(
            "{}@{} ({})",
            entry.consumer, entry.machine, entry.provision
        ));
    }
    let repeated = by_name
        .into_iter()
        .filter(|(_, entries)| entries.len() > 1)
        .map(|(name, entries)| (name.clone(), entries))
        .collect();
    ProviderFile {
        provider: ProviderBlock {
            module: id.module.clone(),
            machine: id.machine.clone(),
        },
        consumers,
        repeated,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mesh_status::model::declaration::parse;

    fn files(text: &str) -> Vec<ProviderFile> {
        let parsed = parse(text).unwrap();
        assert!(parsed.refused.is_empty(), "{:?}", parsed.refused);
        derive(&parsed.declaration)
    }

    #[test]
    fn each_provider_lists_the_modules_that_require_from_it() {
        let files = files(
            r#"{"modules":[
              {"module":"postgres","machine":"db-1","provides":["postgres-database"]},
              {"module":"identity","machine":"id-1","provides":["oidc-client"]},
              {"module":"spare","machine":"db-2","provides":["postgres-database"]},
              {"module":"wiki","machine":"app-2","requires":[
                {"provision":"postgres-database","from":"postgres@db-1"},
                {"provision":"postgres-database","from":"postgres@db-1"}]},
              {"module":"forge","machine":"app-1","requires":[
                {"provision":"postgres-database","from":"postgres@db-1"},
                {"provision":"oidc-client","from":"identity@id-1"}]}
            ]}"#,
        );
        let ids: Vec<String> = files.iter().map(|f| f.id().to_string()).collect();
        assert_eq!(ids, ["identity@id-1", "postgres@db-1", "spare@db-2"]);
        let postgres = serde_json::to_value(&files[1]).unwrap();
        assert_eq!(
            postgres,
            serde_json::json!({
                "provider": {"module": "postgres", "machine": "db-1"},
                "consumers": [
                    {"consumer": "forge", "machine": "app-1", "provision": "postgres-database",
                     "secret_file": "secrets/forge", "options": {}},
                    {"consumer": "wiki", "machine": "app-2", "provision": "postgres-database",
                     "secret_file": "secrets/wiki", "options": {}},
                ]
            })
        );
        assert!(files[1].repeated.is_empty());
        // A provider nobody requires from gets its (empty) file.
        assert!(files[2].consumers.is_empty());
        assert!(files[2].text().ends_with("}\n"));
    }

    #[test]
    fn one_consumer_name_twice_is_listed_as_declared_and_named() {
        let files = files(
            r#"{"modules":[
              {"module":"postgres","machine":"db-1","provides":["postgres-database"]},
              {"module":"forge","machine":"app-1","requires":[
                {"provision":"postgres-database","from":"postgres@db-1"}]},
              {"module":"forge","machine":"app-2","requires":[
                {"provision":"postgres-database","from":"postgres@db-1"}]}
            ]}"#,
        );
        assert_eq!(files[0].consumers.len(), 2);
        assert_eq!(files[0].consumer_names().len(), 1);
        assert_eq!(
            files[0].repeated,
            [(
                Name::parse("forge").unwrap(),
                vec![
                    "forge@app-1 (postgres-database)".to_owned(),
                    "forge@app-2 (postgres-database)".to_owned()
                ]
            )]
        );
    }
}
