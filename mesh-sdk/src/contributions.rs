//! The contributions file: who this provider serves.
//!
//! Parsed entry by entry: an entry with a name that is not a valid token is
//! refused with an error naming it, and the others go on. A file that cannot
//! be read or parsed as a whole keeps the last good list ([`Source`], a
//! [`LastGood`] reader).
//!
//! A refused entry whose consumer name can still be read keeps that
//! consumer listed: its last good entry is served, and with none it is
//! neither served nor retired ([`Contributions::held_back`]). Two entries
//! for one consumer are both refused that way: neither silently wins (a typo
//! must never make a consumer look withdrawn and get it retired, nor hand
//! one consumer's secret to another).

use std::path::{Path, PathBuf};

use mesh_listfile::entries::{Entries, Repeated};
pub(crate) use mesh_listfile::EntryError;
use mesh_listfile::{LastGood, ListFile};
use mesh_protocol::event::{ContributionsRead, RefusedContribution, MAX_REFUSED_LISTED};
use mesh_protocol::{ModuleId, Name, NameError};
use mesh_runtime::redact::redact;
use serde::Deserialize;

/// The provider block of a contributions file, `{"module": ..., "machine": ...}`.
/// A malformed one is reported as other than what was expected in the message
/// it always had (the block was a type `ProviderId`).
#[derive(Deserialize)]
#[serde(expecting = "struct ProviderId")]
struct ProviderBlock {
    module: Name,
    machine: Name,
}

/// One consumer the provider is asked to serve.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Consumer {
    /// The provider instance the entry was given to (the file's `provider`
    /// block, `module@machine`): what the provider marks the consumer's
    /// provision with, so that another instance on the same backend never
    /// lists it as its own ([`Provisioner`](crate::Provisioner), "Only its own").
    pub provider: ModuleId,
    /// The consumer module's name (also the provision's name at the backend).
    pub name: Name,
    /// The machine the consumer runs on.
    pub machine: Name,
    /// What is provided, e.g. `postgres-database`.
    pub provision: String,
    /// The minted secret's file, resolved against the contributions file's folder.
    pub secret_file: PathBuf,
    /// Provider-specific options, as given.
    pub options: serde_json::Value,
}

// Public through `mesh_sdk::internals` (feature `internals`) only.
#[cfg_attr(not(feature = "internals"), allow(unreachable_pub))]
/// A parsed contributions file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Contributions {
    /// Who the file is for.
    pub provider: ModuleId,
    /// The consumers to serve: the valid entries in file order, then the
    /// last good entries of consumers whose entry was refused this time.
    pub consumers: Vec<Consumer>,
    /// Consumers listed by an entry that was refused (a bad field, or two
    /// entries) with no last good entry: still listed, so never withdrawn
    /// or retired, but not served.
    pub held_back: Vec<Name>,
    /// The entries refused at the read that gave this list, in file order.
    pub refused: Vec<Refusal>,
}

/// An entry of a contributions file that was refused: where it is, its
/// consumer when that could be read as a name, and why.
// Public through `mesh_sdk::internals` (feature `internals`) only.
#[cfg_attr(not(feature = "internals"), allow(unreachable_pub))]
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    /// Its place in `consumers`, from 0.
    pub index: usize,
    /// Its consumer, when its `consumer` is a valid name.
    pub consumer: Option<Name>,
    /// Why it was refused.
    pub reason: String,
}

// Public through `mesh_sdk::internals` (feature `internals`) only.
#[cfg_attr(not(feature = "internals"), allow(unreachable_pub))]
impl Contributions {
    /// Whether `name` is listed: served, or held back.
    pub fn lists(&self, name: &Name) -> bool {
        self.consumers.iter().any(|c| &c.name == name) || self.held_back.contains(name)
    }

    /// Every listed name: served and held back.
    pub fn listed(&self) -> impl Iterator<Item = &Name> {
        self.consumers
            .iter()
            .map(|c| &c.name)
            .chain(self.held_back.iter())
    }
}

