//! The kube-scheduler model: binds pending pods to registered nodes.
//!
//! SKELETON: the signatures are the agreed API; the bodies are filled in by
//! the scheduler work.

use super::cluster::{Cluster, NodeId, PodId};

/// How feasible nodes are scored (kube-scheduler `NodeResourcesFit`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ScoringStrategy {
    /// Prefer the least-allocated node (kube-scheduler's default).
    #[default]
    LeastAllocated,
    /// Prefer the most-allocated node (bin-packing).
    MostAllocated,
}

/// Scheduler settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SchedulerConfig {
    /// Scoring strategy.
    pub scoring: ScoringStrategy,
}

/// The outcome for one pending pod.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Bind the pod to the node.
    Bind(PodId, NodeId),
    /// No node fits; the reason reads like kube-scheduler's
    /// `0/3 nodes are available: 2 Insufficient cpu, 1 node(s) had untolerated taint {…}`.
    Unschedulable(PodId, String),
}

/// Decides, in kube-scheduler's queue order, where each of `pending` goes.
/// Pods bound earlier in the same call count against later ones.
pub fn schedule(
    _cluster: &Cluster,
    _pending: &[PodId],
    _config: &SchedulerConfig,
) -> Vec<Decision> {
    todo!("scheduler work")
}
