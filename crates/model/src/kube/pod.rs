//! The internal scheduling form of a pod or pod template: what the scheduler,
//! Karpenter and the Cluster Autoscaler look at, nothing else. Built from real
//! manifests by [`crate::manifest`]; cheap to share (workloads hold it
//! behind an `Arc`).

use std::collections::BTreeMap;
use std::time::Duration;

use super::requirements::{Operator, Requirement, RequirementError, Requirements};
use super::resources::{ResourceKind, Resources};
use super::selector::LabelSelector;
use super::taints::Toleration;

/// Annotation that blocks voluntary disruption of the pod's node.
pub const DO_NOT_DISRUPT_ANNOTATION: &str = "karpenter.sh/do-not-disrupt";
/// Annotation that ranks pods for eviction (ReplicaSet scale-down, Karpenter
/// eviction cost).
pub const POD_DELETION_COST_ANNOTATION: &str = "controller.kubernetes.io/pod-deletion-cost";
/// karpsim's own annotation: how long the pod runs before it completes.
pub const DURATION_ANNOTATION: &str = "karpsim.dev/duration";
/// Default `terminationGracePeriodSeconds`.
pub const DEFAULT_TERMINATION_GRACE: Duration = Duration::from_secs(30);

/// The `karpenter.sh/do-not-disrupt` annotation, when valid.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DoNotDisrupt {
    /// `"true"`: never disrupt voluntarily.
    Always,
    /// A duration: do not disrupt while the pod is younger than this.
    For(Duration),
}

/// Requests of one init container, in declaration order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InitContainer {
    /// The container's requests (after limits-only defaulting).
    pub requests: Resources,
    /// `restartPolicy: Always`: a sidecar that keeps running beside the app.
    pub sidecar: bool,
}

/// The effective requests of a pod, as Kubernetes and Karpenter compute them
/// (k8s: component-helpers resource.PodRequests; the KEP-753 sidecar rule):
///
/// `max(Σ app + Σ sidecars, max over init containers i of (init_i + sidecars
/// started before i))`, with pod-level `spec.resources.requests` replacing
/// the CPU and memory totals when set, plus the pod overhead, plus `pods: 1`.
pub fn effective_requests(
    app: &[Resources],
    init: &[InitContainer],
    pod_level: Option<&Resources>,
    overhead: &Resources,
) -> Resources {
    let mut steady: Resources = app.iter().copied().sum();
    let mut sidecars = Resources::ZERO;
    let mut init_peak = Resources::ZERO;
    for container in init {
        let during = if container.sidecar {
            steady += container.requests;
            sidecars += container.requests;
            sidecars
        } else {
            container.requests + sidecars
        };
        init_peak = init_peak.max(&during);
    }
    let mut total = steady.max(&init_peak);
    if let Some(pod_level) = pod_level {
        // Only CPU and memory may be set at pod level.
        for kind in [ResourceKind::Cpu, ResourceKind::Memory] {
            if pod_level.get(kind) != 0 {
                total.set(kind, pod_level.get(kind));
            }
        }
    }
    total += *overhead;
    total.set(ResourceKind::Pods, total.pods() + 1);
    total
}

/// One node selector requirement (`matchExpressions` entry), validated.
/// Kept in this raw form so that each consumer builds the
/// [`crate::kube::requirements::Requirements`] it needs (Karpenter relaxes
/// terms one at a time).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct NodeSelectorExpression {
    /// Label key as written.
    pub key: String,
    /// Operator (`Gte` / `Lte` only in NodePools).
    pub operator: Operator,
    /// Values (one integer for `Gt` / `Lt`).
    pub values: Vec<String>,
}

/// A node selector term: its expressions are AND'ed.
pub type NodeSelectorTerm = Vec<NodeSelectorExpression>;

impl NodeSelectorExpression {
    /// The requirement this expression states.
    pub fn to_requirement(&self) -> Result<Requirement, RequirementError> {
        Requirement::new(&self.key, self.operator, &self.values)
    }
}

/// The requirements of one node selector term (expressions on the same key
/// intersect).
pub fn term_requirements(
    term: &[NodeSelectorExpression],
) -> Result<Requirements, RequirementError> {
    let mut out = Requirements::new();
    for expression in term {
        out.add(expression.to_requirement()?);
    }
    Ok(out)
}

/// A preferred node-affinity term with its weight.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WeightedNodeSelectorTerm {
    /// 1–100.
    pub weight: i32,
    /// The term's expressions.
    pub expressions: NodeSelectorTerm,
}

