//! Drift (core: disruption/drift.go): the oldest drifted candidate (empty
//! ones first) within its pool's `Drifted` budget whose pods all fit,
//! replaced by however many NodeClaims that takes. Drift commands are not
//! re-validated. Whether a node drifted is decided when its NodePool
//! changes (`super::super::drift`).

use std::collections::BTreeMap;
use std::sync::atomic::AtomicBool;

use super::method::{DisruptionMethod, MethodOutcome};
use crate::cloud::Price;
use crate::karpenter::disruption::candidates::{FilterVerdict, drift_filter};
use crate::karpenter::disruption::context::PassContext;
use crate::karpenter::disruption::explain;
use crate::karpenter::disruption::reasons::{SchedulingErrors, Unconsolidatable};
use crate::karpenter::disruption::types::{Candidate, Command, DisruptionClass, Method};
use crate::nodepool::{DisruptionReason, NodePool};
use crate::scheduler::Node;

/// The Drift method.
pub(crate) struct Drift;

impl DisruptionMethod for Drift {
    fn reason(&self) -> DisruptionReason {
        DisruptionReason::Drifted
    }

    fn class(&self) -> DisruptionClass {
        DisruptionClass::Eventual
    }

    /// Only drifted nodes: the others are not judged as Eventual
    /// candidates (Eventual only lets through some pods Graceful rejects,
    /// so their rejections were noted already).
    fn considers(&self, node: &Node) -> bool {
        drift_filter(node).is_ok()
    }

    fn should_disrupt(
        &self,
        ctx: &PassContext<'_, '_>,
        candidate: &Candidate,
        pool: &NodePool,
    ) -> FilterVerdict {
        // Static NodePools' drift is StaticDrift's (core: drift.go).
        if pool.is_static() {
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
        mut drifted: Vec<&Candidate>,
        budgets: BTreeMap<String, u32>,
        _beside: Option<&AtomicBool>,
    ) -> MethodOutcome {
        let cluster = ctx.input.cluster;
        let condition = |c: &Candidate| {
            cluster
                .node(c.node)
                .and_then(|n| n.claim.as_ref())
                .and_then(|claim| claim.lifecycle.drifted.clone())
        };
        drifted.sort_by(|a, b| {
            let key = |c: &Candidate| {
                (
                    !c.reschedulable_pods().is_empty(),
                    condition(c).map(|d| d.since),
                )
            };
            key(a).cmp(&key(b)).then(a.name_order.cmp(&b.name_order))
        });
        let mut outcome = MethodOutcome::default();
        for candidate in drifted {
            if budgets.get(candidate.nodepool()).copied().unwrap_or(0) == 0 {
                continue;
            }
            let simulation = ctx.simulate(&[candidate], false);
            if !simulation.all_non_pending_scheduled() {
                let errors = SchedulingErrors::new(cluster, &simulation.non_pending_errors);
                let reason = Unconsolidatable::PodsWouldNotSchedule(errors);
                outcome.notes.push((candidate.node, reason));
                continue;
            }
            let reason = condition(candidate).map_or_else(|| "Drifted".to_string(), |d| d.reason);
            let replacements = simulation.result.new_nodeclaims;
            outcome.command = Some(Command {
                method: Method::Drift,
                reason: DisruptionReason::Drifted,
                candidates: vec![candidate.node],
                explanation: explain::drift(&reason, replacements.len()),
                replacements,
                estimated_savings: Price::ZERO,
                needs_validation: false,
            });
            break;
        }
        outcome
    }
}
