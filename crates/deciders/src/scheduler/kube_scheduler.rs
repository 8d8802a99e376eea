//! The kube-scheduler model: binds pending pods to registered nodes, one
//! pod at a time in queue order, as kube-scheduler's default profile does.
//!
//! Per pod: every registered node is filtered ([`crate::scheduler::filter`],
//! first failing plugin wins), the feasible ones are scored
//! ([`crate::scheduler::score`]) and the best is bound. Binds are kept in a
//! [`Placement`] overlay, so later pods in the same call see earlier ones
//! (requests, host ports, spread and affinity counts) without the cluster
//! being cloned.
//!
//! Deviations from kube-scheduler, all for determinism or scope:
//! - ties between equally scored nodes go to the node whose name sorts
//!   first (kube-scheduler picks one at random);
//! - every node is evaluated (no `percentageOfNodesToScore` sampling);
//! - no preemption, no scheduling gates, no volume plugins, no
//!   `nodeName`, no cluster-level default spread constraints;
//! - scoring covers NodeResourcesFit, NodeAffinity and TaintToleration only.
//!
//! Cost: with P pods to place, N registered nodes, T spread constraints and
//! affinity terms per pod and A placed pods' required anti-affinity terms,
//! a call takes O(P·(N·(1 + T) + A)) time. Allocations are O(P·T) (per-pod
//! domain count vectors) plus O(M·N) for the M distinct matchers; nothing is
//! allocated per (pod, node) pair except on nodes that fail (one tally
//! entry per distinct reason). Nodes without the pod's cpu, memory or pod
//! slots free (kept per node through the call's binds, and from call to
//! call while the node's revision stands) fail for sure and are skipped
//! unless no node fits, when the message needs their reasons.
//! Once a template's scan has failed, a [`FailureMemo`] kept across calls
//! has why each node failed it where the node alone decided; the
//! template's later scans filter only the nodes that changed since, came,
//! or took a pod earlier in the call (or whose reason read other nodes).
//! The nodes whose revision changed since the last call are found once
//! per call, so a template kept from that call, over the same nodes,
//! costs O(changed nodes) per scan; one kept from further back compares
//! every node's revision. A pod without topology terms
//! that follows one of its own spec bound just before keeps that pod's
//! feasible nodes and filters again only the node it went to. A pod's
//! scan over many nodes with room is split over the current rayon pool's
//! threads; the decisions do not depend on it.

use std::cmp::Reverse;
use std::collections::BTreeMap;
use std::sync::Arc;

use rayon::prelude::*;

use super::filter::{PodFilter, Unfit};
use super::placement::Placement;
pub use super::score::ScoringStrategy;
use super::score::{
    FIT_WEIGHT, NODE_AFFINITY_WEIGHT, TAINT_TOLERATION_WEIGHT, fit_score,
    intolerable_prefer_no_schedule, normalize, preferred_affinity, score_requests,
};
use crate::cluster::{Cluster, Node, NodeId, PodId, PodPhase};
use crate::kube::pod::PodSpec;
use crate::kube::resources::Resources;
use crate::kube::taints::Taint;
pub use memo::{FailureMemo, MessageCache, NodeSums};
use memo::{KeptNode, KeptReason, KeptScan, TaintClasses};

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
    /// `0/3 nodes are available: 1 node(s) had untolerated taint {…}, 2 Insufficient cpu.`
    /// (shared by the pods of one template that failed alike).
    Unschedulable(PodId, Arc<str>),
}

/// kube-scheduler's message when the cluster has no nodes at all.
pub const NO_NODES_MESSAGE: &str = "no nodes available to schedule pods";

/// Raw scores of one feasible node.
struct Candidate {
    node: NodeId,
    fit: i64,
    affinity: i64,
    taints: i64,
}

/// kube-scheduler as a controller: its settings and what its failed scans
/// found ([`FailureMemo`]), kept from call to call on one evolving cluster.
/// A fresh one decides exactly as [`schedule`] does; a kept one decides the
/// same, faster.
#[derive(Debug, Default)]
pub struct KubeScheduler {
    config: SchedulerConfig,
    memo: FailureMemo,
    node_sums: NodeSums,
    messages: MessageCache,
}

