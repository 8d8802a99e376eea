//! Conformance tests of a whole disruption pass and its validation against
//! upstream's suites (core: pkg/controllers/disruption/*_test.go); each
//! test names the upstream test it mirrors.

use karpsim_catalog::BundledCatalog;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use super::consolidation::{NO_CHEAPER_NODE, SPOT_TO_SPOT_DISABLED};
use super::controller::*;
use super::types::{MessageDedupe, PassInput};
use crate::cloud::fake::instance_types;
use crate::cloud::nodeclass::NodeClassSettings;
use crate::cloud::{CapacityType, Catalog};
use crate::cluster::{
    ClaimLifecycle, DriftedCondition, NodeClaimInfo, OwnerKind, OwnerRef, PodLifecycle,
};
use crate::karpenter::provisioning::NodePoolContext;
use crate::kube::labels::{
    LABEL_CAPACITY_TYPE, LABEL_HOSTNAME, LABEL_INSTANCE_TYPE, LABEL_NODEPOOL, LABEL_TOPOLOGY_ZONE,
    Labels,
};
use crate::kube::pod::{DoNotDisrupt, HostPort, PodSpec};
use crate::kube::resources::{MIB, ResourceKind, Resources};
use crate::kube::workload::IntOrPercent;
use crate::nodepool::{BudgetNodes, ConsolidationPolicy, DisruptionReason, NodePool};
use crate::pdb::ControllerScales;
use crate::scheduler::{Cluster, Node, NodeId, Pod, PodId, PodPhase};
use crate::testing::{pdb, pool};
use crate::time::{SimDuration, SimTime};

mod consolidation_state;
mod no_op_bound;
mod pass_reuse;
mod threads;
mod verdict_reuse;

const NOW: SimTime = SimTime::from_secs(3600);

/// A cluster with one NodePool (budget 100% unless changed) on a catalog.
struct Env {
    cluster: Cluster,
    pools: Vec<(NodePool, Catalog)>,
    scales: ControllerScales,
    pending: Vec<PodId>,
    in_flight: BTreeSet<NodeId>,
    options: DisruptionOptions,
    now: SimTime,
    /// Nodes whose message was just published, so the pass finds them
    /// quiet ([`PassInput::message_dedupe`]).
    quiet: Option<BTreeMap<NodeId, SimTime>>,
    /// What [`Env::with_disruption_input`] gives as the cluster's
    /// consolidation state.
    consolidation_state: Option<SimTime>,
}

impl Env {
    fn new(catalog: Catalog) -> Env {
        let mut p = pool("default");
        p.disruption.budgets[0].nodes = BudgetNodes::Percent(100);
        Env {
            cluster: Cluster::new(),
            pools: vec![(p, catalog)],
            scales: ControllerScales::default(),
            pending: Vec::new(),
            in_flight: BTreeSet::new(),
            options: DisruptionOptions::default(),
            now: NOW,
            quiet: None,
            consolidation_state: None,
        }
    }

    fn fake() -> Env {
        Env::new(instance_types(40))
    }

    /// Limits the NodePool to on-demand capacity.
    fn require_on_demand(&mut self) {
        self.pool_mut()
            .requirement_set
            .add(crate::kube::requirements::Requirement::in_values(
                LABEL_CAPACITY_TYPE,
                ["on-demand"],
            ));
    }

    fn pool_mut(&mut self) -> &mut NodePool {
        &mut self.pools[0].0
    }

