//! Conformance tests of launches that never become Ready nodes, after
//! kubernetes/autoscaler `clusterstate/clusterstate_test.go` and
//! `core/static_autoscaler_test.go` (f7bb0c3623).

use super::groups::MAX_NODE_STARTUP_TIME;
use super::tests::{World, group};
use super::*;
use crate::kube::resources::GIB;
use crate::time::SimDuration;

const T0: SimTime = SimTime::from_secs(10_000);

fn at(mins: u64, secs: u64) -> SimTime {
    T0 + SimDuration::from_mins(mins) + SimDuration::from_secs(secs)
}

fn world(min: u32) -> World {
    World::new(CaConfig {
        node_groups: vec![group("g", &["m5.xlarge"], min, 10)],
        scale_down_delay_after_add: SimDuration::ZERO,
        ..CaConfig::default()
    })
}

/// A pending pod at `T0` scales the group up by one; the instance is
/// launched at once and `hang` says how it comes up.
fn scale_up_one(w: &mut World, hang: Option<Readiness>) -> NodeId {
    w.pending("web-0", "web", 1000, GIB, T0);
    let a = w.run(at(0, 10), 0);
    assert!(a.actions.contains(&Action::ScaleUp {
        group: "g".into(),
        delta: 1
    }));
    let node = w.launch("g", false, at(0, 10));
    if hang == Some(Readiness::NotStarted) {
        w.groups[0].members[0].not_ready_since = Some(at(0, 40));
    }
    node
}

/// static_autoscaler_test.go `TestRemoveOldUnregisteredNodes` and
/// clusterstate_test.go `TestExpiredScaleUp` / `TestUnregisteredNodes`:
/// an instance without a Node object `maxNodeProvisionTime` (15 min) after
/// its launch is deleted, and its group's scale-up times out into a 5 min
/// backoff; the AWS provider refuses the target-size revert while the
/// instance exists (`DecreaseTargetSize` below the instance count), so the
/// deletion is what lowers the target.
#[test]
fn long_unregistered_instance_is_deleted_and_the_group_backed_off() {
    let mut w = world(0);
    let node = scale_up_one(&mut w, None);
    // The next loop sees the instance without a Node object.
    w.run(at(0, 20), 0);
    let before = w.run(at(15, 10), 0);
    assert!(before.actions.is_empty(), "15 min not passed yet");
    let a = w.run(at(15, 20), 0);
    assert!(a.timed_out_scale_ups.contains(&"g".to_string()));
    assert!(
        !a.actions
            .iter()
            .any(|x| matches!(x, Action::DecreaseTargetSize { .. })),
        "the revert is refused while the instance exists"
    );
    assert!(w.state.is_backed_off("g", at(20, 20)));
    assert!(!w.state.is_backed_off("g", at(20, 21)));
    // Unregistered since 0:20, so long unregistered after 15:20.
    let b = w.run(at(15, 30), 0);
    assert!(b.actions.contains(&Action::DeleteUnregistered { node }));
    // Backed off: the pending pod triggers nothing until the backoff ends.
    let c = w.run(at(16, 0), 0);
    assert!(
        !c.actions
            .iter()
            .any(|x| matches!(x, Action::ScaleUp { .. }))
    );
    let d = w.run(at(20, 30), 0);
    assert!(d.actions.contains(&Action::ScaleUp {
        group: "g".into(),
        delta: 1
    }));
}

/// static_autoscaler_test.go `TestRemoveOldUnregisteredNodes` ("min size
/// reached"): a long-unregistered instance is kept when deleting it would
/// take the group below its min size.
#[test]
fn long_unregistered_instance_is_kept_at_min_size() {
    let mut w = world(1);
    scale_up_one(&mut w, None);
    w.run(at(0, 20), 0);
    let a = w.run(at(15, 30), 0);
    assert!(
        !a.actions
            .iter()
            .any(|x| matches!(x, Action::DeleteUnregistered { .. }))
    );
}

