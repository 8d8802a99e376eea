//! Node repair (alpha, feature gate `NodeRepair`; core
//! pkg/controllers/node/health/controller.go, designs/node-repair.md): a
//! managed node whose status condition matches one of the cloud
//! provider's repair policies for longer than the policy's toleration is
//! deleted forcefully (termination timestamp now: no PDB, do-not-disrupt
//! or disruption budget holds it), unless more than 20 % of its NodePool's
//! nodes (rounded up) are unhealthy, in which case repair waits 5 minutes.
//!
//! The policies are the AWS provider's (aws pkg/cloudprovider
//! `RepairPolicies`): kubelet's `Ready` False or Unknown for 30 min, and
//! the node monitoring agent's conditions False for 30 min (10 min for
//! `AcceleratedHardwareReady`).

use crate::time::{SimDuration, SimTime};

/// A node condition's status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ConditionStatus {
    /// `True`.
    True,
    /// `False`.
    False,
    /// `Unknown`.
    Unknown,
}

impl ConditionStatus {
    /// The API spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            ConditionStatus::True => "True",
            ConditionStatus::False => "False",
            ConditionStatus::Unknown => "Unknown",
        }
    }
}

/// One node status condition as last set, with its transition time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeCondition {
    /// Condition type (`Ready`, `KernelReady`, …).
    pub condition_type: String,
    /// Status.
    pub status: ConditionStatus,
    /// `lastTransitionTime`.
    pub since: SimTime,
}

/// One repair policy of the cloud provider.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RepairPolicy {
    /// Condition type it watches.
    pub condition_type: &'static str,
    /// The unhealthy status.
    pub status: ConditionStatus,
    /// How long the condition is tolerated before the node is repaired.
    pub toleration: SimDuration,
}

/// The AWS provider's repair policies.
pub const AWS_REPAIR_POLICIES: &[RepairPolicy] = &[
    policy("Ready", ConditionStatus::False, 30),
    policy("Ready", ConditionStatus::Unknown, 30),
    policy("AcceleratedHardwareReady", ConditionStatus::False, 10),
    policy("StorageReady", ConditionStatus::False, 30),
    policy("NetworkingReady", ConditionStatus::False, 30),
    policy("KernelReady", ConditionStatus::False, 30),
    policy("ContainerRuntimeReady", ConditionStatus::False, 30),
];

const fn policy(condition_type: &'static str, status: ConditionStatus, mins: u64) -> RepairPolicy {
    RepairPolicy {
        condition_type,
        status,
        toleration: SimDuration::from_mins(mins),
    }
}

/// The condition types the policies watch (what a scenario may set).
pub const CONDITION_TYPES: &[&str] = &[
    "Ready",
    "AcceleratedHardwareReady",
    "StorageReady",
    "NetworkingReady",
    "KernelReady",
    "ContainerRuntimeReady",
];

/// The share of a NodePool's nodes that may be unhealthy while repair
/// goes on (upstream `allowedUnhealthyPercent`).
pub const ALLOWED_UNHEALTHY_PERCENT: u64 = 20;

/// How long repair waits when too many nodes are unhealthy.
pub const REPAIR_BLOCKED_REQUEUE: SimDuration = SimDuration::from_mins(5);

/// When the node's conditions make it due for repair
/// (`findUnhealthyConditions`: of the matching policies, the one whose
/// toleration ends first), or `None` when no policy matches.
pub fn repair_time(conditions: &[NodeCondition]) -> Option<SimTime> {
    AWS_REPAIR_POLICIES
        .iter()
        .filter_map(|p| {
            conditions
                .iter()
                .find(|c| c.condition_type == p.condition_type && c.status == p.status)
                .map(|c| c.since + p.toleration)
        })
        .min()
}

/// Whether some repair policy matches the node's conditions now.
pub fn is_unhealthy(conditions: &[NodeCondition]) -> bool {
    repair_time(conditions).is_some()
}

/// Whether a NodePool with `nodes` nodes, `unhealthy` of them unhealthy,
/// lets repair go on: at most 20 % of them, rounded up, unhealthy
/// (`areNodesHealthy`, as PDB percentages round).
pub fn pool_allows_repair(unhealthy: usize, nodes: usize) -> bool {
    let threshold = (nodes as u64 * ALLOWED_UNHEALTHY_PERCENT).div_ceil(100);
    unhealthy as u64 <= threshold
}

#[cfg(test)]
mod tests {
    use super::*;

    fn condition(t: &str, status: ConditionStatus, since_mins: u64) -> NodeCondition {
        NodeCondition {
            condition_type: t.to_string(),
            status,
            since: SimTime::ZERO + SimDuration::from_mins(since_mins),
        }
    }

    /// health suite "should delete nodes that are unhealthy by the cloud
    /// provider", "should not delete node when unhealthy type does not
    /// match" / "when health status does not match", and "should return
    /// the requeue interval for the condition closest to its
    /// terminationDuration".
    #[test]
    fn repair_time_is_the_earliest_matching_policy() {
        let at = |mins| Some(SimTime::ZERO + SimDuration::from_mins(mins));
        assert_eq!(
            repair_time(&[condition("Ready", ConditionStatus::False, 0)]),
            at(30)
        );
        assert_eq!(
            repair_time(&[condition("Ready", ConditionStatus::Unknown, 5)]),
            at(35)
        );
        assert_eq!(
            repair_time(&[condition("Ready", ConditionStatus::True, 0)]),
            None
        );
        assert_eq!(
            repair_time(&[condition("KernelReady", ConditionStatus::Unknown, 0)]),
            None
        );
        let both = [
            condition("Ready", ConditionStatus::False, 0),
            condition("AcceleratedHardwareReady", ConditionStatus::False, 15),
        ];
        assert_eq!(repair_time(&both), at(25));
    }

    /// health suite "should ignore unhealthy nodes if more then 20% of the
    /// nodes are unhealthy in a nodepool" and "should consider round up
    /// when there is a low number of nodes for a nodepool".
    #[test]
    fn twenty_percent_rounded_up() {
        assert!(pool_allows_repair(2, 10));
        assert!(!pool_allows_repair(3, 10));
        // 20 % of 3 nodes rounds up to 1: one of three may be repaired.
        assert!(pool_allows_repair(1, 3));
        assert!(!pool_allows_repair(2, 3));
        assert!(pool_allows_repair(1, 1));
    }
}
