//! Conformance tests of the provisioning solve and launch choice against
//! upstream Karpenter's test suites (each test names the upstream test it
//! mirrors), plus shared fixtures.

mod digest;
mod launch;
mod reserved;
mod scheduling;
mod topology;

use std::collections::BTreeMap;
use std::sync::Arc;

use super::{
    MAX_INSTANCE_TYPES, NewNodeClaim, NodePoolContext, Prepared, PresortedQueue, ProvisioningInput,
    QueueRun, SchedulingResult, SolveSetup, StopEarly,
};
use crate::cloud::Catalog;
use crate::kube::labels::{LABEL_HOSTNAME, LABEL_TOPOLOGY_ZONE, Labels};
use crate::kube::pod::{
    InclusionPolicy, NodeSelectorExpression, PodAffinityTerm, PodSpec, TopologySpreadConstraint,
    WhenUnsatisfiable,
};
use crate::kube::requirements::Operator;
use crate::kube::resources::{MIB, ResourceKind, ResourceNames, Resources};
use crate::kube::selector::LabelSelector;
use crate::nodepool::NodePool;
use crate::scheduler::{
    Cluster, Node, NodeClaimInfo, NodeId, OwnerKind, OwnerRef, Pod, PodId, PodPhase,
};
use crate::time::SimTime;
use karpsim_input::nodepools::load_str;

/// A NodePool from YAML fragments: `spec_extra` lines go under `spec`
/// (indented two spaces), `template_extra` under `spec.template.spec`
/// (indented six).
pub(super) fn pool(
    name: &str,
    spec_extra: &str,
    template_extra: &str,
) -> (NodePool, ResourceNames) {
    let yaml = format!(
        "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {{name: {name}}}\nspec:\n{spec_extra}  template:\n    spec:\n      nodeClassRef: {{group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}}\n{template_extra}"
    );
    let mut manifests = load_str("pool.yaml", &yaml).unwrap_or_else(|e| panic!("{e}\n{yaml}"));
    (manifests.nodepools.remove(0), manifests.resource_names)
}

/// A NodePool with no constraints.
pub(super) fn default_pool() -> NodePool {
    pool("default", "", "").0
}

/// A pod requesting CPU (millicores) and memory (MiB).
pub(super) fn pod(cpu: i64, mem_mib: i64) -> PodSpec {
    PodSpec {
        requests: Resources::cpu_mem(cpu, mem_mib * MIB).with(ResourceKind::Pods, 1),
        ..PodSpec::default()
    }
}

pub(super) fn labeled(mut spec: PodSpec, key: &str, value: &str) -> PodSpec {
    spec.labels.insert(key.to_string(), value.to_string());
    spec
}

pub(super) fn selector(key: &str, value: &str) -> LabelSelector {
    LabelSelector {
        match_labels: BTreeMap::from([(key.to_string(), value.to_string())]),
        match_expressions: Vec::new(),
    }
}

pub(super) fn affinity_term(key: &str, app: &str) -> PodAffinityTerm {
    PodAffinityTerm {
        selector: Some(selector("app", app)),
        topology_key: key.to_string(),
        namespaces: Vec::new(),
        namespace_selector: None,
        match_label_keys: Vec::new(),
        mismatch_label_keys: Vec::new(),
    }
}

pub(super) fn spread(key: &str, app: &str, min_domains: Option<i32>) -> TopologySpreadConstraint {
    TopologySpreadConstraint {
        max_skew: 1,
        topology_key: key.to_string(),
        when_unsatisfiable: WhenUnsatisfiable::DoNotSchedule,
        selector: Some(selector("app", app)),
        min_domains,
        node_affinity_policy: InclusionPolicy::Honor,
        node_taints_policy: InclusionPolicy::Ignore,
        match_label_keys: Vec::new(),
    }
}

pub(super) fn expr(key: &str, operator: Operator, values: &[&str]) -> NodeSelectorExpression {
    NodeSelectorExpression {
        key: key.to_string(),
        operator,
        values: values.iter().map(|v| v.to_string()).collect(),
    }
}