    /// An initialized node of the pool's catalog type `type_name`.
    fn node(&mut self, name: &str, type_name: &str, ct: CapacityType) -> NodeId {
        let catalog = &self.pools[0].1;
        let it = catalog.get(type_name).expect("type in catalog");
        let offering = it
            .offerings
            .iter()
            .find(|o| o.capacity_type == ct)
            .expect("offering");
        let mut labels = Labels::new();
        labels.insert(LABEL_NODEPOOL, self.pools[0].0.name.clone());
        labels.insert(LABEL_CAPACITY_TYPE, ct.label());
        labels.insert(LABEL_TOPOLOGY_ZONE, offering.zone);
        labels.insert(LABEL_INSTANCE_TYPE, type_name);
        labels.insert(LABEL_HOSTNAME, name);
        for (key, value) in &it.labels {
            if labels.get(key).is_none() {
                labels.insert(*key, value.clone());
            }
        }
        self.cluster.add_node(Node {
            name: name.to_string(),
            labels,
            taints: Vec::new(),
            capacity: it.capacity,
            allocatable: it.allocatable,
            requested: Resources::ZERO,
            pods: Vec::new(),
            registered: true,
            initialized: true,
            marked_for_deletion: false,
            claim: Some(NodeClaimInfo {
                nodepool: self.pools[0].0.name.as_str().into(),
                instance_type: type_name.to_string(),
                capacity_type: ct,
                zone: offering.zone.to_string(),
                price: offering.price,
                startup_taints: Vec::new(),
                lifecycle: ClaimLifecycle {
                    initialized_at: Some(SimTime::ZERO),
                    ..ClaimLifecycle::default()
                },
            }),
            created_at: SimTime::ZERO,
        })
    }

    fn claim_mut(&mut self, node: NodeId) -> &mut NodeClaimInfo {
        self.cluster.node_mut(node).unwrap().claim.as_mut().unwrap()
    }

    /// A running ReplicaSet pod of `cpu` millicores bound to `node`.
    fn pod(&mut self, node: NodeId, cpu: i64) -> PodId {
        self.pod_with(node, cpu, |_| {})
    }

    fn pod_with(&mut self, node: NodeId, cpu: i64, change: impl FnOnce(&mut PodSpec)) -> PodId {
        let mut spec = PodSpec {
            labels: [("app".to_string(), "web".to_string())].into(),
            requests: Resources::cpu_mem(cpu, 256 * MIB).with(ResourceKind::Pods, 1),
            ..PodSpec::default()
        };
        change(&mut spec);
        let n = self.cluster.pods().count();
        self.cluster.add_pod(Pod {
            name: format!("web-{n}"),
            uid: 0,
            spec: Arc::new(spec),
            owner: Some(OwnerRef {
                kind: OwnerKind::ReplicaSet,
                name: "web".into(),
            }),
            node: Some(node),
            phase: PodPhase::Running,
            created_at: SimTime::ZERO,
            unschedulable: false,
            lifecycle: PodLifecycle {
                started_at: Some(SimTime::ZERO),
                deleting_since: None,
            },
        })
    }

