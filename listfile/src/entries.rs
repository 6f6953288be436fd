//! A JSON list parsed entry by entry: the contributions file's consumers,
//! the declaration's modules (and each module's requirements), the grants
//! file's grants. An entry that does not parse is refused alone, with the
//! reason, and the others go on; so is an entry listed more than once, by
//! the rule the list chooses ([`Repeated`]). The caller turns each refused
//! entry into an [`EntryError`](crate::EntryError), naming the entry by
//! what could be read of it ([`Entry::label`]) before it was parsed.
//!
//! ```
//! use mesh_listfile::entries::{Entries, Repeated};
//! use mesh_protocol::Name;
//!
//! let values: Vec<serde_json::Value> =
//!     serde_json::from_str(r#"["forge", "Bad Name", "wiki", "forge", 7]"#)?;
//! let mut entries = Entries::parse(
//!     values,
//!     |value| value.as_str().map(str::to_owned),
//!     |value| {
//!         let text = value.as_str().ok_or("not a string")?;
//!         Name::parse(text).map_err(|e| e.to_string())
//!     },
//! );
//! entries.refuse_repeated(
//!     Repeated::NoneKept,
//!     |entry| entry.label.clone(),
//!     |_, name| format!("{name:?} is listed more than once"),
//! );
//! let (kept, refused) = entries.split();
//! assert_eq!(kept.iter().map(|k| k.value.as_str()).collect::<Vec<_>>(), ["wiki"]);
//! let refused: Vec<(usize, &str)> =
//!     refused.iter().map(|r| (r.index, r.reason.as_str())).collect();
//! assert_eq!(refused[0].0, 0);
//! assert_eq!(refused[0].1, "\"forge\" is listed more than once");
//! assert!(refused[1].1.contains("is not a valid name"));
//! assert_eq!(refused[3], (4, "not a string"));
//! # Ok::<_, serde_json::Error>(())
//! ```

use std::collections::{HashMap, HashSet};
use std::hash::Hash;

use serde_json::Value;

/// One entry of a list: where it is, what could be read of it before it was
/// parsed, and the parsed entry or why it was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry<L, T> {
    /// Its place in the list, from 0.
    pub index: usize,
    /// What the caller read of its raw value to name it (its name, its key).
    pub label: L,
    /// The entry, or the reason it was refused.
    pub parsed: Result<T, String>,
}

/// A kept entry: where it was, its label, its value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Kept<L, T> {
    /// Its place in the list, from 0.
    pub index: usize,
    /// What was read of it before it was parsed.
    pub label: L,
    /// The parsed entry.
    pub value: T,
}

/// A refused entry: where it was, its label, why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RefusedEntry<L> {
    /// Its place in the list, from 0.
    pub index: usize,
    /// What was read of it before it was parsed.
    pub label: L,
    /// Why it was refused.
    pub reason: String,
}

/// Which of several entries sharing a key are kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Repeated {
    /// None: every entry of a repeated key is refused (neither silently
    /// wins), whether or not it parsed.
    NoneKept,
    /// The first in the list; the later ones are refused.
    FirstKept,
}

/// The entries of a list, in list order, each parsed alone.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entries<L, T> {
    entries: Vec<Entry<L, T>>,
}

impl<L, T> Entries<L, T> {
    /// Labels and parses each value of `values` alone: `label` reads what
    /// names it (it sees the raw value, whether or not it parses), `parse`
    /// makes the entry or says why not.
    pub fn parse(
        values: Vec<Value>,
        mut label: impl FnMut(&Value) -> L,
        mut parse: impl FnMut(Value) -> Result<T, String>,
    ) -> Entries<L, T> {
        let entries = values
            .into_iter()
            .enumerate()
            .map(|(index, value)| Entry {
                index,
                label: label(&value),
                parsed: parse(value),
            })
            .collect();
        Entries { entries }
    }

    /// Every entry, in list order.
    pub fn entries(&self) -> &[Entry<L, T>] {
        &self.entries
    }

    /// Refuses the entries whose key (`key`; `None`: the entry has none and
    /// is never repeated) another entry has too, as `rule` says, for the
    /// reason `reason` gives (it sees the entry and its key). An entry refused already keeps its own reason
    /// under [`Repeated::FirstKept`]; under [`Repeated::NoneKept`] the
    /// repetition is the reason given for every entry of the key.
    pub fn refuse_repeated<K: Hash + Eq>(
        &mut self,
        rule: Repeated,
        key: impl Fn(&Entry<L, T>) -> Option<K>,
        reason: impl Fn(&Entry<L, T>, &K) -> String,
    ) {
        let keys: Vec<Option<K>> = self.entries.iter().map(&key).collect();
        let mut count: HashMap<&K, usize> = HashMap::new();
        for k in keys.iter().flatten() {
            *count.entry(k).or_default() += 1;
        }
        let mut seen: HashSet<&K> = HashSet::new();
        for (entry, k) in self.entries.iter_mut().zip(&keys) {
            let Some(k) = k.as_ref().filter(|k| count[k] > 1) else {
                continue;
            };
            let first = seen.insert(k);
            let refused = match rule {
                Repeated::NoneKept => true,
                Repeated::FirstKept => !first && entry.parsed.is_ok(),
            };
            if refused {
                entry.parsed = Err(reason(entry, k));
            }
        }
    }

