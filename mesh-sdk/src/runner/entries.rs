//! What the loop remembers of each consumer, found by name and kept in the
//! order of the list it serves: a pass observes its consumers in the
//! list's order, so it reads their entries one after the other in memory
//! (found at their place, without a lookup by name) instead of scattered
//! over a hash table.

use mesh_protocol::Name;

use crate::name_map::NameMap;
use crate::standing::Standing;

/// What the loop remembers of one consumer since start.
#[derive(Debug)]
pub(super) struct Entry {
    pub(super) standing: Standing,
    pub(super) machine: Name,
    pub(super) provision: String,
    /// The fingerprint of the secret of its last success since start.
    pub(super) secret: Option<u64>,
}

/// Entries by name, in the order of the list last [arranged](Entries::arrange)
/// to (then those made since).
#[derive(Debug)]
pub(super) struct Entries<E> {
    slots: Vec<(Name, E)>,
    /// Where each name's slot is.
    index: NameMap<usize>,
}

impl<E> Default for Entries<E> {
    fn default() -> Self {
        Entries {
            slots: Vec::new(),
            index: NameMap::default(),
        }
    }
}

impl<E> Entries<E> {
    /// How many there are.
    pub(super) fn len(&self) -> usize {
        self.slots.len()
    }

    /// `name`'s entry.
    #[cfg(any(test, feature = "testing"))]
    pub(super) fn get(&self, name: &Name) -> Option<&E> {
        self.index.get(name).map(|&i| &self.slots[i].1)
    }

    /// `name`'s entry.
    pub(super) fn get_mut(&mut self, name: &Name) -> Option<&mut E> {
        self.index.get(name).map(|&i| &mut self.slots[i].1)
    }

    /// Whether `name` has an entry.
    pub(super) fn contains_key(&self, name: &Name) -> bool {
        self.index.contains_key(name)
    }

    /// The names with an entry.
    pub(super) fn names(&self) -> impl Iterator<Item = &Name> {
        self.slots.iter().map(|(name, _)| name)
    }

    /// `name`'s entry, which is at place `at` when the entries are arranged
    /// to the list `name` is the `at`th consumer of.
    pub(super) fn at_mut(&mut self, at: usize, name: &Name) -> Option<&mut E> {
        let at = match self.slots.get(at) {
            Some((there, _)) if there == name => at,
            _ => *self.index.get(name)?,
        };
        Some(&mut self.slots[at].1)
    }

    /// Makes `name`'s entry (it has none).
    pub(super) fn insert(&mut self, name: Name, entry: E) -> &mut E {
        let at = self.slots.len();
        self.index.insert(name.clone(), at);
        self.slots.push((name, entry));
        &mut self.slots[at].1
    }

    /// Forgets `name`'s entry. The last entry takes its place: entries of
    /// consumers no longer listed are after the listed ones, so forgetting
    /// one of them leaves the listed ones in place.
    pub(super) fn remove(&mut self, name: &Name) -> Option<E> {
        let at = self.index.remove(name)?;
        let (_, entry) = self.slots.swap_remove(at);
        if let Some((moved, _)) = self.slots.get(at) {
            self.index.insert(moved.clone(), at);
        }
        Some(entry)
    }

    /// Puts the entries of `names` first, in that order (each name with
    /// its entry, given as the list holds it), then the others in the order
    /// they were.
    pub(super) fn arrange<'a>(&mut self, names: impl Iterator<Item = &'a Name>) {
        let mut old: Vec<Option<(Name, E)>> = std::mem::take(&mut self.slots)
            .into_iter()
            .map(Some)
            .collect();
        for name in names {
            let Some(&at) = self.index.get(name) else {
                continue;
            };
            if let Some((_, entry)) = old[at].take() {
                // The list's own name: the next pass compares it by address.
                self.slots.push((name.clone(), entry));
            }
        }
        self.slots.extend(old.into_iter().flatten());
        for (at, (name, _)) in self.slots.iter().enumerate() {
            if let Some(place) = self.index.get_mut(name) {
                *place = at;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(s: &str) -> Name {
        Name::parse(s).expect("a valid name")
    }

    /// Each name's entry is found by name and at its place; none is lost.
    fn holds(entries: &Entries<u32>, want: &[(&str, u32)]) {
        assert_eq!(entries.len(), want.len());
        for (name, value) in want {
            assert_eq!(entries.get(&n(name)), Some(value), "{name}");
        }
        for (at, (name, _)) in entries.slots.iter().enumerate() {
            assert_eq!(entries.index[name], at, "{name}");
        }
    }

    #[test]
    fn entries_are_found_by_name_and_at_their_place_in_the_list() {
        let mut entries = Entries::default();
        for (value, name) in ["a", "b", "c", "d"].iter().enumerate() {
            *entries.insert(n(name), 0) = u32::try_from(value).expect("small");
        }
        holds(&entries, &[("a", 0), ("b", 1), ("c", 2), ("d", 3)]);
        assert_eq!(entries.at_mut(1, &n("b")), Some(&mut 1));
        // Not at its place: found by name.
        assert_eq!(entries.at_mut(0, &n("c")), Some(&mut 2));
        assert_eq!(entries.at_mut(9, &n("d")), Some(&mut 3));
        assert_eq!(entries.at_mut(0, &n("x")), None);
        assert!(entries.contains_key(&n("a")) && !entries.contains_key(&n("x")));

        // The list drops b, puts d first and adds e.
        let list = [n("d"), n("a"), n("e"), n("c")];
        entries.arrange(list.iter());
        assert_eq!(
            entries.names().map(Name::as_str).collect::<Vec<_>>(),
            ["d", "a", "c", "b"]
        );
        *entries.insert(n("e"), 0) = 4;
        entries.arrange(list.iter());
        assert_eq!(
            entries.names().map(Name::as_str).collect::<Vec<_>>(),
            ["d", "a", "e", "c", "b"]
        );
        for (at, name) in list.iter().enumerate() {
            assert!(entries.at_mut(at, name).is_some(), "{name}");
        }
        holds(
            &entries,
            &[("a", 0), ("b", 1), ("c", 2), ("d", 3), ("e", 4)],
        );

        // Forgetting b (after the listed ones) leaves them in place.
        assert_eq!(entries.remove(&n("b")), Some(1));
        assert_eq!(entries.remove(&n("b")), None);
        holds(&entries, &[("a", 0), ("c", 2), ("d", 3), ("e", 4)]);
        assert_eq!(entries.remove(&n("d")), Some(3));
        holds(&entries, &[("a", 0), ("c", 2), ("e", 4)]);
        *entries.get_mut(&n("a")).expect("a") = 7;
        holds(&entries, &[("a", 7), ("c", 2), ("e", 4)]);
    }
}
