//! Existing nodes as placement targets: registered nodes and launched
//! NodeClaims still starting (core: scheduling/existingnode.go).
//!
//! [`ExistingNodes`] holds the view of every node of a cluster, built once
//! and shared by the many solves of a disruption pass, which differ only in
//! which nodes they close; each solve copies a node's view only when it
//! places a pod there ([`ExistingSet`]). A build reuses the views of nodes
//! unchanged since the last build with the same setup (by the cluster's
//! node revisions), moved out of that build when nothing else holds it,
//! and keeps its order unless a node came or a remade view sorts
//! elsewhere; or it is that last build when no node changed (by the
//! cluster's revision). A tree of the views' room lets a pod skip every
//! node it cannot fit. Nodes that every solve of a pass closes
//! (deleting nodes, nodes inside their `consolidateAfter` window) are
//! taken out of that tree once, in a [`Closure`], so a search never walks
//! past them; the views keep their last few closures for the next passes
//! that close the same nodes.
//! A closure also remembers, per requested room, which of its open views
//! have that room as built ([`FitLists`]): the many small solves of a pass
//! ask for the same few rooms, and a pod's first fit is then usually the
//! first entry of its list.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};

use rayon::prelude::*;

use super::fit::{merged_get, no_undefined};
use super::node_requirements::NodeRequirements;
use super::pod::{PodWork, any_port_conflict};
use super::topology::{PodTopology, anti_affinity_pods};
use crate::fast_hash::FastMap;
use crate::karpenter::PoolSums;
use crate::kube::labels::LABEL_HOSTNAME;
use crate::kube::pod::{HostPort, PodSpec};
use crate::kube::requirements::Requirements;
use crate::kube::resources::Resources;
use crate::kube::taints::{Taint, first_untolerated, taints_for_uninitialized_node, tolerates_all};
use crate::locked_map::LockedMap;
use crate::scheduler::{Cluster, Node, NodeId, PodId};

/// A node pods may join.
#[derive(Clone)]
pub(super) struct ExistingNode {
    pub id: NodeId,
    /// Shared (as are the taints and host ports), as a solve copies the
    /// view of every node it places a pod on.
    pub name: Arc<str>,
    pub initialized: bool,
    /// Taints that count: uninitialized managed nodes ignore known
    /// ephemeral and startup taints.
    pub taints: Arc<[Taint]>,
    /// Node labels plus `hostname In [its hostname]` (shared with the
    /// prepared setup's cache until a pod joins).
    pub requirements: Arc<Requirements>,
    /// Allocatable − bound requests − DaemonSet pods still to come.
    pub remaining: Resources,
    pub host_ports: Arc<Vec<HostPort>>,
}

impl ExistingNode {
    pub fn new(
        cluster: &Cluster,
        id: NodeId,
        node: &Node,
        daemonsets: &[Arc<PodSpec>],
        node_requirements: &NodeRequirements,
        daemon_requirements: &[Requirements],
    ) -> ExistingNode {
        let taints: Vec<Taint> = match &node.claim {
            Some(claim) if !node.initialized => {
                taints_for_uninitialized_node(&node.taints, &claim.startup_taints)
                    .into_iter()
                    .cloned()
                    .collect()
            }
            _ => node.taints.clone(),
        };
        let hostname = node
            .labels
            .get(LABEL_HOSTNAME)
            .unwrap_or(node.name.as_str());
        let (labels, requirements) = node_requirements.of_existing_node(id, &node.labels, hostname);
        let mut bound_daemons = Resources::ZERO;
        let mut host_ports = Vec::new();
        for pod in node.pods.iter().filter_map(|p| cluster.pod(*p)) {
            if pod.phase.is_terminal() {
                continue;
            }
            if pod.is_daemonset() {
                bound_daemons += pod.spec.requests;
            }
            host_ports.extend(pod.spec.host_ports.iter().cloned());
        }
        let mut daemons = Resources::ZERO;
        for (ds, strict) in daemonsets.iter().zip(daemon_requirements) {
            if tolerates_all(&taints, &ds.tolerations).is_ok()
                && labels.is_compatible(strict, no_undefined())
            {
                daemons += ds.requests;
            }
        }
        let daemons_to_come = daemons.saturating_sub(&bound_daemons);
        ExistingNode {
            id,
            name: Arc::from(node.name.as_str()),
            initialized: node.initialized,
            taints: taints.into(),
            requirements,
            remaining: node.available().saturating_sub(&daemons_to_come),
            host_ports: Arc::new(host_ports),
        }
    }

