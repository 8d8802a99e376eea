//! The four disruption methods of one pass (core: disruption/emptiness.go,
//! drift.go, multinodeconsolidation.go, singlenodeconsolidation.go,
//! controller.go `disrupt`): each builds its candidates, takes a fresh
//! budget mapping for its reason, and returns at most one command.

use std::collections::BTreeMap;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use super::balanced::{self, PoolTotals};
use super::budgets::budget_mapping;
use super::candidates::{
    Candidate, CandidateInputs, DisruptionClass, FilterVerdict, Rejection, consolidation_filter,
    drift_filter, emptiness_filter, evaluate_nodes, new_candidate,
};
use super::consolidation::{
    Decision, decide_consolidation, estimated_savings, filter_out_same_instance_type, price_to_beat,
};
use super::emptiness::empty_command;
use super::explain;
use super::ordering::{deal_by_nodepool, sort_by_savings_ratio, sort_by_savings_ratio_after};
use super::reasons::{SchedulingErrors, Unconsolidatable};
use super::simulate::{Simulation, SimulationView};
use super::types::{Command, DisruptionInput, Method, PassOutcome};
use crate::cloud::Price;
use crate::karpenter::provisioning::Closure;
use crate::nodepool::{DisruptionReason, NodePool};
use crate::pdb::PdbLimits;
use crate::scheduler::NodeId;

/// Upstream's cap on multi-node consolidation's batch (`maxParallel`).
pub const MAX_MULTI_NODE_CANDIDATES: usize = 100;

/// What every method of a pass reads, built once.
pub(super) struct PassContext<'i, 'a> {
    pub input: &'i DisruptionInput<'a>,
    pub pools: BTreeMap<String, NodePool>,
    pub pdbs: PdbLimits,
    view: Option<SimulationView>,
    /// First reason recorded per node.
    notes: BTreeMap<NodeId, Unconsolidatable>,
}

impl<'i, 'a> PassContext<'i, 'a> {
    pub fn new(input: &'i DisruptionInput<'a>) -> Self {
        PassContext {
            input,
            pools: input
                .nodepools
                .iter()
                .map(|c| (c.pool.name.clone(), c.pool.clone()))
                .collect(),
            pdbs: PdbLimits::from_cluster(input.cluster, input.scales),
            view: None,
            notes: BTreeMap::new(),
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
        }
    }

    /// Simulates removing `candidates` on the pass's simulation view (made
    /// on first use).
    pub fn simulate(&mut self, candidates: &[&Candidate], consolidation: bool) -> Simulation {
        let (input, pdbs) = (self.input, &self.pdbs);
        let view = self
            .view
            .get_or_insert_with(|| SimulationView::new(input, pdbs));
        view.simulate(input, pdbs, candidates, consolidation)
    }

    /// What consolidation's simulations share, with the pass's simulation
    /// view prepared for them.
    fn consolidation(&mut self) -> Consolidation<'_, 'a> {
        let (input, pdbs) = (self.input, &self.pdbs);
        let view = self
            .view
            .get_or_insert_with(|| SimulationView::new(input, pdbs));
        view.prepare(input, true);
        Consolidation {
            input,
            pdbs: &self.pdbs,
            pools: &self.pools,
            view,
        }
    }

    pub fn note(&mut self, node: NodeId, reason: Unconsolidatable) {
        self.notes.entry(node).or_insert(reason);
    }

    /// Every Graceful candidate, noting why the other managed nodes are
    /// not candidates. The simulation view is prepared for consolidation
    /// alongside, on the current rayon pool: consolidation needs it unless
    /// emptiness or drift acts first, and nothing they do changes it.
    fn graceful_candidates_and_view(&mut self) -> Vec<Candidate> {
        let (input, pdbs) = (self.input, &self.pdbs);
        // This thread takes the view, the longer of the two and the one
        // that does not split: an idle thread can be slower to wake than
        // the shorter job takes, and then this thread runs both in turn.
        let (view, evaluated) = rayon::join(
            || {
                let mut view = SimulationView::new(input, pdbs);
                view.prepare(input, true);
                view
            },
            || evaluate_nodes(&self.candidate_inputs(), DisruptionClass::Graceful),
        );
        self.view = Some(view);
        self.keep_candidates(evaluated)
    }