    /// Takes each entry kept so far through the next check, which keeps it
    /// (turned into a `U`) or refuses it.
    pub fn and_then<U>(self, mut check: impl FnMut(&L, T) -> Result<U, String>) -> Entries<L, U> {
        let entries = self
            .entries
            .into_iter()
            .map(|e| Entry {
                parsed: e.parsed.and_then(|value| check(&e.label, value)),
                index: e.index,
                label: e.label,
            })
            .collect();
        Entries { entries }
    }

    /// The kept entries and the refused ones, each in list order.
    pub fn split(self) -> (Vec<Kept<L, T>>, Vec<RefusedEntry<L>>) {
        let mut kept = Vec::new();
        let mut refused = Vec::new();
        for Entry {
            index,
            label,
            parsed,
        } in self.entries
        {
            match parsed {
                Ok(value) => kept.push(Kept {
                    index,
                    label,
                    value,
                }),
                Err(reason) => refused.push(RefusedEntry {
                    index,
                    label,
                    reason,
                }),
            }
        }
        (kept, refused)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Entries of `text` (a JSON list) labelled by their `k` member and
    /// parsed as their `v` member (a number).
    fn entries(text: &str) -> Entries<Option<String>, u64> {
        Entries::parse(
            serde_json::from_str(text).unwrap(),
            |v| v.get("k").and_then(Value::as_str).map(str::to_owned),
            |v| {
                v.get("v")
                    .and_then(Value::as_u64)
                    .ok_or("no number".to_owned())
            },
        )
    }

    /// `index:value` of the kept entries, `index!reason` of the refused.
    fn outcome(entries: Entries<Option<String>, u64>) -> (Vec<String>, Vec<String>) {
        let (kept, refused) = entries.split();
        (
            kept.iter()
                .map(|k| format!("{}:{}", k.index, k.value))
                .collect(),
            refused
                .iter()
                .map(|r| format!("{}!{}", r.index, r.reason))
                .collect(),
        )
    }

    #[test]
    fn each_entry_is_kept_or_refused_alone_in_list_order() {
        // (list, kept, refused)
        let cases: &[(&str, &[&str], &[&str])] = &[
            ("[]", &[], &[]),
            (r#"[{"v":1},{"v":2}]"#, &["0:1", "1:2"], &[]),
            (
                r#"[{"v":1},"x",{"v":-3},{"v":4},null]"#,
                &["0:1", "3:4"],
                &["1!no number", "2!no number", "4!no number"],
            ),
            (r#"[7]"#, &[], &["0!no number"]),
        ];
        for (list, kept, refused) in cases {
            let (k, r) = outcome(entries(list));
            assert_eq!(k, *kept, "{list}");
            assert_eq!(r, *refused, "{list}");
        }
    }

    #[test]
    fn repeated_keys_follow_the_rule() {
        let list = r#"[{"k":"a","v":1},{"k":"b","v":2},{"k":"a"},{"k":"a","v":4},{"v":5},{"v":6}]"#;
        let twice = |_: &Entry<Option<String>, u64>, key: &String| format!("{key} twice");
        // (rule, kept, refused)
        let cases: [(Repeated, &[&str], &[&str]); 2] = [
            (
                Repeated::NoneKept,
                &["1:2", "4:5", "5:6"],
                &["0!a twice", "2!a twice", "3!a twice"],
            ),
            (
                Repeated::FirstKept,
                &["0:1", "1:2", "4:5", "5:6"],
                &["2!no number", "3!a twice"],
            ),
        ];
        for (rule, kept, refused) in cases {
            let mut e = entries(list);
            e.refuse_repeated(rule, |e| e.label.clone(), twice);
            let (k, r) = outcome(e);
            assert_eq!(k, kept, "{rule:?}");
            assert_eq!(r, refused, "{rule:?}");
        }
        // A key read from the parsed value: refused entries have none.
        let mut e = entries(r#"[{"v":1},{"v":1},{"v":2},{"k":"x"}]"#);
        e.refuse_repeated(
            Repeated::NoneKept,
            |e| e.parsed.as_ref().ok().copied(),
            |_, _| "same value".into(),
        );
        assert_eq!(
            outcome(e),
            (
                vec!["2:2".to_owned()],
                vec![
                    "0!same value".to_owned(),
                    "1!same value".to_owned(),
                    "3!no number".to_owned()
                ]
            )
        );
        // The first of a key that was refused already does not hold the key.
        let mut e = entries(r#"[{"k":"a"},{"k":"a","v":2}]"#);
        e.refuse_repeated(
            Repeated::FirstKept,
            |e| e.parsed.as_ref().ok().and(e.label.clone()),
            twice,
        );
        assert_eq!(
            outcome(e),
            (vec!["1:2".to_owned()], vec!["0!no number".to_owned()])
        );
    }

    #[test]
    fn a_later_check_refuses_only_what_it_refuses() {
        let e = entries(r#"[{"v":1},{"v":2},"x",{"v":3}]"#).and_then(|_, v| {
            if v % 2 == 0 {
                Err(format!("{v} is even"))
            } else {
                Ok(v * 10)
            }
        });
        assert_eq!(e.entries().len(), 4);
        let (kept, refused) = e.split();
        let kept: Vec<(usize, u64)> = kept.iter().map(|k| (k.index, k.value)).collect();
        assert_eq!(kept, [(0, 10), (3, 30)]);
        let refused: Vec<&str> = refused.iter().map(|r| r.reason.as_str()).collect();
        assert_eq!(refused, ["2 is even", "no number"]);
    }
}
