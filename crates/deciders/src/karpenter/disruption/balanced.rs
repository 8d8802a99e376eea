//! The `Balanced` consolidation policy's score gate (core:
//! disruption/balanced.go, types.go `ScoreResult`; v1.14): a move is
//! approved for a pool when the share of the pool's cost it saves is at
//! least half (`1/k`, k = 2) the share of the pool's disruption it causes.
//!
//! The pool's total cost is the sum of its NodeClaims' prices (upstream's
//! cluster cost tracker); its total disruption sums, over every node of
//! the pool, the candidate's reschedule cost or, for a node that is not a
//! candidate, `1 + Σ max(0, EvictionCost)` over its non-DaemonSet pods.

use std::collections::BTreeMap;

use super::reasons::ScoreTooLow;
use super::types::{Candidate, NodePoolsByName, PER_NODE_BASE_DISRUPTION_COST};
use crate::cloud::Price;
use crate::karpenter::PoolSums;
use crate::nodepool::{ConsolidationPolicy, NodePool};
use crate::pods::eviction_cost;
use crate::scheduler::Cluster;

/// Upstream `BalancedK`.
pub const BALANCED_K: u32 = 2;

/// A pool's totals the score normalises against.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct PoolTotals {
    /// Σ price of the pool's NodeClaims, $/h.
    pub total_cost: f64,
    /// Σ disruption cost of the pool's nodes.
    pub total_disruption: f64,
}

/// One pool's score for a move.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Score {
    /// Savings / pool cost.
    pub savings_fraction: f64,
    /// Move disruption / pool disruption.
    pub disruption_fraction: f64,
}

impl Score {
    /// `savings_fraction / disruption_fraction` (0 without savings, ∞
    /// without disruption).
    pub fn value(&self) -> f64 {
        if self.savings_fraction <= 0.0 {
            0.0
        } else if self.disruption_fraction == 0.0 {
            f64::INFINITY
        } else {
            self.savings_fraction / self.disruption_fraction
        }
    }

    /// Whether the score reaches `1/k`.
    pub fn approved(&self) -> bool {
        self.value() >= 1.0 / f64::from(BALANCED_K)
    }
}

/// Upstream `ScoreMove`: pools without cost or disruption score 0.
pub fn score_move(savings: f64, disruption: f64, totals: PoolTotals) -> Score {
    if totals.total_cost <= 0.0 || totals.total_disruption <= 0.0 {
        return Score {
            savings_fraction: 0.0,
            disruption_fraction: 0.0,
        };
    }
    Score {
        savings_fraction: savings / totals.total_cost,
        disruption_fraction: disruption / totals.total_disruption,
    }
}

/// Totals of every pool that has nodes.
pub fn pool_totals(
    cluster: &Cluster,
    all_candidates: &[Candidate],
) -> BTreeMap<String, PoolTotals> {
    // Candidates come in node order (a pass makes them so); both lists
    // are walked side by side.
    let mut by_node: Vec<&Candidate> = all_candidates.iter().collect();
    by_node.sort_by_key(|c| c.node);
    let mut by_node = by_node.into_iter().peekable();
    let mut totals: PoolSums<'_, PoolTotals> = PoolSums::new();
    for (id, node) in cluster.nodes() {
        while by_node.next_if(|c| c.node < id).is_some() {}
        let candidate = by_node.next_if(|c| c.node == id);
        let Some(claim) = &node.claim else { continue };
        let disruption = match candidate {
            Some(c) => c.reschedule_disruption_cost,
            None => {
                PER_NODE_BASE_DISRUPTION_COST
                    + node
                        .pods
                        .iter()
                        .filter_map(|p| cluster.pod(*p))
                        .filter(|p| !p.is_daemonset())
                        .map(|p| eviction_cost(p).max(0.0))
                        .sum::<f64>()
            }
        };
        totals.add(&claim.nodepool, |entry| {
            entry.total_cost += claim.price.dollars();
            entry.total_disruption += disruption;
        });
    }
    totals.into_map()
}

/// The score gate over a command's candidates: every Balanced pool among
/// them must approve its share of the savings (split by source cost when
/// the move spans pools). Pools with other policies are not scored.
pub fn approve(
    candidates: &[&Candidate],
    savings: Price,
    pools: &NodePoolsByName<'_>,
    totals: &BTreeMap<String, PoolTotals>,
) -> Result<(), ScoreTooLow> {
    let mut by_pool: BTreeMap<&str, Vec<&Candidate>> = BTreeMap::new();
    for c in candidates {
        by_pool.entry(c.nodepool()).or_default().push(c);
    }
    let total_cost: f64 = candidates.iter().map(|c| c.price.dollars()).sum();
    let pool_count = by_pool.len();
    for (name, members) in by_pool {
        if pools.get(name).map(|p| p.disruption.consolidation_policy)
            != Some(ConsolidationPolicy::Balanced)
        {
            continue;
        }
        let pool_cost: f64 = members.iter().map(|c| c.price.dollars()).sum();
        let mut pool_savings = savings.dollars();
        if total_cost > 0.0 && pool_count > 1 {
            pool_savings *= pool_cost / total_cost;
        }
        let disruption: f64 = members.iter().map(|c| c.reschedule_disruption_cost).sum();
        let score = score_move(
            pool_savings,
            disruption,
            totals.get(name).copied().unwrap_or_default(),
        );
        if !score.approved() {
            return Err(ScoreTooLow {
                score: score.value(),
                k: BALANCED_K,
                savings_fraction: score.savings_fraction,
                disruption_fraction: score.disruption_fraction,
            });
        }
    }
    Ok(())
}

/// Single-node's pre-check: could deleting the candidate outright pass
/// the gate? (Non-Balanced pools and pools without a cost always can.)
pub fn can_pass_threshold(
    candidate: &Candidate,
    pool: &NodePool,
    totals: &BTreeMap<String, PoolTotals>,
) -> bool {
    if pool.disruption.consolidation_policy != ConsolidationPolicy::Balanced {
        return true;
    }
    let Some(totals) = totals.get(candidate.nodepool()) else {
        return true;
    };
    if totals.total_cost <= 0.0 {
        return true;
    }
    score_move(
        candidate.price.dollars(),
        candidate.reschedule_disruption_cost,
        *totals,
    )
    .approved()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// core: disruption/balanced_scoring_test.go (ScoreMove: zero totals
    /// score 0; no savings → 0; no disruption → +Inf; threshold 1/k = 0.5).
    #[test]
    fn score_and_threshold() {
        let totals = PoolTotals {
            total_cost: 10.0,
            total_disruption: 20.0,
        };
        // 10% savings for 20% disruption: 0.5 → approved at the threshold.
        let s = score_move(1.0, 4.0, totals);
        assert!((s.value() - 0.5).abs() < 1e-12);
        assert!(s.approved());
        // 10% savings for 25% disruption: 0.4 → rejected.
        assert!(!score_move(1.0, 5.0, totals).approved());
        assert_eq!(score_move(0.0, 5.0, totals).value(), 0.0);
        assert_eq!(score_move(1.0, 0.0, totals).value(), f64::INFINITY);
        assert_eq!(score_move(1.0, 1.0, PoolTotals::default()).value(), 0.0);
    }
}
