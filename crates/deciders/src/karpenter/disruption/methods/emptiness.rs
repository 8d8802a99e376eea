//! Emptiness (core: disruption/emptiness.go): every empty, consolidatable
//! candidate within its pool's `Empty` budget, in one pure delete. The
//! choice itself is [`super::super::emptiness::empty_command`].

use std::collections::BTreeMap;
use std::sync::atomic::AtomicBool;

use super::method::{DisruptionMethod, MethodOutcome};
use crate::karpenter::disruption::candidates::{FilterVerdict, emptiness_filter};
use crate::karpenter::disruption::consolidation::estimated_savings;
use crate::karpenter::disruption::context::PassContext;
use crate::karpenter::disruption::emptiness::empty_command;
use crate::karpenter::disruption::explain;
use crate::karpenter::disruption::types::{Candidate, Command, DisruptionClass, Method, PassInput};
use crate::nodepool::{DisruptionReason, NodePool};

/// The Emptiness method.
pub(crate) struct Emptiness;

impl DisruptionMethod for Emptiness {
    fn reason(&self) -> DisruptionReason {
        DisruptionReason::Empty
    }

    fn class(&self) -> DisruptionClass {
        DisruptionClass::Graceful
    }

    fn should_disrupt(
        &self,
        _ctx: &PassContext<'_, '_>,
        candidate: &Candidate,
        pool: &NodePool,
    ) -> FilterVerdict {
        emptiness_filter(candidate, pool)
    }

    fn compute_command(
        &self,
        ctx: &PassContext<'_, '_>,
        candidates: Vec<&Candidate>,
        mut budgets: BTreeMap<String, u32>,
        _beside: Option<&AtomicBool>,
    ) -> MethodOutcome {
        let empty = candidates.into_iter().cloned().collect();
        let decision = empty_command(empty, &mut budgets);
        MethodOutcome {
            command: decision
                .command
                .map(|taken| empty_nodes_command(ctx.input, &taken.candidates)),
            notes: Vec::new(),
            constrained_by_budgets: decision.constrained_by_budgets,
        }
    }

    fn consolidation_state_key(&self) -> Option<Method> {
        Some(Method::Emptiness)
    }
}

/// The Emptiness command for `taken`.
pub(crate) fn empty_nodes_command(input: &PassInput<'_>, taken: &[Candidate]) -> Command {
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
