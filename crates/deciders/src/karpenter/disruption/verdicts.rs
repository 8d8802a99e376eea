//! Single-node consolidation's no-op verdicts, kept from pass to pass so a
//! pass simulates only the candidates whose what-if could have changed.
//!
//! A verdict is kept with what its simulation rested on: the candidate's
//! node revision and price to beat, the pods the solve was given, where it
//! put each on existing nodes, and the open placement views of that pass
//! (see [`OpenViews`]). A later pass reuses it for a quiet candidate (one
//! whose message would be dropped, so the verdict is all that counts) when
//! replaying the solve would take every same step:
//!
//! - the same solve setup (NodePools, DaemonSets, catalogs: the same
//!   [`Prepared`]), the same candidate revision, price to beat and pods;
//! - no pod of the simulation has topology spread or pod (anti-)affinity
//!   terms, and no running pod has required anti-affinity, so a pod's
//!   fit on a node reads that node alone;
//! - every node a pod was put on is unchanged; or differs in room only
//!   and has room for all the pods put there; or keeps its place in the
//!   try order (name, initialization) and takes those pods again one
//!   after another; and the NodePools' limit charges are the same where a
//!   NodePool has limits, unless in both passes every limit leaves room
//!   for more new NodeClaims than the solve took pods (each of which
//!   opens at most one), so that no limit drops an option (see
//!   [`OpenViews::claims_within_limits`]);
//! - no view that grew (opened, gained room, or changed otherwise since)
//!   could take a pod before the node it went to (or, for a pod put on no
//!   existing node, at all).
//!
//! A node whose view only lost room refuses every pod it refused then,
//! and a node no pod went to was refused by every pod offered to it; a
//! view that grew takes a pod it did not take then only where the last
//! check says it might; so each pod, in the solve's order, goes where it
//! went, and the solve ends as it did. Whether a pass reuses or
//! recomputes, its outcome is the same (the `verdict_reuse` property test
//! checks this against passes that keep nothing).
//!
//! A verdict is compared against the views of the pass that made it, not
//! of the last pass that reused it: a node that filled, closed for its
//! `consolidateAfter` window and reopened is then seen to have only lost
//! room. Verdicts older than [`REBASE_AFTER_PASSES`] are re-based on the
//! views of a pass that reused them, which holds them to that pass's
//! rooms, so few view sets stay alive.

use crate::fast_hash::FastMap;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use super::cache::SetupBound;
use super::consolidation::{SimulationTrace, price_to_beat};
use super::context::PassContext;
use super::simulate::PodsToPlace;
use super::types::Candidate;
use super::types::PassInput;
use crate::karpenter::provisioning::{OpenViews, Prepared, PriceToBeat, ViewChanges};
use crate::scheduler::{Cluster, NodeId, PodId};

/// Passes after which a verdict reused is re-based on the reusing pass's
/// views.
pub const REBASE_AFTER_PASSES: u64 = 30;

/// The kept verdicts.
#[derive(Debug, Default)]
pub(crate) struct Verdicts(Mutex<Kept>);

#[derive(Debug, Default)]
struct Kept {
    /// Passes begun.
    pass: u64,
    /// The open views of the current pass, made on first use.
    current: Option<Arc<PassViews>>,
    /// How the current pass's views changed since those of earlier passes
    /// (by pass), made on first use.
    changes: FastMap<u64, ViewChanges>,
    /// The verdicts, with the solve setup they were made with.
    verdicts: SetupBound<BTreeMap<NodeId, Verdict>>,
    /// Verdicts reused so far.
    reused: u64,
}

/// The open views of one pass.
#[derive(Debug)]
struct PassViews {
    pass: u64,
    views: OpenViews,
    /// New NodeClaims a solve over `views` may open before a limit could
    /// drop an option.
    claims_within_limits: u64,
}

