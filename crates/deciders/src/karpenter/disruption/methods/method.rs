//! The trait every disruption method implements (core: disruption/types.go
//! `Method`), what a method hands back, and the filter through its
//! `should_disrupt`. Depends on no method.

use std::collections::BTreeMap;
use std::sync::atomic::AtomicBool;

use crate::karpenter::disruption::candidates::FilterVerdict;
use crate::karpenter::disruption::context::{Note, PassContext};
use crate::karpenter::disruption::types::{
    Candidate, Command, DisruptionClass, Method, pool_lookup,
};
use crate::nodepool::{DisruptionReason, NodePool};
use crate::scheduler::Node;

/// One disruption method (upstream's `Method` interface).
pub(crate) trait DisruptionMethod: Sync {
    /// The reason of its commands, and of the budgets it spends (upstream
    /// `Reason`).
    fn reason(&self) -> DisruptionReason;

    /// How its candidates treat pods that block eviction (upstream
    /// `Class`).
    fn class(&self) -> DisruptionClass;

    /// Whether a node can be one of its candidates, judged on the node
    /// alone: the pass builds candidates only of the nodes this lets
    /// through, a saving for a method that acts on few of them.
    fn considers(&self, _node: &Node) -> bool {
        true
    }

    /// Whether to disrupt a candidate (upstream `ShouldDisrupt`):
    /// `Err(Some(reason))` drops it with a note, `Err(None)` quietly.
    fn should_disrupt(
        &self,
        ctx: &PassContext<'_, '_>,
        candidate: &Candidate,
        pool: &NodePool,
    ) -> FilterVerdict;

    /// At most one command (upstream `ComputeCommands`) from `candidates`
    /// (those it should disrupt, in node order; never none) within
    /// `budgets`, the pass's mapping for its reason, with why nodes it
    /// looked at were not disrupted, in the order it found them.
    ///
    /// `beside` is `Some(found)` when the pass computes this method beside
    /// the one before it (see [`Self::speculative`]): that one may be
    /// simulating on the view's own closures meanwhile (sharing them is
    /// correct but contends for their lock, so take copies), and `found`
    /// is set once it has a command, after which this outcome is dropped
    /// and may be cut short.
    fn compute_command(
        &self,
        ctx: &PassContext<'_, '_>,
        candidates: Vec<&Candidate>,
        budgets: BTreeMap<String, u32>,
        beside: Option<&AtomicBool>,
    ) -> MethodOutcome;

    /// Whether the pass, with more than one thread, computes this method
    /// beside the one before it, using its outcome only if that one makes
    /// no command. A method reads only the pass and hands its notes back,
    /// so its outcome never depends on the one before it and the pass's
    /// is the same whatever the thread count; this is for a method whose
    /// work is worth starting before it is known to be needed (it is
    /// wasted when the one before makes a command).
    fn speculative(&self) -> bool {
        false
    }

    /// For a consolidation method (upstream: one that embeds
    /// `consolidation`), the [`Method`] its consolidation state is kept
    /// under: it skips a pass while the cluster's consolidation state is
    /// the one it last found nothing at.
    fn consolidation_state_key(&self) -> Option<Method> {
        None
    }
}

/// What a method computed.
#[derive(Debug, Default)]
pub(crate) struct MethodOutcome {
    /// Its command, if it makes one.
    pub command: Option<Command>,
    /// Why nodes it looked at were not disrupted, in the order found.
    pub notes: Vec<Note>,
    /// A candidate it would have taken was left out for want of budget
    /// (upstream `constrainedByBudgets`): finding nothing then does not
    /// mark it consolidated.
    pub constrained_by_budgets: bool,
}

/// The candidates among `judged` that `method` should disrupt, in order,
/// with the reasons it gave for the others that carry one (not for quiet
/// nodes: the caller's recorder would drop them).
pub(crate) fn should_disrupt<'c>(
    ctx: &PassContext<'_, '_>,
    method: &dyn DisruptionMethod,
    judged: impl IntoIterator<Item = &'c Candidate>,
    notes: &mut Vec<Note>,
) -> Vec<&'c Candidate> {
    let judged = judged.into_iter();
    let mut kept = Vec::with_capacity(judged.size_hint().0);
    let mut pools = pool_lookup(&ctx.pools);
    for c in judged {
        let Some(pool) = pools.get(c.shared_nodepool()) else {
            continue;
        };
        match method.should_disrupt(ctx, c, pool) {
            Ok(()) => kept.push(c),
            Err(Some(reason)) if !ctx.input.is_quiet(c.node) => notes.push((c.node, reason)),
            Err(Some(_)) => {}
            Err(None) => {}
        }
    }
    kept
}
