//! ProvisioningRequests (CA ≥ 1.30 with `--enable-provisioning-requests`;
//! kubernetes/autoscaler `cluster-autoscaler/provisioningrequest/` and
//! `processors/provreq/` at f7bb0c3623): what one loop does with the
//! requests in the cluster, as [`super::run_once`] calls it.
//!
//! In loop order:
//! 1. Refresh (`provReqProcessor.refresh`): a request `Provisioned` for
//!    longer than the booking time (10 min) gets `BookingExpired`; one not
//!    provisioned within 7 days gets `Failed` (`Expired`); at most 20
//!    updates per loop.
//! 2. Pending pods that consume a request (annotation
//!    `autoscaling.x-k8s.io/consume-provisioning-request`) are dropped from
//!    the regular scale-up, after filter-out-schedulable
//!    (`ProvisioningRequestPodsFilter`).
//! 3. One request (the first in creation order that is neither
//!    `Provisioned` nor `Failed`, and whose retry wait is over: 1 min after
//!    a `Provisioned=False`, doubling to 10 min) is `Accepted` and its pods
//!    are made in memory from its pod sets (`ProvisioningRequestPodsInjector`,
//!    `provisioningrequest/pods`).
//! 4. Booking (`provReqProcessor.bookCapacity`): the pods of every
//!    `Provisioned` request not yet expired are placed in the snapshot, so
//!    scale-down sees that capacity as used; a request whose pods are all
//!    scheduled gets `BookingExpired` (`CapacityBookingConsumed`) instead.
//! 5. Scale-up alternates (`WrapperOrchestrator`): with both kinds of pods
//!    pending, one loop serves the request's pods and the next the
//!    regular ones. The request's class then decides:
//!    check-capacity places every pod on existing capacity (stopping at the
//!    first that does not fit): all placed ⇒ `Provisioned=True`
//!    (`CapacityIsFound`), which counts as a successful scale-up (no
//!    scale-down this loop, `scaleDownDelayAfterAdd` restarts, as upstream
//!    does); else `Provisioned=False` (`CapacityIsNotFound`, retried) or,
//!    with `noRetry: "true"`, `Failed`. best-effort-atomic-scale-up first
//!    places what fits; nothing left ⇒ `Provisioned=True`
//!    (`CapacityIsFound`); else one scale-up for all the rest, all or
//!    nothing (an option that does not take every pod, or that max sizes or
//!    `maxNodesTotal` would cut, is dropped): done ⇒ `Provisioned=True`
//!    (`CapacityIsProvisioned`), else `Provisioned=False`
//!    (`CapacityIsNotFound`) and retried. The AWS provider has no atomic
//!    `IncreaseSize`, so an ASG that then launches only part of the nodes
//!    is not undone (upstream falls back the same way).
//!
//! Not modelled: batch processing of check-capacity requests
//! (`--check-capacity-batch-processing`, off by default), partial
//! capacity checks, processor instances, the deletion of terminal requests
//! after 7 days.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::snapshot::Snapshot;
use crate::cluster::{Cluster, OwnerKind, OwnerRef, Pod, PodId, PodLifecycle, PodPhase};
use crate::kube::provisioning_request::{
    CLASS_ANNOTATION, CONSUME_ANNOTATION, ProvisioningClass, ProvisioningRequest, consumed_request,
};
use crate::time::{SimDuration, SimTime};

/// How long the capacity of a `Provisioned` request stays booked
/// (`defaultReservationTime`).
pub const BOOKING_TIME: SimDuration = SimDuration::from_mins(10);
/// A request not provisioned this long after its creation fails
/// (`defaultExpirationTime`).
pub const EXPIRATION_TIME: SimDuration = SimDuration::from_days(7);
/// Most conditions the refresh sets per loop (`defaultMaxUpdated`).
pub const MAX_UPDATED: usize = 20;

/// The condition types CA sets on a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ConditionType {
    /// CA took the request up.
    Accepted,
    /// The capacity exists (True) or was not found (False).
    Provisioned,
    /// The request will not be provisioned.
    Failed,
    /// The booked capacity is released.
    BookingExpired,
}