/// The file as a whole could not be used; the last good list is kept.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ContributionsError {
    /// The file is not the expected JSON.
    #[error("contributions file {path} is malformed: {reason}")]
    Malformed {
        /// The file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
}

/// The result of parsing: the good entries and the refused ones.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Parsed {
    /// Provider and valid consumers.
    pub contributions: Contributions,
    /// Entries refused, each naming itself.
    pub refused: Vec<EntryError>,
}

#[derive(Deserialize)]
struct RawFile {
    provider: serde_json::Value,
    consumers: Vec<serde_json::Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawEntry {
    consumer: String,
    machine: String,
    provision: String,
    secret_file: PathBuf,
    #[serde(default)]
    options: serde_json::Value,
}

/// Parses a contributions file's text; relative secret paths resolve against `base_dir`.
///
/// # Errors
/// [`ContributionsError::Malformed`] when the text is not JSON of the expected
/// shape or the provider block is invalid. Invalid consumer entries are not
/// errors: they are returned in [`Parsed::refused`].
pub(crate) fn parse(text: &str, path: &Path) -> Result<Parsed, ContributionsError> {
    let malformed = |reason: String| ContributionsError::Malformed {
        path: path.into(),
        reason,
    };
    let raw: RawFile = serde_json::from_str(text).map_err(|e| malformed(e.to_string()))?;
    let provider: ProviderBlock =
        serde_json::from_value(raw.provider).map_err(|e| malformed(format!("provider: {e}")))?;
    let provider = ModuleId::new(provider.module, provider.machine);
    let base_dir = path.parent().unwrap_or(Path::new("."));
    let mut entries = Entries::parse(raw.consumers, Label::of, |value| {
        entry(value, &provider, base_dir)
    });
    // Two entries for one consumer: none of them is used, whatever else is
    // wrong with them.
    entries.refuse_repeated(
        Repeated::NoneKept,
        |e| e.label.readable.clone(),
        |_, name| format!("consumer {name} is listed more than once; none of its entries is used"),
    );
    let (kept, refused) = entries.split();
    let consumers = kept.into_iter().map(|k| k.value).collect();
    let mut held_back: Vec<Name> = Vec::new();
    let mut refusals = Vec::with_capacity(refused.len());
    let refused = refused
        .into_iter()
        .map(|r| {
            if let Some(name) = &r.label.readable {
                if !held_back.contains(name) {
                    held_back.push(name.clone());
                }
            }
            refusals.push(Refusal {
                index: r.index,
                consumer: r.label.readable,
                reason: r.reason.clone(),
            });
            EntryError::at("consumers", r.index, r.label.named, r.reason)
        })
        .collect();
    Ok(Parsed {
        contributions: Contributions {
            provider,
            consumers,
            held_back,
            refused: refusals,
        },
        refused,
    })
}

/// What names a consumer entry before it is parsed: ` ("forge")` when its
/// `consumer` is a string, and that name when it is a valid one.
struct Label {
    named: String,
    readable: Option<Name>,
}

impl Label {
    fn of(value: &serde_json::Value) -> Label {
        let consumer = value.get("consumer").and_then(|c| c.as_str());
        Label {
            named: consumer
                .map(|c| format!(" ({:?})", mesh_runtime::redact::cut(c, 80)))
                .unwrap_or_default(),
            readable: consumer.and_then(|c| Name::parse(c).ok()),
        }
    }
}

fn entry(
    value: serde_json::Value,
    provider: &ModuleId,
    base_dir: &Path,
) -> Result<Consumer, String> {
    let raw: RawEntry = serde_json::from_value(value).map_err(|e| e.to_string())?;
    let name =
        |field: &str, text: &str| Name::parse(text).map_err(|e: NameError| format!("{field}: {e}"));
    let consumer = name("consumer", &raw.consumer)?;
    let machine = name("machine", &raw.machine)?;
    if raw.provision.trim().is_empty() {
        return Err("provision: it is empty".into());
    }
    if raw.secret_file.as_os_str().is_empty() {
        return Err("secret_file: it is empty".into());
    }
    Ok(Consumer {
        provider: provider.clone(),
        name: consumer,
        machine,
        provision: raw.provision,
        secret_file: base_dir.join(raw.secret_file),
        options: raw.options,
    })
}

/// What an `alive` says of the last read ([`ContributionsRead`]): the file's
/// problem when it could not be taken (`file_problem`), and the entries
/// refused in the list served (`served`; none before a first good file).
/// Every text has `secrets` removed and is cut as errors are; at most
/// [`MAX_REFUSED_LISTED`](mesh_protocol::event::MAX_REFUSED_LISTED) entries
/// are listed, the rest counted.
pub(crate) fn read_said<S: AsRef<str>>(
    file_problem: Option<&str>,
    served: Option<&Contributions>,
    secrets: &[S],
) -> ContributionsRead {
    ContributionsRead {
        readable: file_problem.is_none(),
        problem: file_problem.map(|p| redact(p, secrets)),
        refused: served
            .map(|c| c.refused.as_slice())
            .unwrap_or_default()
            .iter()
            .take(MAX_REFUSED_LISTED + 1)
            .map(|r| RefusedContribution {
                index: u64::try_from(r.index).unwrap_or(u64::MAX),
                consumer: r.consumer.clone(),
                reason: redact(&r.reason, secrets),
            })
            .collect(),
        more: served.map_or(0, |c| {
            u64::try_from(c.refused.len().saturating_sub(MAX_REFUSED_LISTED + 1))
                .unwrap_or(u64::MAX)
        }),
    }
    .capped()
}

/// Consumers held back in `new` whose entry was good in `good` are served
/// with that last good entry.
fn serve_last_good(new: &mut Contributions, good: &Contributions) {
    new.held_back.retain(
        |name| match good.consumers.iter().find(|c| &c.name == name) {
            Some(last) => {
                new.consumers.push(last.clone());
                false
            }
            None => true,
        },
    );
}

/// Re-reads the contributions file every pass, keeping the last good list
/// (and a refused entry's last good version). A file that names another
/// provider is not taken.
// Public through `mesh_sdk::internals` (feature `internals`) only.
#[cfg_attr(not(feature = "internals"), allow(unreachable_pub))]
pub type Source = LastGood<Contributions>;

impl ListFile for Contributions {
    const KIND: &'static str = "contributions file";

