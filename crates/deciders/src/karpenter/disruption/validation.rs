//! The re-check of a command after [`super::COMMAND_VALIDATION_DELAY`]
//! (core: disruption/validation.go `EmptinessValidator`,
//! `ConsolidationValidator`): the cluster may have changed while the
//! command waited, so candidates, budgets and (for consolidation) the
//! scheduling simulation are computed again.

use std::borrow::Borrow;
use std::collections::BTreeSet;

use super::context::PassContext;
use super::methods::{
    DisruptionMethod, Emptiness, MultiNode, SingleNode, empty_nodes_command, should_disrupt,
};
use super::reasons::{CommandInvalid, SchedulingErrors};
use super::types::{Candidate, Command, DisruptionClass, Method, PassInput};
use crate::karpenter::provisioning::NewNodeClaim;
use crate::nodepool::DisruptionReason;

/// See [`super::controller::revalidate`].
pub(super) fn revalidate(
    input: &PassInput<'_>,
    command: &Command,
) -> Result<Command, CommandInvalid> {
    match command.method {
        Method::Drift | Method::StaticDrift => Ok(command.clone()),
        Method::Emptiness => emptiness(input, command),
        Method::MultiNodeConsolidation => consolidation(input, command, &MultiNode),
        Method::SingleNodeConsolidation => consolidation(input, command, &SingleNode),
    }
}

/// The command's nodes that are still candidates now, in command order
/// (only the command's own nodes are evaluated again: whether the others
/// are candidates changes nothing here).
fn still_candidates<'c, C: Borrow<Candidate>>(
    command: &Command,
    current: &'c [C],
) -> Vec<&'c Candidate> {
    command
        .candidates
        .iter()
        .filter_map(|id| {
            current
                .iter()
                .map(Borrow::borrow)
                .find(|c: &&Candidate| c.node == *id)
        })
        .collect()
}

/// Emptiness keeps whichever nodes are still empty candidates within
/// budget.
fn emptiness(input: &PassInput<'_>, command: &Command) -> Result<Command, CommandInvalid> {
    let ctx = PassContext::new(input);
    let graceful = ctx.candidates_among(DisruptionClass::Graceful, &command.candidates);
    let current = should_disrupt(&ctx, &Emptiness, &graceful, &mut Vec::new());
    let still = still_candidates(command, &current);
    if still.is_empty() {
        return Err(CommandInvalid::Churn(command.candidates.len()));
    }
    let mut budgets = ctx.budgets(DisruptionReason::Empty);
    let mut valid: Vec<Candidate> = Vec::new();
    for candidate in still {
        if let Some(left) = budgets.get_mut(candidate.nodepool()).filter(|l| **l > 0) {
            *left -= 1;
            valid.push(candidate.clone());
        }
    }
    if valid.is_empty() {
        return Err(CommandInvalid::Budget(command.candidates.len()));
    }
    Ok(empty_nodes_command(input, &valid))
}

/// Names of a NodeClaim's options.
fn option_names<'c>(input: &PassInput<'c>, claim: &NewNodeClaim) -> BTreeSet<&'c str> {
    let Some(catalog) = input.nodepools.get(claim.nodepool).map(|c| c.catalog) else {
        return BTreeSet::new();
    };
    claim
        .instance_types
        .iter()
        .filter_map(|&i| catalog.instance_types().get(i).map(|it| it.name()))
        .collect()
}

/// Consolidation needs every node still a candidate `method` should
/// disrupt within budget, and the same decision from a fresh simulation.
fn consolidation(
    input: &PassInput<'_>,
    command: &Command,
    method: &dyn DisruptionMethod,
) -> Result<Command, CommandInvalid> {
    let ctx = PassContext::new(input);
    let graceful = ctx.candidates_among(DisruptionClass::Graceful, &command.candidates);
    let current = should_disrupt(&ctx, method, &graceful, &mut Vec::new());
    let still = still_candidates(command, &current);
    if still.len() != command.candidates.len() {
        return Err(CommandInvalid::Churn(
            command.candidates.len() - still.len(),
        ));
    }
    let mut budgets = ctx.budgets(DisruptionReason::Underutilized);
    for candidate in &still {
        match budgets.get_mut(candidate.nodepool()).filter(|l| **l > 0) {
            Some(left) => *left -= 1,
            None => return Err(CommandInvalid::OverBudget),
        }
    }
    let simulation = ctx.simulate(&still, true);
    if !simulation.all_non_pending_scheduled() {
        return Err(CommandInvalid::Scheduling(SchedulingErrors::new(
            input.cluster,
            &simulation.non_pending_errors,
        )));
    }
    let fresh = &simulation.result.new_nodeclaims;
    let same = match (fresh.as_slice(), command.replacements.as_slice()) {
        ([], []) => true,
        ([now], [then]) => option_names(input, then).is_subset(&option_names(input, now)),
        _ => false,
    };
    if same {
        Ok(command.clone())
    } else {
        Err(CommandInvalid::NewResults)
    }
}