impl ConditionType {
    /// The condition type as written in `status.conditions`.
    pub fn name(self) -> &'static str {
        match self {
            ConditionType::Accepted => "Accepted",
            ConditionType::Provisioned => "Provisioned",
            ConditionType::Failed => "Failed",
            ConditionType::BookingExpired => "BookingExpired",
        }
    }
}

/// One status condition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Condition {
    /// `status`: True or False.
    pub status: bool,
    /// `reason`.
    pub reason: &'static str,
    /// `lastTransitionTime` (CA rewrites it at every update).
    pub since: SimTime,
}

/// The conditions of one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RequestStatus {
    /// `Accepted`.
    pub accepted: Option<Condition>,
    /// `Provisioned`.
    pub provisioned: Option<Condition>,
    /// `Failed`.
    pub failed: Option<Condition>,
    /// `BookingExpired`.
    pub booking_expired: Option<Condition>,
}

impl RequestStatus {
    /// The condition of one type.
    pub fn get(&self, kind: ConditionType) -> Option<Condition> {
        match kind {
            ConditionType::Accepted => self.accepted,
            ConditionType::Provisioned => self.provisioned,
            ConditionType::Failed => self.failed,
            ConditionType::BookingExpired => self.booking_expired,
        }
    }

    /// Sets (adds or replaces) the condition of one type.
    pub fn set(&mut self, kind: ConditionType, condition: Condition) {
        let slot = match kind {
            ConditionType::Accepted => &mut self.accepted,
            ConditionType::Provisioned => &mut self.provisioned,
            ConditionType::Failed => &mut self.failed,
            ConditionType::BookingExpired => &mut self.booking_expired,
        };
        *slot = Some(condition);
    }

    fn is_true(&self, kind: ConditionType) -> bool {
        self.get(kind).is_some_and(|c| c.status)
    }

    /// `conditions.ShouldCapacityBeBooked`: provisioned, not failed, not
    /// expired.
    pub fn should_book(&self) -> bool {
        self.is_true(ConditionType::Provisioned)
            && !self.is_true(ConditionType::Failed)
            && !self.is_true(ConditionType::BookingExpired)
    }
}

/// A request in the cluster, with its status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestState {
    /// The object.
    pub request: Arc<ProvisioningRequest>,
    /// `metadata.creationTimestamp`.
    pub created_at: SimTime,
    /// `status.conditions`.
    pub status: RequestStatus,
}

impl RequestState {
    /// `namespace/name`, CA's key for a request.
    pub fn key(&self) -> String {
        format!("{}/{}", self.request.namespace, self.request.name)
    }
}

/// A condition CA set in a loop, for the caller to write back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConditionUpdate {
    /// Index of the request in the loop's input.
    pub request: usize,
    /// Type.
    pub kind: ConditionType,
    /// Status.
    pub status: bool,
    /// Reason, as upstream words it.
    pub reason: &'static str,
    /// Message, as upstream words it.
    pub message: &'static str,
}

/// Upstream's reasons and messages (`provisioningrequest/conditions`).
pub mod reasons {
    /// `Accepted`.
    pub const ACCEPTED: (&str, &str) = (
        "Accepted",
        "ProvisioningRequest is accepted by ClusterAutoscaler",
    );
    /// Capacity found in the cluster.
    pub const CAPACITY_FOUND: (&str, &str) =
        ("CapacityIsFound", "Capacity is found in the cluster");
    /// Capacity requested by a scale-up (upstream's message says "found").
    pub const CAPACITY_PROVISIONED: (&str, &str) =
        ("CapacityIsProvisioned", "Capacity is found in the cluster");
    /// Not found, retried.
    pub const CAPACITY_NOT_FOUND: (&str, &str) = (
        "CapacityIsNotFound",
        "Capacity is not found, CA will try to find it later.",
    );
    /// Not found, `noRetry`.
    pub const CAPACITY_NOT_FOUND_NO_RETRY: (&str, &str) =
        ("CapacityIsNotFound", "CA could not find requested capacity");
    /// Booking time over.
    pub const RESERVATION_EXPIRED: (&str, &str) = (
        "CapacityReservationTimeExpired",
        "Capacity reservation time is expired",
    );
    /// All pods scheduled.
    pub const BOOKING_CONSUMED: (&str, &str) = (
        "CapacityBookingConsumed",
        "Capacity booking consumed: all pods scheduled",
    );
    /// Not provisioned within 7 days.
    pub const EXPIRED: (&str, &str) = ("Expired", "ProvisioningRequest is expired");
}