    /// The hostname domain of the node.
    pub fn hostname(&self) -> &str {
        self.requirements
            .get(LABEL_HOSTNAME)
            .and_then(|r| r.values().first())
            .map_or(&*self.name, String::as_str)
    }

    /// The node's requirements with the pod, if it could join (the solve
    /// never reports why an existing node refused a pod). A pod that adds
    /// no requirement shares the node's.
    pub fn can_add(
        &self,
        topology: &PodTopology<'_>,
        pod: &PodWork<'_>,
    ) -> Option<Arc<Requirements>> {
        if first_untolerated(&self.taints, &pod.spec.tolerations).is_some()
            || any_port_conflict(pod.host_ports(), &self.host_ports)
            || !pod.requests.fits(&self.remaining)
            || !self
                .requirements
                .is_compatible(&pod.requirements, no_undefined())
        {
            return None;
        }
        let narrowed = if topology.constrains() {
            let lookup = |key: &str| merged_get(&self.requirements, &pod.requirements, key);
            topology.add_requirements(&lookup, &pod.spec, false).ok()?
        } else {
            Requirements::new()
        };
        if pod.requirements.is_empty() && narrowed.is_empty() {
            return Some(self.requirements.clone());
        }
        let mut merged = Requirements::clone(&self.requirements);
        merged.add_all(&pod.requirements);
        if !narrowed.is_empty() {
            if !merged.is_compatible(&narrowed, no_undefined()) {
                return None;
            }
            merged.add_all(&narrowed);
        }
        Some(Arc::new(merged))
    }

    pub fn add(&mut self, pod: &PodWork<'_>, requirements: Arc<Requirements>) {
        self.remaining -= pod.requests;
        self.requirements = requirements;
        if !pod.host_ports().is_empty() {
            Arc::make_mut(&mut self.host_ports).extend(pod.host_ports().iter().cloned());
        }
    }
}

/// What a build of node views keeps for the next one.
#[derive(Default)]
pub(super) struct KeptViews {
    /// Per node of the last build, in id order: its revision then and the
    /// position of its view in that build's try order.
    index: Vec<(NodeId, u64, u32)>,
    /// The build itself, with the cluster revision it was made at.
    pub last: Option<(u64, Arc<ExistingNodes>)>,
}

/// The placement views of every node of one cluster, in the order a solve
/// tries them (initialized first, then by name). Build it with
/// [`ExistingNodes::new`] and hand it to [`super::solve_with_existing`] for
/// solves over the same cluster, NodePools and DaemonSets; such solves may
/// differ in which nodes they close (take as marked for deletion), but in
/// nothing else: any change to nodes or pods, marking included, needs a
/// new one.
#[derive(Clone)]
pub struct ExistingNodes {
    nodes: Vec<Arc<ExistingNode>>,
    /// Per view, its room as built (the search tree's leaf when open).
    rooms: Vec<TreeRoom>,
    /// Running pods with required anti-affinity (see
    /// [`super::topology::anti_affinity_pods`]).
    anti_affinity_pods: Vec<PodId>,
    /// How many nodes the cluster had (a cheap check of misuse).
    cluster_nodes: usize,
    /// Which views were of nodes marked for deletion when built.
    marked: Vec<bool>,
    /// Nothing closed but the nodes marked for deletion.
    unclosed: Closure,
    /// The closures [`ExistingNodes::shared_closure`] made lately, most
    /// recent first (shared by the clones).
    closures: Arc<Mutex<Vec<Arc<Closure>>>>,
}

/// `ids` sorted, each once.
fn sorted_ids(ids: &[NodeId]) -> Vec<NodeId> {
    let mut ids = ids.to_vec();
    ids.sort_unstable();
    ids.dedup();
    ids
}

/// Closures an [`ExistingNodes`] keeps for the next solves that close
/// the same nodes (a disruption pass makes two: the deleting nodes, and
/// those with the nodes inside their `consolidateAfter` window).
const CLOSURES_KEPT: usize = 4;