/// Node affinity.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NodeAffinity {
    /// Required terms, OR'ed. Empty means no requirement.
    pub required: Vec<NodeSelectorTerm>,
    /// Preferred terms in declaration order.
    pub preferred: Vec<WeightedNodeSelectorTerm>,
    /// Some term used `matchFields`: Karpenter ignores such pods.
    pub uses_match_fields: bool,
}

/// One pod (anti-)affinity term.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodAffinityTerm {
    /// Which pods count; `None` matches no pod.
    pub selector: Option<LabelSelector>,
    /// The topology domain key (`topology.kubernetes.io/zone`, ...).
    pub topology_key: String,
    /// Namespaces searched; empty with no namespace selector = the pod's own.
    pub namespaces: Vec<String>,
    /// Namespace selector over namespace labels; `Some(empty)` = all.
    pub namespace_selector: Option<LabelSelector>,
    /// `matchLabelKeys`: label keys whose values (from the incoming pod) are
    /// added to the selector.
    pub match_label_keys: Vec<String>,
    /// `mismatchLabelKeys`.
    pub mismatch_label_keys: Vec<String>,
}

/// A preferred pod (anti-)affinity term.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WeightedPodAffinityTerm {
    /// 1–100.
    pub weight: i32,
    /// The term.
    pub term: PodAffinityTerm,
}

/// Pod affinity or anti-affinity.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PodAffinity {
    /// Required terms (all must hold).
    pub required: Vec<PodAffinityTerm>,
    /// Preferred terms.
    pub preferred: Vec<WeightedPodAffinityTerm>,
}

impl PodAffinity {
    /// Whether there are no terms at all.
    pub fn is_empty(&self) -> bool {
        self.required.is_empty() && self.preferred.is_empty()
    }
}

/// `whenUnsatisfiable`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WhenUnsatisfiable {
    /// A hard constraint.
    DoNotSchedule,
    /// A preference.
    ScheduleAnyway,
}

/// `nodeAffinityPolicy` / `nodeTaintsPolicy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum InclusionPolicy {
    /// Take the pod's node affinity / tolerations into account.
    Honor,
    /// Count every node.
    Ignore,
}

/// A topology spread constraint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopologySpreadConstraint {
    /// Maximum allowed skew (≥ 1).
    pub max_skew: i32,
    /// The topology key.
    pub topology_key: String,
    /// Hard or soft.
    pub when_unsatisfiable: WhenUnsatisfiable,
    /// Which pods count; `None` matches no pod.
    pub selector: Option<LabelSelector>,
    /// `minDomains` (only with DoNotSchedule).
    pub min_domains: Option<i32>,
    /// Default `Honor`.
    pub node_affinity_policy: InclusionPolicy,
    /// Default `Ignore`.
    pub node_taints_policy: InclusionPolicy,
    /// `matchLabelKeys`.
    pub match_label_keys: Vec<String>,
}

/// A host port a container binds.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct HostPort {
    /// The port.
    pub port: i32,
    /// `TCP` (default), `UDP` or `SCTP`.
    pub protocol: String,
    /// Host IP; empty = all addresses.
    pub host_ip: String,
}

/// A pod's scheduling-relevant content: the PodSpec fields some decision
/// reads, shared by every pod of a template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodSpec {
    /// Namespace (`default` when not written).
    pub namespace: String,
    /// Labels.
    pub labels: BTreeMap<String, String>,
    /// Effective requests (see [`effective_requests`]), including `pods: 1`.
    pub requests: Resources,
    /// Priority: `spec.priority`, else resolved from the priority class,
    /// else 0.
    pub priority: i32,
    /// `spec.priorityClassName`.
    pub priority_class_name: Option<String>,
    /// `karpenter.sh/do-not-disrupt`.
    pub do_not_disrupt: Option<DoNotDisrupt>,
    /// `controller.kubernetes.io/pod-deletion-cost` (0 when absent).
    pub deletion_cost: i32,
    /// `karpsim.dev/duration`: run time before the pod completes.
    pub run_duration: Option<Duration>,
    /// `terminationGracePeriodSeconds` (default 30 s).
    pub termination_grace: Duration,
    /// `nodeSelector`.
    pub node_selector: BTreeMap<String, String>,
    /// Node affinity.
    pub node_affinity: NodeAffinity,
    /// Tolerations.
    pub tolerations: Vec<Toleration>,
    /// Pod affinity.
    pub pod_affinity: PodAffinity,
    /// Pod anti-affinity.
    pub pod_anti_affinity: PodAffinity,
    /// Topology spread constraints.
    pub topology_spread: Vec<TopologySpreadConstraint>,
    /// Host ports of all containers (init containers included).
    pub host_ports: Vec<HostPort>,
    /// `metadata.annotations` as written (the Cluster Autoscaler reads
    /// `cluster-autoscaler.kubernetes.io/safe-to-evict` and friends here).
    pub annotations: BTreeMap<String, String>,
    /// Names of the volumes that keep data on the node: `hostPath` and
    /// `emptyDir` not backed by memory (what the Cluster Autoscaler's
    /// local-storage rule looks at).
    pub local_storage_volumes: Vec<String>,
}

