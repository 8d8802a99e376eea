//! Single-node consolidation (core: disruption/singlenodeconsolidation.go):
//! candidates by savings ratio dealt round-robin over NodePools, the first
//! with budget whose consolidation is not a no-op. Its outcome does not
//! depend on multi-node's, so the pass may compute it beside multi-node
//! (see [`DisruptionMethod::speculative`]); its simulations also run side
//! by side, and the outcome is the one a single thread going in candidate
//! order finds.

use std::collections::BTreeMap;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use super::consolidation_should_disrupt;
use super::method::{DisruptionMethod, MethodOutcome};
use crate::karpenter::disruption::balanced::{self, PoolTotals};
use crate::karpenter::disruption::candidates::FilterVerdict;
use crate::karpenter::disruption::consolidation::{
    Decision, consolidate_traced, consolidation_command,
};
use crate::karpenter::disruption::context::PassContext;
use crate::karpenter::disruption::ordering::{deal_by_nodepool, sort_for_consolidation};
use crate::karpenter::disruption::reasons::Unconsolidatable;
use crate::karpenter::disruption::types::{Candidate, Command, DisruptionClass, Method};
use crate::karpenter::provisioning::Closure;
use crate::nodepool::{DisruptionReason, NodePool};

/// The single-node consolidation method.
pub(crate) struct SingleNode;

impl DisruptionMethod for SingleNode {
    fn reason(&self) -> DisruptionReason {
        DisruptionReason::Underutilized
    }

    fn class(&self) -> DisruptionClass {
        DisruptionClass::Graceful
    }

    fn should_disrupt(
        &self,
        ctx: &PassContext<'_, '_>,
        candidate: &Candidate,
        pool: &NodePool,
    ) -> FilterVerdict {
        consolidation_should_disrupt(ctx, candidate, pool)
    }

    /// Candidates without budget, or that Balanced's gate could not pass
    /// even deleted outright, are not simulated; at most
    /// [`single_node_candidate_limit`] are.
    ///
    /// [`single_node_candidate_limit`]:
    ///     crate::karpenter::disruption::DisruptionOptions::single_node_candidate_limit
    fn compute_command(
        &self,
        ctx: &PassContext<'_, '_>,
        mut candidates: Vec<&Candidate>,
        budgets: BTreeMap<String, u32>,
        beside: Option<&AtomicBool>,
    ) -> MethodOutcome {
        sort_for_consolidation(&mut candidates, ctx.input.candidate_cache);
        let totals = ctx.pool_totals();
        let limit = ctx.input.options.single_node_candidate_limit;
        let dealt = deal_by_nodepool(candidates, &[]);
        let has_budget = |c: &&Candidate| budgets.get(c.nodepool()).copied().unwrap_or(0) > 0;
        let constrained_by_budgets = !dealt.iter().all(has_budget);
        let mut evaluated: Vec<&Candidate> = dealt
            .into_iter()
            .filter(has_budget)
            .filter(|c| {
                ctx.pools
                    .get(c.nodepool())
                    .is_some_and(|pool| balanced::can_pass_threshold(c, pool, totals))
            })
            .collect();
        // Upstream's timeout, which the limit stands for, leaves the
        // method unmarked, as a budget does.
        let cut_short = limit.is_some_and(|limit| evaluated.len() > limit);
        evaluated.truncate(limit.unwrap_or(usize::MAX));
        let outcomes = outcomes(ctx, &evaluated, totals, beside);
        let mut out = MethodOutcome {
            constrained_by_budgets: constrained_by_budgets || cut_short,
            ..MethodOutcome::default()
        };
        for (candidate, outcome) in evaluated.iter().zip(outcomes) {
            match outcome {
                SingleNodeOutcome::Found(command) => {
                    out.command = Some(*command);
                    break;
                }
                SingleNodeOutcome::Noted(reason) => out.notes.push((candidate.node, reason)),
                SingleNodeOutcome::Silent => {}
            }
        }
        out
    }

    fn speculative(&self) -> bool {
        true
    }

