//! A module on a machine, written `module@machine`.

use std::fmt;

use mesh_sdk::{Name, NameError};

/// A module on a machine, written `module@machine`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
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
}
