//! What every method of a disruption pass reads, built once per pass (and
//! once per re-check of a command): the NodePools by name, the PDB limits,
//! the Graceful candidates of every node, Balanced's pool totals, the
//! NodePools' node counts their budgets read and the simulation view.
//! Shared by reference, and between threads when a method is computed
//! beside another: everything a method may build late is built once, by
//! whichever thread asks first, and is the same whoever does.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::OnceLock;

use super::balanced::{self, PoolTotals};
use super::budgets::{PoolNodeCounts, budget_mapping_of, pool_node_counts};
use super::candidates::{CandidateInputs, Rejection, evaluate_nodes, new_candidate};
use super::no_op_bound::NoOpBound;
use super::reasons::Unconsolidatable;
use super::simulate::{Simulation, SimulationView};
use super::types::{Candidate, DisruptionClass, Method, NodePoolsByName, PassInput};
use crate::cloud::Price;
use crate::nodepool::{ConsolidationPolicy, DisruptionReason};
use crate::pdb::PdbLimits;
use crate::scheduler::{Node, NodeId};

/// Why a node was not disrupted, as a method or the pass found it.
pub(crate) type Note = (NodeId, Unconsolidatable);

/// What every method of a pass reads.
pub(crate) struct PassContext<'i, 'a> {
    /// What the pass was given.
    pub input: &'i PassInput<'a>,
    /// The NodePools by name.
    pub pools: NodePoolsByName<'a>,
    /// PDBs with their allowed disruptions.
    pub pdbs: PdbLimits,
    /// Every Graceful candidate, in node order (see
    /// [`Self::judge_every_node`]).
    graceful: Vec<Candidate>,
    /// Balanced's pool totals over `graceful`, made on first use.
    totals: OnceLock<BTreeMap<String, PoolTotals>>,
    /// Each NodePool's node counts for its budgets, made on first use (a
    /// pass's methods each take a budget mapping of the same cluster).
    node_counts: OnceLock<BTreeMap<String, PoolNodeCounts>>,
    /// The simulation view, made on first use.
    view: OnceLock<SimulationView>,
    /// The no-op bound over the consolidation view, made on first use,
    /// with its epoch when the caller keeps rulings.
    no_op_bound: OnceLock<(NoOpBound, Option<u64>)>,
}

impl<'i, 'a> PassContext<'i, 'a> {
    pub fn new(input: &'i PassInput<'a>) -> Self {
        PassContext {
            input,
            pools: input
                .nodepools
                .iter()
                .map(|c| (c.pool.name.as_str(), c.pool))
                .collect(),
            pdbs: PdbLimits::from_cluster(input.cluster, input.scales),
            graceful: Vec::new(),
            totals: OnceLock::new(),
            node_counts: OnceLock::new(),
            view: OnceLock::new(),
            no_op_bound: OnceLock::new(),
        }
    }