/// clusterstate_test.go `TestNotStarted` / `TestUnreadyLongAfterCreation`
/// and `TestUpcomingNodes`, with unneeded/nodes.go `RemovableAt`: a node
/// that registered but is not Ready counts as upcoming (its pod waits for
/// it) for `MaxNodeStartupTime` (15 min); after that it is unready, no
/// longer upcoming, and unneeded; it is removed once unneeded for
/// `scaleDownUnreadyTime` (20 min).
#[test]
fn not_ready_node_is_upcoming_then_removed_after_the_unready_time() {
    let mut w = world(0);
    let node = scale_up_one(&mut w, Some(Readiness::NotStarted));
    let registered_at = at(0, 40);
    let starting = w.run(at(5, 0), 0);
    assert!(
        starting.pods_fit_existing.len() == 1,
        "the not-started node is upcoming"
    );
    assert!(!starting.unneeded.contains_key(&node));
    // Past the startup time: unready. The scale-up timed out at 15m10s
    // already (backoff), so the pod is not helped there any more.
    let unready_at = registered_at + MAX_NODE_STARTUP_TIME + SimDuration::from_secs(10);
    let first = w.run(unready_at, 0);
    assert_eq!(first.unneeded.get(&node), Some(&unready_at));
    assert!(first.pods_fit_existing.is_empty());
    let waiting = w.run(unready_at + SimDuration::from_mins(20), 0);
    assert!(
        waiting
            .unremovable
            .contains(&(node, UnremovableReason::NotUnreadyLongEnough))
    );
    let gone = w.run(
        unready_at + SimDuration::from_mins(20) + SimDuration::from_secs(10),
        0,
    );
    assert!(
        gone.actions
            .contains(&Action::RemoveNode { node, empty: true })
    );
}

/// clusterstate_test.go `TestGetUpcomingNodesSkipsWithoutScaleUpRequestOrBackoff`:
/// a group's instances still coming count as upcoming only while its
/// scale-up request is open and the group is not backed off; otherwise the
/// pods they would take look unschedulable and may scale up elsewhere.
#[test]
fn upcoming_nodes_need_an_open_scale_up() {
    let mut w = world(0);
    w.pending("web-0", "web", 1000, GIB, T0);
    w.run(at(0, 10), 0);
    w.launch("g", false, at(0, 10));
    assert_eq!(w.run(at(0, 20), 0).pods_fit_existing.len(), 1);
    w.state = w.state.with_failed_scale_up(
        "g",
        ScaleUpFailure::OutOfResources,
        at(0, 25),
        w.config.config(),
    );
    let a = w.run(at(0, 30), 0);
    assert!(a.pods_fit_existing.is_empty());
    assert_eq!(
        a.skipped_groups,
        vec![("g".to_string(), GroupSkip::BackedOff)]
    );
}

/// clusterstate_test.go `TestTooManyUnready` and static_autoscaler.go
/// `IsClusterHealthy`: more than `okTotalUnreadyCount` (3) unready nodes,
/// and more than 45 % of the nodes, halt the loop (no scale-up, no
/// scale-down, unneeded timers forgotten).
#[test]
fn too_many_unready_nodes_halt_the_loop() {
    let mut w = world(0);
    let ready = w.launch("g", true, SimTime::ZERO);
    for _ in 0..4 {
        w.launch("g", false, SimTime::ZERO);
    }
    for m in w.groups[0].members.iter_mut().skip(1) {
        m.not_ready_since = Some(SimTime::ZERO);
    }
    w.pending("web-0", "web", 8000, GIB, T0);
    let a = w.run(at(0, 10), 0);
    assert!(a.cluster_unhealthy);
    assert!(a.actions.is_empty());
    assert!(a.unneeded.is_empty() && w.state.unneeded_since.is_empty());
    // Three unready of five is within okTotalUnreadyCount.
    w.groups[0].members[1].not_ready_since = None;
    w.cluster
        .node_mut(w.groups[0].members[1].node)
        .unwrap()
        .registered = true;
    let b = w.run(at(0, 20), 0);
    assert!(!b.cluster_unhealthy);
    assert!(b.unneeded.contains_key(&ready));
}
