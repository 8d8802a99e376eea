//! The scheduling simulation behind consolidation, drift and validation
//! (core: disruption/helpers.go `SimulateScheduling`, provisioning/
//! scheduling/scheduler.go `IsConsolidationSimulation`): would the pods of
//! some candidate nodes, together with every pending pod and the pods of
//! nodes already being deleted, fit on the rest of the cluster plus new
//! NodeClaims?
//!
//! `solve` skips nodes that are marked for deletion; a simulation's solve
//! takes as marked the deleting nodes and the nodes it excludes (the
//! candidates, and for consolidation the nodes still inside their
//! `consolidateAfter` window), without copying the cluster. Upstream only
//! keeps *candidate* pods off nodes inside their window (pending pods and pods of deleting nodes may still
//! land there); `solve` has no per-pod destination filter, so here those
//! nodes are closed to every pod of a consolidation simulation — stricter
//! only when pending pods would otherwise have used them.
//!
//! The placement view of every node is made at most once per pass (the
//! first simulation asks for it; when no node changed since the last
//! build, that build is taken whole) and shared by all of the pass's
//! solves: closing nodes changes only which views a solve uses, never the
//! views. The nodes every simulation of a kind closes (deleting nodes, and
//! for consolidation the nodes inside their window) are closed once per
//! pass in a [`Closure`] (or one kept with the views for those very
//! nodes); each simulation closes only its candidates on top.

use std::borrow::Cow;
use std::collections::BTreeSet;
use std::sync::{Arc, OnceLock};

use super::candidates::consolidate_after_since;
use super::types::PassInput;
use super::types::{Amounts, Candidate, NodePoolsByName, PoolLookup, amounts, pool_lookup};
use crate::karpenter::provisioning::{
    Closure, ExistingNodes, OpenViews, Prepared, PresortedQueue, PriceToBeat, ProvisioningInput,
    QueueRun, SchedulingResult, SolveSetup, StopEarly, presorted_queue_starts_with,
    queue_starts_with, solve_with_closure,
};
use crate::locked_map::LockedMap;
use crate::nodepool::NodePool;
use crate::pdb::PdbLimits;
use crate::pods::{do_not_disrupt_ends, is_disruptable, is_reschedulable};
use crate::scheduler::{Cluster, Node, NodeId, Pod, PodId};
use crate::time::SimDuration;

/// The cluster as the disruption simulations of one pass see it.
#[derive(Debug, Clone)]
pub struct SimulationView {
    /// Nodes being deleted (closed to every simulation).
    deleting: Vec<NodeId>,
    pending: BTreeSet<PodId>,
    /// `pending` in order (what every simulation places first).
    pending_in_order: Vec<PodId>,
    /// The nodes a pending pod is bound to, sorted (only their pods can be
    /// pending ones).
    nodes_with_pending: Vec<NodeId>,
    deleting_node_pods: Vec<PodId>,
    deleting_node_pod_set: BTreeSet<PodId>,
    under_consolidate_after: Vec<NodeId>,
    /// The solve setup of this view's simulations when the input brought
    /// none: built once, shared by every simulation of the pass.
    prepared: Option<Arc<Prepared>>,
    /// Every node's placement view, built by the first simulation.
    existing: OnceLock<Arc<ExistingNodes>>,
    /// The deleting nodes closed, for drift and validation simulations.
    deleting_closure: OnceLock<Arc<Closure>>,
    /// The deleting nodes and those inside their `consolidateAfter` window
    /// closed, for consolidation simulations.
    consolidation_closure: OnceLock<Arc<Closure>>,
    /// Per single candidate, what [`Self::pods_to_place`] found (asked for
    /// by the kept-verdict check and again by the simulation).
    pods_of_one: LockedMap<NodeId, Arc<PodsToPlace>>,
    /// The pending pods and the deleting nodes' pods in queue order, which
    /// every simulation places: built by the first simulation.
    shared_queue: OnceLock<[QueueRun; 2]>,
    /// Whether every pending pod and every deleting node's pod is free of
    /// topology terms: found on first use.
    shared_topology_free: OnceLock<bool>,
}