    fn parse(path: &Path, text: &str) -> Result<mesh_listfile::ParsedList<Self>, String> {
        let parsed = parse(text, path).map_err(|e| e.to_string())?;
        Ok(mesh_listfile::ParsedList {
            list: parsed.contributions,
            refused: parsed.refused,
        })
    }

    fn keep_last_good(&mut self, last_good: &Self) {
        serve_last_good(self, last_good);
    }

    fn refuses_to_replace(&self, last_good: &Self) -> Option<String> {
        (self.provider != last_good.provider).then(|| {
            format!(
                "now names provider {} but this provider is {}",
                self.provider, last_good.provider
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"{
      "provider": { "module": "postgres", "machine": "db-1" },
      "consumers": [
        { "consumer": "forge", "machine": "app-1", "provision": "postgres-database",
          "secret_file": "secrets/forge", "options": {"x": 1} },
        { "consumer": "wiki", "machine": "app-2", "provision": "postgres-database",
          "secret_file": "/abs/wiki" }
      ]
    }"#;

    #[test]
    fn parses_and_resolves_relative_secret_paths() {
        let parsed = parse(GOOD, Path::new("/etc/mesh/contrib.json")).unwrap();
        assert!(parsed.refused.is_empty());
        let c = &parsed.contributions;
        assert_eq!(c.provider.to_string(), "postgres@db-1");
        assert_eq!(c.consumers.len(), 2);
        assert_eq!(
            c.consumers[0].secret_file,
            Path::new("/etc/mesh/secrets/forge")
        );
        assert_eq!(c.consumers[0].options["x"], 1);
        assert_eq!(c.consumers[1].secret_file, Path::new("/abs/wiki"));
        assert_eq!(c.consumers[1].options, serde_json::Value::Null);
    }

    #[test]
    fn invalid_entries_are_refused_by_name_and_the_others_go_on() {
        let text = r#"{
          "provider": { "module": "postgres", "machine": "db-1" },
          "consumers": [
            { "consumer": "Bad Name", "machine": "app-1", "provision": "p", "secret_file": "s" },
            { "consumer": "good", "machine": "app-1", "provision": "p", "secret_file": "s" },
            { "consumer": "x.y", "machine": "app-1", "provision": "p", "secret_file": "s" },
            { "consumer": "other", "machine": "app 1", "provision": "p", "secret_file": "s" },
            { "consumer": "good", "machine": "app-2", "provision": "p", "secret_file": "s" },
            { "machine": "app-1", "provision": "p", "secret_file": "s" },
            { "consumer": "noprov", "machine": "app-1", "provision": "", "secret_file": "s" },
            "not an object"
          ]
        }"#;
        let parsed = parse(text, Path::new("c.json")).unwrap();
        let names: Vec<&str> = parsed
            .contributions
            .consumers
            .iter()
            .map(|c| c.name.as_str())
            .collect();
        // Two entries for `good`: neither wins.
        assert_eq!(names, Vec::<&str>::new());
        let errors: Vec<String> = parsed.refused.iter().map(ToString::to_string).collect();
        assert_eq!(errors.len(), 8, "{errors:#?}");
        assert!(errors[0].starts_with(
            "consumers[0] (\"Bad Name\"): consumer: \"Bad Name\" is not a valid name"
        ));
        assert!(errors[1].starts_with(
            "consumers[1] (\"good\"): consumer good is listed more than once; none of its entries is used"
        ));
        assert!(errors[2].starts_with("consumers[2] (\"x.y\")"));
        assert!(errors[3].contains("machine: \"app 1\" is not a valid name"));
        assert!(errors[4].starts_with("consumers[4] (\"good\"): consumer good is listed more"));
        assert!(errors[5].contains("missing field `consumer`"));
        assert!(errors[6].contains("provision"));
        assert!(errors[7].starts_with("consumers[7]:"));
        // Whose name can be read stays listed, not served.
        let held: Vec<&str> = parsed
            .contributions
            .held_back
            .iter()
            .map(Name::as_str)
            .collect();
        assert_eq!(held, ["good", "other", "noprov"]);
        assert!(parsed.contributions.lists(&Name::parse("other").unwrap()));
        assert!(!parsed.contributions.lists(&Name::parse("nobody").unwrap()));
    }

    #[test]
    fn a_refused_entry_is_served_from_its_last_good_one() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.json");
        let file = |forge: &str| {
            format!(
                r#"{{"provider": {{"module": "postgres", "machine": "db-1"}}, "consumers": [
                  {forge},
                  {{"consumer": "wiki", "machine": "app-1", "provision": "p", "secret_file": "s"}}]}}"#
            )
        };
        let good =
            r#"{"consumer": "forge", "machine": "app-1", "provision": "p", "secret_file": "f"}"#;
        let typo =
            r#"{"consumer": "forge", "machine": "app-1", "provison": "p", "secret_file": "f"}"#;
        let mut source = Source::new(&path);
        // (file, served, held back)
        let steps: [(String, &[&str], &[&str]); 4] = [
            (file(typo), &["wiki"], &["forge"]),
            (file(good), &["forge", "wiki"], &[]),
            (file(typo), &["wiki", "forge"], &[]),
            (file(&format!("{good}, {good}")), &["wiki", "forge"], &[]),
        ];
        for (text, served, held) in steps {
            std::fs::write(&path, &text).unwrap();
            let loaded = source.load().unwrap();
            assert!(loaded.fresh);
            let c = loaded.list;
            let names: Vec<&str> = c.consumers.iter().map(|c| c.name.as_str()).collect();
            assert_eq!(names, served, "{text}");
            let back: Vec<&str> = c.held_back.iter().map(Name::as_str).collect();
            assert_eq!(back, held, "{text}");
        }
        // The entry served for forge is its last good one, file and all.
        let c = source.last_good().unwrap();
        let forge = c
            .consumers
            .iter()
            .find(|c| c.name.as_str() == "forge")
            .unwrap();
        assert_eq!(forge.secret_file, dir.path().join("f"));
    }

    #[test]
    fn what_alive_says_of_a_read_names_each_refused_entry_without_a_secret() {
        let text = r#"{
          "provider": { "module": "postgres", "machine": "db-1" },
          "consumers": [
            { "consumer": "forge", "machine": "app-1", "provision": "", "secret_file": "s" },
            { "consumer": "Bad Name", "machine": "app-1", "provision": "p", "secret_file": "s" },
            { "consumer": "wiki", "machine": "app-1", "provision": "p", "secret_file": "s" },
            { "consumer": "cms", "machine": "app-1", "provision": "p", "secret_file": "s", "hunter2": 1 }
          ]
        }"#;
        let parsed = parse(text, Path::new("c.json")).unwrap();
        let said = read_said(None, Some(&parsed.contributions), &["hunter2"]);
        assert!(said.readable);
        assert_eq!(said.problem, None);
        let entries: Vec<(u64, Option<&str>, &str)> = said
            .refused
            .iter()
            .map(|r| {
                (
                    r.index,
                    r.consumer.as_ref().map(Name::as_str),
                    r.reason.as_str(),
                )
            })
            .collect();
        assert_eq!(entries.len(), 3, "{entries:?}");
        assert_eq!(entries[0], (0, Some("forge"), "provision: it is empty"));
        assert_eq!(entries[1].0, 1);
        assert_eq!(entries[1].1, None, "not a name");
        assert_eq!(entries[2].0, 3);
        assert_eq!(entries[2].1, Some("cms"));
        assert!(
            entries[2].2.contains("unknown field `[redacted]`"),
            "{}",
            entries[2].2
        );
        // (file problem, list served, readable, entries listed, more)
        let many: String = (0..25)
            .map(|i| {
                format!(
                    r#"{{"consumer": "c{i}", "machine": "m", "provision": "", "secret_file": "s"}}"#
                )
            })
            .collect::<Vec<_>>()
            .join(",");
        let many =
            format!(r#"{{"provider": {{"module": "a", "machine": "b"}}, "consumers": [{many}]}}"#);
        let many = parse(&many, Path::new("c.json")).unwrap().contributions;
        let problem = "contributions file /c.json cannot be read: hunter2 denied";
        type Case<'a> = (Option<&'a str>, Option<&'a Contributions>, bool, usize, u64);
        let cases: [Case; 5] = [
            (None, None, true, 0, 0),
            (Some(problem), None, false, 0, 0),
            (Some(problem), Some(&parsed.contributions), false, 3, 0),
            (None, Some(&many), true, 20, 5),
            (
                None,
                Some(&parse(GOOD, Path::new("c.json")).unwrap().contributions),
                true,
                0,
                0,
            ),
        ];
        for (i, (problem, served, readable, listed, more)) in cases.into_iter().enumerate() {
            let said = read_said(problem, served, &["hunter2"]);
            assert_eq!(said.readable, readable, "case {i}");
            assert_eq!((said.refused.len(), said.more), (listed, more), "case {i}");
            if let Some(p) = &said.problem {
                assert_eq!(
                    p,
                    "contributions file /c.json cannot be read: [redacted] denied"
                );
            }
        }
    }

    #[test]
    fn a_bad_provider_block_is_malformed() {
        let text = r#"{"provider": {"module": "Post", "machine": "db-1"}, "consumers": []}"#;
        let err = parse(text, Path::new("c.json")).unwrap_err().to_string();
        assert!(
            err.contains("provider") && err.contains("\"Post\""),
            "{err}"
        );
        assert!(parse("{", Path::new("c.json")).is_err());
        assert!(parse(
            r#"{"provider": {"module":"a","machine":"b"}}"#,
            Path::new("c.json")
        )
        .is_err());
    }

    #[test]
    fn source_keeps_the_last_good_list() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.json");
        let mut source = Source::new(&path);
        assert!(source.load().is_none(), "nothing was ever good");
        std::fs::write(&path, GOOD).unwrap();
        let loaded = source.load().unwrap();
        assert!(loaded.fresh);
        assert_eq!(loaded.list.consumers.len(), 2);

        std::fs::write(&path, "{ broken").unwrap();
        let loaded = source.load().unwrap();
        assert!(!loaded.fresh);
        assert_eq!(loaded.list.consumers.len(), 2);

        std::fs::remove_file(&path).unwrap();
        let loaded = source.load().unwrap();
        assert!(!loaded.fresh);
        assert_eq!(loaded.list.consumers.len(), 2);

        let other = GOOD.replace("\"postgres\"", "\"identity\"");
        std::fs::write(&path, other).unwrap();
        let loaded = source.load().unwrap();
        assert!(!loaded.fresh, "a file for another provider is not taken");
        assert_eq!(loaded.list.provider.module.as_str(), "postgres");

        let one = r#"{"provider": { "module": "postgres", "machine": "db-1" }, "consumers": []}"#;
        std::fs::write(&path, one).unwrap();
        let loaded = source.load().unwrap();
        assert!(loaded.fresh);
        assert!(loaded.list.consumers.is_empty());
    }

    #[test]
    fn a_broken_file_is_said_and_the_good_text_again_is_taken_again() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.json");
        std::fs::write(&path, GOOD).unwrap();
        let mut source = Source::new(&path);
        source.load();
        assert!(source.problems().is_empty());
        std::fs::write(&path, "{ broken").unwrap();
        assert!(!source.load().unwrap().fresh);
        let said = source.problems();
        assert_eq!(said.len(), 1);
        assert!(
            said[0].contains("is malformed") && said[0].ends_with("; keeping the last good list"),
            "{said:?}"
        );
        // Back to the very same good text: taken, and nothing is wrong.
        std::fs::write(&path, GOOD).unwrap();
        assert!(source.load().unwrap().fresh);
        assert!(source.problems().is_empty());
    }

    #[test]
    fn a_bad_provider_block_is_said_as_before() {
        let cases = [
            (
                r#""x""#,
                r#"invalid type: string "x", expected struct ProviderId"#,
            ),
            ("null", "invalid type: null, expected struct ProviderId"),
            ("{}", "missing field `module`"),
            (r#"{"module":"a"}"#, "missing field `machine`"),
            (
                r#"{"module":1,"machine":"b"}"#,
                "invalid type: integer `1`, expected a string",
            ),
        ];
        for (block, says) in cases {
            let text = format!(r#"{{"provider": {block}, "consumers": []}}"#);
            let error = parse(&text, Path::new("/c.json")).unwrap_err().to_string();
            assert_eq!(
                error,
                format!("contributions file /c.json is malformed: provider: {says}")
            );
        }
        let text = r#"{"provider": {"module":"a","machine":"b","x":1}, "consumers": []}"#;
        let parsed = parse(text, Path::new("/c.json")).unwrap();
        assert_eq!(parsed.contributions.provider.to_string(), "a@b");
    }
}