#[derive(Debug)]
struct Verdict {
    revision: u64,
    to_beat: PriceToBeat,
    /// The pods the solve was given (shared with the pass that made it).
    pods: Arc<PodsToPlace>,
    /// Where the solve put pods on existing nodes, as it went (looked up
    /// only when the verdict is checked, which most verdicts never are).
    placed: Vec<(PodId, NodeId)>,
    /// When a stop ended the solve: what it had taken.
    stopped_on: Option<Stop>,
    views: Arc<PassViews>,
}

/// The pods a solve took from its queue before a stop ended it, in order,
/// and whether each was bound to a node then.
#[derive(Debug)]
struct Stop {
    taken: Vec<PodId>,
    bound: Vec<bool>,
}

impl Verdicts {
    fn lock(&self) -> MutexGuard<'_, Kept> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Verdicts reused so far.
    pub(crate) fn reused(&self) -> u64 {
        self.lock().reused
    }

    /// A pass with `setup` begins: verdicts made with another setup go.
    pub(crate) fn begin_pass(&self, setup: &Arc<Prepared>) {
        let mut kept = self.lock();
        kept.pass += 1;
        kept.current = None;
        kept.changes.clear();
        kept.verdicts.begin_pass(setup);
    }

    /// Whether `candidate`'s kept verdict holds (the candidate is then a
    /// no-op without a simulation); only a quiet candidate's can. A
    /// verdict that does not hold is dropped.
    pub(crate) fn reusable(&self, ctx: &PassContext<'_, '_>, candidate: &Candidate) -> bool {
        let mut kept = self.lock();
        if kept.verdicts.is_empty() || !kept.verdicts.has_setup() {
            return false;
        }
        let node = candidate.node;
        if !kept.verdicts.contains_key(&node) {
            return false;
        }
        let current = kept.current_views(ctx);
        let kept = &mut *kept;
        let holds = match kept.verdicts.get(&node) {
            Some(verdict) if ctx.input.is_quiet(node) => {
                let changes = kept
                    .changes
                    .entry(verdict.views.pass)
                    .or_insert_with(|| current.views.changes_since(&verdict.views.views));
                verdict.holds(ctx, candidate, &current, changes)
            }
            _ => false,
        };
        if holds {
            kept.reused += 1;
            let verdict = kept.verdicts.get_mut(&node).expect("just read");
            if verdict.views.pass + REBASE_AFTER_PASSES < current.pass {
                verdict.views = current.clone();
            }
        } else {
            kept.verdicts.remove(&node);
        }
        holds
    }

    /// Keeps the no-op verdict `candidate`'s simulation `trace` found in
    /// this pass (unless a pod's fit there depended on other pods).
    pub(crate) fn keep(
        &self,
        ctx: &PassContext<'_, '_>,
        candidate: &Candidate,
        trace: SimulationTrace,
    ) {
        let cluster = ctx.input.cluster;
        if !ctx
            .consolidation_view()
            .all_topology_free(cluster, &trace.pods)
        {
            return;
        }
        let mut kept = self.lock();
        if !kept.verdicts.has_setup() {
            return;
        }
        let views = kept.current_views(ctx);
        let stopped_on = trace.stopped_on.map(|taken| Stop {
            bound: taken.iter().map(|&p| is_bound(cluster, p)).collect(),
            taken,
        });
        kept.verdicts.insert(
            candidate.node,
            Verdict {
                revision: cluster.node_revision(candidate.node),
                to_beat: price_to_beat(ctx.input, &[candidate]),
                pods: trace.pods,
                placed: trace.placed_on_existing,
                stopped_on,
                views,
            },
        );
    }
}

impl Kept {
    fn current_views(&mut self, ctx: &PassContext<'_, '_>) -> Arc<PassViews> {
        let pass = self.pass;
        self.current
            .get_or_insert_with(|| {
                let input = ctx.input;
                let views = ctx.consolidation_view().open_views();
                // A pass that keeps verdicts has its solve setup here.
                let claims_within_limits = input.prepared.map_or(0, |prepared| {
                    views.claims_within_limits(input.nodepools, prepared, input.node_count_resource)
                });
                Arc::new(PassViews {
                    pass,
                    views,
                    claims_within_limits,
                })
            })
            .clone()
    }
}