/// Nodes that many solves over one [`ExistingNodes`] take as marked for
/// deletion, prepared once ([`ExistingNodes::closure`]): which views stay
/// open, their room tree, and what the NodePools' limits are charged with
/// once the closed nodes give their share back.
#[derive(Clone)]
pub struct Closure {
    /// Sorted ids of the closed nodes.
    ids: Vec<NodeId>,
    /// Per view: neither marked for deletion nor closed.
    open: Vec<bool>,
    /// Segment tree over the views in try order: each entry holds the
    /// element-wise maximum room of the open views below it (leaves from
    /// `leaves`; padding and closed leaves fit nothing). A pod whose
    /// requests do not fit a subtree's maximum fits none of its nodes, so a
    /// search skips it.
    room_tree: Vec<TreeRoom>,
    leaves: usize,
    /// Per NodePool name: capacity and count of its nodes neither marked
    /// for deletion nor closed (what the pool's limits are charged with).
    pool_usage: BTreeMap<String, PoolUsage>,
    /// The open views that may hold each requested room, as built.
    fits: FitLists,
}

/// Per requested room ([`TreeRoom::wanted`]): the indices of the open views
/// whose room as built may hold it, in try order, found as far as a search
/// needed them. A solve only lowers rooms, so a view missing from a list
/// cannot hold the room in any solve over the closure. Behind a lock so a
/// closure can be shared, though simulations side by side each take a
/// copy (the lists are the same whoever extends them).
type FitLists = LockedMap<TreeRoom, FitList>;

#[derive(Clone, Default)]
struct FitList {
    /// View indices, ascending.
    views: Vec<u32>,
    /// Leaves scanned so far (every fitting one below is in `views`).
    scanned: usize,
}

impl FitList {
    /// Finds the next view whose tree room may hold `wanted`; `false` when
    /// none is left among the first `views` leaves of `tree`.
    fn extend(
        &mut self,
        tree: &[TreeRoom],
        leaves: usize,
        views: usize,
        wanted: &TreeRoom,
    ) -> bool {
        while self.scanned < views {
            let index = self.scanned;
            self.scanned += 1;
            if tree[leaves + index].may_fit(wanted) {
                self.views.push(index as u32);
                return true;
            }
        }
        false
    }
}

impl std::fmt::Debug for Closure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Closure")
            .field("ids", &self.ids)
            .finish_non_exhaustive()
    }
}

impl Closure {
    /// What the open nodes of `pool` use of its limits.
    fn pool_usage(&self, pool: &str) -> PoolUsage {
        self.pool_usage.get(pool).copied().unwrap_or_default()
    }

    fn contains(&self, id: NodeId) -> bool {
        self.ids.binary_search(&id).is_ok()
    }
}

/// A room as the search tree keeps it: the cpu, memory and pod amounts
/// (what nearly every request asks for), all −1 when nothing fits (some
/// amount negative). A request that fits a room fits its tree room, so
/// checking the tree room is a necessary condition; the node's own check
/// decides the rest. Small entries keep the tree in cache and cheap to copy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct TreeRoom([i64; 3]);

impl TreeRoom {
    const NOTHING_FITS: TreeRoom = TreeRoom([-1; 3]);

    fn of(room: &Resources) -> TreeRoom {
        let room = room.as_room();
        TreeRoom([room.cpu_millis(), room.memory_bytes(), room.pods()])
    }

    /// What a request asks of a tree room.
    fn wanted(requests: &Resources) -> TreeRoom {
        TreeRoom([
            requests.cpu_millis(),
            requests.memory_bytes(),
            requests.pods(),
        ])
    }

    /// Whether `wanted` (from [`TreeRoom::wanted`]) may fit under this
    /// room: false whenever `requests.fits` is false for every room below.
    fn may_fit(&self, wanted: &TreeRoom) -> bool {
        self.0[0] >= 0
            && wanted
                .0
                .iter()
                .zip(&self.0)
                .all(|(want, have)| want <= have)
    }

    fn max(&self, other: &TreeRoom) -> TreeRoom {
        TreeRoom([
            self.0[0].max(other.0[0]),
            self.0[1].max(other.0[1]),
            self.0[2].max(other.0[2]),
        ])
    }
}