impl KubeScheduler {
    /// A scheduler with `config` and nothing remembered yet.
    pub fn new(config: SchedulerConfig) -> KubeScheduler {
        KubeScheduler {
            config,
            memo: FailureMemo::default(),
            node_sums: NodeSums::default(),
            messages: MessageCache::default(),
        }
    }

    /// Its settings.
    pub fn config(&self) -> &SchedulerConfig {
        &self.config
    }

    /// Decides where each of `pending` goes, as [`schedule`] does.
    pub fn schedule(&mut self, cluster: &Cluster, pending: &[PodId]) -> Vec<Decision> {
        schedule_remembering(
            cluster,
            pending,
            &self.config,
            &mut self.memo,
            &mut self.node_sums,
            &mut self.messages,
        )
    }
}

/// Decides, in kube-scheduler's queue order, where each of `pending` goes.
/// Pods bound earlier in the same call count against later ones.
///
/// Queue order is PrioritySort: higher priority first, then earlier
/// creation (uid). Pods in `pending` that are unknown, already bound or
/// finished get no decision; duplicates are decided once. Decisions come
/// back in queue order.
pub fn schedule(cluster: &Cluster, pending: &[PodId], config: &SchedulerConfig) -> Vec<Decision> {
    schedule_remembering(
        cluster,
        pending,
        config,
        &mut FailureMemo::default(),
        &mut NodeSums::default(),
        &mut MessageCache::default(),
    )
}

