//! A hasher for hot in-memory maps (the deciders', and the engine's
//! per-pod scheduling facts), whose keys are small
//! integers or arrays of them (node and pod ids, requested rooms): one
//! multiply per word instead of SipHash's rounds. Not for keys an
//! adversary chooses; nothing here reads such keys. No decision depends
//! on a map's iteration order (the standard maps' order is random per
//! process already).

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// A `HashMap` with [`FastHasher`].
pub type FastMap<K, V> = HashMap<K, V, BuildHasherDefault<FastHasher>>;

/// A multiplicative word hasher (the rotate-xor-multiply step of rustc's
/// FxHasher): fast on integer keys, and its last multiply spreads every
/// input bit into the high bits that `HashMap` probes with.
#[derive(Debug, Default, Clone, Copy)]
pub struct FastHasher(u64);

const SEED: u64 = 0x517c_c1b7_2722_0a95;

impl FastHasher {
    #[inline]
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(SEED);
    }
}

impl Hasher for FastHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            let mut word = [0u8; 8];
            word.copy_from_slice(chunk);
            self.add(u64::from_le_bytes(word));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut word = [0u8; 8];
            word[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(word) ^ ((rest.len() as u64) << 56));
        }
    }

    #[inline]
    fn write_u8(&mut self, n: u8) {
        self.add(u64::from(n));
    }

    #[inline]
    fn write_u32(&mut self, n: u32) {
        self.add(u64::from(n));
    }

    #[inline]
    fn write_u64(&mut self, n: u64) {
        self.add(n);
    }

    #[inline]
    fn write_usize(&mut self, n: usize) {
        self.add(n as u64);
    }

    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use std::hash::{BuildHasher, Hash};

    use super::*;

    fn hash_of(value: impl Hash) -> u64 {
        BuildHasherDefault::<FastHasher>::default().hash_one(value)
    }

    #[test]
    fn keys_that_differ_in_any_word_hash_apart() {
        let base = [1_000i64, 1 << 30, 110];
        let mut seen = std::collections::BTreeSet::new();
        seen.insert(hash_of(base));
        for word in 0..3 {
            let mut other = base;
            other[word] += 1;
            assert!(seen.insert(hash_of(other)), "word {word} changed nothing");
        }
        // Trailing bytes count, and so does their length.
        assert_ne!(
            hash_of([1u8, 2, 3].as_slice()),
            hash_of([1u8, 2].as_slice())
        );
        assert_ne!(hash_of("ab"), hash_of("ab\0"));
    }

    #[test]
    fn a_map_of_ids_finds_every_key() {
        let mut map: FastMap<u32, u32> = FastMap::default();
        for id in 0..10_000u32 {
            map.insert(id * 7, id);
        }
        assert_eq!(map.len(), 10_000);
        assert!((0..10_000u32).all(|id| map.get(&(id * 7)) == Some(&id)));
        assert_eq!(map.get(&1), None);
    }
}
