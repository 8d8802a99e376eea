//! Existing nodes as placement targets: registered nodes and launched
//! NodeClaims still starting (core: scheduling/existingnode.go).
//!
//! [`ExistingNodes`] holds the view of every node of a cluster, built once
//! and shared by the many solves of a disruption pass, which differ only in
//! which nodes are marked for deletion; each solve copies a node's view
//! only when it places a pod there ([`ExistingSet`]).

use std::sync::Arc;

use super::claim::{merged_get, no_undefined};
use super::pod::{PodWork, any_port_conflict};
use super::prepared::Prepared;
use super::topology::{PodTopology, anti_affinity_pods};
use crate::kube::labels::LABEL_HOSTNAME;
use crate::kube::pod::{HostPort, PodSpec};
use crate::kube::requirements::Requirements;
use crate::kube::resources::Resources;
use crate::kube::taints::{Taint, first_untolerated, taints_for_uninitialized_node, tolerates_all};
use crate::scheduler::{Cluster, Node, NodeId, PodId};

/// A node pods may join.
#[derive(Clone)]
pub(super) struct ExistingNode {
    pub id: NodeId,
    pub name: String,
    pub initialized: bool,
    /// Taints that count: uninitialized managed nodes ignore known
    /// ephemeral and startup taints.
    pub taints: Vec<Taint>,
    /// Node labels plus `hostname In [its hostname]` (shared with the
    /// prepared setup's cache until a pod joins).
    pub requirements: Arc<Requirements>,
    /// Allocatable − bound requests − DaemonSet pods still to come.
    pub remaining: Resources,
    pub host_ports: Vec<HostPort>,
}

impl ExistingNode {
    pub fn new(
        cluster: &Cluster,
        id: NodeId,
        node: &Node,
        daemonsets: &[Arc<PodSpec>],
        prepared: &Prepared,
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
        let (labels, requirements) =
            prepared.existing_node_requirements(id, &node.labels, hostname);
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
        for (ds, strict) in daemonsets.iter().zip(prepared.daemon_requirements()) {
            if tolerates_all(&taints, &ds.tolerations).is_ok()
                && labels.is_compatible(strict, no_undefined())
            {
                daemons += ds.requests;
            }
        }
        let daemons_to_come = daemons.saturating_sub(&bound_daemons);
        ExistingNode {
            id,
            name: node.name.clone(),
            initialized: node.initialized,
            taints,
            requirements,
            remaining: node.available().saturating_sub(&daemons_to_come),
            host_ports,
        }
    }

    /// The hostname domain of the node.
    pub fn hostname(&self) -> &str {
        self.requirements
            .get(LABEL_HOSTNAME)
            .and_then(|r| r.values().first())
            .map_or(self.name.as_str(), String::as_str)
    }

    /// The node's requirements with the pod, if it could join (the solve
    /// never reports why an existing node refused a pod).
    pub fn can_add(&self, topology: &PodTopology<'_>, pod: &PodWork) -> Option<Requirements> {
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
        let mut merged = Requirements::clone(&self.requirements);
        merged.add_all(&pod.requirements);
        if !narrowed.is_empty() {
            if !merged.is_compatible(&narrowed, no_undefined()) {
                return None;
            }
            merged.add_all(&narrowed);
        }
        Some(merged)
    }

    pub fn add(&mut self, pod: &PodWork, requirements: Requirements) {
        self.remaining -= pod.requests;
        self.requirements = Arc::new(requirements);
        self.host_ports.extend(pod.host_ports().iter().cloned());
    }
}