impl PodSpec {
    /// Whether the pod has topology spread or pod (anti-)affinity terms:
    /// whether where it may go depends on other pods.
    pub fn has_topology_terms(&self) -> bool {
        !self.topology_spread.is_empty()
            || !self.pod_affinity.is_empty()
            || !self.pod_anti_affinity.is_empty()
    }
}

impl Default for PodSpec {
    fn default() -> Self {
        PodSpec {
            namespace: "default".to_string(),
            labels: BTreeMap::new(),
            requests: Resources::ZERO.with(ResourceKind::Pods, 1),
            priority: 0,
            priority_class_name: None,
            do_not_disrupt: None,
            deletion_cost: 0,
            run_duration: None,
            termination_grace: DEFAULT_TERMINATION_GRACE,
            node_selector: BTreeMap::new(),
            node_affinity: NodeAffinity::default(),
            tolerations: Vec::new(),
            pod_affinity: PodAffinity::default(),
            pod_anti_affinity: PodAffinity::default(),
            topology_spread: Vec::new(),
            host_ports: Vec::new(),
            annotations: BTreeMap::new(),
            local_storage_volumes: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kube::resources::MIB;

    fn cpu_mem(cpu: i64, mem_mib: i64) -> Resources {
        Resources::cpu_mem(cpu, mem_mib * MIB)
    }

    fn init(cpu: i64, mem_mib: i64, sidecar: bool) -> InitContainer {
        InitContainer {
            requests: cpu_mem(cpu, mem_mib),
            sidecar,
        }
    }

    /// Kubernetes docs, "Resource sharing within containers" (init
    /// containers): the effective request is the larger of the highest init
    /// request and the sum of app containers.
    #[test]
    fn init_containers_take_the_max() {
        let app = [cpu_mem(100, 100), cpu_mem(200, 50)];
        let inits = [init(500, 10, false), init(50, 400, false)];
        let r = effective_requests(&app, &inits, None, &Resources::ZERO);
        assert_eq!(r.cpu_millis(), 500);
        assert_eq!(r.memory_bytes(), 400 * MIB);
        assert_eq!(r.pods(), 1);
    }

    /// KEP-753 / Kubernetes docs "Sidecar containers and Pod resources":
    /// sidecars add to the steady state and to every init container that
    /// starts after them.
    #[test]
    fn sidecars_add_to_app_and_later_inits() {
        let app = [cpu_mem(100, 100)];
        // A plain init before the sidecar sees no sidecar; one after sees it.
        let inits = [
            init(300, 10, false),
            init(50, 50, true),
            init(280, 10, false),
        ];
        let r = effective_requests(&app, &inits, None, &Resources::ZERO);
        // steady = 100 + 50 = 150 cpu; inits: 300, 50, 280 + 50 = 330 → 330.
        assert_eq!(r.cpu_millis(), 330);
        // memory: steady 150; inits 10, 50, 60 → 150.
        assert_eq!(r.memory_bytes(), 150 * MIB);
    }

    /// Kubernetes docs "Pod Overhead": overhead is added on top of the
    /// container requests (250m + 120Mi on 2×(500m,100Mi) in the docs example).
    #[test]
    fn overhead_is_added_after_the_max() {
        let app = [cpu_mem(500, 100), cpu_mem(500, 100)];
        let r = effective_requests(&app, &[], None, &cpu_mem(250, 120));
        assert_eq!(r.cpu_millis(), 1250);
        assert_eq!(r.memory_bytes(), 320 * MIB);
    }

    /// Pod-level resources (KEP-2837) replace the container totals for CPU
    /// and memory only; overhead still comes on top.
    #[test]
    fn pod_level_requests_override_cpu_and_memory() {
        let app = [cpu_mem(100, 100).with(ResourceKind::EphemeralStorage, 7)];
        let pod_level = Resources::cpu_mem(1000, 0);
        let r = effective_requests(&app, &[], Some(&pod_level), &cpu_mem(10, 0));
        assert_eq!(r.cpu_millis(), 1010);
        assert_eq!(r.memory_bytes(), 100 * MIB);
        assert_eq!(r.ephemeral_bytes(), 7);
    }
}
