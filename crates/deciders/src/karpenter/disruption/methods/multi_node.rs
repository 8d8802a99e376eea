//! Multi-node consolidation (core: disruption/multinodeconsolidation.go):
//! binary search for the longest prefix (≥ 2 nodes, at most
//! [`MAX_MULTI_NODE_CANDIDATES`]) of the best candidates by savings ratio
//! that can be deleted or replaced by one cheaper node of a type none of
//! them already is (or is cheaper than), spending the `Underutilized`
//! budgets as it takes candidates. It notes nothing. A pass whose search
//! would read what the last no-op search read skips it (see `searches`).

use std::collections::BTreeMap;
use std::sync::atomic::AtomicBool;

use super::consolidation_should_disrupt;
use super::method::{DisruptionMethod, MethodOutcome};
use crate::karpenter::disruption::balanced;
use crate::karpenter::disruption::candidates::FilterVerdict;
use crate::karpenter::disruption::consolidation::{
    Decision, consolidate, consolidation_command, filter_out_same_instance_type,
};
use crate::karpenter::disruption::context::PassContext;
use crate::karpenter::disruption::ordering::sort_for_consolidation;
use crate::karpenter::disruption::searches::SearchInputs;
use crate::karpenter::disruption::types::{Candidate, Command, DisruptionClass, Method};
use crate::nodepool::{DisruptionReason, NodePool};

/// Upstream's cap on multi-node consolidation's batch (`maxParallel`).
pub const MAX_MULTI_NODE_CANDIDATES: usize = 100;

/// The multi-node consolidation method.
pub(crate) struct MultiNode;

impl DisruptionMethod for MultiNode {
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

    fn compute_command(
        &self,
        ctx: &PassContext<'_, '_>,
        mut candidates: Vec<&Candidate>,
        budgets: BTreeMap<String, u32>,
        _beside: Option<&AtomicBool>,
    ) -> MethodOutcome {
        sort_for_consolidation(&mut candidates, ctx.input.candidate_cache);
        let (command, constrained_by_budgets) = search(ctx, &candidates, budgets);
        MethodOutcome {
            command,
            notes: Vec::new(),
            constrained_by_budgets,
        }
    }

    fn consolidation_state_key(&self) -> Option<Method> {
        Some(Method::MultiNodeConsolidation)
    }
}

/// The command of the binary search over prefixes of the candidates of
/// `sorted` (by savings ratio) within budget, none without running it when
/// the last no-op search read the same inputs (see `searches`); and
/// whether a candidate was left out for want of budget.
fn search(
    ctx: &PassContext<'_, '_>,
    sorted: &[&Candidate],
    mut budgets: BTreeMap<String, u32>,
) -> (Option<Command>, bool) {
    let mut disruptable: Vec<&Candidate> = Vec::new();
    let mut constrained_by_budgets = false;
    for &c in sorted {
        match budgets.get_mut(c.nodepool()).filter(|l| **l > 0) {
            Some(left) => {
                *left -= 1;
                disruptable.push(c);
            }
            None => constrained_by_budgets = true,
        }
    }
    if disruptable.len() < 2 {
        return (None, constrained_by_budgets);
    }
    let kept = ctx.input.candidate_cache.map(|cache| &cache.multi_node);
    let inputs = kept.map(|_| SearchInputs::of(ctx, &disruptable));
    if let (Some(kept), Some(inputs)) = (kept, &inputs)
        && kept.finds_nothing(inputs)
    {
        return (None, constrained_by_budgets);
    }
    let command = binary_search(ctx, &disruptable);
    if let (Some(kept), Some(inputs)) = (kept, inputs) {
        kept.keep(inputs, command.is_none());
    }
    (command, constrained_by_budgets)
}

/// Upstream `firstNConsolidationOption` over `disruptable` (at least two),
/// on the view's own consolidation closure.
fn binary_search(ctx: &PassContext<'_, '_>, disruptable: &[&Candidate]) -> Option<Command> {
    let max_parallel = disruptable.len().min(MAX_MULTI_NODE_CANDIDATES);
    let (mut low, mut high) = (1usize, max_parallel);
    if disruptable.len() <= max_parallel {
        high = disruptable.len() - 1;
    }
    let (input, view, totals) = (ctx.input, ctx.consolidation_view(), ctx.pool_totals());
    let closure = view.closure(true);
    let mut last_valid: Option<Command> = None;
    while low <= high {
        let mid = (low + high) / 2;
        let prefix = &disruptable[..=mid];
        let decision = if ctx.rules_out(prefix) {
            Decision::NoOp(None)
        } else {
            consolidate(input, &ctx.pdbs, view, prefix, closure, true)
        };
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
                |cmd| balanced::approve(prefix, cmd.estimated_savings, &ctx.pools, totals).is_ok(),
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
