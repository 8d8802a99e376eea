//! Conformance tests of the scale-down planner: timers, cooldowns,
//! drainability rules, PDBs, min size, budgets and committed simulation.

use super::scale_down::{
    PdbTracker, PodDrain, SAFE_TO_EVICT_ANNOTATION, classify, gpu_utilization, utilization,
};
use super::tests::{World, group, owned};
use super::*;
use crate::cluster::{OwnerKind, OwnerRef, Pod};
use crate::kube::resources::{GIB, ResourceKind};
use crate::kube::selector::LabelSelector;
use crate::pdb::PdbLimit;
use crate::scheduler::testing::PodBuilder;
use crate::time::SimDuration;

const T0: SimTime = SimTime::from_secs(10_000);

fn world(min: u32) -> World {
    World::new(CaConfig {
        node_groups: vec![group("g", &["m5.xlarge"], min, 20)],
        ..CaConfig::default()
    })
}

fn bound(w: &mut World, name: &str, node: NodeId, cpu: i64, edit: impl FnOnce(&mut Pod)) -> PodId {
    let mut p = owned(
        PodBuilder::new(name)
            .label("app", name)
            .requests(cpu, GIB / 4)
            .build(),
        name,
    );
    p.unschedulable = false;
    p.node = Some(node);
    edit(&mut p);
    w.cluster.add_pod(p)
}

fn removed(a: &Actions) -> Vec<NodeId> {
    a.actions
        .iter()
        .filter_map(|x| match x {
            Action::RemoveNode { node, .. } => Some(*node),
            _ => None,
        })
        .collect()
}

fn reason(a: &Actions, node: NodeId) -> Option<UnremovableReason> {
    a.unremovable
        .iter()
        .find(|(n, _)| *n == node)
        .map(|(_, r)| *r)
}

/// core/scaledown/unneeded/nodes.go `unremovableReason`: a node is removed
/// only once unneeded for longer than scale-down-unneeded-time (10 m,
/// strict), keeping its first-seen time across loops.
#[test]
fn unneeded_timer_is_strict_and_kept_across_loops() {
    let mut w = world(0);
    let n = w.launch("g", true, SimTime::ZERO);
    let keep = w.launch("g", true, SimTime::ZERO);
    bound(&mut w, "big", keep, 3000, |_| {});
    let a = w.run(T0, 0);
    assert_eq!(a.unneeded.get(&n), Some(&T0));
    assert_eq!(
        reason(&a, n),
        Some(UnremovableReason::NotUnneededLongEnough)
    );
    assert_eq!(reason(&a, keep), Some(UnremovableReason::NotUnderutilized));
    let b = w.run(T0 + SimDuration::from_mins(10), 0);
    assert_eq!(b.unneeded.get(&n), Some(&T0), "first-seen time kept");
    assert!(removed(&b).is_empty(), "exactly 10 m is not enough");
    let c = w.run(
        T0 + SimDuration::from_mins(10) + SimDuration::from_secs(1),
        0,
    );
    assert_eq!(
        c.actions,
        vec![Action::RemoveNode {
            node: n,
            empty: true
        }]
    );
}

/// static_autoscaler.go `isScaleDownInCooldown`: no deletion within
/// scale-down-delay-after-add (10 m) of a scale-up, or delay-after-failure
/// (3 m) of a failure; unneeded timers keep running meanwhile.
#[test]
fn delays_after_add_and_failure() {
    let mut w = world(0);
    let n = w.launch("g", true, SimTime::ZERO);
    w.run(T0, 0);
    w.state.last_scale_up = Some(T0 + SimDuration::from_mins(5));
    let blocked = w.run(T0 + SimDuration::from_mins(11), 0);
    assert!(removed(&blocked).is_empty());
    assert_eq!(blocked.unneeded.get(&n), Some(&T0), "timer keeps running");
    let ok = w.run(T0 + SimDuration::from_mins(15), 0);
    assert_eq!(removed(&ok), vec![n]);
    let mut w = world(0);
    let n = w.launch("g", true, SimTime::ZERO);
    w.run(T0, 0);
    w.state = w
        .state
        .with_scale_down_failure(T0 + SimDuration::from_mins(9));
    assert!(removed(&w.run(T0 + SimDuration::from_mins(11), 0)).is_empty());
    assert_eq!(removed(&w.run(T0 + SimDuration::from_mins(12), 0)), vec![n]);
}

