//! kube-scheduler Score plugins karpsim models, in integer math on
//! kube-scheduler's 0..=100 scale, with the default profile's plugin
//! weights:
//!
//! | plugin | weight | raw score | normalisation |
//! |---|---|---|---|
//! | NodeResourcesFit | 1 | LeastAllocated or MostAllocated over cpu and memory (weight 1 each) | none |
//! | NodeAffinity | 2 | sum of weights of matching preferred terms | `100·s/max` |
//! | TaintToleration | 3 | number of untolerated PreferNoSchedule taints | `100 − 100·s/max` |
//!
//! Not modelled: NodeResourcesBalancedAllocation, ImageLocality, and the
//! soft halves of PodTopologySpread (ScheduleAnyway) and InterPodAffinity
//! (preferred terms).

use super::filter::term_matches;
use crate::kube::labels::Labels;
use crate::kube::pod::PodSpec;
use crate::kube::resources::{MIB, Resources};
use crate::kube::taints::{Taint, TaintEffect, Toleration};

/// Highest score a plugin gives (kube-scheduler `MaxNodeScore`).
pub const MAX_NODE_SCORE: i64 = 100;
/// Weight of NodeResourcesFit in the default profile.
pub const FIT_WEIGHT: i64 = 1;
/// Weight of NodeAffinity in the default profile.
pub const NODE_AFFINITY_WEIGHT: i64 = 2;
/// Weight of TaintToleration in the default profile.
pub const TAINT_TOLERATION_WEIGHT: i64 = 3;

/// CPU a pod without a CPU request counts as when scoring (kube-scheduler
/// `DefaultMilliCPURequest`).
pub const DEFAULT_SCORE_CPU_MILLIS: i64 = 100;
/// Memory a pod without a memory request counts as when scoring
/// (`DefaultMemoryRequest`, 200 MiB).
pub const DEFAULT_SCORE_MEMORY_BYTES: i64 = 200 * MIB;

/// The (cpu, memory) a pod weighs for scoring: its requests, with a zero
/// request replaced by the defaults above. kube-scheduler applies these per
/// container; karpsim only keeps pod totals, so it applies them per pod.
pub fn score_requests(requests: &Resources) -> [i64; 2] {
    let or_default = |v: i64, default: i64| if v == 0 { default } else { v };
    [
        or_default(requests.cpu_millis(), DEFAULT_SCORE_CPU_MILLIS),
        or_default(requests.memory_bytes(), DEFAULT_SCORE_MEMORY_BYTES),
    ]
}

/// How feasible nodes are scored (kube-scheduler `NodeResourcesFit`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ScoringStrategy {
    /// Prefer the least-allocated node (kube-scheduler's default).
    #[default]
    LeastAllocated,
    /// Prefer the most-allocated node (bin-packing).
    MostAllocated,
}

/// NodeResourcesFit score for a node whose cpu and memory requests would be
/// `requested` (pod included) out of `allocatable`. Resources with zero
/// allocatable are skipped; the result is the integer mean of the others.
///
/// LeastAllocated: `(allocatable − requested)·100 / allocatable`, 0 when
/// over. MostAllocated: `requested·100 / allocatable`, requested capped at
/// allocatable.
pub fn fit_score(strategy: ScoringStrategy, requested: [i64; 2], allocatable: [i64; 2]) -> i64 {
    let mut total = 0;
    let mut weights = 0;
    for (req, alloc) in requested.into_iter().zip(allocatable) {
        if alloc <= 0 {
            continue;
        }
        total += match strategy {
            ScoringStrategy::LeastAllocated if req > alloc => 0,
            ScoringStrategy::LeastAllocated => (alloc - req) * MAX_NODE_SCORE / alloc,
            ScoringStrategy::MostAllocated => req.min(alloc) * MAX_NODE_SCORE / alloc,
        };
        weights += 1;
    }
    if weights == 0 { 0 } else { total / weights }
}

/// NodeAffinity raw score: the summed weights of the preferred terms the
/// node's labels satisfy.
pub fn preferred_affinity(spec: &PodSpec, labels: &Labels) -> i64 {
    spec.node_affinity
        .preferred
        .iter()
        .filter(|t| term_matches(&t.expressions, labels))
        .map(|t| i64::from(t.weight))
        .sum()
}