/// The parts of a [`SimulationView`] that depend on the instant and the
/// deleting nodes: the deleting nodes, their pods a simulation places, and
/// the nodes inside their `consolidateAfter` window.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ViewInputs {
    deleting: Vec<NodeId>,
    deleting_node_pods: Vec<PodId>,
    under_consolidate_after: Vec<NodeId>,
}

/// What [`SimulationView::pods_to_place`] returns, shared by a pass's
/// kept-verdict check, its simulation and the verdict it keeps.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct PodsToPlace {
    /// The pods to place, in order.
    pub pods: Vec<PodId>,
    /// The candidates' own, in order.
    pub own: Vec<PodId>,
}

/// What one simulation found.
#[derive(Debug, Clone, Default)]
pub struct Simulation {
    /// The solve's result, with pods that landed on uninitialized nodes
    /// moved to its errors.
    pub result: SchedulingResult,
    /// Errors of pods that were not pending before (only these block).
    pub non_pending_errors: Vec<(PodId, String)>,
    /// The pods the solve was given, in its input order.
    pub(crate) pods: Arc<PodsToPlace>,
    /// Where the solve put pods on existing nodes, uninitialized ones
    /// included (before those placements became errors).
    pub placed_on_existing: Vec<(PodId, NodeId)>,
}

impl Simulation {
    /// Every non-pending pod found a home.
    pub fn all_non_pending_scheduled(&self) -> bool {
        self.non_pending_errors.is_empty()
    }
}

/// Whether the node's NodeClaim is still inside its pool's
/// `consolidateAfter` window (upstream `IsUnderConsolidateAfter`): a zero
/// or `Never` window, or an uninitialized NodeClaim, is never "under".
fn is_under_consolidate_after<'p>(
    input: &PassInput<'_>,
    node: &Node,
    pools: &mut PoolLookup<'p, impl Fn(&str) -> Option<&'p NodePool>>,
) -> bool {
    let Some(claim) = &node.claim else {
        return false;
    };
    let Some(pool) = pools.get(&claim.nodepool) else {
        return false;
    };
    let Some(after) = pool.disruption.consolidate_after else {
        return false;
    };
    if after.is_zero() || !node.initialized {
        return false;
    }
    let since = consolidate_after_since(node, claim);
    let after = SimDuration::from_std(after);
    input.turns_at(since + after);
    input.now.saturating_duration_since(since) < after
}

/// Nodes being deleted: marked for deletion, instance terminating, or in
/// the orchestration queue.
fn is_deleting(input: &PassInput<'_>, id: NodeId, node: &Node) -> bool {
    input.in_flight.contains(&id)
        || node.marked_for_deletion
        || node
            .claim
            .as_ref()
            .is_some_and(|c| c.lifecycle.instance_terminating)
}

/// Whether where the pod may go reads no other pod.
pub(crate) fn topology_free(cluster: &Cluster, pod: PodId) -> bool {
    cluster
        .pod(pod)
        .is_some_and(|p| !p.spec.has_topology_terms())
}

/// Whether some node is among `candidates` more than once.
fn repeats_a_node(candidates: &[&Candidate]) -> bool {
    if candidates.len() < 2 {
        return false;
    }
    let mut nodes: Vec<NodeId> = candidates.iter().map(|c| c.node).collect();
    nodes.sort_unstable();
    nodes.windows(2).any(|pair| pair[0] == pair[1])
}

/// A simulation's queue runs (see `SimulationView::queue_runs`).
struct QueueRuns<'s> {
    /// Pending pods, deleting nodes' pods, and the candidate's when
    /// presorted (else a repeat of the second, unread).
    runs: [&'s QueueRun; 3],
    /// The candidates' pods, unless presorted.
    own: Option<&'s [PodId]>,
}

impl QueueRuns<'_> {
    fn queue(&self) -> PresortedQueue<'_> {
        match self.own {
            None => PresortedQueue {
                shared: &self.runs,
                own: &[],
            },
            Some(own) => PresortedQueue {
                shared: &self.runs[..2],
                own,
            },
        }
    }
}

/// Upstream `IsCurrentlyReschedulable`: reschedulable, disruptable, and not
/// held in place for good by a fully blocking PDB.
/// A pod's do-not-disrupt protection, which also takes it out of its PDBs'
/// reach, may end with time.
fn currently_reschedulable(input: &PassInput<'_>, pod: &Pod, pdbs: &PdbLimits) -> bool {
    if let Some(ends) = do_not_disrupt_ends(pod) {
        input.turns_at(ends);
    }
    let now = input.now;
    is_reschedulable(pod) && is_disruptable(pod, now) && !pdbs.is_fully_blocked(pod, now)
}

