//! Single-node consolidation's [`NoOpBound`] rules out only candidates
//! whose simulation is a no-op: on hand-made clusters where it must and
//! must not, and on random small clusters (nodes of several sizes, some
//! uninitialized, some spot, pods of varied CPU and memory, some pending,
//! NodePools on-demand only or spot too). The pass's call and the
//! simulation's pod list, which read what is kept with each node's
//! facts, agree with the pods looked up one by one.

use proptest::prelude::*;

use super::*;
use crate::karpenter::disruption::consolidation::{Decision, consolidate};
use crate::karpenter::disruption::context::PassContext;
use crate::karpenter::disruption::no_op_bound::NoOpBound;
use crate::karpenter::disruption::types::{DisruptionClass, amounts};

/// Per Graceful candidate, whether the bound rules it out and what its
/// simulation decides.
fn bound_and_decisions(env: &Env) -> Vec<(NodeId, bool, Decision)> {
    env.with_input(|input| {
        let mut ctx = PassContext::new(input);
        ctx.judge_every_node();
        let (candidates, _) = ctx.judge(DisruptionClass::Graceful, |_| true);
        let view = ctx.consolidation_view();
        let launch_rooms = view
            .prepared(input)
            .expect("a view brings its setup")
            .launch_rooms(input.nodepools);
        let bound = NoOpBound::new(&view.open_views(), launch_rooms);
        candidates
            .iter()
            .map(|candidate| {
                // Each moving pod looked up by the rule itself: the
                // simulation's list must be those.
                let moving: Vec<PodId> = candidate
                    .reschedulable_pods()
                    .iter()
                    .copied()
                    .filter(|&id| view.moving_pod(input, &ctx.pdbs, id).is_some())
                    .collect();
                assert_eq!(
                    view.moving_pods(input, &ctx.pdbs, candidate)[..],
                    moving[..]
                );
                let requests = moving
                    .iter()
                    .filter_map(|&id| input.cluster.pod(id))
                    .map(|pod| amounts(&pod.spec.requests))
                    .collect::<Vec<_>>();
                let ruled_out = bound.rules_out(&[candidate.node], candidate.price, &requests);
                // The pass's own call reads the requests kept with the
                // node's facts when it can; they must be the pods' own.
                assert_eq!(
                    ctx.rules_out(&[candidate]),
                    ruled_out,
                    "the pass's bound on {:?}",
                    candidate.node
                );
                let decision = consolidate(
                    input,
                    &ctx.pdbs,
                    view,
                    &[candidate],
                    view.closure(true),
                    false,
                );
                (candidate.node, ruled_out, decision)
            })
            .collect()
    })
}

fn of(outcomes: &[(NodeId, bool, Decision)], node: NodeId) -> (bool, &Decision) {
    let (_, ruled_out, decision) = outcomes
        .iter()
        .find(|(id, ..)| *id == node)
        .expect("a candidate");
    (*ruled_out, decision)
}

/// A full fake-it-1 node (1900m allocatable) whose 1800m pod fits no other
/// node and no cheaper type (fake-it-0 allocates 900m) is ruled out; its
/// simulation finds no cheaper node.
#[test]
fn a_full_node_no_cheaper_type_holds_is_ruled_out() {
    let mut env = Env::fake();
    env.require_on_demand();
    let a = env.node("a", "fake-it-1", CapacityType::OnDemand);
    let b = env.node("b", "fake-it-1", CapacityType::OnDemand);
    env.pod(a, 1800);
    env.pod(b, 1800);
    let outcomes = bound_and_decisions(&env);
    for node in [a, b] {
        let (ruled_out, decision) = of(&outcomes, node);
        assert!(ruled_out);
        assert!(matches!(decision, Decision::NoOp(_)), "{decision:?}");
    }
}

/// A fake-it-3 node holding one 500m pod beside a full node: fake-it-0
/// holds the pod for less, so the bound must not rule it out, and the
/// simulation replaces it.
#[test]
fn a_node_a_cheaper_type_holds_is_not_ruled_out() {
    let mut env = Env::fake();
    env.require_on_demand();
    let big = env.node("big", "fake-it-3", CapacityType::OnDemand);
    let full = env.node("full", "fake-it-1", CapacityType::OnDemand);
    env.pod(big, 500);
    env.pod(full, 1800);
    let outcomes = bound_and_decisions(&env);
    let (ruled_out, decision) = of(&outcomes, big);
    assert!(!ruled_out);
    assert!(matches!(decision, Decision::Replace(_)), "{decision:?}");
}

