//! Karpenter: the `karpenter.sh/v1` NodePool as decisions read it,
//! provisioning, disruption, the static NodePool controllers and node
//! repair.

pub mod disruption;
pub mod events;
pub mod instance_types;
pub mod node_repair;
pub mod provisioning;
pub mod static_capacity;

use std::collections::BTreeMap;

/// Per-NodePool sums over many nodes (every node of a pass, or of a solve's
/// view), kept in a short list while they are summed: a cluster has a
/// handful of pools, and consecutive nodes mostly share one. Nodes of one
/// pool carry one shared copy of its name (see
/// [`crate::scheduler::NodeClaimInfo::nodepool`]), so the address settles
/// most lookups without comparing the text.
pub(crate) struct PoolSums<'n, V> {
    entries: Vec<(&'n str, V)>,
    last: usize,
}

impl<'n, V: Default> PoolSums<'n, V> {
    pub(crate) fn new() -> Self {
        PoolSums {
            entries: Vec::new(),
            last: 0,
        }
    }

    /// Updates `pool`'s sum, starting it at the default.
    pub(crate) fn add(&mut self, pool: &'n str, update: impl FnOnce(&mut V)) {
        let same = |(name, _): &(&str, V)| std::ptr::eq(*name, pool) || *name == pool;
        let at = if self.entries.get(self.last).is_some_and(same) {
            self.last
        } else if let Some(at) = self.entries.iter().position(same) {
            at
        } else {
            self.entries.push((pool, V::default()));
            self.entries.len() - 1
        };
        self.last = at;
        update(&mut self.entries[at].1);
    }

    /// The sums by pool name (pools with no node have no entry).
    pub(crate) fn into_map(self) -> BTreeMap<String, V> {
        self.entries
            .into_iter()
            .map(|(name, sum)| (name.to_string(), sum))
            .collect()
    }
}

#[cfg(test)]
mod pool_sums_tests {
    use super::PoolSums;

    #[test]
    fn names_equal_in_text_share_a_sum_wherever_they_live() {
        // Two separate copies of "a" (different addresses), "b" between.
        let (a1, a2, b) = (String::from("a"), String::from("a"), String::from("b"));
        assert!(!std::ptr::eq(a1.as_str(), a2.as_str()));
        let mut sums: PoolSums<'_, u32> = PoolSums::new();
        for (pool, n) in [(&a1, 1), (&a1, 2), (&b, 4), (&a2, 8), (&b, 16)] {
            sums.add(pool, |sum| *sum += n);
        }
        let map = sums.into_map();
        assert_eq!(map.len(), 2);
        assert_eq!(map["a"], 11);
        assert_eq!(map["b"], 20);
    }
}