/// simulator/drainability/rules (safetoevict, replicated, system,
/// notsafetoevict, localstorage, daemonset) and FAQ "What types of pods can
/// prevent CA from removing a node?".
#[test]
fn blocking_pod_rules_table() {
    let cfg = CaConfig::default();
    let limits = PdbLimits::default();
    let pdbs = PdbTracker::new(&limits);
    let now = T0;
    let base = || {
        let mut p = owned(PodBuilder::new("p").build(), "web");
        p.created_at = now;
        p
    };
    let rule = |p: &Pod| classify(p, &cfg, &pdbs, now);
    assert_eq!(rule(&base()), PodDrain::Move);
    let mut bare = base();
    bare.owner = None;
    assert_eq!(rule(&bare), PodDrain::Block(BlockingRule::NotReplicated));
    let annotate = |mut p: Pod, k: &str, v: &str| {
        Arc::make_mut(&mut p.spec)
            .annotations
            .insert(k.into(), v.into());
        p
    };
    assert_eq!(
        rule(&annotate(bare, SAFE_TO_EVICT_ANNOTATION, "true")),
        PodDrain::Move,
        "override"
    );
    assert_eq!(
        rule(&annotate(base(), SAFE_TO_EVICT_ANNOTATION, "false")),
        PodDrain::Block(BlockingRule::NotSafeToEvictAnnotation)
    );
    let mut system = base();
    Arc::make_mut(&mut system.spec).namespace = "kube-system".into();
    assert_eq!(
        rule(&system),
        PodDrain::Block(BlockingRule::UnmovableKubeSystemPod)
    );
    system.created_at = now - SimDuration::from_hours(1) - SimDuration::from_secs(1);
    assert_eq!(rule(&system), PodDrain::Move, "older than the 1 h timeout");
    let mut local = base();
    Arc::make_mut(&mut local.spec).local_storage_volumes = vec!["scratch".into()];
    assert_eq!(
        rule(&local),
        PodDrain::Block(BlockingRule::LocalStorageRequested)
    );
    let local = annotate(
        local,
        scale_down::SAFE_TO_EVICT_LOCAL_VOLUMES_ANNOTATION,
        "scratch",
    );
    assert_eq!(rule(&local), PodDrain::Move);
    let mut ds = base();
    ds.owner = Some(OwnerRef {
        kind: OwnerKind::DaemonSet,
        name: "agent".into(),
    });
    assert_eq!(rule(&ds), PodDrain::Skip);
    let mirror = annotate(bare_of(base()), groups::MIRROR_POD_ANNOTATION, "x");
    assert_eq!(rule(&mirror), PodDrain::Skip);
}

fn bare_of(mut p: Pod) -> Pod {
    p.owner = None;
    p
}

fn pdb_allowing(app: &str, allowed: u32) -> PdbLimits {
    PdbLimits::new(vec![PdbLimit {
        key: format!("default/{app}"),
        namespace: "default".into(),
        selector: Some(LabelSelector {
            match_labels: [("app".to_string(), app.to_string())].into(),
            match_expressions: Vec::new(),
        }),
        disruptions_allowed: allowed,
        fully_blocking: false,
        always_allow_unhealthy: false,
    }])
}

/// drainability/rules/pdb + RemainingPdbTracker: a PDB with one disruption
/// left lets the first node go and blocks the second in the same pass.
#[test]
fn pdb_budget_is_spent_across_candidates() {
    let mut w = world(0);
    let a = w.launch("g", true, SimTime::ZERO);
    let b = w.launch("g", true, SimTime::ZERO);
    let c = w.launch("g", true, SimTime::ZERO);
    bound(&mut w, "web", a, 500, |_| {});
    let pb = bound(&mut w, "web", b, 500, |_| {});
    bound(&mut w, "filler", c, 2500, |_| {});
    w.pdbs = pdb_allowing("web", 1);
    let out = w.run(T0, 0);
    assert!(out.unneeded.contains_key(&a));
    assert_eq!(
        reason(&out, b),
        Some(UnremovableReason::BlockedByPod {
            pod: pb,
            rule: BlockingRule::NotEnoughPdb
        })
    );
    w.pdbs = pdb_allowing("web", 0);
    let out = w.run(T0, 0);
    assert!(matches!(
        reason(&out, a),
        Some(UnremovableReason::BlockedByPod {
            rule: BlockingRule::NotEnoughPdb,
            ..
        })
    ));
}

