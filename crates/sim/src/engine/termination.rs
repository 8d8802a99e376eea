//! The termination controller and the eviction queue (core:
//! pkg/controllers/node/termination, terminator/terminator.go and
//! eviction.go): a deleted NodeClaim's node is tainted
//! `karpenter.sh/disrupted:NoSchedule` and drained, then its instance is
//! terminated (billing stops) and the node goes.
//!
//! The drain looks at the node every second ([`DRAIN_REQUEUE`]):
//! - with a `terminationGracePeriod`, a pod still waiting is force-deleted
//!   once `deadline − pod grace` has come (regardless of PDBs and
//!   do-not-disrupt), with its grace cut to the time left;
//! - the pods the drain waits for (not terminal, not tolerating the
//!   disrupted taint; terminating and do-not-disrupt pods included) are
//!   split into tiers — non-critical non-DaemonSet, non-critical
//!   DaemonSet, critical non-DaemonSet, critical DaemonSet (critical =
//!   priority class `system-cluster-critical` / `system-node-critical`) —
//!   and only the evictable pods (active, not protected by do-not-disrupt)
//!   of the first non-empty tier go to the eviction queue, so a tier waits
//!   until the pods of the earlier ones are fully deleted;
//! - the node is drained when no pod waits any more (terminal pods and pods
//!   tolerating the taint do not wait); the instance is terminated then,
//!   but not before [`MIN_DRAIN_TIME`] after the deletion.
//!
//! The eviction queue asks the PDB model ([`PdbLimits::can_evict`] over the
//! cluster as it is at that instant); a refusal (HTTP 429 upstream) retries
//! after 100 ms, doubling up to 10 s, and counts as a PDB-blocked eviction.
//! An evicted pod terminates: it keeps its resources on the node for its
//! `terminationGracePeriodSeconds` (capped by the NodeClaim's deadline) and
//! then is gone. Its owner creates a replacement at once (a StatefulSet
//! when the old pod is gone); a bare pod is lost. Volume detachment is not
//! modelled.

use super::{Engine, EngineError, Event, EventType};
use crate::kube::taints::disrupted_no_schedule_taint;
use crate::pdb::{EvictionBlock, PdbBlockers, PdbLimits, pdb_status};
use crate::pods::{
    is_do_not_disrupt_active, is_evictable, is_terminal, is_terminating, tolerates_disrupted_taint,
};
use crate::scheduler::{NodeId, Pod, PodId};
use crate::time::{SimDuration, SimTime};

/// How often the termination controller looks at a node that is not
/// drained yet (upstream requeues after 1 s).
pub const DRAIN_REQUEUE: SimDuration = SimDuration::from_secs(1);
/// A deleted node is never terminated sooner than this after deletion.
pub const MIN_DRAIN_TIME: SimDuration = SimDuration::from_secs(5);
/// First retry delay of a refused eviction.
pub const EVICTION_BACKOFF_BASE: SimDuration = SimDuration::from_millis(100);
/// Longest retry delay of a refused eviction.
pub const EVICTION_BACKOFF_MAX: SimDuration = SimDuration::from_secs(10);

/// A node whose NodeClaim is being deleted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Deleting {
    /// When the NodeClaim was deleted.
    pub since: SimTime,
    /// Why (`underutilized`, `empty`, `drifted`, `expired`, …).
    pub reason: String,
    /// `karpenter.sh/nodeclaim-termination-timestamp`: deletion +
    /// `terminationGracePeriod`, if set.
    pub deadline: Option<SimTime>,
    /// The pending drain look, if one is scheduled.
    pub tick_at: Option<SimTime>,
    /// The last FailedDraining message (logged when it changes).
    pub last_message: String,
}

/// Whether the pod's priority class marks it critical for draining.
pub fn is_critical(pod: &Pod) -> bool {
    matches!(
        pod.spec.priority_class_name.as_deref(),
        Some("system-cluster-critical" | "system-node-critical")
    )
}

/// Whether the drain still waits for the pod: not finished, not ignored
/// for tolerating the disrupted taint (a terminating pod waits until it is
/// gone; karpsim's pods always leave within their grace period).
fn is_waiting(pod: &Pod) -> bool {
    !is_terminal(pod) && !tolerates_disrupted_taint(pod)
}