/// Pods that fit the other nodes' rooms together (two 900m pods, one room
/// each) leave nothing for a new NodeClaim: no bound, and a delete.
#[test]
fn pods_that_fit_elsewhere_are_not_ruled_out() {
    let mut env = Env::fake();
    env.require_on_demand();
    let a = env.node("a", "fake-it-1", CapacityType::OnDemand);
    let b = env.node("b", "fake-it-1", CapacityType::OnDemand);
    let c = env.node("c", "fake-it-1", CapacityType::OnDemand);
    env.pod(a, 900);
    env.pod(a, 900);
    env.pod(b, 1000);
    env.pod(c, 1000);
    let outcomes = bound_and_decisions(&env);
    let (ruled_out, decision) = of(&outcomes, a);
    assert!(!ruled_out);
    assert_eq!(*decision, Decision::Delete);
}

/// The room of a node that has not finished initializing does not count
/// (a pod placed there makes a no-op): a's pod fits only there, so a is
/// ruled out, as upstream's "won't delete node if it would require pods
/// to schedule on an uninitialized node" finds.
#[test]
fn an_uninitialized_node_room_does_not_count() {
    let mut env = Env::fake();
    env.require_on_demand();
    let a = env.node("a", "fake-it-1", CapacityType::OnDemand);
    env.pod(a, 1500);
    let fresh = env.node("fresh", "fake-it-15", CapacityType::OnDemand);
    env.cluster.node_mut(fresh).unwrap().initialized = false;
    let outcomes = bound_and_decisions(&env);
    let (ruled_out, decision) = of(&outcomes, a);
    assert!(ruled_out);
    assert!(matches!(decision, Decision::NoOp(_)), "{decision:?}");
}

/// Room spread over nodes too small for any one pod still counts in the
/// sum only: a's 1500m pod fits no node, and fake-it-0 cannot hold it.
#[test]
fn room_too_small_for_a_pod_strands_it() {
    let mut env = Env::fake();
    env.require_on_demand();
    let a = env.node("a", "fake-it-1", CapacityType::OnDemand);
    env.pod(a, 1500);
    for name in ["b", "c", "d"] {
        let node = env.node(name, "fake-it-1", CapacityType::OnDemand);
        env.pod(node, 1000);
    }
    let outcomes = bound_and_decisions(&env);
    let (ruled_out, decision) = of(&outcomes, a);
    assert!(ruled_out, "900m of room on each of three nodes");
    assert!(matches!(decision, Decision::NoOp(_)), "{decision:?}");
}

/// A random node: its size (fake-it-N), whether it is initialized and spot,
/// and its pods' CPU (millicores) and memory (MiB).
type RandomNode = (usize, bool, bool, Vec<(i64, i64)>);

