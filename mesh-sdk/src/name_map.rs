//! Maps and sets of names with a fast hasher.

use std::collections::{HashMap, HashSet};

use mesh_protocol::Name;

/// A map keyed by names, with a fast hasher (names come from the operator's
/// files, not from an attacker choosing collisions).
pub(crate) type NameMap<V> = HashMap<Name, V, foldhash::fast::RandomState>;

/// A set of names, with the hasher of [`NameMap`].
pub(crate) type NameSet = HashSet<Name, foldhash::fast::RandomState>;

/// A set of borrowed names, with the hasher of [`NameMap`].
pub(crate) type NameRefs<'a> = HashSet<&'a Name, foldhash::fast::RandomState>;