/// The segment tree of `rooms`, where `open` (see [`Closure::room_tree`]):
/// a closed view's leaf fits nothing.
fn room_tree(rooms: &[TreeRoom], open: &[bool]) -> (Vec<TreeRoom>, usize) {
    let leaves = rooms.len().next_power_of_two();
    let mut tree = vec![TreeRoom::NOTHING_FITS; 2 * leaves];
    for (i, (&room, &open)) in rooms.iter().zip(open).enumerate() {
        if open {
            tree[leaves + i] = room;
        }
    }
    for i in (1..leaves).rev() {
        tree[i] = tree[2 * i].max(&tree[2 * i + 1]);
    }
    (tree, leaves)
}

/// What a NodePool's nodes use of its limits.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct PoolUsage {
    /// Σ capacity.
    pub capacity: Resources,
    /// Number of nodes.
    pub nodes: i64,
}

impl ExistingNodes {
    /// The view of every node of `cluster`, marked for deletion or not,
    /// reusing the views `kept` by the last build for nodes unchanged since
    /// (see `ExistingNodes::new`); also what to keep for the next one.
    pub(super) fn build(
        cluster: &Cluster,
        daemonsets: &[Arc<PodSpec>],
        node_requirements: &NodeRequirements,
        daemon_requirements: &[Requirements],
        kept: KeptViews,
    ) -> (Self, KeptViews) {
        let KeptViews { index, last } = kept;
        // The last build's views and rooms, by slot (its try order): moved
        // out when nothing else holds that build any more.
        let (mut views, mut rooms): (Vec<Option<Arc<ExistingNode>>>, Vec<TreeRoom>) =
            match last.map(|(_, last)| Arc::try_unwrap(last)) {
                Some(Ok(last)) => (last.nodes.into_iter().map(Some).collect(), last.rooms),
                Some(Err(shared)) => (
                    shared.nodes.iter().cloned().map(Some).collect(),
                    shared.rooms.clone(),
                ),
                None => (Vec::new(), Vec::new()),
            };
        let index = if index.len() == views.len() {
            index
        } else {
            views.clear();
            rooms.clear();
            Vec::new()
        };

        // A node's view is remade only when the node (or a pod on it)
        // changed since the last build; a new node's goes in a new slot.
        let mut current: Vec<(NodeId, &Node, u64, usize)> =
            Vec::with_capacity(cluster.node_count());
        let mut remade: Vec<(usize, NodeId, &Node, Option<Arc<ExistingNode>>)> = Vec::new();
        let mut kept_iter = index.iter().peekable();
        for (id, node) in cluster.nodes() {
            while let Some(&(_, _, slot)) = kept_iter.next_if(|(kept_id, _, _)| *kept_id < id) {
                views[slot as usize] = None;
            }
            let revision = cluster.node_revision(id);
            let slot = match kept_iter.next_if(|(kept_id, _, _)| *kept_id == id) {
                Some(&(_, kept_revision, slot)) => {
                    if kept_revision != revision {
                        remade.push((slot as usize, id, node, None));
                    }
                    slot as usize
                }
                None => {
                    views.push(None);
                    rooms.push(TreeRoom::NOTHING_FITS);
                    remade.push((views.len() - 1, id, node, None));
                    views.len() - 1
                }
            };
            current.push((id, node, revision, slot));
        }
        for &(_, _, slot) in kept_iter {
            views[slot as usize] = None;
        }
        // Side by side on the current rayon pool's threads when there are
        // many (most builds remake a few).
        let make = |(_, id, node, view): &mut (usize, NodeId, &Node, Option<_>)| {
            *view = Some(Arc::new(ExistingNode::new(
                cluster,
                *id,
                node,
                daemonsets,
                node_requirements,
                daemon_requirements,
            )));
        };
        if remade.len() >= VIEWS_MADE_SIDE_BY_SIDE {
            remade.par_iter_mut().for_each(make);
        } else {
            remade.iter_mut().for_each(make);
        }
        // Try order: initialized first, then by name; the id breaks ties,
        // so the order is total and any sort gives the same. The slots are
        // in the last build's order, which only a new node or a remade view
        // with another sort key can break (a removal cannot).
        let mut resort = false;
        for (slot, _, _, view) in remade {
            let Some(view) = view else { continue };
            resort |= views[slot]
                .as_ref()
                .is_none_or(|old| old.initialized != view.initialized || old.name != view.name);
            rooms[slot] = TreeRoom::of(&view.remaining);
            views[slot] = Some(view);
        }
        let mut position_of_slot: Vec<u32> = vec![u32::MAX; views.len()];
        let mut nodes: Vec<Arc<ExistingNode>> = Vec::with_capacity(current.len());
        let mut node_rooms: Vec<TreeRoom> = Vec::with_capacity(current.len());
        for ((view, room), position) in views.into_iter().zip(rooms).zip(&mut position_of_slot) {
            if let Some(view) = view {
                *position = nodes.len() as u32;
                nodes.push(view);
                node_rooms.push(room);
            }
        }
        if resort {
            // The adaptive stable sort finds the slots nearly sorted: about
            // one comparison per node.
            let mut sorted: Vec<(Arc<ExistingNode>, TreeRoom, u32)> = nodes
                .into_iter()
                .zip(node_rooms)
                .zip(0..)
                .map(|((view, room), position)| (view, room, position))
                .collect();
            // Name order breaks ties by id, so it is total on its own.
            sorted.sort_by_key(|(view, ..)| (!view.initialized, cluster.name_order(view.id)));
            let mut new_position = vec![0u32; sorted.len()];
            for (to, &(_, _, from)) in sorted.iter().enumerate() {
                new_position[from as usize] = to as u32;
            }
            for position in position_of_slot.iter_mut().filter(|p| **p != u32::MAX) {
                *position = new_position[*position as usize];
            }
            (nodes, node_rooms) = sorted
                .into_iter()
                .map(|(view, room, _)| (view, room))
                .unzip();
        }

        // Marks and pool usage in one walk (usage sums are order-free).
        let mut pool_usage: PoolSums<'_, PoolUsage> = PoolSums::new();
        let mut marked = vec![false; nodes.len()];
        let mut index = Vec::with_capacity(current.len());
        for &(id, node, revision, slot) in &current {
            let position = position_of_slot[slot];
            index.push((id, revision, position));
            marked[position as usize] = node.marked_for_deletion;
            if !node.marked_for_deletion
                && let Some(pool) = node.nodepool()
            {
                pool_usage.add(pool, |sum| {
                    sum.capacity += node.capacity;
                    sum.nodes += 1;
                });
            }
        }
        let pool_usage = pool_usage.into_map();
        let open: Vec<bool> = marked.iter().map(|m| !m).collect();
        let (room_tree, leaves) = room_tree(&node_rooms, &open);
        let existing = ExistingNodes {
            cluster_nodes: nodes.len(),
            anti_affinity_pods: anti_affinity_pods(cluster),
            marked,
            unclosed: Closure {
                ids: Vec::new(),
                open,
                room_tree,
                leaves,
                pool_usage,
                fits: FitLists::default(),
            },
            closures: Arc::default(),
            nodes,
            rooms: node_rooms,
        };
        let keep = KeptViews { index, last: None };
        (existing, keep)
    }

