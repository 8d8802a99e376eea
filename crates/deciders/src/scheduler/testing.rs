//! Tiny builders for nodes and pods in tests (this module's and other
//! modules', e.g. the Karpenter provisioner's). Defaults: a registered,
//! initialized node with 4 CPU, 16 GiB, 110 pods and a hostname label equal to
//! its name; a pending pod in namespace `default` requesting nothing but its
//! pod slot.

use std::sync::Arc;

use crate::cluster::{Node, Pod, PodPhase};
use crate::kube::labels::{LABEL_HOSTNAME, LABEL_TOPOLOGY_ZONE, Labels};
use crate::kube::pod::{
    HostPort, InclusionPolicy, NodeSelectorExpression, PodAffinityTerm, PodSpec,
    TopologySpreadConstraint, WeightedNodeSelectorTerm, WhenUnsatisfiable,
};
use crate::kube::requirements::Operator;
use crate::kube::resources::{GIB, ResourceKind, Resources};
use crate::kube::selector::LabelSelector;
use crate::kube::taints::{Taint, Toleration};
use crate::time::SimTime;

/// A `matchLabels` selector.
pub fn selector(pairs: &[(&str, &str)]) -> LabelSelector {
    LabelSelector {
        match_labels: pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        match_expressions: Vec::new(),
    }
}

/// A node selector expression.
pub fn expression(key: &str, operator: Operator, values: &[&str]) -> NodeSelectorExpression {
    NodeSelectorExpression {
        key: key.to_string(),
        operator,
        values: values.iter().map(|v| v.to_string()).collect(),
    }
}

/// Starts a node builder.
pub fn node(name: &str) -> NodeBuilder {
    let mut labels = Labels::new();
    labels.insert(LABEL_HOSTNAME, name);
    NodeBuilder {
        node: Node {
            name: name.to_string(),
            labels,
            taints: Vec::new(),
            capacity: Resources::cpu_mem(4000, 16 * GIB).with(ResourceKind::Pods, 110),
            allocatable: Resources::cpu_mem(4000, 16 * GIB).with(ResourceKind::Pods, 110),
            requested: Resources::ZERO,
            pods: Vec::new(),
            registered: true,
            initialized: true,
            marked_for_deletion: false,
            claim: None,
            created_at: SimTime::ZERO,
        },
    }
}

/// Builds a [`Node`].
#[derive(Debug, Clone)]
pub struct NodeBuilder {
    node: Node,
}

impl NodeBuilder {
    /// Sets capacity and allocatable CPU (millicores) and memory (bytes).
    pub fn cpu_mem(mut self, cpu_millis: i64, memory_bytes: i64) -> Self {
        for r in [&mut self.node.capacity, &mut self.node.allocatable] {
            r.set(ResourceKind::Cpu, cpu_millis);
            r.set(ResourceKind::Memory, memory_bytes);
        }
        self
    }

    /// Sets an allocatable (and capacity) amount.
    pub fn resource(mut self, kind: ResourceKind, amount: i64) -> Self {
        self.node.capacity.set(kind, amount);
        self.node.allocatable.set(kind, amount);
        self
    }

    /// Adds a label.
    pub fn label(mut self, key: &str, value: &str) -> Self {
        self.node.labels.insert(key, value);
        self
    }

    /// Sets `topology.kubernetes.io/zone`.
    pub fn zone(self, zone: &str) -> Self {
        self.label(LABEL_TOPOLOGY_ZONE, zone)
    }

    /// Adds a taint.
    pub fn taint(mut self, taint: Taint) -> Self {
        self.node.taints.push(taint);
        self
    }

    /// Marks the node as a NodeClaim that has not registered.
    pub fn unregistered(mut self) -> Self {
        self.node.registered = false;
        self.node.initialized = false;
        self
    }

    /// Marks the node for deletion.
    pub fn deleting(mut self) -> Self {
        self.node.marked_for_deletion = true;
        self
    }

    /// The node.
    pub fn build(self) -> Node {
        self.node
    }
}

/// Builds a pending [`Pod`].
#[derive(Debug, Clone)]
pub struct PodBuilder {
    name: String,
    spec: PodSpec,
}

impl PodBuilder {
    /// A pod requesting only its pod slot.
    pub fn new(name: &str) -> PodBuilder {
        PodBuilder {
            name: name.to_string(),
            spec: PodSpec::default(),
        }
    }