    fn consolidation_state_key(&self) -> Option<Method> {
        Some(Method::SingleNodeConsolidation)
    }
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
fn outcome_of(
    ctx: &PassContext<'_, '_>,
    totals: &BTreeMap<String, PoolTotals>,
    candidate: &Candidate,
    decision: Decision,
) -> SingleNodeOutcome {
    let noted = match &decision {
        Decision::NoOp(Some(reason)) => Some(reason.clone()),
        _ => None,
    };
    let command = consolidation_command(
        ctx.input,
        Method::SingleNodeConsolidation,
        &[candidate],
        decision,
    );
    match command {
        None => noted.map_or(SingleNodeOutcome::Silent, SingleNodeOutcome::Noted),
        Some(command) => {
            match balanced::approve(&[candidate], command.estimated_savings, &ctx.pools, totals) {
                Ok(()) => SingleNodeOutcome::Found(Box::new(command)),
                Err(score) => SingleNodeOutcome::Noted(Unconsolidatable::ScoreTooLow(score)),
            }
        }
    }
}

/// Below this many candidates per thread, single-node consolidation runs
/// on one thread (a closure copy per thread costs about one simulation).
const MIN_CANDIDATES_PER_THREAD: usize = 8;

/// The single-node outcomes of `candidates` in order, up to and including
/// the first command. Simulations run side by side on the current rayon
/// pool's threads, each thread on its own copy of the closure; a thread
/// takes the next candidate not yet taken, and none is taken past a
/// command already found, so every candidate before the first command is
/// evaluated and the outcomes are those of one thread going in order.
/// `beside` (a method running alongside on the view's own closure): no
/// thread uses that closure, and none takes another candidate once it is
/// set (the outcomes are then cut short and unused).
fn outcomes(
    ctx: &PassContext<'_, '_>,
    candidates: &[&Candidate],
    totals: &BTreeMap<String, PoolTotals>,
    beside: Option<&AtomicBool>,
) -> Vec<SingleNodeOutcome> {
    let (input, view) = (ctx.input, ctx.consolidation_view());
    let verdicts = input.candidate_cache.map(|cache| &cache.verdicts);
    let evaluate = |i: usize, closure: &Closure| {
        let candidate = candidates[i];
        let quiet = input.is_quiet(candidate.node);
        if settled_quietly(ctx, candidate, quiet) {
            return SingleNodeOutcome::Silent;
        }
        let (decision, trace) =
            consolidate_traced(input, &ctx.pdbs, view, &[candidate], closure, quiet);
        if let (Some(verdicts), Decision::NoOp(_)) = (verdicts, &decision) {
            verdicts.keep(ctx, candidate, trace);
        }
        outcome_of(ctx, totals, candidate, decision)
    };
    let stopped = || beside.is_some_and(|s| s.load(Ordering::Relaxed));
    let own = view.closure(true);
    let threads = rayon::current_num_threads()
        .min(candidates.len() / MIN_CANDIDATES_PER_THREAD)
        .max(1);
    if threads == 1 && beside.is_none() {
        return up_to_first_command((0..candidates.len()).map(|i| evaluate(i, own)));
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
            let outcome = evaluate(i, closure);
            if matches!(outcome, SingleNodeOutcome::Found(_)) {
                first_found.fetch_min(i, Ordering::Relaxed);
            }
            let _ = slots[i].set(outcome);
        }
    };
    // Beside a method on the view's closure, this thread takes a copy too.
    let this_thread_copy = beside.map(|_| own.clone());
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

/// Whether `candidate` (`quiet`: its message would be dropped) is known to
/// be a no-op without a simulation: ruled out by the pass's no-op bound
/// ([`PassContext::rules_out`]), or with a kept verdict that holds (asked
/// of the others, which drops the verdicts that do not). Asked only of the
/// candidates the method reaches, in the order it reaches them.
fn settled_quietly(ctx: &PassContext<'_, '_>, candidate: &Candidate, quiet: bool) -> bool {
    if quiet && ctx.rules_out(&[candidate]) {
        return true;
    }
    ctx.input
        .candidate_cache
        .is_some_and(|cache| cache.verdicts.reusable(ctx, candidate))
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