    /// Closes `ids` for every solve given the result
    /// ([`super::solve_with_closure`]); `cluster` must be the one these
    /// views were built from.
    pub fn closure(&self, cluster: &Cluster, ids: &[NodeId]) -> Closure {
        self.closure_of(cluster, sorted_ids(ids))
    }

    /// [`Self::closure`] of `ids`, sorted without repeats.
    fn closure_of(&self, cluster: &Cluster, ids: Vec<NodeId>) -> Closure {
        let open: Vec<bool> = self
            .nodes
            .iter()
            .zip(&self.unclosed.open)
            .map(|(n, &open)| open && ids.binary_search(&n.id).is_err())
            .collect();
        let (room_tree, leaves) = room_tree(&self.rooms, &open);
        // Closed nodes that count (not already marked) give their share back.
        let mut pool_usage = self.unclosed.pool_usage.clone();
        for node in ids.iter().filter_map(|&id| cluster.node(id)) {
            if node.marked_for_deletion {
                continue;
            }
            if let Some(usage) = node.nodepool().and_then(|pool| pool_usage.get_mut(pool)) {
                usage.capacity -= node.capacity;
                usage.nodes -= 1;
            }
        }
        Closure {
            ids,
            open,
            room_tree,
            leaves,
            pool_usage,
            fits: FitLists::default(),
        }
    }