    /// The candidates among `evaluated`, noting the rejections (not those
    /// of quiet nodes: the caller would drop them).
    fn keep_candidates(
        &mut self,
        evaluated: Vec<(NodeId, Result<Candidate, Rejection>)>,
    ) -> Vec<Candidate> {
        let mut out = Vec::new();
        for (id, verdict) in evaluated {
            match verdict {
                Ok(c) => out.push(c),
                Err(Rejection::NotManaged) => {}
                Err(_) if self.input.is_quiet(id) => {}
                Err(rejection) => self.note(id, rejection.into()),
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

    pub fn budgets(&self, reason: DisruptionReason) -> BTreeMap<String, u32> {
        budget_mapping(self.input.cluster, &self.pools, reason, self.input.now)
    }

    /// Keeps the candidates a method's filter accepts, noting the
    /// rejections that carry a message.
    pub fn filter(
        &mut self,
        candidates: &[Candidate],
        accept: impl Fn(&Candidate, &NodePool) -> FilterVerdict,
    ) -> Vec<Candidate> {
        self.filter_refs(candidates, accept)
            .into_iter()
            .cloned()
            .collect()
    }

    /// [`Self::filter`], keeping references.
    fn filter_refs<'c>(
        &mut self,
        candidates: &'c [Candidate],
        accept: impl Fn(&Candidate, &NodePool) -> FilterVerdict,
    ) -> Vec<&'c Candidate> {
        let mut kept = Vec::new();
        for c in candidates {
            let Some(pool) = self.pools.get(&*c.nodepool) else {
                continue;
            };
            match accept(c, pool) {
                Ok(()) => kept.push(c),
                Err(Some(reason)) => self.note(c.node, reason),
                Err(None) => {}
            }
        }
        kept
    }

    /// The candidates consolidation (multi- and single-node) considers.
    pub fn consolidation_candidates<'c>(
        &mut self,
        graceful: &'c [Candidate],
    ) -> Vec<&'c Candidate> {
        let cluster = self.input.cluster;
        self.filter_refs(graceful, |c, pool| match cluster.node(c.node) {
            Some(node) => consolidation_filter(c, node, pool),
            None => Err(None),
        })
    }
}

/// One pass of every method in upstream's order.
pub(super) fn run_pass(input: &DisruptionInput<'_>) -> PassOutcome {
    let mut ctx = PassContext::new(input);
    let graceful = ctx.graceful_candidates_and_view();
    let command = emptiness(&mut ctx, &graceful)
        .or_else(|| drift(&mut ctx))
        .or_else(|| {
            let consolidatable = ctx.consolidation_candidates(&graceful);
            let totals = balanced::pool_totals(input.cluster, &graceful);
            multi_then_single_node(&mut ctx, consolidatable, &totals)
        });
    if let Some(command) = &command {
        for node in &command.candidates {
            ctx.notes.remove(node);
        }
    }
    PassOutcome {
        command,
        unconsolidatable: ctx.notes.into_iter().collect(),
    }
}

/// Emptiness: every empty, consolidatable candidate within its pool's
/// `Empty` budget, in one pure delete.
pub(super) fn emptiness(ctx: &mut PassContext<'_, '_>, graceful: &[Candidate]) -> Option<Command> {
    let empty = ctx.filter(graceful, emptiness_filter);
    if empty.is_empty() {
        return None;
    }
    let mut budgets = ctx.budgets(DisruptionReason::Empty);
    let decision = empty_command(empty, &mut budgets);
    let taken = decision.command?.candidates;
    Some(empty_nodes_command(ctx.input, &taken))
}

/// The Emptiness command for `taken`.
pub(super) fn empty_nodes_command(input: &DisruptionInput<'_>, taken: &[Candidate]) -> Command {
    let refs: Vec<&Candidate> = taken.iter().collect();
    let savings = estimated_savings(&refs, &[], input);
    Command {
        method: Method::Emptiness,
        reason: DisruptionReason::Empty,
        candidates: taken.iter().map(|c| c.node).collect(),
        replacements: Vec::new(),
        estimated_savings: savings,
        needs_validation: true,
        explanation: explain::empty(input.cluster, &refs, savings),
    }
}

