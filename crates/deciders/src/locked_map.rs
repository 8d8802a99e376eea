//! A map behind a lock, for the caches that solves running side by side
//! extend through a shared reference. A copy takes the entries as they
//! are, so a thread can work on its own copy.

use std::hash::Hash;
use std::sync::{Mutex, MutexGuard, PoisonError};

use crate::fast_hash::FastMap;

/// A hash map ([`FastMap`]) behind a `Mutex`; a poisoned lock still gives the map (a
/// cache entry is whole or absent).
#[derive(Debug)]
pub(crate) struct LockedMap<K, V>(Mutex<FastMap<K, V>>);

impl<K, V> LockedMap<K, V> {
    /// The map, locked.
    pub(crate) fn lock(&self) -> MutexGuard<'_, FastMap<K, V>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl<K, V> Default for LockedMap<K, V> {
    fn default() -> Self {
        LockedMap(Mutex::new(FastMap::default()))
    }
}

impl<K: Clone + Eq + Hash, V: Clone> Clone for LockedMap<K, V> {
    fn clone(&self) -> Self {
        LockedMap(Mutex::new(self.lock().clone()))
    }
}
