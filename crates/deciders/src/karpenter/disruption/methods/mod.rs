//! The disruption methods (core: disruption/types.go `Method`), one per
//! file behind the trait of [`method`], and [`METHODS`], the order a pass
//! tries them in (controller.go). A method says which candidates it
//! considers, its reason and class, and computes at most one command; the
//! pass (`super::pass`) builds its candidates and budgets and walks the
//! list. Adding a method is a file here, its `mod` line and its place in
//! [`METHODS`] (and, if its commands need a [`Method`] of their own, a
//! variant there, with its report spelling in `Method::name`).
//!
//! [`Method`]: super::types::Method

mod drift;
mod emptiness;
mod method;
mod multi_node;
mod single_node;
mod static_drift;

pub(crate) use drift::Drift;
pub(crate) use emptiness::{Emptiness, empty_nodes_command};
pub(crate) use method::{DisruptionMethod, MethodOutcome, should_disrupt};
pub(crate) use multi_node::MultiNode;
pub(crate) use single_node::SingleNode;
pub(crate) use static_drift::StaticDrift;

use super::candidates::{Candidate, FilterVerdict, consolidation_filter};
use super::context::PassContext;
use crate::nodepool::NodePool;

/// Consolidation's `ShouldDisrupt`, which multi- and single-node share as
/// upstream's two methods share their embedded `consolidation`.
fn consolidation_should_disrupt(
    ctx: &PassContext<'_, '_>,
    candidate: &Candidate,
    pool: &NodePool,
) -> FilterVerdict {
    match ctx.input.cluster.node(candidate.node) {
        Some(node) => consolidation_filter(candidate, node, pool),
        None => Err(None),
    }
}

/// The methods of a pass, in the order it tries them: the first that makes
/// a command ends the pass.
pub(crate) const METHODS: &[&dyn DisruptionMethod] = &[
    // Empty nodes first: deleting them disrupts nothing.
    &Emptiness,
    // Static NodePools' drifted NodeClaims (the other methods skip them).
    &StaticDrift,
    &Drift,
    // Several nodes at once before one at a time: less churn per saving.
    &MultiNode,
    &SingleNode,
];
