//! Owner controllers and workload steps: Deployments, ReplicaSets and
//! StatefulSets keep their replica count (re-creating lost pods as new
//! pending pods), Jobs run `parallelism` pods until `completions` succeed
//! (or fail at their `activeDeadlineSeconds`),
//! DaemonSets put one pod on every matching registered node, bare pods run
//! once.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::{
    Engine, EngineError, Event, EventType, MAX_PODS_CREATED, PodMeta, StepAction, Target,
    TargetKind, WorkloadState,
};
use crate::kube::labels::NO_UNDEFINED_LABELS;
use crate::kube::pod::{PodSpec, term_requirements};
use crate::kube::taints::tolerates_all;
use crate::kube::workload::{Workload, WorkloadKind};
use crate::scheduler::{Node, NodeId, OwnerKind, OwnerRef, Pod, PodId, PodPhase};
use crate::time::SimDuration;

impl Engine<'_> {
    pub(super) fn apply_step(&mut self, index: usize) -> Result<(), EngineError> {
        let input = self.input;
        self.apply_action(&input.steps[index].action)
    }

    /// Applies one workload action (a listed step or a source's).
    pub(super) fn apply_action(&mut self, action: &StepAction) -> Result<(), EngineError> {
        match action {
            StepAction::Apply { workloads, pdbs } => {
                for pdb in pdbs {
                    self.cluster
                        .pdbs
                        .retain(|p| !(p.namespace == pdb.namespace && p.name == pdb.name));
                    self.cluster.pdbs.push(pdb.clone());
                }
                for workload in workloads {
                    self.apply_workload(workload)?;
                }
            }
            StepAction::Scale { target, replicas } => match self.live_workload(target) {
                Some(w) => {
                    let from = self.owners.workloads[w].desired;
                    self.owners.workloads[w].desired = *replicas;
                    self.log(
                        EventType::Normal,
                        "ScalingReplicaSet",
                        object_of(target),
                        format!("Scaled from {from} to {replicas}"),
                    );
                    self.reconcile(w)?;
                }
                None => self.not_found(target, "scale"),
            },
            StepAction::Delete { target } => self.delete(target)?,
            StepAction::ProvisioningRequests { requests } => {
                self.add_provisioning_requests(requests)
            }
            StepAction::NodePools {
                nodepools,
                node_count_resource,
            } => self.replace_nodepools(nodepools, *node_count_resource)?,
            StepAction::NodeCondition {
                node,
                condition_type,
                status,
            } => self.set_node_condition(node, condition_type, *status)?,
        }
        Ok(())
    }

    fn live_workload(&self, target: &Target) -> Option<usize> {
        self.owners
            .workload_index
            .latest(target, |w| self.owners.workloads[w].is(target))
            .filter(|&w| !self.owners.workloads[w].deleted)
    }

    pub(super) fn not_found(&mut self, target: &Target, verb: &'static str) {
        let now = self.now();
        self.owners
            .missing_targets
            .entry((verb, target.clone()))
            .or_insert((now, 0))
            .1 += 1;
        self.log(
            EventType::Warning,
            "NotFound",
            object_of(target),
            format!("cannot {verb}: no such object"),
        );
    }

    fn apply_workload(&mut self, workload: &Workload) -> Result<(), EngineError> {
        let kind = super::target_kind(&workload.kind);
        let target = Target {
            kind,
            namespace: workload.namespace.clone(),
            name: workload.name.clone(),
        };
        let desired = workload.desired_pods().unwrap_or(0);
        if let Some(w) = self.live_workload(&target) {
            // kubectl apply on an existing object: new spec, pods not rolled.
            if kind == TargetKind::Job || kind == TargetKind::Pod {
                self.log(
                    EventType::Warning,
                    "AlreadyExists",
                    object_of(&target),
                    "object exists and is immutable here; apply ignored".to_string(),
                );
                return Ok(());
            }
            let state = &mut self.owners.workloads[w];
            state.workload = workload.clone();
            state.desired = desired;
            self.log(
                EventType::Normal,
                "Configured",
                object_of(&target),
                "spec replaced".to_string(),
            );
            return self.reconcile(w);
        }
        let w = self.owners.workloads.len();
        self.owners.workloads.push(WorkloadState {
            workload: workload.clone(),
            desired,
            pods: Vec::new(),
            active_pods: 0,
            terminating_pods: 0,
            next_suffix: 1,
            succeeded: 0,
            complete: false,
            deleted: false,
        });
        self.owners.workload_index.insert(&target, w);
        if matches!(
            kind,
            TargetKind::Deployment | TargetKind::ReplicaSet | TargetKind::StatefulSet
        ) {
            self.owners.scalable_workloads.push(w);
        }
        if kind == TargetKind::DaemonSet {
            self.owners.daemonset_workloads.push(w);
        }
        if kind == TargetKind::DaemonSet {
            let nodes: Vec<NodeId> = self
                .cluster
                .nodes()
                .filter(|(_, n)| n.registered && !n.marked_for_deletion)
                .map(|(id, _)| id)
                .collect();
            for node in nodes {
                self.place_daemon_pod(w, node)?;
            }
            return Ok(());
        }
        if kind == TargetKind::Pod {
            let name = workload.name.clone();
            self.create_pod(w, name, None)?;
            return Ok(());
        }
        if let WorkloadKind::Job(job) = &workload.kind
            && let Some(deadline) = job.active_deadline
        {
            // The Job's status.startTime is set when the controller first
            // syncs it, which karpsim takes as the moment it is applied.
            let at = self.now() + SimDuration::from_std(deadline);
            self.schedule(at, Event::JobDeadline(w))?;
        }
        self.reconcile(w)
    }

    /// kube-controller-manager's Job controller at `activeDeadlineSeconds`
    /// after the Job started (`pastActiveDeadline` in
    /// pkg/controller/job/job_controller.go): a Job not yet finished fails
    /// with reason `DeadlineExceeded`, its active pods are deleted and no
    /// more are created.
    pub(super) fn job_deadline(&mut self, w: usize) -> Result<(), EngineError> {
        let state = &self.owners.workloads[w];
        if state.deleted || state.complete {
            return Ok(());
        }
        self.owners.workloads[w].complete = true;
        self.owners.jobs_failed += 1;
        self.log(
            EventType::Warning,
            "DeadlineExceeded",
            self.owners.workloads[w].object(),
            "Job was active longer than specified deadline".to_string(),
        );
        let active: Vec<PodId> = self.owners.workloads[w]
            .pods
            .iter()
            .copied()
            .filter(|&p| self.cluster.pod(p).is_some_and(|p| !p.phase.is_terminal()))
            .collect();
        for pod in active {
            self.remove_pod(pod, "Job was active longer than specified deadline")?;
        }
        Ok(())
    }

    /// Where a pod counts in its workload's kept counts: `None` once it
    /// has finished or is gone, else whether it is terminating.
    pub(super) fn liveness(&self, pod: PodId) -> Option<bool> {
        self.cluster
            .pod(pod)
            .filter(|p| !p.phase.is_terminal())
            .map(|p| p.lifecycle.deleting_since.is_some())
    }

    /// Moves `pod` in its workload's kept counts from `before` (its
    /// [`Engine::liveness`] before a change) to where it counts now.
    pub(super) fn recount(&mut self, pod: PodId, before: Option<bool>) {
        let after = self.liveness(pod);
        if before == after {
            return;
        }
        let w = self.pod_meta[pod.0 as usize].workload;
        let state = &mut self.owners.workloads[w];
        for (liveness, change) in [(before, -1), (after, 1)] {
            let count = match liveness {
                Some(true) => &mut state.terminating_pods,
                Some(false) => &mut state.active_pods,
                None => continue,
            };
            *count = count.wrapping_add_signed(change);
        }
    }

    /// Brings a workload's pods in line with its spec.
    pub(super) fn reconcile(&mut self, w: usize) -> Result<(), EngineError> {
        if self.owners.workloads[w].deleted {
            return Ok(());
        }
        // Terminating pods are on their way out: controllers replace them
        // at once, except that a StatefulSet waits until the old pod with
        // that ordinal is gone (see `Engine::liveness`).
        // Counted as pods change: most calls find the count right and
        // list nothing.
        let (active_count, terminating_count) = (
            self.owners.workloads[w].active_pods,
            self.owners.workloads[w].terminating_pods,
        );
        debug_assert_eq!(
            (active_count, terminating_count),
            self.owners.workloads[w]
                .pods
                .iter()
                .filter_map(|p| self.liveness(*p))
                .fold((0, 0), |(a, t), terminating| if terminating {
                    (a, t + 1)
                } else {
                    (a + 1, t)
                }),
            "kept pod counts of workload {w}"
        );
        let kind = self.owners.workloads[w].workload.kind.clone();
        match kind {
            WorkloadKind::Deployment { .. }
            | WorkloadKind::ReplicaSet { .. }
            | WorkloadKind::StatefulSet { .. } => {
                let desired = self.owners.workloads[w].desired as usize;
                let stateful = matches!(kind, WorkloadKind::StatefulSet { .. });
                let held = if stateful { terminating_count } else { 0 };
                if active_count + held < desired {
                    self.room_for_pods(desired - active_count - held)?;
                    // Ordinals in use (only a StatefulSet names pods by them).
                    let mut ordinals: Vec<u32> = if stateful {
                        self.owners.workloads[w]
                            .pods
                            .iter()
                            .filter(|p| self.liveness(**p).is_some())
                            .filter_map(|p| self.pod_meta[p.0 as usize].ordinal)
                            .collect()
                    } else {
                        Vec::new()
                    };
                    ordinals.sort_unstable();
                    let mut next_ordinal = 0u32;
                    for _ in active_count + held..desired {
                        if stateful {
                            while ordinals.binary_search(&next_ordinal).is_ok() {
                                next_ordinal += 1;
                            }
                            let name =
                                format!("{}-{next_ordinal}", self.owners.workloads[w].name());
                            ordinals.push(next_ordinal);
                            ordinals.sort_unstable();
                            self.create_pod(w, name, Some(next_ordinal))?;
                        } else {
                            let name = self.next_pod_name(w);
                            self.create_pod(w, name, None)?;
                        }
                    }
                } else if active_count > desired {
                    // Only pods that are not already terminating are chosen.
                    let active: Vec<PodId> = self.owners.workloads[w]
                        .pods
                        .iter()
                        .copied()
                        .filter(|p| self.liveness(*p) == Some(false))
                        .collect();
                    let victims =
                        self.scale_down_victims(&active, active_count - desired, stateful);
                    for pod in victims {
                        self.remove_pod(pod, "scaled down")?;
                    }
                }
            }
            WorkloadKind::Job(job) => {
                let state = &self.owners.workloads[w];
                if state.complete {
                    return Ok(());
                }
                let done = match job.completions {
                    Some(completions) => state.succeeded >= completions,
                    None => state.succeeded > 0,
                };
                if done {
                    self.owners.workloads[w].complete = true;
                    let object = self.owners.workloads[w].object();
                    self.log(
                        EventType::Normal,
                        "Completed",
                        object,
                        "Job completed".to_string(),
                    );
                    return Ok(());
                }
                let remaining = match job.completions {
                    Some(completions) => completions - state.succeeded,
                    None => job.parallelism,
                };
                let want = job.parallelism.min(remaining) as usize;
                self.room_for_pods(want.saturating_sub(active_count))?;
                for _ in active_count..want {
                    let name = self.next_pod_name(w);
                    self.create_pod(w, name, None)?;
                }
            }
            WorkloadKind::DaemonSet | WorkloadKind::Pod => {}
        }
        Ok(())
    }

    fn next_pod_name(&mut self, w: usize) -> String {
        let state = &mut self.owners.workloads[w];
        let name = format!("{}-{:05}", state.name(), state.next_suffix);
        state.next_suffix += 1;
        name
    }

    /// Which pods a scale-down removes: StatefulSets the highest ordinals;
    /// ReplicaSets pending pods first, then the newest. Each pod is ranked
    /// once and only the `count` first are put in order (ranks are unique:
    /// the pod id breaks ties, so this is the whole order's first `count`).
    fn scale_down_victims(&self, active: &[PodId], count: usize, stateful: bool) -> Vec<PodId> {
        if stateful {
            let mut ranked: Vec<PodId> = active.to_vec();
            ranked.sort_by_key(|p| std::cmp::Reverse(self.pod_meta[p.0 as usize].ordinal));
            ranked.truncate(count);
            return ranked;
        }
        let now = self.now();
        // Co-location rank: active pods of the same owner per node.
        let mut on_node: BTreeMap<NodeId, usize> = BTreeMap::new();
        for node in active.iter().filter_map(|&p| self.cluster.pod(p)?.node) {
            *on_node.entry(node).or_default() += 1;
        }
        let ranked: Vec<_> = active
            .iter()
            .map(|&p| {
                let pod = self.cluster.pod(p);
                let node = pod.and_then(|p| p.node);
                let colocated = node.map_or(0, |n| on_node.get(&n).copied().unwrap_or(0));
                (deletion_rank(pod, colocated, now, p), p)
            })
            .collect();
        first_ranked(ranked, count)
    }

    pub(super) fn owner_ref(&self, w: usize) -> Option<OwnerRef> {
        let state = &self.owners.workloads[w];
        let kind = match state.kind() {
            TargetKind::Deployment => OwnerKind::Deployment,
            TargetKind::ReplicaSet => OwnerKind::ReplicaSet,
            TargetKind::StatefulSet => OwnerKind::StatefulSet,
            TargetKind::Job => OwnerKind::Job,
            TargetKind::DaemonSet => OwnerKind::DaemonSet,
            TargetKind::Pod | TargetKind::Node => return None,
        };
        Some(OwnerRef {
            kind,
            name: state.name().to_string(),
        })
    }

    /// Fails when `count` more pods would pass [`MAX_PODS_CREATED`],
    /// before any is made.
    pub(super) fn room_for_pods(&self, count: usize) -> Result<(), EngineError> {
        if self.pod_meta.len().saturating_add(count) > MAX_PODS_CREATED {
            return Err(EngineError::TooManyPods {
                variant: self.input.variant.clone(),
                limit: MAX_PODS_CREATED,
            });
        }
        Ok(())
    }

    /// Creates a pending pod of workload `w`.
    fn create_pod(
        &mut self,
        w: usize,
        name: String,
        ordinal: Option<u32>,
    ) -> Result<PodId, EngineError> {
        self.room_for_pods(1)?;
        let spec = self.owners.workloads[w].workload.template.clone();
        let pod = self.new_pod(w, name, ordinal, spec, false);
        self.wake_scheduler()?;
        self.touch()?;
        Ok(pod)
    }

    fn new_pod(
        &mut self,
        w: usize,
        name: String,
        ordinal: Option<u32>,
        spec: Arc<PodSpec>,
        daemonset: bool,
    ) -> PodId {
        let pod = Pod {
            lifecycle: Default::default(),
            name: name.clone(),
            uid: 0,
            spec,
            owner: self.owner_ref(w),
            node: None,
            phase: PodPhase::Pending,
            created_at: self.now(),
            unschedulable: false,
        };
        let id = self.cluster.add_pod(pod);
        debug_assert_eq!(id.0 as usize, self.pod_meta.len());
        let kept_name = self.kept_pod_name(w, &name);
        self.pod_meta.push(PodMeta {
            workload: w,
            name: kept_name,
            ordinal,
            daemonset,
            created_at: self.now(),
            first_bound: None,
            removed: false,
            lost: false,
            bound_before_run: false,
        });
        let owners = &mut self.owners;
        let namespace = owners.workloads[w].namespace();
        owners
            .pod_names
            .insert(&(namespace, name.as_str()), id.0 as usize);
        self.owners.workloads[w].pods.push(id);
        self.recount(id, None);
        if !daemonset {
            self.spot_pod_created(id, w);
        }
        let object = self.owners.workloads[w].object();
        self.log(
            EventType::Normal,
            "SuccessfulCreate",
            object,
            format!("Created pod: {name}"),
        );
        id
    }

    /// Deletes a pod (its owner may re-create it).
    pub(super) fn remove_pod(&mut self, pod: PodId, why: &str) -> Result<(), EngineError> {
        let object = self.pod_object(pod);
        self.note_pod_event(pod);
        let before = self.liveness(pod);
        if self.cluster.remove_pod(pod).is_none() {
            return Ok(());
        }
        self.spot_pod_removed(pod);
        self.evicting.remove(&pod);
        self.forget_attempts(pod);
        self.retire_bare_pod(pod);
        let meta = &mut self.pod_meta[pod.0 as usize];
        meta.removed = true;
        let w = meta.workload;
        self.owners.workloads[w].pods.retain(|p| *p != pod);
        self.recount(pod, before);
        self.log(
            EventType::Normal,
            "Killing",
            object,
            format!("Deleted: {why}"),
        );
        self.mark_unconsolidated();
        self.wake_scheduler()?;
        self.touch()
    }

    fn delete(&mut self, target: &Target) -> Result<(), EngineError> {
        if target.kind == TargetKind::Pod {
            let key = (target.namespace.as_str(), target.name.as_str());
            let pod = self
                .owners
                .pod_names
                .latest(&key, |p| {
                    let id = PodId(p as u32);
                    self.pod_name(id) == target.name && self.pod_namespace(id) == target.namespace
                })
                .map(|p| PodId(p as u32))
                .filter(|p| self.cluster.pod(*p).is_some());
            let Some(pod) = pod else {
                self.not_found(target, "delete");
                return Ok(());
            };
            let w = self.pod_meta[pod.0 as usize].workload;
            self.remove_pod(pod, "deleted by workload step")?;
            if self.owners.workloads[w].kind() == TargetKind::Pod {
                self.owners.workloads[w].deleted = true;
            } else {
                self.reconcile(w)?;
            }
            return Ok(());
        }
        let Some(w) = self.live_workload(target) else {
            self.not_found(target, "delete");
            return Ok(());
        };
        self.owners.workloads[w].deleted = true;
        self.log(
            EventType::Normal,
            "Deleted",
            object_of(target),
            "deleted with its pods".to_string(),
        );
        for pod in self.owners.workloads[w].pods.clone() {
            self.remove_pod(pod, "owner deleted")?;
        }
        Ok(())
    }

    /// A pod ran for its duration and succeeded.
    pub(super) fn pod_done(&mut self, pod: PodId) -> Result<(), EngineError> {
        // A terminating pod is being replaced; it does not also succeed.
        let running = self
            .cluster
            .pod(pod)
            .is_some_and(|p| p.phase == PodPhase::Running && p.lifecycle.deleting_since.is_none());
        if !running {
            return Ok(());
        }
        self.note_pod_event(pod);
        let before = self.liveness(pod);
        self.cluster.finish_pod(pod, PodPhase::Succeeded);
        self.recount(pod, before);
        self.forget_attempts(pod);
        let object = self.pod_object(pod);
        self.log(
            EventType::Normal,
            "Completed",
            object,
            "pod ran to completion".to_string(),
        );
        let w = self.pod_meta[pod.0 as usize].workload;
        self.owners.workloads[w].succeeded += 1;
        self.reconcile(w)?;
        self.wake_scheduler()?;
        self.touch()
    }

    /// How long a bound pod runs before it succeeds, if it ever does: Jobs
    /// and bare pods with `karpsim.dev/duration` (pod template first, then
    /// the Job); without one a pod runs to the end of the run. A Job's
    /// `activeDeadlineSeconds` is not a run time: it fails the Job.
    pub(super) fn run_time(&self, pod: PodId) -> Option<SimDuration> {
        let w = self.pod_meta[pod.0 as usize].workload;
        let state = &self.owners.workloads[w];
        let template = state.workload.template.run_duration;
        let duration = match &state.workload.kind {
            WorkloadKind::Job(job) => template.or(job.duration),
            WorkloadKind::Pod => template,
            _ => None,
        }?;
        Some(SimDuration::from_std(duration))
    }

    /// Schedules the completion of a pod that just started running.
    pub(super) fn start_pod(&mut self, pod: PodId) -> Result<(), EngineError> {
        if let Some(run_time) = self.run_time(pod) {
            let at = self.now() + run_time;
            self.schedule(at, Event::PodDone(pod))?;
        }
        Ok(())
    }

    /// Creates every DaemonSet's pod on a node that just registered or
    /// initialized (where the node's taints let it, and not twice).
    pub(super) fn place_daemon_pods(&mut self, node: NodeId) -> Result<(), EngineError> {
        let daemonsets: Vec<usize> = self.live_daemonsets().collect();
        for w in daemonsets {
            self.place_daemon_pod(w, node)?;
        }
        Ok(())
    }

    /// The DaemonSet controller's placement: a pod bound straight to `node`
    /// when the node matches the template (tolerations, node selector,
    /// required node affinity) and has room.
    pub(super) fn place_daemon_pod(
        &mut self,
        w: usize,
        node_id: NodeId,
    ) -> Result<(), EngineError> {
        let spec = self.owners.workloads[w].workload.template.clone();
        let Some(node) = self.cluster.node(node_id) else {
            return Ok(());
        };
        if !daemon_pod_matches(&spec, node) {
            return Ok(());
        }
        // A node is offered to the DaemonSets at registration and again at
        // initialization; one that tolerated it at registration has its pod.
        let placed = node.pods.iter().any(|p| {
            self.pod_meta[p.0 as usize].workload == w
                && self.cluster.pod(*p).is_some_and(|p| !p.phase.is_terminal())
        });
        if placed {
            return Ok(());
        }
        let node_name = node.name.clone();
        if !spec.requests.fits(&node.available()) {
            let object = self.owners.workloads[w].object();
            self.log(
                EventType::Warning,
                "FailedPlacement",
                object,
                format!("pod does not fit on node {node_name}: insufficient resources"),
            );
            return Ok(());
        }
        let name = format!("{}-{node_name}", self.owners.workloads[w].name());
        let pod = self.new_pod(w, name, None, spec, true);
        self.bind_pod(pod, node_id)?;
        self.touch()
    }

    /// Binds a pod and records when it first ran.
    pub(super) fn bind_pod(&mut self, pod: PodId, node: NodeId) -> Result<(), EngineError> {
        self.cluster.bind(pod, node);
        self.mark_unconsolidated();
        self.spot_pod_bound(pod, node);
        let now = self.now();
        if let Some(p) = self.cluster.pod_mut(pod) {
            p.lifecycle.started_at = Some(now);
        }
        self.note_pod_event(pod);
        let node_name = self.node_name(node);
        self.pod_meta[pod.0 as usize].first_bound.get_or_insert(now);
        if let Some(attempts) = self.attempts.get_mut(&pod) {
            attempts.last_reason = None;
        }
        let message = format!("Successfully assigned {} to {node_name}", self.pod_key(pod));
        let object = self.pod_object(pod);
        self.log(EventType::Normal, "Scheduled", object, message);
        self.start_pod(pod)
    }

    /// `status.lastPodEventTime`: a non-DaemonSet pod bound, finished or
    /// started terminating on its node. Writes are at least
    /// [`POD_EVENT_DEDUPE`] apart; events in between are dropped, as
    /// upstream's de-duplicating cache does.
    pub(super) fn note_pod_event(&mut self, pod: PodId) {
        let now = self.now();
        let Some(p) = self.cluster.pod(pod) else {
            return;
        };
        if p.is_daemonset() {
            return;
        }
        let Some(node) = p.node else { return };
        let Some(claim) = self.cluster.node_mut(node).and_then(|n| n.claim.as_mut()) else {
            return;
        };
        let due = claim
            .lifecycle
            .last_pod_event_at
            .is_none_or(|last| now >= last + POD_EVENT_DEDUPE);
        if due {
            claim.lifecycle.last_pod_event_at = Some(now);
        }
    }
}