/// FAQ "How does scale-down work?" (A/B/C example): simulations are
/// committed, so B's pods cannot use the room A's pods already took.
#[test]
fn removal_simulation_is_committed() {
    let mut w = world(0);
    let a = w.launch("g", true, SimTime::ZERO);
    let b = w.launch("g", true, SimTime::ZERO);
    let c = w.launch("g", true, SimTime::ZERO);
    bound(&mut w, "pa", a, 1500, |_| {});
    bound(&mut w, "pb", b, 1500, |_| {});
    bound(&mut w, "pc", c, 2500, |_| {});
    let out = w.run(T0, 0);
    assert!(out.unneeded.contains_key(&a), "A's pod moves to B");
    assert_eq!(reason(&out, b), Some(UnremovableReason::NoPlaceToMovePods));
    assert_eq!(reason(&out, c), Some(UnremovableReason::NotUnderutilized));
}

/// unneeded/nodes.go `verifyMinSize`: removals stop at the group's min
/// size, counting removals planned in the same loop.
#[test]
fn min_size_is_respected() {
    let mut w = world(1);
    let a = w.launch("g", true, SimTime::ZERO);
    let b = w.launch("g", true, SimTime::ZERO);
    w.run(T0, 0);
    let out = w.run(T0 + SimDuration::from_mins(11), 0);
    assert_eq!(removed(&out), vec![a]);
    assert_eq!(
        reason(&out, b),
        Some(UnremovableReason::NodeGroupMinSizeReached)
    );
}

/// budgets.go defaults: ≤ 10 deletions in flight (max-scale-down-
/// parallelism), of which 1 drain (max-drain-parallelism); empty first.
#[test]
fn deletion_budgets_empty_and_drain() {
    let mut w = world(0);
    let empties: Vec<NodeId> = (0..12)
        .map(|_| w.launch("g", true, SimTime::ZERO))
        .collect();
    let busy: Vec<NodeId> = (0..2).map(|_| w.launch("g", true, SimTime::ZERO)).collect();
    for (i, &n) in busy.iter().enumerate() {
        bound(&mut w, &format!("w{i}"), n, 500, |_| {});
    }
    w.run(T0, 0);
    let out = w.run(T0 + SimDuration::from_mins(11), 0);
    let gone = removed(&out);
    assert_eq!(gone.len(), 10);
    assert!(gone.iter().all(|n| empties.contains(n)));
    // Fewer empties: the remaining budget allows one drain.
    let mut w = world(0);
    let e = w.launch("g", true, SimTime::ZERO);
    let busy: Vec<NodeId> = (0..3).map(|_| w.launch("g", true, SimTime::ZERO)).collect();
    for (i, &n) in busy.iter().enumerate() {
        bound(&mut w, &format!("w{i}"), n, 500, |_| {});
    }
    w.run(T0, 0);
    let out = w.run(T0 + SimDuration::from_mins(11), 0);
    let drains = out
        .actions
        .iter()
        .filter(|a| matches!(a, Action::RemoveNode { empty: false, .. }))
        .count();
    assert_eq!(drains, 1);
    assert!(out.actions.contains(&Action::RemoveNode {
        node: e,
        empty: true
    }));
}

/// Starts the removals of `out` as the engine does: the node is marked
/// and tainted for deletion, leaves its group's members and target size.
fn start_removals(w: &mut World, out: &Actions) {
    for node in removed(out) {
        if let Some(n) = w.cluster.node_mut(node) {
            n.marked_for_deletion = true;
        }
        for g in &mut w.groups {
            if g.members.iter().any(|m| m.node == node) {
                g.members.retain(|m| m.node != node);
                g.target_size -= 1;
            }
        }
    }
}

/// core/scaledown/budgets/budgets_test.go `TestCropNodesToBudgets`,
/// "empty nodes exceeding the max limit" with deletions in progress: the
/// 10 deletions started count against max-scale-down-parallelism until
/// their nodes are gone, so a loop at the same instant starts none, and
/// one after they are gone starts the rest.
#[test]
fn empty_deletions_in_progress_count_against_the_max_limit() {
    let mut w = world(0);
    let empties: Vec<NodeId> = (0..12)
        .map(|_| w.launch("g", true, SimTime::ZERO))
        .collect();
    w.run(T0, 0);
    let at = T0 + SimDuration::from_mins(11);
    let first = w.run(at, 0);
    assert_eq!(removed(&first).len(), 10);
    start_removals(&mut w, &first);
    let again = w.run(at, 0);
    assert_eq!(removed(&again), Vec::<NodeId>::new());
    assert_eq!(w.state.deletions_in_progress.len(), 10);
    for node in removed(&first) {
        w.cluster.remove_node(node);
    }
    let after = w.run(at + SimDuration::from_secs(10), 0);
    let rest: Vec<NodeId> = empties
        .iter()
        .copied()
        .filter(|n| !removed(&first).contains(n))
        .collect();
    assert_eq!(removed(&after), rest);
}

