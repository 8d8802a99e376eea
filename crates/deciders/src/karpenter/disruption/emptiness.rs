//! The Emptiness method's decision (core: disruption/emptiness.go,
//! validation.go `EmptinessValidator`): delete every empty, consolidatable
//! candidate while its pool's `Empty` budget lasts, in one command, then
//! re-check after [`super::COMMAND_VALIDATION_DELAY`].

use std::collections::BTreeMap;

use thiserror::Error;

use super::ordering::sort_by_savings_ratio;
use super::types::Candidate;

/// A pure delete of empty nodes.
#[derive(Debug, Clone, PartialEq)]
pub struct EmptyCommand {
    /// The nodes to delete, best savings first.
    pub candidates: Vec<Candidate>,
}

/// What one Emptiness pass decided.
#[derive(Debug, Clone, PartialEq)]
pub struct EmptinessDecision {
    /// The command, if any node can go.
    pub command: Option<EmptyCommand>,
    /// Some empty candidate was held back only by its budget (upstream then
    /// does not mark the cluster consolidated, so the next pass retries).
    pub constrained_by_budgets: bool,
}

/// Picks the Emptiness command from candidates that passed
/// [`super::candidates::emptiness_filter`]. `budgets` (per pool, reason
/// `Empty`) is decremented for every node taken; a pool missing from it has
/// no budget.
pub fn empty_command(
    mut candidates: Vec<Candidate>,
    budgets: &mut BTreeMap<String, u32>,
) -> EmptinessDecision {
    sort_by_savings_ratio(&mut candidates);
    let mut taken = Vec::new();
    let mut constrained_by_budgets = false;
    for candidate in candidates {
        if !candidate.is_empty() {
            continue;
        }
        match budgets.get_mut(candidate.nodepool()) {
            Some(left) if *left > 0 => {
                *left -= 1;
                taken.push(candidate);
            }
            _ => constrained_by_budgets = true,
        }
    }
    EmptinessDecision {
        command: (!taken.is_empty()).then_some(EmptyCommand { candidates: taken }),
        constrained_by_budgets,
    }
}

/// Why a command did not survive validation.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ValidationError {
    /// None of the command's nodes is still an eligible candidate.
    #[error("{0} candidates are no longer valid")]
    Churn(usize),
    /// Every remaining node was over budget.
    #[error(
        "{0} candidates failed validation because they were nominated for a pod or would violate disruption budgets"
    )]
    Budget(usize),
}

/// The 15-second re-check: `current` are the candidates recomputed now and
/// filtered again by the Emptiness filter (nominated nodes are already not
/// candidates), `budgets` the `Empty` budgets recomputed now. Keeps the
/// command's nodes that are still candidates and still fit their budget,
/// in the command's order, with their fresh values.
pub fn validate_empty_command(
    command: &EmptyCommand,
    current: &[Candidate],
    mut budgets: BTreeMap<String, u32>,
) -> Result<EmptyCommand, ValidationError> {
    let still: Vec<&Candidate> = command
        .candidates
        .iter()
        .filter_map(|old| current.iter().find(|c| c.node == old.node))
        .collect();
    if still.is_empty() {
        return Err(ValidationError::Churn(command.candidates.len()));
    }
    let mut valid = Vec::new();
    for candidate in still {
        if let Some(left) = budgets.get_mut(candidate.nodepool()).filter(|l| **l > 0) {
            *left -= 1;
            valid.push(candidate.clone());
        }
    }
    if valid.is_empty() {
        return Err(ValidationError::Budget(command.candidates.len()));
    }
    Ok(EmptyCommand { candidates: valid })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cloud::Price;
    use crate::cluster::NodeId;

    fn candidate(id: u32, pool: &str, price_micros: i64, cost: f64) -> Candidate {
        let name = format!("n{id}");
        let facts = std::sync::Arc::new(crate::karpenter::disruption::cache::NodeFacts::named(
            &name, pool,
        ));
        let mut candidate = Candidate::new(
            NodeId(id),
            facts,
            Price::from_micros(price_micros),
            crate::karpenter::disruption::types::name_order_of(&name),
        );
        candidate.reschedule_disruption_cost = cost;
        candidate
    }

    fn ids(command: &EmptyCommand) -> Vec<u32> {
        command.candidates.iter().map(|c| c.node.0).collect()
    }

    /// core: disruption/emptiness_test.go "should only allow 3 empty nodes
    /// to be disrupted", "should allow no empty nodes to be disrupted";
    /// consolidation_test.go "should not mark empty node consolidated if all
    /// candidates can't be disrupted due to budgets with many nodepools".
    #[test]
    fn takes_empty_nodes_within_budgets() {
        let candidates = vec![
            candidate(1, "a", 100_000, 1.0),
            candidate(2, "a", 300_000, 1.0),
            candidate(3, "a", 200_000, 1.0),
            candidate(4, "b", 50_000, 1.0),
            candidate(5, "b", 900_000, 2.0), // not empty
        ];
        let mut budgets: BTreeMap<String, u32> =
            [("a".to_string(), 2), ("b".to_string(), 5)].into();
        let decision = empty_command(candidates.clone(), &mut budgets);
        assert_eq!(ids(decision.command.as_ref().unwrap()), [2, 3, 4]);
        assert!(decision.constrained_by_budgets, "node 1 was held back");
        assert_eq!(budgets["a"], 0);
        assert_eq!(budgets["b"], 4);
        // With no budget anywhere there is no command, and the pass says so.
        let mut none: BTreeMap<String, u32> = [("a".to_string(), 0)].into();
        let decision = empty_command(candidates, &mut none);
        assert_eq!(decision.command, None);
        assert!(decision.constrained_by_budgets);
        let decision = empty_command(vec![candidate(5, "b", 1, 2.0)], &mut BTreeMap::new());
        assert_eq!(
            decision,
            EmptinessDecision {
                command: None,
                constrained_by_budgets: false
            }
        );
    }

    /// core: disruption/validation.go `EmptinessValidator.validateCandidates`
    /// (churn and budget failures; cases derived by hand), in the spirit of
    /// consolidation_test.go "should not delete node if pods schedule with
    /// karpenter.sh/do-not-disrupt set to true during the TTL wait".
    #[test]
    fn validation_keeps_survivors_within_budget() {
        let command = EmptyCommand {
            candidates: vec![
                candidate(1, "a", 300_000, 1.0),
                candidate(2, "a", 200_000, 1.0),
                candidate(3, "b", 100_000, 1.0),
            ],
        };
        let budgets =
            |a, b| -> BTreeMap<String, u32> { [("a".to_string(), a), ("b".to_string(), b)].into() };
        // Node 2 gained a pod (no longer an emptiness candidate).
        let current = vec![
            candidate(3, "b", 100_000, 1.0),
            candidate(1, "a", 300_000, 1.0),
        ];
        let valid = validate_empty_command(&command, &current, budgets(5, 5)).unwrap();
        assert_eq!(ids(&valid), [1, 3], "command order kept");
        // Budget of pool a dropped to zero meanwhile.
        let valid = validate_empty_command(&command, &current, budgets(0, 1)).unwrap();
        assert_eq!(ids(&valid), [3]);
        assert_eq!(
            validate_empty_command(&command, &current, budgets(0, 0)),
            Err(ValidationError::Budget(3))
        );
        assert_eq!(
            validate_empty_command(&command, &[], budgets(5, 5)),
            Err(ValidationError::Churn(3))
        );
        assert_eq!(
            ValidationError::Churn(3).to_string(),
            "3 candidates are no longer valid"
        );
    }
}