/// [`schedule`] with `memo` kept across calls on the same evolving
/// cluster: once a template's scan failed, its later scans filter again
/// only the nodes that changed since (the decisions are the same).
fn schedule_remembering(
    cluster: &Cluster,
    pending: &[PodId],
    config: &SchedulerConfig,
    memo: &mut FailureMemo,
    node_sums: &mut NodeSums,
    messages: &mut MessageCache,
) -> Vec<Decision> {
    let mut queue = Vec::with_capacity(pending.len());
    queue.extend(
        pending
            .iter()
            .filter_map(|&id| cluster.pod(id).map(|pod| (id, pod)))
            .filter(|(_, pod)| pod.node.is_none() && pod.phase == PodPhase::Pending),
    );
    // The key ends with the pod id, so no two pods tie and an unstable sort
    // gives the stable order.
    queue.sort_unstable_by_key(|(id, pod)| (Reverse(pod.spec.priority), pod.uid, *id));
    queue.dedup_by_key(|(id, _)| *id);
    if queue.is_empty() {
        return Vec::new();
    }

    let mut nodes = Vec::with_capacity(cluster.node_count());
    nodes.extend(cluster.nodes().filter(|(_, n)| n.registered));
    let changes = memo.begin_call(cluster, &nodes);
    let mut placement = Placement::new(cluster);
    // Scoring weighs pods without requests at defaults: keep those sums
    // apart, summed for a node the first time it is feasible unless kept
    // from an earlier call; by position in `nodes` (in id order), as a long
    // run gives out far more node ids than it has nodes. Also free cpu,
    // memory and pod slots per node, following this call's binds.
    let (mut score_requested, mut free) = node_sums.seed(cluster, &nodes, &changes);

    let mut decisions = Vec::with_capacity(queue.len());
    let mut outcome = ScanOutcome::default();
    // Pods of one template that found no node since the last bind: a pod
    // with the same spec meets the same nodes in the same state, so it
    // fails with the same message (kept only for pods whose filters read
    // nothing but the node they check and the pods bound so far).
    let mut failed_since_bind: Vec<(&PodSpec, Arc<str>)> = Vec::new();
    // The last pod, when it had no topology terms and was bound: its spec
    // and the node it went to (by position in `nodes`). The next pod of
    // that spec finds every other node as the last one did (its filters
    // read only the node they check, and the bind changed one node), so
    // its scan keeps the last feasible nodes and judges that node again.
    let mut last_bound: Option<(&PodSpec, usize)> = None;
    for (pod_id, pod) in queue {
        let spec = pod.spec.as_ref();
        let plain = !spec.has_topology_terms();
        // Replicas queue together: the spec that failed last is looked at
        // first.
        if plain
            && let Some((_, message)) = failed_since_bind
                .iter()
                .rev()
                .find(|(failed, _)| std::ptr::eq(*failed, spec))
        {
            decisions.push(Decision::Unschedulable(pod_id, message.clone()));
            last_bound = None;
            continue;
        }
        let filter = PodFilter::new(spec, &mut placement);
        let pod_weight = score_requests(&spec.requests);
        let scan = NodeScan {
            placement: &placement,
            filter: &filter,
            scoring: config.scoring,
            pod_weight,
            want: Room::of(&spec.requests),
        };
        let repeated = last_bound
            .filter(|&(last, _)| plain && std::ptr::eq(last, spec))
            .map(|(_, position)| position);
        if let Some(position) = repeated {
            scan.rejudge(&nodes, position, &free, &mut score_requested, &mut outcome);
        }
        if repeated.is_none() || outcome.feasible.is_empty() {
            outcome.feasible.clear();
            outcome.failures.clear();
            if let Some(mut kept) = memo.take(&pod.spec) {
                // A scan kept from this call or the last, over the same
                // nodes, says which nodes it must look at again.
                let since = match kept.call {
                    call if call == changes.call => Some(&[][..]),
                    call if call + 1 == changes.call && changes.same_nodes => {
                        Some(&changes.changed[..])
                    }
                    _ => None,
                }
                .filter(|_| kept.nodes.len() == nodes.len());
                match since {
                    Some(changed) => {
                        let bound = placement.nodes_with_binds().filter_map(|id| {
                            nodes.binary_search_by_key(&id, |(node, _)| *node).ok()
                        });
                        let attend: Vec<usize> = changed.iter().copied().chain(bound).collect();
                        scan.run_changed(
                            &nodes,
                            &mut score_requested,
                            (&mut kept, changes.call),
                            attend,
                            &mut outcome,
                        );
                    }
                    None => {
                        scan.run_kept(&nodes, &mut score_requested, &mut kept, &mut outcome);
                        kept.index(changes.call);
                    }
                }
                memo.keep(&pod.spec, kept);
            } else {
                scan.run_over(&nodes, &free, &mut score_requested, &mut outcome);
                if outcome.feasible.is_empty() {
                    // The message tallies every node by its first failing
                    // plugin; what it finds is kept for the next scan.
                    let mut kept =
                        scan.run_short(&nodes, &free, &mut score_requested, &mut outcome);
                    kept.index(changes.call);
                    memo.keep(&pod.spec, kept);
                }
            }
        }
        drop(filter);
        let Some(best) = best_node(cluster, &outcome.feasible) else {
            let message: Arc<str> = messages.get(nodes.len(), &outcome.failures, || {
                unschedulable_message(cluster, nodes.len(), &outcome.failures)
            });
            if plain {
                failed_since_bind.push((spec, message.clone()));
            }
            decisions.push(Decision::Unschedulable(pod_id, message));
            last_bound = None;
            continue;
        };
        failed_since_bind.clear();
        placement.bind(pod_id, best);
        let position = nodes.binary_search_by_key(&best, |(id, _)| *id);
        last_bound = position.ok().filter(|_| plain).map(|p| (spec, p));
        if let Ok(p) = position {
            free[p].take(&spec.requests);
        }
        if let Some([cpu, mem]) = position.ok().and_then(|p| score_requested[p].as_mut()) {
            *cpu += pod_weight[0];
            *mem += pod_weight[1];
        }
        decisions.push(Decision::Bind(pod_id, best));
    }
    memo.end_call();
    let bound = placement
        .nodes_with_binds()
        .filter_map(|id| nodes.binary_search_by_key(&id, |(node, _)| *node).ok());
    node_sums.keep(&nodes, score_requested, free, bound);
    decisions
}

/// Free cpu, memory and pod slots of a node, or the requests of a pod.
#[derive(Debug, Clone, Copy)]
struct Room([i64; 3]);

