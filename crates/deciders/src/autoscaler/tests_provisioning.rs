//! Conformance tests of ProvisioningRequests, after kubernetes/autoscaler
//! `provisioningrequest/orchestrator/orchestrator_test.go` (`TestScaleUp`
//! cases), `orchestrator/wrapper_orchestrator_test.go`,
//! `processors/provreq/{injector,processor,pods_filter}_test.go` and
//! `provisioningrequest/checkcapacity/provisioningclass_test.go`.

use std::sync::Arc;

use super::provisioning::{ConditionType, RequestState, RequestStatus};
use super::tests::{World, group, owned};
use super::*;
use crate::kube::provisioning_request::{
    CONSUME_ANNOTATION, PodSet, ProvisioningClass, ProvisioningRequest,
};
use crate::kube::resources::GIB;
use crate::scheduler::testing::PodBuilder;
use crate::time::SimDuration;

const T0: SimTime = SimTime::from_secs(10_000);

fn secs(s: u64) -> SimTime {
    T0 + SimDuration::from_secs(s)
}

fn world(max: u32) -> World {
    World::new(CaConfig {
        node_groups: vec![group("g", &["m5.xlarge"], 0, max)],
        enable_provisioning_requests: true,
        ..CaConfig::default()
    })
}

/// A request of `count` pods of `cpu` millicores each, created at `T0`.
fn request(w: &mut World, name: &str, class: ProvisioningClass, count: u32, cpu: i64) -> usize {
    let template = PodBuilder::new("tmpl").requests(cpu, GIB).build().spec;
    w.requests.push(RequestState {
        request: Arc::new(ProvisioningRequest {
            name: name.to_string(),
            namespace: "default".to_string(),
            class,
            pod_sets: vec![PodSet {
                template_name: "tmpl".to_string(),
                template,
                count,
            }],
            no_retry: false,
        }),
        created_at: T0,
        status: RequestStatus::default(),
    });
    w.requests.len() - 1
}

/// A pending pod of a batch Job that consumes request `name`.
fn consumer(w: &mut World, pod: &str, name: &str, cpu: i64) -> PodId {
    let mut p = owned(PodBuilder::new(pod).requests(cpu, GIB).build(), "batch");
    let mut spec = (*p.spec).clone();
    spec.annotations
        .insert(CONSUME_ANNOTATION.to_string(), name.to_string());
    p.spec = Arc::new(spec);
    p.created_at = T0;
    w.cluster.add_pod(p)
}

fn condition(w: &World, i: usize, kind: ConditionType) -> Option<(bool, &'static str)> {
    w.requests[i].status.get(kind).map(|c| (c.status, c.reason))
}

fn scale_ups(a: &Actions) -> Vec<(String, u32)> {
    a.actions
        .iter()
        .filter_map(|x| match x {
            Action::ScaleUp { group, delta } => Some((group.clone(), *delta)),
            _ => None,
        })
        .collect()
}

/// orchestrator_test.go "possible atomic scale-up request triggers
/// scale-up" with pods_filter_test.go: six 1-CPU pods need two 4-CPU
/// template nodes, asked for at once; the Job's own pending pods, which
/// consume the request, trigger nothing themselves.
#[test]
fn possible_atomic_scale_up_request_triggers_scale_up() {
    let mut w = world(10);
    let r = request(
        &mut w,
        "train",
        ProvisioningClass::BestEffortAtomicScaleUp,
        6,
        1000,
    );
    let pods: Vec<PodId> = (0..6)
        .map(|i| consumer(&mut w, &format!("train-{i}"), "train", 1000))
        .collect();
    let a = w.run(secs(10), 0);
    assert_eq!(scale_ups(&a), vec![("g".to_string(), 2)]);
    assert_eq!(a.pods_consuming_requests, pods);
    assert!(a.pods_triggering_scale_up.is_empty());
    assert_eq!(
        condition(&w, r, ConditionType::Provisioned),
        Some((true, "CapacityIsProvisioned"))
    );
    assert_eq!(
        condition(&w, r, ConditionType::Accepted),
        Some((true, "Accepted"))
    );
    // Provisioned: not injected again, so no second scale-up.
    let b = w.run(secs(20), 0);
    assert!(scale_ups(&b).is_empty());
}

