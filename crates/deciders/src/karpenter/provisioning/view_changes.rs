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
//!
//! NodePool limits enter a solve only when a template's largest option no
//! longer fits what is left of them (the solve then drops options); with
//! limits far from reached ([`OpenViews::claims_within_limits`]), what the
//! nodes charge them with may change without changing any step.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::existing::{ExistingNode, PoolUsage};
use super::pod::PodWork;
use super::queue::QueueKey;
use super::topology::PodTopology;
use super::{NodePoolContext, Prepared};
use super::{PreferencePolicy, SchedulingPolicies};
use crate::kube::resources::{ResourceKind, Resources};
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
    /// How many new NodeClaims a solve over these views (with `prepared`
    /// for `nodepools`) can open before a NodePool's limits could drop an
    /// option of its template: while fewer are open, what is left of
    /// every limit holds the template's largest option, as each claim
    /// opened charges at most that (`u64::MAX` without limits). Counted
    /// from what the open nodes charge; a solve that closes a node has
    /// that much more left.
    pub fn claims_within_limits(
        &self,
        nodepools: &[NodePoolContext<'_>],
        prepared: &Prepared,
        node_count_resource: Option<ResourceKind>,
    ) -> u64 {
        let mut claims = u64::MAX;
        for (index, ctx) in nodepools.iter().enumerate() {
            // A pool without a template or options opens no NodeClaim.
            let Ok(template) = prepared.template(index) else {
                continue;
            };
            if ctx.pool.limits.is_empty() || template.options.is_empty() {
                continue;
            }
            let usage = self
                .pool_usage
                .get(&ctx.pool.name)
                .copied()
                .unwrap_or_default();
            for (&kind, &limit) in &ctx.pool.limits {
                let (used, largest) = if node_count_resource == Some(kind) {
                    (usage.nodes, 1)
                } else {
                    (usage.capacity.get(kind), template.max_capacity.get(kind))
                };
                if largest <= 0 {
                    continue;
                }
                let left = (limit - used).max(0);
                claims = claims.min((left / largest) as u64);
            }
        }
        claims
    }

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
    /// same: the NodePools' limit charges (unless `limits_far`: no limit
    /// could drop an option in either pass, see
    /// [`OpenViews::claims_within_limits`]) and no anti-affinity of
    /// running pods.
    pub fn same_surroundings(&self, limits_far: bool) -> bool {
        self.no_anti_affinity && (self.same_pool_usage || limits_far)
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