/// The requests as one loop sees and changes them.
#[derive(Debug, Clone)]
pub struct Requests<'a> {
    input: &'a [RequestState],
    status: Vec<RequestStatus>,
    now: SimTime,
    /// Conditions set so far, in order.
    pub updates: Vec<ConditionUpdate>,
}

impl<'a> Requests<'a> {
    /// The loop's view of `input` at `now`.
    pub fn new(input: &'a [RequestState], now: SimTime) -> Requests<'a> {
        Requests {
            input,
            status: input.iter().map(|r| r.status).collect(),
            now,
            updates: Vec::new(),
        }
    }

    /// The request at `index`.
    pub fn request(&self, index: usize) -> &'a ProvisioningRequest {
        &self.input[index].request
    }

    fn set(
        &mut self,
        index: usize,
        kind: ConditionType,
        status: bool,
        text: (&'static str, &'static str),
    ) {
        self.status[index].set(
            kind,
            Condition {
                status,
                reason: text.0,
                since: self.now,
            },
        );
        self.updates.push(ConditionUpdate {
            request: index,
            kind,
            status,
            reason: text.0,
            message: text.1,
        });
    }

    /// Step 1, the refresh: booking expiry and request expiry.
    pub fn refresh(&mut self) {
        let mut expired = Vec::new();
        let mut failed = Vec::new();
        for (i, status) in self.status.iter().enumerate() {
            if expired.len() >= MAX_UPDATED {
                break;
            }
            if status.is_true(ConditionType::BookingExpired)
                || status.is_true(ConditionType::Failed)
            {
                continue;
            }
            let provisioned = status.provisioned.filter(|p| p.status);
            if let Some(p) = provisioned {
                if p.since + BOOKING_TIME < self.now {
                    expired.push(i);
                }
            } else if failed.len() < MAX_UPDATED - expired.len()
                && self.input[i].created_at + EXPIRATION_TIME < self.now
            {
                failed.push(i);
            }
        }
        for i in expired {
            self.set(
                i,
                ConditionType::BookingExpired,
                true,
                reasons::RESERVATION_EXPIRED,
            );
        }
        for i in failed {
            self.set(i, ConditionType::Failed, true, reasons::EXPIRED);
        }
    }

    /// Step 3: the request whose pods this loop injects, marked
    /// `Accepted`; `backoff` (CA's retry waits by request key) is updated
    /// as the injector updates it.
    pub fn next_to_inject(
        &mut self,
        backoff: &mut BTreeMap<String, SimDuration>,
        initial: SimDuration,
        max: SimDuration,
    ) -> Option<usize> {
        for i in 0..self.status.len() {
            let key = self.input[i].key();
            let status = self.status[i];
            if status.is_true(ConditionType::Failed) || status.is_true(ConditionType::Provisioned) {
                backoff.remove(&key);
                continue;
            }
            if let Some(p) = status.provisioned {
                // Provisioned=False: wait, doubling, before trying again.
                let wait = backoff.get(&key).copied().unwrap_or(initial);
                if p.since + wait >= self.now {
                    continue;
                }
                backoff.insert(key, (wait * 2).min(max));
            }
            self.set(i, ConditionType::Accepted, true, reasons::ACCEPTED);
            return Some(i);
        }
        None
    }

    /// Step 4: books the capacity of every provisioned request in
    /// `snapshot`, or expires the booking of one whose pods all run.
    pub fn book(&mut self, snapshot: &mut Snapshot) {
        for i in 0..self.status.len() {
            if !self.status[i].should_book() {
                continue;
            }
            let request = self.request(i);
            let scheduled = snapshot
                .cluster()
                .pods()
                .filter(|(_, p)| {
                    p.node.is_some()
                        && p.spec.namespace == request.namespace
                        && consumed_request(&p.spec) == Some(request.name.as_str())
                })
                .count() as u64;
            if scheduled >= u64::from(request.pod_count()) {
                self.set(
                    i,
                    ConditionType::BookingExpired,
                    true,
                    reasons::BOOKING_CONSUMED,
                );
                continue;
            }
            let nodes = snapshot.schedulable_nodes();
            for pod in add_request_pods(snapshot, request, self.input[i].created_at) {
                snapshot.place_first_fit(pod, nodes.iter().copied());
            }
        }
    }

