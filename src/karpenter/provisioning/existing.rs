//! Existing nodes as placement targets: registered nodes and launched
//! NodeClaims still starting (core: scheduling/existingnode.go).

use std::sync::Arc;

use super::claim::{merged_get, no_undefined};
use super::pod::{PodWork, any_port_conflict};
use super::prepared::Prepared;
use super::topology::PodTopology;
use crate::kube::labels::LABEL_HOSTNAME;
use crate::kube::pod::{HostPort, PodSpec};
use crate::kube::requirements::{Requirement, Requirements};
use crate::kube::resources::Resources;
use crate::kube::taints::{Taint, first_untolerated, taints_for_uninitialized_node, tolerates_all};
use crate::scheduler::{Cluster, Node, NodeId};

/// A node pods may join.
pub(super) struct ExistingNode {
    pub id: NodeId,
    pub name: String,
    pub initialized: bool,
    /// Taints that count: uninitialized managed nodes ignore known
    /// ephemeral and startup taints.
    pub taints: Vec<Taint>,
    /// Node labels plus `hostname In [its hostname]`.
    pub requirements: Requirements,
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
        let labels = prepared.node_requirements(id, &node.labels);
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
        let hostname = node
            .labels
            .get(LABEL_HOSTNAME)
            .unwrap_or(node.name.as_str())
            .to_string();
        let mut requirements = Requirements::clone(&labels);
        requirements.add(Requirement::in_values(LABEL_HOSTNAME, [hostname]));
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
        let mut merged = self.requirements.clone();
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
        self.requirements = requirements;
        self.host_ports.extend(pod.host_ports().iter().cloned());
    }
}