impl SimulationView {
    /// The deleting nodes and their pods, and the nodes inside their
    /// `consolidateAfter` window, of `input`'s cluster (its NodePools by
    /// name: `pools`): every simulation must be given the same `input`.
    pub(crate) fn new(
        input: &PassInput<'_>,
        pools: &NodePoolsByName<'_>,
        pdbs: &PdbLimits,
    ) -> SimulationView {
        let mut deleting = Vec::new();
        let mut under_consolidate_after = Vec::new();
        let mut pools = pool_lookup(pools);
        for (id, node) in input.cluster.nodes() {
            if is_deleting(input, id, node) {
                deleting.push(id);
            } else if is_under_consolidate_after(input, node, &mut pools) {
                under_consolidate_after.push(id);
            }
        }
        let pending: BTreeSet<PodId> = input.pending.iter().copied().collect();
        let mut deleting_node_pods = Vec::new();
        for &id in &deleting {
            let pods = input.cluster.node(id).map_or(&[][..], |n| &n.pods[..]);
            deleting_node_pods.extend(pods.iter().copied().filter(|&p| {
                !pending.contains(&p)
                    && input
                        .cluster
                        .pod(p)
                        .is_some_and(|pod| currently_reschedulable(input, pod, pdbs))
            }));
        }
        let mut nodes_with_pending: Vec<NodeId> = pending
            .iter()
            .filter_map(|&p| input.cluster.pod(p)?.node)
            .collect();
        nodes_with_pending.sort_unstable();
        nodes_with_pending.dedup();
        SimulationView {
            deleting,
            nodes_with_pending,
            pending_in_order: pending.iter().copied().collect(),
            pending,
            deleting_node_pod_set: deleting_node_pods.iter().copied().collect(),
            deleting_node_pods,
            under_consolidate_after,
            prepared: input
                .prepared
                .is_none()
                .then(|| Arc::new(Prepared::new(input.nodepools, input.daemonsets))),
            existing: OnceLock::new(),
            deleting_closure: OnceLock::new(),
            consolidation_closure: OnceLock::new(),
            pods_of_one: LockedMap::default(),
            shared_queue: OnceLock::new(),
            shared_topology_free: OnceLock::new(),
        }
    }

    /// Simulates removing `candidates`. `consolidation` closes nodes still
    /// inside their `consolidateAfter` window.
    pub(crate) fn simulate(
        &self,
        input: &PassInput<'_>,
        pdbs: &PdbLimits,
        candidates: &[&Candidate],
        consolidation: bool,
    ) -> Simulation {
        let closure = self.prepare(input, consolidation);
        self.simulate_on(input, pdbs, candidates, closure, None)
    }

    /// Builds what every simulation of `consolidation`'s kind shares (once
    /// per pass, whichever thread asks first): the placement views and the
    /// closure, which it returns.
    pub(crate) fn prepare(&self, input: &PassInput<'_>, consolidation: bool) -> &Closure {
        let prepared = input.prepared.or(self.prepared.as_deref());
        let existing = self.existing.get_or_init(|| match prepared {
            Some(prepared) => ExistingNodes::new(input.cluster, input.daemonsets, prepared),
            None => {
                let prepared = Prepared::new(input.nodepools, input.daemonsets);
                ExistingNodes::new(input.cluster, input.daemonsets, &prepared)
            }
        });
        let (slot, also_closed) = if consolidation {
            (
                &self.consolidation_closure,
                &self.under_consolidate_after[..],
            )
        } else {
            (&self.deleting_closure, &[][..])
        };
        slot.get_or_init(|| {
            let mut ids = self.deleting.clone();
            ids.extend_from_slice(also_closed);
            existing.shared_closure(input.cluster, &ids)
        })
    }

    /// The closure [`Self::prepare`] built for `consolidation`'s kind.
    ///
    /// # Panics
    /// If it was not prepared.
    pub fn closure(&self, consolidation: bool) -> &Closure {
        let slot = if consolidation {
            &self.consolidation_closure
        } else {
            &self.deleting_closure
        };
        slot.get().expect("simulation view prepared")
    }