/// TaintToleration raw score: PreferNoSchedule taints the pod does not
/// tolerate (fewer is better).
pub fn intolerable_prefer_no_schedule(taints: &[Taint], tolerations: &[Toleration]) -> i64 {
    taints
        .iter()
        .filter(|taint| {
            taint.effect == TaintEffect::PreferNoSchedule
                && !tolerations.iter().any(|t| t.tolerates(taint))
        })
        .count() as i64
}

/// kube-scheduler `DefaultNormalizeScore`: scales so the best raw score is
/// 100; `reverse` flips it (100 − scaled) for "lower is better" scores. When
/// every raw score is 0 they stay 0, or become 100 with `reverse`.
pub fn normalize(raw: i64, max: i64, reverse: bool) -> i64 {
    if max == 0 {
        return if reverse { MAX_NODE_SCORE } else { 0 };
    }
    let scaled = MAX_NODE_SCORE * raw / max;
    if reverse {
        MAX_NODE_SCORE - scaled
    } else {
        scaled
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kube::requirements::Operator;
    use crate::scheduler::testing::{PodBuilder, expression};

    /// NodeResourcesFit LeastAllocated, derived by hand: 3000m / 5000 Mi
    /// requested of 4000m / 10000 Mi → cpu 1000·100/4000 = 25, memory 50,
    /// integer mean 37.
    #[test]
    fn least_allocated_is_the_free_fraction() {
        let score = fit_score(ScoringStrategy::LeastAllocated, [3000, 5000], [4000, 10000]);
        assert_eq!(score, (25 + 50) / 2);
        assert_eq!(
            fit_score(ScoringStrategy::LeastAllocated, [5000, 0], [4000, 10000]),
            50,
            "over-requested cpu scores 0, memory 100"
        );
        assert_eq!(
            fit_score(ScoringStrategy::LeastAllocated, [1, 1], [0, 0]),
            0
        );
    }

    /// NodeResourcesFit MostAllocated, by hand: cpu 75, memory 50 → 62;
    /// over-requested resources are capped at 100.
    #[test]
    fn most_allocated_is_the_used_fraction() {
        assert_eq!(
            fit_score(ScoringStrategy::MostAllocated, [3000, 5000], [4000, 10000]),
            (75 + 50) / 2
        );
        assert_eq!(
            fit_score(ScoringStrategy::MostAllocated, [8000, 10000], [4000, 10000]),
            100
        );
    }

    /// NodeAffinity Score: matching preferred terms add their weights.
    #[test]
    fn preferred_affinity_sums_matching_weights() {
        let pod = PodBuilder::new("p")
            .preferred_term(10, vec![expression("disk", Operator::In, &["ssd"])])
            .preferred_term(5, vec![expression("gpu", Operator::Exists, &[])])
            .build();
        let labels: Labels = [("disk", "ssd"), ("gpu", "yes")].into_iter().collect();
        assert_eq!(preferred_affinity(&pod.spec, &labels), 15);
        let ssd_only: Labels = [("disk", "ssd")].into_iter().collect();
        assert_eq!(preferred_affinity(&pod.spec, &ssd_only), 10);
    }

    /// DefaultNormalizeScore, plain and reversed.
    #[test]
    fn normalize_scales_to_the_best() {
        assert_eq!(normalize(5, 10, false), 50);
        assert_eq!(normalize(0, 0, false), 0);
        assert_eq!(normalize(0, 0, true), 100);
        assert_eq!(normalize(1, 2, true), 50);
        assert_eq!(normalize(2, 2, true), 0);
    }

    /// Pods without requests weigh 100m / 200 MiB when scoring.
    #[test]
    fn zero_requests_weigh_defaults() {
        assert_eq!(
            score_requests(&Resources::ZERO),
            [DEFAULT_SCORE_CPU_MILLIS, DEFAULT_SCORE_MEMORY_BYTES]
        );
        assert_eq!(score_requests(&Resources::cpu_mem(250, 1)), [250, 1]);
    }
}