impl Room {
    /// What `node` has free.
    fn free_on(node: &Node) -> Room {
        Room::of(&(node.allocatable - node.requested))
    }

    fn of(amounts: &Resources) -> Room {
        Room([amounts.cpu_millis(), amounts.memory_bytes(), amounts.pods()])
    }

    /// Whether a pod wanting `self` may fit `free`: false only when it
    /// requests more of one of these than is free, which fails
    /// NodeResourcesFit (or an earlier plugin).
    fn may_fit(&self, free: &Room) -> bool {
        self.0
            .iter()
            .zip(&free.0)
            .all(|(&want, &have)| want <= 0 || want <= have)
    }

    fn take(&mut self, requests: &Resources) {
        let want = Room::of(requests);
        for (have, want) in self.0.iter_mut().zip(want.0) {
            *have -= want;
        }
    }
}

/// Nodes one thread filters at a time when a scan is split.
const NODES_PER_TASK: usize = 128;

/// What filtering and scoring one pod against nodes reads.
struct NodeScan<'p, 'c, 's> {
    placement: &'p Placement<'c>,
    filter: &'p PodFilter<'s>,
    scoring: ScoringStrategy,
    pod_weight: [i64; 2],
    /// The pod's cpu, memory and pod requests: a node without that much
    /// free is sure to fail (NodeResourcesFit or an earlier plugin), so
    /// while feasible nodes are sought it is skipped; only when none is
    /// found are the skipped nodes filtered, for the message's tally.
    want: Room,
}

/// The feasible nodes and the failure tally of a scan (or of part of it).
#[derive(Default)]
struct ScanOutcome<'c> {
    feasible: Vec<Candidate>,
    failures: Vec<(Unfit<'c>, usize)>,
}

