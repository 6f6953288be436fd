//! The declaration: which modules run on which machines, what they provide
//! and what they require from whom (docs/contracts/declaration.md).
//!
//! Parsed entry by entry, like the contributions file: an entry (or one
//! requirement of an entry) that is invalid is refused with an error naming
//! it, and the other entries go on. Only a file that cannot be read, or is not
//! a JSON object with a `modules` list, is an error as a whole.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use mesh_listfile::entries::{Entries, Repeated};
use mesh_protocol::{ModuleId, Name};
use serde::Deserialize;

/// One provision a module requires, and the provider it comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Requirement {
    /// What is required, e.g. `postgres-database`.
    pub provision: Name,
    /// The provider module it comes from.
    pub from: ModuleId,
}

/// One module entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Module {
    /// The module and its machine.
    pub id: ModuleId,
    /// What it provides to others.
    pub provides: Vec<Name>,
    /// What it requires (only the valid requirements).
    pub requires: Vec<Requirement>,
}

/// A validated declaration: only the valid entries, in file order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Declaration {
    /// The valid module entries.
    pub modules: Vec<Module>,
}

impl Declaration {
    /// Whether the declaration lists `module` on `machine` (the provider is
    /// *assigned* there).
    pub fn is_assigned(&self, module: &str, machine: &str) -> bool {
        self.modules
            .iter()
            .any(|m| m.id.module.as_str() == module && m.id.machine.as_str() == machine)
    }

    /// The module entry of `id`, if declared.
    pub fn module(&self, id: &ModuleId) -> Option<&Module> {
        self.modules.iter().find(|m| &m.id == id)
    }