fn random_node() -> impl Strategy<Value = RandomNode> {
    (
        0..6usize,
        prop::bool::weighted(0.85),
        prop::bool::weighted(0.25),
        prop::collection::vec((50..3500i64, 64..6000i64), 0..6),
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Whatever the cluster, a candidate the bound rules out is one its
    /// simulation finds a no-op.
    #[test]
    fn ruled_out_candidates_are_no_ops(
        nodes in prop::collection::vec(random_node(), 1..8),
        pending in prop::collection::vec((50..3000i64, 64..4000i64), 0..3),
        on_demand_only in any::<bool>(),
    ) {
        let mut env = Env::fake();
        if on_demand_only {
            env.require_on_demand();
        }
        let mut ids = Vec::new();
        for (i, (size, initialized, spot, pods)) in nodes.iter().enumerate() {
            let ct = if *spot { CapacityType::Spot } else { CapacityType::OnDemand };
            let id = env.node(&format!("n{i}"), &format!("fake-it-{size}"), ct);
            env.cluster.node_mut(id).unwrap().initialized = *initialized;
            for &(cpu, memory) in pods {
                env.pod_with(id, cpu, |spec| spec.requests.set(ResourceKind::Memory, memory * MIB));
            }
            ids.push(id);
        }
        for &(cpu, memory) in &pending {
            let pod = env.pod_with(ids[0], cpu, |spec| {
                spec.requests.set(ResourceKind::Memory, memory * MIB);
            });
            env.cluster.unbind(pod);
            env.pending.push(pod);
        }
        for (node, ruled_out, decision) in bound_and_decisions(&env) {
            prop_assert!(
                !ruled_out || matches!(decision, Decision::NoOp(_)),
                "{node:?} ruled out, but its simulation decides {decision:?}"
            );
        }
    }
}

/// A candidate keeps its pods' requests for the bound only while no pod
/// on it carries a do-not-disrupt annotation; one whose protection has
/// lapsed (a 1 min duration, 10 min after it started) makes the pass look
/// its pods up instead, and a PDB makes every candidate do so. Either way
/// the pass's bound answers as the pods looked up one by one (checked in
/// `bound_and_decisions`): two full fake-it-1 nodes are ruled out, as in
/// `a_full_node_no_cheaper_type_holds_is_ruled_out`.
#[test]
fn kept_requests_only_without_annotations_or_pdbs() {
    let mut env = Env::fake();
    env.require_on_demand();
    let a = env.node("a", "fake-it-1", CapacityType::OnDemand);
    let b = env.node("b", "fake-it-1", CapacityType::OnDemand);
    env.pod_with(a, 1800, |s| {
        s.do_not_disrupt = Some(DoNotDisrupt::For(Duration::from_secs(60)))
    });
    env.pod(b, 1800);
    env.now = SimTime::ZERO + SimDuration::from_mins(10);
    let kept = |env: &Env| {
        env.with_input(|input| {
            let mut ctx = PassContext::new(input);
            ctx.judge_every_node();
            let (candidates, _) = ctx.judge(DisruptionClass::Graceful, |_| true);
            candidates
                .iter()
                .map(|c| (c.node, c.unprotected_requests().is_some()))
                .collect::<Vec<_>>()
        })
    };
    assert_eq!(kept(&env), [(a, false), (b, true)]);
    for with_pdb in [false, true] {
        if with_pdb {
            env.scales
                .insert("default", OwnerKind::ReplicaSet, "web", 2);
            env.cluster
                .pdbs
                .push(pdb("web-pdb", "web", None, Some(IntOrPercent::Int(2))));
        }
        let outcomes = bound_and_decisions(&env);
        for node in [a, b] {
            assert!(of(&outcomes, node).0, "{node:?}, PDB {with_pdb}");
        }
    }
}

/// A pod a caller lists as pending though it is bound (a pod bound but
/// not yet started is still Pending to Kubernetes) does not move with its
/// node: the pass then looks that node's pods up one by one, and its
/// moving pods and bound answer as those looked up (checked in
/// `bound_and_decisions`); the other node keeps reading its kept requests.
#[test]
fn a_bound_pod_listed_as_pending_stays_out_of_its_nodes_moving_pods() {
    let mut env = Env::fake();
    env.require_on_demand();
    let a = env.node("a", "fake-it-1", CapacityType::OnDemand);
    let b = env.node("b", "fake-it-1", CapacityType::OnDemand);
    let listed = env.pod(a, 900);
    let moving = env.pod(a, 900);
    let other = env.pod(b, 1800);
    env.pending.push(listed);
    let outcomes = bound_and_decisions(&env);
    assert_eq!(outcomes.len(), 2);
    env.with_input(|input| {
        let mut ctx = PassContext::new(input);
        ctx.judge_every_node();
        let (candidates, _) = ctx.judge(DisruptionClass::Graceful, |_| true);
        let view = ctx.consolidation_view();
        let moving_of = |node| {
            let candidate = candidates.iter().find(|c| c.node == node).unwrap();
            view.moving_pods(input, &ctx.pdbs, candidate).to_vec()
        };
        assert_eq!(moving_of(a), [moving]);
        assert_eq!(moving_of(b), [other]);
    });
}