    pub fn candidate_inputs(&self) -> CandidateInputs<'_> {
        CandidateInputs {
            cluster: self.input.cluster,
            pools: &self.pools,
            pdbs: &self.pdbs,
            in_flight: self.input.in_flight,
            now: self.input.now,
            cache: self.input.candidate_cache,
            horizon: self.input.horizon,
        }
    }

    /// Judges every node as a Graceful candidate, which a pass does first,
    /// and returns why the managed nodes that are not candidates are not.
    /// When multi- or single-node consolidation may compute, the simulation
    /// view is prepared for consolidation alongside, on the current rayon
    /// pool: consolidation needs it unless a method before it acts, and no
    /// method changes it.
    pub fn judge_every_node(&mut self) -> Vec<Note> {
        let (input, pools, pdbs) = (self.input, &self.pools, &self.pdbs);
        let inputs = self.candidate_inputs();
        if !self.may_consolidate_underutilized() {
            let evaluated = evaluate_nodes(&inputs, DisruptionClass::Graceful);
            let mut notes = Vec::new();
            self.graceful = self.keep_candidates(evaluated, &mut notes);
            return notes;
        }
        // This thread takes the view, the longer of the two and the one
        // that does not split: an idle thread can be slower to wake than
        // the shorter job takes, and then this thread runs both in turn.
        let (view, evaluated) = rayon::join(
            || {
                let view = SimulationView::new(input, pools, pdbs);
                view.prepare(input, true);
                view
            },
            || evaluate_nodes(&inputs, DisruptionClass::Graceful),
        );
        let mut notes = Vec::new();
        self.graceful = self.keep_candidates(evaluated, &mut notes);
        self.view = OnceLock::from(view);
        notes
    }

    /// Whether a consolidation method that simulates may compute this
    /// pass: a NodePool consolidates underutilized nodes and multi- and
    /// single-node consolidation have not both found nothing at the
    /// current consolidation state. Otherwise the view is made only if a
    /// method asks for it.
    fn may_consolidate_underutilized(&self) -> bool {
        let consolidated = self.input.is_consolidated(Method::MultiNodeConsolidation)
            && self.input.is_consolidated(Method::SingleNodeConsolidation);
        !consolidated
            && self
                .pools
                .values()
                .any(|p| p.disruption.consolidation_policy != ConsolidationPolicy::WhenEmpty)
    }

    /// The candidates of `class` among the nodes `considered` lets
    /// through, in node order, and why the managed ones among those nodes
    /// that are not candidates are not. Graceful ones come from
    /// [`Self::judge_every_node`], whose notes are already taken.
    pub fn judge(
        &self,
        class: DisruptionClass,
        considered: impl Fn(&Node) -> bool,
    ) -> (Cow<'_, [Candidate]>, Vec<Note>) {
        let cluster = self.input.cluster;
        let mut notes = Vec::new();
        if class == DisruptionClass::Graceful {
            let considered = |c: &Candidate| cluster.node(c.node).is_some_and(&considered);
            let candidates = match self.graceful.iter().all(considered) {
                true => Cow::Borrowed(&self.graceful[..]),
                false => Cow::Owned(
                    self.graceful
                        .iter()
                        .filter(|c| considered(c))
                        .cloned()
                        .collect(),
                ),
            };
            return (candidates, notes);
        }
        let inputs = self.candidate_inputs();
        let evaluated = cluster
            .nodes()
            .filter(|(_, node)| considered(node))
            .map(|(id, _)| (id, new_candidate(&inputs, id, class)))
            .collect();
        let candidates = self.keep_candidates(evaluated, &mut notes);
        (Cow::Owned(candidates), notes)
    }

    /// The candidates among `evaluated`, noting the rejections (not those
    /// of unmanaged nodes, nor of quiet nodes: the caller would drop them).
    fn keep_candidates(
        &self,
        evaluated: Vec<(NodeId, Result<Candidate, Rejection>)>,
        notes: &mut Vec<Note>,
    ) -> Vec<Candidate> {
        let mut out = Vec::with_capacity(evaluated.len());
        for (id, verdict) in evaluated {
            match verdict {
                Ok(c) => out.push(c),
                Err(Rejection::NotManaged) => {}
                Err(_) if self.input.is_quiet(id) => {}
                Err(rejection) => notes.push((id, rejection.into())),
            }
        }
        out
    }

    /// The candidates of `class` among `nodes`, in that order (rejections
    /// are not noted: a re-check only asks about its own nodes).
    pub fn candidates_among(&self, class: DisruptionClass, nodes: &[NodeId]) -> Vec<Candidate> {
        let inputs = self.candidate_inputs();
        nodes
            .iter()
            .filter_map(|&id| new_candidate(&inputs, id, class).ok())
            .collect()
    }

    /// A fresh budget mapping for `reason`: disruptions each NodePool
    /// still allows.
    pub fn budgets(&self, reason: DisruptionReason) -> BTreeMap<String, u32> {
        // A scheduled budget may open or close at any time.
        let scheduled = self
            .pools
            .values()
            .any(|p| p.disruption.budgets.iter().any(|b| b.schedule.is_some()));
        if scheduled && let Some(horizon) = self.input.horizon {
            horizon.turns_at(self.input.now);
        }
        let counts = self
            .node_counts
            .get_or_init(|| pool_node_counts(self.input.cluster));
        budget_mapping_of(counts, &self.pools, reason, self.input.now)
    }

    /// Balanced's pool totals, over every Graceful candidate.
    pub fn pool_totals(&self) -> &BTreeMap<String, PoolTotals> {
        self.totals
            .get_or_init(|| balanced::pool_totals(self.input.cluster, &self.graceful))
    }

    /// The pass's simulation view (made on first use).
    pub fn view(&self) -> &SimulationView {
        self.view
            .get_or_init(|| SimulationView::new(self.input, &self.pools, &self.pdbs))
    }

    /// The simulation view, prepared for consolidation simulations.
    pub fn consolidation_view(&self) -> &SimulationView {
        let view = self.view();
        view.prepare(self.input, true);
        view
    }

    /// Whether consolidating `candidates` is sure to be a no-op without a
    /// simulation (see [`NoOpBound`]).
    pub fn rules_out(&self, candidates: &[&Candidate]) -> bool {
        let (input, view) = (self.input, self.consolidation_view());
        // Without the setup, what a new NodeClaim may launch as is unknown.
        let Some(prepared) = view.prepared(input) else {
            return false;
        };
        let cache = input.candidate_cache;
        let (bound, epoch) = self.no_op_bound.get_or_init(|| {
            let (views, launch_rooms) = (view.open_views(), prepared.launch_rooms(input.nodepools));
            match cache {
                Some(cache) => {
                    let mut rulings = cache.rulings();
                    let bound = rulings.bound(&views, launch_rooms);
                    let epoch = rulings.epoch_of(&bound);
                    (bound, Some(epoch))
                }
                None => (NoOpBound::new(&views, launch_rooms), None),
            }
        });
        if let [candidate] = candidates {
            let (node, price) = (candidate.node, candidate.price);
            // Rulings are kept for candidates whose moving requests are
            // the ones kept with their node's facts.
            let kept = cache
                .zip(*epoch)
                .zip(view.all_moving_requests(&self.pdbs, candidate))
                .map(|((cache, epoch), facts)| (cache, epoch, facts));
            if let Some((cache, epoch, facts)) = kept
                && cache.rulings().still_ruled_out(epoch, node, price, facts)
            {
                return true;
            }
            let requests = view.moving_amounts(input, &self.pdbs, candidate);
            let ruled_out = bound.rules_out(&[node], price, &requests);
            if let Some((cache, epoch, facts)) = kept {
                cache.rulings().keep(epoch, node, price, facts, ruled_out);
            }
            return ruled_out;
        }
        let mut nodes: Vec<NodeId> = candidates.iter().map(|c| c.node).collect();
        nodes.sort_unstable();
        if nodes.windows(2).any(|pair| pair[0] == pair[1]) {
            return false;
        }
        let price = candidates.iter().fold(Price::ZERO, |sum, c| sum + c.price);
        let pods = candidates
            .iter()
            .map(|c| c.reschedulable_pods().len())
            .sum();
        let mut requests = Vec::with_capacity(pods);
        for candidate in candidates {
            requests.extend_from_slice(&view.moving_amounts(input, &self.pdbs, candidate));
        }
        bound.rules_out(&nodes, price, &requests)
    }

    /// Simulates removing `candidates` on the pass's simulation view.
    pub fn simulate(&self, candidates: &[&Candidate], consolidation: bool) -> Simulation {
        self.view()
            .simulate(self.input, &self.pdbs, candidates, consolidation)
    }
}
