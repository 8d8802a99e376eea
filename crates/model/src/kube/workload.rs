//! Internal forms of the objects that create pods (Deployments, ReplicaSets,
//! StatefulSets, Jobs, DaemonSets, bare Pods) and of PodDisruptionBudgets.

use std::sync::Arc;
use std::time::Duration;

use super::pod::PodSpec;
use super::selector::LabelSelector;

/// What kind of controller owns the pods, with its sizing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WorkloadKind {
    /// `apps/v1 Deployment`.
    Deployment {
        /// `spec.replicas` (default 1).
        replicas: u32,
    },
    /// `apps/v1 ReplicaSet`.
    ReplicaSet {
        /// `spec.replicas` (default 1).
        replicas: u32,
    },
    /// `apps/v1 StatefulSet`.
    StatefulSet {
        /// `spec.replicas` (default 1).
        replicas: u32,
    },
    /// `batch/v1 Job`.
    Job(JobSpec),
    /// `apps/v1 DaemonSet`: one pod per eligible node.
    DaemonSet,
    /// A bare `v1 Pod`.
    Pod,
}

/// The parts of a Job that shape its pods' lifetimes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct JobSpec {
    /// `spec.parallelism` (default 1).
    pub parallelism: u32,
    /// `spec.completions`; `None` = done when any pod succeeds.
    pub completions: Option<u32>,
    /// `spec.activeDeadlineSeconds`.
    pub active_deadline: Option<Duration>,
    /// `karpsim.dev/duration` on the Job: how long each pod runs (a pod
    /// template annotation overrides it).
    pub duration: Option<Duration>,
}

/// One pod-creating object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Workload {
    /// `metadata.name`.
    pub name: String,
    /// `metadata.namespace` (default `default`).
    pub namespace: String,
    /// Kind and sizing.
    pub kind: WorkloadKind,
    /// The pod template (for a bare Pod: the pod itself).
    pub template: Arc<PodSpec>,
}

impl Workload {
    /// How many pods the workload wants running at once (`None` for a
    /// DaemonSet, which depends on the nodes).
    pub fn desired_pods(&self) -> Option<u32> {
        match &self.kind {
            WorkloadKind::Deployment { replicas }
            | WorkloadKind::ReplicaSet { replicas }
            | WorkloadKind::StatefulSet { replicas } => Some(*replicas),
            WorkloadKind::Job(job) => Some(match job.completions {
                Some(c) => job.parallelism.min(c),
                None => job.parallelism,
            }),
            WorkloadKind::DaemonSet => None,
            WorkloadKind::Pod => Some(1),
        }
    }
}

/// A PDB bound: an absolute count or a percentage.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IntOrPercent {
    /// A pod count.
    Int(u32),
    /// A percentage, 0–100.
    Percent(u32),
}

impl IntOrPercent {
    /// The count for `total` pods, rounding a percentage up (Kubernetes
    /// rounds both minAvailable and maxUnavailable percentages up).
    pub fn resolve(self, total: u32) -> u32 {
        match self {
            IntOrPercent::Int(n) => n,
            IntOrPercent::Percent(p) => (u64::from(total) * u64::from(p)).div_ceil(100) as u32,
        }
    }
}

/// `spec.unhealthyPodEvictionPolicy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum UnhealthyPodEvictionPolicy {
    /// The default: unhealthy pods count against the budget.
    #[default]
    IfHealthyBudget,
    /// Unhealthy (not Ready) pods may always be evicted.
    AlwaysAllow,
}

/// A `policy/v1 PodDisruptionBudget`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodDisruptionBudget {
    /// `metadata.name`.
    pub name: String,
    /// `metadata.namespace`.
    pub namespace: String,
    /// `spec.selector`; `None` selects no pod.
    pub selector: Option<LabelSelector>,
    /// `spec.minAvailable`.
    pub min_available: Option<IntOrPercent>,
    /// `spec.maxUnavailable`.
    pub max_unavailable: Option<IntOrPercent>,
    /// `spec.unhealthyPodEvictionPolicy`.
    pub unhealthy_pod_eviction_policy: UnhealthyPodEvictionPolicy,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Kubernetes docs "Specifying a Disruption Budget": percentages round
    /// up (minAvailable 50% of 7 pods = 4).
    #[test]
    fn percentages_round_up() {
        assert_eq!(IntOrPercent::Percent(50).resolve(7), 4);
        assert_eq!(IntOrPercent::Percent(10).resolve(5), 1);
        assert_eq!(IntOrPercent::Percent(0).resolve(5), 0);
        assert_eq!(IntOrPercent::Int(2).resolve(5), 2);
    }

    #[test]
    fn desired_pods_by_kind() {
        let w = |kind| Workload {
            name: "w".into(),
            namespace: "default".into(),
            kind,
            template: Arc::new(PodSpec::default()),
        };
        assert_eq!(
            w(WorkloadKind::Deployment { replicas: 3 }).desired_pods(),
            Some(3)
        );
        assert_eq!(w(WorkloadKind::DaemonSet).desired_pods(), None);
        let job = JobSpec {
            parallelism: 5,
            completions: Some(2),
            ..JobSpec::default()
        };
        assert_eq!(w(WorkloadKind::Job(job)).desired_pods(), Some(2));
    }
}
