//! [`IndexSet`]: a set of small indices (arena slots such as pod ids),
//! walked in ascending order. The cluster's pending-pod candidates are
//! inserted and removed on every bind and walked by every kube-scheduler
//! call; a bit per index makes both cheap, and a second level of bits (one
//! per word of the first that holds any) lets a walk skip the long runs of
//! indices that are not in the set, however many the run has used.

/// A set of `u32` indices, iterated in ascending order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IndexSet {
    /// Bit `i % 64` of word `i / 64`: index `i` is in the set.
    words: Vec<u64>,
    /// Bit `w % 64` of summary word `w / 64`: word `w` is not zero.
    summary: Vec<u64>,
    len: usize,
}

impl IndexSet {
    /// An empty set (allocates nothing).
    pub const fn new() -> Self {
        IndexSet {
            words: Vec::new(),
            summary: Vec::new(),
            len: 0,
        }
    }

    /// Number of indices in the set.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether `index` is in the set.
    pub fn contains(&self, index: u32) -> bool {
        let (word, bit) = split(index as usize);
        self.words.get(word).is_some_and(|w| w & bit != 0)
    }

    /// Adds `index`; `false` if it was there.
    pub fn insert(&mut self, index: u32) -> bool {
        let (word, bit) = split(index as usize);
        if word >= self.words.len() {
            self.words.resize(word + 1, 0);
            self.summary.resize(self.words.len().div_ceil(64), 0);
        }
        if self.words[word] & bit != 0 {
            return false;
        }
        self.words[word] |= bit;
        let (summary_word, summary_bit) = split(word);
        self.summary[summary_word] |= summary_bit;
        self.len += 1;
        true
    }

    /// Removes `index`; `false` if it was not there.
    pub fn remove(&mut self, index: u32) -> bool {
        let (word, bit) = split(index as usize);
        match self.words.get_mut(word) {
            Some(w) if *w & bit != 0 => {
                *w &= !bit;
                if *w == 0 {
                    let (summary_word, summary_bit) = split(word);
                    self.summary[summary_word] &= !summary_bit;
                }
                self.len -= 1;
                true
            }
            _ => false,
        }
    }

    /// The indices in ascending order.
    pub fn iter(&self) -> Iter<'_> {
        Iter {
            set: self,
            summary_at: 0,
            summary_bits: self.summary.first().copied().unwrap_or(0),
            word_at: 0,
            word_bits: 0,
            remaining: self.len,
        }
    }
}

/// The word of `index` and its bit there.
fn split(index: usize) -> (usize, u64) {
    (index / 64, 1 << (index % 64))
}

/// The indices of an [`IndexSet`], ascending.
#[derive(Debug, Clone)]
pub struct Iter<'s> {
    set: &'s IndexSet,
    /// The summary word being walked and its bits not walked yet.
    summary_at: usize,
    summary_bits: u64,
    /// The word being walked and its bits not walked yet.
    word_at: usize,
    word_bits: u64,
    remaining: usize,
}

impl Iterator for Iter<'_> {
    type Item = u32;

    fn next(&mut self) -> Option<u32> {
        while self.word_bits == 0 {
            while self.summary_bits == 0 {
                self.summary_at += 1;
                self.summary_bits = *self.set.summary.get(self.summary_at)?;
            }
            let lowest = self.summary_bits.trailing_zeros() as usize;
            self.summary_bits &= self.summary_bits - 1;
            self.word_at = self.summary_at * 64 + lowest;
            self.word_bits = self.set.words[self.word_at];
        }
        let lowest = self.word_bits.trailing_zeros() as usize;
        self.word_bits &= self.word_bits - 1;
        self.remaining -= 1;
        Some((self.word_at * 64 + lowest) as u32)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.remaining, Some(self.remaining))
    }
}

impl ExactSizeIterator for Iter<'_> {}

impl<'s> IntoIterator for &'s IndexSet {
    type Item = u32;
    type IntoIter = Iter<'s>;

    fn into_iter(self) -> Iter<'s> {
        self.iter()
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use rand::rngs::Xoshiro256PlusPlus as SimRng;
    use rand::{RngExt, SeedableRng};

    use super::*;

    /// Through random inserts and removes, over indices close together and
    /// far apart (across summary words), the set holds what a `BTreeSet`
    /// holds, answers the same, and walks it in the same order.
    #[test]
    fn behaves_as_an_ordered_set() {
        let mut rng = SimRng::seed_from_u64(5);
        for round in 0..200 {
            let spread = [64, 4096, 300_000][round % 3];
            let mut set = IndexSet::new();
            let mut model = BTreeSet::new();
            for _ in 0..rng.random_range(0..400) {
                let index = rng.random_range(0..spread);
                if rng.random_bool(0.6) {
                    assert_eq!(set.insert(index), model.insert(index), "round {round}");
                } else {
                    assert_eq!(set.remove(index), model.remove(&index), "round {round}");
                }
                let probe = rng.random_range(0..spread + 100);
                assert_eq!(set.contains(probe), model.contains(&probe));
            }
            assert_eq!(set.len(), model.len());
            assert_eq!(set.is_empty(), model.is_empty());
            let walked: Vec<u32> = set.iter().collect();
            assert_eq!(
                walked,
                model.iter().copied().collect::<Vec<_>>(),
                "round {round}"
            );
            let mut iter = set.iter();
            for left in (0..=model.len()).rev() {
                assert_eq!(iter.size_hint(), (left, Some(left)));
                iter.next();
            }
        }
    }

    /// Emptied words and summary words are skipped, and an index at a
    /// word's edge is found.
    #[test]
    fn edges_of_words_and_emptied_words() {
        let mut set = IndexSet::new();
        for index in [0, 63, 64, 4095, 4096, 262_143, 262_144] {
            set.insert(index);
        }
        set.remove(64);
        set.remove(4096);
        assert_eq!(
            set.iter().collect::<Vec<_>>(),
            [0, 63, 4095, 262_143, 262_144]
        );
        assert!(!set.remove(64));
        assert!(!set.contains(4096));
        assert!(!set.contains(u32::MAX));
        assert!(!set.remove(u32::MAX));
        assert_eq!(IndexSet::new().iter().next(), None);
    }
}
