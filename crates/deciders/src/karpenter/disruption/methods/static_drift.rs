//! Static drift (core: disruption/staticdrift.go): drifted NodeClaims of a
//! static NodePool, replaced one for one by a NodeClaim of the pool's
//! template (no scheduling simulation: a static pool keeps its count
//! whatever its pods). Per pool, within its `Drifted` budget, only while
//! the pool is not over its replicas (a scale-down goes first), and only
//! as many as `limits.nodes` leaves room for beside every NodeClaim the
//! pool has. Upstream returns one command per candidate in one pass;
//! karpsim's pass returns the first, and the next pass, at once, the next
//! (the budgets and counts it reads then include the started one).

use std::collections::BTreeMap;
use std::sync::atomic::AtomicBool;

use super::method::{DisruptionMethod, MethodOutcome};
use crate::cloud::Price;
use crate::karpenter::disruption::candidates::{FilterVerdict, drift_filter};
use crate::karpenter::disruption::context::PassContext;
use crate::karpenter::disruption::explain;
use crate::karpenter::disruption::types::{Candidate, Command, DisruptionClass, Method};
use crate::karpenter::static_capacity::{node_limit, static_counts, static_nodeclaim};
use crate::nodepool::{DisruptionReason, NodePool};
use crate::scheduler::Node;

/// The StaticDrift method.
pub(crate) struct StaticDrift;

impl DisruptionMethod for StaticDrift {
    fn reason(&self) -> DisruptionReason {
        DisruptionReason::Drifted
    }

    fn class(&self) -> DisruptionClass {
        DisruptionClass::Eventual
    }

    fn considers(&self, node: &Node) -> bool {
        drift_filter(node).is_ok()
    }

    fn should_disrupt(
        &self,
        ctx: &PassContext<'_, '_>,
        candidate: &Candidate,
        pool: &NodePool,
    ) -> FilterVerdict {
        if !pool.is_static() {
            return Err(None);
        }
        match ctx.input.cluster.node(candidate.node) {
            Some(node) => drift_filter(node),
            None => Err(None),
        }
    }

    fn compute_command(
        &self,
        ctx: &PassContext<'_, '_>,
        drifted: Vec<&Candidate>,
        budgets: BTreeMap<String, u32>,
        _beside: Option<&AtomicBool>,
    ) -> MethodOutcome {
        let input = ctx.input;
        let mut by_pool: BTreeMap<&str, Vec<&Candidate>> = BTreeMap::new();
        for candidate in drifted {
            by_pool
                .entry(candidate.nodepool())
                .or_default()
                .push(candidate);
        }
        for (name, candidates) in by_pool {
            if budgets.get(name).copied().unwrap_or(0) == 0 {
                continue;
            }
            let Some(index) = input.nodepools.iter().position(|c| c.pool.name == name) else {
                continue;
            };
            let context = &input.nodepools[index];
            let Some(replicas) = context.pool.replicas else {
                continue;
            };
            let counts = static_counts(input.cluster, name);
            // A scale-down finishes first.
            if counts.active > replicas {
                continue;
            }
            let room = node_limit(context.pool, input.node_count_resource).map_or(u64::MAX, |l| {
                l.saturating_sub(u64::from(counts.active) + u64::from(counts.deleting))
            });
            if room == 0 {
                continue;
            }
            let candidate = candidates[0];
            let reason = input
                .cluster
                .node(candidate.node)
                .and_then(|n| n.claim.as_ref())
                .and_then(|claim| claim.lifecycle.drifted.as_ref())
                .map_or_else(|| "Drifted".to_string(), |d| d.reason.clone());
            let replacement = static_nodeclaim(
                index,
                context.pool,
                context.catalog,
                input.options.scheduling.min_values,
            );
            return MethodOutcome {
                command: Some(Command {
                    method: Method::StaticDrift,
                    reason: DisruptionReason::Drifted,
                    candidates: vec![candidate.node],
                    explanation: explain::drift(&reason, 1),
                    replacements: vec![replacement],
                    estimated_savings: Price::ZERO,
                    needs_validation: false,
                }),
                ..MethodOutcome::default()
            };
        }
        MethodOutcome::default()
    }
}
