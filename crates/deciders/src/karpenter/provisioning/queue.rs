//! The solve's queue order (core: scheduling/queue.go): which pods a solve
//! takes ([`queued_pod`]), the total order it takes them in
//! ([`QueueKey`]), and runs of pods already in that order ([`QueueRun`])
//! that many solves over the same pods share, so that a solve stopped
//! after a few pods costs what it took, not what it was given.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::scheduler::{Cluster, Pod, PodId};
use crate::time::SimTime;

/// A pod's place in the solve's queue: cpu descending, memory
/// descending, then creation and uid ascending (a total order, so the
/// order pods are given in does not matter).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct QueueKey {
    cpu: Reverse<i64>,
    memory: Reverse<i64>,
    created: SimTime,
    uid: u64,
}

impl QueueKey {
    pub(super) fn of(pod: &Pod) -> QueueKey {
        QueueKey {
            cpu: Reverse(pod.spec.requests.cpu_millis()),
            memory: Reverse(pod.spec.requests.memory_bytes()),
            created: pod.created_at,
            uid: pod.uid,
        }
    }
}

/// The pod, if a solve's batch takes it: DaemonSet pods are never
/// provisioned for. The one filter of every solve and of
/// `queue_starts_with`; a pod it takes whose requirements are invalid
/// then gets an error instead of a place in the queue.
pub(super) fn queued_pod(cluster: &Cluster, id: PodId) -> Option<&Pod> {
    cluster.pod(id).filter(|pod| !pod.is_daemonset())
}

/// Pods a solve takes, in queue order, with their keys: built once for the
/// pods that many solves of one cluster place (a disruption pass's pending
/// pods, say), and handed to each solve with the rest of its pods as
/// further runs (see [`crate::karpenter::provisioning::SolveSetup::queue`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct QueueRun {
    entries: Vec<(QueueKey, PodId)>,
    /// Whether a pod of the run has topology spread or pod (anti-)affinity
    /// terms (the solve must then know every pod before it starts).
    has_topology_terms: bool,
}

impl QueueRun {
    /// The pods of `pods` a solve takes ([`queued_pod`]), in queue order.
    pub fn new(cluster: &Cluster, pods: &[PodId]) -> QueueRun {
        let mut has_topology_terms = false;
        let mut entries: Vec<(QueueKey, PodId)> = pods
            .iter()
            .filter_map(|&id| {
                let pod = queued_pod(cluster, id)?;
                has_topology_terms |= pod.spec.has_topology_terms();
                Some((QueueKey::of(pod), id))
            })
            .collect();
        entries.sort_unstable();
        QueueRun {
            entries,
            has_topology_terms,
        }
    }

    /// The run's first pods, those that queue no later than `last`.
    pub(super) fn up_to(&self, last: QueueKey) -> &[(QueueKey, PodId)] {
        &self.entries[..self.entries.partition_point(|(key, _)| *key <= last)]
    }
}

/// What a solve is told of its pods' order (see
/// [`crate::karpenter::provisioning::SolveSetup::queue`]): runs shared
/// with other solves, already in queue order, and the solve's own pods.
#[derive(Debug, Clone, Copy)]
pub struct PresortedQueue<'a> {
    /// Runs built once for many solves.
    pub shared: &'a [&'a QueueRun],
    /// The rest of the solve's pods, in any order.
    pub own: &'a [PodId],
}

impl PresortedQueue<'_> {
    /// Whether a pod the solve takes has topology spread or pod
    /// (anti-)affinity terms.
    pub(super) fn has_topology_terms(&self, cluster: &Cluster) -> bool {
        self.shared.iter().any(|run| run.has_topology_terms)
            || self
                .own
                .iter()
                .filter_map(|&id| queued_pod(cluster, id))
                .any(|pod| pod.spec.has_topology_terms())
    }
}

/// A presorted queue taken as one: each step takes the head that queues
/// first among the shared runs and a heap of the solve's own pods (a heap,
/// as a stop usually comes after a few pods).
pub(super) struct MergedRuns<'r> {
    /// The rest of each non-empty shared run.
    rests: Vec<&'r [(QueueKey, PodId)]>,
    own: BinaryHeap<Reverse<(QueueKey, PodId)>>,
}

impl<'r> MergedRuns<'r> {
    pub(super) fn new(cluster: &Cluster, queue: PresortedQueue<'r>) -> MergedRuns<'r> {
        MergedRuns {
            rests: queue
                .shared
                .iter()
                .map(|run| &run.entries[..])
                .filter(|rest| !rest.is_empty())
                .collect(),
            own: queue
                .own
                .iter()
                .filter_map(|&id| {
                    queued_pod(cluster, id).map(|pod| Reverse((QueueKey::of(pod), id)))
                })
                .collect(),
        }
    }
}

impl Iterator for MergedRuns<'_> {
    type Item = PodId;

    fn next(&mut self) -> Option<PodId> {
        let mut first: Option<(usize, QueueKey)> = None;
        for (at, rest) in self.rests.iter().enumerate() {
            if first.is_none_or(|(_, key)| rest[0].0 < key) {
                first = Some((at, rest[0].0));
            }
        }
        let own_first = self
            .own
            .peek()
            .is_some_and(|Reverse((key, _))| first.is_none_or(|(_, first)| *key < first));
        if own_first {
            return self.own.pop().map(|Reverse((_, pod))| pod);
        }
        let (at, _) = first?;
        let (&(_, pod), rest) = self.rests[at].split_first()?;
        if rest.is_empty() {
            self.rests.swap_remove(at);
        } else {
            self.rests[at] = rest;
        }
        Some(pod)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::cluster::Cluster;
    use crate::kube::resources::Resources;
    use crate::testing::running_pod;

    #[test]
    fn merged_runs_take_the_pods_in_queue_order() {
        let mut cluster = Cluster::new();
        let cpus = [500, 2000, 1000, 2000, 250, 4000, 1000];
        let pods: Vec<PodId> = cpus
            .iter()
            .enumerate()
            .map(|(i, &millis)| {
                let mut pod = running_pod(&format!("p{i}"));
                Arc::make_mut(&mut pod.spec).requests = Resources::cpu_mem(millis, 1 << 28);
                cluster.add_pod(pod)
            })
            .collect();
        let runs = [
            QueueRun::new(&cluster, &[]),
            QueueRun::new(&cluster, &pods[2..5]),
            QueueRun::new(&cluster, &pods[..2]),
        ];
        let shared: Vec<&QueueRun> = runs.iter().collect();
        let queue = PresortedQueue {
            shared: &shared,
            own: &[pods[6], pods[5]],
        };
        let merged: Vec<PodId> = MergedRuns::new(&cluster, queue).collect();
        // cpu descending; equal cpu by creation (p1 before p3, p2 before p6).
        let expected = [5, 1, 3, 2, 6, 0, 4].map(|i| pods[i]);
        assert_eq!(merged, expected);
    }
}