/// Drift: the oldest drifted candidate (empty ones first) within its
/// pool's `Drifted` budget whose pods all fit, replaced by however many
/// NodeClaims that takes.
fn drift(ctx: &mut PassContext<'_, '_>) -> Option<Command> {
    let cluster = ctx.input.cluster;
    // Only drifted nodes can pass the filter below. The others are not
    // judged as Eventual candidates: Eventual only lets through some pods
    // Graceful rejects, so their rejections were noted already.
    let drifted_nodes: Vec<NodeId> = cluster
        .nodes()
        .filter(|(_, node)| drift_filter(node).is_ok())
        .map(|(id, _)| id)
        .collect();
    if drifted_nodes.is_empty() {
        return None;
    }
    let eventual = ctx.candidates_among(DisruptionClass::Eventual, &drifted_nodes);
    let mut drifted = ctx.filter(&eventual, |c, _| match cluster.node(c.node) {
        Some(node) => drift_filter(node),
        None => Err(None),
    });
    if drifted.is_empty() {
        return None;
    }
    let condition = |c: &Candidate| {
        cluster
            .node(c.node)
            .and_then(|n| n.claim.as_ref())
            .and_then(|claim| claim.lifecycle.drifted.clone())
    };
    drifted.sort_by(|a, b| {
        let key = |c: &Candidate| {
            (
                !c.reschedulable_pods.is_empty(),
                condition(c).map(|d| d.since),
            )
        };
        key(a).cmp(&key(b)).then_with(|| a.name.cmp(&b.name))
    });
    let budgets = ctx.budgets(DisruptionReason::Drifted);
    for candidate in &drifted {
        if budgets.get(&*candidate.nodepool).copied().unwrap_or(0) == 0 {
            continue;
        }
        let simulation = ctx.simulate(&[candidate], false);
        if !simulation.all_non_pending_scheduled() {
            let errors = SchedulingErrors::new(cluster, &simulation.non_pending_errors);
            ctx.note(
                candidate.node,
                Unconsolidatable::PodsWouldNotSchedule(errors),
            );
            continue;
        }
        let reason = condition(candidate).map_or_else(|| "Drifted".to_string(), |d| d.reason);
        let replacements = simulation.result.new_nodeclaims;
        return Some(Command {
            method: Method::Drift,
            reason: DisruptionReason::Drifted,
            candidates: vec![candidate.node],
            explanation: explain::drift(&reason, replacements.len()),
            replacements,
            estimated_savings: Price::ZERO,
            needs_validation: false,
        });
    }
    None
}

/// A consolidation decision turned into a command (no-ops give `None`).
pub(super) fn consolidation_command(
    input: &DisruptionInput<'_>,
    method: Method,
    candidates: &[&Candidate],
    decision: Decision,
) -> Option<Command> {
    let replacements = match decision {
        Decision::NoOp(_) => return None,
        Decision::Delete => Vec::new(),
        Decision::Replace(claim) => vec![claim],
    };
    let savings = estimated_savings(candidates, &replacements, input);
    Some(Command {
        method,
        reason: DisruptionReason::Underutilized,
        candidates: candidates.iter().map(|c| c.node).collect(),
        explanation: explain::consolidation(input, candidates, &replacements, savings),
        replacements,
        estimated_savings: savings,
        needs_validation: true,
    })
}

/// Multi-node: binary search for the longest prefix (≥ 2 nodes, at most
/// 100) of the best candidates (`sorted` by savings ratio) that can be
/// deleted or replaced by one cheaper node of a type none of them already
/// is (or is cheaper than), spending `budgets` (the pass's Underutilized
/// mapping) as it takes candidates.
fn multi_node(
    ctx: &Consolidation<'_, '_>,
    sorted: &[&Candidate],
    mut budgets: BTreeMap<String, u32>,
    totals: &BTreeMap<String, PoolTotals>,
) -> Option<Command> {
    let mut disruptable: Vec<&Candidate> = Vec::new();
    for &c in sorted {
        if let Some(left) = budgets.get_mut(&*c.nodepool).filter(|l| **l > 0) {
            *left -= 1;
            disruptable.push(c);
        }
    }
    if disruptable.len() < 2 {
        return None;
    }
    let max_parallel = disruptable.len().min(MAX_MULTI_NODE_CANDIDATES);
    let (mut low, mut high) = (1usize, max_parallel);
    if disruptable.len() <= max_parallel {
        high = disruptable.len() - 1;
    }
    let input = ctx.input;
    let mut last_valid: Option<Command> = None;
    while low <= high {
        let mid = (low + high) / 2;
        let prefix = &disruptable[..=mid];
        let decision = ctx.consolidate(prefix, ctx.view.closure(true), true);
        let decision = match decision {
            Decision::Replace(mut claim) => {
                match filter_out_same_instance_type(input, &mut claim, prefix) {
                    Ok(()) if !claim.instance_types.is_empty() => Decision::Replace(claim),
                    _ => Decision::NoOp(None),
                }
            }
            other => other,
        };
        let command =
            consolidation_command(input, Method::MultiNodeConsolidation, prefix, decision).filter(
                |cmd| balanced::approve(prefix, cmd.estimated_savings, ctx.pools, totals).is_ok(),
            );
        match command {
            Some(command) => {
                last_valid = Some(command);
                low = mid + 1;
            }
            None => high = mid - 1,
        }
    }
    last_valid
}