impl Verdict {
    fn holds(
        &self,
        ctx: &PassContext<'_, '_>,
        candidate: &Candidate,
        current: &PassViews,
        changes: &ViewChanges,
    ) -> bool {
        let input = ctx.input;
        let node = candidate.node;
        let now = &current.views;
        // Each pod the solve took opened at most one NodeClaim.
        let taken = match &self.stopped_on {
            Some(stop) => stop.taken.len(),
            None => self.pods.pods.len(),
        } as u64;
        let limits_far = self
            .views
            .claims_within_limits
            .min(current.claims_within_limits)
            > taken;
        if self.revision != input.cluster.node_revision(node)
            || self.to_beat != price_to_beat(input, &[candidate])
            || !changes.same_surroundings(limits_far)
        {
            return false;
        }
        let view = ctx.consolidation_view();
        let replayed = if view.pods_to_place_are(input, &ctx.pdbs, candidate, &self.pods.pods) {
            self.replayed(input, true)
        } else if let Some(stop) = &self.stopped_on {
            // Other pods: the new solve must take the same pods first, in
            // the same order, and every pod must be free of topology terms,
            // so that no pod taken later constrains the ones before.
            if view.starts_topology_free_with(input, &ctx.pdbs, candidate, &stop.taken) {
                self.replayed(input, false)
            } else {
                None
            }
        } else {
            None
        };
        let Some(replayed) = replayed else {
            return false;
        };
        let mut placed: BTreeMap<NodeId, Vec<PodId>> = BTreeMap::new();
        for &(pod, to) in &replayed {
            if let Some(to) = to {
                placed.entry(to).or_default().push(pod);
            }
        }
        let policies = input.options.scheduling;
        if !placed
            .iter()
            .all(|(&to, pods)| changes.still_takes(now, to, pods, input.cluster, policies))
        {
            return false;
        }
        if changes.nothing_grew_but(node) {
            return true;
        }
        replayed.iter().all(|&(pod, to)| {
            // Topology-free, as checked when kept (or by `replayed`).
            input
                .cluster
                .pod(pod)
                .is_some_and(|p| !changes.may_divert(now, &p.spec.requests, to, node))
        })
    }

    /// The pods whose steps a solve must replay for the verdict to hold,
    /// with the existing node each went to; `None` when the solve would
    /// not start the same way. `same_pods`: the solve's pods are the kept
    /// ones; otherwise the caller has found that the new solve takes the
    /// same pods first, in the same order (see [`Verdict::holds`]), which
    /// counts only when a stop ended the solve: it then reaches the same
    /// stop whatever it would take after, provided each pod it took is
    /// bound or not as then. With the same pods, every pod the solve took
    /// (all of them, unless a stop ended it).
    fn replayed(
        &self,
        input: &PassInput<'_>,
        same_pods: bool,
    ) -> Option<Vec<(PodId, Option<NodeId>)>> {
        let cluster = input.cluster;
        let pods: &[PodId] = match &self.stopped_on {
            None if same_pods => &self.pods.pods,
            None => return None,
            Some(stop) => {
                if !stop
                    .taken
                    .iter()
                    .zip(&stop.bound)
                    .all(|(&p, &bound)| is_bound(cluster, p) == bound)
                {
                    return None;
                }
                &stop.taken
            }
        };
        // A solve places a pod once: sorted by pod, each is found by search.
        let mut placed = self.placed.clone();
        placed.sort_unstable();
        let destination = |pod: &PodId| {
            placed
                .binary_search_by_key(pod, |&(p, _)| p)
                .ok()
                .map(|at| placed[at].1)
        };
        Some(pods.iter().map(|pod| (*pod, destination(pod))).collect())
    }
}

/// Whether the pod is bound to a node.
fn is_bound(cluster: &Cluster, pod: PodId) -> bool {
    cluster.pod(pod).is_some_and(|p| p.node.is_some())
}
