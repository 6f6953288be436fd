//! The grants file (docs/contracts/grants.md): JSON, re-read every check. A file
//! that cannot be read or parsed is an error naming the file, and the last
//! good list is kept; a bad entry is refused alone, with an error naming it,
//! and the last good version of the same grant (when its consumer,
//! provision and provider can still be read) is kept.

use std::path::{Path, PathBuf};

use mesh_listfile::entries::{Entries, Repeated};
pub use mesh_listfile::EntryError;
use mesh_listfile::{LastGood, ListFile};
use mesh_protocol::event::RefusedContribution;
use mesh_protocol::Name;
use serde::Deserialize;
use serde_json::Value;

/// Where a consumer dials from.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Position {
    /// A network namespace file (`/run/netns/NAME`, `/proc/PID/ns/net`).
    Netns(PathBuf),
    /// A container, its namespace found through the container runtime.
    Container(String),
}

/// One grant: what the mesh wrote on this machine so `consumer` can reach
/// `from`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Grant {
    /// The consumer it was given to.
    pub consumer: Name,
    /// The provision.
    pub provision: String,
    /// The provider, `module@machine`.
    pub from: String,
    /// The address to dial.
    pub address: String,
    /// The port; `None` for a file or secret grant (never dialled).
    pub port: Option<u16>,
    /// The role or client it grants, if any (not used by the check).
    pub r#as: Option<String>,
    /// Where the consumer dials from.
    pub position: Position,
}

/// What identifies a grant across reads: (consumer, provision, from).
pub type GrantKey = (Name, String, String);

impl Grant {
    /// Its key.
    pub fn key(&self) -> GrantKey {
        (
            self.consumer.clone(),
            self.provision.clone(),
            self.from.clone(),
        )
    }
}

/// The grants of one machine.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MachineGrants {
    /// The machine they are on.
    pub machine: Name,
    /// The grants, in file order.
    pub grants: Vec<Grant>,
    /// The keys of the entries refused that could be read whole: their
    /// last good versions are kept ([`GrantsSource`]).
    pub refused: Vec<GrantKey>,
    /// Every entry refused, in file order: what the agent says of them
    /// (`grant.read`).
    pub refused_entries: Vec<RefusedContribution>,
}

/// The grants file could not be used; logged, the last good list is kept.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    /// The file is not JSON of the grants file's shape.
    #[error("grants file {path} cannot be parsed: {reason}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
}