    /// [`Self::closure`], shared with the last callers that closed the same
    /// nodes (the views are the same, so is the closure).
    pub fn shared_closure(&self, cluster: &Cluster, ids: &[NodeId]) -> Arc<Closure> {
        let ids = sorted_ids(ids);
        let lock = || self.closures.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(found) = lock().iter().find(|c| c.ids == ids) {
            return found.clone();
        }
        let made = Arc::new(self.closure_of(cluster, ids));
        let mut kept = lock();
        kept.insert(0, made.clone());
        kept.truncate(CLOSURES_KEPT);
        made
    }

    /// The views open under `closure`, kept to compare a later pass's with
    /// (see [`super::OpenViews`]).
    pub fn open_views(&self, closure: &Closure) -> super::OpenViews {
        let mut views: Vec<Arc<ExistingNode>> = self
            .nodes
            .iter()
            .zip(&closure.open)
            .filter(|&(_, &open)| open)
            .map(|(view, _)| view.clone())
            .collect();
        views.sort_unstable_by_key(|v| v.id);
        super::OpenViews {
            views,
            pool_usage: closure.pool_usage.clone(),
            anti_affinity: !self.anti_affinity_pods.is_empty(),
        }
    }

    /// Nothing closed but the nodes marked for deletion.
    pub(super) fn unclosed(&self) -> &Closure {
        &self.unclosed
    }

    /// Running pods with required anti-affinity, in pod order.
    pub(super) fn anti_affinity_pods(&self) -> &[PodId] {
        &self.anti_affinity_pods
    }

    /// Whether it was built from a cluster with as many nodes as `cluster`.
    pub(super) fn fits(&self, cluster: &Cluster) -> bool {
        self.cluster_nodes == cluster.node_count()
    }
}

impl std::fmt::Debug for ExistingNodes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExistingNodes")
            .field("nodes", &self.nodes.len())
            .finish_non_exhaustive()
    }
}

/// The existing nodes of one solve: the shared views of the nodes not
/// marked for deletion and not closed, each copied on the first pod placed
/// on it.
pub(super) struct ExistingSet<'b> {
    base: &'b ExistingNodes,
    closure: &'b Closure,
    /// Sorted ids of the nodes this solve alone closes (none of them in
    /// `closure`).
    closed: Vec<NodeId>,
    /// This solve's copies of the views it placed pods on, by index into
    /// `base`.
    changed: ChangedViews,
    /// This solve's own room tree, with the room left on the nodes it
    /// placed pods on, once it has changed more than [`OWN_TREE_AFTER`]
    /// nodes; before that searches go through the closure's fit lists (a
    /// few filled nodes to step over cost less than a copy).
    own_tree: Option<Vec<TreeRoom>>,
    /// Per room asked of `own_tree`, the subtrees found to hold no open
    /// node with that room (a bit per tree entry): rooms only shrink in a
    /// solve, so they stay so, and later searches for the same room (the
    /// replicas of one pod) skip them. A subtree's room is the maximum of
    /// each amount on its own, so it can promise a room that no node of it
    /// has (the CPU of one, the memory of another).
    dead_ends: FastMap<TreeRoom, Vec<u64>>,
}

/// What a search of a room subtree found.
enum Search<R> {
    /// The first open node that accepted, with its index and answer.
    Found(usize, R),
    /// No node accepted, but some open node had the room.
    Refused,
    /// No open node has the room.
    NoRoom,
}

/// A solve's copies of node views: a short list while few (most solves
/// change a handful of nodes), found by slot once there are more.
#[derive(Default)]
struct ChangedViews {
    views: Vec<(usize, ExistingNode)>,
    /// Per view index, the position in `views` (`u32::MAX`: unchanged);
    /// made once `views` outgrows [`ChangedViews::LISTED`].
    slots: Vec<u32>,
}

impl ChangedViews {
    const LISTED: usize = 8;

    /// Where view `index`'s copy is in `views`.
    fn position(&self, index: usize) -> Option<usize> {
        if self.slots.is_empty() {
            self.views.iter().position(|(i, _)| *i == index)
        } else {
            Some(self.slots[index] as usize).filter(|&at| at != u32::MAX as usize)
        }
    }

    fn get(&self, index: usize) -> Option<&ExistingNode> {
        self.position(index).map(|at| &self.views[at].1)
    }