/// Multi-node, then single-node: candidates by savings ratio dealt
/// round-robin over pools, the first with budget whose consolidation is
/// not a no-op. With more than one thread, the single-node simulations run
/// while multi-node searches (their outcomes are used only if it finds
/// nothing, and are cut short if it finds something); single-node's
/// outcomes do not depend on multi-node's, which notes nothing.
fn multi_then_single_node(
    ctx: &mut PassContext<'_, '_>,
    mut candidates: Vec<&Candidate>,
    totals: &BTreeMap<String, PoolTotals>,
) -> Option<Command> {
    // Both orders start from one savings-ratio sort.
    match ctx.input.candidate_cache {
        Some(cache) => {
            sort_by_savings_ratio_after(&mut candidates, &mut cache.consolidation_order())
        }
        None => sort_by_savings_ratio(&mut candidates),
    }
    let order = deal_by_nodepool(candidates.clone(), &[]);
    let limit = ctx.input.options.single_node_candidate_limit;
    // One budget mapping for both: multi-node spends a copy of it.
    let budgets = ctx.budgets(DisruptionReason::Underutilized);
    let consolidation = ctx.consolidation();
    let evaluated: Vec<&Candidate> = order
        .into_iter()
        .filter(|c| budgets.get(&*c.nodepool).copied().unwrap_or(0) > 0)
        .filter(|c| {
            consolidation
                .pools
                .get(&*c.nodepool)
                .is_some_and(|pool| balanced::can_pass_threshold(c, pool, totals))
        })
        .take(limit.unwrap_or(usize::MAX))
        .collect();
    let multi_found = AtomicBool::new(false);
    let multi = || {
        let found = multi_node(&consolidation, &candidates, budgets.clone(), totals);
        multi_found.store(found.is_some(), Ordering::Relaxed);
        found
    };
    let (command, outcomes) = if rayon::current_num_threads() > 1 {
        rayon::join(multi, || {
            consolidation.single_node_outcomes(&evaluated, totals, Some(&multi_found))
        })
    } else {
        match multi() {
            Some(command) => (Some(command), Vec::new()),
            None => (
                None,
                consolidation.single_node_outcomes(&evaluated, totals, None),
            ),
        }
    };
    if command.is_some() {
        return command;
    }
    let noted: Vec<NodeId> = evaluated.iter().map(|c| c.node).collect();
    for (node, outcome) in noted.into_iter().zip(outcomes) {
        match outcome {
            SingleNodeOutcome::Found(command) => return Some(*command),
            SingleNodeOutcome::Noted(message) => ctx.note(node, message),
            SingleNodeOutcome::Silent => {}
        }
    }
    None
}

/// What single-node consolidation makes of one candidate (small: a pass
/// keeps one per candidate, and at most one is a command).
enum SingleNodeOutcome {
    /// Its command (the method stops here).
    Found(Box<Command>),
    /// No command, for this reason.
    Noted(Unconsolidatable),
    /// No command, nothing to say.
    Silent,
}

/// A candidate's single-node outcome given its consolidation decision.
fn single_node_outcome(
    input: &DisruptionInput<'_>,
    pools: &BTreeMap<String, NodePool>,
    totals: &BTreeMap<String, PoolTotals>,
    candidate: &Candidate,
    decision: Decision,
) -> SingleNodeOutcome {
    let noted = match &decision {
        Decision::NoOp(Some(reason)) => Some(reason.clone()),
        _ => None,
    };
    let command = consolidation_command(
        input,
        Method::SingleNodeConsolidation,
        &[candidate],
        decision,
    );
    match command {
        None => noted.map_or(SingleNodeOutcome::Silent, SingleNodeOutcome::Noted),
        Some(command) => {
            match balanced::approve(&[candidate], command.estimated_savings, pools, totals) {
                Ok(()) => SingleNodeOutcome::Found(Box::new(command)),
                Err(score) => SingleNodeOutcome::Noted(Unconsolidatable::ScoreTooLow(score)),
            }
        }
    }
}

/// Below this many candidates per thread, single-node consolidation runs
/// on one thread (a closure copy per thread costs about one simulation).
const MIN_CANDIDATES_PER_THREAD: usize = 8;

