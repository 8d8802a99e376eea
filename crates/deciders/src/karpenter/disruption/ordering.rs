//! The order in which disruption methods try candidates (core:
//! disruption/consolidation.go `sortCandidates`, singlenodeconsolidation.go
//! `shuffleCandidates`, drift.go).

use std::borrow::Borrow;
use std::cmp::Ordering;
use std::collections::BTreeMap;

use super::cache::{CandidateCache, LastOrder};
use super::types::Candidate;
use crate::cluster::Cluster;

/// Highest savings ratio first (v1.14+). Upstream's sort is not stable;
/// ties here fall back to the node name (compared as the candidates'
/// `name_order`) so results are deterministic.
pub fn sort_by_savings_ratio<C: Borrow<Candidate>>(candidates: &mut [C]) {
    // Ratios computed once, and candidates moved once, not per comparison.
    // Name orders are unique, so no two keys are equal and an unstable sort
    // gives the one order.
    let ratios = savings_ratios(candidates);
    let mut order: Vec<usize> = (0..candidates.len()).collect();
    order.sort_unstable_by(|&a, &b| by_savings_ratio(candidates, &ratios, a, b));
    permute(candidates, order);
}

/// Each candidate's savings ratio, computed once per sort.
fn savings_ratios<C: Borrow<Candidate>>(candidates: &[C]) -> Vec<f64> {
    candidates
        .iter()
        .map(|c| c.borrow().savings_ratio())
        .collect()
}

/// The savings-ratio order of candidates `a` and `b` (by index): higher
/// ratio first, then the node name.
fn by_savings_ratio<C: Borrow<Candidate>>(
    candidates: &[C],
    ratios: &[f64],
    a: usize,
    b: usize,
) -> Ordering {
    ratios[b].total_cmp(&ratios[a]).then_with(|| {
        candidates[a]
            .borrow()
            .name_order
            .cmp(&candidates[b].borrow().name_order)
    })
}

/// Consolidation's order, where multi- and single-node both start:
/// [`sort_by_savings_ratio`], from the order of the last pass that sorted
/// when the caller keeps a [`CandidateCache`].
pub fn sort_for_consolidation<C: Borrow<Candidate>>(
    candidates: &mut [C],
    cache: Option<&CandidateCache>,
) {
    match cache {
        Some(cache) => sort_by_savings_ratio_after(candidates, &mut cache.consolidation_order()),
        None => sort_by_savings_ratio(candidates),
    }
}

/// [`sort_by_savings_ratio`], starting from the order `last` kept (then
/// keeping this one): the candidates it holds in that order, the others
/// after them, and a stable sort that finds runs already in order (about
/// one comparison per candidate when little changed). Keys never tie, so
/// the order is the same whatever the start.
pub fn sort_by_savings_ratio_after<C: Borrow<Candidate>>(
    candidates: &mut [C],
    last: &mut LastOrder,
) {
    let ratios = savings_ratios(candidates);
    // Positions in the last order are distinct and below its length:
    // placed in slots by position, then the newcomers.
    let mut slots = vec![usize::MAX; last.nodes.len()];
    let mut newcomers = Vec::new();
    for (i, c) in candidates.iter().enumerate() {
        match slots.get_mut(last.position(c.borrow().node) as usize) {
            Some(slot) if *slot == usize::MAX => *slot = i,
            _ => newcomers.push(i),
        }
    }
    let mut order: Vec<usize> = slots.into_iter().filter(|&i| i != usize::MAX).collect();
    order.extend(newcomers);
    order.sort_by(|&a, &b| by_savings_ratio(candidates, &ratios, a, b));
    last.replace(order.iter().map(|&i| candidates[i].borrow().node));
    permute(candidates, order);
}

/// Reorders `items` so that position `k` holds what was at `order[k]`
/// (`order` a permutation), following its cycles with swaps.
fn permute<T>(items: &mut [T], mut order: Vec<usize>) {
    const DONE: usize = usize::MAX;
    for start in 0..items.len() {
        let mut at = start;
        while order[at] != DONE {
            let from = order[at];
            order[at] = DONE;
            if from == start {
                break;
            }
            // `items[at]` holds the element of `start` carried along the cycle.
            items.swap(at, from);
            at = from;
        }
    }
}

/// Lowest legacy `DisruptionCost` first (the order before v1.14).
pub fn sort_by_disruption_cost(candidates: &mut [Candidate]) {
    candidates.sort_by(|a, b| {
        a.disruption_cost
            .total_cmp(&b.disruption_cost)
            .then(a.name_order.cmp(&b.name_order))
    });
}

/// Single-node consolidation's order from candidates already sorted by
/// savings ratio ([`sort_by_savings_ratio`]): dealt round-robin across
/// NodePools so one large pool cannot starve the others. Pools a timed-out
/// pass did not reach (`previously_unseen`, in the given order) deal first;
/// the rest follow in name order (upstream: map order).
pub fn deal_by_nodepool<C: Borrow<Candidate>>(
    mut candidates: Vec<C>,
    previously_unseen: &[String],
) -> Vec<C> {
    let order = {
        let mut by_pool: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
        for (i, c) in candidates.iter().enumerate() {
            by_pool.entry(c.borrow().nodepool()).or_default().push(i);
        }
        let mut queues: Vec<std::vec::IntoIter<usize>> = previously_unseen
            .iter()
            .filter_map(|p| by_pool.remove(p.as_str()))
            .map(Vec::into_iter)
            .collect();
        queues.extend(by_pool.into_values().map(Vec::into_iter));
        let mut order = Vec::with_capacity(candidates.len());
        loop {
            let before = order.len();
            for q in &mut queues {
                order.extend(q.next());
            }
            if order.len() == before {
                break order;
            }
        }
    };
    permute(&mut candidates, order);
    candidates
}