    /// Sets CPU (millicores) and memory (bytes) requests.
    pub fn requests(mut self, cpu_millis: i64, memory_bytes: i64) -> Self {
        self.spec.requests.set(ResourceKind::Cpu, cpu_millis);
        self.spec.requests.set(ResourceKind::Memory, memory_bytes);
        self
    }

    /// Sets one request.
    pub fn request(mut self, kind: ResourceKind, amount: i64) -> Self {
        self.spec.requests.set(kind, amount);
        self
    }

    /// Sets the namespace.
    pub fn namespace(mut self, namespace: &str) -> Self {
        self.spec.namespace = namespace.to_string();
        self
    }

    /// Adds a label.
    pub fn label(mut self, key: &str, value: &str) -> Self {
        self.spec.labels.insert(key.to_string(), value.to_string());
        self
    }

    /// Sets the priority.
    pub fn priority(mut self, priority: i32) -> Self {
        self.spec.priority = priority;
        self
    }

    /// Adds a `nodeSelector` entry.
    pub fn node_selector(mut self, key: &str, value: &str) -> Self {
        self.spec
            .node_selector
            .insert(key.to_string(), value.to_string());
        self
    }

    /// Adds a required node-affinity term (terms are OR'ed).
    pub fn required_term(mut self, term: Vec<NodeSelectorExpression>) -> Self {
        self.spec.node_affinity.required.push(term);
        self
    }

    /// Adds a preferred node-affinity term.
    pub fn preferred_term(mut self, weight: i32, term: Vec<NodeSelectorExpression>) -> Self {
        self.spec
            .node_affinity
            .preferred
            .push(WeightedNodeSelectorTerm {
                weight,
                expressions: term,
            });
        self
    }

    /// Adds a toleration.
    pub fn toleration(mut self, toleration: Toleration) -> Self {
        self.spec.tolerations.push(toleration);
        self
    }

    /// Adds a TCP host port on all addresses.
    pub fn host_port(self, port: i32) -> Self {
        self.host_port_on(port, "TCP", "")
    }

    /// Adds a host port with protocol and host IP.
    pub fn host_port_on(mut self, port: i32, protocol: &str, host_ip: &str) -> Self {
        self.spec.host_ports.push(HostPort {
            port,
            protocol: protocol.to_string(),
            host_ip: host_ip.to_string(),
        });
        self
    }

    /// Adds a DoNotSchedule spread constraint with default policies.
    pub fn spread(mut self, key: &str, max_skew: i32, labels: &[(&str, &str)]) -> Self {
        self.spec.topology_spread.push(TopologySpreadConstraint {
            max_skew,
            topology_key: key.to_string(),
            when_unsatisfiable: WhenUnsatisfiable::DoNotSchedule,
            selector: Some(selector(labels)),
            min_domains: None,
            node_affinity_policy: InclusionPolicy::Honor,
            node_taints_policy: InclusionPolicy::Ignore,
            match_label_keys: Vec::new(),
        });
        self
    }

    /// Adds a required pod-affinity term over pods with `labels`.
    pub fn affinity(mut self, key: &str, labels: &[(&str, &str)]) -> Self {
        self.spec.pod_affinity.required.push(term(key, labels));
        self
    }

    /// Adds a required pod-anti-affinity term over pods with `labels`.
    pub fn anti_affinity(mut self, key: &str, labels: &[(&str, &str)]) -> Self {
        self.spec.pod_anti_affinity.required.push(term(key, labels));
        self
    }

    /// Edits the spec directly, for anything the builder does not cover.
    pub fn with_spec(mut self, edit: impl FnOnce(&mut PodSpec)) -> Self {
        edit(&mut self.spec);
        self
    }

    /// The pod (pending, unbound; its uid is set when added to a cluster).
    pub fn build(self) -> Pod {
        Pod {
            lifecycle: Default::default(),
            name: self.name,
            uid: 0,
            spec: Arc::new(self.spec),
            owner: None,
            node: None,
            phase: PodPhase::Pending,
            created_at: SimTime::ZERO,
            unschedulable: false,
        }
    }
}

/// A pod (anti-)affinity term over pods with `labels`, in the owner's namespace.
pub fn term(key: &str, labels: &[(&str, &str)]) -> PodAffinityTerm {
    PodAffinityTerm {
        selector: Some(selector(labels)),
        topology_key: key.to_string(),
        namespaces: Vec::new(),
        namespace_selector: None,
        match_label_keys: Vec::new(),
        mismatch_label_keys: Vec::new(),
    }
}