#[derive(Deserialize)]
struct RawFile {
    machine: String,
    grants: Vec<Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawGrant {
    consumer: String,
    provision: String,
    from: String,
    address: String,
    port: Option<u16>,
    #[serde(default, rename = "as")]
    r#as: Option<String>,
    #[serde(default)]
    netns: Option<PathBuf>,
    #[serde(default)]
    container: Option<String>,
}

/// What names a grants entry before it is parsed: ` (consumer "forge")`
/// when its consumer can be read, and its key when it can be read whole.
struct Label {
    who: String,
    consumer: Option<Name>,
    key: Option<GrantKey>,
}

impl Label {
    fn of(value: &Value) -> Label {
        let consumer = value.get("consumer").and_then(Value::as_str);
        let key = (|| {
            Some((
                Name::parse(consumer?).ok()?,
                value.get("provision")?.as_str()?.to_owned(),
                value.get("from")?.as_str()?.to_owned(),
            ))
        })();
        Label {
            consumer: consumer.and_then(|c| Name::parse(c).ok()),
            who: consumer
                .map(|c| format!(" (consumer {:?})", c.chars().take(64).collect::<String>()))
                .unwrap_or_default(),
            key,
        }
    }
}

/// Parses the text of a grants file read from `path`: the grants, and the
/// entries refused (in file order).
///
/// # Errors
/// [`FileError::Parse`] when the text is not a grants file at all.
pub fn parse(path: &Path, text: &str) -> Result<(MachineGrants, Vec<EntryError>), FileError> {
    let parse_error = |reason: String| FileError::Parse {
        path: path.to_owned(),
        reason,
    };
    let raw: RawFile = serde_json::from_str(text).map_err(|e| parse_error(e.to_string()))?;
    let machine = Name::parse(&raw.machine).map_err(|e| parse_error(format!("machine: {e}")))?;
    let mut entries = Entries::parse(raw.grants, Label::of, |value| entry(&value));
    // Two entries for one grant: both refused, neither silently wins.
    entries.refuse_repeated(
        Repeated::NoneKept,
        |e| e.parsed.as_ref().ok().map(Grant::key),
        |_, (_, provision, from)| {
            format!("listed more than once for provision {provision:?} from {from:?}")
        },
    );
    let (kept, refused) = entries.split();
    let keys = refused.iter().filter_map(|r| r.label.key.clone()).collect();
    let refused_entries = refused
        .iter()
        .map(|r| RefusedContribution {
            index: u64::try_from(r.index).unwrap_or(u64::MAX),
            consumer: r.label.consumer.clone(),
            reason: r.reason.clone(),
        })
        .collect();
    let refused = refused
        .into_iter()
        .map(|r| EntryError::at("grants", r.index, r.label.who, r.reason))
        .collect();
    let grants = kept.into_iter().map(|k| k.value).collect();
    Ok((
        MachineGrants {
            machine,
            grants,
            refused: keys,
            refused_entries,
        },
        refused,
    ))
}

fn entry(value: &Value) -> Result<Grant, String> {
    let raw = RawGrant::deserialize(value).map_err(|e| e.to_string())?;
    let consumer = Name::parse(&raw.consumer).map_err(|e| format!("consumer: {e}"))?;
    if raw.provision.is_empty() || raw.from.is_empty() || raw.address.is_empty() {
        return Err("provision, from and address must not be empty".into());
    }
    if raw.port == Some(0) {
        return Err("port 0 cannot be dialled".into());
    }
    let position = match (raw.netns, raw.container) {
        (Some(path), None) if path.is_absolute() => Position::Netns(path),
        (Some(path), None) => {
            return Err(format!("netns {} is not an absolute path", path.display()))
        }
        (None, Some(name)) if !name.is_empty() && !name.starts_with('-') => {
            Position::Container(name)
        }
        (None, Some(_)) => return Err("container must be a container name".into()),
        _ => return Err("give exactly one of netns and container".into()),
    };
    Ok(Grant {
        consumer,
        provision: raw.provision,
        from: raw.from,
        address: raw.address,
        port: raw.port,
        r#as: raw.r#as,
        position,
    })
}

/// The grants file, re-read on every check, with the last good list (and a
/// refused grant's last good version) kept.
pub type GrantsSource = LastGood<MachineGrants>;

impl ListFile for MachineGrants {
    const KIND: &'static str = "grants file";

    fn parse(path: &Path, text: &str) -> Result<mesh_listfile::ParsedList<Self>, String> {
        let (list, refused) = parse(path, text).map_err(|e| e.to_string())?;
        Ok(mesh_listfile::ParsedList { list, refused })
    }

