//! The cluster's nodes, stored inline in id order so that a walk over
//! every live node reads memory in order. Node ids are given out in
//! increasing order and never reused, so a new node goes at the end; a
//! removed node leaves a hole, and the holes are squeezed out once they
//! outnumber the live nodes (a long run gives out far more node ids than
//! it has live nodes at any time).

use crate::cluster::{Node, NodeId};

/// Where a removed node's id points.
const REMOVED: u32 = u32::MAX;

/// Fewest holes worth squeezing out.
const SQUEEZED_FROM: usize = 32;

/// Live nodes by id (see the module doc).
#[derive(Debug, Clone, Default)]
pub(crate) struct NodeStore {
    /// Live nodes and holes, ids ascending.
    slots: Vec<(NodeId, Option<Node>)>,
    /// Per id ever given, its place in `slots` (or [`REMOVED`]).
    place: Vec<u32>,
    /// How many of `slots` are holes.
    holes: usize,
}

impl NodeStore {
    /// The id the next added node gets.
    pub fn next_id(&self) -> NodeId {
        NodeId(self.place.len() as u32)
    }

    /// Adds `node` under [`NodeStore::next_id`]; returns that id.
    pub fn add(&mut self, node: Node) -> NodeId {
        let id = self.next_id();
        self.place.push(self.slots.len() as u32);
        self.slots.push((id, Some(node)));
        id
    }

    /// A live node.
    #[inline]
    pub fn get(&self, id: NodeId) -> Option<&Node> {
        let place = *self.place.get(id.0 as usize)?;
        self.slots.get(place as usize)?.1.as_ref()
    }

    /// A live node, mutably.
    #[inline]
    pub fn get_mut(&mut self, id: NodeId) -> Option<&mut Node> {
        let place = *self.place.get(id.0 as usize)?;
        self.slots.get_mut(place as usize)?.1.as_mut()
    }

    /// Removes a live node; returns it.
    pub fn remove(&mut self, id: NodeId) -> Option<Node> {
        let place = *self.place.get(id.0 as usize)?;
        let node = self.slots.get_mut(place as usize)?.1.take()?;
        self.place[id.0 as usize] = REMOVED;
        self.holes += 1;
        if self.holes >= SQUEEZED_FROM && self.holes > self.len() {
            self.squeeze();
        }
        Some(node)
    }

    /// Drops the holes, moving the live nodes down in order.
    fn squeeze(&mut self) {
        self.slots.retain(|(_, node)| node.is_some());
        for (place, (id, _)) in self.slots.iter().enumerate() {
            self.place[id.0 as usize] = place as u32;
        }
        self.holes = 0;
    }

    /// Number of live nodes.
    pub fn len(&self) -> usize {
        self.slots.len() - self.holes
    }

    /// Every live node, in id order.
    pub fn iter(&self) -> impl Iterator<Item = (NodeId, &Node)> + '_ {
        self.slots
            .iter()
            .filter_map(|(id, node)| node.as_ref().map(|node| (*id, node)))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use rand::rngs::Xoshiro256PlusPlus as SimRng;
    use rand::{RngExt, SeedableRng};

    use super::NodeStore;
    use crate::cluster::{Node, NodeId};
    use crate::testing::node;

    /// Random adds and removals (through several squeezes) keep what a
    /// map from id to node keeps: the same nodes by id, in id order, and
    /// removed ids stay gone.
    #[test]
    fn keeps_what_a_map_keeps() {
        let mut rng = SimRng::seed_from_u64(7);
        let mut store = NodeStore::default();
        let mut map: BTreeMap<NodeId, Node> = BTreeMap::new();
        let mut removed = Vec::new();
        let mut squeezed = 0;
        for step in 0..4_000 {
            if map.is_empty() || rng.random_bool(0.55) {
                let added = node(&format!("n{step}"), "pool");
                let id = store.add(added.clone());
                assert!(map.insert(id, added).is_none(), "ids are new");
            } else {
                let at = rng.random_range(0..map.len());
                let id = *map.keys().nth(at).expect("in range");
                let holes_before = store.holes;
                assert_eq!(
                    store.remove(id).map(|n| n.name),
                    map.remove(&id).map(|n| n.name)
                );
                squeezed += usize::from(store.holes < holes_before);
                removed.push(id);
            }
            if step % 97 == 0 {
                let listed: Vec<(NodeId, &str)> =
                    store.iter().map(|(id, n)| (id, n.name.as_str())).collect();
                let expected: Vec<(NodeId, &str)> =
                    map.iter().map(|(id, n)| (*id, n.name.as_str())).collect();
                assert_eq!(listed, expected);
                assert_eq!(store.len(), map.len());
                for id in &removed {
                    assert!(store.get(*id).is_none());
                    assert!(store.remove(*id).is_none());
                }
                for (id, n) in &map {
                    assert_eq!(store.get(*id).map(|s| &s.name), Some(&n.name));
                }
            }
        }
        assert!(squeezed > 3, "the holes were squeezed out {squeezed} times");
        let id = *map.keys().next().expect("nodes left");
        store.get_mut(id).expect("live").name = "renamed".into();
        assert_eq!(store.get(id).map(|n| n.name.as_str()), Some("renamed"));
    }
}