    /// [`Self::simulate`] on a prepared view, with `closure` (the view's
    /// own or a copy of it: a copy lets simulations run side by side),
    /// stopped, with `quiet`, as soon as the outcome is sure to be a
    /// no-op for a consolidation that must undercut that price: a second
    /// new NodeClaim, a first that cannot undercut it, a pod of a candidate
    /// or of a deleting node that could only fail or open one (the caller
    /// takes their errors as a no-op), or a candidate's pod placed on a
    /// node that has not finished initializing (see
    /// `reject_uninitialized_destinations`).
    ///
    /// # Panics
    /// If the view was not prepared.
    pub(crate) fn simulate_on(
        &self,
        input: &PassInput<'_>,
        pdbs: &PdbLimits,
        candidates: &[&Candidate],
        closure: &Closure,
        quiet: Option<PriceToBeat>,
    ) -> Simulation {
        let found = self.pods_to_place(input, pdbs, candidates);
        let from_candidates = &found.own;
        let closed: Vec<NodeId> = candidates.iter().map(|c| c.node).collect();
        let moving: Vec<PodId> = match quiet {
            Some(_) => {
                let mut moving: Vec<PodId> = Vec::with_capacity(from_candidates.len());
                moving.extend(
                    from_candidates
                        .iter()
                        .copied()
                        .filter(|pod| !self.deleting_node_pod_set.contains(pod)),
                );
                moving.sort_unstable();
                moving
            }
            None => Vec::new(),
        };
        let stop_early = match quiet {
            Some(to_beat) => StopEarly {
                at_new_nodeclaims: Some(2),
                unless_cheaper_than: Some(to_beat),
                bound_pods_must_fit: true,
                not_on_uninitialized: &moving,
            },
            None => StopEarly::default(),
        };
        let prepared = input.prepared.or(self.prepared.as_deref());
        let existing = self.existing.get().expect("simulation view prepared");
        let provisioning = ProvisioningInput {
            cluster: input.cluster,
            nodepools: input.nodepools,
            daemonsets: input.daemonsets,
            pods: &found.pods,
            node_count_resource: input.node_count_resource,
            policies: input.options.scheduling,
        };
        // Candidates being deleted themselves (a command re-checked) place
        // fewer of the deleting nodes' pods: the solve orders those itself.
        let runs;
        let queue = if self.any_deleting(candidates) {
            None
        } else {
            runs = self.queue_runs(input, candidates, from_candidates);
            Some(runs.queue())
        };
        let setup = SolveSetup {
            prepared,
            stop_early,
            reserved_fallback: true,
            queue,
        };
        let mut result = solve_with_closure(&provisioning, setup, existing, closure, &closed);
        let placed_on_existing = result.existing.clone();
        self.reject_uninitialized_destinations(input.cluster, &mut result, quiet.is_none());
        let non_pending_errors = result
            .errors
            .iter()
            .filter(|(pod, _)| !self.pending.contains(pod))
            .cloned()
            .collect();
        Simulation {
            result,
            non_pending_errors,
            pods: found,
            placed_on_existing,
        }
    }

    /// The pods a simulation of removing `candidates` places, in order:
    /// pending pods first, then the candidates' (each pod once), then those
    /// of deleting nodes (never pending, each on one node); and the
    /// candidates' own, in that order.
    pub(crate) fn pods_to_place(
        &self,
        input: &PassInput<'_>,
        pdbs: &PdbLimits,
        candidates: &[&Candidate],
    ) -> Arc<PodsToPlace> {
        let [candidate] = candidates else {
            return Arc::new(self.find_pods_to_place(input, pdbs, candidates));
        };
        let known = self.pods_of_one.lock().get(&candidate.node).cloned();
        if let Some(found) = known {
            return found;
        }
        let found = Arc::new(self.find_pods_to_place(input, pdbs, candidates));
        self.pods_of_one
            .lock()
            .insert(candidate.node, found.clone());
        found
    }