    fn keep_last_good(&mut self, last_good: &Self) {
        for key in &self.refused {
            let kept = last_good.grants.iter().find(|g| &g.key() == key);
            if let Some(kept) = kept {
                if !self.grants.iter().any(|g| g.key() == *key) {
                    self.grants.push(kept.clone());
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    const GOOD: &str = r#"{ "machine": "app-1", "grants": [
        { "consumer": "forge", "provision": "postgres-database", "from": "postgres@db-1",
          "address": "10.10.0.1", "port": 6852, "as": "forge", "netns": "/run/netns/forge" },
        { "consumer": "wiki", "provision": "secret", "from": "vault@db-1",
          "address": "db-1", "port": null, "container": "wiki" } ] }"#;

    #[test]
    fn the_design_example_parses() {
        let (grants, refused) = parse(Path::new("g.json"), GOOD).unwrap();
        assert!(refused.is_empty(), "{refused:?}");
        assert_eq!(grants.machine.as_str(), "app-1");
        assert_eq!(grants.grants.len(), 2);
        assert_eq!(grants.grants[0].port, Some(6852));
        assert_eq!(
            grants.grants[0].position,
            Position::Netns("/run/netns/forge".into())
        );
        assert_eq!(grants.grants[1].port, None);
        assert_eq!(
            grants.grants[1].position,
            Position::Container("wiki".into())
        );
    }

    #[test]
    fn a_bad_entry_is_refused_alone_and_named() {
        let cases = [
            (
                r#"{"consumer":"Bad Name","provision":"p","from":"a@b","address":"x","port":1,"netns":"/n"}"#,
                "grants[1] (consumer \"Bad Name\"): consumer",
            ),
            (
                r#"{"consumer":"c","provision":"p","from":"a@b","address":"x","port":70000,"netns":"/n"}"#,
                "grants[1] (consumer \"c\"): invalid value",
            ),
            (
                r#"{"consumer":"c","provision":"p","from":"a@b","address":"x","port":1}"#,
                "give exactly one of netns and container",
            ),
            (
                r#"{"consumer":"c","provision":"p","from":"a@b","address":"x","port":1,"netns":"/n","container":"c"}"#,
                "give exactly one",
            ),
            (
                r#"{"consumer":"c","provision":"p","from":"a@b","address":"x","port":1,"netns":"rel"}"#,
                "not an absolute path",
            ),
            (r#"{"provision":"p"}"#, "grants[1]: missing field"),
        ];
        for (bad, says) in cases {
            let text = format!(
                r#"{{"machine":"app-1","grants":[{},{bad}]}}"#,
                &GOOD[GOOD.find("{ \"consumer\"").unwrap()..GOOD.find("},").unwrap() + 1]
            );
            let (grants, refused) = parse(Path::new("/etc/mesh/grants.json"), &text).unwrap();
            assert_eq!(grants.grants.len(), 1, "{bad}");
            assert_eq!(refused.len(), 1, "{bad}");
            let message = refused[0].to_string();
            assert!(message.starts_with("grants[1]"), "{message}");
            assert!(message.contains(says), "{message} lacks {says}");
        }
    }

    #[test]
    fn a_file_that_cannot_be_parsed_names_the_file() {
        for bad in [
            "not json",
            r#"{"grants":[]}"#,
            r#"{"machine":"A","grants":[]}"#,
        ] {
            let error = parse(Path::new("/etc/mesh/grants.json"), bad).unwrap_err();
            assert!(
                error
                    .to_string()
                    .starts_with("grants file /etc/mesh/grants.json cannot be parsed"),
                "{error}"
            );
        }
    }

    #[test]
    fn two_entries_for_one_grant_are_both_refused() {
        let one =
            r#"{"consumer":"c","provision":"p","from":"a@b","address":"x","port":1,"netns":"/n"}"#;
        let text = format!(r#"{{"machine":"m","grants":[{one},{one}]}}"#);
        let (grants, refused) = parse(Path::new("g"), &text).unwrap();
        assert!(grants.grants.is_empty());
        assert_eq!(refused.len(), 2);
        assert!(refused[0].to_string().contains("listed more than once"));
    }

    #[test]
    fn entries_listed_twice_are_named_by_their_own_places_in_list_order() {
        let one =
            r#"{"consumer":"c","provision":"p","from":"a@b","address":"x","port":1,"netns":"/n"}"#;
        let text = format!(r#"{{"machine":"m","grants":[{one},{{"provision":"p"}},{one}]}}"#);
        let (grants, refused) = parse(Path::new("g"), &text).unwrap();
        assert!(grants.grants.is_empty());
        let messages: Vec<String> = refused.iter().map(ToString::to_string).collect();
        let twice = "listed more than once for provision \"p\" from \"a@b\"";
        assert_eq!(
            messages,
            [
                format!("grants[0] (consumer \"c\"): {twice}"),
                "grants[1]: missing field `consumer`".to_owned(),
                format!("grants[2] (consumer \"c\"): {twice}"),
            ]
        );
    }

    #[test]
    fn the_last_good_list_and_entry_are_kept() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("grants.json");
        let mut source = GrantsSource::new(&path);
        assert!(source.load().is_none());
        assert!(
            source.problems()[0].contains("cannot be read"),
            "{:?}",
            source.problems()
        );
        std::fs::write(&path, GOOD).unwrap();
        assert_eq!(source.load().unwrap().list.grants.len(), 2);
        std::fs::write(&path, "{ broken").unwrap();
        assert_eq!(
            source.load().unwrap().list.grants.len(),
            2,
            "last good list kept"
        );
        let errors = source.problems();
        assert!(
            errors[0].contains(&path.display().to_string()),
            "{errors:?}"
        );
        // The forge entry breaks (port out of range): its last good version stays.
        std::fs::write(&path, GOOD.replace("6852", "99999")).unwrap();
        let kept = Arc::clone(source.load().unwrap().list);
        let errors = source.problems();
        assert_eq!(errors.len(), 1);
        assert!(
            errors[0].contains("grants[0] (consumer \"forge\"): "),
            "{errors:?}"
        );
        assert_eq!(kept.grants.len(), 2);
        assert!(kept.grants.iter().any(|g| g.port == Some(6852)));
    }
}
