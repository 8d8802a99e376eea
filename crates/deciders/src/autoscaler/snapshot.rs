//! CA's ClusterSnapshot: a private copy of the cluster that the scale-up
//! and scale-down simulations add template nodes to, place pods on and
//! take nodes out of, with fork / revert / commit as upstream's
//! `clustersnapshot` offers (`simulator/clustersnapshot/**`).
//!
//! Feasibility is kube-scheduler's Filter plugins only, first fit over the
//! candidate order (`predicate/plugin_runner.go` `RunFiltersUntilPassingNode`):
//! no scoring. Pods without inter-pod constraints in a cluster where no
//! placed pod carries required anti-affinity take the node-local filters
//! ([`fits_node`]); others get the full [`PodFilter`] prepared against the
//! snapshot as it is (O(pods) per prepared pod).
//!
//! Changes are journalled; [`Snapshot::revert`] undoes everything after a
//! mark. Nodes taken out are only cordoned (`marked_for_deletion`, as CA
//! taints them `ToBeDeletedByClusterAutoscaler`) so they can come back.

use crate::cluster::{Cluster, Node, NodeId, Pod, PodId, PodPhase};
use crate::scheduler::filter::{PodFilter, Unfit, fits_node};
use crate::scheduler::placement::Placement;

#[derive(Debug, Clone)]
enum Change {
    AddedNode(NodeId),
    Moved {
        pod: PodId,
        from: Option<NodeId>,
        phase: PodPhase,
    },
    Cordoned(NodeId),
}

/// A forkable copy of the cluster.
#[derive(Debug, Clone)]
pub struct Snapshot {
    cluster: Cluster,
    journal: Vec<Change>,
    any_anti_affinity: bool,
}

/// A point to revert to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mark(usize);

fn has_inter_pod_terms(pod: &Pod) -> bool {
    let s = &pod.spec;
    !s.pod_affinity.required.is_empty()
        || !s.pod_anti_affinity.required.is_empty()
        || s.topology_spread
            .iter()
            .any(|c| c.when_unsatisfiable == crate::kube::pod::WhenUnsatisfiable::DoNotSchedule)
}

impl Snapshot {
    /// A copy of `cluster` without its unregistered nodes (instances that
    /// have no Node object yet: CA counts them as upcoming instead).
    pub fn new(cluster: &Cluster) -> Snapshot {
        let mut copy = cluster.clone();
        let unregistered: Vec<NodeId> = copy
            .nodes()
            .filter(|(_, n)| !n.registered)
            .map(|(id, _)| id)
            .collect();
        for id in unregistered {
            copy.remove_node(id);
        }
        let any_anti_affinity = copy
            .pods()
            .any(|(_, p)| p.node.is_some() && !p.spec.pod_anti_affinity.required.is_empty());
        Snapshot {
            cluster: copy,
            journal: Vec::new(),
            any_anti_affinity,
        }
    }

    /// The cluster as simulated so far.
    pub fn cluster(&self) -> &Cluster {
        &self.cluster
    }

    /// A mark to revert to.
    pub fn fork(&self) -> Mark {
        Mark(self.journal.len())
    }

    /// Undoes every change after `mark`.
    pub fn revert(&mut self, mark: Mark) {
        while self.journal.len() > mark.0 {
            let Some(change) = self.journal.pop() else {
                break;
            };
            match change {
                Change::AddedNode(id) => {
                    self.cluster.remove_node(id);
                }
                Change::Moved { pod, from, phase } => {
                    self.cluster.unbind(pod);
                    if let Some(node) = from {
                        self.cluster.bind(pod, node);
                    }
                    if let Some(p) = self.cluster.pod_mut(pod) {
                        p.phase = phase;
                    }
                }
                Change::Cordoned(id) => {
                    if let Some(n) = self.cluster.node_mut(id) {
                        n.marked_for_deletion = false;
                    }
                }
            }
        }
    }