/// The placement views of every node of one cluster, in the order a solve
/// tries them (initialized first, then by name). Build it with
/// [`ExistingNodes::new`] and hand it to [`super::solve_with_existing`] for
/// solves over the same cluster, NodePools and DaemonSets; such solves may
/// differ in which nodes are marked for deletion (those are skipped), but
/// in nothing else: any other change to nodes or pods needs a new one.
/// Nodes may also be left unmarked and closed by the solve instead.
#[derive(Clone)]
pub struct ExistingNodes {
    nodes: Vec<ExistingNode>,
    /// Each node's hostname domain, as built.
    hostnames: Vec<String>,
    /// Running pods with required anti-affinity (see
    /// [`super::topology::anti_affinity_pods`]).
    anti_affinity_pods: Vec<PodId>,
    /// How many nodes the cluster had (a cheap check of misuse).
    cluster_nodes: usize,
}

impl ExistingNodes {
    /// The view of every node of `cluster`, marked for deletion or not.
    pub fn new(cluster: &Cluster, daemonsets: &[Arc<PodSpec>], prepared: &Prepared) -> Self {
        let mut nodes: Vec<ExistingNode> = cluster
            .nodes()
            .map(|(id, node)| ExistingNode::new(cluster, id, node, daemonsets, prepared))
            .collect();
        // Stable, so filtering out the nodes a solve skips leaves the order
        // a sort of the remaining nodes would give.
        nodes.sort_by(|a, b| (!a.initialized, &a.name).cmp(&(!b.initialized, &b.name)));
        ExistingNodes {
            cluster_nodes: nodes.len(),
            hostnames: nodes.iter().map(|n| n.hostname().to_string()).collect(),
            anti_affinity_pods: anti_affinity_pods(cluster),
            nodes,
        }
    }

    /// Running pods with required anti-affinity, in pod order.
    pub(super) fn anti_affinity_pods(&self) -> &[PodId] {
        &self.anti_affinity_pods
    }

    /// Whether it was built from a cluster with as many nodes as `cluster`.
    pub(super) fn fits(&self, cluster: &Cluster) -> bool {
        self.cluster_nodes == cluster.nodes().count()
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
/// marked for deletion, each copied on the first pod placed on it.
pub(super) struct ExistingSet<'b> {
    base: &'b [ExistingNode],
    hostnames: &'b [String],
    /// Indices into `base` of the nodes the solve may use, in try order.
    open: Vec<usize>,
    /// This solve's copy of a node's view, by index into `base`.
    changed: Vec<Option<Box<ExistingNode>>>,
}

impl<'b> ExistingSet<'b> {
    /// The nodes of `base` that `cluster` does not mark for deletion and
    /// that are not in `closed` (sorted).
    pub fn new(base: &'b ExistingNodes, cluster: &Cluster, closed: &[NodeId]) -> Self {
        let open = base
            .nodes
            .iter()
            .enumerate()
            .filter(|(_, n)| {
                cluster
                    .node(n.id)
                    .is_some_and(|node| !node.marked_for_deletion)
                    && closed.binary_search(&n.id).is_err()
            })
            .map(|(i, _)| i)
            .collect();
        ExistingSet {
            base: &base.nodes,
            hostnames: &base.hostnames,
            open,
            changed: Vec::new(),
        }
    }

    /// The current view of `base` entry `index`.
    fn get(&self, index: usize) -> &ExistingNode {
        match self.changed.get(index) {
            Some(Some(node)) => node,
            _ => &self.base[index],
        }
    }

    /// Every usable node in try order, with its index.
    pub fn iter(&self) -> impl Iterator<Item = (usize, &ExistingNode)> + '_ {
        self.open.iter().map(|&i| (i, self.get(i)))
    }

    /// The hostname domain of every usable node in try order, as the
    /// views were built (a pod placed on a node never changes it).
    pub fn hostnames(&self) -> impl Iterator<Item = &str> + '_ {
        self.open.iter().map(|&i| self.hostnames[i].as_str())
    }

    /// This solve's own copy of node `index`, made on first use.
    pub fn get_mut(&mut self, index: usize) -> &mut ExistingNode {
        if self.changed.len() < self.base.len() {
            self.changed.resize_with(self.base.len(), || None);
        }
        let base = self.base;
        self.changed[index].get_or_insert_with(|| Box::new(base[index].clone()))
    }
}