/// budgets_test.go "drain nodes exceeding the max limit": with
/// max-drain-parallelism 2, drains in progress count as drains even once
/// their pods have left (the tracker remembers how each deletion
/// started), so no third drain starts while two are under way.
#[test]
fn drains_in_progress_count_against_the_drain_limit() {
    let mut w = World::new(CaConfig {
        node_groups: vec![group("g", &["m5.xlarge"], 0, 20)],
        max_drain_parallelism: 2,
        ..CaConfig::default()
    });
    let busy: Vec<NodeId> = (0..6).map(|_| w.launch("g", true, SimTime::ZERO)).collect();
    let mut pods = Vec::new();
    for (i, &n) in busy.iter().enumerate() {
        pods.push((n, bound(&mut w, &format!("w{i}"), n, 300, |_| {})));
    }
    w.run(T0, 0);
    let at = T0 + SimDuration::from_mins(11);
    let first = w.run(at, 0);
    let drained = removed(&first);
    assert_eq!(drained.len(), 2, "{first:?}");
    assert!(
        first
            .actions
            .iter()
            .all(|a| !matches!(a, Action::RemoveNode { empty: true, .. }))
    );
    start_removals(&mut w, &first);
    // Their pods are evicted: the nodes now look empty.
    for (n, pod) in &pods {
        if drained.contains(n) {
            w.cluster.remove_pod(*pod);
        }
    }
    let again = w.run(at, 0);
    assert_eq!(removed(&again), Vec::<NodeId>::new(), "{again:?}");
}

/// eligibility_test.go `TestFilterOutUnremovable` with per-node-group
/// options (`NodeGroupAutoscalingOptions`, the ASG's
/// `autoscaling-options/scaledownutilizationthreshold` tag): the same 40 %
/// node is underutilized under the 0.5 flag and not under its group's 0.3.
#[test]
fn group_threshold_overrides_the_flag() {
    let mut strict = group("strict", &["m5.xlarge"], 0, 5);
    strict.autoscaling_options.scale_down_utilization_threshold = Some(0.3);
    let mut w = World::new(CaConfig {
        node_groups: vec![strict, group("loose", &["m5.xlarge"], 0, 5)],
        ..CaConfig::default()
    });
    let a = w.launch("strict", true, SimTime::ZERO);
    let b = w.launch("loose", true, SimTime::ZERO);
    for (i, &n) in [a, b].iter().enumerate() {
        let alloc = w.cluster.node(n).unwrap().allocatable.cpu_millis();
        bound(&mut w, &format!("p{i}"), n, alloc * 4 / 10, |_| {});
    }
    let out = w.run(T0, 0);
    assert_eq!(reason(&out, a), Some(UnremovableReason::NotUnderutilized));
    assert!(out.unneeded.contains_key(&b), "{out:?}");
}

/// utilization/info.go `Calculate` and eligibility.go: a node with GPUs is
/// judged by its GPUs alone against `scaleDownGpuUtilizationThreshold`
/// (0.5): busy CPUs with an idle GPU are underutilized; an idle CPU with
/// its one GPU requested is not.
#[test]
fn gpu_nodes_are_judged_by_their_gpus() {
    use crate::testing::WithSpec;
    let mut w = World::new(CaConfig {
        node_groups: vec![group("gpu", &["g4dn.xlarge"], 0, 5)],
        ..CaConfig::default()
    });
    let idle_gpu = w.launch("gpu", true, SimTime::ZERO);
    let busy_gpu = w.launch("gpu", true, SimTime::ZERO);
    let alloc = w.cluster.node(idle_gpu).unwrap().allocatable.cpu_millis();
    bound(&mut w, "cpu-heavy", idle_gpu, alloc * 9 / 10, |_| {});
    bound(&mut w, "gpu-job", busy_gpu, 100, |p| {
        p.spec = p
            .spec
            .with(|s| s.requests = s.requests.with(ResourceKind::NvidiaGpu, 1))
    });
    assert_eq!(gpu_utilization(&w.cluster, idle_gpu, false), Some(0.0));
    assert_eq!(gpu_utilization(&w.cluster, busy_gpu, false), Some(1.0));
    let out = w.run(T0, 0);
    assert_ne!(
        reason(&out, idle_gpu),
        Some(UnremovableReason::NotUnderutilized)
    );
    assert_eq!(
        reason(&out, busy_gpu),
        Some(UnremovableReason::NotUnderutilized)
    );
    // A GPU threshold of 1 lets the busy GPU node be a candidate too.
    w.config = CaConfig {
        node_groups: vec![group("gpu", &["g4dn.xlarge"], 0, 5)],
        scale_down_gpu_utilization_threshold: 1.0,
        ..CaConfig::default()
    }
    .validate(super::tests::catalog())
    .unwrap();
    let out = w.run(T0, 0);
    assert_ne!(
        reason(&out, busy_gpu),
        Some(UnremovableReason::NotUnderutilized)
    );
}