/// orchestrator_test.go "impossible atomic scale-up request doesn't
/// trigger scale-up", and injector_test.go "Provisioned=False, ProvReq is
/// backed off, no pods are injected" / "Provisioned=False, pods are
/// injected": the group's max size of 1 cannot take the two nodes, so no
/// node is asked for (not even the one that would fit); the request is
/// retried 1 min later, then after 2 min.
#[test]
fn impossible_atomic_scale_up_request_does_not_scale_up_and_retries() {
    let mut w = world(1);
    let r = request(
        &mut w,
        "train",
        ProvisioningClass::BestEffortAtomicScaleUp,
        6,
        1000,
    );
    let a = w.run(secs(10), 0);
    assert!(scale_ups(&a).is_empty(), "all or nothing");
    assert_eq!(
        condition(&w, r, ConditionType::Provisioned),
        Some((false, "CapacityIsNotFound"))
    );
    // Within the 1 min retry wait: not injected, nothing updated.
    let b = w.run(secs(60), 0);
    assert!(b.provisioning_request_updates.is_empty());
    let c = w.run(secs(71), 0);
    assert!(
        c.provisioning_request_updates
            .iter()
            .any(|u| u.kind == ConditionType::Accepted)
    );
    assert_eq!(
        w.state.provisioning_request_backoff["default/train"],
        SimDuration::from_mins(2)
    );
    // The wait doubled: 2 min after the last attempt.
    assert!(
        w.run(secs(71 + 120), 0)
            .provisioning_request_updates
            .is_empty()
    );
    assert!(
        !w.run(secs(71 + 121), 0)
            .provisioning_request_updates
            .is_empty()
    );
}

/// Without `--enable-provisioning-requests` (upstream's default) the
/// consuming pods are ordinary pending pods: they scale up themselves.
#[test]
fn disabled_provisioning_requests_leave_consuming_pods_ordinary() {
    let mut w = world(10);
    w.config = CaConfig {
        enable_provisioning_requests: false,
        ..w.config.config().clone()
    }
    .validate(super::tests::catalog())
    .unwrap();
    request(
        &mut w,
        "train",
        ProvisioningClass::BestEffortAtomicScaleUp,
        6,
        1000,
    );
    for i in 0..4 {
        consumer(&mut w, &format!("train-{i}"), "train", 1000);
    }
    let a = w.run(secs(10), 0);
    assert_eq!(scale_ups(&a), vec![("g".to_string(), 1)]);
    assert!(a.pods_consuming_requests.is_empty());
    assert!(a.provisioning_request_updates.is_empty());
}

/// orchestrator_test.go "capacity is there, check-capacity class" with
/// processor_test.go TestBookCapacity "ProvReq is Provisioned, capacity
/// should be booked" and TestRefresh "BookingCapacity time is expired":
/// two 1.5-CPU pods fit an empty node, so the request is Provisioned
/// without a scale-up (a successful scale-up: no deletion this loop, the
/// delay after add restarts); the booking keeps the node from scale-down
/// until it expires 10 min later.
#[test]
fn check_capacity_provisions_books_and_expires() {
    let mut w = world(10);
    w.config = CaConfig {
        scale_down_unneeded_time: SimDuration::from_mins(1),
        scale_down_delay_after_add: SimDuration::ZERO,
        ..w.config.config().clone()
    }
    .validate(super::tests::catalog())
    .unwrap();
    let node = w.launch("g", true, SimTime::ZERO);
    let r = request(&mut w, "check", ProvisioningClass::CheckCapacity, 2, 1500);
    let a = w.run(secs(10), 0);
    assert!(scale_ups(&a).is_empty());
    assert_eq!(
        condition(&w, r, ConditionType::Provisioned),
        Some((true, "CapacityIsFound"))
    );
    assert!(a.provisioning_request_capacity_found);
    assert_eq!(w.state.last_scale_up, Some(secs(10)));
    // Booked: 3000m of the node's allocatable is taken.
    for s in [20, 300, 600] {
        let b = w.run(secs(s), 0);
        assert!(
            b.unremovable
                .contains(&(node, UnremovableReason::NotUnderutilized)),
            "booked at {s}s"
        );
    }
    // Provisioned at 10 s + 10 min: expired at the first loop after.
    let c = w.run(secs(611), 0);
    assert_eq!(
        condition(&w, r, ConditionType::BookingExpired),
        Some((true, "CapacityReservationTimeExpired"))
    );
    assert!(c.unneeded.contains_key(&node));
}