/// Drift's order: empty candidates first, each group by the time the
/// `Drifted` condition was set (oldest first), then by name.
pub fn sort_for_drift(candidates: &mut [Candidate], cluster: &Cluster) {
    let since = |c: &Candidate| {
        cluster
            .node(c.node)
            .and_then(|n| n.claim.as_ref())
            .and_then(|claim| claim.lifecycle.drifted.as_ref())
            .map(|d| d.since)
    };
    candidates.sort_by(|a, b| {
        b.is_empty()
            .cmp(&a.is_empty())
            .then_with(|| since(a).cmp(&since(b)))
            .then(a.name_order.cmp(&b.name_order))
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cloud::Price;
    use crate::cluster::NodeId;

    pub(super) fn candidate(name: &str, pool: &str, price_micros: i64, cost: f64) -> Candidate {
        let facts = std::sync::Arc::new(crate::karpenter::disruption::cache::NodeFacts::named(
            name, pool,
        ));
        let mut candidate = Candidate::new(
            NodeId(0),
            facts,
            Price::from_micros(price_micros),
            crate::karpenter::disruption::types::name_order_of(name),
        );
        candidate.reschedule_disruption_cost = cost;
        candidate.disruption_cost = cost - 1.0;
        candidate
    }

    fn names(c: &[Candidate]) -> Vec<&str> {
        c.iter().map(Candidate::name).collect()
    }

    /// `permute` puts at each position what `order` names, for every
    /// permutation of five items (cycles of every length).
    #[test]
    fn permute_follows_the_order() {
        fn permutations(n: usize) -> Vec<Vec<usize>> {
            if n == 0 {
                return vec![Vec::new()];
            }
            let mut out = Vec::new();
            for rest in permutations(n - 1) {
                for at in 0..n {
                    let mut p = rest.clone();
                    p.insert(at, n - 1);
                    out.push(p);
                }
            }
            out
        }
        for order in permutations(5) {
            let mut items: Vec<char> = "abcde".chars().collect();
            let expected: Vec<char> = order.iter().map(|&i| items[i]).collect();
            permute(&mut items, order.clone());
            assert_eq!(items, expected, "{order:?}");
        }
    }

    /// Starting from the last pass's order gives the plain sort's order,
    /// pass after pass, as candidates come and go and ratios change (ties
    /// on ratio included, broken by name).
    #[test]
    fn sort_after_the_last_order_equals_the_plain_sort() {
        let mut last = LastOrder::default();
        let mut pool: Vec<Candidate> = (0..40)
            .map(|i| {
                let mut c = candidate(&format!("n-{i:02}"), "p", 100_000 * (i % 5 + 1), 2.0);
                c.node = NodeId(i as u32);
                c
            })
            .collect();
        for pass in 0..12u32 {
            // Some candidates leave, a new node joins, a few ratios move.
            let mut now: Vec<Candidate> = pool
                .iter()
                .filter(|c| (c.node.0 + pass) % 7 != 0)
                .cloned()
                .collect();
            let mut joined = candidate(&format!("m-{pass:02}"), "p", 250_000, 1.5);
            joined.node = NodeId(100 + pass);
            now.push(joined.clone());
            pool.push(joined);
            for c in pool.iter_mut().filter(|c| (c.node.0 * 3 + pass) % 11 == 0) {
                c.reschedule_disruption_cost += 0.5;
            }
            let mut plain = now.clone();
            sort_by_savings_ratio(&mut plain);
            sort_by_savings_ratio_after(&mut now, &mut last);
            assert_eq!(names(&now), names(&plain), "pass {pass}");
            let kept: Vec<NodeId> = now.iter().map(|c| c.node).collect();
            assert_eq!(last.nodes, kept);
        }
    }

    /// core: disruption/singlenodeconsolidation_test.go "should sort
    /// candidates by savings ratio descending" and "should sort candidates
    /// by savings ratio with different disruption costs".
    #[test]
    fn savings_ratio_descending_with_name_ties() {
        let mut c = vec![
            candidate("cheap", "p", 100_000, 1.0),    // 0.1
            candidate("busy-big", "p", 400_000, 5.0), // 0.08
            candidate("big", "p", 400_000, 2.0),      // 0.2
            candidate("b-tie", "p", 200_000, 2.0),    // 0.1
        ];
        sort_by_savings_ratio(&mut c);
        assert_eq!(names(&c), ["big", "b-tie", "cheap", "busy-big"]);
        sort_by_disruption_cost(&mut c);
        assert_eq!(names(&c), ["cheap", "b-tie", "big", "busy-big"]);
    }

    /// core: singlenodeconsolidation.go `shuffleCandidates`;
    /// singlenodeconsolidation_test.go "should prioritize nodepools that
    /// timed out in previous runs".
    #[test]
    fn round_robin_across_pools() {
        let c = vec![
            candidate("a1", "a", 300_000, 1.0),
            candidate("a2", "a", 200_000, 1.0),
            candidate("a3", "a", 100_000, 1.0),
            candidate("b1", "b", 50_000, 1.0),
            candidate("c1", "c", 250_000, 1.0),
            candidate("c2", "c", 10_000, 1.0),
        ];
        let interleave = |mut c: Vec<Candidate>, unseen: &[String]| {
            sort_by_savings_ratio(&mut c);
            deal_by_nodepool(c, unseen)
        };
        assert_eq!(
            names(&interleave(c.clone(), &[])),
            ["a1", "b1", "c1", "a2", "c2", "a3"]
        );
        let unseen = ["c".to_string(), "zz".to_string()];
        assert_eq!(
            names(&interleave(c, &unseen)),
            ["c1", "a1", "b1", "c2", "a2", "a3"]
        );
    }
}
