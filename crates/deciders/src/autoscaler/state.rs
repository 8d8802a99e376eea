//! What CA remembers between loops, as an explicit value: unneeded-since
//! timestamps, the last scale-up / deletion / scale-down failure, per-group
//! backoff and open scale-up requests. Every change is a pure function
//! returning the next state.
//!
//! Backoff follows `utils/backoff/exponential_backoff.go`: the first failure
//! backs a group off for the initial duration (5 m); a failure after the
//! previous backoff expired doubles it (cap 30 m); failures while still
//! backed off keep the duration; entries whose last failure is older than the
//! reset timeout (3 h) are dropped. A group is backed off while
//! `now ≤ until`. A scale-up whose nodes all registered removes the
//! group's backoff (clusterstate `updateScaleRequests`).

use std::collections::BTreeMap;

use super::config::CaConfig;
use crate::cluster::NodeId;
use crate::time::{SimDuration, SimTime};

/// Why a scale-up failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScaleUpFailure {
    /// The ASG reported a failed launch (e.g. InsufficientInstanceCapacity:
    /// CA's `OutOfResourcesErrorClass`).
    OutOfResources,
    /// Nodes did not register within `maxNodeProvisionTime`.
    Timeout,
}

/// One group's backoff.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    /// Current backoff length.
    pub duration: SimDuration,
    /// Backed off until (inclusive).
    pub until: SimTime,
    /// Time of the last failure.
    pub last_failure: SimTime,
    /// Why.
    pub reason: ScaleUpFailure,
}

/// An open scale-up of one group (clusterstate `ScaleUpRequest`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScaleUpRequest {
    /// Nodes asked for (summed over scale-ups while open).
    pub increase: u32,
    /// When the last scale-up of the group was asked for.
    pub time: SimTime,
    /// When the nodes must have registered.
    pub expected_add_time: SimTime,
}

/// CA's memory between loops. `Default` is a freshly started CA.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CaState {
    /// Nodes found unneeded, with the first loop they were.
    pub unneeded_since: BTreeMap<NodeId, SimTime>,
    /// Last successful scale-up.
    pub last_scale_up: Option<SimTime>,
    /// Last scale-down deletion started.
    pub last_scale_down_delete: Option<SimTime>,
    /// Last scale-down failure.
    pub last_scale_down_failure: Option<SimTime>,
    /// Backoff per group.
    pub backoff: BTreeMap<String, Backoff>,
    /// Open scale-ups per group.
    pub scale_up_requests: BTreeMap<String, ScaleUpRequest>,
    /// Deletions started and not finished, with whether each node was
    /// drained (CA's `NodeDeletionTracker`): they count against the
    /// deletion budgets until the node is gone, whatever its pods do
    /// meanwhile.
    pub deletions_in_progress: BTreeMap<NodeId, DeletionKind>,
    /// The wait before each ProvisioningRequest not provisioned is tried
    /// again, by `namespace/name` (the injector's backoff cache).
    pub provisioning_request_backoff: BTreeMap<String, SimDuration>,
    /// The next loop with both kinds of pods pending serves a
    /// ProvisioningRequest (`ProvisioningRequestScaleUpMode`, flipped
    /// after every scale-up attempt).
    pub provisioning_request_scale_up_mode: bool,
    /// When each instance without a Node object was first seen
    /// (clusterstate `UnregisteredSince`).
    pub unregistered_since: BTreeMap<NodeId, SimTime>,
}

/// How a scale-down deletion started.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeletionKind {
    /// The node had nothing to move.
    Empty,
    /// Its pods were evicted first.
    Drain,
}

impl CaState {
    /// Whether `group` is backed off at `now`.
    pub fn is_backed_off(&self, group: &str, now: SimTime) -> bool {
        self.backoff.get(group).is_some_and(|b| now <= b.until)
    }

    /// The state after a failed scale-up of `group` at `now`: backed off,
    /// its request closed.
    pub fn with_failed_scale_up(
        &self,
        group: &str,
        reason: ScaleUpFailure,
        now: SimTime,
        config: &CaConfig,
    ) -> CaState {
        let mut next = self.clone();
        let duration = match self.backoff.get(group) {
            None => config.initial_node_group_backoff,
            Some(b) if b.until < now => (b.duration * 2).min(config.max_node_group_backoff),
            Some(b) => b.duration,
        };
        next.backoff.insert(
            group.to_string(),
            Backoff {
                duration,
                until: now + duration,
                last_failure: now,
                reason,
            },
        );
        next.scale_up_requests.remove(group);
        next
    }

    /// The state after every node of `group`'s open scale-up registered:
    /// request closed, backoff forgotten.
    pub fn with_scale_up_completed(&self, group: &str) -> CaState {
        let mut next = self.clone();
        next.scale_up_requests.remove(group);
        next.backoff.remove(group);
        next
    }

    /// The state after asking `group` for `delta` more nodes at `now`.
    pub fn with_scale_up(
        &self,
        group: &str,
        delta: u32,
        now: SimTime,
        config: &CaConfig,
    ) -> CaState {
        let mut next = self.clone();
        let expected_add_time = now + config.options_for(group).max_node_provision_time;
        next.scale_up_requests
            .entry(group.to_string())
            .and_modify(|r| {
                r.increase += delta;
                r.time = now;
                r.expected_add_time = expected_add_time;
            })
            .or_insert(ScaleUpRequest {
                increase: delta,
                time: now,
                expected_add_time,
            });
        next.last_scale_up = Some(now);
        next
    }

    /// The state after a scale-down deletion failed at `now`.
    pub fn with_scale_down_failure(&self, now: SimTime) -> CaState {
        CaState {
            last_scale_down_failure: Some(now),
            ..self.clone()
        }
    }

    /// The state without backoffs whose last failure is older than the
    /// reset timeout (`RemoveStaleBackoffData`).
    pub fn without_stale_backoff(&self, now: SimTime, config: &CaConfig) -> CaState {
        let mut next = self.clone();
        next.backoff
            .retain(|_, b| b.last_failure + config.node_group_backoff_reset_timeout >= now);
        next
    }

    /// Whether deletions wait at `now` (`isScaleDownInCooldown` without the
    /// this-loop scale-up part): delay after add, after delete, after failure.
    pub fn scale_down_in_cooldown(&self, now: SimTime, config: &CaConfig) -> bool {
        let within = |at: Option<SimTime>, delay: SimDuration| at.is_some_and(|t| now < t + delay);
        within(self.last_scale_up, config.scale_down_delay_after_add)
            || within(
                self.last_scale_down_delete,
                config.scale_down_delay_after_delete,
            )
            || within(
                self.last_scale_down_failure,
                config.scale_down_delay_after_failure,
            )
    }
}
