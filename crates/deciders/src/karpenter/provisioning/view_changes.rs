//! The placement views open to the solves over one closure, kept so that a
//! later pass can tell how they changed ([`OpenViews::changes_since`]):
//! which nodes differ at all, which differ in room only, and which may now
//! take a pod they refused before. A node whose view only lost room (the
//! same taints, labels, host ports and initialization, and no amount
//! larger) refuses every pod it refused then, so a solve that placed
//! nothing on it takes the same path past it; one that differs in room
//! only still takes, in the same try order, pods it has room for, and one
//! whose labels or taints changed but whose name and initialization did
//! not keeps its place in that order. The disruption controller reads
//! this to reuse a what-if's verdict while nothing it rested on changed.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::existing::{ExistingNode, PoolUsage};
use super::pod::PodWork;
use super::queue::QueueKey;
use super::topology::PodTopology;
use super::{PreferencePolicy, SchedulingPolicies};
use crate::kube::resources::Resources;
use crate::scheduler::{Cluster, NodeId, PodId};

/// The views open under one closure, by node id, with what the closure
/// charges the NodePools' limits with and whether any running pod's
/// required anti-affinity constrains where pods may go.
#[derive(Clone)]
pub struct OpenViews {
    pub(super) views: Vec<Arc<ExistingNode>>,
    pub(super) pool_usage: BTreeMap<String, PoolUsage>,
    pub(super) anti_affinity: bool,
}

impl std::fmt::Debug for OpenViews {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenViews")
            .field("nodes", &self.views.len())
            .finish_non_exhaustive()
    }
}

/// How the open views changed between two passes.
#[derive(Clone, Default)]
pub struct ViewChanges {
    /// Nodes whose view differs, or that opened or closed, sorted.
    changed: Vec<NodeId>,
    /// Views open now that may take a pod they (or nothing) refused then.
    grown: Vec<Arc<ExistingNode>>,
    /// Changed nodes whose view differs in room only (less, more or
    /// some of each), sorted.
    resized: Vec<NodeId>,
    /// Changed nodes still open at the same place in the try order (the
    /// same name and initialization), sorted.
    same_place: Vec<NodeId>,
    /// The same NodePool limit charges.
    same_pool_usage: bool,
    /// No running pod with required anti-affinity, then or now.
    no_anti_affinity: bool,
}

impl std::fmt::Debug for ViewChanges {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ViewChanges")
            .field("changed", &self.changed)
            .field("grown", &self.grown.len())
            .finish_non_exhaustive()
    }
}

impl OpenViews {
    /// How the views changed from `earlier` to these.
    pub fn changes_since(&self, earlier: &OpenViews) -> ViewChanges {
        let mut changes = ViewChanges {
            same_pool_usage: self.pool_usage == earlier.pool_usage,
            no_anti_affinity: !self.anti_affinity && !earlier.anti_affinity,
            ..ViewChanges::default()
        };
        let mut then = earlier.views.iter().peekable();
        for now in &self.views {
            while let Some(gone) = then.next_if(|t| t.id < now.id) {
                changes.changed.push(gone.id);
            }
            match then.next_if(|t| t.id == now.id) {
                Some(before) if Arc::ptr_eq(before, now) => {}
                Some(before) => {
                    changes.changed.push(now.id);
                    if now.initialized == before.initialized && now.name == before.name {
                        changes.same_place.push(now.id);
                    }
                    let same_but_room = same_but_room(now, before);
                    if same_but_room {
                        changes.resized.push(now.id);
                    }
                    if !same_but_room || !now.remaining.admits_no_more_than(&before.remaining) {
                        changes.grown.push(now.clone());
                    }
                }
                None => {
                    changes.changed.push(now.id);
                    changes.grown.push(now.clone());
                }
            }
        }
        changes.changed.extend(then.map(|gone| gone.id));
        changes
    }

    /// Every open view's node, whether it has finished initializing, and
    /// its room, by node id.
    pub fn rooms(&self) -> impl Iterator<Item = (NodeId, bool, Resources)> + '_ {
        self.views
            .iter()
            .map(|v| (v.id, v.initialized, v.remaining))
    }

    /// The open view of `node`.
    fn view(&self, node: NodeId) -> Option<&ExistingNode> {
        self.views
            .binary_search_by_key(&node, |v| v.id)
            .ok()
            .map(|i| &*self.views[i])
    }
}