    /// The copy of view `index` (of `len` views), made by `copy` if none.
    fn get_or_insert_with(
        &mut self,
        index: usize,
        len: usize,
        copy: impl FnOnce() -> ExistingNode,
    ) -> &mut ExistingNode {
        let at = match self.position(index) {
            Some(at) => at,
            None => {
                self.views.push((index, copy()));
                let at = self.views.len() - 1;
                if !self.slots.is_empty() {
                    self.slots[index] = at as u32;
                } else if self.views.len() > Self::LISTED {
                    self.slots = vec![u32::MAX; len];
                    for (position, (i, _)) in self.views.iter().enumerate() {
                        self.slots[*i] = position as u32;
                    }
                }
                at
            }
        };
        &mut self.views[at].1
    }

    fn len(&self) -> usize {
        self.views.len()
    }

    fn iter(&self) -> impl Iterator<Item = (usize, &ExistingNode)> + '_ {
        self.views.iter().map(|(i, node)| (*i, node))
    }
}

/// From how many missing views a build makes them side by side.
const VIEWS_MADE_SIDE_BY_SIDE: usize = 32;

/// How many nodes a solve changes before it keeps its own room tree: past
/// that, searches through the fit lists would keep stepping over nodes it
/// has already filled (measured on large-week: 40 beats 8 by 9 %, and
/// 200 gains nothing more).
const OWN_TREE_AFTER: usize = 40;

/// Sets leaf `index` of a room tree with `leaves` leaves and updates its
/// ancestors.
fn set_leaf(tree: &mut [TreeRoom], leaves: usize, index: usize, room: Resources) {
    let mut at = leaves + index;
    tree[at] = TreeRoom::of(&room);
    while at > 1 {
        at /= 2;
        tree[at] = tree[2 * at].max(&tree[2 * at + 1]);
    }
}

impl<'b> ExistingSet<'b> {
    /// The nodes of `base` not marked for deletion (as built), not closed
    /// by `closure` (made from `base`) and not in `closed` (sorted).
    pub fn new(
        base: &'b ExistingNodes,
        cluster: &Cluster,
        closure: &'b Closure,
        closed: &[NodeId],
    ) -> Self {
        debug_assert_eq!(
            closure.open.len(),
            base.nodes.len(),
            "closure of other views"
        );
        debug_assert!(
            base.nodes
                .iter()
                .zip(&base.marked)
                .all(|(n, &marked)| cluster
                    .node(n.id)
                    .is_none_or(|node| node.marked_for_deletion)
                    == marked),
            "nodes marked for deletion since the views were built: close them instead"
        );
        ExistingSet {
            base,
            closure,
            closed: closed
                .iter()
                .copied()
                .filter(|&id| !closure.contains(id))
                .collect(),
            changed: ChangedViews::default(),
            own_tree: None,
            dead_ends: FastMap::default(),
        }
    }

    fn is_open(&self, index: usize) -> bool {
        self.closure.open[index]
            && self
                .closed
                .binary_search(&self.base.nodes[index].id)
                .is_err()
    }

    /// The current view of `base` entry `index`.
    fn get(&self, index: usize) -> &ExistingNode {
        match self.changed.get(index) {
            Some(node) => node,
            None => &self.base.nodes[index],
        }
    }

    /// The first usable node in try order for which `accept` answers, with
    /// its index. Nodes whose room (as built, or as left by this solve; a
    /// solve only ever lowers it) cannot hold `requests` are skipped
    /// without asking, which is what `accept` would answer for them when it
    /// requires the requests to fit.
    pub fn first_fit<R>(
        &mut self,
        requests: &Resources,
        mut accept: impl FnMut(&ExistingNode) -> Option<R>,
    ) -> Option<(usize, R)> {
        let wanted = TreeRoom::wanted(requests);
        let Some(tree) = self.own_tree.as_deref() else {
            return self.search_listed(&wanted, &mut accept);
        };
        let mut dead = self
            .dead_ends
            .remove(&wanted)
            .unwrap_or_else(|| vec![0; tree.len().div_ceil(64)]);
        let found = match self.search(tree, 1, &wanted, &mut accept, &mut dead) {
            Search::Found(index, r) => Some((index, r)),
            Search::Refused | Search::NoRoom => None,
        };
        self.dead_ends.insert(wanted, dead);
        found
    }