/// Minimum spacing of `lastPodEventTime` writes (core:
/// nodeclaim/podevents/controller.go `dedupeTimeout`).
pub const POD_EVENT_DEDUPE: SimDuration = SimDuration::from_secs(10);

/// Whether a DaemonSet pod template selects `node`.
fn daemon_pod_matches(spec: &PodSpec, node: &Node) -> bool {
    if tolerates_all(&node.taints, &spec.tolerations).is_err() {
        return false;
    }
    let selector_ok = spec
        .node_selector
        .iter()
        .all(|(key, value)| node.labels.get_normalized(key) == Some(value.as_str()));
    if !selector_ok {
        return false;
    }
    let required = &spec.node_affinity.required;
    required.is_empty()
        || required.iter().any(|term| {
            term_requirements(term).is_ok_and(|reqs| {
                reqs.compatible_with_labels(&node.labels, &NO_UNDEFINED_LABELS)
                    .is_ok()
            })
        })
}

/// `deployment/default/web`.
pub(super) fn object_of(target: &Target) -> String {
    object_name(target.kind, &target.namespace, &target.name)
}

/// The object name of a `kind` object in events: `node/NAME` or
/// `KIND/NAMESPACE/NAME`.
pub(super) fn object_name(kind: TargetKind, namespace: &str, name: &str) -> String {
    if kind == TargetKind::Node {
        return format!("node/{name}");
    }
    format!("{}/{namespace}/{name}", kind.resource())
}