impl Engine<'_> {
    /// Adds `karpenter.sh/disrupted:NoSchedule` to a node (once).
    pub(super) fn taint_disrupted(&mut self, node: NodeId) {
        let taint = disrupted_no_schedule_taint();
        if let Some(n) = self.cluster.node_mut(node)
            && !n.taints.iter().any(|t| t.matches(&taint))
        {
            n.taints.push(taint);
        }
    }

    /// Removes the disrupted taint and the deletion mark of a node whose
    /// command failed (a node already being deleted keeps both).
    pub(super) fn untaint_disrupted(&mut self, node: NodeId) {
        if self.node_meta[node.0 as usize].deleting.is_some() {
            return;
        }
        let taint = disrupted_no_schedule_taint();
        if let Some(n) = self.cluster.node_mut(node) {
            n.taints.retain(|t| !t.matches(&taint));
            n.marked_for_deletion = false;
        }
    }

    /// Pods of nodes marked for deletion that will need a new home:
    /// reschedulable, not held by do-not-disrupt or a PDB that never allows
    /// an eviction (core: provisioner.go, currently reschedulable pods).
    pub(super) fn deleting_node_pods(&self) -> Vec<PodId> {
        let now = self.now();
        let deleting: Vec<&crate::scheduler::Node> = self
            .cluster
            .nodes()
            .filter(|(_, n)| n.marked_for_deletion)
            .map(|(_, n)| n)
            .collect();
        if deleting.is_empty() {
            return Vec::new();
        }
        let blockers = PdbBlockers::from_cluster(&self.cluster);
        let mut pods = Vec::new();
        for node in deleting {
            for &id in &node.pods {
                let Some(pod) = self.cluster.pod(id) else {
                    continue;
                };
                if crate::pods::is_reschedulable(pod)
                    && !is_do_not_disrupt_active(pod, now)
                    && !blockers.is_fully_blocked(pod, now)
                {
                    pods.push(id);
                }
            }
        }
        pods
    }

    /// Deletes a node's NodeClaim: marks and taints the node, starts the
    /// drain, and makes its pods provisioning demand.
    pub(super) fn start_termination(
        &mut self,
        node: NodeId,
        reason: &str,
    ) -> Result<(), EngineError> {
        self.start_termination_by(node, reason, None)
    }

    /// [`Self::start_termination`] with the NodeClaim's termination
    /// timestamp at `forced` at the latest (node repair sets it to now:
    /// every pod is deleted at once, whatever PDBs and do-not-disrupt say).
    pub(super) fn start_termination_by(
        &mut self,
        node: NodeId,
        reason: &str,
        forced: Option<SimTime>,
    ) -> Result<(), EngineError> {
        let now = self.now();
        let Some(n) = self.cluster.node_mut(node) else {
            return Ok(());
        };
        if self.node_meta[node.0 as usize].deleting.is_some() {
            return Ok(());
        }
        n.marked_for_deletion = true;
        let deadline = n
            .claim
            .as_ref()
            .and_then(|c| c.lifecycle.termination_grace_period)
            .map(|tgp| now + tgp);
        let deadline = match (deadline, forced) {
            (Some(d), Some(f)) => Some(d.min(f)),
            (d, f) => d.or(f),
        };
        let name = n.name.clone();
        self.taint_disrupted(node);
        self.node_meta[node.0 as usize].deleting = Some(Deleting {
            since: now,
            reason: reason.to_string(),
            deadline,
            tick_at: None,
            last_message: String::new(),
        });
        let deadline_text = deadline.map_or(String::new(), |d| {
            format!("; pods are force-deleted by {d} (terminationGracePeriod)")
        });
        self.log(
            EventType::Normal,
            "Deleting",
            format!("nodeclaim/{name}"),
            format!("Deleting NodeClaim: {reason}{deadline_text}"),
        );
        if let Some(karpenter) = self.autoscaler.karpenter_mut() {
            karpenter.disruption.in_flight.remove(&node);
        }
        if self.is_static_node(node) {
            self.static_reconcile_soon()?;
        }
        let pods = self.deleting_node_pods();
        self.mark_unconsolidated();
        self.touch()?;
        self.trigger_batch(&pods)?;
        self.schedule_drain(node, now)
    }

    /// Schedules a drain look at `at` unless an earlier one is pending.
    pub(super) fn schedule_drain(&mut self, node: NodeId, at: SimTime) -> Result<(), EngineError> {
        let Some(deleting) = self.node_meta[node.0 as usize].deleting.as_mut() else {
            return Ok(());
        };
        if deleting.tick_at.is_some_and(|t| t <= at) {
            return Ok(());
        }
        deleting.tick_at = Some(at);
        self.schedule(at, Event::DrainTick(node))
    }

    /// One look of the termination controller at a deleting node.
    pub(super) fn drain_tick(&mut self, node: NodeId) -> Result<(), EngineError> {
        let now = self.now();
        let Some(deleting) = self.node_meta[node.0 as usize].deleting.as_mut() else {
            return Ok(());
        };
        if deleting.tick_at != Some(now) {
            return Ok(());
        }
        deleting.tick_at = None;
        let (since, deadline) = (deleting.since, deleting.deadline);
        let Some(n) = self.cluster.node(node) else {
            return Ok(());
        };
        let pods: Vec<PodId> = n.pods.clone();

        // terminationGracePeriod: delete each waiting pod early enough to
        // get its full grace before the deadline.
        if let Some(deadline) = deadline {
            for &id in &pods {
                let Some(pod) = self.cluster.pod(id) else {
                    continue;
                };
                if !is_waiting(pod) || is_terminating(pod) {
                    continue;
                }
                let grace = SimDuration::from_std(pod.spec.termination_grace);
                let delete_at =
                    SimTime::ZERO + deadline.saturating_duration_since(SimTime::ZERO + grace);
                if now >= delete_at {
                    self.force_delete(id, deadline)?;
                }
            }
        }

        // Tiers hold every pod the drain still waits for (terminating and
        // do-not-disrupt pods included), so a later tier starts only once
        // the earlier ones are gone; of the first non-empty tier, only the
        // evictable pods go to the eviction queue.
        let mut tiers: [Vec<PodId>; 4] = Default::default();
        for &id in &pods {
            let Some(pod) = self.cluster.pod(id) else {
                continue;
            };
            if !is_waiting(pod) {
                continue;
            }
            let tier = usize::from(is_critical(pod)) * 2 + usize::from(pod.is_daemonset());
            tiers[tier].push(id);
        }
        if let Some(tier) = tiers.into_iter().find(|t| !t.is_empty()) {
            let evictable: Vec<PodId> = tier
                .into_iter()
                .filter(|&id| self.cluster.pod(id).is_some_and(|p| is_evictable(p, now)))
                .collect();
            for id in evictable {
                if let std::collections::btree_map::Entry::Vacant(entry) = self.evicting.entry(id) {
                    entry.insert(0);
                    self.schedule(now, Event::Evict(id))?;
                }
            }
        }

        let waiting = pods
            .iter()
            .filter(|&&id| self.cluster.pod(id).is_some_and(is_waiting))
            .count();
        if waiting > 0 {
            let name = self.node_name(node);
            let message = format!("Failed to drain node, {waiting} pods are waiting to be evicted");
            let changed = self.node_meta[node.0 as usize]
                .deleting
                .as_mut()
                .is_some_and(|d| {
                    let changed = d.last_message != message;
                    d.last_message.clone_from(&message);
                    changed
                });
            if changed {
                self.log(
                    EventType::Warning,
                    "FailedDraining",
                    format!("node/{name}"),
                    message,
                );
            }
            return self.schedule_drain(node, now + DRAIN_REQUEUE);
        }
        if now < since + MIN_DRAIN_TIME {
            return self.schedule_drain(node, since + MIN_DRAIN_TIME);
        }
        self.terminate_instance(node, "node terminated")
    }

    /// TGP reached for the pod: delete it regardless of PDBs and
    /// do-not-disrupt, with its grace cut to what is left.
    fn force_delete(&mut self, pod: PodId, deadline: SimTime) -> Result<(), EngineError> {
        let now = self.now();
        let left = deadline.saturating_duration_since(now);
        self.record.churn.forced_pod_deletions += 1;
        let object = self.pod_object(pod);
        self.log(
            EventType::Warning,
            "Disrupted",
            object,
            format!(
                "Deleting the pod to accommodate the terminationTime {deadline} of the node; grace period {left}"
            ),
        );
        self.begin_pod_termination(pod, left)
    }

    /// The eviction queue's attempt for one pod.
    pub(super) fn try_evict(&mut self, pod: PodId) -> Result<(), EngineError> {
        let now = self.now();
        let Some(&attempt) = self.evicting.get(&pod) else {
            return Ok(());
        };
        let Some(p) = self.cluster.pod(pod) else {
            self.evicting.remove(&pod);
            return Ok(());
        };
        let node = p.node;
        let deleting = node.and_then(|n| self.node_meta[n.0 as usize].deleting.as_ref());
        let (Some(node), Some(deleting)) = (node, deleting) else {
            self.evicting.remove(&pod);
            return Ok(());
        };
        if !is_evictable(p, now) {
            self.evicting.remove(&pod);
            return Ok(());
        }
        let reason = deleting.reason.clone();
        let deadline = deleting.deadline;
        let limits = PdbLimits::from_cluster(&self.cluster, &self.controller_scales());
        match limits.can_evict(p, now) {
            Ok(()) => {
                self.evicting.remove(&pod);
                self.evict(pod, node, &reason, deadline)
            }
            Err(block) => {
                self.record.churn.pdb_blocked_evictions += 1;
                if attempt == 0 {
                    let message = match block {
                        EvictionBlock::Pdb(key) => format!(
                            "Cannot evict pod as it would violate the pod's disruption budget {key}"
                        ),
                        EvictionBlock::MultiplePdbs(keys) => format!(
                            "Cannot evict pod: it is selected by more than one PodDisruptionBudget ({})",
                            keys.join(", ")
                        ),
                    };
                    let object = self.pod_object(pod);
                    self.log(EventType::Warning, "FailedEviction", object, message);
                }
                let delay_ms = EVICTION_BACKOFF_BASE
                    .as_millis()
                    .saturating_mul(1u64 << attempt.min(20))
                    .min(EVICTION_BACKOFF_MAX.as_millis());
                self.evicting.insert(pod, attempt + 1);
                self.schedule(now + SimDuration::from_millis(delay_ms), Event::Evict(pod))
            }
        }
    }

    /// A voluntary eviction the PDBs allowed.
    fn evict(
        &mut self,
        pod: PodId,
        node: NodeId,
        reason: &str,
        deadline: Option<SimTime>,
    ) -> Result<(), EngineError> {
        let now = self.now();
        let Some(p) = self.cluster.pod(pod) else {
            return Ok(());
        };
        let grace = SimDuration::from_std(p.spec.termination_grace);
        let grace = match deadline {
            Some(d) => grace.min(d.saturating_duration_since(now)),
            None => grace,
        };
        let daemon = p.is_daemonset();
        if !daemon {
            *self
                .record
                .churn
                .evictions_by_reason
                .entry(reason.to_string())
                .or_default() += 1;
        }
        let object = self.pod_object(pod);
        let node_name = self.node_name(node);
        self.log(
            EventType::Normal,
            "Evicted",
            object,
            format!("Evicted pod from node {node_name}: {reason}"),
        );
        self.begin_pod_termination(pod, grace)?;
        self.check_pdbs_after_eviction(pod);
        Ok(())
    }

    /// The pod starts terminating: it stays on the node for `grace`, its
    /// owner replaces it now (a StatefulSet once it is gone), a bare pod is
    /// lost.
    fn begin_pod_termination(&mut self, pod: PodId, grace: SimDuration) -> Result<(), EngineError> {
        let now = self.now();
        self.note_pod_event(pod);
        self.spot_pod_leaving(pod);
        let before = self.liveness(pod);
        let Some(p) = self.cluster.pod_mut(pod) else {
            return Ok(());
        };
        p.lifecycle.deleting_since = Some(now);
        let daemon = p.is_daemonset();
        self.recount(pod, before);
        self.evicting.remove(&pod);
        self.schedule(now + grace, Event::PodGone(pod))?;
        let w = self.pod_meta[pod.0 as usize].workload;
        if self.owners.workloads[w].kind() == super::TargetKind::Pod {
            self.pod_meta[pod.0 as usize].lost = true;
            self.record.churn.bare_pods_lost += 1;
        } else if !daemon {
            let object = self.owners.workloads[w].object();
            *self.record.churn.pod_restarts.entry(object).or_default() += 1;
            self.reconcile(w)?;
        }
        self.wake_scheduler()?;
        self.touch()
    }

    /// A terminating pod's grace is over: it leaves the node.
    pub(super) fn pod_gone(&mut self, pod: PodId) -> Result<(), EngineError> {
        let Some(p) = self.cluster.pod(pod) else {
            return Ok(());
        };
        if p.lifecycle.deleting_since.is_none() {
            return Ok(());
        }
        let node = p.node;
        let w = self.pod_meta[pod.0 as usize].workload;
        let lost = self.pod_meta[pod.0 as usize].lost;
        let before = self.liveness(pod);
        self.cluster.remove_pod(pod);
        self.recount(pod, before);
        self.spot_pod_removed(pod);
        self.evicting.remove(&pod);
        self.forget_attempts(pod);
        self.retire_bare_pod(pod);
        self.pod_meta[pod.0 as usize].removed = true;
        self.owners.workloads[w].pods.retain(|p| *p != pod);
        if !lost {
            self.reconcile(w)?;
        }
        self.mark_unconsolidated();
        self.wake_scheduler()?;
        self.touch()?;
        if let Some(node) = node {
            let now = self.now();
            self.schedule_drain(node, now)?;
        }
        Ok(())
    }

    /// The instance is terminated: billing stops, the node and whatever is
    /// still bound to it go (completed pods stay completed; pods that were
    /// ignored by the drain, or still running when EC2 reclaimed a spot
    /// instance, are deleted with the node, `why` in their event).
    pub(super) fn terminate_instance(
        &mut self,
        node: NodeId,
        why: &str,
    ) -> Result<(), EngineError> {
        let now = self.now();
        let Some(deleting) = self.node_meta[node.0 as usize].deleting.clone() else {
            return Ok(());
        };
        let pods: Vec<PodId> = self
            .cluster
            .node(node)
            .map(|n| n.pods.clone())
            .unwrap_or_default();
        for &pod in &pods {
            let Some(p) = self.cluster.pod(pod) else {
                continue;
            };
            if p.phase.is_terminal() {
                continue;
            }
            let w = self.pod_meta[pod.0 as usize].workload;
            let bare = self.owners.workloads[w].kind() == super::TargetKind::Pod;
            if bare && !p.is_daemonset() {
                self.pod_meta[pod.0 as usize].lost = true;
                self.record.churn.bare_pods_lost += 1;
            }
            self.remove_pod(pod, why)?;
            if !self.pod_meta[pod.0 as usize].lost {
                self.reconcile(w)?;
            }
        }
        let was_static = self.is_static_node(node);
        let billing = self.node_meta[node.0 as usize].billing;
        self.ledger
            .terminate(billing, now)
            .map_err(|e| self.ledger_error(e))?;
        let name = self.node_name(node);
        let meta = &mut self.node_meta[node.0 as usize];
        meta.deleted_at = Some(now);
        meta.reason_deleted = deleting.reason.clone();
        *self
            .record
            .churn
            .nodeclaims_terminated_by_reason
            .entry(deleting.reason.clone())
            .or_default() += 1;
        self.cluster.remove_node(node);
        for &pod in &pods {
            self.retire_bare_pod(pod);
        }
        self.record.bound.node_removed(node);
        if let Some(index) = self.node_meta[node.0 as usize].reservation {
            self.reserved_node_terminated(index)?;
        }
        if let Some(karpenter) = self.autoscaler.karpenter_mut() {
            karpenter.disruption.in_flight.remove(&node);
        }
        self.node_removed_from_caches();
        let drained_in = now.saturating_duration_since(deleting.since);
        self.log(
            EventType::Normal,
            "Terminated",
            format!("nodeclaim/{name}"),
            format!(
                "Instance terminated ({}) {drained_in} after deletion",
                deleting.reason
            ),
        );
        self.replacement_lost(node)?;
        if was_static {
            self.static_reconcile_soon()?;
        }
        self.mark_unconsolidated();
        self.wake_scheduler()?;
        self.touch()
    }

    /// Checks, when invariants are on, that the eviction of `pod` left
    /// every PDB selecting it at or above its minimum.
    fn check_pdbs_after_eviction(&mut self, pod: PodId) {
        if self.record.violations.is_none() {
            return;
        }
        let Some(p) = self.cluster.pod(pod) else {
            return;
        };
        let scales = self.controller_scales();
        let mut found = Vec::new();
        for pdb in &self.cluster.pdbs {
            let selected = pdb.namespace == p.spec.namespace
                && pdb
                    .selector
                    .as_ref()
                    .is_some_and(|s| s.matches(&p.spec.labels));
            if !selected {
                continue;
            }
            let status = pdb_status(pdb, &self.cluster, &scales);
            if status.current_healthy < status.desired_healthy {
                found.push(format!(
                    "{}: evicting {} left PDB {}/{} at {} healthy, below its minimum {}",
                    self.now(),
                    p.name,
                    pdb.namespace,
                    pdb.name,
                    status.current_healthy,
                    status.desired_healthy
                ));
            }
        }
        if let Some(v) = self.record.violations.as_mut() {
            v.extend(found);
        }
    }
}