    fn with_input<R>(&self, f: impl FnOnce(&PassInput<'_>) -> R) -> R {
        let contexts: Vec<NodePoolContext<'_>> = self
            .pools
            .iter()
            .map(|(pool, catalog)| NodePoolContext { pool, catalog })
            .collect();
        f(&PassInput {
            cluster: &self.cluster,
            nodepools: &contexts,
            daemonsets: &[],
            scales: &self.scales,
            pending: &self.pending,
            in_flight: &self.in_flight,
            node_count_resource: None,
            options: self.options,
            now: self.now,
            prepared: None,
            candidate_cache: None,
            consolidated: None,
            message_dedupe: self.quiet.as_ref().map(|published| MessageDedupe {
                published,
                window: SimDuration::from_mins(15),
            }),
            horizon: None,
        })
    }

    /// Calls `f` with what the controller object ([`Disruption`]) reads of
    /// this cluster.
    fn with_disruption_input<R>(&self, f: impl FnOnce(&DisruptionInput<'_>) -> R) -> R {
        let contexts: Vec<NodePoolContext<'_>> = self
            .pools
            .iter()
            .map(|(pool, catalog)| NodePoolContext { pool, catalog })
            .collect();
        f(&DisruptionInput {
            cluster: &self.cluster,
            nodepools: &contexts,
            daemonsets: &[],
            scales: &self.scales,
            pending: &self.pending,
            in_flight: &self.in_flight,
            node_count_resource: None,
            now: self.now,
            consolidation_state: self.consolidation_state,
        })
    }

    fn pass(&self) -> PassOutcome {
        self.with_input(super::pass::run_pass)
    }

    /// A pass inside a rayon pool of `threads` threads.
    fn pass_on_threads(&self, threads: usize) -> PassOutcome {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap()
            .install(|| self.pass())
    }

    fn validate(&self, command: &Command) -> Result<(), String> {
        self.with_input(|input| validate_pass(input, command))
    }

    /// The names of a replacement's options.
    fn options(&self, command: &Command) -> Vec<String> {
        let claim = &command.replacements[0];
        let catalog = &self.pools[claim.nodepool].1;
        claim
            .instance_types
            .iter()
            .map(|&i| catalog.instance_types()[i].name().to_string())
            .collect()
    }
}

/// The sentence noted for `node` (empty when none).
fn note(outcome: &PassOutcome, node: NodeId) -> String {
    outcome
        .unconsolidatable
        .iter()
        .find(|(n, _)| *n == node)
        .map_or_else(String::new, |(_, reason)| reason.to_string())
}

fn command(outcome: &PassOutcome) -> &Command {
    outcome
        .command
        .as_ref()
        .unwrap_or_else(|| panic!("no command: {:?}", outcome.unconsolidatable))
}

/// core: disruption/emptiness_test.go "can delete empty nodes" (the busy
/// node stays; the command is validated before it runs).
#[test]
fn can_delete_empty_nodes() {
    let mut env = Env::fake();
    let empty = env.node("empty", "fake-it-1", CapacityType::OnDemand);
    let busy = env.node("busy", "fake-it-1", CapacityType::OnDemand);
    env.pod(busy, 1500);
    let outcome = env.pass();
    let cmd = command(&outcome);
    assert_eq!(cmd.method, Method::Emptiness);
    assert_eq!(cmd.reason, DisruptionReason::Empty);
    assert_eq!(cmd.candidates, vec![empty]);
    assert!(cmd.replacements.is_empty() && cmd.needs_validation);
    let price = env
        .cluster
        .node(empty)
        .unwrap()
        .claim
        .as_ref()
        .unwrap()
        .price;
    assert_eq!(cmd.estimated_savings, price);
    assert_eq!(
        cmd.explanation,
        format!("delete 1 empty node (fake-it-1): saves {price}/h")
    );
    assert_eq!(env.validate(cmd), Ok(()));
}

/// core: emptiness_test.go / consolidation_test.go Budgets "should only
/// allow 3 empty nodes to be disrupted" and "should allow no empty nodes
/// to be disrupted".
#[test]
fn budgets_block_emptiness() {
    let mut env = Env::fake();
    let nodes: Vec<NodeId> = (0..10)
        .map(|i| env.node(&format!("n{i}"), "fake-it-0", CapacityType::OnDemand))
        .collect();
    env.pool_mut().disruption.budgets[0].nodes = BudgetNodes::Count(3);
    let outcome = env.pass();
    let cmd = command(&outcome);
    assert_eq!(cmd.candidates.len(), 3);
    assert!(cmd.candidates.iter().all(|c| nodes.contains(c)));
    assert!(
        cmd.explanation
            .starts_with("delete 3 empty nodes (3 × fake-it-0)")
    );
    env.pool_mut().disruption.budgets[0].nodes = BudgetNodes::Count(0);
    assert_eq!(env.pass().command, None);
}

/// core: consolidation_test.go Delete "can delete nodes" (and "considers
/// karpenter.sh/do-not-disrupt set to true on nodes": the protected node
/// stays and receives the pods).
#[test]
fn consolidates_nodes_whose_pods_fit_elsewhere() {
    let mut env = Env::fake();
    let a = env.node("a", "fake-it-7", CapacityType::OnDemand);
    let b = env.node("b", "fake-it-7", CapacityType::OnDemand);
    let keep = env.node("keep", "fake-it-15", CapacityType::OnDemand);
    env.claim_mut(keep).lifecycle.do_not_disrupt = true;
    env.pod(a, 1000);
    env.pod(b, 1000);
    env.pod(keep, 1000);
    let outcome = env.pass();
    let cmd = command(&outcome);
    assert_eq!(cmd.method, Method::MultiNodeConsolidation);
    assert_eq!(cmd.candidates.len(), 2);
    assert!(cmd.candidates.contains(&a) && cmd.candidates.contains(&b));
    assert!(cmd.replacements.is_empty(), "pods fit on the kept node");
    assert!(
        cmd.explanation
            .starts_with("delete 2 × fake-it-7: underutilized, saves $"),
        "{}",
        cmd.explanation
    );
    assert!(note(&outcome, keep).contains("karpenter.sh/do-not-disrupt"));
    assert_eq!(env.validate(cmd), Ok(()));
}

/// The `Disruption` object decides as a one-shot pass, pass after pass
/// with its caches kept, and its recorder publishes a node's message once
/// per 15 min (core: disruption/events `Unconsolidatable` DedupeTimeout),
/// never one about a node in the orchestration queue.
#[test]
fn the_controller_object_decides_as_a_one_shot_pass() {
    use crate::karpenter::provisioning::Provisioner;
    let mut env = Env::fake();
    let a = env.node("a", "fake-it-7", CapacityType::OnDemand);
    let b = env.node("b", "fake-it-7", CapacityType::OnDemand);
    let keep = env.node("keep", "fake-it-15", CapacityType::OnDemand);
    env.claim_mut(keep).lifecycle.do_not_disrupt = true;
    for node in [a, b, keep] {
        env.pod(node, 1000);
    }
    let contexts: Vec<NodePoolContext<'_>> = env
        .pools
        .iter()
        .map(|(pool, catalog)| NodePoolContext { pool, catalog })
        .collect();
    let mut disruption = Disruption::new(env.options);
    let provisioner = Provisioner::new();
    let mut in_flight = BTreeSet::new();
    for minutes in [0, 5, 16] {
        let input = DisruptionInput {
            cluster: &env.cluster,
            nodepools: &contexts,
            daemonsets: &[],
            scales: &env.scales,
            pending: &env.pending,
            in_flight: &in_flight,
            node_count_resource: None,
            now: env.now + SimDuration::from_mins(minutes),
            consolidation_state: None,
        };
        let one_shot = next_command(&input);
        let kept = disruption.next_command(&input, &provisioner);
        assert_eq!(kept.command, one_shot.command, "at {minutes} min");
        let published: Vec<NodeId> = kept.unconsolidatable.iter().map(|(n, _)| *n).collect();
        match minutes {
            0 | 16 => assert_eq!(published, [keep], "at {minutes} min"),
            _ => assert!(published.is_empty(), "dropped within 15 min"),
        }
        assert_eq!(
            disruption.validate(&input, &provisioner, command(&kept)),
            validate(&input, command(&kept))
        );
    }
    in_flight.insert(keep);
    let messages = vec![(keep, super::reasons::Unconsolidatable::WouldCreate(1))];
    let later = env.now + SimDuration::from_mins(60);
    assert!(
        disruption
            .publish(&env.cluster, &in_flight, later, messages)
            .is_empty(),
        "a node being deleted is not news"
    );
}

/// core: consolidation_test.go Replace "can replace node" (on-demand
/// candidate): one cheaper NodeClaim, pinned to spot because the pool
/// allows both capacity types.
#[test]
fn replaces_a_node_with_a_cheaper_one() {
    let mut env = Env::fake();
    let big = env.node("big", "fake-it-7", CapacityType::OnDemand);
    env.pod(big, 1000);
    let outcome = env.pass();
    let cmd = command(&outcome);
    assert_eq!(cmd.method, Method::SingleNodeConsolidation);
    assert_eq!(cmd.candidates, vec![big]);
    assert_eq!(cmd.replacements.len(), 1);
    let options = env.options(cmd);
    assert_eq!(options[0], "fake-it-1", "cheapest type that fits 1 CPU");
    assert!(!options.contains(&"fake-it-7".to_string()), "not cheaper");
    let ct = cmd.replacements[0]
        .requirements
        .get(LABEL_CAPACITY_TYPE)
        .unwrap();
    assert!(ct.has("spot") && !ct.has("on-demand"));
    assert!(cmd.estimated_savings.micros() > 0);
    assert!(
        cmd.explanation.starts_with(
            "replace fake-it-7 with 1 of [fake-it-1, fake-it-2, fake-it-3, …]: underutilized, saves up to $"
        ),
        "{}",
        cmd.explanation
    );
    assert_eq!(env.validate(cmd), Ok(()));
}

/// core: consolidation_test.go Replace "won't replace on-demand node if
/// on-demand replacement is more expensive".
#[test]
fn wont_replace_with_a_more_expensive_node() {
    let mut env = Env::fake();
    env.require_on_demand();
    let small = env.node("small", "fake-it-1", CapacityType::OnDemand);
    env.pod(small, 1500);
    let outcome = env.pass();
    assert_eq!(outcome.command, None);
    assert_eq!(note(&outcome, small), NO_CHEAPER_NODE);
}

/// core: consolidation_test.go Delete "can delete nodes, considers
/// karpenter.sh/do-not-disrupt set to true on pods".
#[test]
fn wont_consolidate_a_node_with_a_do_not_disrupt_pod() {
    let mut env = Env::fake();
    let a = env.node("a", "fake-it-7", CapacityType::OnDemand);
    env.pod_with(a, 1000, |s| s.do_not_disrupt = Some(DoNotDisrupt::Always));
    let outcome = env.pass();
    assert_eq!(outcome.command, None);
    assert!(
        note(&outcome, a).contains("has \"karpenter.sh/do-not-disrupt\" annotation"),
        "{}",
        note(&outcome, a)
    );
}

/// core: consolidation_test.go Delete "can delete nodes, considers PDB":
/// a PDB that allows no disruption blocks the node.
#[test]
fn pdb_blocks_consolidation() {
    let mut env = Env::fake();
    let a = env.node("a", "fake-it-7", CapacityType::OnDemand);
    env.pod(a, 1000);
    env.scales
        .insert("default", OwnerKind::ReplicaSet, "web", 1);
    env.cluster
        .pdbs
        .push(pdb("web-pdb", "web", None, Some(IntOrPercent::Int(0))));
    let outcome = env.pass();
    assert_eq!(outcome.command, None);
    assert_eq!(
        note(&outcome, a),
        "pdb \"default/web-pdb\" prevents pod evictions"
    );
}

/// core: consolidation_test.go Multi-NodeClaim "can merge 3 nodes into 1"
/// (on-demand candidates).
#[test]
fn multi_node_consolidation_merges_nodes_into_one() {
    let mut env = Env::fake();
    let nodes: Vec<NodeId> = (0..3)
        .map(|i| env.node(&format!("n{i}"), "fake-it-7", CapacityType::OnDemand))
        .collect();
    for &n in &nodes {
        env.pod(n, 1000);
    }
    let outcome = env.pass();
    let cmd = command(&outcome);
    assert_eq!(cmd.method, Method::MultiNodeConsolidation);
    assert_eq!(cmd.candidates.len(), 3);
    assert_eq!(cmd.replacements.len(), 1);
    assert_eq!(cmd.replacements[0].pods.len(), 3);
    assert!(
        cmd.explanation
            .starts_with("replace 3 × fake-it-7 with 1 of [")
    );
    assert_eq!(env.validate(cmd), Ok(()));
}

/// core: consolidation_test.go "cannot replace spot with spot if the
/// spotToSpotConsolidation is disabled".
#[test]
fn spot_to_spot_disabled() {
    let mut env = Env::fake();
    let a = env.node("a", "fake-it-7", CapacityType::Spot);
    env.pod(a, 1000);
    let outcome = env.pass();
    assert_eq!(outcome.command, None);
    assert_eq!(note(&outcome, a), SPOT_TO_SPOT_DISABLED);
}

/// core: consolidation_test.go "cannot replace spot with spot if less than
/// minimum InstanceTypes flexibility" and "spot to spot consolidation should
/// order the instance types by price before enforcing minimum flexibility"
/// (truncated to the 15 cheapest).
#[test]
fn spot_to_spot_needs_15_cheaper_types() {
    let mut env = Env::fake();
    env.options.spot_to_spot_consolidation = true;
    let small = env.node("small", "fake-it-5", CapacityType::Spot);
    env.pod(small, 500);
    let outcome = env.pass();
    assert_eq!(outcome.command, None);
    assert_eq!(
        note(&outcome, small),
        "SpotToSpotConsolidation requires 15 cheaper instance type options than the current candidate to consolidate, got 5"
    );
    let mut env = Env::fake();
    env.options.spot_to_spot_consolidation = true;
    let big = env.node("big", "fake-it-30", CapacityType::Spot);
    env.pod(big, 500);
    let outcome = env.pass();
    let cmd = command(&outcome);
    let options = env.options(cmd);
    assert_eq!(options.len(), 15);
    let expected: Vec<String> = (0..15).map(|i| format!("fake-it-{i}")).collect();
    assert_eq!(options, expected);
}

/// core: multinodeconsolidation.go `filterOutSameInstanceType` (consolidation
/// _test.go Multi-NodeClaim "won't merge 2 nodes into 1 of the same type"):
/// two fake-it-1 nodes would merge into one fake-it-1 — rejected, so the
/// pass deletes one node instead.
#[test]
fn same_instance_type_filter() {
    let mut env = Env::fake();
    let a = env.node("a", "fake-it-1", CapacityType::OnDemand);
    let b = env.node("b", "fake-it-1", CapacityType::OnDemand);
    env.pod(a, 900);
    env.pod(b, 900);
    let outcome = env.pass();
    let cmd = command(&outcome);
    assert_eq!(cmd.method, Method::SingleNodeConsolidation);
    assert_eq!(cmd.candidates.len(), 1);
    assert!(
        cmd.replacements.is_empty(),
        "its pod moves to the other node"
    );
}

/// core: consolidation_test.go Events "should fire an event for
/// ConsolidationDisabled when the NodePool has consolidation set to
/// WhenEmpty".
#[test]
fn when_empty_does_not_consolidate_underutilized_nodes() {
    let mut env = Env::fake();
    env.pool_mut().disruption.consolidation_policy = ConsolidationPolicy::WhenEmpty;
    let a = env.node("a", "fake-it-7", CapacityType::OnDemand);
    let empty = env.node("empty", "fake-it-7", CapacityType::OnDemand);
    env.pod(a, 1000);
    let outcome = env.pass();
    assert_eq!(
        command(&outcome).candidates,
        vec![empty],
        "empty still goes"
    );
    let mut env2 = Env::fake();
    env2.pool_mut().disruption.consolidation_policy = ConsolidationPolicy::WhenEmpty;
    let a = env2.node("a", "fake-it-7", CapacityType::OnDemand);
    env2.pod(a, 1000);
    let outcome = env2.pass();
    assert_eq!(outcome.command, None);
    assert_eq!(
        note(&outcome, a),
        "NodePool \"default\" has consolidation policy WhenEmpty, but node is not empty"
    );
}

/// core: consolidation_test.go Events "should fire an event for
/// ConsolidationDisabled when the NodePool has consolidateAfter set to
/// 'Never'" and TTL "should wait for the node TTL for non-empty nodes
/// before consolidating".
#[test]
fn consolidate_after_never_and_window() {
    let mut env = Env::fake();
    env.pool_mut().disruption.consolidate_after = None;
    let a = env.node("a", "fake-it-7", CapacityType::OnDemand);
    env.pod(a, 1000);
    let outcome = env.pass();
    assert_eq!(outcome.command, None);
    assert_eq!(
        note(&outcome, a),
        "NodePool \"default\" has consolidation disabled"
    );
    // A 10-minute window that a pod event restarted 1 minute ago.
    env.pool_mut().disruption.consolidate_after = Some(Duration::from_secs(600));
    env.claim_mut(a).lifecycle.last_pod_event_at = Some(NOW - SimDuration::from_secs(60));
    assert_eq!(env.pass().command, None);
    env.now = NOW + SimDuration::from_secs(540);
    assert_eq!(command(&env.pass()).candidates, vec![a]);
}

/// core: drift_test.go "should replace drifted nodes" and "should drift
/// empty nodes before non-empty nodes" (consolidation disabled, so only
/// Drift acts; no validation).
#[test]
fn drift_replaces_a_drifted_node() {
    let mut env = Env::fake();
    env.pool_mut().disruption.consolidate_after = None;
    let busy = env.node("busy", "fake-it-3", CapacityType::OnDemand);
    env.pod(busy, 1500);
    let drifted = |since| DriftedCondition {
        reason: "NodePoolDrifted".into(),
        since,
    };
    env.claim_mut(busy).lifecycle.drifted = Some(drifted(SimTime::ZERO));
    let outcome = env.pass();
    let cmd = command(&outcome);
    assert_eq!(cmd.method, Method::Drift);
    assert_eq!(cmd.reason, DisruptionReason::Drifted);
    assert_eq!(cmd.candidates, vec![busy]);
    assert_eq!(cmd.replacements.len(), 1);
    assert!(!cmd.needs_validation);
    assert_eq!(
        cmd.explanation,
        "drifted (NodePoolDrifted): replace with 1 NodeClaim"
    );
    // An empty node drifted later still goes first, as a pure delete.
    let empty = env.node("empty", "fake-it-3", CapacityType::OnDemand);
    env.claim_mut(empty).lifecycle.drifted = Some(drifted(NOW));
    let cmd = env.pass().command.unwrap();
    assert_eq!(cmd.candidates, vec![empty]);
    assert_eq!(cmd.explanation, "drifted (NodePoolDrifted): delete");
}

/// core: drift_test.go "should not drift nodes that have pods with the
/// karpenter.sh/do-not-disrupt annotation" and its terminationGracePeriod
/// case (Eventual disruption): a drifted node whose pod blocks eviction
/// keeps the Graceful rejection as its note and is not drifted; with a
/// grace period on its NodeClaim it is. A node that is not drifted is not
/// a drift candidate, whatever its pods.
#[test]
fn drift_respects_do_not_disrupt_unless_a_grace_period_bounds_the_drain() {
    let mut env = Env::fake();
    env.pool_mut().disruption.consolidate_after = None;
    let drifted = env.node("drifted", "fake-it-3", CapacityType::OnDemand);
    env.pod_with(drifted, 1000, |s| {
        s.do_not_disrupt = Some(DoNotDisrupt::Always)
    });
    env.claim_mut(drifted).lifecycle.drifted = Some(DriftedCondition {
        reason: "NodePoolDrifted".into(),
        since: SimTime::ZERO,
    });
    let steady = env.node("steady", "fake-it-3", CapacityType::OnDemand);
    env.pod(steady, 1000);
    let outcome = env.pass();
    assert_eq!(outcome.command, None);
    assert!(
        note(&outcome, drifted).contains("has \"karpenter.sh/do-not-disrupt\" annotation"),
        "{}",
        note(&outcome, drifted)
    );
    env.claim_mut(drifted).lifecycle.termination_grace_period = Some(SimDuration::from_mins(10));
    let cmd = env.pass().command.unwrap();
    assert_eq!(cmd.method, Method::Drift);
    assert_eq!(cmd.candidates, vec![drifted]);
}

/// core: consolidation_test.go TTL "should not delete node if pods
/// schedule with karpenter.sh/do-not-disrupt set to true during the TTL
/// wait" and validation.go churn: a pod landed on the empty node, and a
/// pod that no longer fits elsewhere breaks a replace.
#[test]
fn validation_drops_a_command_if_a_pod_landed() {
    let mut env = Env::fake();
    let empty = env.node("empty", "fake-it-1", CapacityType::OnDemand);
    let cmd = command(&env.pass()).clone();
    assert_eq!(cmd.candidates, vec![empty]);
    env.pod(empty, 500);
    let error = env.validate(&cmd).unwrap_err();
    assert_eq!(error, "churn: 1 candidates are no longer valid");

    let mut env = Env::fake();
    let big = env.node("big", "fake-it-7", CapacityType::OnDemand);
    env.pod(big, 1000);
    let cmd = command(&env.pass()).clone();
    assert_eq!(cmd.replacements.len(), 1);
    assert_eq!(env.validate(&cmd), Ok(()));
    // A pod needing 5 CPUs lands: the cheap options no longer fit.
    env.pod(big, 5000);
    assert_eq!(
        env.validate(&cmd).unwrap_err(),
        "scheduling: scheduling simulation produced new results"
    );
}

/// core: consolidation_test.go Delete "won't delete node if it would
/// require pods to schedule on an uninitialized node".
#[test]
fn uninitialized_destination_rejected() {
    let mut env = Env::fake();
    let a = env.node("a", "fake-it-1", CapacityType::OnDemand);
    env.pod(a, 1500);
    let fresh = env.node("fresh", "fake-it-15", CapacityType::OnDemand);
    env.cluster.node_mut(fresh).unwrap().initialized = false;
    let outcome = env.pass();
    assert_eq!(outcome.command, None);
    assert!(
        note(&outcome, a).starts_with("Not all pods would schedule, default/web-0 => would schedule against uninitialized nodeclaim/fresh, node/fresh"),
        "{}",
        note(&outcome, a)
    );
}

/// core: consolidation_test.go Delete "should not consolidate pods onto a
/// destination node that is under its consolidateAfter window".
#[test]
fn destination_inside_consolidate_after_window_is_closed() {
    let mut env = Env::fake();
    env.pool_mut().disruption.consolidate_after = Some(Duration::from_secs(600));
    let a = env.node("a", "fake-it-1", CapacityType::OnDemand);
    env.pod(a, 1500);
    let recent = env.node("recent", "fake-it-15", CapacityType::OnDemand);
    env.pod(recent, 1000);
    env.claim_mut(recent).lifecycle.do_not_disrupt = true;
    env.claim_mut(recent).lifecycle.last_pod_event_at = Some(NOW - SimDuration::from_secs(60));
    let outcome = env.pass();
    assert_eq!(outcome.command, None, "a's pod may not move to recent");
    assert_eq!(note(&outcome, a), NO_CHEAPER_NODE);
    // Once the window is over the pod may move there and a is deleted.
    env.claim_mut(recent).lifecycle.last_pod_event_at = Some(SimTime::ZERO);
    let cmd = command(&env.pass()).clone();
    assert_eq!(cmd.candidates, vec![a]);
    assert!(cmd.replacements.is_empty());
}

/// core: consolidation_test.go Budgets "should only allow 3 nodes to be
/// deleted in multi node consolidation delete".
#[test]
fn budgets_bound_multi_node_consolidation() {
    let mut env = Env::fake();
    let keep = env.node("keep", "fake-it-30", CapacityType::OnDemand);
    env.claim_mut(keep).lifecycle.do_not_disrupt = true;
    for i in 0..6 {
        let n = env.node(&format!("n{i}"), "fake-it-3", CapacityType::OnDemand);
        env.pod(n, 1000);
    }
    env.pool_mut().disruption.budgets[0].nodes = BudgetNodes::Count(3);
    let cmd = command(&env.pass()).clone();
    assert_eq!(cmd.method, Method::MultiNodeConsolidation);
    assert_eq!(cmd.candidates.len(), 3);
    assert!(cmd.replacements.is_empty());
}

/// core: disruption/balanced_test.go (v1.14 `Balanced`): a move saving a
/// small share of the pool's cost for a large share of its disruption is
/// rejected, while WhenEmptyOrUnderutilized takes it.
#[test]
fn balanced_rejects_low_value_moves() {
    let mut env = Env::fake();
    env.pool_mut().disruption.consolidation_policy = ConsolidationPolicy::Balanced;
    // Nine big nodes busy enough that only `small` is worth a look.
    for i in 0..9 {
        let n = env.node(&format!("big{i}"), "fake-it-30", CapacityType::OnDemand);
        env.claim_mut(n).lifecycle.do_not_disrupt = true;
        env.pod(n, 1000);
    }
    let small = env.node("small", "fake-it-0", CapacityType::OnDemand);
    for _ in 0..4 {
        env.pod(small, 100);
    }
    // Savings ≈ 1/280 of the pool's cost; disruption 5 of 23 units.
    let outcome = env.pass();
    assert_eq!(outcome.command, None);
    env.pool_mut().disruption.consolidation_policy = ConsolidationPolicy::WhenEmptyOrUnderutilized;
    assert_eq!(command(&env.pass()).candidates, vec![small]);
}

/// Real us-east-1 catalog: an on-demand m5.2xlarge running one small pod
/// is replaced by a cheaper type (consolidation_test.go "can replace node"
/// on AWS prices).
#[test]
fn replaces_on_the_real_catalog() {
    let catalog = Catalog::load("us-east-1", &NodeClassSettings::default()).unwrap();
    let mut env = Env::new(catalog);
    env.require_on_demand();
    let node = env.node("m5", "m5.2xlarge", CapacityType::OnDemand);
    env.pod(node, 500);
    let outcome = env.pass();
    let cmd = command(&outcome);
    assert_eq!(cmd.replacements.len(), 1);
    let catalog = &env.pools[0].1;
    let candidate_price = catalog.get("m5.2xlarge").unwrap().on_demand_price;
    for name in env.options(cmd) {
        assert!(catalog.get(&name).unwrap().on_demand_price < candidate_price);
    }
    assert!(cmd.estimated_savings.micros() > 0);
    assert!(
        cmd.explanation
            .starts_with("replace m5.2xlarge with 1 of [")
    );
}
