//! [`ChunkedVec`]: a list that only grows at its end, stored in chunks of
//! fixed capacity. The per-pod and per-workload records of a run grow to
//! hundreds of thousands of entries; a `Vec` doubles into a new buffer
//! while the old one is still held, so its peak is up to three times the
//! data. Chunks never move: at most one chunk is partly empty.

use std::ops::{Index, IndexMut};

/// Entries per chunk.
const CHUNK: usize = 4096;

/// An append-only list in fixed-size chunks, indexed like a slice.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChunkedVec<T> {
    chunks: Vec<Vec<T>>,
    len: usize,
}

impl<T> Default for ChunkedVec<T> {
    fn default() -> Self {
        ChunkedVec::new()
    }
}

impl<T> ChunkedVec<T> {
    /// An empty list (allocates nothing).
    pub const fn new() -> Self {
        ChunkedVec {
            chunks: Vec::new(),
            len: 0,
        }
    }

    /// Number of entries.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there is no entry.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Appends an entry.
    pub fn push(&mut self, value: T) {
        match self.chunks.last_mut() {
            Some(chunk) if chunk.len() < CHUNK => chunk.push(value),
            _ => {
                let mut chunk = Vec::with_capacity(CHUNK);
                chunk.push(value);
                self.chunks.push(chunk);
            }
        }
        self.len += 1;
    }

    /// The entry at `index`, if any.
    #[inline]
    pub fn get(&self, index: usize) -> Option<&T> {
        self.chunks.get(index / CHUNK)?.get(index % CHUNK)
    }

    /// The entry at `index`, mutably, if any.
    #[inline]
    pub fn get_mut(&mut self, index: usize) -> Option<&mut T> {
        self.chunks.get_mut(index / CHUNK)?.get_mut(index % CHUNK)
    }

    /// The entries in index order.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &T> + '_ {
        self.chunks.iter().flatten()
    }

    /// The entries in index order, mutably.
    pub fn iter_mut(&mut self) -> impl DoubleEndedIterator<Item = &mut T> + '_ {
        self.chunks.iter_mut().flatten()
    }
}

impl<T> Index<usize> for ChunkedVec<T> {
    type Output = T;

    #[inline]
    fn index(&self, index: usize) -> &T {
        &self.chunks[index / CHUNK][index % CHUNK]
    }
}

impl<T> IndexMut<usize> for ChunkedVec<T> {
    #[inline]
    fn index_mut(&mut self, index: usize) -> &mut T {
        &mut self.chunks[index / CHUNK][index % CHUNK]
    }
}

impl<'a, T> IntoIterator for &'a ChunkedVec<T> {
    type Item = &'a T;
    type IntoIter = std::iter::Flatten<std::slice::Iter<'a, Vec<T>>>;

    fn into_iter(self) -> Self::IntoIter {
        self.chunks.iter().flatten()
    }
}

impl<T> FromIterator<T> for ChunkedVec<T> {
    fn from_iter<I: IntoIterator<Item = T>>(iter: I) -> Self {
        let mut out = ChunkedVec::new();
        for value in iter {
            out.push(value);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Indexing, lookups and iteration agree with a `Vec` across chunk
    /// boundaries.
    #[test]
    fn behaves_as_a_vec() {
        let n = 2 * CHUNK + 17;
        let mut list = ChunkedVec::new();
        let mut reference = Vec::new();
        assert!(list.is_empty());
        for i in 0..n {
            list.push(i * 3);
            reference.push(i * 3);
        }
        assert_eq!(list.len(), n);
        for i in [0, 1, CHUNK - 1, CHUNK, CHUNK + 1, n - 1] {
            assert_eq!(list[i], reference[i]);
            assert_eq!(list.get(i), Some(&reference[i]));
        }
        assert_eq!(list.get(n), None);
        assert!(list.iter().eq(reference.iter()));
        assert!((&list).into_iter().rev().eq(reference.iter().rev()));
        list[CHUNK] = 7;
        *list.get_mut(0).unwrap() = 9;
        for v in list.iter_mut().skip(n - 1) {
            *v = 1;
        }
        assert_eq!((list[0], list[CHUNK], list[n - 1]), (9, 7, 1));
        let copy: ChunkedVec<usize> = list.iter().copied().collect();
        assert_eq!(copy, list);
    }
}
