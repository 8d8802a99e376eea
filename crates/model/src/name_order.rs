//! Numbers whose order is the live nodes' name order, so that the orders
//! decisions take nodes in ("then by name") compare two integers instead
//! of two heap strings: a cluster's node names tend to share a long prefix
//! (`<nodepool>-00042`), and sorting a thousand candidates by name after
//! an equal savings ratio read both strings from memory at every step.
//!
//! Each live node holds a label; a new node takes one between its
//! neighbours' in name order, and when two neighbours leave no number
//! between them every live node is labelled again, evenly spaced.

use std::collections::BTreeSet;
use std::ops::Bound;

/// The gap left after the last node when a node joins at the end (the
/// common case: generated names count up).
const STEP: u64 = 1 << 32;

/// The live nodes' name order as numbers (see the module docs). Ties of
/// equal names go by slot, so two nodes never share a label.
#[derive(Debug, Clone, Default)]
pub struct NameOrder {
    /// The live nodes by (name, slot).
    names: BTreeSet<(Box<str>, u32)>,
    /// Per slot, its label while the slot's node is live.
    labels: Vec<u64>,
}

impl NameOrder {
    /// Adds the node of `slot`, named `name`.
    pub fn insert(&mut self, slot: u32, name: &str) {
        let key: (Box<str>, u32) = (name.into(), slot);
        let before = self
            .names
            .range((Bound::Unbounded, Bound::Excluded(&key)))
            .next_back()
            .map(|(_, s)| self.labels[*s as usize]);
        let after = self
            .names
            .range((Bound::Excluded(&key), Bound::Unbounded))
            .next()
            .map(|(_, s)| self.labels[*s as usize]);
        if self.labels.len() <= slot as usize {
            self.labels.resize(slot as usize + 1, 0);
        }
        self.names.insert(key);
        match between(before, after) {
            Some(label) => self.labels[slot as usize] = label,
            None => self.relabel(),
        }
    }

    /// Removes the node of `slot`, named `name`.
    pub fn remove(&mut self, slot: u32, name: &str) {
        self.names.remove(&(name.into(), slot));
    }

    /// The label of the live node in `slot`: for two live nodes, labels
    /// compare as (name, slot) does.
    pub fn label(&self, slot: u32) -> u64 {
        self.labels.get(slot as usize).copied().unwrap_or(0)
    }

    /// How many live nodes it orders.
    pub fn live(&self) -> usize {
        self.names.len()
    }

    /// Labels every live node again, evenly spaced in name order.
    fn relabel(&mut self) {
        let gap = u64::MAX / (self.names.len() as u64 + 1);
        for (i, (_, slot)) in self.names.iter().enumerate() {
            self.labels[*slot as usize] = gap * (i as u64 + 1);
        }
    }
}

/// A label strictly between `before` and `after` (either may be missing),
/// if there is one.
fn between(before: Option<u64>, after: Option<u64>) -> Option<u64> {
    match (before, after) {
        (None, None) => Some(u64::MAX / 2),
        (Some(b), None) => b.checked_add(STEP),
        (None, Some(a)) => a.checked_sub(STEP).or((a >= 2).then_some(a / 2)),
        (Some(b), Some(a)) => (a - b >= 2).then(|| b + (a - b) / 2),
    }
}

#[cfg(test)]
mod tests {
    use rand::rngs::Xoshiro256PlusPlus as SimRng;
    use rand::{RngExt, SeedableRng};

    use super::*;

    /// After any sequence of inserts and removals, the live nodes' labels
    /// sort them exactly as (name, slot) does, including the inserts that
    /// force a relabelling (names squeezed between neighbours, names before
    /// the first) and equal names.
    #[test]
    fn labels_follow_name_order() {
        let mut rng = SimRng::seed_from_u64(7);
        for round in 0..40 {
            let mut order = NameOrder::default();
            let mut live: Vec<(String, u32)> = Vec::new();
            let mut next_slot = 0u32;
            for _ in 0..300 {
                if !live.is_empty() && rng.random_range(0..4) == 0 {
                    let (name, slot) = live.swap_remove(rng.random_range(0..live.len()));
                    order.remove(slot, &name);
                    continue;
                }
                // Short names over few letters: many equal names, and many
                // inserts between close neighbours.
                let len = rng.random_range(1..=3 + round % 4);
                let name: String = (0..len)
                    .map(|_| char::from(b'a' + rng.random_range(0..3u8)))
                    .collect();
                order.insert(next_slot, &name);
                live.push((name, next_slot));
                next_slot += 1;
            }
            let mut by_name = live.clone();
            by_name.sort();
            let mut by_label = live.clone();
            by_label.sort_by_key(|(_, slot)| order.label(*slot));
            assert_eq!(by_label, by_name, "round {round}");
        }
    }

    /// Names that count up (as generated node names do) take labels a
    /// step apart; names squeezed again and again between two neighbours
    /// halve the room until none is left, and then every node is labelled
    /// again, still in name order.
    #[test]
    fn gaps_and_relabelling() {
        assert_eq!(between(Some(5), Some(6)), None);
        assert_eq!(between(Some(5), Some(7)), Some(6));
        assert_eq!(between(None, Some(1)), None);
        assert_eq!(between(None, Some(3)), Some(1));
        assert_eq!(between(Some(u64::MAX - 1), None), None);

        let mut order = NameOrder::default();
        order.insert(0, "b");
        order.insert(1, "c");
        assert_eq!(order.label(1) - order.label(0), STEP);
        let mut relabelled = false;
        let mut previous = 0;
        for slot in 2..100u32 {
            let name = format!("b{}", "z".repeat(slot as usize));
            let (first, last) = (order.label(0), order.label(1));
            order.insert(slot, &name);
            relabelled |= order.label(0) != first || order.label(1) != last;
            assert!(order.label(previous) < order.label(slot));
            assert!(order.label(slot) < order.label(1));
            previous = slot;
        }
        assert!(relabelled);
    }
}
