//! The static controllers' decisions, after core
//! pkg/controllers/static/provisioning/suite_test.go and
//! static/deprovisioning/suite_test.go.

use super::*;
use crate::kube::pod::DoNotDisrupt;
use crate::scheduler::{NodeId, OwnerKind};
use crate::testing::{WithSpec, node, pod_of, pool};

fn counts(active: u32, deleting: u32) -> StaticCounts {
    StaticCounts { active, deleting }
}

/// provisioning "should create nodeclaims when current node count is less
/// than desired replicas", "should create additional nodeclaims to reach
/// desired replicas", "should return early if current node count exceeds
/// desired replicas" (that is the deprovisioning controller's), "should
/// handle zero replicas".
#[test]
fn creates_the_missing_replicas_and_scales_down_the_excess() {
    assert_eq!(
        static_action(3, counts(0, 0), None),
        StaticAction::Create(3)
    );
    assert_eq!(
        static_action(5, counts(2, 0), None),
        StaticAction::Create(3)
    );
    assert_eq!(
        static_action(3, counts(3, 0), None),
        StaticAction::Satisfied
    );
    // A NodeClaim being deleted is not active: it is replaced at once.
    assert_eq!(
        static_action(3, counts(2, 1), None),
        StaticAction::Create(1)
    );
    assert_eq!(
        static_action(2, counts(5, 0), None),
        StaticAction::ScaleDown(3)
    );
    assert_eq!(
        static_action(0, counts(0, 0), None),
        StaticAction::Satisfied
    );
    assert_eq!(
        static_action(0, counts(2, 0), None),
        StaticAction::ScaleDown(2)
    );
}

/// provisioning "should not create additional nodeclaims when node limits
/// are reached" and "should reserve nodepool nodecount during provisioning":
/// `limits.nodes` counts every NodeClaim, deleting ones included, so a
/// replacement waits until the old node is gone.
#[test]
fn node_limit_counts_deleting_nodeclaims() {
    assert_eq!(
        static_action(5, counts(0, 0), Some(2)),
        StaticAction::Create(2)
    );
    assert_eq!(
        static_action(3, counts(2, 0), Some(2)),
        StaticAction::LimitReached
    );
    assert_eq!(
        static_action(3, counts(2, 1), Some(3)),
        StaticAction::LimitReached
    );
    assert_eq!(
        static_action(3, counts(2, 1), Some(4)),
        StaticAction::Create(1)
    );
    // Already over the limit (it was lowered): nothing, never negative.
    assert_eq!(
        static_action(3, counts(2, 3), Some(4)),
        StaticAction::LimitReached
    );
}

fn static_pool(replicas: u32) -> NodePool {
    let mut p = pool("static");
    p.replicas = Some(replicas);
    p
}

/// A cluster of `static-0..n` nodes; `pods[i]` lists node i's pods as
/// (owner kind, deletion cost, do-not-disrupt).
fn cluster(pods: &[&[(OwnerKind, i32, bool)]]) -> Cluster {
    let mut cluster = Cluster::new();
    for (i, on_node) in pods.iter().enumerate() {
        let id = cluster.add_node(node(&format!("static-{i}"), "static"));
        for (j, (kind, cost, protected)) in on_node.iter().enumerate() {
            let mut pod = pod_of(&format!("p{i}-{j}"), "web", kind.clone(), "web");
            pod.spec = pod.spec.with(|s| {
                s.deletion_cost = *cost;
                if *protected {
                    s.do_not_disrupt = Some(DoNotDisrupt::Always);
                }
            });
            pod.node = Some(id);
            cluster.add_pod(pod);
        }
    }
    cluster
}

const DEPLOY: OwnerKind = OwnerKind::Deployment;
const DAEMON: OwnerKind = OwnerKind::DaemonSet;

/// deprovisioning "should prioritize empty nodes (with only daemonset
/// pods) for termination": nodes with no pod or only DaemonSet pods go
/// first, in node order.
#[test]
fn scale_down_takes_empty_nodes_first() {
    let c = cluster(&[
        &[(DEPLOY, 0, false)],
        &[(DAEMON, 0, false)],
        &[(DEPLOY, 0, false)],
        &[],
    ]);
    let chosen = scale_down_candidates(&c, &static_pool(2), 2, SimTime::ZERO);
    assert_eq!(chosen, vec![NodeId(1), NodeId(3)]);
}

/// deprovisioning "should terminate non-empty nodes when empty nodes are
/// insufficient" and its "disruption cost ordering": then the nodes
/// without a do-not-disrupt pod, cheapest rescheduling cost first; a
/// DaemonSet pod with do-not-disrupt makes a node non-empty.
#[test]
fn scale_down_then_takes_the_cheapest_nodes_to_disrupt() {
    let heavy = 1 << 27; // eviction cost 2 per pod
    let c = cluster(&[
        &[(DEPLOY, heavy, false)],
        &[(DEPLOY, 0, true)],
        &[(DEPLOY, 0, false), (DEPLOY, 0, false)],
        &[(DEPLOY, 0, false)],
        &[(DAEMON, 0, true)],
        &[],
    ]);
    let chosen = scale_down_candidates(&c, &static_pool(1), 5, SimTime::ZERO);
    // Empty: 5. Then cost 1 (node 3), cost 2 (nodes 0 and 2, in node
    // order), then the do-not-disrupt nodes (1 and 4, both cost 1).
    assert_eq!(
        chosen,
        vec![NodeId(5), NodeId(3), NodeId(0), NodeId(2), NodeId(1)]
    );
}

/// deprovisioning "should only consider running nodeclaims and not
/// deleting nodeclaims", and provisioning's counting.
#[test]
fn deleting_nodes_are_counted_apart_and_never_chosen() {
    let mut c = cluster(&[&[], &[], &[]]);
    c.node_mut(NodeId(0)).unwrap().marked_for_deletion = true;
    assert_eq!(static_counts(&c, "static"), counts(2, 1));
    assert_eq!(static_counts(&c, "other"), counts(0, 0));
    let chosen = scale_down_candidates(&c, &static_pool(0), 3, SimTime::ZERO);
    assert_eq!(chosen, vec![NodeId(1), NodeId(2)]);
}