    /// Step 5, check-capacity: every pod on existing capacity, or none.
    /// Returns whether the capacity was found (a successful scale-up).
    pub fn check_capacity(
        &mut self,
        index: usize,
        snapshot: &mut Snapshot,
        pods: &[PodId],
    ) -> bool {
        self.set(index, ConditionType::Accepted, true, reasons::ACCEPTED);
        let mark = snapshot.fork();
        let nodes = snapshot.schedulable_nodes();
        let fits = pods.iter().all(|&pod| {
            snapshot
                .place_first_fit(pod, nodes.iter().copied())
                .is_some()
        });
        snapshot.revert(mark);
        if fits {
            self.set(
                index,
                ConditionType::Provisioned,
                true,
                reasons::CAPACITY_FOUND,
            );
        } else if self.request(index).no_retry {
            self.set(
                index,
                ConditionType::Failed,
                true,
                reasons::CAPACITY_NOT_FOUND_NO_RETRY,
            );
        } else {
            self.set(
                index,
                ConditionType::Provisioned,
                false,
                reasons::CAPACITY_NOT_FOUND,
            );
        }
        fits
    }

    /// Step 5, best-effort-atomic-scale-up: the outcome of the attempt.
    pub fn atomic_outcome(&mut self, index: usize, outcome: AtomicOutcome) {
        let (status, text) = match outcome {
            AtomicOutcome::Fits => (true, reasons::CAPACITY_FOUND),
            AtomicOutcome::ScaledUp => (true, reasons::CAPACITY_PROVISIONED),
            AtomicOutcome::NoScaleUp => (false, reasons::CAPACITY_NOT_FOUND),
        };
        self.set(index, ConditionType::Provisioned, status, text);
    }
}

/// How a best-effort atomic attempt ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AtomicOutcome {
    /// Every pod fits existing or upcoming capacity.
    Fits,
    /// One scale-up takes all the rest.
    ScaledUp,
    /// No option takes all of them.
    NoScaleUp,
}

/// Adds the request's pods to `snapshot`, unbound, as
/// `PodsForProvisioningRequest` makes them: one per count of each pod
/// set, owned by the request, carrying its name and class as annotations,
/// created when the request was.
pub fn add_request_pods(
    snapshot: &mut Snapshot,
    request: &ProvisioningRequest,
    created_at: SimTime,
) -> Vec<PodId> {
    let mut out = Vec::new();
    for (i, set) in request.pod_sets.iter().enumerate() {
        let mut spec = (*set.template).clone();
        spec.annotations
            .insert(CONSUME_ANNOTATION.to_string(), request.name.clone());
        spec.annotations.insert(
            CLASS_ANNOTATION.to_string(),
            request.class.name().to_string(),
        );
        let spec = Arc::new(spec);
        for j in 0..set.count {
            out.push(snapshot.add_pod(Pod {
                name: format!("{}{i}-{j}", request.name),
                uid: 0,
                spec: spec.clone(),
                owner: Some(OwnerRef {
                    kind: OwnerKind::ProvisioningRequest,
                    name: request.name.clone(),
                }),
                node: None,
                phase: PodPhase::Pending,
                created_at,
                unschedulable: true,
                lifecycle: PodLifecycle::default(),
            }));
        }
    }
    out
}

/// Splits pending pods into those that consume a request (dropped from
/// the regular scale-up) and the others.
pub fn split_consuming(cluster: &Cluster, pods: &[PodId]) -> (Vec<PodId>, Vec<PodId>) {
    pods.iter().partition(|&&id| {
        cluster
            .pod(id)
            .is_some_and(|p| consumed_request(&p.spec).is_some())
    })
}

/// The class of a request, for callers choosing the path.
pub fn class_of(requests: &Requests<'_>, index: usize) -> ProvisioningClass {
    requests.request(index).class
}
