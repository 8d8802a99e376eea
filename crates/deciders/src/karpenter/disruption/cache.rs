//! What a caller keeps from one disruption pass to the next so that the
//! next one is cheaper, and nothing else: each node's candidate facts by
//! node revision, consolidation's last savings-ratio order,
//! single-node consolidation's no-op verdicts (see `verdicts`), the no-op
//! bound's rulings on single candidates (see `no_op_bound`) and
//! multi-node consolidation's last no-op search (see `searches`). A pass
//! reads the same decisions with or without it.

use std::ops::{Deref, DerefMut};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};

use super::no_op_bound::KeptRulings;
use super::searches::NoOpSearch;
use super::types::{Amounts, amounts};
use super::verdicts::Verdicts;
use crate::cluster::{Cluster, Node, NodeId, PodId};
use crate::karpenter::provisioning::{Prepared, QueueRun};
use crate::kube::labels::{LABEL_CAPACITY_TYPE, LABEL_NODEPOOL, LABEL_TOPOLOGY_ZONE};
use crate::pods::{eviction_cost, is_active, is_reschedulable};

/// Something kept that was made with one solve setup (NodePools,
/// DaemonSets, catalogs): held with that setup, so that its address stays
/// its own, and emptied when a pass brings another.
#[derive(Debug, Default)]
pub(super) struct SetupBound<T> {
    setup: Option<Arc<Prepared>>,
    kept: T,
}

impl<T: Default> SetupBound<T> {
    /// A pass with `setup` begins: what was made with another goes.
    pub(super) fn begin_pass(&mut self, setup: &Arc<Prepared>) {
        if !self.setup.as_ref().is_some_and(|s| Arc::ptr_eq(s, setup)) {
            self.kept = T::default();
            self.setup = Some(setup.clone());
        }
    }

    /// Whether a pass has begun (only then is there a setup to make
    /// anything with).
    pub(super) fn has_setup(&self) -> bool {
        self.setup.is_some()
    }
}

impl<T> Deref for SetupBound<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.kept
    }
}

impl<T> DerefMut for SetupBound<T> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.kept
    }
}

/// What a candidate reads of its node's labels and of the pods bound to
/// it: a function of the node and its pods alone.
#[derive(Debug, PartialEq)]
pub struct NodeFacts {
    /// The NodePool named by the `karpenter.sh/nodepool` label, else by
    /// the NodeClaim (empty when neither names one).
    pub(super) nodepool: Arc<str>,
    /// The first of the capacity-type and zone labels the node lacks.
    pub(super) missing_label: Option<&'static str>,
    /// Active pods in node order: the only pods that can block a
    /// disruption (do-not-disrupt and PDBs apply to active pods only).
    pub(super) active: Vec<PodId>,
    /// The active pods with a do-not-disrupt annotation, in node order
    /// (the only ones whose protection can be on).
    pub(super) protected: Vec<PodId>,
    /// The pods that need a new home if the node goes, in node order.
    pub(super) reschedulable: Arc<[PodId]>,
    /// The CPU, memory and pod-slot requests of `reschedulable`, in order.
    pub(super) reschedulable_requests: Arc<[Amounts]>,
    /// `reschedulable` in the solve's queue order, made on first use (the
    /// what-ifs of every pass while the node is unchanged take it).
    pub(super) reschedulable_run: OnceLock<QueueRun>,
    /// The node's name.
    pub(super) name: Arc<str>,
    /// `Σ max(0, EvictionCost)` over `reschedulable`, in order.
    pub(super) reschedule_cost: f64,
    /// `Σ EvictionCost` over every bound pod, in order.
    pub(super) all_pods_cost: f64,
    /// Every bound pod, finished ones included.
    pub(super) pod_count: usize,
}

impl NodeFacts {
    /// The facts of a node without pods, for tests of what reads only
    /// names and NodePools.
    #[cfg(test)]
    pub(super) fn named(name: &str, nodepool: &str) -> NodeFacts {
        NodeFacts {
            nodepool: Arc::from(nodepool),
            missing_label: None,
            active: Vec::new(),
            protected: Vec::new(),
            reschedulable: Arc::from([]),
            reschedulable_requests: Arc::from([]),
            reschedulable_run: OnceLock::new(),
            name: Arc::from(name),
            reschedule_cost: 0.0,
            all_pods_cost: 0.0,
            pod_count: 0,
        }
    }