/// The same view but for its room (see the module docs).
fn same_but_room(now: &ExistingNode, before: &ExistingNode) -> bool {
    now.initialized == before.initialized
        && now.name == before.name
        && now.taints == before.taints
        && now.host_ports == before.host_ports
        && (Arc::ptr_eq(&now.requirements, &before.requirements)
            || now.requirements == before.requirements)
}

/// Whether `view` takes `pods` one after another in the solve's queue
/// order, as a solve adds them (topology-free pods: no group constrains
/// them).
fn takes_in_turn(
    view: &ExistingNode,
    pods: &[PodId],
    cluster: &Cluster,
    policies: SchedulingPolicies,
) -> bool {
    let ignore_preferences = policies.preference == PreferencePolicy::Ignore;
    let Some(mut works) = pods
        .iter()
        .map(|&id| {
            let pod = cluster.pod(id)?;
            Some((
                QueueKey::of(pod),
                PodWork::new(id, &pod.spec, ignore_preferences).ok()?,
            ))
        })
        .collect::<Option<Vec<_>>>()
    else {
        return false;
    };
    works.sort_unstable_by_key(|(key, _)| *key);
    let unconstrained = PodTopology::unconstrained();
    let mut view = view.clone();
    works
        .iter()
        .all(|(_, work)| match view.can_add(&unconstrained, work) {
            Some(requirements) => {
                view.add(work, requirements);
                true
            }
            None => false,
        })
}

/// Whether `a` comes before `b` in a solve's try order (initialized first,
/// then by name, then by id).
fn tried_before(a: &ExistingNode, b: &ExistingNode) -> bool {
    (!a.initialized, &a.name, a.id) < (!b.initialized, &b.name, b.id)
}

impl ViewChanges {
    /// Whether what a solve reads beyond the nodes themselves is the
    /// same: the NodePools' limit charges (when `limits` matter) and no
    /// anti-affinity of running pods.
    pub fn same_surroundings(&self, limits: bool) -> bool {
        self.no_anti_affinity && (self.same_pool_usage || !limits)
    }

    /// Whether `node`'s view is the very one of then.
    fn unchanged(&self, node: NodeId) -> bool {
        self.changed.binary_search(&node).is_err()
    }

    /// Whether `node` is open now and takes `pods` (topology-free, of
    /// `cluster`), which a solve then put there, as it took them then: its
    /// view is the same; or differs in room only and has room for them all
    /// (requests are never negative, so room for all is room for each in
    /// turn); or keeps its place in the try order (the same name and
    /// initialization) and takes them one after another in queue order.
    pub fn still_takes(
        &self,
        now: &OpenViews,
        node: NodeId,
        pods: &[PodId],
        cluster: &Cluster,
        policies: SchedulingPolicies,
    ) -> bool {
        if self.unchanged(node) {
            return true;
        }
        let Some(view) = now.view(node) else {
            return false;
        };
        if self.resized.binary_search(&node).is_ok() {
            let mut placed = Resources::ZERO;
            for pod in pods {
                match cluster.pod(*pod) {
                    Some(pod) => placed += pod.spec.requests,
                    None => return false,
                }
            }
            return !(view.remaining - placed).any_negative();
        }
        self.same_place.binary_search(&node).is_ok() && takes_in_turn(view, pods, cluster, policies)
    }

    /// Whether a pod requesting `requests`, which a solve then placed on
    /// the existing node `destination` (`None`: on none), might now be
    /// taken by a grown view other than `closed`'s before reaching it.
    /// `destination` must still take its pods (see [`Self::still_takes`]);
    /// it may have grown itself, and then still comes where it came in the
    /// try order.
    pub fn may_divert(
        &self,
        now: &OpenViews,
        requests: &Resources,
        destination: Option<NodeId>,
        closed: NodeId,
    ) -> bool {
        let destination_id = destination;
        let destination = destination.and_then(|id| now.view(id));
        self.grown.iter().any(|grown| {
            grown.id != closed
                && Some(grown.id) != destination_id
                && requests.fits(&grown.remaining)
                && destination.is_none_or(|d| !tried_before(d, grown))
        })
    }

    /// Whether no view grew (other than `closed`'s).
    pub fn nothing_grew_but(&self, closed: NodeId) -> bool {
        self.grown.iter().all(|g| g.id == closed)
    }
}