/// A cluster, NodePools with their catalogs, DaemonSets and pending pods.
pub(super) struct World {
    pub cluster: Cluster,
    pub pools: Vec<(NodePool, Catalog)>,
    pub daemonsets: Vec<Arc<PodSpec>>,
    pub pending: Vec<PodId>,
    pub node_count_resource: Option<ResourceKind>,
    /// The scheduler's policies (upstream's defaults unless a test says).
    pub policies: crate::karpenter::provisioning::SchedulingPolicies,
}

impl World {
    pub fn new(pools: Vec<(NodePool, Catalog)>) -> World {
        World {
            cluster: Cluster::new(),
            pools,
            daemonsets: Vec::new(),
            pending: Vec::new(),
            node_count_resource: None,
            policies: Default::default(),
        }
    }

    /// One NodePool on the fake catalog of `n` types.
    pub fn fake(pool: NodePool, n: usize) -> World {
        World::new(vec![(pool, crate::cloud::fake::instance_types(n))])
    }

    pub fn add_pending(&mut self, spec: PodSpec) -> PodId {
        let id = self.cluster.add_pod(Pod {
            lifecycle: Default::default(),
            name: format!("pod-{}", self.pending.len()),
            uid: 0,
            spec: Arc::new(spec),
            owner: Some(OwnerRef {
                kind: OwnerKind::Deployment,
                name: "app".into(),
            }),
            node: None,
            phase: PodPhase::Pending,
            created_at: SimTime::ZERO,
            unschedulable: true,
        });
        self.pending.push(id);
        id
    }

    pub fn add_pendings(&mut self, n: usize, spec: PodSpec) -> Vec<PodId> {
        (0..n).map(|_| self.add_pending(spec.clone())).collect()
    }

    /// Adds a node labelled with hostname = name and the given labels.
    pub fn add_node(
        &mut self,
        name: &str,
        labels: &[(&str, &str)],
        allocatable: Resources,
        registered: bool,
    ) -> NodeId {
        let mut node_labels: Labels = labels.iter().map(|(k, v)| (*k, *v)).collect();
        node_labels.insert(LABEL_HOSTNAME, name);
        let nodepool = node_labels
            .get(crate::kube::labels::LABEL_NODEPOOL)
            .map(str::to_string);
        self.cluster.add_node(Node {
            name: name.to_string(),
            labels: node_labels,
            taints: Vec::new(),
            capacity: allocatable,
            allocatable,
            requested: Resources::ZERO,
            pods: Vec::new(),
            registered,
            initialized: registered,
            marked_for_deletion: false,
            claim: nodepool.map(|nodepool| NodeClaimInfo {
                lifecycle: Default::default(),
                nodepool: nodepool.into(),
                instance_type: "fake-it-3".into(),
                capacity_type: crate::cloud::CapacityType::OnDemand,
                zone: "test-zone-1".into(),
                price: crate::cloud::Price::ZERO,
                startup_taints: Vec::new(),
            }),
            created_at: SimTime::ZERO,
        })
    }

    /// Binds a running pod to a node.
    pub fn add_running(&mut self, spec: PodSpec, node: NodeId) -> PodId {
        let id = self.cluster.add_pod(Pod {
            lifecycle: Default::default(),
            name: "running".into(),
            uid: 0,
            spec: Arc::new(spec),
            owner: None,
            node: Some(node),
            phase: PodPhase::Running,
            created_at: SimTime::ZERO,
            unschedulable: false,
        });
        self.cluster.bind(id, node);
        id
    }

    pub fn solve(&self) -> SchedulingResult {
        self.solve_with(None)
    }