/// orchestrator_test.go "impossible check-capacity, with noRetry
/// parameter": capacity not found fails the request for good.
#[test]
fn impossible_check_capacity_with_no_retry_fails() {
    let mut w = world(10);
    let r = request(&mut w, "check", ProvisioningClass::CheckCapacity, 2, 1500);
    let mut req = (*w.requests[r].request).clone();
    req.no_retry = true;
    w.requests[r].request = Arc::new(req);
    let a = w.run(secs(10), 0);
    assert!(scale_ups(&a).is_empty(), "check-capacity never scales up");
    assert_eq!(
        condition(&w, r, ConditionType::Failed),
        Some((true, "CapacityIsNotFound"))
    );
    assert!(w.run(secs(200), 0).provisioning_request_updates.is_empty());
}

/// processor_test.go TestBookCapacityConsumed "fully scheduled" (and
/// "partially scheduled"): once every pod of a provisioned request runs,
/// the booking ends with `CapacityBookingConsumed`.
#[test]
fn booking_is_consumed_when_every_pod_is_scheduled() {
    let mut w = world(10);
    let node = w.launch("g", true, SimTime::ZERO);
    let r = request(&mut w, "check", ProvisioningClass::CheckCapacity, 2, 1000);
    w.run(secs(10), 0);
    let first = consumer(&mut w, "c-0", "check", 1000);
    w.cluster.bind(first, node);
    w.run(secs(20), 0);
    assert_eq!(
        condition(&w, r, ConditionType::BookingExpired),
        None,
        "one of two"
    );
    let second = consumer(&mut w, "c-1", "check", 1000);
    w.cluster.bind(second, node);
    w.run(secs(30), 0);
    assert_eq!(
        condition(&w, r, ConditionType::BookingExpired),
        Some((true, "CapacityBookingConsumed"))
    );
}

/// processor_test.go TestRefresh "ProvisioningRequest wasn't
/// provisioned, expired": 7 days without capacity fail the request.
#[test]
fn request_not_provisioned_within_a_week_expires() {
    let mut w = world(1);
    let r = request(
        &mut w,
        "train",
        ProvisioningClass::BestEffortAtomicScaleUp,
        6,
        1000,
    );
    w.run(secs(10), 0);
    let week = T0 + SimDuration::from_days(7) + SimDuration::from_secs(1);
    w.run(week, 0);
    assert_eq!(
        condition(&w, r, ConditionType::Failed),
        Some((true, "Expired"))
    );
}

/// wrapper_orchestrator_test.go TestWrapperScaleUp: with a request's pods
/// and regular pods both pending, the loops take turns.
#[test]
fn wrapper_alternates_between_request_and_regular_pods() {
    let mut w = world(1);
    let r = request(
        &mut w,
        "train",
        ProvisioningClass::BestEffortAtomicScaleUp,
        6,
        1000,
    );
    // Two 3-CPU pods: one per node, and the group takes one node.
    for i in 0..2 {
        let mut web = owned(
            PodBuilder::new(&format!("web-{i}"))
                .requests(3000, GIB)
                .build(),
            "web",
        );
        web.created_at = T0;
        w.cluster.add_pod(web);
    }
    // First loop: regular pods (the mode starts off).
    let a = w.run(secs(10), 0);
    assert_eq!(scale_ups(&a), vec![("g".to_string(), 1)]);
    assert!(
        a.provisioning_request_updates
            .iter()
            .all(|u| u.kind == ConditionType::Accepted)
    );
    assert!(w.state.provisioning_request_scale_up_mode);
    // Second loop: web-1 still pending, but the request's turn (it cannot
    // fit max size 1: not found).
    let b = w.run(secs(20), 0);
    assert!(scale_ups(&b).is_empty());
    assert!(b.pods_not_helped.is_empty(), "regular pods not served");
    assert_eq!(
        condition(&w, r, ConditionType::Provisioned),
        Some((false, "CapacityIsNotFound"))
    );
    assert!(!w.state.provisioning_request_scale_up_mode);
    // Third loop: the request waits out its retry; regular pods again.
    let c = w.run(secs(30), 0);
    assert_eq!(c.pods_not_helped.len(), 1);
    assert!(w.state.provisioning_request_scale_up_mode);
}