    /// Whether every pod of `placed` (from [`Self::pods_to_place`]) is
    /// free of topology terms; the pending and deleting nodes' pods, which
    /// every simulation places, are looked at once a pass.
    pub(crate) fn all_topology_free(&self, cluster: &Cluster, placed: &PodsToPlace) -> bool {
        let rest = if self.shared_topology_free(cluster) {
            &placed.own
        } else {
            &placed.pods
        };
        rest.iter().all(|&p| topology_free(cluster, p))
    }

    /// Whether the pending pods and the deleting nodes' pods, which every
    /// simulation places, are free of topology terms (looked at once a
    /// pass).
    fn shared_topology_free(&self, cluster: &Cluster) -> bool {
        *self.shared_topology_free.get_or_init(|| {
            self.pending_in_order
                .iter()
                .chain(&self.deleting_node_pods)
                .all(|&p| topology_free(cluster, p))
        })
    }

    /// Whether a simulation of removing `candidate` alone would take the
    /// pods of `first` from its queue before any other, in that order (see
    /// [`queue_starts_with`]), and every pod it places is free of topology
    /// terms: what a kept verdict whose solve a stop ended needs of a
    /// solve given other pods. The pending and deleting nodes' pods are
    /// read from the pass's queue runs (as the solve reads them), up to
    /// the last pod of `first`.
    pub(crate) fn starts_topology_free_with(
        &self,
        input: &PassInput<'_>,
        pdbs: &PdbLimits,
        candidate: &Candidate,
        first: &[PodId],
    ) -> bool {
        let (cluster, policies) = (input.cluster, input.options.scheduling);
        let found = self.pods_to_place(input, pdbs, &[candidate]);
        let starts = if self.any_deleting(&[candidate]) {
            queue_starts_with(cluster, &found.pods, policies, first)
        } else {
            let runs = self.queue_runs(input, &[candidate], &found.own);
            presorted_queue_starts_with(cluster, runs.queue(), policies, first)
        };
        starts && self.all_topology_free(cluster, &found)
    }