    /// Adds a node with pods to start on it (copies, e.g. DaemonSet pods).
    pub fn add_node(&mut self, node: Node, pods: &[Pod]) -> NodeId {
        let id = self.cluster.add_node(node);
        self.journal.push(Change::AddedNode(id));
        for pod in pods {
            let mut pod = pod.clone();
            pod.node = Some(id);
            self.any_anti_affinity |= !pod.spec.pod_anti_affinity.required.is_empty();
            self.cluster.add_pod(pod);
        }
        id
    }

    /// Adds a pod that is not in the cluster (unbound); returns its id.
    pub fn add_pod(&mut self, pod: Pod) -> PodId {
        self.cluster.add_pod(pod)
    }

    /// Places `pod` on `node` (moving it if it was elsewhere).
    pub fn bind(&mut self, pod: PodId, node: NodeId) {
        let Some(p) = self.cluster.pod(pod) else {
            return;
        };
        self.any_anti_affinity |= !p.spec.pod_anti_affinity.required.is_empty();
        self.journal.push(Change::Moved {
            pod,
            from: p.node,
            phase: p.phase,
        });
        self.cluster.bind(pod, node);
    }

    /// Takes `pod` off its node (it becomes pending).
    pub fn unbind(&mut self, pod: PodId) {
        let Some(p) = self.cluster.pod(pod) else {
            return;
        };
        self.journal.push(Change::Moved {
            pod,
            from: p.node,
            phase: p.phase,
        });
        self.cluster.unbind(pod);
        if let Some(p) = self.cluster.pod_mut(pod) {
            p.phase = PodPhase::Pending;
        }
    }

    /// Cordons a node: nothing new lands on it.
    pub fn cordon(&mut self, node: NodeId) {
        if let Some(n) = self.cluster.node_mut(node)
            && !n.marked_for_deletion
        {
            n.marked_for_deletion = true;
            self.journal.push(Change::Cordoned(node));
        }
    }

    /// The first of `candidates` where `pod` passes every filter.
    pub fn first_fit(
        &self,
        pod: PodId,
        candidates: impl IntoIterator<Item = NodeId>,
    ) -> Option<NodeId> {
        let p = self.cluster.pod(pod)?;
        if !self.any_anti_affinity && !has_inter_pod_terms(p) {
            return candidates.into_iter().find(|&id| {
                self.cluster
                    .node(id)
                    .is_some_and(|n| fits_node(&self.cluster, &p.spec, n).is_ok())
            });
        }
        let spec = p.spec.clone();
        let mut placement = Placement::new(&self.cluster);
        let filter = PodFilter::new(&spec, &mut placement);
        candidates.into_iter().find(|&id| {
            self.cluster
                .node(id)
                .is_some_and(|n| filter.check(&placement, id, n).is_ok())
        })
    }

    /// Whether `pod` fails on `node` because of a topology spread
    /// constraint (PodTopologySpread's "didn't match pod topology spread
    /// constraints").
    pub fn blocked_by_spread(&self, pod: PodId, node: NodeId) -> bool {
        let (Some(p), Some(n)) = (self.cluster.pod(pod), self.cluster.node(node)) else {
            return false;
        };
        let spec = p.spec.clone();
        let mut placement = Placement::new(&self.cluster);
        let filter = PodFilter::new(&spec, &mut placement);
        matches!(filter.check(&placement, node, n), Err(Unfit::Spread))
    }

    /// Whether `pod` passes every filter on `node`.
    pub fn fits(&self, pod: PodId, node: NodeId) -> bool {
        self.first_fit(pod, [node]).is_some()
    }

    /// Places `pod` on the first fitting candidate; returns where.
    pub fn place_first_fit(
        &mut self,
        pod: PodId,
        candidates: impl IntoIterator<Item = NodeId>,
    ) -> Option<NodeId> {
        let node = self.first_fit(pod, candidates)?;
        self.bind(pod, node);
        Some(node)
    }

    /// Every node that can take pods (registered, not cordoned), in id order.
    pub fn schedulable_nodes(&self) -> Vec<NodeId> {
        self.cluster
            .nodes()
            .filter(|(_, n)| n.registered && !n.marked_for_deletion)
            .map(|(id, _)| id)
            .collect()
    }
}