    /// The NodePools with their catalogs, as solve reads them.
    pub fn contexts(&self) -> Vec<NodePoolContext<'_>> {
        self.pools
            .iter()
            .map(|(pool, catalog)| NodePoolContext { pool, catalog })
            .collect()
    }

    /// A prepared setup for this world's NodePools and DaemonSets.
    pub fn prepare(&self) -> Prepared {
        Prepared::new(&self.contexts(), &self.daemonsets)
    }

    /// Solves with `prepared` (`None` builds one for this solve).
    pub fn solve_with(&self, prepared: Option<&Prepared>) -> SchedulingResult {
        self.solve_with_setup(SolveSetup {
            prepared,
            ..SolveSetup::default()
        })
    }

    /// Solves in upstream's reserved-capacity fallback mode (disruption's
    /// simulations).
    pub fn solve_fallback(&self) -> SchedulingResult {
        self.solve_with_setup(SolveSetup {
            reserved_fallback: true,
            ..SolveSetup::default()
        })
    }

    fn solve_with_setup(&self, setup: SolveSetup<'_>) -> SchedulingResult {
        let input = ProvisioningInput {
            cluster: &self.cluster,
            nodepools: &self.contexts(),
            daemonsets: &self.daemonsets,
            pods: &self.pending,
            node_count_resource: self.node_count_resource,
            policies: self.policies,
        };
        super::scheduler::solve(&input, setup)
    }

    /// [`World::solve_stopping`] with the pods given as presorted runs:
    /// each of `shared` a run built ahead, `own` the rest.
    pub fn solve_stopping_presorted(
        &self,
        shared: &[&[PodId]],
        own: &[PodId],
        stop_early: StopEarly<'_>,
    ) -> SchedulingResult {
        let runs: Vec<QueueRun> = shared
            .iter()
            .map(|pods| QueueRun::new(&self.cluster, pods))
            .collect();
        let runs: Vec<&QueueRun> = runs.iter().collect();
        let pods: Vec<PodId> = shared
            .iter()
            .flat_map(|p| p.iter())
            .chain(own)
            .copied()
            .collect();
        let input = ProvisioningInput {
            cluster: &self.cluster,
            nodepools: &self.contexts(),
            daemonsets: &self.daemonsets,
            pods: &pods,
            node_count_resource: self.node_count_resource,
            policies: self.policies,
        };
        let setup = SolveSetup {
            stop_early,
            queue: Some(PresortedQueue { shared: &runs, own }),
            ..SolveSetup::default()
        };
        super::scheduler::solve(&input, setup)
    }

    /// Solves for `pods` (pending or bound), stopping as `stop_early` says.
    pub fn solve_stopping(&self, pods: &[PodId], stop_early: StopEarly<'_>) -> SchedulingResult {
        let input = ProvisioningInput {
            cluster: &self.cluster,
            nodepools: &self.contexts(),
            daemonsets: &self.daemonsets,
            pods,
            node_count_resource: self.node_count_resource,
            policies: self.policies,
        };
        let setup = SolveSetup {
            prepared: None,
            stop_early,
            ..SolveSetup::default()
        };
        super::scheduler::solve(&input, setup)
    }
}

/// The new NodeClaim holding `pod`.
pub(super) fn claim_of(result: &SchedulingResult, pod: PodId) -> &NewNodeClaim {
    result
        .new_nodeclaims
        .iter()
        .find(|c| c.pods.contains(&pod))
        .unwrap_or_else(|| panic!("pod {pod:?} not on a new NodeClaim: {:?}", result.errors))
}

/// The error of `pod`.
pub(super) fn error_of(result: &SchedulingResult, pod: PodId) -> &str {
    result
        .errors
        .iter()
        .find(|(p, _)| *p == pod)
        .map(|(_, e)| e.as_str())
        .unwrap_or_else(|| panic!("pod {pod:?} has no error"))
}

/// The zone a claim is pinned to, if exactly one.
pub(super) fn zone_of(claim: &NewNodeClaim) -> Option<String> {
    let zone = claim.requirements.get(LABEL_TOPOLOGY_ZONE)?;
    (!zone.is_complement() && zone.values().len() == 1).then(|| zone.values()[0].clone())
}

/// Name of the cheapest option of a claim.
pub(super) fn cheapest<'c>(catalog: &'c Catalog, claim: &NewNodeClaim) -> &'c str {
    catalog.instance_types()[claim.instance_types[0]].name()
}
