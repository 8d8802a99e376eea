//! The placement views open to the solves over one closure, kept so that a
//! later pass can tell how they changed ([`OpenViews::changes_since`]):
//! which nodes differ at all, and which may now take a pod they refused
//! before. A node whose view only lost room (the same taints, labels,
//! host ports and initialization, and no amount larger) refuses every pod
//! it refused then, so a solve that placed nothing on it takes the same
//! path past it. The disruption controller reads this to reuse a
//! what-if's verdict while nothing it rested on changed.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::existing::{ExistingNode, PoolUsage};
use crate::kube::resources::Resources;
use crate::scheduler::NodeId;

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
    /// Changed nodes whose view only lost room, sorted.
    shrunk: Vec<NodeId>,
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
                    if only_lost_room(now, before) {
                        changes.shrunk.push(now.id);
                    } else {
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

    /// The open view of `node`.
    fn view(&self, node: NodeId) -> Option<&ExistingNode> {
        self.views
            .binary_search_by_key(&node, |v| v.id)
            .ok()
            .map(|i| &*self.views[i])
    }
}

/// The same view but for less room (see the module docs).
fn only_lost_room(now: &ExistingNode, before: &ExistingNode) -> bool {
    now.initialized == before.initialized
        && now.name == before.name
        && now.taints == before.taints
        && now.host_ports == before.host_ports
        && (Arc::ptr_eq(&now.requirements, &before.requirements)
            || now.requirements == before.requirements)
        && now.remaining.admits_no_more_than(&before.remaining)
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

    /// Whether `node` is open now and takes pods requesting `placed` in
    /// all, as it took them then: its view is the same, or only lost room
    /// and still has room for them (requests are never negative, so
    /// room for all is room for each in turn).
    pub fn still_takes(&self, now: &OpenViews, node: NodeId, placed: &Resources) -> bool {
        if self.unchanged(node) {
            return true;
        }
        self.shrunk.binary_search(&node).is_ok()
            && now
                .view(node)
                .is_some_and(|view| !(view.remaining - *placed).any_negative())
    }

    /// Whether a pod requesting `requests`, which a solve then placed on
    /// the existing node `destination` (`None`: on none), might now be
    /// taken by a grown view other than `closed`'s before reaching it.
    /// `destination` must still take its pods (see [`Self::still_takes`]).
    pub fn may_divert(
        &self,
        now: &OpenViews,
        requests: &Resources,
        destination: Option<NodeId>,
        closed: NodeId,
    ) -> bool {
        let destination = destination.and_then(|id| now.view(id));
        self.grown.iter().any(|grown| {
            grown.id != closed
                && requests.fits(&grown.remaining)
                && destination.is_none_or(|d| !tried_before(d, grown))
        })
    }

    /// Whether no view grew (other than `closed`'s).
    pub fn nothing_grew_but(&self, closed: NodeId) -> bool {
        self.grown.iter().all(|g| g.id == closed)
    }
}