    /// What `id` requires: each provision and the provider it is required
    /// from, in the declaration's order (none for a module it does not
    /// declare).
    pub fn requirements(&self, id: &ModuleId) -> Vec<(String, ModuleId)> {
        self.module(id)
            .map(|m| {
                m.requires
                    .iter()
                    .map(|r| (r.provision.to_string(), r.from.clone()))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The declared instances of module `consumer` that require something
    /// from `provider`, sorted: a deletion of `consumer`'s provision there
    /// would take what they need.
    pub fn requiring(&self, provider: &ModuleId, consumer: &Name) -> BTreeSet<&ModuleId> {
        self.modules
            .iter()
            .filter(|m| m.id.module == *consumer && m.requires.iter().any(|r| &r.from == provider))
            .map(|m| &m.id)
            .collect()
    }

    /// Whether `id` receives a contributions file: it provides something, or
    /// some module requires a provision from it.
    ///
    /// A provider that nobody requires anything from any more still gets its
    /// (then empty) contributions file, and must still be able to publish
    /// `retirement` and `recovered` for the consumers it withdraws, and
    /// `repair`; so providing is enough.
    pub fn receives_contributions(&self, id: &ModuleId) -> bool {
        self.module(id).is_some_and(|m| !m.provides.is_empty())
            || self
                .modules
                .iter()
                .flat_map(|m| &m.requires)
                .any(|r| &r.from == id)
    }

    /// Every declared (module, machine), sorted.
    pub fn ids(&self) -> BTreeSet<&ModuleId> {
        self.modules.iter().map(|m| &m.id).collect()
    }

    /// Every machine a module entry names, sorted.
    pub fn machines(&self) -> BTreeSet<&str> {
        self.modules.iter().map(|m| m.id.machine.as_str()).collect()
    }

    /// `Ok` when a module entry names `machine` (`node show MACHINE`).
    ///
    /// # Errors
    /// [`UnknownMachine`], naming the machines it does name.
    pub fn check_machine(&self, machine: &str) -> Result<(), UnknownMachine> {
        let machines = self.machines();
        if machines.contains(machine) {
            return Ok(());
        }
        Err(UnknownMachine {
            machine: machine.to_owned(),
            named: machines.iter().map(|m| (*m).to_owned()).collect(),
        })
    }
}

/// A machine no module entry of the declaration names (a typo, most often).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("the declaration names no machine {machine} ({})", names(.named))]
pub struct UnknownMachine {
    /// The machine asked for.
    pub machine: String,
    /// The machines it names, sorted.
    pub named: Vec<String>,
}

/// How many machines [`UnknownMachine`] names at most.
const NAMED_AT_MOST: usize = 10;

fn names(named: &[String]) -> String {
    match named.len() {
        0 => "it names none".to_owned(),
        n if n <= NAMED_AT_MOST => format!("it names: {}", named.join(", ")),
        n => format!(
            "it names: {}, … ({n} in all)",
            named[..NAMED_AT_MOST].join(", ")
        ),
    }
}

/// An entry (or part of one) that was refused; the others go on.
pub use mesh_listfile::EntryError;

/// The result of parsing: the valid entries and the refused ones.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ParsedDeclaration {
    /// The valid entries.
    pub declaration: Declaration,
    /// What was refused, each naming its entry.
    pub refused: Vec<EntryError>,
}

/// The declaration as a whole could not be used. Ends the command that
/// needed it (exit 2).
#[derive(Debug, thiserror::Error)]
pub enum DeclarationError {
    /// No declaration was given.
    #[error("no declaration given (--declaration PATH or MESH_DECLARATION)")]
    Missing,
    /// The file could not be read.
    #[error("declaration {path} cannot be read: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The file is not a JSON object with a `modules` list.
    #[error("declaration {path} is malformed: {source}")]
    Malformed {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: serde_json::Error,
    },
}

#[derive(Deserialize)]
struct RawFile {
    modules: Vec<serde_json::Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawModule {
    module: String,
    machine: String,
    #[serde(default)]
    provides: Vec<String>,
    #[serde(default)]
    requires: Vec<serde_json::Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRequirement {
    provision: String,
    from: String,
}

/// Reads and parses the declaration at `path`.
///
/// # Errors
/// [`DeclarationError`] when the file cannot be read or is not a JSON object
/// with a `modules` list. Invalid entries are not errors: see [`ParsedDeclaration::refused`].
pub fn load(path: &Path) -> Result<ParsedDeclaration, DeclarationError> {
    let text = std::fs::read_to_string(path).map_err(|source| DeclarationError::Read {
        path: path.to_owned(),
        source,
    })?;
    parse(&text).map_err(|source| DeclarationError::Malformed {
        path: path.to_owned(),
        source,
    })
}

/// Parses a declaration's text.
///
/// Entry checks: names valid (`module`, `machine`, each provision), no module
/// declared twice on one machine (the second is refused), every requirement
/// names its provider in `from` as `module@machine`, and that provider is
/// declared and provides the provision (else that requirement is refused).
///
/// # Errors
/// The JSON error when the text is not a JSON object with a `modules` list.
pub fn parse(text: &str) -> Result<ParsedDeclaration, serde_json::Error> {
    let raw: RawFile = serde_json::from_str(text)?;
    let mut entries = Entries::parse(raw.modules, named, module);
    entries.refuse_repeated(
        Repeated::FirstKept,
        |e| e.parsed.as_ref().ok().map(|(m, _)| m.id.clone()),
        |_, id| format!("{id} is declared more than once"),
    );
    let (kept, refused) = entries.split();
    let mut refused: Vec<EntryError> = refused
        .into_iter()
        .map(|r| EntryError::at("modules", r.index, r.label, r.reason))
        .collect();

    // Requirements refer to other entries: check them once all are known.
    let providers: Vec<(ModuleId, Vec<Name>)> = kept
        .iter()
        .map(|k| (k.value.0.id.clone(), k.value.0.provides.clone()))
        .collect();
    let mut valid = Vec::with_capacity(kept.len());
    for k in kept {
        let (mut module, requires) = k.value;
        let (good, bad) =
            Entries::parse(requires, |_| (), |value| requirement(value, &providers)).split();
        module.requires = good.into_iter().map(|r| r.value).collect();
        refused.extend(bad.into_iter().map(|r| EntryError {
            place: format!("modules[{}] ({}) requires[{}]", k.index, module.id, r.index),
            named: String::new(),
            reason: r.reason,
        }));
        valid.push(module);
    }
    Ok(ParsedDeclaration {
        declaration: Declaration { modules: valid },
        refused,
    })
}

/// A module entry with its names and provisions checked, and its
/// requirements still to check (they name other entries).
fn module(value: serde_json::Value) -> Result<(Module, Vec<serde_json::Value>), String> {
    let entry: RawModule = serde_json::from_value(value).map_err(|e| e.to_string())?;
    let module = Name::parse(&entry.module).map_err(|e| format!("module: {e}"))?;
    let machine = Name::parse(&entry.machine).map_err(|e| format!("machine: {e}"))?;
    let mut provides = Vec::new();
    for (i, provision) in entry.provides.iter().enumerate() {
        let name = Name::parse(provision).map_err(|e| format!("provides[{i}]: {e}"))?;
        if !provides.contains(&name) {
            provides.push(name);
        }
    }
    let module = Module {
        id: ModuleId::new(module, machine),
        provides,
        requires: Vec::new(),
    };
    Ok((module, entry.requires))
}

/// One requirement, checked against the declared `providers` and what they provide.
fn requirement(
    value: serde_json::Value,
    providers: &[(ModuleId, Vec<Name>)],
) -> Result<Requirement, String> {
    let raw: RawRequirement = serde_json::from_value(value).map_err(|e| e.to_string())?;
    let provision = Name::parse(&raw.provision).map_err(|e| format!("provision: {e}"))?;
    let from = ModuleId::parse(&raw.from).map_err(|e| format!("from: {e}"))?;
    match providers.iter().find(|(id, _)| id == &from) {
        None => Err(format!("from: {from} is not a declared module")),
        Some((_, provides)) if !provides.contains(&provision) => {
            Err(format!("from: {from} does not provide {provision}"))
        }
        Some(_) => Ok(Requirement { provision, from }),
    }
}

/// ` (module@machine)` when the entry names them as strings, else nothing.
fn named(value: &serde_json::Value) -> String {
    let text = |key: &str| {
        value
            .get(key)
            .and_then(|v| v.as_str())
            .map(|s| s.chars().take(70).collect::<String>())
    };
    match (text("module"), text("machine")) {
        (Some(module), Some(machine)) => format!(" ({module:?}@{machine:?})"),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"{
      "modules": [
        { "module": "postgres", "machine": "db-1", "provides": ["postgres-database"] },
        { "module": "forge", "machine": "app-1",
          "requires": [ { "provision": "postgres-database", "from": "postgres@db-1" } ] }
      ]
    }"#;

    fn id(text: &str) -> ModuleId {
        ModuleId::parse(text).unwrap()
    }

    #[test]
    fn the_design_example_parses() {
        let parsed = parse(GOOD).unwrap();
        assert!(parsed.refused.is_empty(), "{:?}", parsed.refused);
        let d = parsed.declaration;
        assert_eq!(d.modules.len(), 2);
        assert_eq!(d.modules[1].requires[0].from, id("postgres@db-1"));
        assert!(d.is_assigned("postgres", "db-1"));
        assert!(!d.is_assigned("postgres", "db-2"));
        assert!(d.receives_contributions(&id("postgres@db-1")));
        assert!(!d.receives_contributions(&id("forge@app-1")));
        assert!(!d.receives_contributions(&id("ghost@app-1")));
    }

    #[test]
    fn a_machine_the_declaration_does_not_name_is_an_error_naming_those_it_does() {
        let d = parse(GOOD).unwrap().declaration;
        assert_eq!(d.check_machine("app-1"), Ok(()));
        assert_eq!(d.check_machine("db-1"), Ok(()));
        let error = d.check_machine("app1").unwrap_err();
        assert_eq!(
            error.to_string(),
            "the declaration names no machine app1 (it names: app-1, db-1)"
        );
        let empty = Declaration::default();
        assert_eq!(
            empty.check_machine("app-1").unwrap_err().to_string(),
            "the declaration names no machine app-1 (it names none)"
        );
        let many: Vec<String> = (0..12)
            .map(|i| format!(r#"{{"module":"m","machine":"h-{i:02}"}}"#))
            .collect();
        let many = parse(&format!(r#"{{"modules":[{}]}}"#, many.join(",")))
            .unwrap()
            .declaration;
        assert_eq!(
            many.check_machine("x").unwrap_err().to_string(),
            "the declaration names no machine x (it names: h-00, h-01, h-02, h-03, h-04, h-05, \
             h-06, h-07, h-08, h-09, … (12 in all))"
        );
    }

    #[test]
    fn bad_entries_are_refused_by_name_and_the_others_go_on() {
        let cases: &[(&str, &str, &str)] = &[
            (
                r#"{"module":"Bad","machine":"m"}"#,
                "modules[0] (\"Bad\"@\"m\")",
                "module:",
            ),
            (
                r#"{"module":"a","machine":"m.x"}"#,
                "modules[0] (\"a\"@\"m.x\")",
                "machine:",
            ),
            (r#"{"machine":"m"}"#, "modules[0]", "missing field `module`"),
            (
                r#"{"module":"a","machine":"m","provide":[]}"#,
                "modules[0]",
                "unknown field",
            ),
            (
                r#"{"module":"a","machine":"m","provides":["a b"]}"#,
                "modules[0]",
                "provides[0]",
            ),
            (r#"17"#, "modules[0]", "invalid type"),
        ];
        for (entry, label, reason) in cases {
            let text = format!(
                r#"{{"modules":[{entry},{{"module":"ok","machine":"m","provides":["p"]}}]}}"#
            );
            let parsed = parse(&text).unwrap();
            assert_eq!(parsed.refused.len(), 1, "{entry}");
            let error = parsed.refused[0].to_string();
            assert!(error.starts_with(label), "{entry}: {error}");
            assert!(error.contains(reason), "{entry}: {error}");
            assert_eq!(parsed.declaration.modules.len(), 1, "{entry}");
            assert_eq!(parsed.declaration.modules[0].id, id("ok@m"));
        }
    }

    #[test]
    fn requirements_must_name_a_declared_provider_of_the_provision() {
        let text = r#"{"modules":[
          {"module":"postgres","machine":"db-1","provides":["postgres-database"]},
          {"module":"forge","machine":"app-1","requires":[
            {"provision":"postgres-database","from":"postgres@db-1"},
            {"provision":"postgres-database"},
            {"provision":"postgres-database","from":"postgres@db-2"},
            {"provision":"oidc-client","from":"postgres@db-1"},
            {"provision":"postgres-database","from":"postgres"}
          ]}
        ]}"#;
        let parsed = parse(text).unwrap();
        let errors: Vec<String> = parsed.refused.iter().map(|e| e.to_string()).collect();
        assert_eq!(errors.len(), 4, "{errors:?}");
        assert!(errors[0].starts_with("modules[1] (forge@app-1) requires[1]: missing field `from`"));
        assert!(errors[1].contains("requires[2]: from: postgres@db-2 is not a declared module"));
        assert!(errors[2].contains("requires[3]: from: postgres@db-1 does not provide oidc-client"));
        assert!(errors[3].contains("requires[4]: from: \"postgres\" is not of the form"));
        assert_eq!(parsed.declaration.modules[1].requires.len(), 1);
    }

    #[test]
    fn a_module_declared_twice_keeps_the_first() {
        let text = r#"{"modules":[
          {"module":"a","machine":"m","provides":["p"]},
          {"module":"a","machine":"m"}
        ]}"#;
        let parsed = parse(text).unwrap();
        assert_eq!(parsed.declaration.modules.len(), 1);
        assert_eq!(parsed.declaration.modules[0].provides.len(), 1);
        assert!(parsed.refused[0].to_string().contains("more than once"));
    }

    #[test]
    fn a_provider_nobody_requires_from_still_receives_contributions() {
        let text = r#"{"modules":[{"module":"a","machine":"m","provides":["p"]}]}"#;
        let d = parse(text).unwrap().declaration;
        assert!(d.receives_contributions(&id("a@m")));
    }

    #[test]
    fn whole_file_errors() {
        for bad in ["", "[]", "{}", r#"{"modules":{}}"#, "not json"] {
            assert!(parse(bad).is_err(), "{bad}");
        }
        let missing = load(Path::new("/nonexistent/declaration.json")).unwrap_err();
        assert!(missing
            .to_string()
            .contains("/nonexistent/declaration.json"));
    }
}
