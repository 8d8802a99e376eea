//! Lookups of pods and workloads by name, for steps that name them. A run
//! registers one name per pod and per workload it creates (hundreds of
//! thousands in a week of generated bare pods); a map from owned name
//! strings to ids held several copies of every name. [`NameIndex`] files
//! only ids, under a hash of the name, and a lookup checks the candidates'
//! real names.

use std::collections::BTreeSet;
use std::hash::{DefaultHasher, Hash, Hasher};

/// Ids filed under a hash of the name each was registered with. Ids are
/// registered in increasing order, and a lookup answers the latest one
/// registered under an equal name, as a map whose inserts overwrite would.
#[derive(Debug, Default)]
pub(super) struct NameIndex(BTreeSet<(u64, u32)>);

impl NameIndex {
    /// Registers `id` under `key` (after every id registered before).
    pub(super) fn insert(&mut self, key: &impl Hash, id: usize) {
        let id = u32::try_from(id).expect("ids fit in 32 bits");
        self.0.insert((hash(key), id));
    }

    /// The latest id registered under a key equal to `key`: `is_named`
    /// tells whether an id's real name is `key`.
    pub(super) fn latest(
        &self,
        key: &impl Hash,
        is_named: impl Fn(usize) -> bool,
    ) -> Option<usize> {
        let hash = hash(key);
        self.0
            .range((hash, 0)..=(hash, u32::MAX))
            .rev()
            .map(|&(_, id)| id as usize)
            .find(|&id| is_named(id))
    }
}

/// A hash that is the same in every run (no random keys).
fn hash(key: &impl Hash) -> u64 {
    let mut hasher = DefaultHasher::new();
    key.hash(&mut hasher);
    hasher.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Answers as a map whose inserts overwrite, whatever the hashes.
    #[test]
    fn latest_of_equal_names_wins() {
        let names = ["a", "b", "a", "c", "b", "a"];
        let mut index = NameIndex::default();
        for (id, name) in names.iter().enumerate() {
            index.insert(name, id);
        }
        for (key, latest) in [("a", Some(5)), ("b", Some(4)), ("c", Some(3)), ("d", None)] {
            assert_eq!(index.latest(&key, |id| names[id] == key), latest, "{key}");
        }
        // A candidate whose real name differs (a hash collision) is skipped.
        assert_eq!(index.latest(&"a", |id| id < 3 && names[id] == "a"), Some(2));
    }
}