    /// [`ExistingSet::first_fit`] through the closure's list for `wanted`:
    /// the same first view, since every view that may hold the room now is
    /// on the list (a solve only lowers rooms) and the list is in try
    /// order. The few views this solve changed are checked by their
    /// current room.
    fn search_listed<R>(
        &self,
        wanted: &TreeRoom,
        accept: &mut impl FnMut(&ExistingNode) -> Option<R>,
    ) -> Option<(usize, R)> {
        let closure = self.closure;
        let mut lists = closure.fits.lock();
        let list = lists.entry(*wanted).or_default();
        let mut next = 0;
        loop {
            if next == list.views.len()
                && !list.extend(
                    &closure.room_tree,
                    closure.leaves,
                    self.base.nodes.len(),
                    wanted,
                )
            {
                return None;
            }
            let index = list.views[next] as usize;
            next += 1;
            if !self.is_open(index) {
                continue;
            }
            let node = match self.changed.get(index) {
                Some(node) if !TreeRoom::of(&node.remaining).may_fit(wanted) => continue,
                Some(node) => node,
                None => &self.base.nodes[index],
            };
            if let Some(r) = accept(node) {
                return Some((index, r));
            }
        }
    }

    /// The first open node of subtree `at` of `tree` that holds `wanted`
    /// and that `accept` takes, skipping the subtrees `dead` marks and
    /// marking those found to hold no such room.
    fn search<R>(
        &self,
        tree: &[TreeRoom],
        at: usize,
        wanted: &TreeRoom,
        accept: &mut impl FnMut(&ExistingNode) -> Option<R>,
        dead: &mut [u64],
    ) -> Search<R> {
        if dead[at / 64] & (1 << (at % 64)) != 0 || !tree[at].may_fit(wanted) {
            return Search::NoRoom;
        }
        if at >= self.closure.leaves {
            let index = at - self.closure.leaves;
            if index >= self.base.nodes.len() || !self.is_open(index) {
                return Search::NoRoom;
            }
            return match accept(self.get(index)) {
                Some(r) => Search::Found(index, r),
                None => Search::Refused,
            };
        }
        let left = self.search(tree, 2 * at, wanted, accept, dead);
        if let Search::Found(..) = left {
            return left;
        }
        match (left, self.search(tree, 2 * at + 1, wanted, accept, dead)) {
            (_, found @ Search::Found(..)) => found,
            (Search::NoRoom, Search::NoRoom) => {
                dead[at / 64] |= 1 << (at % 64);
                Search::NoRoom
            }
            _ => Search::Refused,
        }
    }

    /// The hostname domain of every usable node in try order, as the
    /// views were built (a pod placed on a node never changes it).
    pub fn hostnames(&self) -> impl Iterator<Item = &str> + '_ {
        (0..self.base.nodes.len())
            .filter(|&i| self.is_open(i))
            .map(|i| self.base.nodes[i].hostname())
    }

    /// The current view of node `index` (see [`ExistingSet::first_fit`]).
    pub fn view(&self, index: usize) -> &ExistingNode {
        self.get(index)
    }

    /// Places `pod` on node `index` (this solve's own copy of its view,
    /// made on first use).
    pub fn add(&mut self, index: usize, pod: &PodWork<'_>, requirements: Arc<Requirements>) {
        let base = &self.base.nodes;
        let node = self
            .changed
            .get_or_insert_with(index, base.len(), || ExistingNode::clone(&base[index]));
        node.add(pod, requirements);
        let room = node.remaining;
        let leaves = self.closure.leaves;
        match &mut self.own_tree {
            Some(tree) => set_leaf(tree, leaves, index, room),
            None if self.changed.len() > OWN_TREE_AFTER => {
                let mut tree = self.closure.room_tree.clone();
                for (i, node) in self.changed.iter() {
                    set_leaf(&mut tree, leaves, i, node.remaining);
                }
                self.own_tree = Some(tree);
            }
            None => {}
        }
    }

    /// What the nodes of `pool` this solve may use (neither marked for
    /// deletion nor closed) use of its limits.
    pub fn pool_usage(&self, cluster: &Cluster, pool: &str) -> PoolUsage {
        let mut usage = self.closure.pool_usage(pool);
        for node in self.closed.iter().filter_map(|&id| cluster.node(id)) {
            if !node.marked_for_deletion && node.nodepool() == Some(pool) {
                usage.capacity -= node.capacity;
                usage.nodes -= 1;
            }
        }
        usage
    }
}

#[cfg(test)]
mod tests;