/// What consolidation's simulations share once the pass's view is
/// prepared (see [`PassContext::consolidation`]); shared between threads.
struct Consolidation<'c, 'a> {
    input: &'c DisruptionInput<'a>,
    pdbs: &'c PdbLimits,
    pools: &'c BTreeMap<String, NodePool>,
    view: &'c SimulationView,
}

impl Consolidation<'_, '_> {
    /// The consolidation decision for `candidates`, simulated over
    /// `closure` (the view's, or a copy of it). `quiet` when no message is
    /// wanted for a no-op: the simulation then stops once the outcome is
    /// sure to be one whatever the rest of the pods do (see
    /// [`SimulationView::simulate_on`]), and the no-op carries no message.
    fn consolidate(&self, candidates: &[&Candidate], closure: &Closure, quiet: bool) -> Decision {
        let quiet_price = quiet.then(|| price_to_beat(self.input, candidates));
        let simulation =
            self.view
                .simulate_on(self.input, self.pdbs, candidates, closure, quiet_price);
        // A quiet no-op needs no message: the pods that would not schedule
        // are not named.
        if quiet && !simulation.all_non_pending_scheduled() {
            return Decision::NoOp(None);
        }
        match decide_consolidation(self.input, candidates, simulation) {
            Decision::NoOp(_) if quiet => Decision::NoOp(None),
            decision => decision,
        }
    }

    /// The single-node outcomes of `candidates` in order, up to and
    /// including the first command. Simulations run side by side on the
    /// current rayon pool's threads, each thread on its own copy of the
    /// closure; a thread takes the next candidate not yet taken, and none
    /// is taken past a command already found, so every candidate before
    /// the first command is evaluated and the outcomes are those of one
    /// thread going in order. With `stop` (a search running alongside on
    /// the view's own closure), no thread uses that closure, and none takes
    /// another candidate once `stop` is set (the outcomes are then cut
    /// short and unused).
    fn single_node_outcomes(
        &self,
        candidates: &[&Candidate],
        totals: &BTreeMap<String, PoolTotals>,
        stop: Option<&AtomicBool>,
    ) -> Vec<SingleNodeOutcome> {
        let (input, pools) = (self.input, self.pools);
        let evaluate = |candidate: &Candidate, closure: &Closure| {
            let quiet = input.is_quiet(candidate.node);
            let decision = self.consolidate(&[candidate], closure, quiet);
            single_node_outcome(input, pools, totals, candidate, decision)
        };
        let stopped = || stop.is_some_and(|s| s.load(Ordering::Relaxed));
        let own = self.view.closure(true);
        let threads = rayon::current_num_threads()
            .min(candidates.len() / MIN_CANDIDATES_PER_THREAD)
            .max(1);
        if threads == 1 && stop.is_none() {
            return up_to_first_command(candidates.iter().map(|c| evaluate(c, own)));
        }
        let next = AtomicUsize::new(0);
        let first_found = AtomicUsize::new(usize::MAX);
        let slots: Vec<OnceLock<SingleNodeOutcome>> =
            candidates.iter().map(|_| OnceLock::new()).collect();
        let work = |closure: &Closure| {
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= candidates.len() || i > first_found.load(Ordering::Relaxed) || stopped() {
                    break;
                }
                let outcome = evaluate(candidates[i], closure);
                if matches!(outcome, SingleNodeOutcome::Found(_)) {
                    first_found.fetch_min(i, Ordering::Relaxed);
                }
                let _ = slots[i].set(outcome);
            }
        };
        // Alongside a search on the view's closure, this thread takes a
        // copy too.
        let this_thread_copy = stop.map(|_| own.clone());
        let copies: Vec<Closure> = (1..threads).map(|_| own.clone()).collect();
        rayon::in_place_scope(|scope| {
            for copy in copies {
                let work = &work;
                scope.spawn(move |_| work(&copy));
            }
            work(this_thread_copy.as_ref().unwrap_or(own));
        });
        // Every slot before the first command is set.
        up_to_first_command(slots.into_iter().map_while(OnceLock::into_inner))
    }
}

/// The outcomes in order, up to and including the first command (the
/// rest are not asked for).
fn up_to_first_command(
    outcomes: impl Iterator<Item = SingleNodeOutcome>,
) -> Vec<SingleNodeOutcome> {
    let (_, most) = outcomes.size_hint();
    let mut taken = Vec::with_capacity(most.unwrap_or(0));
    for outcome in outcomes {
        let found = matches!(outcome, SingleNodeOutcome::Found(_));
        taken.push(outcome);
        if found {
            break;
        }
    }
    taken
}