/// Per-group `scaleDownUnneededTime`: a group with 2 m removes its empty
/// node three minutes in; the flag's 10 m keeps the other's.
#[test]
fn group_unneeded_time_overrides_the_flag() {
    let mut quick = group("quick", &["m5.xlarge"], 0, 5);
    quick.autoscaling_options.scale_down_unneeded_time = Some(SimDuration::from_mins(2));
    let mut w = World::new(CaConfig {
        node_groups: vec![quick, group("slow", &["m5.xlarge"], 0, 5)],
        ..CaConfig::default()
    });
    let a = w.launch("quick", true, SimTime::ZERO);
    let b = w.launch("slow", true, SimTime::ZERO);
    w.run(T0, 0);
    let out = w.run(T0 + SimDuration::from_mins(3), 0);
    assert_eq!(removed(&out), vec![a]);
    assert_eq!(
        reason(&out, b),
        Some(UnremovableReason::NotUnneededLongEnough)
    );
}

/// Per-group `maxNodeProvisionTime`: a scale-up request of that group
/// expects its nodes by then (clusterstate `RegisterScaleUp`), the others
/// by the flag's 15 m.
#[test]
fn group_max_node_provision_time_sets_the_expected_add_time() {
    let mut fast = group("fast", &["m5.xlarge"], 0, 5);
    fast.autoscaling_options.max_node_provision_time = Some(SimDuration::from_mins(5));
    let config = CaConfig {
        node_groups: vec![fast, group("other", &["m5.xlarge"], 0, 5)],
        ..CaConfig::default()
    };
    let state = CaState::default()
        .with_scale_up("fast", 1, T0, &config)
        .with_scale_up("other", 1, T0, &config);
    assert_eq!(
        state.scale_up_requests["fast"].expected_add_time,
        T0 + SimDuration::from_mins(5)
    );
    assert_eq!(
        state.scale_up_requests["other"].expected_add_time,
        T0 + SimDuration::from_mins(15)
    );
}

/// simulator/utilization/info.go: DaemonSet pods count by default
/// (`--ignore-daemonsets-utilization=false`); ignoring them removes them
/// from requests and allocatable. Threshold check uses `>` (0.5 passes).
#[test]
fn utilization_counts_daemonsets_by_default() {
    let mut w = world(0);
    let n = w.launch("g", true, SimTime::ZERO);
    let alloc = w.cluster.node(n).unwrap().allocatable.cpu_millis();
    bound(&mut w, "agent", n, alloc / 4, |p| {
        p.owner = Some(OwnerRef {
            kind: OwnerKind::DaemonSet,
            name: "agent".into(),
        })
    });
    bound(&mut w, "app", n, alloc / 4 + 100, |_| {});
    let u = utilization(&w.cluster, n, false);
    assert!(u > 0.5, "{u}");
    let ignored = utilization(&w.cluster, n, true);
    assert!(ignored < 0.5, "{ignored}");
    let out = w.run(T0, 0);
    assert_eq!(reason(&out, n), Some(UnremovableReason::NotUnderutilized));
}

/// eligibility.go: `scale-down-disabled` annotation and nodes outside any
/// group are never candidates.
#[test]
fn disabled_annotation_and_unmanaged_nodes() {
    let mut w = world(0);
    let n = w.launch("g", true, SimTime::ZERO);
    w.groups[0].members[0].scale_down_disabled = true;
    let other = w
        .cluster
        .add_node(crate::scheduler::testing::node("static").build());
    let out = w.run(T0, 0);
    assert_eq!(
        reason(&out, n),
        Some(UnremovableReason::ScaleDownDisabledAnnotation)
    );
    assert_eq!(reason(&out, other), Some(UnremovableReason::NotAutoscaled));
}

use std::sync::Arc;