/// The pods of the `count` lowest ranks, lowest first (ranks unique).
fn first_ranked<K: Ord>(mut ranked: Vec<(K, PodId)>, count: usize) -> Vec<PodId> {
    if count < ranked.len() {
        ranked.select_nth_unstable(count);
        ranked.truncate(count);
    }
    ranked.sort_unstable();
    ranked.into_iter().map(|(_, p)| p).collect()
}

/// The ReplicaSet controller's order of scale-down victims
/// (kube-controller-manager `pkg/controller/controller_utils.go`,
/// `ActivePodsWithRanks.Less`, with `getPodsToDelete` ranking pods by
/// related pods on the same node), smallest deleted first: unassigned
/// before assigned; pending before running; not ready before ready; lower
/// `controller.kubernetes.io/pod-deletion-cost` first; more pods of the
/// same owner on the pod's node first; the more recently ready first,
/// compared on the log₂ scale of the time since (LogarithmicScaleDown,
/// on by default); then newer first. Restart counts are always 0 here, so
/// that criterion never decides; upstream breaks a log-scale tie by the
/// random UID, karpsim by creation order.
fn deletion_rank(
    pod: Option<&Pod>,
    colocated: usize,
    now: crate::time::SimTime,
    id: PodId,
) -> impl Ord {
    let assigned = pod.is_some_and(|p| p.node.is_some());
    let running = pod.is_some_and(|p| p.phase == PodPhase::Running);
    let ready = pod.is_some_and(crate::pods::is_ready);
    let cost = pod.map_or(0, |p| p.spec.deletion_cost);
    // Ready longer ago ranks later: the log₂ bucket of the nanoseconds
    // since (−1 for none or unknown, which upstream also orders first).
    let ready_bucket = pod
        .filter(|_| ready)
        .and_then(|p| p.lifecycle.started_at)
        .map_or(-1, |t| {
            let nanos = u128::from(now.saturating_duration_since(t).as_millis()) * 1_000_000;
            if nanos == 0 {
                -1
            } else {
                i64::from(127 - nanos.leading_zeros() as i32)
            }
        });
    (
        assigned,
        running,
        ready,
        cost,
        std::cmp::Reverse(colocated),
        ready_bucket,
        std::cmp::Reverse(id),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::SimTime;
    use karpsim_model::testing::pod_of;

    fn pod(node: Option<u32>, phase: PodPhase, cost: i32, started_s: u64) -> Pod {
        let mut p = pod_of("p", "web", OwnerKind::Deployment, "web");
        p.node = node.map(NodeId);
        p.phase = phase;
        std::sync::Arc::make_mut(&mut p.spec).deletion_cost = cost;
        p.lifecycle.started_at = Some(SimTime::from_secs(started_s));
        p
    }

    proptest::proptest! {
        /// The victims of a scale-down by `count` are the first `count`
        /// of the whole order, in that order, whatever the count (ranks
        /// with many ties, broken by the pod id as `deletion_rank` does).
        #[test]
        fn first_ranked_is_the_whole_orders_prefix(
            ranks in proptest::collection::vec(0u8..4, 0..40),
            count in 0usize..45,
        ) {
            let ranked: Vec<((u8, std::cmp::Reverse<PodId>), PodId)> = ranks
                .iter()
                .enumerate()
                .map(|(i, &r)| ((r, std::cmp::Reverse(PodId(i as u32))), PodId(i as u32)))
                .collect();
            let mut whole = ranked.clone();
            whole.sort();
            let expected: Vec<PodId> = whole.into_iter().take(count).map(|(_, p)| p).collect();
            proptest::prop_assert_eq!(first_ranked(ranked, count), expected);
        }
    }

    /// kube-controller-manager pkg/controller/controller_utils_test.go
    /// `TestSortingActivePodsWithRanks`: each pod in this list is deleted
    /// before the next one, one criterion apart.
    #[test]
    fn replicaset_victims_follow_active_pods_with_ranks() {
        let now = SimTime::from_secs(10_000);
        let running = PodPhase::Running;
        // (pod, co-located pods on its node, id)
        let ordered = [
            (pod(None, PodPhase::Pending, 0, 0), 0, 9),
            (pod(Some(0), PodPhase::Pending, 0, 0), 1, 8),
            (pod(Some(0), running, -5, 9_990), 1, 7),
            (pod(Some(0), running, 0, 9_990), 3, 6),
            (pod(Some(0), running, 0, 9_990), 1, 5),
            // ready 10 s ago vs 1 000 s ago: different log₂ buckets.
            (pod(Some(0), running, 0, 9_000), 1, 4),
            // same bucket (1 000 s vs 1 001 s ago): the newer goes first.
            (pod(Some(0), running, 0, 8_999), 1, 3),
        ];
        let mut ranks: Vec<_> = ordered
            .iter()
            .map(|(p, colocated, id)| deletion_rank(Some(p), *colocated, now, PodId(*id)))
            .collect();
        for pair in ranks.windows(2) {
            assert!(pair[0] < pair[1]);
        }
        ranks.reverse();
        assert!(!ranks.is_sorted());
    }
}