    /// The queue of a simulation of removing `candidates` (none of them
    /// deleting), whose own pods are `own`: the pass's runs of pending
    /// and deleting nodes' pods, and a single candidate's pods presorted
    /// with its node's facts when they all move.
    fn queue_runs<'s>(
        &'s self,
        input: &PassInput<'_>,
        candidates: &[&'s Candidate],
        own: &'s [PodId],
    ) -> QueueRuns<'s> {
        let [pending, deleting] = self.shared_runs(input);
        let own_run = match candidates {
            [candidate] => candidate.reschedulable_run(input.cluster, own),
            _ => None,
        };
        QueueRuns {
            runs: [pending, deleting, own_run.unwrap_or(deleting)],
            own: own_run.is_none().then_some(own),
        }
    }

    /// The pending pods and the deleting nodes' pods in queue order (built
    /// on first use).
    fn shared_runs(&self, input: &PassInput<'_>) -> [&QueueRun; 2] {
        let [pending, deleting] = self.shared_queue.get_or_init(|| {
            [
                QueueRun::new(input.cluster, &self.pending_in_order),
                QueueRun::new(input.cluster, &self.deleting_node_pods),
            ]
        });
        [pending, deleting]
    }

    /// Its deleting nodes, their pods and the nodes inside their
    /// `consolidateAfter` window.
    pub(crate) fn inputs(&self) -> ViewInputs {
        ViewInputs {
            deleting: self.deleting.clone(),
            deleting_node_pods: self.deleting_node_pods.clone(),
            under_consolidate_after: self.under_consolidate_after.clone(),
        }
    }

    /// The pods a simulation moves off `candidate`: currently reschedulable
    /// and not pending; the candidate's own list when that is all of it.
    pub(crate) fn moving_pods(
        &self,
        input: &PassInput<'_>,
        pdbs: &PdbLimits,
        candidate: &Candidate,
    ) -> Arc<[PodId]> {
        match self.all_moving_requests(pdbs, candidate) {
            Some(_) => candidate.reschedulable_pods().clone(),
            None => self.candidate_pods(input, pdbs, &[candidate]).collect(),
        }
    }

    /// The CPU, memory and pod-slot requests of the pods a simulation moves
    /// off `candidate` (those of [`Self::moving_pods`]), in order: the
    /// requests kept with the candidate when every one of its pods moves,
    /// else each pod looked up once.
    pub(crate) fn moving_amounts<'c>(
        &self,
        input: &PassInput<'_>,
        pdbs: &PdbLimits,
        candidate: &'c Candidate,
    ) -> Cow<'c, [Amounts]> {
        if let Some(requests) = self.all_moving_requests(pdbs, candidate) {
            return Cow::Borrowed(requests);
        }
        let pods = candidate.reschedulable_pods();
        match Self::kept_requests(pdbs, candidate) {
            Some(requests) => Cow::Owned(
                pods.iter()
                    .zip(requests)
                    .filter(|(id, _)| !self.pending.contains(id))
                    .map(|(_, requests)| *requests)
                    .collect(),
            ),
            None => Cow::Owned(
                pods.iter()
                    .filter_map(|&id| self.moving_pod(input, pdbs, id))
                    .map(|pod| amounts(&pod.spec.requests))
                    .collect(),
            ),
        }
    }

    /// The requests kept with `candidate`'s facts when every one of its
    /// reschedulable pods moves: they are kept ([`Self::kept_requests`])
    /// and no pending pod is bound to its node, so none of its pods is
    /// pending.
    pub(crate) fn all_moving_requests<'c>(
        &self,
        pdbs: &PdbLimits,
        candidate: &'c Candidate,
    ) -> Option<&'c Arc<[Amounts]>> {
        if Self::kept_requests(pdbs, candidate).is_none() || self.hosts_pending(candidate.node) {
            return None;
        }
        candidate.unprotected_requests()
    }

    /// Whether a pending pod is bound to `node`.
    fn hosts_pending(&self, node: NodeId) -> bool {
        self.nodes_with_pending.binary_search(&node).is_ok()
    }

    /// The requests kept with `candidate` for its reschedulable pods, when
    /// those that are not pending all move: no PDB can hold one and no
    /// do-not-disrupt annotation can protect one, so each is currently
    /// reschedulable exactly when it is reschedulable.
    fn kept_requests<'c>(pdbs: &PdbLimits, candidate: &'c Candidate) -> Option<&'c [Amounts]> {
        if !pdbs.limits().is_empty() {
            return None;
        }
        candidate.unprotected_requests().map(|r| &**r)
    }

    /// A candidate's pod `id`, if a simulation moves it: currently
    /// reschedulable and not pending.
    pub(super) fn moving_pod<'c>(
        &self,
        input: &PassInput<'c>,
        pdbs: &PdbLimits,
        id: PodId,
    ) -> Option<&'c Pod> {
        input
            .cluster
            .pod(id)
            .filter(|pod| currently_reschedulable(input, pod, pdbs) && !self.pending.contains(&id))
    }

    /// Whether [`Self::pods_to_place`] for `candidate` alone is `pods`,
    /// compared piece by piece (pending, the candidate's, deleting
    /// nodes') without building the list.
    pub(crate) fn pods_to_place_are(
        &self,
        input: &PassInput<'_>,
        pdbs: &PdbLimits,
        candidate: &Candidate,
        pods: &[PodId],
    ) -> bool {
        if let Some(known) = self.pods_of_one.lock().get(&candidate.node) {
            return known.pods == pods;
        }
        if self.deleting.contains(&candidate.node) {
            return self.pods_to_place(input, pdbs, &[candidate]).pods == pods;
        }
        let Some(rest) = pods.strip_prefix(&self.pending_in_order[..]) else {
            return false;
        };
        let Some(own) = rest.len().checked_sub(self.deleting_node_pods.len()) else {
            return false;
        };
        let (from_candidate, deleting) = rest.split_at(own);
        deleting == self.deleting_node_pods
            && self
                .candidate_pods(input, pdbs, &[candidate])
                .eq(from_candidate.iter().copied())
    }

    fn find_pods_to_place(
        &self,
        input: &PassInput<'_>,
        pdbs: &PdbLimits,
        candidates: &[&Candidate],
    ) -> PodsToPlace {
        let most: usize = candidates
            .iter()
            .map(|c| c.reschedulable_pods().len())
            .sum();
        let mut from_candidates: Vec<PodId> = Vec::with_capacity(most);
        from_candidates.extend(self.candidate_pods(input, pdbs, candidates));
        // A pod is on one node: only the same candidate twice repeats one.
        if repeats_a_node(candidates) {
            let mut seen = BTreeSet::new();
            from_candidates.retain(|&pod| seen.insert(pod));
        }
        let mut pods = Vec::with_capacity(
            self.pending_in_order.len() + from_candidates.len() + self.deleting_node_pods.len(),
        );
        pods.extend_from_slice(&self.pending_in_order);
        pods.extend_from_slice(&from_candidates);
        // Candidates being deleted themselves (a command re-checked) must
        // not place their pods twice.
        if self.any_deleting(candidates) {
            let own: BTreeSet<PodId> = from_candidates.iter().copied().collect();
            pods.extend(
                self.deleting_node_pods
                    .iter()
                    .copied()
                    .filter(|pod| !own.contains(pod)),
            );
        } else {
            pods.extend_from_slice(&self.deleting_node_pods);
        }
        PodsToPlace {
            pods,
            own: from_candidates,
        }
    }

    /// Whether a candidate is one of the view's deleting nodes (a command
    /// re-checked).
    fn any_deleting(&self, candidates: &[&Candidate]) -> bool {
        candidates.iter().any(|c| self.deleting.contains(&c.node))
    }

    /// The candidates' pods a simulation moves: currently reschedulable
    /// and not pending.
    fn candidate_pods<'s>(
        &'s self,
        input: &'s PassInput<'_>,
        pdbs: &'s PdbLimits,
        candidates: &'s [&Candidate],
    ) -> impl Iterator<Item = PodId> + 's {
        candidates.iter().flat_map(move |candidate| {
            let all_move = Self::kept_requests(pdbs, candidate).is_some();
            // Only the pods of a node a pending pod is bound to can be
            // pending.
            let hosts_pending = self.hosts_pending(candidate.node);
            candidate
                .reschedulable_pods()
                .iter()
                .copied()
                .filter(move |&pod| match all_move {
                    true => !hosts_pending || !self.pending.contains(&pod),
                    false => self.moving_pod(input, pdbs, pod).is_some(),
                })
        })
    }

    /// The solve setup of this view's simulations.
    pub(crate) fn prepared<'s>(&'s self, input: &'s PassInput<'_>) -> Option<&'s Prepared> {
        input.prepared.or(self.prepared.as_deref())
    }

    /// The placement views open to consolidation simulations (see
    /// [`OpenViews`]).
    ///
    /// # Panics
    /// If the view was not prepared for consolidation.
    pub(crate) fn open_views(&self) -> OpenViews {
        let existing = self.existing.get().expect("simulation view prepared");
        existing.open_views(self.closure(true))
    }

    /// A decision must not rest on a node that has not finished
    /// initializing: pods placed there (other than pods of deleting nodes)
    /// count as unschedulable. Pending pods placed there are only taken out
    /// of the placements: errors of pending pods never block, so theirs is
    /// not written. Without `explain` the errors are left blank (no message
    /// will quote them).
    fn reject_uninitialized_destinations(
        &self,
        cluster: &Cluster,
        result: &mut SchedulingResult,
        explain: bool,
    ) {
        let mut kept = Vec::with_capacity(result.existing.len());
        // The error names the node only: written once per node.
        let mut written: Vec<(NodeId, String)> = Vec::new();
        for &(pod, node_id) in &result.existing {
            let node = cluster.node(node_id);
            let uninitialized = node.is_some_and(|n| !n.initialized);
            if uninitialized && !self.deleting_node_pod_set.contains(&pod) {
                if self.pending.contains(&pod) {
                    continue;
                }
                let error = if !explain {
                    String::new()
                } else if let Some((_, error)) = written.iter().find(|(id, _)| *id == node_id) {
                    error.clone()
                } else {
                    let name = node.map_or("", |n| n.name.as_str());
                    let error = if node.is_some_and(|n| n.registered) {
                        format!(
                            "would schedule against uninitialized nodeclaim/{name}, node/{name}"
                        )
                    } else {
                        format!("would schedule against uninitialized nodeclaim/{name}")
                    };
                    written.push((node_id, error.clone()));
                    error
                };
                result.errors.push((pod, error));
            } else {
                kept.push((pod, node_id));
            }
        }
        result.existing = kept;
        result.errors.sort_by_key(|(pod, _)| *pod);
    }
}