    pub(super) fn of(cluster: &Cluster, node: &Node) -> NodeFacts {
        let pods = || {
            node.pods
                .iter()
                .filter_map(|id| cluster.pod(*id).map(|p| (*id, p)))
        };
        // One walk for the active, protected and reschedulable pods, in
        // the node's order, and the reschedulable ones' requests and cost.
        let mut active: Vec<PodId> = Vec::with_capacity(node.pods.len());
        let mut protected: Vec<PodId> = Vec::new();
        let mut reschedulable: Vec<PodId> = Vec::with_capacity(node.pods.len());
        let mut reschedulable_requests: Vec<Amounts> = Vec::with_capacity(node.pods.len());
        let mut reschedule_cost = 0.0;
        for (id, pod) in pods() {
            if is_active(pod) {
                active.push(id);
                if pod.spec.do_not_disrupt.is_some() {
                    protected.push(id);
                }
            }
            if is_reschedulable(pod) {
                reschedulable.push(id);
                reschedulable_requests.push(amounts(&pod.spec.requests));
                reschedule_cost += eviction_cost(pod).max(0.0);
            }
        }
        let all_pods_cost = pods().map(|(_, p)| eviction_cost(p)).sum::<f64>();
        // The NodeClaim's copy of the name is shared by the pool's nodes
        // (see `NodeClaimInfo::nodepool`): lookups by name then mostly
        // settle by address (see `PoolLookup`).
        let claim_pool = node.claim.as_ref().map(|c| &c.nodepool);
        let nodepool = match node.labels.get(LABEL_NODEPOOL) {
            Some(label) if claim_pool.is_none_or(|p| **p != *label) => Arc::from(label),
            _ => claim_pool.cloned().unwrap_or_else(|| Arc::from("")),
        };
        NodeFacts {
            nodepool,
            name: Arc::from(node.name.as_str()),
            missing_label: [LABEL_CAPACITY_TYPE, LABEL_TOPOLOGY_ZONE]
                .into_iter()
                .find(|label| !node.labels.contains_key(label)),
            active,
            protected,
            reschedulable: reschedulable.into(),
            reschedulable_requests: reschedulable_requests.into(),
            reschedulable_run: OnceLock::new(),
            reschedule_cost,
            all_pods_cost,
            pod_count: node.pods.len(),
        }
    }
}

/// The facts of the nodes of the last pass, with the node revisions they
/// were made at (see [`Cluster::node_revision`]), and the order
/// consolidation tried its candidates in.
#[derive(Debug, Default)]
pub struct CandidateCache {
    kept: Mutex<Vec<(NodeId, u64, Arc<NodeFacts>)>>,
    consolidation_order: Mutex<LastOrder>,
    /// Single-node consolidation's no-op verdicts.
    pub(super) verdicts: Verdicts,
    /// Multi-node consolidation's last no-op search.
    pub(super) multi_node: NoOpSearch,
    /// The no-op bound's rulings on single candidates.
    pub(super) rulings: Mutex<KeptRulings>,
}

impl CandidateCache {
    /// The no-op bound's kept rulings.
    pub(super) fn rulings(&self) -> MutexGuard<'_, KeptRulings> {
        self.rulings.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Consolidation's savings-ratio order of the last pass that sorted.
    pub(super) fn consolidation_order(&self) -> MutexGuard<'_, LastOrder> {
        self.consolidation_order
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Facts of every node of `cluster` in id order: kept ones where the
    /// node's revision is unchanged, new ones otherwise; the cache then
    /// holds exactly these.
    pub(super) fn facts_of_every_node(&self, cluster: &Cluster) -> Vec<Arc<NodeFacts>> {
        let mut kept = self.kept.lock().unwrap_or_else(PoisonError::into_inner);
        let old = std::mem::replace(&mut *kept, Vec::with_capacity(cluster.node_count()));
        let mut old = old.into_iter().peekable();
        let mut all = Vec::with_capacity(cluster.node_count());
        for (id, node) in cluster.nodes() {
            while old.next_if(|(kept_id, _, _)| *kept_id < id).is_some() {}
            let revision = cluster.node_revision(id);
            let facts = match old.next_if(|(kept_id, _, _)| *kept_id == id) {
                Some((_, kept_revision, facts)) if kept_revision == revision => facts,
                _ => Arc::new(NodeFacts::of(cluster, node)),
            };
            kept.push((id, revision, facts.clone()));
            all.push(facts);
        }
        all
    }
}

/// The savings-ratio order of the last pass, kept to start the next sort
/// from: a pass's candidates and their ratios mostly stay from one pass to
/// the next, so that order is nearly sorted already.
#[derive(Debug, Default)]
pub struct LastOrder {
    /// Node ids in the last order.
    pub(super) nodes: Vec<NodeId>,
    /// Per node id, its position in `nodes` (`u32::MAX`: not there).
    pub(super) position: Vec<u32>,
}

impl LastOrder {
    pub(super) fn position(&self, node: NodeId) -> u32 {
        self.position
            .get(node.0 as usize)
            .copied()
            .unwrap_or(u32::MAX)
    }

    /// Keeps `nodes` as the last order.
    pub(super) fn replace(&mut self, nodes: impl Iterator<Item = NodeId>) {
        for node in self.nodes.drain(..) {
            self.position[node.0 as usize] = u32::MAX;
        }
        self.nodes.extend(nodes);
        for (at, node) in self.nodes.iter().enumerate() {
            let slot = node.0 as usize;
            if self.position.len() <= slot {
                self.position.resize(slot + 1, u32::MAX);
            }
            self.position[slot] = at as u32;
        }
    }
}