impl<'c> NodeScan<'_, 'c, '_> {
    /// Filters the nodes the room check lets through, on the current rayon
    /// pool's threads when there are many.
    fn run_over(
        &self,
        nodes: &[(NodeId, &'c Node)],
        free: &[Room],
        score_requested: &mut [Option<[i64; 2]>],
        outcome: &mut ScanOutcome<'c>,
    ) {
        // Only the nodes with room are filtered: split when they are many
        // (counted only as far as that, and only with threads to split on).
        let many_with_room = || {
            free.iter()
                .filter(|free| self.want.may_fit(free))
                .nth(2 * NODES_PER_TASK - 1)
                .is_some()
        };
        if rayon::current_num_threads() > 1 && many_with_room() {
            // Nodes are filtered on their own: side by side on the current
            // rayon pool's threads. The outcome does not depend on the
            // order parts come back in (the best node is chosen by score
            // and name, failures are tallied), but they are joined in node
            // order anyway.
            let parts: Vec<ScanOutcome<'_>> = nodes
                .par_chunks(NODES_PER_TASK)
                .zip(free.par_chunks(NODES_PER_TASK))
                .zip(score_requested.par_chunks_mut(NODES_PER_TASK))
                .map(|((nodes, free), scores)| {
                    let mut part = ScanOutcome::default();
                    self.run(nodes, free, scores, &mut part);
                    part
                })
                .collect();
            for part in parts {
                outcome.feasible.extend(part.feasible);
                for (unfit, count) in part.failures {
                    tally(&mut outcome.failures, unfit, count);
                }
            }
        } else {
            self.run(nodes, free, score_requested, outcome);
        }
    }

    /// Filters the nodes [`Self::run_over`] skipped, for the message's
    /// tally, and returns what the scan found for the template's next one:
    /// every node with its revision and, where it failed for a reason of
    /// its own (see [`Unfit::node_local`]) and took no pod earlier in this
    /// call, that reason. The nodes with room were filtered by `run_over`:
    /// the next scan filters them again.
    fn run_short(
        &self,
        nodes: &[(NodeId, &'c Node)],
        free: &[Room],
        score_requested: &mut [Option<[i64; 2]>],
        outcome: &mut ScanOutcome<'c>,
    ) -> KeptScan {
        let cluster = self.placement.cluster();
        let mut kept = KeptScan {
            nodes: Vec::with_capacity(nodes.len()),
            ..KeptScan::default()
        };
        let mut failures = RunTally::default();
        for (position, &(id, node)) in nodes.iter().enumerate() {
            let mut reason = None;
            if !self.want.may_fit(&free[position]) {
                match self.judge(id, node, &mut score_requested[position]) {
                    Ok(candidate) => outcome.feasible.push(candidate),
                    Err(unfit) => {
                        failures.add(&mut outcome.failures, unfit);
                        if !self.placement.has_binds_on(id) {
                            reason = KeptReason::of(unfit, node, &mut kept.taint_classes);
                        }
                    }
                }
            }
            if let Some(KeptReason::Own(reason)) = reason {
                tally(&mut kept.tally, reason, 1);
            }
            kept.nodes.push(KeptNode {
                id,
                revision: cluster.node_revision(id),
                reason,
            });
        }
        failures.finish(&mut outcome.failures);
        kept
    }

    /// A scan of every node for a template whose last failed scan is
    /// `kept`: a node it kept a reason for, unchanged since and without a
    /// pod bound to it earlier in this call, fails again for that reason
    /// (counted from the kept tally); the others are filtered. `kept`
    /// becomes this scan's.
    fn run_kept(
        &self,
        nodes: &[(NodeId, &'c Node)],
        score_requested: &mut [Option<[i64; 2]>],
        kept: &mut KeptScan,
        outcome: &mut ScanOutcome<'c>,
    ) {
        let cluster = self.placement.cluster();
        let KeptScan {
            nodes: kept_nodes,
            tally: kept_tally,
            taint_classes,
            ..
        } = kept;
        outcome.failures.extend(kept_tally.iter().copied());
        let mut next = 0;
        let mut gone = false;
        let mut came: Vec<KeptNode> = Vec::new();
        let mut failures = RunTally::default();
        for (position, &(id, node)) in nodes.iter().enumerate() {
            while let Some(was) = kept_nodes.get_mut(next).filter(|was| was.id < id) {
                forget_gone(was, kept_tally, &mut outcome.failures);
                gone = true;
                next += 1;
            }
            let revision = cluster.node_revision(id);
            let as_in_cluster = !self.placement.has_binds_on(id);
            let mut entry = match kept_nodes.get_mut(next) {
                Some(was) if was.id == id => {
                    next += 1;
                    Some(was)
                }
                _ => None,
            };
            if let Some(was) = entry.as_deref_mut() {
                if was.revision == revision && as_in_cluster {
                    match was.reason {
                        Some(KeptReason::Own(_)) => continue,
                        Some(KeptReason::Taint { at, class }) => {
                            if let Some(taint) = node.taints.get(at) {
                                failures.add_taint(&mut outcome.failures, taint, class);
                                continue;
                            }
                        }
                        None => {}
                    }
                }
                forget(was.reason.take(), kept_tally, &mut outcome.failures);
            }
            let score = &mut score_requested[position];
            let reason = self.judge_for_kept(
                (id, node),
                score,
                as_in_cluster,
                (&mut failures, taint_classes),
                outcome,
            );
            if let Some(KeptReason::Own(reason)) = reason {
                tally(kept_tally, reason, 1);
            }
            let now = KeptNode {
                id,
                revision,
                reason,
            };
            match entry {
                Some(was) => *was = now,
                None => came.push(now),
            }
        }
        failures.finish(&mut outcome.failures);
        for was in &mut kept_nodes[next..] {
            forget_gone(was, kept_tally, &mut outcome.failures);
            gone = true;
        }
        if gone {
            kept_nodes.retain(|node| node.revision != GONE);
        }
        merge_by_id(kept_nodes, came);
    }

    /// [`Self::run_kept`] for a scan `kept` made in this call or the last
    /// over the same nodes, so that it is known which nodes may have
    /// changed since: those at the positions of `attend` (whose revision
    /// changed since the last call, or that took a pod earlier in this
    /// one). They, and the nodes without a kept reason, are filtered
    /// again (each of them changed, took a pod or has no reason kept, so
    /// none is asked whether its kept reason stands); the nodes kept
    /// failing on a taint are counted by it; the others fail as they did.
    fn run_changed(
        &self,
        nodes: &[(NodeId, &'c Node)],
        score_requested: &mut [Option<[i64; 2]>],
        (kept, call): (&mut KeptScan, u64),
        mut attend: Vec<usize>,
        outcome: &mut ScanOutcome<'c>,
    ) {
        let cluster = self.placement.cluster();
        attend.extend_from_slice(&kept.unkept);
        attend.sort_unstable();
        attend.dedup();
        outcome.failures.extend(kept.tally.iter().copied());
        let mut failures = RunTally::default();
        // Nodes kept failing on a taint and not looked at again (an
        // unchanged node has the taint still; one that had not would be
        // filtered again).
        let mut tainted = Vec::with_capacity(kept.tainted.len());
        let mut taint_gone = Vec::new();
        for &(position, at, class) in &kept.tainted {
            if attend.binary_search(&position).is_ok() {
                continue;
            }
            match nodes[position].1.taints.get(at) {
                Some(taint) => {
                    failures.add_taint(&mut outcome.failures, taint, class);
                    tainted.push((position, at, class));
                }
                None => taint_gone.push(position),
            }
        }
        attend.extend(taint_gone);
        let mut unkept = Vec::new();
        for &position in &attend {
            let (id, node) = nodes[position];
            let was = &mut kept.nodes[position];
            let revision = cluster.node_revision(id);
            let as_in_cluster = !self.placement.has_binds_on(id);
            forget(was.reason.take(), &mut kept.tally, &mut outcome.failures);
            let score = &mut score_requested[position];
            let reason = self.judge_for_kept(
                (id, node),
                score,
                as_in_cluster,
                (&mut failures, &mut kept.taint_classes),
                outcome,
            );
            *was = KeptNode {
                id,
                revision,
                reason,
            };
            match reason {
                Some(KeptReason::Own(reason)) => tally(&mut kept.tally, reason, 1),
                Some(KeptReason::Taint { at, class }) => tainted.push((position, at, class)),
                None => unkept.push(position),
            }
        }
        failures.finish(&mut outcome.failures);
        kept.unkept = unkept;
        kept.tainted = tainted;
        kept.call = call;
    }

    /// Filters one node for a kept scan: a feasible node joins the
    /// outcome, a failing one the tally, with its reason to keep (see
    /// [`KeptReason::of`]) unless it took a pod earlier in this call.
    fn judge_for_kept(
        &self,
        (id, node): (NodeId, &'c Node),
        score: &mut Option<[i64; 2]>,
        as_in_cluster: bool,
        (failures, taint_classes): (&mut RunTally<'c>, &mut TaintClasses),
        outcome: &mut ScanOutcome<'c>,
    ) -> Option<KeptReason> {
        match self.judge(id, node, score) {
            Ok(candidate) => {
                outcome.feasible.push(candidate);
                None
            }
            Err(unfit) => {
                failures.add(&mut outcome.failures, unfit);
                if as_in_cluster {
                    KeptReason::of(unfit, node, taint_classes)
                } else {
                    None
                }
            }
        }
    }

    /// The last scan's feasible nodes, for a pod of the spec the last pod
    /// had, bound to the node at `position`: that node is judged again
    /// (skipped if its room no longer fits), the others stay as they were.
    /// Failures are not tallied: a scan that finds no node is made again
    /// in full for its message.
    fn rejudge(
        &self,
        nodes: &[(NodeId, &'c Node)],
        position: usize,
        free: &[Room],
        score_requested: &mut [Option<[i64; 2]>],
        outcome: &mut ScanOutcome<'c>,
    ) {
        let (id, node) = nodes[position];
        outcome.feasible.retain(|c| c.node != id);
        if self.want.may_fit(&free[position])
            && let Ok(candidate) = self.judge(id, node, &mut score_requested[position])
        {
            outcome.feasible.push(candidate);
        }
    }

    /// Filters `nodes` that the room check lets through (with their free
    /// room and their slots of the per-node score sums, summed the first
    /// time a node is feasible), adding the feasible ones with their raw
    /// scores and tallying why the others fail.
    fn run(
        &self,
        nodes: &[(NodeId, &'c Node)],
        free: &[Room],
        score_requested: &mut [Option<[i64; 2]>],
        outcome: &mut ScanOutcome<'c>,
    ) {
        let mut failures = RunTally::default();
        for ((&(id, node), free), score) in nodes.iter().zip(free).zip(score_requested) {
            if !self.want.may_fit(free) {
                continue;
            }
            match self.judge(id, node, score) {
                Ok(candidate) => outcome.feasible.push(candidate),
                Err(unfit) => failures.add(&mut outcome.failures, unfit),
            }
        }
        failures.finish(&mut outcome.failures);
    }

    /// Filters one node (with its slot of the per-node score sums, summed
    /// the first time it is feasible): its raw scores, or why it fails.
    fn judge(
        &self,
        id: NodeId,
        node: &'c Node,
        score: &mut Option<[i64; 2]>,
    ) -> Result<Candidate, Unfit<'c>> {
        self.filter.check(self.placement, id, node)?;
        let spec = self.filter.spec();
        let [cpu, mem] =
            *score.get_or_insert_with(|| summed_score_requests(self.placement.pods_on(id, node)));
        let requested = [cpu + self.pod_weight[0], mem + self.pod_weight[1]];
        let allocatable = [
            node.allocatable.cpu_millis(),
            node.allocatable.memory_bytes(),
        ];
        Ok(Candidate {
            node: id,
            fit: fit_score(self.scoring, requested, allocatable),
            affinity: preferred_affinity(spec, &node.labels),
            taints: intolerable_prefer_no_schedule(&node.taints, &spec.tolerations),
        })
    }
}

/// The cpu and memory scoring weighs `pods` at, summed (see
/// [`score_requests`]).
fn summed_score_requests<'s>(pods: impl Iterator<Item = &'s PodSpec>) -> [i64; 2] {
    pods.fold([0, 0], |[cpu, mem], spec| {
        let [c, m] = score_requests(&spec.requests);
        [cpu + c, mem + m]
    })
}

/// Failures tallied as they come, nodes in a row that fail alike counted
/// together (neighbouring nodes are often alike).
#[derive(Default)]
struct RunTally<'c> {
    run: Option<(Unfit<'c>, usize)>,
    /// When the run is of an untolerated taint added with its class (see
    /// [`TaintClasses`]): that class.
    taint_class: Option<u32>,
}

impl<'c> RunTally<'c> {
    /// Counts one node failing for `unfit` (the run so far goes to
    /// `failures` when this one differs).
    #[inline]
    fn add(&mut self, failures: &mut Vec<(Unfit<'c>, usize)>, unfit: Unfit<'c>) {
        self.taint_class = None;
        match &mut self.run {
            Some((last, count)) if *last == unfit => *count += 1,
            run => {
                if let Some((last, count)) = run.replace((unfit, 1)) {
                    tally(failures, last, count);
                }
            }
        }
    }

    /// [`RunTally::add`] for a node failing on `taint` of class `class`:
    /// a run of that class is extended without comparing taints.
    #[inline]
    fn add_taint(&mut self, failures: &mut Vec<(Unfit<'c>, usize)>, taint: &'c Taint, class: u32) {
        match &mut self.run {
            Some((_, count)) if self.taint_class == Some(class) => *count += 1,
            _ => {
                self.add(failures, Unfit::UntoleratedTaint(taint));
                self.taint_class = Some(class);
            }
        }
    }

    /// Adds the run so far to `failures`.
    fn finish(self, failures: &mut Vec<(Unfit<'c>, usize)>) {
        if let Some((last, count)) = self.run {
            tally(failures, last, count);
        }
    }
}

/// Adds `count` nodes failing for `unfit` to the tally.
fn tally<'c>(failures: &mut Vec<(Unfit<'c>, usize)>, unfit: Unfit<'c>, count: usize) {
    match failures.iter_mut().find(|(u, _)| *u == unfit) {
        Some((_, n)) => *n += count,
        None => failures.push((unfit, count)),
    }
}

/// Adds the nodes of `came` (in id order, none of them in `nodes`) to
/// `nodes` (in id order), keeping the order.
fn merge_by_id(nodes: &mut Vec<KeptNode>, came: Vec<KeptNode>) {
    let Some(first) = came.first() else {
        return;
    };
    if nodes.last().is_none_or(|last| last.id < first.id) {
        nodes.extend(came);
        return;
    }
    let was = std::mem::take(nodes);
    nodes.reserve(was.len() + came.len());
    let (mut was, mut came) = (was.into_iter().peekable(), came.into_iter().peekable());
    while let (Some(a), Some(b)) = (was.peek(), came.peek()) {
        let next = if a.id < b.id { was.next() } else { came.next() };
        nodes.extend(next);
    }
    nodes.extend(was);
    nodes.extend(came);
}

/// Marks a kept node that is gone (see [`forget_gone`]).
const GONE: u64 = u64::MAX;

/// A kept reason that no longer stands leaves both tallies (a taint is in
/// neither: it is counted scan by scan).
fn forget<'c>(
    reason: Option<KeptReason>,
    kept_tally: &mut Vec<(Unfit<'static>, usize)>,
    failures: &mut Vec<(Unfit<'c>, usize)>,
) {
    if let Some(KeptReason::Own(reason)) = reason {
        untally(kept_tally, reason);
        untally(failures, reason);
    }
}

/// A kept node that is no longer registered: its reason leaves both
/// tallies and it is marked [`GONE`], to be dropped from the list.
fn forget_gone<'c>(
    was: &mut KeptNode,
    kept_tally: &mut Vec<(Unfit<'static>, usize)>,
    failures: &mut Vec<(Unfit<'c>, usize)>,
) {
    forget(was.reason.take(), kept_tally, failures);
    was.revision = GONE;
}

/// Takes one node failing for `unfit` off the tally.
fn untally<'c>(failures: &mut Vec<(Unfit<'c>, usize)>, unfit: Unfit<'c>) {
    if let Some(at) = failures.iter().position(|(u, _)| *u == unfit) {
        failures[at].1 -= 1;
        if failures[at].1 == 0 {
            failures.swap_remove(at);
        }
    }
}

/// The highest weighted total after normalisation; ties go to the smallest
/// node name.
fn best_node(cluster: &Cluster, feasible: &[Candidate]) -> Option<NodeId> {
    let max_affinity = feasible.iter().map(|c| c.affinity).max()?;
    let max_taints = feasible.iter().map(|c| c.taints).max()?;
    let name = |id: NodeId| cluster.node(id).map_or("", |n| n.name.as_str());
    feasible
        .iter()
        .map(|c| {
            let total = FIT_WEIGHT * c.fit
                + NODE_AFFINITY_WEIGHT * normalize(c.affinity, max_affinity, false)
                + TAINT_TOLERATION_WEIGHT * normalize(c.taints, max_taints, true);
            (total, c.node)
        })
        .max_by(|(a, a_id), (b, b_id)| a.cmp(b).then_with(|| name(*b_id).cmp(name(*a_id))))
        .map(|(_, id)| id)
}

/// kube-scheduler's FitError text: `0/N nodes are available: ` then
/// `"<count> <reason>"` entries sorted as strings (as upstream sorts them),
/// comma-separated, ending with a period.
pub fn unschedulable_message(
    cluster: &Cluster,
    node_count: usize,
    failures: &[(Unfit<'_>, usize)],
) -> String {
    if node_count == 0 {
        return NO_NODES_MESSAGE.to_string();
    }
    let mut histogram: BTreeMap<String, usize> = BTreeMap::new();
    for (unfit, count) in failures {
        for reason in unfit.messages(&cluster.resource_names) {
            *histogram.entry(reason).or_default() += count;
        }
    }
    let mut entries: Vec<String> = histogram
        .into_iter()
        .map(|(reason, count)| format!("{count} {reason}"))
        .collect();
    entries.sort();
    format!(
        "0/{node_count} nodes are available: {}.",
        entries.join(", ")
    )
}

mod memo;
#[cfg(test)]
mod tests;
