//! A module on a machine, written `module@machine`: a module's bus user,
//! a provider in the declaration, a provider in status.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::name::{Name, NameError};

/// A module on a machine, written `module@machine` (in JSON too: a string).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct ModuleId {
    /// The module.
    pub module: Name,
    /// The machine it runs on.
    pub machine: Name,
}

/// Text that is not a valid `module@machine`. The text is quoted in a
/// bounded copy (140 characters), so a huge argument makes a short error.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ModuleIdError {
    /// There is no `@`.
    #[error("{shown:?} is not of the form module@machine")]
    NoAt {
        /// The text, cut.
        shown: String,
    },
    /// The part before the `@` is not a valid name.
    #[error("module of {shown:?}: {source}")]
    Module {
        /// The text, cut.
        shown: String,
        /// Why.
        #[source]
        source: NameError,
    },
    /// The part after the `@` is not a valid name.
    #[error("machine of {shown:?}: {source}")]
    Machine {
        /// The text, cut.
        shown: String,
        /// Why.
        #[source]
        source: NameError,
    },
}

impl ModuleId {
    /// A module id from its parts.
    pub fn new(module: Name, machine: Name) -> ModuleId {
        ModuleId { module, machine }
    }

    /// Parses `module@machine`, both parts valid names.
    ///
    /// # Errors
    /// [`ModuleIdError`] saying which part is wrong.
    pub fn parse(text: &str) -> Result<ModuleId, ModuleIdError> {
        let shown = || text.chars().take(140).collect::<String>();
        let Some((module, machine)) = text.split_once('@') else {
            return Err(ModuleIdError::NoAt { shown: shown() });
        };
        let module = Name::parse(module).map_err(|source| ModuleIdError::Module {
            shown: shown(),
            source,
        })?;
        let machine = Name::parse(machine).map_err(|source| ModuleIdError::Machine {
            shown: shown(),
            source,
        })?;
        Ok(ModuleId { module, machine })
    }
}

impl fmt::Display for ModuleId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}@{}", self.module, self.machine)
    }
}

impl std::str::FromStr for ModuleId {
    type Err = ModuleIdError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ModuleId::parse(s)
    }
}

impl TryFrom<String> for ModuleId {
    type Error = ModuleIdError;
    fn try_from(value: String) -> Result<Self, Self::Error> {
        ModuleId::parse(&value)
    }
}

impl From<ModuleId> for String {
    fn from(value: ModuleId) -> Self {
        value.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn module_ids_parse_and_print() {
        let id = ModuleId::parse("postgres@db-1").unwrap();
        assert_eq!(id.to_string(), "postgres@db-1");
        let cases = [
            ("postgres", "is not of the form module@machine"),
            ("@db", "module of"),
            ("pg@", "machine of"),
            ("Pg@db", "module of"),
            ("pg@db@x", "machine of"),
            ("pg@d b", "machine of"),
        ];
        for (bad, says) in cases {
            let error = ModuleId::parse(bad).unwrap_err().to_string();
            assert!(error.contains(says), "{bad}: {error}");
        }
        let long = format!("{}@x", "a".repeat(10_000));
        assert!(ModuleId::parse(&long).unwrap_err().to_string().len() < 400);
    }

    #[test]
    fn json_is_the_module_at_machine_string() {
        let id = ModuleId::parse("postgres@db-1").unwrap();
        assert_eq!(serde_json::to_string(&id).unwrap(), r#""postgres@db-1""#);
        assert_eq!(
            serde_json::from_str::<ModuleId>(r#""postgres@db-1""#).unwrap(),
            id
        );
        for bad in [
            r#""postgres""#,
            r#""Pg@db""#,
            r#"{"module":"postgres","machine":"db-1"}"#,
        ] {
            assert!(serde_json::from_str::<ModuleId>(bad).is_err(), "{bad}");
        }
    }
}
